//! Missing gold, checked twice. The discriminability test makes a *candidate* of a non-gold
//! passage that a strict majority of picks chose over the gold; a forced choice alone says
//! only that the passage was the least bad of its pool. So every candidate is rated pointwise
//! by every judge with the alignment prompt (same client, cache and sampling as every other
//! judgement), and it becomes a *probable missing gold* only when a strict majority of the
//! judges rate it at least `verify_rating_at_least` (1-5).
//!
//! Every candidate is also tagged: `same_document` (the gold's own document: MTRAG passages
//! are overlapping chunks, so a neighbouring chunk of the gold is often "picked over" it), and
//! the word-shingle overlap with the gold (Jaccard of the sets of lower-cased word 5-shingles).
//! The report counts candidates per tag and verdict, so a reader sees how many "missing golds"
//! are pieces of the gold itself. This module also computes the discriminability facts the
//! report shows beside the shares: the chance rate 1/P and the abstentions.

use std::collections::{BTreeMap, HashMap, HashSet};

use mtr_core::Passage;
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::{ItemScore, Suggestion, SuggestionVerdict};
use crate::judges::engine::{Judging, Render, Unit, judge_units};
use crate::judges::prompts::Fitted;
use crate::judges::record::Judgement;

/// Words per shingle of the overlap tag.
pub(crate) const SHINGLE_WORDS: usize = 5;

/// Discriminability facts beside the shares (`summary.json` `discriminability`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscriminabilityInfo {
    /// Mean of 1/P over the judged trials (P = pool size): the share a judge picking at random
    /// would get. Every completeness share should be read against it.
    pub chance_rate: Option<f64>,
    /// Valid answers (picks and abstentions).
    pub answers: usize,
    /// Valid answers that picked a passage.
    pub picks: usize,
    /// Abstentions by kind (`none`, `several`): counted apart, never a miss nor a pick.
    pub abstentions: BTreeMap<String, usize>,
    /// Abstentions per judge and kind.
    pub abstentions_per_judge: BTreeMap<String, BTreeMap<String, usize>>,
    /// Items where a strict majority of all planned picks said no passage answers (flagged).
    pub none_majority_items: usize,
    /// Items where every valid answer was an abstention (no share).
    pub abstained_items: usize,
    /// Distinct (turn, gold, negative) pool entries, and those from the gold's own document.
    pub pool_negatives: usize,
    pub pool_negatives_same_document: usize,
    /// Pointwise threshold a candidate's rating must reach (1-5).
    pub verify_rating_at_least: f64,
    /// Missing-gold candidates by verdict.
    pub candidates: BTreeMap<SuggestionVerdict, usize>,
    /// Candidates by tag (`same_document`, `other`) and verdict.
    pub candidates_by_tag: BTreeMap<String, BTreeMap<SuggestionVerdict, usize>>,
}

/// Lower-cased alphanumeric words.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn shingles(text: &str) -> HashSet<String> {
    let w = words(text);
    if w.is_empty() {
        return HashSet::new();
    }
    if w.len() < SHINGLE_WORDS {
        return std::iter::once(w.join(" ")).collect();
    }
    w.windows(SHINGLE_WORDS).map(|s| s.join(" ")).collect()
}

/// Jaccard overlap of the word 5-shingles of two texts (0 when either has no word).
pub(crate) fn shingle_overlap(a: &str, b: &str) -> f64 {
    let (x, y) = (shingles(a), shingles(b));
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let inter = x.intersection(&y).count();
    inter as f64 / (x.len() + y.len() - inter) as f64
}

