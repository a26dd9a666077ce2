//! Conversational query formulation: how a turn and its history become the text a retriever
//! searches for. Each formulation has a stable name that goes into run names and metadata,
//! because the same retriever scores very differently with different formulations.

use std::fmt;
use std::str::FromStr;

use mtr_core::Dialogue;
use mtr_core::model::Utterance;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::retriever::BoxFuture;

/// Default token budget of `full`.
pub const DEFAULT_FULL_BUDGET: usize = 512;

/// A query formulation. Parse with `"full:256".parse()`; print with [`QueryFormulation::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum QueryFormulation {
    /// The turn's user utterance.
    Last,
    /// All user utterances up to and including this turn, oldest first.
    All,
    /// User and agent utterances, newest last, left-truncated to a token budget (cl100k
    /// tokens); the current question is always kept whole.
    Full {
        /// The token budget (cl100k tokens).
        budget: usize,
    },
    /// The last `n` earlier turns (user and agent utterances) and the current question.
    Window(usize),
    /// The benchmark's gold rewrite (the user utterance where a turn has none).
    Rewrite,
    /// A rewrite by the generator LLM (see [`Rewriter`]).
    LlmRewrite,
}

impl QueryFormulation {
    /// The stable name: `last`, `all`, `full:512`, `window:2`, `rewrite`, `llm-rewrite`.
    pub fn name(&self) -> String {
        match self {
            QueryFormulation::Last => "last".into(),
            QueryFormulation::All => "all".into(),
            QueryFormulation::Full { budget } => format!("full:{budget}"),
            QueryFormulation::Window(n) => format!("window:{n}"),
            QueryFormulation::Rewrite => "rewrite".into(),
            QueryFormulation::LlmRewrite => "llm-rewrite".into(),
        }
    }

    /// The formulations a bench sweeps by default.
    pub fn standard() -> Vec<QueryFormulation> {
        vec![
            QueryFormulation::Last,
            QueryFormulation::All,
            QueryFormulation::Full {
                budget: DEFAULT_FULL_BUDGET,
            },
            QueryFormulation::Window(2),
            QueryFormulation::Rewrite,
        ]
    }

    /// The query text for turn `index` of `dialogue`. `llm-rewrite` needs a [`Rewriter`]: use
    /// [`QueryFormulation::formulate_with`]. `rewrite` falls back to the user utterance; the
    /// boolean is true when it did.
    pub fn formulate(&self, dialogue: &Dialogue, index: usize) -> Result<(String, bool)> {
        let Some(turn) = dialogue.turns.get(index) else {
            return Err(crate::Error::Internal(format!(
                "dialogue {} has no turn {index}",
                dialogue.id
            )));
        };
        let history = dialogue.history(index);
        Ok(match self {
            QueryFormulation::Last => (turn.user.clone(), false),
            QueryFormulation::All => {
                let mut parts: Vec<&str> = dialogue.turns[..index]
                    .iter()
                    .map(|t| t.user.as_str())
                    .collect();
                parts.push(&turn.user);
                (parts.join("\n"), false)
            }
            QueryFormulation::Full { budget } => (full_text(&history, &turn.user, *budget), false),
            QueryFormulation::Window(n) => {
                let start = window_start(dialogue, index, *n);
                let hist = &history[start..];
                let mut parts: Vec<&str> = hist.iter().map(|u| u.text).collect();
                parts.push(&turn.user);
                (parts.join("\n"), false)
            }
            QueryFormulation::Rewrite => match turn.rewrite.as_deref().map(str::trim) {
                Some(r) if !r.is_empty() => (r.to_string(), false),
                _ => (turn.user.clone(), true),
            },
            QueryFormulation::LlmRewrite => {
                return Err(crate::Error::Internal(
                    "llm-rewrite needs a Rewriter (use formulate_with)".into(),
                ));
            }
        })
    }

