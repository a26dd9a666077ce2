//! All synthesis parameters in one serialisable struct (the `[synth]` config section, with
//! command-line flags applied on top). Its canonical JSON is hashed into every artefact's
//! fingerprint and recorded in `benchmark.toml`, so a benchmark says exactly how it was made.

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkOptions;
use crate::cluster::TopicOptions;
use crate::curate::CurationOptions;
use crate::error::{Error, Result};
use crate::input::CorpusFields;
use crate::paths::PathOptions;

mod choices;

pub use choices::{RelevanceJudge, UniquenessQuery};

/// Where chunk vectors (for topic paths, coarse topics and dense uniqueness retrieval) come
/// from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum VectorSource {
    /// The embedder role when one is configured (the bundled local embedder only up to
    /// 2,000 chunks: it is slow on a CPU), else lexical.
    #[default]
    Auto,
    /// The LLM layer's embedder role (cached per text); also enables dense retrieval.
    Embedder,
    /// Hashed TF-IDF vectors computed locally (no model; BM25-only uniqueness retrieval).
    Lexical,
}

/// `--vectors auto|embedder|lexical`, by the names of the config file.
impl std::str::FromStr for VectorSource {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::deserialize(
            serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s.trim()),
        )
        .map_err(|_| format!("unknown vector source `{s}`: use auto, embedder or lexical"))
    }
}

/// `[synth]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SynthConfig {
    /// Dialogues to synthesize.
    pub dialogues: usize,
    /// Turns per dialogue.
    pub turns: usize,
    /// Seed of every random choice (`mtr_core::rng` streams).
    pub seed: u64,
    /// Read a seeded uniform sample of this many documents of the whole input (reservoir
    /// sampling with `seed`, before curation); 0 = all.
    pub max_documents: usize,
    /// The fields of a corpus record (or Parquet columns) holding a document's id, title and
    /// text (`corpus_fields = { id = "doc_id", text = "body" }`, `--corpus-fields`); unset: the
    /// usual names. Left out of the canonical JSON when unset.
    #[serde(skip_serializing_if = "CorpusFields::is_empty")]
    pub corpus_fields: CorpusFields,
    /// Leave malformed corpus records out (counted in the report) instead of failing
    /// (`--skip-bad`). Left out of the canonical JSON when false.
    #[serde(skip_serializing_if = "is_false")]
    pub skip_bad: bool,
    /// Where chunk vectors come from.
    pub vectors: VectorSource,
    /// `[synth.curation]`: what is kept of the corpus.
    pub curation: CurationOptions,
    /// `[synth.chunking]`: chunk sizes in tokens.
    pub chunking: ChunkOptions,
    /// `[synth.paths]`: the topic paths dialogues walk.
    pub paths: PathOptions,
    /// `[synth.topics]`: the coarse topics a switch moves between.
    pub topics: TopicOptions,
    /// `[synth.generation]`: the agents and the verifier.
    pub generation: GenerationOptions,
    /// `[synth.style]`: the user agent's and the humanizer's style profile (left out of the
    /// hash when unset, so a `concise` synthesis keeps its fingerprints).
    #[serde(skip_serializing_if = "crate::style::StyleOptions::is_default")]
    pub style: crate::style::StyleOptions,
    /// `[synth.mix]`: the shares of turn kinds asked for (left out of the hash at the
    /// defaults, MTRAG's shares).
    #[serde(skip_serializing_if = "crate::mix::MixOptions::is_default")]
    pub mix: crate::mix::MixOptions,
    /// `[synth.personas]`: who asks (a persona file, or `topics`). Its `file` is recorded
    /// and hashed by its file name ([`SynthConfig::recorded`]); its content by its hash.
    pub personas: crate::voices::PersonaOptions,
    /// `[synth.seed_questions]`: real questions to imitate, never copy.
    pub seed_questions: crate::voices::SeedOptions,
    /// Benchmark name in the manifest (default: the output folder's name).
    pub name: Option<String>,
    /// License recorded in the manifest (default: "see source corpus").
    pub license: Option<String>,
    /// An endpoint that failed every call of the run, or more than this share of them
    /// (provider errors and answers unparsable after retries), makes `mtr synth` exit with 1
    /// naming it and its first error.
    pub max_failed_share: f64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        Self {
            dialogues: 100,
            turns: 8,
            seed: 0,
            max_documents: 0,
            corpus_fields: CorpusFields::default(),
            skip_bad: false,
            vectors: VectorSource::Auto,
            curation: CurationOptions::default(),
            chunking: ChunkOptions::default(),
            paths: PathOptions::default(),
            topics: TopicOptions::default(),
            generation: GenerationOptions::default(),
            style: crate::style::StyleOptions::default(),
            mix: crate::mix::MixOptions::default(),
            personas: crate::voices::PersonaOptions::default(),
            seed_questions: crate::voices::SeedOptions::default(),
            name: None,
            license: None,
            max_failed_share: 0.2,
        }
    }
}

