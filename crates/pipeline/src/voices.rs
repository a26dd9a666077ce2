//! Who asks, and in what voice: the personas a dialogue's user is played as (`[synth.personas]`,
//! `--personas FILE|topics`) and the real seed questions whose intent and style the user agent
//! imitates, never copies (`[synth.seed_questions]`, `--seed-questions FILE`). Peers (Ragas'
//! personas and query distributions) shape synthetic users the same way; a synthesis without
//! either file asks as before.
//!
//! Everything here is seeded: a dialogue's persona and an attempt's shown seeds are drawn from
//! the synthesis seed, the dialogue, the layer and the attempt, so a rerun draws the same and
//! resumes from the LLM cache. The files enter the fingerprint by their content hash and are
//! recorded by file name only (never an absolute path). `personas.rs` reads a persona file,
//! `seeds.rs` a seed file and holds the near-copy index, and `voice_files.rs` is the line
//! reader they share; the generator's personas of the corpus's topics are written by the
//! agents (`agents/persona.rs`).

mod personas;
mod seeds;
mod voice_files;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use mtr_core::rng;
use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub use personas::Persona;
pub(crate) use personas::read_personas;
pub(crate) use seeds::{SeedIndex, read_seeds};

/// `[synth.personas]`: who asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PersonaOptions {
    /// A persona file (JSON lines, TOML `[[persona]]` tables, or `NAME: DESCRIPTION` lines;
    /// docs/synthesis-realism.md), `topics` (the generator writes one persona per coarse topic
    /// of the corpus), or empty: no persona. Recorded and hashed by its file name; the file's
    /// content enters the fingerprint by its hash.
    pub file: String,
    /// With `topics`: personas for at most this many coarse topics (the largest first); a
    /// dialogue of another topic asks without a persona.
    pub max_topics: usize,
}

impl Default for PersonaOptions {
    fn default() -> Self {
        Self {
            file: String::new(),
            max_topics: 16,
        }
    }
}

/// `[synth.seed_questions]`: real questions to imitate, never copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SeedOptions {
    /// A seed question file: plain text (one a line, `#` comments), JSON lines with a
    /// `question`, `query` or `text` field (or MTRAG conversations' `messages`), or TSV
    /// `id<TAB>text` (BEIR/TREC queries); empty: none.
    pub file: String,
    /// Seed questions shown to the user agent per attempt.
    pub shown: usize,
    /// A question (or its rewrite) whose shingle Jaccard similarity with a seed is at least
    /// this is rejected as a near copy (`user/near_copy_seed`). 0.5: of 438 real MTRAG
    /// questions (clapnq and govt), the most similar question of another conversation reached
    /// at most 0.4 (99th percentile 0.4), apart from one question asked word for word twice.
    pub near_copy_threshold: f64,
    /// Words (CJK: characters) per shingle of the near-copy check.
    pub shingle: usize,
}

impl Default for SeedOptions {
    fn default() -> Self {
        Self {
            file: String::new(),
            shown: 3,
            near_copy_threshold: 0.5,
            shingle: 2,
        }
    }
}

/// Where a dialogue's personas come from, parsed from `[synth.personas] file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonaSource {
    /// No persona.
    None,
    /// The generator writes one per coarse topic.
    Topics,
    /// A persona file.
    File(String),
}

impl PersonaSource {
    /// The source `file` names.
    pub fn of(file: &str) -> Self {
        match file.trim() {
            "" => Self::None,
            "topics" => Self::Topics,
            f => Self::File(f.to_string()),
        }
    }
}

impl PersonaOptions {
    /// Checks the settings; the message names what is wrong.
    pub(crate) fn validate(&self) -> Result<()> {
        if PersonaSource::of(&self.file) == PersonaSource::Topics && self.max_topics == 0 {
            return Err(Error::param(
                "personas.max_topics",
                "must be at least 1 with file = \"topics\"",
            ));
        }
        Ok(())
    }
}

impl SeedOptions {
    /// Checks the settings; the message names what is wrong.
    pub(crate) fn validate(&self) -> Result<()> {
        let t = self.near_copy_threshold;
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::param(
                "seed_questions.near_copy_threshold",
                format!("{t} is not in (0, 1]"),
            ));
        }
        if self.shingle == 0 {
            return Err(Error::param("seed_questions.shingle", "must be at least 1"));
        }
        Ok(())
    }
}

