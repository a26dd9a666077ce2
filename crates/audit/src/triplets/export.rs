//! The export of triplets: options, the report, and the walk over turns that mines,
//! filters and writes them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mtr_core::{Benchmark, Passage};
use mtr_retrieve::{QueryFormulation, Retriever};
use serde::Serialize;

use super::audited::AuditExclusions;
use super::mine::{self, Filter, GoldTurn, Removed};
use super::split::SplitSpec;
use super::write::{SplitWriters, TripletForm, TurnTriplets};
use crate::error::Result;

/// Word 5-shingle overlap with a positive at or above which a candidate is its near-duplicate.
pub const NEAR_DUPLICATE: f64 = 0.5;

/// How the triplets are made.
#[derive(Debug, Clone)]
pub struct TripletOptions {
    /// Hard negatives per turn.
    pub negatives: usize,
    /// The query text of each turn.
    pub query: QueryFormulation,
    /// FlagEmbedding lines or flat pairs.
    pub form: TripletForm,
    /// Named shares of the dialogues, one file each.
    pub splits: SplitSpec,
    /// Seed of the split of the dialogues.
    pub seed: u64,
    /// See [`NEAR_DUPLICATE`].
    pub near_duplicate: f64,
}

impl Default for TripletOptions {
    fn default() -> Self {
        Self {
            negatives: 7,
            query: QueryFormulation::Full { budget: 512 },
            form: TripletForm::Lists,
            splits: SplitSpec::default(),
            seed: 0,
            near_duplicate: NEAR_DUPLICATE,
        }
    }
}

/// One split's file.
#[derive(Debug, Clone, Serialize)]
pub struct SplitFile {
    /// The split's name (`train`, `dev`, ...).
    pub split: String,
    /// The file it was written to.
    pub path: PathBuf,
    /// Dialogues in the split.
    pub dialogues: usize,
    /// Turns with a gold in the split.
    pub turns: usize,
    /// Lines written.
    pub lines: u64,
}

/// What an export of triplets wrote and what it left out.
#[derive(Debug, Clone, Serialize)]
pub struct TripletReport {
    /// Turns written: with a relevant gold and at least one negative (one line each, or
    /// their pairs with `--flat`).
    pub turns: usize,
    /// Turns without a relevant gold: nothing to train on.
    pub turns_without_gold: usize,
    /// Turns with a gold for which mining found no negative (every candidate a gold or
    /// filtered out, or none retrieved): left out, since FlagEmbedding cannot sample from an
    /// empty `neg` and the flat form has no pair to write.
    pub turns_without_negatives: usize,
    /// Negatives written, over every turn.
    pub negatives: usize,
    /// Turns written with fewer negatives than asked (the filters took too many candidates,
    /// or the retrievers found too few).
    pub short_turns: usize,
    /// Candidates the filters removed while filling the negatives.
    pub removed: Removed,
    /// (turn, passage) pairs the audit rules out, when `--audit` was given.
    pub audit_exclusions: Option<usize>,
    /// The retrievers the negatives were mined with.
    pub retrievers: Vec<String>,
    /// The query formulation, by name.
    pub query: String,
    /// FlagEmbedding lines or flat pairs.
    pub form: TripletForm,
    /// Seed of the split.
    pub seed: u64,
    /// One entry per split file.
    pub files: Vec<SplitFile>,
}

/// Candidates searched per turn: enough to refill the negatives after the filters.
fn depth(negatives: usize) -> usize {
    negatives * 3 + 20
}

