//! Self-preference in the human calibration: a judge that rates the answers of its own model
//! family above the annotators do, compared with the other answer sources. The summary's
//! bias section lists these warnings beside the generator-family ones.

use crate::human::annotator_agreement::HumanCalibration;
use crate::summary::JudgeInfo;

/// Self-preference warnings: a judge whose model family wrote one of the answer sources and
/// whose judge-minus-human residual on that source exceeds the other sources' (the interval of
/// the difference above zero).
pub(crate) fn warnings(cal: &HumanCalibration, judges: &[JudgeInfo]) -> Vec<String> {
    let mut out = Vec::new();
    for c in &cal.comparisons {
        for j in judges {
            let Some(fam) = &j.family else { continue };
            let Some(by_source) = c.residual_by_source.get(&j.name) else {
                continue;
            };
            for (src, r) in by_source {
                if crate::judges::family::family(src, None).as_deref() != Some(fam.as_str()) {
                    continue;
                }
                if let (Some(d), Some(ci)) = (r.minus_others, &r.minus_others_ci)
                    && ci.lower > 0.0
                {
                    out.push(format!(
                        "judge `{}` ({fam}) rates answers of `{src}` (its own family) {d:+.2} above the annotators relative to other answers ({} vs {}, {:.0}% CI {:+.2} to {:+.2})",
                        j.name,
                        c.dimension,
                        c.human_metric,
                        ci.level * 100.0,
                        ci.lower,
                        ci.upper
                    ));
                }
            }
        }
    }
    out
}
