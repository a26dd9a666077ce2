//! Descriptive statistics of a benchmark: how many dialogues and turns, how long the dialogues
//! are, how much gold each turn has, how long queries are in tokens (tiktoken `o200k_base`),
//! which languages the dialogues are in (whatlang), and how tags are distributed. The corpus is
//! streamed (only counts and lengths are kept).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::benchmark::BenchmarkDir;
use crate::error::Result;
use crate::language::language_of;
use crate::model::Dialogue;

/// The tokenizer query lengths are measured with.
pub(crate) const TOKENIZER: &str = "o200k_base";

/// Summary of a list of counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Their mean (0 for none).
    pub mean: f64,
    /// The smallest.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The largest.
    pub max: f64,
}

impl Summary {
    /// The summary of `values` (all zero for none).
    pub fn of(values: &[f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let q = |p: f64| v[((p * (n - 1) as f64).round() as usize).min(n - 1)];
        Self {
            count: n,
            mean: v.iter().sum::<f64>() / n as f64,
            min: v[0],
            median: if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            },
            p90: q(0.9),
            max: v[n - 1],
        }
    }
    fn line(&self, unit: &str) -> String {
        format!(
            "mean {:.2} {unit}, median {}, p90 {}, min {}, max {}",
            self.mean,
            trim_float(self.median),
            trim_float(self.p90),
            trim_float(self.min),
            trim_float(self.max)
        )
    }
}

fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Everything `mtr stats` reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BenchmarkStats {
    /// The benchmark's name.
    pub name: String,
    /// The format it was imported from.
    pub source: String,
    /// Its language.
    pub language: String,
    /// Its content fingerprint.
    pub fingerprint: String,
    /// Passages in the corpus.
    pub passages: u64,
    /// Passage lengths in characters.
    pub passage_chars: Summary,
    /// Dialogues.
    pub dialogues: usize,
    /// Turns.
    pub turns: usize,
    /// Turns per dialogue.
    pub turns_per_dialogue: Summary,
    /// Turns with at least one relevant (grade > 0) gold passage.
    pub judged_turns: usize,
    /// Relevant gold passages per turn, over all turns.
    pub gold_per_turn: Summary,
    /// Relevant gold passages per judged turn.
    pub gold_per_judged_turn: Summary,
    /// Turns with a rewrite.
    pub turns_with_rewrite: usize,
    /// Turns with a reference answer.
    pub turns_with_answer: usize,
    /// The tokenizer the token counts use.
    pub tokenizer: String,
    /// Tokens of the user question.
    pub query_tokens: Summary,
    /// Tokens of the rewrite, over turns that have one.
    pub rewrite_tokens: Summary,
    /// Tokens of the conversation before the turn (questions and answers).
    pub history_tokens: Summary,
    /// Dialogues per detected language (ISO 639-1 where known, `und` when undetectable).
    pub languages: BTreeMap<String, usize>,
    /// Turns per answerability value (`none` when untagged).
    pub answerability: BTreeMap<String, usize>,
    /// Turns per value of every tag (`question_type` counts each of a turn's labels).
    pub tags: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Token count with the `o200k_base` tokenizer.
pub fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// Computes the statistics of a benchmark folder.
pub fn compute(dir: &BenchmarkDir) -> Result<BenchmarkStats> {
    let manifest = dir.manifest()?;
    let dialogues = dir.dialogues()?;
    let mut s = of_dialogues(&dialogues);
    s.name = manifest.name;
    s.source = manifest.source;
    s.language = manifest.language;
    s.fingerprint = manifest.fingerprint;
    let mut chars = Vec::new();
    dir.for_each_passage(|_, p| {
        chars.push((p.title.chars().count() + p.text.chars().count()) as f64);
        Ok(())
    })?;
    s.passages = chars.len() as u64;
    s.passage_chars = Summary::of(&chars);
    Ok(s)
}

/// The dialogue part of the statistics (no corpus).
pub(crate) fn of_dialogues(dialogues: &[Dialogue]) -> BenchmarkStats {
    let mut s = BenchmarkStats {
        tokenizer: TOKENIZER.into(),
        dialogues: dialogues.len(),
        ..Default::default()
    };
    let mut per_dialogue = Vec::new();
    let mut gold_all = Vec::new();
    let mut gold_judged = Vec::new();
    let mut q_tokens = Vec::new();
    let mut r_tokens = Vec::new();
    let mut h_tokens = Vec::new();
    for d in dialogues {
        per_dialogue.push(d.turns.len() as f64);
        let mut history = 0usize;
        let mut text = String::new();
        for t in &d.turns {
            s.turns += 1;
            let rel = t.relevant().count();
            gold_all.push(rel as f64);
            if rel > 0 {
                s.judged_turns += 1;
                gold_judged.push(rel as f64);
            }
            let qt = tokens(&t.user);
            q_tokens.push(qt as f64);
            h_tokens.push(history as f64);
            history += qt;
            if let Some(r) = &t.rewrite {
                s.turns_with_rewrite += 1;
                r_tokens.push(tokens(r) as f64);
            }
            if let Some(a) = &t.answer {
                s.turns_with_answer += 1;
                history += tokens(a);
            }
            let ans = t
                .tags
                .answerability
                .clone()
                .unwrap_or_else(|| "none".into());
            *s.answerability.entry(ans).or_default() += 1;
            for (k, v) in t.tags.pairs() {
                let counts = s.tags.entry(k.clone()).or_default();
                if k == "question_type" {
                    // Multi-label (MTRAG joins labels with `,`): each label counts.
                    for label in v.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                        *counts.entry(label.to_string()).or_default() += 1;
                    }
                } else {
                    *counts.entry(v).or_default() += 1;
                }
            }
            text.push_str(&t.user);
            text.push('\n');
        }
        *s.languages.entry(language_of(&text)).or_default() += 1;
    }
    s.turns_per_dialogue = Summary::of(&per_dialogue);
    s.gold_per_turn = Summary::of(&gold_all);
    s.gold_per_judged_turn = Summary::of(&gold_judged);
    s.query_tokens = Summary::of(&q_tokens);
    s.rewrite_tokens = Summary::of(&r_tokens);
    s.history_tokens = Summary::of(&h_tokens);
    s
}

