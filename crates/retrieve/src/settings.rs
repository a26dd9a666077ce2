//! The `[index]`, `[retrieve]` and `[stats]` sections of `mtr.toml`: the settings of `mtr
//! index`, `mtr retrieve` and `mtr stats --realism`, each declared once here with its default,
//! so the command's flags, the file, the environment (`MTR_INDEX__THREADS`, ...) and `mtr
//! config show` read the same declaration. A value that does not parse (a retriever spec, a
//! language) is refused when the settings load, naming the key.

use serde::{Deserialize, Serialize};

use crate::analyzer::Language;
use crate::fusion::RetrieverSpec;

/// `[index]`: how `mtr index` builds a corpus's index folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexSettings {
    /// Analyzer language: en, zh or auto (the benchmark's, else detected from the corpus).
    pub language: Language,
    /// Store passage texts in the index (without them `passage(id)` returns empty texts).
    pub store_text: bool,
    /// Indexing threads (0: one per CPU, at most 8).
    pub threads: usize,
    /// Indexing memory budget in MiB.
    pub memory_mb: usize,
    /// Also embed every passage with the `embedder` role.
    pub dense: bool,
    /// Texts per embedding request.
    pub batch_size: usize,
    /// Embedding requests in flight.
    pub concurrency: usize,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            language: Language::Auto,
            store_text: true,
            threads: 0,
            memory_mb: 512,
            dense: false,
            batch_size: 32,
            concurrency: 1,
        }
    }
}

/// `[retrieve]`: what `mtr retrieve` ranks with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrieveSettings {
    /// The retriever: bm25, dense, rrf(bm25,dense), weighted(bm25=0.3,dense=0.7), ...
    pub retriever: RetrieverSpec,
    /// Passages per query.
    pub k: usize,
    /// Query-side analyzer language: en, zh or auto (the index's); must match the index.
    pub language: Language,
}

impl Default for RetrieveSettings {
    fn default() -> Self {
        RetrieveSettings {
            retriever: RetrieverSpec::Bm25,
            k: 100,
            language: Language::Auto,
        }
    }
}

/// `[stats]`: the intervals of `mtr stats --realism`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatsSettings {
    /// Bootstrap resamples of the realism intervals (over dialogues).
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
}

impl Default for StatsSettings {
    fn default() -> Self {
        StatsSettings {
            resamples: 1000,
            seed: 42,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_through_toml() {
        let t = toml::to_string(&RetrieveSettings::default()).unwrap();
        assert!(t.contains("retriever = \"bm25\""), "{t}");
        assert_eq!(
            toml::from_str::<RetrieveSettings>(&t).unwrap(),
            RetrieveSettings::default()
        );
        let t = toml::to_string(&IndexSettings::default()).unwrap();
        assert_eq!(
            toml::from_str::<IndexSettings>(&t).unwrap(),
            IndexSettings::default()
        );
    }

    #[test]
    fn a_bad_retriever_or_language_is_refused_when_the_settings_load() {
        let e = toml::from_str::<RetrieveSettings>("retriever = \"rrf(bm25\"").unwrap_err();
        assert!(e.to_string().contains("retriever"), "{e}");
        let e = toml::from_str::<IndexSettings>("language = \"klingon\"").unwrap_err();
        assert!(e.to_string().contains("language"), "{e}");
        let e = toml::from_str::<StatsSettings>("resample = 10").unwrap_err();
        assert!(e.to_string().contains("resample"), "{e}");
    }
}
