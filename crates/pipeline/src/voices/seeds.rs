//! Seed questions: real questions (a log, a benchmark's queries) whose intent and style the
//! user agent imitates, and the index that rejects a synthesized question that nearly copies
//! one. Formats, by extension:
//! - `.jsonl` / `.json`: a `question`, `query` or `text` field per record (BEIR queries, the
//!   MTRAG tasks' `|user|: ...` texts: the last user message is kept), or an MTRAG
//!   conversation's `messages` (each `user` message is a seed); a `.json` may be one array;
//! - `.tsv`: `id<TAB>text` (BEIR/TREC queries; a `query-id`/`qid`/`id` header is skipped);
//! - anything else: one question a line (`#` comments and blank lines skipped).
//!
//! The near-copy check is the repetition guard's measure (`crate::repetition`: Jaccard of word
//! shingles, character shingles in CJK text) against every seed, exact, through an inverted
//! index of shingle hashes: only the seeds that share a shingle with the question are
//! scored: at worst (every seed sharing a shingle with the question) a scan of 10,000 seeds
//! takes about 2 ms in a debug build.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use serde_json::Value;

use super::voice_files::{Format, bad_line, content_lines, read};
use crate::error::Result;
use crate::repetition::shingles;

/// The seed questions of `path` (trimmed, exact repeats dropped, in file order) and its
/// content hash.
pub(crate) fn read_seeds(path: &Path) -> Result<(Vec<String>, String)> {
    let (text, hash, format) = read(path, "seed question")?;
    let raw = match format {
        Format::JsonLines => {
            let mut out = Vec::new();
            for (n, l) in content_lines(&text) {
                let v: Value = serde_json::from_str(l)
                    .map_err(|e| bad_line(path, n, "(json)", format!("not a JSON object: {e}")))?;
                out.extend(record_questions(path, n, &v)?);
            }
            out
        }
        Format::JsonArray => {
            let v: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
                bad_line(
                    path,
                    e.line() as u64,
                    "(json)",
                    format!("not a JSON array: {e}"),
                )
            })?;
            let mut out = Vec::new();
            for (i, v) in v.iter().enumerate() {
                out.extend(record_questions(path, i as u64 + 1, v)?);
            }
            out
        }
        Format::Tsv => {
            let mut out = Vec::new();
            for (i, (n, l)) in content_lines(&text).enumerate() {
                let Some((id, q)) = l.split_once('\t') else {
                    return Err(bad_line(path, n, "text", "a TSV line is `id<TAB>text`"));
                };
                let header = i == 0
                    && ["id", "qid", "query-id", "query_id", "_id"]
                        .contains(&id.trim().to_lowercase().as_str());
                if !header {
                    out.push(q.to_string());
                }
            }
            out
        }
        Format::Toml | Format::Text => content_lines(&text).map(|(_, l)| l.to_string()).collect(),
    };
    let mut seen = std::collections::HashSet::new();
    let seeds: Vec<String> = raw
        .into_iter()
        .map(|q| {
            last_user_message(&q)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|q| !q.is_empty() && seen.insert(q.to_lowercase()))
        .collect();
    if seeds.is_empty() {
        return Err(super::voice_files::input(
            mtr_core::InputError::new(path, "the seed question file holds no question").hint(
                "one question a line, or JSON lines with a `question`, `query` or `text` field",
            ),
        ));
    }
    Ok((seeds, hash))
}

/// The questions of one JSON record: its `question`, `query` or `text`, or its `messages`'
/// user texts.
fn record_questions(path: &Path, n: u64, v: &Value) -> Result<Vec<String>> {
    if !v.is_object() {
        return Err(bad_line(
            path,
            n,
            "(json)",
            "a seed record is a JSON object",
        ));
    }
    if let Some(messages) = v.get("messages").and_then(Value::as_array) {
        return Ok(messages
            .iter()
            .filter(|m| m.get("speaker").and_then(Value::as_str) == Some("user"))
            .filter_map(|m| m.get("text").and_then(Value::as_str))
            .map(str::to_string)
            .collect());
    }
    for key in ["question", "query", "text"] {
        match v.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => return Ok(vec![s.clone()]),
            Some(Value::String(_)) => {
                return Err(bad_line(path, n, key, format!("`{key}` is empty")));
            }
            Some(_) => return Err(bad_line(path, n, key, format!("`{key}` is not a string"))),
            None => {}
        }
    }
    Err(bad_line(
        path,
        n,
        "question",
        "a seed record needs a `question`, `query` or `text` field (or MTRAG `messages`)",
    ))
}