impl BenchmarkStats {
    /// A human-readable report.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "benchmark     {} (source: {}, language: {})",
            self.name,
            or_dash(&self.source),
            or_dash(&self.language)
        );
        let _ = writeln!(
            o,
            "fingerprint   {}",
            crate::fingerprint::short(&self.fingerprint)
        );
        let _ = writeln!(
            o,
            "passages      {} ({})",
            self.passages,
            self.passage_chars.line("chars")
        );
        let _ = writeln!(o, "dialogues     {}", self.dialogues);
        let _ = writeln!(
            o,
            "turns         {} ({} with gold, {} with rewrite, {} with answer)",
            self.turns, self.judged_turns, self.turns_with_rewrite, self.turns_with_answer
        );
        let _ = writeln!(
            o,
            "turns/dialogue {}",
            self.turns_per_dialogue.line("turns")
        );
        let _ = writeln!(
            o,
            "gold/turn     {} (judged turns: mean {:.2}, max {})",
            self.gold_per_turn.line("passages"),
            self.gold_per_judged_turn.mean,
            trim_float(self.gold_per_judged_turn.max)
        );
        let _ = writeln!(
            o,
            "query tokens  {} [{}]",
            self.query_tokens.line("tokens"),
            self.tokenizer
        );
        if self.rewrite_tokens.count > 0 {
            let _ = writeln!(o, "rewrite tokens {}", self.rewrite_tokens.line("tokens"));
        }
        let _ = writeln!(o, "history tokens {}", self.history_tokens.line("tokens"));
        let _ = writeln!(o, "languages     {}", counts(&self.languages));
        let _ = writeln!(o, "answerability {}", counts(&self.answerability));
        for (tag, values) in &self.tags {
            if tag == "answerability" {
                continue;
            }
            let _ = writeln!(o, "tag {tag:<10} {}", counts(values));
        }
        o
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// `a 3, b 2` sorted by count descending then name; the 15 most frequent, then how many more.
fn counts(m: &BTreeMap<String, usize>) -> String {
    const SHOWN: usize = 15;
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = v
        .iter()
        .take(SHOWN)
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > SHOWN {
        out.push_str(&format!(" (+{} more values)", v.len() - SHOWN));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Gold, Tags, Turn};

    #[test]
    fn summary_values() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 10.0]);
        assert_eq!((s.count, s.min, s.max, s.median), (4, 1.0, 10.0, 2.5));
        assert_eq!(s.mean, 4.0);
        assert_eq!(Summary::of(&[]).count, 0);
    }

    #[test]
    fn tokens_counted() {
        assert_eq!(tokens("hello world"), 2);
    }

    #[test]
    fn dialogue_stats() {
        let t = |id: &str, g: usize, ans: &str| Turn {
            id: id.into(),
            user: "how many teams are in the league".into(),
            rewrite: None,
            answer: Some("thirty-two".into()),
            gold: (0..g)
                .map(|i| Gold {
                    passage_id: format!("p{i}"),
                    grade: 1,
                })
                .collect(),
            tags: Tags {
                answerability: Some(ans.into()),
                question_type: Some("Factoid".into()),
                ..Default::default()
            },
        };
        let d = Dialogue {
            id: "d".into(),
            turns: vec![t("a", 2, "answerable"), t("b", 0, "unanswerable")],
            meta: Default::default(),
        };
        let s = of_dialogues(&[d]);
        assert_eq!((s.turns, s.judged_turns), (2, 1));
        assert_eq!(s.gold_per_turn.mean, 1.0);
        assert_eq!(s.answerability["unanswerable"], 1);
        assert_eq!(s.tags["question_type"]["Factoid"], 2);
        assert_eq!(s.history_tokens.min, 0.0);
        assert!(s.history_tokens.max > s.query_tokens.max);
        assert!(s.render_text().contains("answerability"));
    }
}