/// The file name of a setting's path (what records and hashes keep of it).
pub(crate) fn file_name(file: &str) -> String {
    Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned())
}

/// The personas of a synthesis, as a dialogue draws them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum PersonaSet {
    /// No persona.
    #[default]
    None,
    /// From a file: each dialogue draws one (seeded).
    Drawn(Vec<Persona>),
    /// Written per coarse topic: a dialogue takes its start topic's (None: that topic has
    /// none, beyond `max_topics` or its call failed).
    ByTopic(Vec<Option<Persona>>),
}

/// The salts of the draws (xor-ed into the dialogue's key).
const PERSONA_SALT: u64 = 0x7065_7273_6f6e_6173;
const SEEDS_SALT: u64 = 0x7365_6564_7173_686f;

/// Personas and seed questions, loaded once per job.
#[derive(Debug, Default)]
pub(crate) struct Voices {
    pub personas: PersonaSet,
    /// The persona file's name and content hash (`topics`: the topics' persona hash).
    pub persona_source: Option<(String, String)>,
    pub seeds: Option<SeedIndex>,
    /// The seed file's name and content hash.
    pub seed_source: Option<(String, String)>,
    /// Seeds shown per attempt.
    pub shown: usize,
    /// Topics whose persona call failed or could not be parsed (`topics`).
    pub topic_failures: usize,
}

/// What the report needs of one dialogue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DialogueOutcome {
    /// The dialogue's number (its draws' key).
    pub index: usize,
    /// The coarse topic of its start path.
    pub topic: usize,
    /// Accepted turns.
    pub turns: usize,
    /// Attempts rejected as near copies of a seed.
    pub near_copies: u64,
}