/// The last user message of an MTRAG task text (`|user|: ... |user|: ...`), else the text.
fn last_user_message(q: &str) -> &str {
    q.rsplit("|user|:").next().unwrap_or(q).trim()
}

/// The seeds and their shingles' inverted index.
#[derive(Debug, Default)]
pub(crate) struct SeedIndex {
    seeds: Vec<String>,
    /// Distinct shingles per seed.
    sizes: Vec<u32>,
    /// Shingle hash -> the seeds that have it (each seed once).
    postings: HashMap<u64, Vec<u32>>,
    shingle: usize,
    threshold: f64,
}

fn shingle_hashes(text: &str, k: usize) -> Vec<u64> {
    // the same hasher (fixed keys) in the index and the query: an in-memory key only
    shingles(text, k)
        .iter()
        .map(|s| {
            let mut h = DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        })
        .collect()
}

impl SeedIndex {
    /// Indexes `seeds` for the near-copy check at `threshold` with `shingle`-token shingles.
    pub(crate) fn new(seeds: Vec<String>, shingle: usize, threshold: f64) -> Self {
        let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut sizes = Vec::with_capacity(seeds.len());
        for (i, s) in seeds.iter().enumerate() {
            let mut hs = shingle_hashes(s, shingle);
            hs.sort_unstable();
            hs.dedup();
            sizes.push(hs.len() as u32);
            for h in hs {
                postings.entry(h).or_default().push(i as u32);
            }
        }
        Self {
            seeds,
            sizes,
            postings,
            shingle,
            threshold,
        }
    }

    /// Number of seeds.
    pub(crate) fn len(&self) -> usize {
        self.seeds.len()
    }

    /// Seed `i`.
    pub(crate) fn seed(&self, i: usize) -> Option<&str> {
        self.seeds.get(i).map(String::as_str)
    }

    /// The most similar seed of `text` (`(index, Jaccard)`) when at or above the threshold.
    pub(crate) fn near_copy(&self, text: &str) -> Option<(usize, f64)> {
        self.most_similar(text)
            .filter(|&(_, s)| s >= self.threshold)
    }