/// `[synth.generation]`: the agents and the verifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerationOptions {
    /// Share of dialogues with a topic switch (exactly `round(share * dialogues)` of them).
    pub switch_share: f64,
    /// Chunks of its path shown to the user agent per turn.
    pub offer: usize,
    /// Question attempts per turn (user agent + humanizer + answerability + uniqueness).
    pub max_attempts: usize,
    /// Answer attempts per accepted question (answerer + faithfulness).
    pub answer_attempts: usize,
    /// Whether the verifier's chat judge rates each question's answerability from its
    /// evidence (and quotes the answering sentence). `false` leaves that check to the
    /// relevance gate's floor (`[synth.generation.relevance] min_gold`), which must then be on:
    /// for a judge that rates every question 5 and fails its quotes more often than the
    /// questions fail (the embedded default's half-billion-parameter model, docs/main-job.md),
    /// the call costs a fifth of a synthesis and rejects turns at random. Left out of the
    /// canonical JSON when true, so configs from before it keep their fingerprint.
    #[serde(skip_serializing_if = "is_true")]
    pub answerability_judge: bool,
    /// Whether the user agent writes a standalone rewrite of each question (the turn's
    /// `rewrite`, and the relevance judge's query). `false` asks for the question alone: the
    /// embedded default's half-billion-parameter model wrote Chinese rewrites that failed
    /// their guards in 8 of 9 accepted turns (a passage sentence cut by the question mark,
    /// docs/main-job.md), and they were about two fifths of the user agent's completion
    /// tokens. Left out of the canonical JSON when true, so configs from before it keep their
    /// fingerprint.
    #[serde(skip_serializing_if = "is_true")]
    pub rewrites: bool,
    /// Keep a question when answerability >= this (1-5).
    pub min_answerability: i64,
    /// Keep an answer when faithfulness >= this (1-5).
    pub min_faithfulness: i64,
    /// `[synth.generation.uniqueness]`.
    pub uniqueness: UniquenessOptions,
    /// The relevance judge's gate on a question's gold passage (`[synth.generation.relevance]`).
    pub relevance: RelevanceGateOptions,
    /// `[synth.generation.humanizer]`.
    pub humanizer: HumanizerOptions,
    /// Judge endpoint of the verifier (default: the first of `[llm.roles] judges`).
    pub verifier: Option<String>,
    /// Earlier turns shown in full to the agents (older ones are dropped from prompts).
    pub history_turns: usize,
    /// Dialogues generated concurrently (0: four times the generator role's capacity).
    pub concurrency: usize,
    /// `max_tokens` for the user agent, humanizer and answerer calls.
    pub max_tokens: u32,
    /// Rejects a turn whose question, rewrite or answer nearly repeats an earlier turn.
    pub repetition: crate::repetition::RepetitionOptions,
}

impl Default for GenerationOptions {
    fn default() -> Self {
        Self {
            switch_share: 0.5,
            offer: 3,
            max_attempts: 3,
            answer_attempts: 2,
            answerability_judge: true,
            rewrites: true,
            min_answerability: 4,
            min_faithfulness: 4,
            uniqueness: UniquenessOptions::default(),
            relevance: RelevanceGateOptions::default(),
            humanizer: HumanizerOptions::default(),
            verifier: None,
            history_turns: 6,
            concurrency: 0,
            max_tokens: 400,
            repetition: crate::repetition::RepetitionOptions::default(),
        }
    }
}

/// `[synth.generation.uniqueness]`: the corpus-wide uniqueness check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UniquenessOptions {
    pub enabled: bool,
    /// Conversational query formulation (see mtr-retrieve: `full:512`, `all`, `last`,
    /// `window:N`).
    pub query: UniquenessQuery,
    /// Hits retrieved per retriever from the whole corpus.
    pub retrieve_k: usize,
    /// Best fused hits (other than the evidence) shown to the judge.
    pub judge_candidates: usize,
    /// At most this many other chunks may answer (grade 1 or 2); they become extra graded
    /// golds (grade 2: answers as well as the evidence, 1: partly). More than this, or more
    /// than `max_full` answering fully, and the question is regenerated as too generic.
    pub max_extra_golds: usize,
    pub max_full: usize,
}

impl Default for UniquenessOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            query: UniquenessQuery::default(),
            retrieve_k: 20,
            judge_candidates: 5,
            max_extra_golds: 2,
            max_full: 2,
        }
    }
}

