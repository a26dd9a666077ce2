//! The verdict on the judges: can this ensemble tell a good label from a bad one at all?
//!
//! An audit's flags are only evidence about a benchmark when its judges separate items.
//! A judge that gives one grade to everything is constant (not lenient), judges that
//! abstain on nearly every discriminability pool pick nothing, and judges that disagree
//! with each other (Krippendorff's alpha or Fleiss' kappa near or below zero) carry no shared
//! signal. This module reads those facts off a [`Summary`] (so `mtr report` can compute the
//! verdict for an older `summary.json` too) and says, per dimension and in one line for the
//! whole ensemble, whether the judges separate anything. The rule and its thresholds are
//! documented in `docs/audit.md` ("The verdict on the judges").
//!
//! Once reviewers have labelled a random sample (`summary.review`), a dimension's verdict rests
//! on each judge's agreement with them instead: the best judge's kappa with the reviewers, on
//! the same thresholds ([`AGREEMENT_SEPARATES`], [`AGREEMENT_WEAK`]; separating also needs the
//! kappa's interval above 0). One judge that agrees with the reviewers is informative even when
//! the others are constant or disagree with it.

use std::collections::BTreeMap;

use crate::dimension::Dimension;
pub(crate) use crate::statistics::separation::{
    ABSTAINS_SHARE, ABSTENTION_WEAK, AGREEMENT_SEPARATES, AGREEMENT_WEAK, Behaviour,
    CONSTANT_SHARE, DimensionVerdict, JudgeSpread, MIN_ANSWERS, Separation, Verdict,
};
use crate::summary::Summary;

fn share(part: usize, all: usize) -> Option<f64> {
    (all > 0).then(|| part as f64 / all as f64)
}

