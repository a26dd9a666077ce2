//! The audit job: what [`crate::audit::run`] is given ([`AuditJob`]: settings, prompts, output
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
    pub settings: AuditSettings,
    pub out_dir: PathBuf,
    pub prompts: AuditPrompts,
    /// Retrievers for hard negatives (BM25, and dense when an embedder is configured).
    pub retrievers: Vec<Arc<dyn Retriever>>,
    /// Hash of the effective configuration (the binary's `Config::hash`).
    pub config_hash: String,
    pub tool_version: String,
    pub git_commit: Option<String>,
    pub human_labels: Option<PathBuf>,
    /// Judge a seeded sample of this many human-rated answers (MTRAG file).
    pub human_sample: Option<usize>,
    pub progress: SharedProgress,
}

/// What an audit run produced.
#[derive(Debug)]
pub enum Outcome {
    /// The folder was written (complete, or stopped by the budget: see `Summary::complete`).
    Audited(Box<Summary>),
    /// `--dry-run`: calls, tokens and cost that the audit would spend; nothing was written.
    DryRun {
        plan: mtr_llm::Plan,
        judgements: usize,
        reused: usize,
        /// `--time-budget`: the dialogues a run would start.
        time_budget: Option<Box<crate::budget::BudgetPlan>>,
    },
}