/// `[synth.generation.relevance]`: the verifier's relevance gate. A relevance judge (a
/// reranker or embedding endpoint, `[llm.endpoints.rerank]`) scores the question against its
/// gold passage and its hard negatives in one call; a gold scored below `min_gold` is not
/// answerable from it, and a hard negative scored above the gold by more than `margin` means
/// the gold is not the question's best passage. Scores are the judge's, normalised to 0-1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelevanceGateOptions {
    /// `auto` (the first of `[llm.roles] judges` that is a relevance judge, else the first
    /// configured endpoint that is one, else no gate), `none` (no gate), or an endpoint name.
    /// Default `none`: the gate is opt-in until `benchmarks/local/verifier_signal.py` has
    /// measured the embedded e5 judge on synthesized turns (an unmeasured gate could drop
    /// most of a small run's turns).
    pub judge: RelevanceJudge,
    /// Reject (`uniqueness/gold_not_best`) when a hard negative scores above the gold by more
    /// than this.
    pub margin: f64,
    /// Reject (`answerability/relevance_below_floor`) when the gold scores below this.
    pub min_gold: f64,
}

impl Default for RelevanceGateOptions {
    fn default() -> Self {
        Self {
            judge: RelevanceJudge::None,
            margin: 0.0,
            // where the embedded e5 judge's default scale (cosine 0.72-0.90) puts a passage
            // that answers another question (mean 0.26, docs/audit.md) and its own gold
            // (mean 0.76): a passage of an unrelated document falls below it
            min_gold: 0.25,
        }
    }
}

/// `[synth.generation.humanizer]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HumanizerOptions {
    pub enabled: bool,
    /// Rewrites shorter than `min_ratio` or longer than `max_ratio` times the original (in
    /// characters) are rejected and the original is kept.
    pub min_ratio: f64,
    pub max_ratio: f64,
    /// Phrases (case-insensitive) that betray a model talking about the task.
    pub meta_phrases: Vec<String>,
}