/// The spread of a judge's 1-5 grades (`counts[k]` = grades `k + 1`).
fn rating_spread(judge: &str, counts: &[usize]) -> JudgeSpread {
    let n: usize = counts.iter().sum();
    let (mode, top) = counts
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or((None, 0), |(i, c)| (Some(i + 1), *c));
    let sd = (n > 0).then(|| {
        let mean = counts
            .iter()
            .enumerate()
            .map(|(i, c)| (i + 1) as f64 * *c as f64)
            .sum::<f64>()
            / n as f64;
        (counts
            .iter()
            .enumerate()
            .map(|(i, c)| *c as f64 * ((i + 1) as f64 - mean).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt()
    });
    let mode_share = share(top, n);
    let behaviour = if n < MIN_ANSWERS {
        Behaviour::TooFew
    } else if mode_share.is_some_and(|s| s >= CONSTANT_SHARE) {
        Behaviour::Constant
    } else {
        Behaviour::Varies
    };
    JudgeSpread {
        judge: judge.to_string(),
        answers: n,
        mode: mode.filter(|_| n > 0),
        mode_share,
        sd,
        abstention_share: None,
        behaviour,
    }
}

/// The spread of a judge's discriminability answers: abstentions, and the pool positions it
/// picked (a judge that always picks one position is constant).
fn pick_spread(s: &Summary, judge: &str, picks: usize) -> JudgeSpread {
    let abstained: usize = s
        .discriminability
        .as_ref()
        .and_then(|d| d.abstentions_per_judge.get(judge))
        .map_or(0, |m| m.values().sum());
    let answers = picks + abstained;
    let positions = s
        .bias
        .position
        .iter()
        .find(|p| p.judge == judge)
        .map(|p| p.picked_at.clone())
        .unwrap_or_default();
    let placed: usize = positions.iter().sum();
    let (mode, top) = positions
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or((None, 0), |(i, c)| (Some(i + 1), *c));
    let mode_share = share(top, placed);
    let abstention_share = share(abstained, answers);
    let behaviour = if answers < MIN_ANSWERS {
        Behaviour::TooFew
    } else if abstention_share.is_some_and(|a| a >= ABSTAINS_SHARE) || picks < MIN_ANSWERS {
        Behaviour::Abstains
    } else if placed >= MIN_ANSWERS && mode_share.is_some_and(|m| m >= CONSTANT_SHARE) {
        Behaviour::Constant
    } else {
        Behaviour::Varies
    };
    JudgeSpread {
        judge: judge.to_string(),
        answers,
        mode: mode.filter(|_| placed > 0),
        mode_share,
        sd: None,
        abstention_share,
        behaviour,
    }
}

/// `qwen gives 5 to 100%` / `smol abstains on 30 of 30` / `x varies`.
fn describe(j: &JudgeSpread) -> String {
    let pct = |x: Option<f64>| format!("{:.0}%", x.unwrap_or(0.0) * 100.0);
    match j.behaviour {
        Behaviour::TooFew => format!("`{}` gave {} valid verdicts", j.judge, j.answers),
        Behaviour::Constant if j.sd.is_some() => format!(
            "`{}` gives {} to {} of {}",
            j.judge,
            j.mode.unwrap_or(0),
            pct(j.mode_share),
            j.answers
        ),
        Behaviour::Constant => format!(
            "`{}` picks position {} in {} of its picks",
            j.judge,
            j.mode.unwrap_or(0),
            pct(j.mode_share)
        ),
        Behaviour::Abstains => format!(
            "`{}` abstains on {} of {} answers",
            j.judge,
            pct(j.abstention_share),
            j.answers
        ),
        Behaviour::Varies => format!("`{}` varies", j.judge),
    }
}

fn dimension_verdict(s: &Summary, dim: Dimension) -> Option<DimensionVerdict> {
    let d = s.dimensions.get(&dim)?;
    let names: Vec<&str> = s.judges.iter().map(|j| j.name.as_str()).collect();
    let judges: Vec<JudgeSpread> = names
        .iter()
        .map(|j| {
            let counts = d.verdicts.get(*j).cloned().unwrap_or_default();
            if dim.is_rating() {
                rating_spread(j, &counts)
            } else {
                pick_spread(s, j, counts.iter().sum())
            }
        })
        .collect();
    let (agreement, stat) = if dim.is_rating() {
        (d.agreement.krippendorff_alpha_ordinal, "α")
    } else {
        (d.agreement.fleiss_kappa, "κ")
    };
    let abstention_share = (!dim.is_rating())
        .then(|| {
            s.discriminability.as_ref().and_then(|x| {
                let a: usize = x.abstentions.values().sum();
                share(a, x.answers)
            })
        })
        .flatten();
    let (mut separation, mut reason) = judges_separation(&judges, agreement, stat);
    if let Some(a) = abstention_share {
        (separation, reason) = with_abstentions(s, a, separation, reason);
    }
    if let Some((sep, why)) = reviewed_separation(s, dim) {
        separation = sep;
        reason = why;
    }
    Some(DimensionVerdict {
        separation,
        agreement,
        abstention_share,
        judges,
        reason,
    })
}

/// What the judges' spreads and agreement say: `stat` names the agreement statistic.
fn judges_separation(
    judges: &[JudgeSpread],
    agreement: Option<f64>,
    stat: &str,
) -> (Separation, String) {
    let varying: Vec<&JudgeSpread> = judges
        .iter()
        .filter(|j| j.behaviour == Behaviour::Varies)
        .collect();
    let answered = judges.iter().any(|j| j.answers > 0);
    if !answered {
        (Separation::NotJudged, "no valid verdicts".to_string())
    } else if varying.is_empty() {
        let who: Vec<String> = judges.iter().map(describe).collect();
        (Separation::CannotSeparate, who.join(", "))
    } else if varying.len() == 1 {
        let mut who: Vec<String> = judges.iter().map(describe).collect();
        if judges.len() == 1 {
            who.push("one judge: agreement cannot be measured".into());
        } else {
            who.push("nothing confirms the one judge that varies".into());
        }
        (Separation::Unconfirmed, who.join(", "))
    } else {
        match agreement {
            None => (
                Separation::Unconfirmed,
                format!("{stat} undefined: agreement cannot be measured"),
            ),
            Some(a) if a >= AGREEMENT_SEPARATES => {
                (Separation::Separates, format!("{stat} {a:.2}"))
            }
            Some(a) if a >= AGREEMENT_WEAK => (
                Separation::Weak,
                format!("{stat} {a:.2}: the judges agree only fairly"),
            ),
            Some(a) => (
                Separation::CannotSeparate,
                format!("{stat} {a:.2}: the judges agree no better than chance"),
            ),
        }
    }
}

/// A separation lowered by the judges' abstentions (`share` of the pick answers).
fn with_abstentions(
    s: &Summary,
    a: f64,
    mut separation: Separation,
    mut reason: String,
) -> (Separation, String) {
    if separation > Separation::CannotSeparate {
        let abst = s
            .discriminability
            .as_ref()
            .map_or(0, |x| x.abstentions.values().sum::<usize>());
        let all = s.discriminability.as_ref().map_or(0, |x| x.answers);
        if a >= ABSTAINS_SHARE {
            separation = Separation::CannotSeparate;
            reason = format!("{abst} of {all} answers abstained; {reason}");
        } else if a >= ABSTENTION_WEAK && separation > Separation::Weak {
            separation = Separation::Weak;
            reason = format!("{abst} of {all} answers abstained; {reason}");
        }
    }
    (separation, reason)
}

/// The separation the reviewers' labels show in `dim`: how far the judge that agrees best with
/// the reviewers agrees with them. `None` without a review of `dim` or a judge's kappa.
fn reviewed_separation(s: &Summary, dim: Dimension) -> Option<(Separation, String)> {
    let r = s.review.as_ref()?.dimensions.get(&dim)?;
    let judges: Vec<(&crate::summary::ReviewerAgreement, f64)> = r
        .agreement
        .iter()
        .filter(|a| a.who != "ensemble")
        .filter_map(|a| Some((a, a.kappa?)))
        .collect();
    let (best, k) = judges
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.who.cmp(&a.0.who)))?;
    let above_zero = best.ci.as_ref().is_none_or(|c| c.lower > 0.0);
    let separation = if k >= AGREEMENT_SEPARATES && above_zero {
        Separation::Separates
    } else if k >= AGREEMENT_WEAK {
        Separation::Weak
    } else {
        Separation::CannotSeparate
    };
    let interval = best
        .ci
        .as_ref()
        .map(|c| format!(" [{:.2}, {:.2}]", c.lower, c.upper))
        .unwrap_or_default();
    let lead = if separation == Separation::CannotSeparate {
        format!(
            "no judge agrees with the reviewers: the best, `{}`",
            best.who
        )
    } else {
        format!("`{}` agrees with the reviewers", best.who)
    };
    let others: Vec<String> = judges
        .iter()
        .filter(|(a, _)| a.who != best.who)
        .map(|(a, k)| format!("`{}` κ {k:.2}", a.who))
        .collect();
    let mut reason = format!("{lead}: κ {k:.2}{interval} on {} reviewed items", best.n);
    if !others.is_empty() {
        reason.push_str(&format!("; {}", others.join(", ")));
    }
    Some((separation, reason))
}