/// Both passages come from the same source document (both doc ids known and equal).
pub(crate) fn same_document(a: Option<&Passage>, b: Option<&Passage>) -> bool {
    match (
        a.and_then(|p| p.doc_id.as_deref()),
        b.and_then(|p| p.doc_id.as_deref()),
    ) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Tags each suggestion with `same_document` and its shingle overlap with its gold.
pub(crate) fn tag(suggestions: &mut [Suggestion], passages: &HashMap<String, Passage>) {
    for s in suggestions {
        let (p, g) = (
            passages.get(&s.passage_id),
            passages.get(&s.gold_passage_id),
        );
        s.same_document = same_document(p, g);
        s.shingle_overlap = match (p, g) {
            (Some(p), Some(g)) => (shingle_overlap(&p.text, &g.text) * 1e4).round() / 1e4,
            _ => 0.0,
        };
    }
}

/// The verdict from each judge's rating (`None`: no valid rating) and the threshold: a strict
/// majority of all judges at or above it confirms; when the missing ratings could still make a
/// majority it stays unverified; otherwise it is not confirmed.
pub(crate) fn verdict(ratings: &[Option<f64>], at_least: f64) -> SuggestionVerdict {
    let judges = ratings.len();
    let yes = ratings.iter().flatten().filter(|r| **r >= at_least).count();
    let missing = ratings.iter().filter(|r| r.is_none()).count();
    if judges > 0 && yes * 2 > judges {
        SuggestionVerdict::ProbableMissingGold
    } else if missing > 0 && (yes + missing) * 2 > judges {
        SuggestionVerdict::Unverified
    } else {
        SuggestionVerdict::NotConfirmed
    }
}

/// Records each judge's pointwise rating (mean over its valid samples) of each suggestion and
/// sets its verdict. `records` are the alignment judgements of the suggested passages.
pub(crate) fn apply(
    suggestions: &mut [Suggestion],
    records: &[Judgement],
    judges: &[String],
    at_least: f64,
) {
    let mut by: HashMap<(&str, &str, &str), Vec<f64>> = HashMap::new();
    for j in records.iter().filter(|j| j.ok()) {
        if let (Some(p), Some(s)) = (j.passage_id.as_deref(), j.score) {
            by.entry((j.turn_id.as_str(), p, j.judge.as_str()))
                .or_default()
                .push(s);
        }
    }
    for s in suggestions {
        let ratings: Vec<Option<f64>> = judges
            .iter()
            .map(|judge| {
                by.get(&(s.turn_id.as_str(), s.passage_id.as_str(), judge.as_str()))
                    .map(|v| crate::items::aggregate::mean(v))
            })
            .collect();
        s.alignment_ratings = judges
            .iter()
            .zip(&ratings)
            .filter_map(|(j, r)| r.map(|r| (j.clone(), r)))
            .collect();
        s.verdict = verdict(&ratings, at_least);
    }
}

/// The pointwise ratings of the candidates.
#[derive(Debug, Default)]
pub(crate) struct Verified {
    /// Alignment judgements of the candidates (`verify_items.jsonl`).
    pub records: Vec<Judgement>,
    /// Why judging stopped early (budget), if it did.
    pub stopped: Option<String>,
}

/// Rates every candidate pointwise with every judge (alignment prompt). `unit_of` gives the
/// alignment unit of a candidate (its turn, the candidate as the passage); `fit` fits a unit's
/// prompt to the judges' context; `existing` holds `verify_items.jsonl` of an earlier run.
pub(crate) async fn judge(
    ctx: &Judging<'_>,
    suggestions: &[Suggestion],
    unit_of: &dyn Fn(&Suggestion) -> Option<Unit>,
    render: &dyn Render,
    fit: &dyn Fn(&Unit) -> Result<Fitted>,
    existing: &HashMap<String, Judgement>,
) -> Result<Verified> {
    let units: Vec<Unit> = suggestions.iter().filter_map(unit_of).collect();
    if units.is_empty() {
        return Ok(Verified::default());
    }
    let screened = crate::judges::context::screen(units, fit)?;
    ctx.progress.stage(
        "verifying missing gold",
        (screened.kept.len() * ctx.judges.len() * ctx.samples.max(1) as usize) as u64,
    );
    let judged = judge_units(ctx, &screened.kept, render, existing).await?;
    ctx.progress.finish_stage();
    Ok(Verified {
        records: judged.records.into_iter().flatten().map(|j| *j).collect(),
        stopped: judged.stopped,
    })
}

fn tag_name(same_document: bool) -> &'static str {
    if same_document {
        "same_document"
    } else {
        "other"
    }
}