impl Default for HumanizerOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            min_ratio: 0.2,
            max_ratio: 1.15,
            meta_phrases: [
                "rewrite",
                "rewritten",
                "here is",
                "here's",
                "sure,",
                "as an ai",
                "question:",
                "the passage",
                "the text",
                "the document",
                "the conversation",
                "改写",
                "以下是",
                "问题：",
                "原问题",
                "这段文字",
                "文章中",
                "对话中",
                // the user agent's prompt calls the passages 资料 (the word alone is no
                // meta phrase: a handbook speaks of documents to keep)
                "某段资料",
                "这段资料",
                "该段资料",
                "资料中",
                "资料里",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Why `answerability_judge = false` needs the relevance gate.
pub(crate) const ANSWERABILITY_NEEDS_GATE: &str = "false needs the relevance gate \
    ([synth.generation.relevance] judge = \"auto\" or a relevance endpoint): without either, \
    nothing checks that a question's gold passage answers it";

impl SynthConfig {
    /// The settings as records and hashes keep them: the persona and seed files by their file
    /// name (never a local path; their contents enter the fingerprint by hash).
    pub(crate) fn recorded(&self) -> Self {
        let mut c = self.clone();
        if crate::voices::PersonaSource::of(&c.personas.file)
            != crate::voices::PersonaSource::Topics
        {
            c.personas.file = crate::voices::file_name(c.personas.file.trim());
        }
        c.seed_questions.file = crate::voices::file_name(c.seed_questions.file.trim());
        c
    }

    /// The curation documents go through: `[synth.curation]`; with `[synth.chunking] keep`
    /// (a team's own chunks kept as passages) only its language filter, so that no chunk of
    /// the team's index is cut (boilerplate sections), dropped for its length or dropped as a
    /// near-duplicate of an overlapping one, and every id a run of its retriever returns is in
    /// the benchmark.
    pub fn curation_options(&self) -> CurationOptions {
        if !self.chunking.keep {
            return self.curation.clone();
        }
        CurationOptions {
            strip_sections: Vec::new(),
            min_words: 0,
            max_words: usize::MAX,
            dedup: false,
            ..self.curation.clone()
        }
    }

    /// Checks every parameter; errors name the parameter.
    pub fn validate(&self) -> Result<()> {
        if self.dialogues == 0 {
            return Err(Error::param("dialogues", "must be at least 1"));
        }
        if self.turns == 0 {
            return Err(Error::param("turns", "must be at least 1"));
        }
        self.curation
            .minhash
            .validate()
            .map_err(|m| Error::param("curation.minhash", m))?;
        if self.curation.min_words > self.curation.max_words {
            return Err(Error::param("curation.min_words", "is above max_words"));
        }
        self.chunking
            .validate()
            .map_err(|m| Error::param("chunking", m))?;
        if self.paths.size == 0 || self.paths.k == 0 {
            return Err(Error::param("paths", "size and k must be at least 1"));
        }
        let g = &self.generation;
        if !(0.0..=1.0).contains(&g.switch_share) {
            return Err(Error::param(
                "generation.switch_share",
                format!("{} is not in [0, 1]", g.switch_share),
            ));
        }
        if g.offer == 0 || g.max_attempts == 0 || g.answer_attempts == 0 {
            return Err(Error::param(
                "generation",
                "offer, max_attempts and answer_attempts must be at least 1",
            ));
        }
        for (name, v) in [
            ("min_answerability", g.min_answerability),
            ("min_faithfulness", g.min_faithfulness),
        ] {
            if !(1..=5).contains(&v) {
                return Err(Error::param(
                    format!("generation.{name}"),
                    format!("{v} is not in 1..=5"),
                ));
            }
        }
        let h = &g.humanizer;
        if !(h.min_ratio >= 0.0 && h.min_ratio <= h.max_ratio) {
            return Err(Error::param(
                "generation.humanizer",
                "need 0 <= min_ratio <= max_ratio",
            ));
        }
        g.repetition
            .validate()
            .map_err(|m| Error::param("generation.repetition", m))?;
        self.personas.validate()?;
        self.seed_questions.validate()?;
        let r = &g.relevance;
        if !((0.0..=1.0).contains(&r.margin) && (0.0..=1.0).contains(&r.min_gold)) {
            return Err(Error::param(
                "generation.relevance",
                "margin and min_gold must lie in 0-1",
            ));
        }
        if !g.answerability_judge && r.judge == RelevanceJudge::None {
            return Err(Error::param(
                "generation.answerability_judge",
                ANSWERABILITY_NEEDS_GATE,
            ));
        }
        self.mix
            .validate()
            .map_err(|(key, message)| Error::param(key, message))?;
        if g.uniqueness.enabled && g.uniqueness.judge_candidates == 0 {
            return Err(Error::param(
                "generation.uniqueness.judge_candidates",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persona_and_seed_files_are_recorded_by_name_never_by_path() {
        let mut c = SynthConfig::default();
        c.personas.file = "/home/me/voices/p.toml".into();
        c.seed_questions.file = "/srv/logs/q.txt".into();
        let r = c.recorded();
        assert_eq!(r.personas.file, "p.toml");
        assert_eq!(r.seed_questions.file, "q.txt");
        c.personas.file = "topics".into();
        assert_eq!(c.recorded().personas.file, "topics");
    }

    #[test]
    fn defaults_validate_and_roundtrip_through_toml() {
        let c = SynthConfig::default();
        c.validate().unwrap();
        let text = toml::to_string(&c).unwrap();
        let back: SynthConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
        let partial: SynthConfig =
            toml::from_str("turns = 3\n[generation]\nswitch_share = 0.25\n").unwrap();
        assert_eq!(
            (
                partial.turns,
                partial.generation.switch_share,
                partial.dialogues
            ),
            (3, 0.25, 100)
        );
        assert!(toml::from_str::<SynthConfig>("bogus = 1").is_err());
        let bad = SynthConfig {
            generation: GenerationOptions {
                switch_share: 1.5,
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("switch_share")
        );
    }

    #[test]
    fn vector_sources_parse_by_their_config_names() {
        assert_eq!("lexical".parse(), Ok(VectorSource::Lexical));
        assert_eq!("embedder".parse(), Ok(VectorSource::Embedder));
        assert_eq!("auto".parse(), Ok(VectorSource::Auto));
        assert!(
            "dense"
                .parse::<VectorSource>()
                .unwrap_err()
                .contains("dense")
        );
    }

    #[test]
    fn rewrites_default_on_and_keep_old_fingerprints() {
        let text = serde_json::to_string(&GenerationOptions::default()).unwrap();
        assert!(!text.contains("rewrites"), "{text}");
        let off: SynthConfig = toml::from_str("[generation]\nrewrites = false\n").unwrap();
        assert!(!off.generation.rewrites);
        assert!(
            serde_json::to_string(&off)
                .unwrap()
                .contains("\"rewrites\":false")
        );
    }

    #[test]
    fn answerability_judge_off_needs_the_relevance_gate_and_keeps_old_fingerprints() {
        // the default is left out of the canonical form: configs from before keep their hash
        let text = serde_json::to_string(&GenerationOptions::default()).unwrap();
        assert!(!text.contains("answerability_judge"), "{text}");
        let off: SynthConfig =
            toml::from_str("[generation]\nanswerability_judge = false\n").unwrap();
        let e = off.validate().unwrap_err().to_string();
        assert!(
            e.contains("generation.answerability_judge") && e.contains("relevance gate"),
            "{e}"
        );
        let gated: SynthConfig = toml::from_str(
            "[generation]\nanswerability_judge = false\n[generation.relevance]\njudge = \"auto\"\n",
        )
        .unwrap();
        gated.validate().unwrap();
        assert!(
            serde_json::to_string(&gated)
                .unwrap()
                .contains("\"answerability_judge\":false")
        );
    }
}
