//! How realistic a benchmark's dialogues are, measured the same way for a synthesized set and
//! a real one (`mtr stats --realism`, the realism section of `synth_report.md`): per language,
//! with intervals over dialogues,
//! - question length ([`length`]: words, characters for CJK): median, quartiles, histogram;
//! - the history gap ([`gap`]): BM25 recall@10 of the gold with the question made whole
//!   minus with the question alone;
//! - the share of follow-ups that refer back ([`refer`]) and of turns that switch topic
//!   (the `topic_switch` tag, or where no turn carries it, a follow-up whose gold shares no
//!   document with the turn before).
//!
//! [`render`] writes the tables, one benchmark or two side by side.

pub mod gap;
pub mod interval;
pub mod length;
pub mod refer;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};

use mtr_core::Dialogue;
use mtr_metrics::stats::ConfidenceInterval;
use serde::Serialize;

use crate::bm25::Bm25Index;
use crate::error::Result;
pub use interval::{Clustered, IntervalOptions};
pub use length::{Bin, LengthUnit};
pub use refer::refers_back;

/// The realism of one benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Realism {
    /// The benchmark's name.
    pub name: String,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// The intervals' confidence level (e.g. 0.95).
    pub level: f64,
    /// The bootstrap's seed.
    pub seed: u64,
    /// One entry per language, most dialogues first.
    pub languages: Vec<LanguageRealism>,
}

/// The measures over the dialogues of one language.
#[derive(Debug, Clone, Serialize)]
pub struct LanguageRealism {
    /// ISO 639-1 code (`und` when undetectable).
    pub language: String,
    /// Dialogues in this language.
    pub dialogues: usize,
    /// Their turns.
    pub turns: usize,
    /// The user questions' lengths.
    pub length: QuestionLength,
    /// None when no index was given or no turn has relevant gold.
    pub history_gap: Option<HistoryGap>,
    /// The share of follow-up questions that refer back to earlier turns.
    pub referring_back: Share,
    /// The share of turns that switch topic.
    pub topic_switch: TopicSwitch,
}

/// Question lengths.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionLength {
    /// What lengths are counted in (words, or characters for CJK languages).
    pub unit: LengthUnit,
    /// The median length, with its interval over dialogues.
    pub median: ConfidenceInterval,
    /// The first quartile, with its interval.
    pub q1: ConfidenceInterval,
    /// The third quartile, with its interval.
    pub q3: ConfidenceInterval,
    /// The mean length, with its interval.
    pub mean: ConfidenceInterval,
    /// The lengths' histogram.
    pub histogram: Vec<Bin>,
}

/// Recall@10 under BM25 with the question alone and made whole, and their difference.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryGap {
    /// Turns with relevant gold.
    pub turns: usize,
    /// Of them, turns made whole by their rewrite (the others by the user's questions so far).
    pub with_rewrite: usize,
    /// Mean recall@10 with the question alone.
    pub recall_alone: ConfidenceInterval,
    /// Mean recall@10 with the question made whole.
    pub recall_whole: ConfidenceInterval,
    /// `recall_whole - recall_alone`: what the history adds.
    pub gap: ConfidenceInterval,
}

/// A share of some turns.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    /// The turns the share is over.
    pub of: usize,
    /// The turns counted.
    pub count: usize,
    /// `count / of`, with its interval over dialogues.
    pub share: ConfidenceInterval,
}

/// The share of turns that switch topic and where it was read from.
#[derive(Debug, Clone, Serialize)]
pub struct TopicSwitch {
    /// `tag` (the turns' `topic_switch`) or `gold` (inferred: a follow-up whose relevant gold
    /// shares no document with the previous judged turn's).
    pub source: String,
    /// The share of switching turns.
    #[serde(flatten)]
    pub share: Share,
}

/// What [`measure`] needs beyond the dialogues.
pub struct RealismInput<'a> {
    /// The benchmark's name.
    pub name: String,
    /// The benchmark's BM25 index: the history gap, and documents for inferred switches.
    pub bm25: Option<&'a Bm25Index>,
    /// The bootstrap's settings.
    pub intervals: IntervalOptions,
}

/// The language of each dialogue, from its user questions.
pub(crate) fn dialogue_language(d: &Dialogue) -> String {
    let text: Vec<&str> = d.turns.iter().map(|t| t.user.as_str()).collect();
    mtr_core::language::language_of(&text.join("\n"))
}

