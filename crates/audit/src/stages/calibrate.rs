//! Stage 7, calibrate: the judges against the human labels (`--human-labels`). An MTRAG file's
//! calibration judgements (judged in the human stage) are written to `human_items.jsonl` and
//! compared with the annotators; generic ratings of audited items are compared with the item
//! scores ([`crate::human::calibration`]).

use crate::error::Result;
use crate::human::agreement::{HumanCalibration, HumanLabels};
use crate::human::calibration;
use crate::job::AuditJob;
use crate::judges::record::Judgement;
use crate::output;
use crate::stages::human::HumanJudged;
use crate::stages::plan::Planned;
use crate::stages::score::Scored;

/// The calibration, when human labels were given (and, for an MTRAG file, judged).
pub fn calibrate(
    job: &AuditJob,
    planned: &Planned,
    human: &HumanJudged,
    scored: &Scored,
) -> Result<Option<HumanCalibration>> {
    let s = &job.settings;
    Ok(match (&human.labels, &human.judged) {
        (Some((path, HumanLabels::Mtrag { scale, items })), Some(hj)) => {
            let mut hjs: Vec<Judgement> =
                hj.records.iter().flatten().map(|j| (**j).clone()).collect();
            calibration::name_prompts(&mut hjs, &job.prompts);
            output::write_judgements(&job.out_dir.join(output::HUMAN_ITEMS), &hjs)?;
            Some(calibration::mtrag(
                path,
                *scale,
                items,
                &hjs,
                planned.judges.len(),
                &planned.dims,
                s,
                &job.prompts,
            ))
        }
        (Some((path, HumanLabels::Items(ratings))), _) => Some(calibration::items(
            path,
            ratings,
            &scored.items,
            &planned.dims,
            s,
        )),
        _ => None,
    })
}