/// The verdict on the judges of an audit.
pub(crate) fn of(s: &Summary) -> Verdict {
    let dimensions: BTreeMap<Dimension, DimensionVerdict> = s
        .dimensions
        .keys()
        .filter_map(|d| dimension_verdict(s, *d).map(|v| (*d, v)))
        .collect();
    let separation = dimensions
        .values()
        .map(|d| d.separation)
        .max()
        .unwrap_or(Separation::NotJudged);
    let with = |pred: &dyn Fn(Separation) -> bool| -> Vec<String> {
        dimensions
            .iter()
            .filter(|(_, v)| pred(v.separation))
            .map(|(d, v)| format!("{} ({})", d.name(), v.reason))
            .collect()
    };
    let line = match separation {
        Separation::NotJudged => {
            "**The judges judged nothing**: no dimension has a valid verdict.".to_string()
        }
        Separation::CannotSeparate => format!(
            "**The judges cannot separate anything**: {}. Their scores and flags say nothing about the benchmark; the flags below are the judges' failure, not the benchmark's.",
            with(&|_| true).join("; ")
        ),
        Separation::Unconfirmed | Separation::Weak => {
            let fail = with(&|x| x == Separation::CannotSeparate);
            format!(
                "**The judges separate little**: {}.{} Read their flags as leads to check, not findings.",
                with(&|x| x > Separation::CannotSeparate).join("; "),
                if fail.is_empty() {
                    String::new()
                } else {
                    format!(
                        " They cannot separate {}: flags there are the judges' failure, not the benchmark's.",
                        fail.join("; ")
                    )
                }
            )
        }
        Separation::Separates => {
            let fail = with(&|x| x == Separation::CannotSeparate);
            let weak = with(&|x| x > Separation::CannotSeparate && x < Separation::Separates);
            let mut line = format!(
                "**The judges separate items** on {}.",
                with(&|x| x == Separation::Separates).join("; ")
            );
            if !weak.is_empty() {
                line.push_str(&format!(" Weakly or unconfirmed on {}.", weak.join("; ")));
            }
            if !fail.is_empty() {
                line.push_str(&format!(
                    " They cannot separate {}: flags there are the judges' failure, not the benchmark's.",
                    fail.join("; ")
                ));
            }
            line
        }
    };
    Verdict {
        separation,
        line,
        dimensions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_judge_that_gives_one_grade_is_constant_not_lenient() {
        let j = rating_spread("q", &[0, 0, 0, 1, 39]);
        assert_eq!(j.behaviour, Behaviour::Constant);
        assert_eq!(j.mode, Some(5));
        let j = rating_spread("q", &[0, 0, 5, 10, 25]);
        assert_eq!(j.behaviour, Behaviour::Varies);
        assert!(j.sd.unwrap() > 0.5);
        assert_eq!(
            rating_spread("q", &[0, 0, 0, 0, 4]).behaviour,
            Behaviour::TooFew
        );
    }

    /// A summary with two judges `a` and `b`: rating counts per judge for alignment and the
    /// alpha; for completeness the kappa, picks per judge (spread over 8 positions) and
    /// abstentions per judge.
    fn summary(
        ratings: [[usize; 5]; 2],
        alpha: Option<f64>,
        kappa: Option<f64>,
        picks: usize,
        abstained: usize,
    ) -> Summary {
        let ledger = serde_json::json!({"calls": 0, "cache_hits": 0, "failed": 0,
            "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0});
        let dim = |verdicts: serde_json::Value, alpha: Option<f64>, kappa: Option<f64>| {
            serde_json::json!({"title": "t", "scale": [1.0, 5.0], "items": 10, "scored": 10,
                "unscored": 0, "mean": 3.0, "ci": null, "flagged": 0, "flag_threshold": 3.0,
                "per_judge": {}, "histogram": [], "verdicts": verdicts,
                "agreement": {"krippendorff_alpha_ordinal": alpha, "fleiss_kappa": kappa,
                    "units": 10, "note": null}})
        };
        let position = |j: &str| {
            let mut at = vec![0usize; 8];
            for i in 0..picks {
                at[i % 8] += 1;
            }
            serde_json::json!({"judge": j, "pool_size": 8, "gold_at": vec![0; 8],
                "gold_picked": vec![0; 8], "picked_at": at, "chi_square": null, "df": null,
                "p_value": null})
        };
        let split = [picks / 2, picks - picks / 2];
        serde_json::from_value(serde_json::json!({
            "summary_version": crate::summary::SUMMARY_VERSION,
            "benchmark": {"name": "b", "path": "", "source": "", "language": "en",
                "fingerprint": "fp", "generator": {}},
            "fingerprint": {"data": "fp", "config": "", "prompts": "", "tool_version": "",
                "git_commit": null},
            "settings": crate::AuditSettings::default(),
            "judges": [{"name": "a", "model": "m"}, {"name": "b", "model": "m"}],
            "complete": true, "stopped": null,
            "plan": {"dialogues_total": 3, "dialogues_audited": 3, "sampled": false,
                "turns_total": 3, "turns_audited": 3, "items": {}, "skipped": {},
                "judgements_planned": 0, "judgements_done": 0},
            "dimensions": {
                "alignment": dim(serde_json::json!({"a": ratings[0], "b": ratings[1]}), alpha, None),
                "completeness": dim(serde_json::json!({"a": split, "b": split}), None, kappa),
            },
            "bias": {"position": [position("a"), position("b")], "length": [],
                "self_preference": []},
            "discriminability": {"chance_rate": 0.125, "answers": 2 * (picks + abstained),
                "picks": 2 * picks, "abstentions": {"none": 2 * abstained},
                "abstentions_per_judge": {"a": {"none": abstained}, "b": {"none": abstained}},
                "none_majority_items": 0, "abstained_items": 0, "pool_negatives": 0,
                "pool_negatives_same_document": 0, "verify_rating_at_least": 4.0,
                "candidates": {}, "candidates_by_tag": {}},
            "failures": {}, "suggested_qrels": [], "flagged_turns": 0,
            "cost": {"total": ledger, "per_judge": {}, "per_dimension": {},
                "prompt_tokens_per_judgement": {}, "max_cost_usd": null},
            "human": null, "worst": {}, "warnings": []
        }))
        .unwrap()
    }

    const VARIES: [usize; 5] = [3, 2, 2, 3, 10];
    const CONSTANT: [usize; 5] = [0, 0, 0, 0, 20];

    fn sep(s: &Summary, d: Dimension) -> Separation {
        of(s).dimensions[&d].separation
    }

    #[test]
    fn agreement_decides_between_separates_weak_and_cannot() {
        let a = Dimension::Alignment;
        let at = |alpha| sep(&summary([VARIES, VARIES], Some(alpha), None, 0, 0), a);
        assert_eq!(at(0.4), Separation::Separates);
        assert_eq!(at(0.39), Separation::Weak);
        assert_eq!(at(0.2), Separation::Weak);
        assert_eq!(at(0.19), Separation::CannotSeparate);
        assert_eq!(at(-0.7), Separation::CannotSeparate);
        // agreement with a constant judge confirms nothing
        let s = summary([VARIES, CONSTANT], Some(0.9), None, 0, 0);
        assert_eq!(sep(&s, a), Separation::Unconfirmed);
        let s = summary([CONSTANT, CONSTANT], None, None, 0, 0);
        assert_eq!(sep(&s, a), Separation::CannotSeparate);
        assert!(
            of(&s).line.contains("`a` gives 5 to 100% of 20"),
            "{}",
            of(&s).line
        );
    }

    #[test]
    fn abstentions_cap_what_the_picks_can_say() {
        let c = Dimension::Completeness;
        let with = |picks, abstained| {
            let s = summary([VARIES, VARIES], Some(0.5), Some(0.8), picks, abstained);
            sep(&s, c)
        };
        assert_eq!(with(40, 0), Separation::Separates);
        assert_eq!(with(40, 39), Separation::Separates);
        assert_eq!(with(40, 40), Separation::Weak);
        assert_eq!(with(10, 90), Separation::CannotSeparate);
        // the overall verdict is the best dimension's, and names the failing one
        let v = of(&summary([VARIES, VARIES], Some(0.5), Some(0.8), 10, 90));
        assert_eq!(v.separation, Separation::Separates);
        assert!(v.fails(c) && !v.fails(Dimension::Alignment));
        assert!(
            v.line
                .starts_with("**The judges separate items** on alignment (α 0.50).")
                && v.line.contains(
                    "They cannot separate completeness (`a` abstains on 90% of 100 answers"
                ),
            "{}",
            v.line
        );
    }
}
