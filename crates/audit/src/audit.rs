//! The audit, end to end: [`run`] calls the job's stages in order ([`crate::stages`]): plan
//! the items, reuse an earlier run's judgements, judge every unit with every judge (and the
//! human calibration set), verify the missing-gold candidates, calibrate against human labels,
//! summarise, and write the output folder.

use mtr_core::Benchmark;
use mtr_llm::Llm;

use crate::budget::{Gate, TimeBudget};
use crate::error::Result;
use crate::job::{AuditJob, Outcome};
use crate::stages::{self, summarise::Finished};

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