/// Mines, filters and writes the triplets of `bench` to `out` (one file per split).
pub async fn export(
    bench: &Benchmark,
    retrievers: &[Arc<dyn Retriever>],
    audit: Option<&AuditExclusions>,
    out: &Path,
    opts: &TripletOptions,
    progress: &dyn mtr_core::progress::Progress,
) -> Result<TripletReport> {
    let turns = mine::gold_turns(bench, &opts.query)?;
    let all_turns: usize = bench.dialogues.iter().map(|d| d.turns.len()).sum();
    let candidates = mine::candidates(&turns, retrievers, depth(opts.negatives), progress).await?;
    let texts = passages(bench, &turns, &candidates)?;
    let filter = Filter {
        audit,
        near_duplicate: opts.near_duplicate,
        wanted: opts.negatives,
    };
    let assigned = opts
        .splits
        .assign(bench.dialogues.iter().map(|d| d.id.as_str()), opts.seed);
    let mut writers =
        SplitWriters::create(out, opts.splits.names(), opts.splits.is_single(), opts.form)?;
    let mut removed = Removed::default();
    let (mut negatives, mut short_turns, mut written) = (0, 0, 0);
    let mut dialogues_per_split: HashMap<&str, HashSet<usize>> = HashMap::new();
    for (t, cands) in turns.iter().zip(&candidates) {
        let d = &bench.dialogues[t.dialogue];
        let turn = &d.turns[t.turn];
        let positives: Vec<&Passage> = t.positives.iter().filter_map(|id| texts.get(id)).collect();
        let neg = filter.negatives(&turn.id, cands, &positives, &texts, &mut removed);
        if neg.is_empty() {
            continue;
        }
        written += 1;
        negatives += neg.len();
        short_turns += usize::from(neg.len() < opts.negatives);
        let split = assigned.get(&d.id).map_or("train", String::as_str);
        dialogues_per_split
            .entry(split)
            .or_default()
            .insert(t.dialogue);
        writers.write(
            split,
            &TurnTriplets {
                turn_id: &turn.id,
                dialogue_id: &d.id,
                query: &t.query,
                pos: positives.iter().map(|p| training_text(p)).collect(),
                neg: neg
                    .iter()
                    .filter_map(|id| texts.get(id))
                    .map(training_text)
                    .collect(),
            },
        )?;
    }
    let files = split_files(writers.commit()?, &dialogues_per_split);
    Ok(TripletReport {
        turns: written,
        turns_without_gold: all_turns - turns.len(),
        turns_without_negatives: turns.len() - written,
        negatives,
        short_turns,
        removed,
        audit_exclusions: audit.map(AuditExclusions::len),
        retrievers: retrievers.iter().map(|r| r.name()).collect(),
        query: opts.query.name(),
        form: opts.form,
        seed: opts.seed,
        files,
    })
}

/// Each written split file with the dialogues whose turns went into it.
fn split_files(
    committed: Vec<(String, PathBuf, usize, u64)>,
    dialogues_per_split: &HashMap<&str, HashSet<usize>>,
) -> Vec<SplitFile> {
    committed
        .into_iter()
        .map(|(split, path, turns, lines)| SplitFile {
            dialogues: dialogues_per_split
                .get(split.as_str())
                .map_or(0, HashSet::len),
            split,
            path,
            turns,
            lines,
        })
        .collect()
}

/// The text a model trains on: the title on its own line before the text, unless the text
/// already starts with it (as the index reads a passage).
fn training_text(p: &Passage) -> String {
    let title = p.title.trim();
    if title.is_empty() || p.text.starts_with(title) {
        p.text.clone()
    } else {
        format!("{title}\n{}", p.text)
    }
}

/// The passages the triplets need (positives and candidates), from one pass over the corpus.
fn passages(
    bench: &Benchmark,
    turns: &[GoldTurn],
    candidates: &[Vec<String>],
) -> Result<HashMap<String, Passage>> {
    let wanted: HashSet<&str> = turns
        .iter()
        .flat_map(|t| t.positives.iter())
        .chain(candidates.iter().flatten())
        .map(String::as_str)
        .collect();
    let mut out = HashMap::with_capacity(wanted.len());
    bench.dir.for_each_passage(|_, p| {
        if wanted.contains(p.id.as_str()) {
            out.insert(p.id.clone(), p);
        }
        Ok(())
    })?;
    Ok(out)
}
