//! The audit, end to end: [`run`] calls the job's stages in order ([`crate::stages`]): plan
//! the items, reuse an earlier run's judgements, judge every unit with every judge (and the
//! human calibration set), verify the missing-gold candidates, calibrate against human labels,
//! summarise, and write the output folder.

use std::path::PathBuf;
use std::sync::Arc;

use mtr_core::Benchmark;
use mtr_core::progress::SharedProgress;
use mtr_llm::Llm;
use mtr_retrieve::Retriever;

use crate::budget::{Gate, TimeBudget};
use crate::config::AuditSettings;
use crate::error::Result;
use crate::judges::prompts::AuditPrompts;
use crate::stages::{self, summarise::Finished};
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

/// Runs an audit of `bench` and writes the folder (or, under `--dry-run`, only plans it).
pub async fn run(bench: &Benchmark, job: AuditJob, llm: &Llm) -> Result<Outcome> {
    run_within(bench, job, llm, None).await
}

/// [`run`] within a time budget ([`crate::budget`]): the dialogues whose expected time fits it
/// are audited, and no judgement call starts after its deadline.
pub async fn run_within(
    bench: &Benchmark,
    job: AuditJob,
    llm: &Llm,
    time: Option<TimeBudget>,
) -> Result<Outcome> {
    let mut warnings = Vec::new();
    let mut planned = stages::plan::plan(bench, &job, llm)?;
    if let Some(t) = time.as_ref().filter(|_| !planned.dry_run) {
        planned.gate = Gate::until(t.deadline());
    }
    let reuse = stages::reuse::reuse(&job, &planned.fingerprint.data, &mut warnings);
    let mut judged = stages::judge::judge(
        bench,
        &job,
        llm,
        &mut planned,
        &reuse,
        &mut warnings,
        time.as_ref(),
    )
    .await?;
    if planned.dry_run {
        return Ok(stages::judge::dry_run(llm, &judged));
    }
    let mut scored = stages::judge::score(&mut judged, &job.settings, &planned);
    let verified =
        stages::verify::verify(bench, &job, llm, &planned, &judged, &reuse, &mut scored).await?;
    let human = stages::calibrate::calibrate(&job, &planned, &mut judged, &scored)?;
    let finished = Finished {
        planned: &planned,
        judged: &judged,
        scored: &scored,
        suggested: &verified.suggested,
        human,
        warnings,
    };
    let summary = stages::summarise::summarise(bench, &job, llm, finished);
    stages::write::write(&job.out_dir, &summary, &scored, &verified)?;
    Ok(Outcome::Audited(Box::new(summary)))
}