/// The discriminability facts of an audit: chance rate, abstentions, pool tags, candidates.
pub(crate) fn info(
    items: &[ItemScore],
    judgements: &[Judgement],
    suggestions: &[Suggestion],
    passages: &HashMap<String, Passage>,
    at_least: f64,
) -> DiscriminabilityInfo {
    let comp: Vec<&Judgement> = judgements
        .iter()
        .filter(|j| j.dimension == Dimension::Completeness)
        .collect();
    let inv: Vec<f64> = comp
        .iter()
        .filter_map(|j| j.pool.as_ref())
        .filter(|p| !p.is_empty())
        .map(|p| 1.0 / p.len() as f64)
        .collect();
    let mut out = DiscriminabilityInfo {
        chance_rate: (!inv.is_empty()).then(|| crate::items::aggregate::mean(&inv)),
        verify_rating_at_least: at_least,
        ..Default::default()
    };
    let mut negatives: HashSet<(&str, &str, &str)> = HashSet::new();
    for j in &comp {
        if j.ok() {
            out.answers += 1;
        }
        if j.ok() && j.pick_passage_id.is_some() {
            out.picks += 1;
        }
        if let Some(a) = j.abstention.filter(|_| j.ok()) {
            *out.abstentions.entry(a.name().into()).or_default() += 1;
            *out.abstentions_per_judge
                .entry(j.judge.clone())
                .or_default()
                .entry(a.name().into())
                .or_default() += 1;
        }
        let gold = j.passage_id.as_deref().unwrap_or_default();
        for n in j.pool.iter().flatten().filter(|n| n.as_str() != gold) {
            negatives.insert((j.turn_id.as_str(), gold, n.as_str()));
        }
    }
    out.pool_negatives = negatives.len();
    out.pool_negatives_same_document = negatives
        .iter()
        .filter(|(_, g, n)| same_document(passages.get(*g), passages.get(*n)))
        .count();
    for it in items
        .iter()
        .filter(|i| i.dimension == Dimension::Completeness)
    {
        out.none_majority_items += usize::from(it.none_majority());
        out.abstained_items +=
            usize::from(it.per_judge.is_empty() && it.abstentions.values().sum::<usize>() > 0);
    }
    for s in suggestions {
        *out.candidates.entry(s.verdict).or_default() += 1;
        *out.candidates_by_tag
            .entry(tag_name(s.same_document).into())
            .or_default()
            .entry(s.verdict)
            .or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::aggregate::tests::judgement;

    fn passage(id: &str, doc: Option<&str>, text: &str) -> Passage {
        Passage {
            id: id.into(),
            title: String::new(),
            text: text.into(),
            doc_id: doc.map(Into::into),
            meta: Default::default(),
        }
    }

    #[test]
    fn shingle_overlap_is_jaccard_of_word_5_shingles() {
        let a = "one two three four five six";
        assert_eq!(shingle_overlap(a, a), 1.0);
        // shingles of a: {1-5, 2-6}; of b: {2-6, 3-7}: 1 shared of 3
        let b = "Two, three FOUR five six seven";
        assert!((shingle_overlap(a, b) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(shingle_overlap(a, "nothing in common here at all"), 0.0);
        assert_eq!(shingle_overlap("", a), 0.0);
        assert_eq!(shingle_overlap("short one", "Short ONE"), 1.0);
    }

    #[test]
    fn verdict_needs_a_strict_majority_of_all_judges() {
        use SuggestionVerdict::*;
        assert_eq!(verdict(&[Some(5.0), Some(4.0)], 4.0), ProbableMissingGold);
        assert_eq!(verdict(&[Some(5.0), Some(3.0)], 4.0), NotConfirmed);
        assert_eq!(verdict(&[Some(5.0), None], 4.0), Unverified);
        assert_eq!(verdict(&[None, None], 4.0), Unverified);
        assert_eq!(verdict(&[Some(2.0), None, Some(1.0)], 4.0), NotConfirmed);
        assert_eq!(
            verdict(&[Some(4.0), Some(4.5), Some(1.0)], 4.0),
            ProbableMissingGold
        );
        assert_eq!(verdict(&[Some(5.0), Some(5.0)], 6.0), NotConfirmed);
    }

    #[test]
    fn apply_records_ratings_and_verdicts_and_tags_split_documents() {
        let mut s = vec![Suggestion {
            turn_id: "d::1".into(),
            passage_id: "doc1_10-20".into(),
            gold_passage_id: "doc1_0-15".into(),
            votes: 4,
            picks: 6,
            verdict: SuggestionVerdict::Unverified,
            alignment_ratings: BTreeMap::new(),
            grade: 1,
            same_document: false,
            shingle_overlap: 0.0,
        }];
        let a = Dimension::Alignment;
        let recs = vec![
            judgement(a, "d::1", Some("doc1_10-20"), "a", None, Some(5.0), None),
            judgement(a, "d::1", Some("doc1_10-20"), "b", None, Some(4.0), None),
            judgement(a, "d::1", Some("other"), "b", None, Some(1.0), None),
        ];
        apply(&mut s, &recs, &["a".into(), "b".into()], 4.0);
        assert_eq!(s[0].verdict, SuggestionVerdict::ProbableMissingGold);
        assert_eq!(s[0].alignment_ratings["a"], 5.0);
        assert_eq!(s[0].alignment_ratings["b"], 4.0);
        apply(&mut s, &recs, &["a".into(), "b".into()], 5.0);
        assert_eq!(s[0].verdict, SuggestionVerdict::NotConfirmed);
        let passages: HashMap<String, Passage> = [
            passage("doc1_10-20", Some("doc1"), "a b c d e f g h"),
            passage("doc1_0-15", Some("doc1"), "x y a b c d e f"),
        ]
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
        tag(&mut s, &passages);
        assert!(s[0].same_document);
        // shingles {abcde, bcdef, cdefg, defgh} vs {xyabc, yabcd, abcde, bcdef}: 2 of 6
        assert!(
            (s[0].shingle_overlap - 0.3333).abs() < 1e-9,
            "{}",
            s[0].shingle_overlap
        );
        let info = info(&[], &[], &s, &passages, 4.0);
        assert_eq!(
            info.candidates_by_tag["same_document"][&SuggestionVerdict::NotConfirmed],
            1
        );
        assert!(!same_document(passages.get("doc1_10-20"), None));
    }
}