/// A dialogue's key for its draws.
fn dialogue_key(seed: u64, dialogue: usize) -> u64 {
    seed ^ (dialogue as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Voices {
    /// The personas and seeds `cfg` names, read from their files (a persona file or `topics`
    /// personas; the latter are added by [`write_topic_personas`]).
    pub(crate) fn load(personas: &PersonaOptions, seeds: &SeedOptions) -> Result<Self> {
        let mut v = Voices {
            shown: seeds.shown,
            ..Default::default()
        };
        if let PersonaSource::File(f) = PersonaSource::of(&personas.file) {
            let (list, hash) = read_personas(Path::new(&f))?;
            v.personas = PersonaSet::Drawn(list);
            v.persona_source = Some((file_name(&f), hash));
        }
        if !seeds.file.trim().is_empty() {
            let f = seeds.file.trim();
            let (list, hash) = read_seeds(Path::new(f))?;
            v.seeds = Some(SeedIndex::new(
                list,
                seeds.shingle,
                seeds.near_copy_threshold,
            ));
            v.seed_source = Some((file_name(f), hash));
        }
        Ok(v)
    }

    /// The persona of dialogue `dialogue` (whose start path is in coarse topic `topic`).
    pub(crate) fn persona(&self, seed: u64, dialogue: usize, topic: usize) -> Option<&Persona> {
        match &self.personas {
            PersonaSet::None => None,
            PersonaSet::Drawn(list) if list.is_empty() => None,
            PersonaSet::Drawn(list) => {
                let mut r = rng::stream(dialogue_key(seed, dialogue), PERSONA_SALT);
                list.get(r.random_range(0..list.len()))
            }
            PersonaSet::ByTopic(list) => list.get(topic).and_then(Option::as_ref),
        }
    }

    /// The seed questions shown on attempt `attempt` of layer `layer` of dialogue `dialogue`:
    /// `shown` distinct seeds, a new draw per attempt.
    pub(crate) fn examples(
        &self,
        seed: u64,
        dialogue: usize,
        layer: usize,
        attempt: usize,
    ) -> Vec<String> {
        let Some(index) = &self.seeds else {
            return Vec::new();
        };
        let n = index.len();
        let k = self.shown.min(n);
        let key = dialogue_key(seed, dialogue)
            ^ (layer as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            ^ (attempt as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
        let mut r = rng::stream(key, SEEDS_SALT);
        rand::seq::index::sample(&mut r, n, k)
            .into_iter()
            .filter_map(|i| index.seed(i).map(str::to_string))
            .collect()
    }

    /// The most similar seed of `text` when it is a near copy: `(seed number, similarity)`.
    pub(crate) fn near_copy(&self, text: &str) -> Option<(usize, f64)> {
        self.seeds.as_ref().and_then(|s| s.near_copy(text))
    }

    /// True when neither personas nor seed questions are on (fingerprints stay as before).
    pub(crate) fn is_empty(&self) -> bool {
        self.persona_source.is_none() && self.seed_source.is_none()
    }

    /// The personas the generator wrote per coarse topic (`topics`), `failures` of them
    /// missing; `prompt_hash` (of `synth/persona`) stands for them in the fingerprint.
    pub(crate) fn set_topic_personas(
        &mut self,
        set: PersonaSet,
        prompt_hash: String,
        failures: usize,
    ) {
        self.personas = set;
        self.persona_source = Some(("topics".into(), prompt_hash));
        self.topic_failures = failures;
    }

    /// What `synth_report.md` says of the voices of the `dialogues`.
    pub(crate) fn report(
        &self,
        seed: u64,
        dialogues: impl IntoIterator<Item = DialogueOutcome>,
    ) -> VoicesReport {
        let mut r = VoicesReport {
            personas_from: self
                .persona_source
                .as_ref()
                .map(|(f, h)| format!("{f} ({})", short(h))),
            seeds_from: self
                .seed_source
                .as_ref()
                .zip(self.seeds.as_ref())
                .map(|((f, h), s)| (format!("{f} ({})", short(h)), s.len())),
            topic_persona_failures: self.topic_failures,
            ..Default::default()
        };
        for d in dialogues {
            r.near_copies += d.near_copies;
            if d.turns == 0 {
                continue;
            }
            match self.persona(seed, d.index, d.topic) {
                Some(p) => *r.personas.entry(p.name.clone()).or_default() += 1,
                None => r.without_persona += 1,
            }
        }
        r
    }

    /// What the fingerprints hold of the voices: the files' names and content hashes.
    pub(crate) fn fingerprint(&self) -> serde_json::Value {
        serde_json::json!({
            "personas": self.persona_source,
            "seed_questions": self.seed_source,
        })
    }
}

/// The first 12 hex digits of a hash, as the report shows it.
fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// What `synth_report.md` says of the voices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VoicesReport {
    /// Persona source (`file (hash)`, `topics`), when any.
    pub personas_from: Option<String>,
    /// Persona name -> dialogues (with at least one turn) asked in it.
    pub personas: BTreeMap<String, usize>,
    /// Dialogues asked without a persona while personas were on.
    pub without_persona: usize,
    /// Topics whose persona call failed or could not be parsed (`topics`).
    pub topic_persona_failures: usize,
    /// Seed file (`file (hash)`) and its number of questions, when any.
    pub seeds_from: Option<(String, usize)>,
    /// Attempts rejected as near copies of a seed question.
    pub near_copies: u64,
}

/// Renders the voices section of `synth_report.md` (nothing without personas or seeds).
pub(crate) fn render(o: &mut String, r: &VoicesReport) {
    if r.personas_from.is_none() && r.seeds_from.is_none() {
        return;
    }
    let _ = writeln!(o, "## Personas and seed questions\n");
    if let Some(from) = &r.personas_from {
        let _ = writeln!(o, "Personas from {from}.\n");
        let _ = writeln!(o, "| persona | dialogues |\n|---|---:|");
        for (name, n) in &r.personas {
            let _ = writeln!(o, "| {} | {n} |", name.replace('|', "/"));
        }
        let _ = writeln!(o, "| (none) | {} |", r.without_persona);
        let _ = writeln!(o);
        if r.topic_persona_failures > 0 {
            let _ = writeln!(
                o,
                "Topics whose persona call failed or could not be parsed (their dialogues ask without a persona): {}\n",
                r.topic_persona_failures
            );
        }
    }
    if let Some((from, n)) = &r.seeds_from {
        let _ = writeln!(
            o,
            "Seed questions: {n} from {from}, shown as examples of intent and style, never to copy.\n"
        );
        let _ = writeln!(
            o,
            "Attempts rejected as near copies of a seed question: {}\n",
            r.near_copies
        );
    }
}

#[cfg(test)]
mod voices_tests;
