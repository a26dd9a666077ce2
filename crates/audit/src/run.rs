//! The audit, end to end: [`run`] calls the job's stages in order ([`crate::stages`]), each
//! with the results of the earlier ones: plan the items, reuse an earlier run's judgements,
//! judge every unit with every judge, judge the human calibration set, score, verify the
//! missing-gold candidates, calibrate against human labels, summarise, and write the output
//! folder.

use mtr_core::Benchmark;
use mtr_llm::Llm;

use crate::budget::TimeBudget;
use crate::error::Result;
use crate::job::{AuditJob, Outcome};
use crate::judges::engine::Judging;
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
    let time = time.as_ref();
    let planned = stages::plan::plan(bench, &job, llm, time)?;
    // who judges: the client, the ensemble, its samples, the progress display, the gate
    let judging = Judging {
        llm,
        judges: &planned.judges,
        samples: planned.samples,
        progress: &job.progress,
        gate: planned.gate.clone(),
    };
    let reuse = stages::reuse::reuse(
        &job.out_dir,
        &planned.fingerprint.data,
        job.human_labels.is_some(),
    );
    let (judged, judgements) =
        stages::judge::judge(bench, &job, &judging, &planned, &reuse, time).await?;
    let human_judged = stages::human_labels::judge_human(
        &job,
        &judging,
        &planned,
        &reuse,
        judged.stopped.is_some(),
    )
    .await?;
    if planned.dry_run {
        return Ok(stages::judge::dry_run(llm, &judged, &judgements));
    }
    let scored = stages::score::score(judged, &human_judged, &job.settings, &planned);
    let verified = stages::verify::verify(
        bench,
        &job,
        &judging,
        &planned,
        &judgements,
        &reuse,
        &scored,
    )
    .await?;
    let calibrated = stages::calibrate::calibrate(&job, &planned, &human_judged, &scored);
    let warnings = reuse
        .warning
        .iter()
        .chain(&judgements.warnings)
        .cloned()
        .collect();
    let finished = Finished {
        planned: &planned,
        judged: &judgements,
        human_judged: &human_judged,
        scored: &scored,
        verified: &verified,
        human: calibrated.human,
        warnings,
    };
    let summary = stages::summarise::summarise(bench, &job, llm, finished);
    stages::output_folder::write(
        &job.out_dir,
        &summary,
        &scored,
        &verified,
        calibrated.records.as_deref(),
    )?;
    Ok(Outcome::Audited(Box::new(summary)))
}
