//! Stage 7, calibrate: the judges against the human labels (`--human-labels`). An MTRAG file's
//! calibration judgements (judged in the human stage) are compared with the annotators, and
//! handed on for `human_items.jsonl`; generic ratings of audited items are compared with the item
//! scores ([`crate::human::calibration`]).

use crate::human::annotator_agreement::{HumanCalibration, HumanLabels};
use crate::human::calibration;
use crate::job::AuditJob;
use crate::judges::record::Judgement;
use crate::stages::human_labels::HumanJudged;
use crate::stages::plan::Planned;
use crate::stages::score::Scored;

/// The judges against the human labels, and the calibration set's judgements to keep.
pub(crate) struct Calibrated {
    /// The calibration, when human labels were given (and, for an MTRAG file, judged).
    pub human: Option<HumanCalibration>,
    /// The MTRAG calibration set's judgements under their own prompts' ids, for
    /// `human_items.jsonl`.
    pub records: Option<Vec<Judgement>>,
}

/// Compares the judges with the human labels.
pub(crate) fn calibrate(
    job: &AuditJob,
    planned: &Planned,
    human: &HumanJudged,
    scored: &Scored,
) -> Calibrated {
    let s = &job.settings;
    match (&human.labels, &human.judged) {
        (Some((path, HumanLabels::Mtrag { scale, items })), Some(hj)) => {
            let mut hjs: Vec<Judgement> =
                hj.records.iter().flatten().map(|j| (**j).clone()).collect();
            calibration::name_prompts(&mut hjs, &job.prompts);
            let file = calibration::MtragFile {
                path,
                scale: *scale,
                items,
            };
            let human = calibration::mtrag(
                file,
                &hjs,
                planned.judges.len(),
                &planned.dims,
                s,
                &job.prompts,
            );
            Calibrated {
                human: Some(human),
                records: Some(hjs),
            }
        }
        (Some((path, HumanLabels::Items(ratings))), _) => Calibrated {
            human: Some(calibration::items(
                path,
                ratings,
                &scored.items,
                &planned.dims,
                s,
            )),
            records: None,
        },
        _ => Calibrated {
            human: None,
            records: None,
        },
    }
}