    /// Like [`QueryFormulation::formulate`], with an LLM rewriter for `llm-rewrite`.
    pub(crate) async fn formulate_with(
        &self,
        dialogue: &Dialogue,
        index: usize,
        rewriter: Option<&dyn Rewriter>,
    ) -> Result<(String, bool)> {
        if *self != QueryFormulation::LlmRewrite {
            return self.formulate(dialogue, index);
        }
        let Some(rw) = rewriter else {
            return Err(mtr_core::InputError::new(
                "--query",
                "llm-rewrite needs a generator model",
            )
            .hint("configure the `generator` role in [llm], or pick another --query")
            .into());
        };
        let turn = &dialogue.turns[index.min(dialogue.turns.len().saturating_sub(1))];
        let history = dialogue.history(index);
        Ok((rw.rewrite(&history, &turn.user).await?, false))
    }
}

/// Index into `history` (utterances of earlier turns) where the last `n` turns start.
fn window_start(dialogue: &Dialogue, index: usize, n: usize) -> usize {
    let first_turn = index.saturating_sub(n);
    dialogue.turns[..first_turn]
        .iter()
        .map(|t| 1 + usize::from(t.answer.is_some()))
        .sum()
}

/// `full`: the current question whole, then as many earlier utterances as fit in the budget,
/// newest first, the oldest included one cut from its left at a token boundary.
fn full_text(history: &[Utterance<'_>], question: &str, budget: usize) -> String {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let mut used = bpe.encode_ordinary(question).len();
    let mut kept: Vec<String> = Vec::new();
    for u in history.iter().rev() {
        if used >= budget {
            break;
        }
        let toks = bpe.encode_ordinary(u.text);
        let room = budget - used;
        if toks.len() <= room {
            used += toks.len();
            kept.push(u.text.to_string());
        } else {
            // Cut from the left; a cut inside a multi-byte character drops one more token.
            let mut start = toks.len() - room;
            while start < toks.len() {
                if let Ok(s) = bpe.decode(&toks[start..]) {
                    let s = s.trim_start().to_string();
                    if !s.is_empty() {
                        kept.push(s);
                    }
                    break;
                }
                start += 1;
            }
            break;
        }
    }
    kept.reverse();
    kept.push(question.to_string());
    kept.join("\n")
}

impl fmt::Display for QueryFormulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl From<QueryFormulation> for String {
    fn from(q: QueryFormulation) -> String {
        q.name()
    }
}

impl TryFrom<String> for QueryFormulation {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl FromStr for QueryFormulation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        let (head, arg) = match s.split_once([':', '=']) {
            Some((h, a)) => (h, Some(a)),
            None => (s.as_str(), None),
        };
        let num = |a: Option<&str>| -> Result<Option<usize>, String> {
            a.map(|a| {
                a.parse::<usize>()
                    .map_err(|_| format!("`{a}` is not a number in query formulation `{s}`"))
            })
            .transpose()
        };
        match head {
            "last" | "lastturn" if arg.is_none() => Ok(QueryFormulation::Last),
            "all" if arg.is_none() => Ok(QueryFormulation::All),
            "full" => match num(arg)? {
                Some(0) => Err("full:N needs N > 0".into()),
                b => Ok(QueryFormulation::Full {
                    budget: b.unwrap_or(DEFAULT_FULL_BUDGET),
                }),
            },
            "window" => match num(arg)? {
                Some(n) => Ok(QueryFormulation::Window(n)),
                None => Err("window needs a number of earlier turns, e.g. window:2".into()),
            },
            "rewrite" if arg.is_none() => Ok(QueryFormulation::Rewrite),
            "llm-rewrite" | "llm_rewrite" if arg.is_none() => Ok(QueryFormulation::LlmRewrite),
            _ => Err(format!(
                "unknown query formulation `{s}` (expected last, all, full, full:N, window:N, rewrite, llm-rewrite)"
            )),
        }
    }
}

