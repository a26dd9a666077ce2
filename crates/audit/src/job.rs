//! The audit job: what [`crate::run::run`] is given ([`AuditJob`]: settings, prompts, output
//! folder, retrievers, human labels) and what it returns ([`Outcome`]). The stages read the job
//! and hand each other their own results ([`crate::stages`]).

use std::path::PathBuf;
use std::sync::Arc;

use mtr_core::progress::SharedProgress;
use mtr_retrieve::Retriever;

use crate::config::AuditSettings;
use crate::judges::prompts::AuditPrompts;
use crate::summary::Summary;

/// Everything an audit needs besides the benchmark and the LLM client.
#[derive(Clone)]
pub struct AuditJob {
    /// The `[audit]` settings, layered.
    pub settings: AuditSettings,
    /// The output folder.
    pub out_dir: PathBuf,
    /// The judges' prompt templates.
    pub prompts: AuditPrompts,
    /// Retrievers for hard negatives (BM25, and dense when an embedder is configured).
    pub retrievers: Vec<Arc<dyn Retriever>>,
    /// Hash of the effective configuration (the binary's `Config::hash`).
    pub config_hash: String,
    /// The mtr version, recorded in the fingerprint.
    pub tool_version: String,
    /// The git commit of the build, when known.
    pub git_commit: Option<String>,
    /// `--human-labels FILE`: the human calibration set.
    pub human_labels: Option<PathBuf>,
    /// Judge a seeded sample of this many human-rated answers (MTRAG file).
    pub human_sample: Option<usize>,
    /// Where the stages report progress.
    pub progress: SharedProgress,
}

/// What an audit run produced.
#[derive(Debug)]
pub enum Outcome {
    /// The folder was written (complete, or stopped by the budget: see `Summary::complete`).
    Audited(Box<Summary>),
    /// `--dry-run`: calls, tokens and cost that the audit would spend; nothing was written.
    DryRun {
        /// Calls, tokens, cost and time the judgements would take.
        plan: mtr_llm::Plan,
        /// Judgements the audit plans.
        judgements: usize,
        /// Judgements an earlier run of the same audit already made.
        reused: usize,
        /// `--time-budget`: the dialogues a run would start.
        time_budget: Option<Box<crate::budget::BudgetPlan>>,
    },
}
