//! The closed vocabularies of `[synth.generation]` as types: a value outside them fails when
//! the configuration loads (the loader names the key, its file and line, and what is allowed),
//! not after curation, chunking and embedding. Each serialises to the string it was read
//! from, so the configuration's canonical JSON, and every fingerprint over it, is unchanged.

use mtr_llm::Llm;
use mtr_retrieve::QueryFormulation;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What `[synth.generation.uniqueness] query` allows.
const QUERY_ALLOWED: &str = "last, all, full, full:N or window:N";

/// `[synth.generation.uniqueness] query`: how the uniqueness search turns the history into a
/// query; a conversational formulation of mtr-retrieve that needs no rewrite (the synthesis
/// has neither a gold rewrite nor a rewriting model for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct UniquenessQuery(QueryFormulation);

impl UniquenessQuery {
    /// The formulation the search uses.
    pub fn formulation(self) -> QueryFormulation {
        self.0
    }
}

impl Default for UniquenessQuery {
    fn default() -> Self {
        Self(QueryFormulation::Full {
            budget: mtr_retrieve::query::DEFAULT_FULL_BUDGET,
        })
    }
}

impl From<UniquenessQuery> for String {
    fn from(q: UniquenessQuery) -> Self {
        q.0.name()
    }
}

impl TryFrom<String> for UniquenessQuery {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.parse::<QueryFormulation>() {
            Ok(QueryFormulation::Rewrite | QueryFormulation::LlmRewrite) | Err(_) => Err(format!(
                "`{s}` is no query formulation of the uniqueness search: expected one of {QUERY_ALLOWED}"
            )),
            Ok(f) => Ok(Self(f)),
        }
    }
}

/// `[synth.generation.relevance] judge`: the relevance judge of the verifier's gate.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum RelevanceJudge {
    /// No gate.
    #[default]
    None,
    /// The first of `[llm.roles] judges` that is a relevance judge, else the first configured
    /// endpoint that is one, else no gate.
    Auto,
    /// The endpoint of this name (checked against the endpoints before any work:
    /// [`RelevanceJudge::check`]).
    Endpoint(String),
}

impl From<RelevanceJudge> for String {
    fn from(j: RelevanceJudge) -> Self {
        match j {
            RelevanceJudge::None => "none".into(),
            RelevanceJudge::Auto => "auto".into(),
            RelevanceJudge::Endpoint(name) => name,
        }
    }
}

impl TryFrom<String> for RelevanceJudge {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        match s.trim() {
            "" => Err("expected auto, none or the name of a relevance endpoint".into()),
            "none" => Ok(Self::None),
            "auto" => Ok(Self::Auto),
            name => Ok(Self::Endpoint(name.to_string())),
        }
    }
}

impl RelevanceJudge {
    /// The setting's key, as errors name it.
    pub const KEY: &'static str = "generation.relevance.judge";

    /// The endpoint the gate calls, None when there is no gate: `auto` looks among the
    /// endpoints' relevance judges, an endpoint name is taken as it is ([`Self::check`]).
    pub fn resolve(&self, llm: &Llm) -> Option<String> {
        match self {
            Self::None => None,
            Self::Auto => llm
                .judges()
                .iter()
                .find(|j| llm.reranker(j).is_some())
                .cloned()
                .or_else(|| {
                    llm.config()
                        .endpoints
                        .iter()
                        .find(|e| e.rerank.is_some())
                        .map(|e| e.name.clone())
                }),
            Self::Endpoint(name) => Some(name.clone()),
        }
    }

    /// An endpoint name must name a relevance endpoint of `llm`: a typo (`autoo`) is refused
    /// with what is allowed, before the corpus is read.
    pub fn check(&self, llm: &Llm) -> Result<()> {
        let Self::Endpoint(name) = self else {
            return Ok(());
        };
        if llm.reranker(name).is_some() {
            return Ok(());
        }
        let judges: Vec<&str> = llm
            .config()
            .endpoints
            .iter()
            .filter(|e| e.rerank.is_some())
            .map(|e| e.name.as_str())
            .collect();
        let endpoints = if judges.is_empty() {
            "no endpoint is one".to_string()
        } else {
            judges.join(", ")
        };
        Err(Error::param(
            Self::KEY,
            format!(
                "`{name}` is no relevance endpoint: expected auto, none or a relevance endpoint ({endpoints})"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_outside_the_vocabulary_is_refused_with_what_is_allowed() {
        for bad in ["rewrit", "rewrite", "llm-rewrite", "window"] {
            let e = UniquenessQuery::try_from(bad.to_string()).unwrap_err();
            assert!(e.contains(bad) && e.contains(QUERY_ALLOWED), "{e}");
        }
        let q = UniquenessQuery::try_from("window:2".to_string()).unwrap();
        assert_eq!(String::from(q), "window:2");
        assert_eq!(String::from(UniquenessQuery::default()), "full:512");
    }

    #[test]
    fn the_judge_reads_and_writes_the_strings_of_the_file() {
        for (text, judge) in [
            ("none", RelevanceJudge::None),
            ("auto", RelevanceJudge::Auto),
            ("e5", RelevanceJudge::Endpoint("e5".into())),
        ] {
            assert_eq!(RelevanceJudge::try_from(text.to_string()).unwrap(), judge);
            assert_eq!(String::from(judge), text);
        }
        assert!(RelevanceJudge::try_from(" ".to_string()).is_err());
    }
}
