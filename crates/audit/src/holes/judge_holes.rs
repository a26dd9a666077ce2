//! The whole `mtr judge` job: pool the holes, judge them with the audit (alignment only, on
//! the holes benchmark, into `DIR/audit/`, where a rerun resumes), then write the verdicts,
//! the summary and the report into `DIR`.

use mtr_core::{Benchmark, Qrels};
use mtr_llm::Llm;

use super::effect::{HoleSummary, TauBootstrap, summarise};
use super::files::write_outputs;
use super::hole_pool::{HolePlan, NamedRun};
use super::pool_record::{AUDIT_DIR, Pool, write_pool};
use super::verdicts::{filled_qrels, holes_benchmark, verdicts};
use crate::budget::TimeBudget;
use crate::dimension::Dimension;
use crate::error::Result;
use crate::job::{AuditJob, Outcome};
use crate::judges::record::Judgement;

/// What `mtr judge` is given besides the benchmark and the LLM.
pub struct HoleJob<'a> {
    /// The runs, pooled at `plan.depth`.
    pub runs: &'a [NamedRun],
    /// The benchmark's qrels.
    pub qrels: &'a Qrels,
    /// The holes to judge.
    pub plan: &'a HolePlan,
    /// The audit that judges them: its settings (the dimensions are set to alignment here),
    /// prompts and output folder (`mtr judge`'s `DIR`).
    pub audit: AuditJob,
}

/// What a `mtr judge` run produced.
#[derive(Debug)]
pub enum HoleOutcome {
    /// The folder was written.
    Judged(Box<HoleSummary>),
    /// `--dry-run`: what the audit of the holes would spend; nothing was written.
    DryRun(Outcome),
}

/// Judges the holes of `job.plan` and writes `mtr judge`'s folder.
pub async fn judge_holes(
    bench: &Benchmark,
    job: HoleJob<'_>,
    llm: &Llm,
    time: Option<TimeBudget>,
) -> Result<HoleOutcome> {
    let dir = job.audit.out_dir.clone();
    let mut audit = job.audit;
    audit.settings.dimensions = vec![Dimension::Alignment];
    audit.settings.sample = None;
    audit.out_dir = dir.join(AUDIT_DIR);
    let at_least = audit.settings.verify_rating_at_least;
    let settings = audit.settings.clone();
    let holes = holes_benchmark(bench, job.plan);
    let items = audit.out_dir.join(crate::output::ITEMS);
    match crate::run::run_within(&holes, audit, llm, time).await? {
        Outcome::Audited(_) => {}
        dry => return Ok(HoleOutcome::DryRun(dry)),
    }
    let judgements: Vec<Judgement> = if items.is_file() {
        mtr_core::jsonl::read_all(&items)?
    } else {
        Vec::new()
    };
    let verdicts = verdicts(job.plan, &judgements, at_least);
    let filled = filled_qrels(job.qrels, &verdicts);
    let tau = TauBootstrap {
        resamples: settings.resamples,
        level: settings.confidence,
        seed: settings.seed,
    };
    let mut summary = summarise(job.qrels, &filled, job.runs, job.plan, &verdicts, tau)?;
    let pool = Pool::of(job.qrels, job.runs, job.plan.depth);
    write_pool(&dir, &pool)?;
    summary.review = super::hole_review::reviewed(&dir, &pool, &verdicts)?;
    write_outputs(&dir, &verdicts, &summary)?;
    Ok(HoleOutcome::Judged(Box::new(summary)))
}