    /// The most similar seed of `text` sharing a shingle with it (lowest index on ties).
    pub(crate) fn most_similar(&self, text: &str) -> Option<(usize, f64)> {
        let mut hs = shingle_hashes(text, self.shingle);
        hs.sort_unstable();
        hs.dedup();
        if hs.is_empty() {
            return None;
        }
        let mut shared: HashMap<u32, u32> = HashMap::new();
        for h in &hs {
            for &s in self.postings.get(h).map(Vec::as_slice).unwrap_or_default() {
                *shared.entry(s).or_default() += 1;
            }
        }
        let a = hs.len() as f64;
        shared
            .into_iter()
            .map(|(s, inter)| {
                let b = f64::from(self.sizes[s as usize]);
                let inter = f64::from(inter);
                (s as usize, inter / (a + b - inter))
            })
            .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn every_format_reads_its_questions() {
        let want = [
            "How many teams are in the NFL?",
            "Who won the most Super Bowls?",
        ];
        let cases = [
            (
                "s.txt",
                "# log\nHow many teams are in the NFL?\n\nWho won the most Super Bowls?\nhow many teams are in the NFL?\n",
            ),
            (
                "s.jsonl",
                "{\"question\": \"How many teams are in the NFL?\"}\n{\"query\": \"Who won the most Super Bowls?\"}\n",
            ),
            (
                "s.tsv",
                "query-id\ttext\nq1\tHow many teams are in the NFL?\nq2\tWho won the most Super Bowls?\n",
            ),
            // MTRAG tasks: the last user message of the history
            (
                "t.jsonl",
                "{\"_id\": \"a<::>1\", \"text\": \"|user|: How many teams are in the NFL?\"}\n{\"_id\": \"a<::>2\", \"text\": \"|user|: hi\\n|user|: Who won the most Super Bowls?\"}\n",
            ),
            // MTRAG conversations, one a line or one array
            (
                "c.jsonl",
                "{\"messages\": [{\"speaker\": \"user\", \"text\": \"How many teams are in the NFL?\"}, {\"speaker\": \"agent\", \"text\": \"32.\"}, {\"speaker\": \"user\", \"text\": \"Who won the most Super Bowls?\"}]}\n",
            ),
            (
                "c.json",
                "[{\"messages\": [{\"speaker\": \"user\", \"text\": \"How many teams are in the NFL?\"}]}, {\"question\": \"Who won the most Super Bowls?\"}]",
            ),
        ];
        for (name, text) in cases {
            let (_d, p) = file(name, text);
            let (got, _) = read_seeds(&p).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn bad_seed_files_name_the_file_line_and_field() {
        let err = |name: &str, text: &str| {
            let (_d, p) = file(name, text);
            let e = read_seeds(&p).unwrap_err();
            assert!(e.is_user_error(), "{e}");
            mtr_core::Error::from(e).to_string()
        };
        let e = err("s.jsonl", "{\"question\": \"a?\"}\n{\"title\": \"b\"}\n");
        assert!(e.contains("s.jsonl:2: field `question`"), "{e}");
        let e = err("s.jsonl", "{\"question\": \"a?\"}\n{\"query\": 3}\n");
        assert!(e.contains("s.jsonl:2: field `query`"), "{e}");
        let e = err("s.tsv", "q1\tone?\nno tab here\n");
        assert!(e.contains("s.tsv:2: field `text`"), "{e}");
        let e = err("s.txt", "\n# only a comment\n");
        assert!(e.contains("s.txt") && e.contains("empty"), "{e}");
    }

    #[test]
    fn a_near_copy_is_caught_and_a_new_question_is_not() {
        let idx = SeedIndex::new(
            vec![
                "How many teams are in the NFL?".into(),
                "When does open enrollment for health insurance start?".into(),
                "年假最多能结转几天？".into(),
            ],
            2,
            0.5,
        );
        assert_eq!(
            idx.near_copy("how many teams are in the NFL"),
            Some((0, 1.0))
        );
        // one word changed
        let (i, s) = idx
            .near_copy("How many teams are in the NFL playoffs?")
            .unwrap();
        assert!(i == 0 && s > 0.8, "{s}");
        // the same intent in new words, about something else, is not a copy
        assert_eq!(
            idx.near_copy("How many players sit on a hockey bench?"),
            None
        );
        assert_eq!(idx.near_copy("When can I change my dental plan?"), None);
        // Chinese by characters
        assert_eq!(
            idx.near_copy("年假最多可以结转几天？").map(|x| x.0),
            Some(2)
        );
        assert_eq!(idx.near_copy("病假需要提交诊断证明吗？"), None);
    }

    /// The index answers what a scan of every seed with the repetition guard's Jaccard answers.
    #[test]
    fn the_index_agrees_with_a_full_scan() {
        let seeds: Vec<String> = (0..300)
            .map(|i| {
                format!(
                    "what is the rule {} for form {} in state {}",
                    i % 7,
                    i % 13,
                    i % 5
                )
            })
            .collect();
        let idx = SeedIndex::new(seeds.clone(), 2, 0.5);
        for q in [
            "what is the rule 3 for form 4 in state 2",
            "rule 6 form 12",
            "is there a form",
        ] {
            let a = shingles(q, 2);
            let best = seeds
                .iter()
                .map(|s| crate::repetition::jaccard(&a, &shingles(s, 2)))
                .fold(0.0, f64::max);
            let got = idx.most_similar(q).map_or(0.0, |x| x.1);
            assert!((got - best).abs() < 1e-12, "{q}: {got} vs {best}");
        }
    }

    /// 10,000 seeds: one check stays far below a turn's cost (a turn is seconds of LLM calls).
    /// The seeds are drawn from 20 words, so every seed shares shingles with the question: the
    /// index's worst case, a scan of all of them (measured: 1.7 ms per check in a debug build,
    /// the index built in 0.2 s).
    #[test]
    fn ten_thousand_seeds_cost_a_turn_nothing() {
        let words = [
            "how", "many", "days", "of", "leave", "do", "I", "get", "what", "is", "the",
            "deadline", "for", "tax", "return", "when", "can", "apply", "visa", "permit",
        ];
        let seeds: Vec<String> = (0..10_000)
            .map(|i| {
                (0..9)
                    .map(|j| words[(i * 7 + j * (i % 11 + 1)) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
                    + &format!(" {i}?")
            })
            .collect();
        let t = std::time::Instant::now();
        let idx = SeedIndex::new(seeds, 2, 0.5);
        let built = t.elapsed();
        let t = std::time::Instant::now();
        let n = 200;
        for i in 0..n {
            let _ = idx.near_copy(&format!("how many days of leave do I get for visa {i}?"));
        }
        let per = t.elapsed() / n;
        eprintln!("10k seeds: index built in {built:?}, {per:?} per check");
        // generous for a debug build on a loaded CI machine
        assert!(per < std::time::Duration::from_millis(20), "{per:?}");
    }
}