/// The dialogues of each language, most dialogues first (ties by code).
pub fn by_language(dialogues: &[Dialogue]) -> Vec<(String, Vec<&Dialogue>)> {
    let mut groups: BTreeMap<String, Vec<&Dialogue>> = BTreeMap::new();
    for d in dialogues {
        groups.entry(dialogue_language(d)).or_default().push(d);
    }
    let mut out: Vec<_> = groups.into_iter().collect();
    out.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Question lengths of `dialogues` in `unit`, grouped by dialogue.
pub fn question_lengths(dialogues: &[&Dialogue], unit: LengthUnit) -> Clustered {
    let mut c = Clustered::default();
    for (d, dialogue) in dialogues.iter().enumerate() {
        for t in &dialogue.turns {
            c.push(d, unit.length(&t.user) as f64);
        }
    }
    c
}

/// Whether each follow-up (a turn after the first that does not switch topic) refers back,
/// as 1 or 0, grouped by dialogue.
pub fn referring_back(dialogues: &[&Dialogue], language: &str) -> Clustered {
    let mut c = Clustered::default();
    for (d, dialogue) in dialogues.iter().enumerate() {
        for t in dialogue.turns.iter().skip(1) {
            if t.tags.topic_switch == Some(true) {
                continue;
            }
            c.push(d, f64::from(u8::from(refers_back(&t.user, language))));
        }
    }
    c
}

/// Measures every language's dialogues.
pub fn measure(dialogues: &[Dialogue], input: &RealismInput<'_>) -> Result<Realism> {
    let opts = &input.intervals;
    let mut languages = Vec::new();
    for (language, group) in by_language(dialogues) {
        let unit = LengthUnit::of_language(&language);
        let lengths = question_lengths(&group, unit);
        let q = lengths.quantiles(&[0.25, 0.5, 0.75], opts);
        let raw: Vec<usize> = lengths.values.iter().map(|&v| v as usize).collect();
        let length = QuestionLength {
            unit,
            q1: q[0],
            median: q[1],
            q3: q[2],
            mean: lengths.mean(opts),
            histogram: length::histogram(unit, &raw),
        };
        let history_gap = match input.bm25 {
            Some(bm25) => history_gap(&group, bm25, opts)?,
            None => None,
        };
        let refer = referring_back(&group, &language);
        let referring_back = share(&refer, opts);
        let topic_switch = topic_switch(&group, input.bm25, opts)?;
        languages.push(LanguageRealism {
            language,
            dialogues: group.len(),
            turns: lengths.len(),
            length,
            history_gap,
            referring_back,
            topic_switch,
        });
    }
    Ok(Realism {
        name: input.name.clone(),
        resamples: opts.resamples,
        level: opts.level,
        seed: opts.seed,
        languages,
    })
}

fn share(c: &Clustered, opts: &IntervalOptions) -> Share {
    Share {
        of: c.len(),
        count: c.values.iter().filter(|&&v| v > 0.0).count(),
        share: c.mean(opts),
    }
}

fn history_gap(
    group: &[&Dialogue],
    bm25: &Bm25Index,
    opts: &IntervalOptions,
) -> Result<Option<HistoryGap>> {
    let turns = gap::turn_gaps(group, bm25)?;
    if turns.is_empty() {
        return Ok(None);
    }
    let (mut alone, mut whole, mut diff) = (
        Clustered::default(),
        Clustered::default(),
        Clustered::default(),
    );
    for t in &turns {
        alone.push(t.dialogue, t.alone);
        whole.push(t.dialogue, t.whole);
        diff.push(t.dialogue, t.whole - t.alone);
    }
    Ok(Some(HistoryGap {
        turns: turns.len(),
        with_rewrite: turns.iter().filter(|t| t.rewrite).count(),
        recall_alone: alone.mean(opts),
        recall_whole: whole.mean(opts),
        gap: diff.mean(opts),
    }))
}

/// The share of turns that switch topic: from the `topic_switch` tag where any turn carries
/// it, else inferred from the gold's documents (a passage's document id, else its title).
fn topic_switch(
    group: &[&Dialogue],
    bm25: Option<&Bm25Index>,
    opts: &IntervalOptions,
) -> Result<TopicSwitch> {
    let tagged = group
        .iter()
        .any(|d| d.turns.iter().any(|t| t.tags.topic_switch.is_some()));
    let mut c = Clustered::default();
    if tagged {
        for (d, dialogue) in group.iter().enumerate() {
            for t in dialogue.turns.iter().skip(1) {
                c.push(d, f64::from(u8::from(t.tags.topic_switch == Some(true))));
            }
        }
        return Ok(TopicSwitch {
            source: "tag".into(),
            share: share(&c, opts),
        });
    }
    let mut documents: BTreeMap<String, String> = BTreeMap::new();
    let mut document = |id: &str| -> Result<String> {
        if let Some(doc) = documents.get(id) {
            return Ok(doc.clone());
        }
        let doc = match bm25 {
            Some(b) => b
                .passage(id)?
                .map(|p| p.doc_id.unwrap_or(p.title))
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| id.to_string()),
            None => id.to_string(),
        };
        documents.insert(id.to_string(), doc.clone());
        Ok(doc)
    };
    for (d, dialogue) in group.iter().enumerate() {
        let mut previous: Option<BTreeSet<String>> = None;
        for t in &dialogue.turns {
            let docs: BTreeSet<String> = t
                .relevant()
                .map(|g| document(&g.passage_id))
                .collect::<Result<_>>()?;
            if docs.is_empty() {
                continue;
            }
            if let Some(p) = &previous {
                c.push(d, f64::from(u8::from(p.is_disjoint(&docs))));
            }
            previous = Some(docs);
        }
    }
    Ok(TopicSwitch {
        source: "gold".into(),
        share: share(&c, opts),
    })
}

#[cfg(test)]
mod tests;
