//! Stage 4, human: the human calibration set (`--human-labels`) loaded and, for an MTRAG file
//! whose benchmark judging was not stopped, a seeded sample of its answers screened and judged
//! with the audit's judges and prompts ([`crate::human::calibration`]). The calibrate stage
//! compares those judgements with the annotators.

use std::path::PathBuf;

use crate::error::Result;
use crate::human::annotator_agreement::{self, HumanLabels};
use crate::human::calibration;
use crate::job::AuditJob;
use crate::judges::context;
use crate::judges::engine::{Judged, Judging, Unit, judge_units};
use crate::stages::plan::Planned;
use crate::stages::reuse::Reuse;

/// The human labels and what the judges made of the calibration set.
#[derive(Default)]
pub(crate) struct HumanJudged {
    /// The human label file (`--human-labels`), loaded.
    pub labels: Option<(PathBuf, HumanLabels)>,
    /// The calibration set's judgements (MTRAG file, when the audit was not stopped).
    pub judged: Option<Judged>,
    /// Calibration prompts sent with their oldest turns left out.
    pub shortened: usize,
    /// Calibration items skipped as too long for the judges' context.
    pub too_long: usize,
}

/// Loads the human labels and judges an MTRAG file's calibration set (`stopped`: the
/// benchmark's judging stopped early, so the set is not judged).
pub(crate) async fn judge_human(
    job: &AuditJob,
    judging: &Judging<'_>,
    planned: &Planned,
    reuse: &Reuse,
    stopped: bool,
) -> Result<HumanJudged> {
    let Some(path) = &job.human_labels else {
        return Ok(HumanJudged::default());
    };
    let labels = annotator_agreement::load(path)?;
    let items = match &labels {
        HumanLabels::Mtrag { items, .. } if !stopped => items,
        _ => {
            return Ok(HumanJudged {
                labels: Some((path.clone(), labels)),
                ..HumanJudged::default()
            });
        }
    };
    let existing = calibration::reusable_existing(reuse.human.clone(), &job.prompts);
    let selected = calibration::sample(items, job.human_sample, job.settings.seed);
    let render = calibration::HumanRender {
        items: &selected,
        prompts: &job.prompts,
        budget: planned.budget,
    };
    let screened = context::screen(calibration::units(&selected), &|u: &Unit| render.fitted(u))?;
    let units = screened.kept;
    job.progress.stage(
        "human calibration",
        (units.len() * planned.judges.len() * planned.samples as usize) as u64,
    );
    let judged = judge_units(judging, &units, &render, &existing).await?;
    job.progress.finish_stage();
    Ok(HumanJudged {
        shortened: screened.shortened.values().sum(),
        too_long: screened.too_long.values().sum(),
        judged: Some(judged),
        labels: Some((path.clone(), labels)),
    })
}