/// Rewrites a turn into a standalone question with an LLM (the generator role). Caching is the
/// LLM layer's job, so re-running a benchmark does not pay twice.
pub trait Rewriter: Send + Sync {
    /// A stable id of the model and prompt, recorded in run metadata.
    fn name(&self) -> String;
    /// The standalone question for `question`, given the earlier utterances `history`.
    fn rewrite<'a>(
        &'a self,
        history: &'a [Utterance<'a>],
        question: &'a str,
    ) -> BoxFuture<'a, Result<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_core::{Tags, Turn};

    fn dialogue() -> Dialogue {
        let t = |id: &str, user: &str, answer: Option<&str>, rewrite: Option<&str>| Turn {
            id: id.into(),
            user: user.into(),
            rewrite: rewrite.map(Into::into),
            answer: answer.map(Into::into),
            gold: vec![],
            tags: Tags::default(),
        };
        Dialogue {
            id: "d".into(),
            turns: vec![
                t(
                    "d::1",
                    "where do the cardinals play",
                    Some("In Glendale, Arizona."),
                    None,
                ),
                t(
                    "d::2",
                    "since when?",
                    Some("Since 2006."),
                    Some("since when do the cardinals play in Glendale?"),
                ),
                t("d::3", "and before that?", None, None),
            ],
            meta: Default::default(),
        }
    }

    #[test]
    fn parse_and_names_roundtrip() {
        for s in [
            "last",
            "all",
            "full",
            "full:128",
            "window:2",
            "rewrite",
            "llm-rewrite",
        ] {
            let f: QueryFormulation = s.parse().unwrap();
            assert_eq!(f.name().parse::<QueryFormulation>().unwrap(), f);
        }
        assert_eq!(
            "full".parse::<QueryFormulation>().unwrap().name(),
            "full:512"
        );
        assert_eq!(
            "window=3".parse::<QueryFormulation>().unwrap(),
            QueryFormulation::Window(3)
        );
        assert!("window".parse::<QueryFormulation>().is_err());
        assert!("full:x".parse::<QueryFormulation>().is_err());
        assert!(
            "bogus"
                .parse::<QueryFormulation>()
                .unwrap_err()
                .contains("expected last")
        );
        let json = serde_json::to_string(&QueryFormulation::Window(1)).unwrap();
        assert_eq!(json, "\"window:1\"");
    }

    #[test]
    fn formulations_of_a_turn() {
        let d = dialogue();
        let f = |q: &str, i| {
            q.parse::<QueryFormulation>()
                .unwrap()
                .formulate(&d, i)
                .unwrap()
        };
        assert_eq!(f("last", 2).0, "and before that?");
        assert_eq!(
            f("all", 2).0,
            "where do the cardinals play\nsince when?\nand before that?"
        );
        assert_eq!(
            f("full", 2).0,
            "where do the cardinals play\nIn Glendale, Arizona.\nsince when?\nSince 2006.\nand before that?"
        );
        assert_eq!(
            f("window:1", 2).0,
            "since when?\nSince 2006.\nand before that?"
        );
        assert_eq!(f("window:0", 2).0, "and before that?");
        assert_eq!(
            f("window:9", 1).0,
            "where do the cardinals play\nIn Glendale, Arizona.\nsince when?"
        );
        assert_eq!(
            f("rewrite", 1),
            (
                "since when do the cardinals play in Glendale?".to_string(),
                false
            )
        );
        assert_eq!(f("rewrite", 2), ("and before that?".to_string(), true));
        assert!(
            "llm-rewrite"
                .parse::<QueryFormulation>()
                .unwrap()
                .formulate(&d, 0)
                .is_err()
        );
    }

    #[test]
    fn full_keeps_the_question_and_cuts_history_from_the_left() {
        let d = dialogue();
        let (q, _) = QueryFormulation::Full { budget: 8 }
            .formulate(&d, 2)
            .unwrap();
        // "and before that?" is 4 cl100k tokens; the 4 left are the end of "Since 2006."
        assert_eq!(q, "2006.\nand before that?");
        let (q, _) = QueryFormulation::Full { budget: 1 }
            .formulate(&d, 2)
            .unwrap();
        assert_eq!(q, "and before that?");
    }
}
