//! Label sensitivity: how much would the leaderboard change if the labels were right? An audit
//! of the benchmark (read by the binary; this crate takes its findings as plain maps,
//! [`LabelEdits`]) says which gold passages do not answer their turn and which passages are
//! probable missing golds. From them come three alternative qrels ([`Variant`]):
//! `noise-removed` (the rejected golds dropped), `sparsity-filled` (the verified missing golds
//! added with their grade) and `corrected` (both); and when reviewers worked through the
//! audit's flagged items, `reviewed` (only the golds they rejected dropped and the suggestions
//! they accepted added). Every system is scored under the original
//! qrels and under each variant **on the audited turns only** (an audit of a `--sample` of
//! dialogues says nothing about the other turns, so they never enter a mean), and for each
//! variant we report:
//! - each system's mean with a cluster-bootstrap interval (by dialogue), and its change
//!   against the original with a paired interval (the same resampled dialogues weigh both
//!   means, so the change's interval is that of a paired statistic even though a turn left
//!   without gold leaves the variant's mean);
//! - Kendall's tau-b and tau_AP between the original and the variant ranking, with bootstrap
//!   intervals (both rankings recomputed in every resample);
//! - the pairs of systems whose order flips, each with a paired randomization test under the
//!   original and under the variant qrels, Holm-corrected over the flipped pairs;
//! - the changed turns that move systems most.
//!
//! Only the main measure is scored, once per variant, so the whole analysis costs a few
//! scorings and matrix products, not a second bench.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::Settings;
use crate::error::{BenchError, Result};
use crate::query_set::QuerySet;
use crate::rank_correlation::{kendall_tau_b, order, tau_ap};
use crate::score::Scorer;
use crate::stats::bootstrap::{ClusterBootstrap, Estimate};
use crate::stats::holm;
use crate::stats::randomization::all_pairs;
use mtr_core::{Dialogue, Qrels, Run};
use ndarray::Array2;
use rayon::prelude::*;

pub mod edits;

pub use crate::result::{
    AuditScope, Flip, LabelSensitivity, RankInterval, SystemScore, SystemShift, TurnShift,
    TurnSystemShift, VariantResult,
};
pub use edits::{Applied, LabelEdits, ReviewedEdits, Variant, apply};

/// One system to analyse.
#[derive(Debug, Clone, Copy)]
pub struct SystemRun<'a> {
    pub name: &'a str,
    pub run: &'a Run,
}

/// Everything the analysis needs.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub dialogues: &'a [Dialogue],
    /// The bench's evaluation set (after any split).
    pub set: &'a QuerySet,
    pub systems: &'a [SystemRun<'a>],
    pub edits: &'a LabelEdits,
    pub settings: &'a Settings,
    /// Changed turns listed per variant.
    pub moved_turns: usize,
    /// The bench's own per-turn values of the main measure, per system, aligned with
    /// `set.queries`, when it has them (saves scoring the original labels again).
    pub original_values: Option<&'a [&'a [f64]]>,
}

/// Scores of every system on one evaluation set, main measure only.
struct Scored {
    set: QuerySet,
    values: Vec<Vec<f64>>,
    means: Vec<f64>,
    reps: Array2<f64>,
}

impl Scored {
    /// Scores every system on `set`. With `base` (the original scores) and the turns whose
    /// qrels changed, only those turns are scored again: a turn's value depends on its own
    /// qrels only, so every other value is the original's.
    fn new(
        set: QuerySet,
        cluster_of: &BTreeMap<String, usize>,
        inp: &Input,
        boot: &ClusterBootstrap,
        base: Option<(&Scored, &BTreeSet<String>)>,
    ) -> Result<Scored> {
        let score_all = |set: &QuerySet| -> Result<Vec<Vec<f64>>> {
            if set.is_empty() {
                return Ok(vec![Vec::new(); inp.systems.len()]);
            }
            let scorer = Scorer::new(set, &[inp.settings.main])?;
            inp.systems
                .par_iter()
                .map(|s| {
                    // a few turns: score a run cut down to them (the metrics sort every query
                    // of the run they are given)
                    let cut: Option<Run> = (set.len() * 2 < s.run.len()).then(|| {
                        set.queries
                            .iter()
                            .filter_map(|q| s.run.get(&q.qid).map(|d| (q.qid.clone(), d.clone())))
                            .collect()
                    });
                    scorer
                        .score(set, cut.as_ref().unwrap_or(s.run))
                        .map(|sc| sc.values.into_iter().next().unwrap_or_default())
                })
                .collect::<Result<_>>()
        };
        let given = |vals: &[&[f64]]| -> Result<Vec<Vec<f64>>> {
            let idx: Vec<usize> = set
                .queries
                .iter()
                .map(|q| {
                    inp.set
                        .queries
                        .binary_search_by(|x| x.qid.as_str().cmp(&q.qid))
                        .map_err(|_| {
                            BenchError::Internal(format!(
                                "turn {} is not in the bench's set",
                                q.qid
                            ))
                        })
                })
                .collect::<Result<_>>()?;
            Ok(vals
                .iter()
                .map(|v| {
                    idx.iter()
                        .map(|&i| v.get(i).copied().unwrap_or(0.0))
                        .collect()
                })
                .collect())
        };
        let values: Vec<Vec<f64>> = match base {
            None => match inp.original_values {
                Some(vals)
                    if vals.len() == inp.systems.len()
                        && vals.iter().all(|v| v.len() == inp.set.len()) =>
                {
                    given(vals)?
                }
                _ => score_all(&set)?,
            },
            Some((b, changed)) => {
                let sub_q: Qrels = set
                    .qrels
                    .iter()
                    .filter(|(q, _)| changed.contains(*q))
                    .map(|(q, d)| (q.clone(), d.clone()))
                    .collect();
                let sub = QuerySet::build(inp.dialogues, &sub_q);
                let sub_values = score_all(&sub)?;
                let find = |s: &QuerySet, qid: &str| {
                    s.queries.binary_search_by(|q| q.qid.as_str().cmp(qid)).ok()
                };
                let source: Vec<(bool, usize)> = set
                    .queries
                    .iter()
                    .map(|q| match find(&sub, &q.qid) {
                        Some(i) => Ok((true, i)),
                        None => find(&b.set, &q.qid).map(|i| (false, i)).ok_or_else(|| {
                            BenchError::Internal(format!(
                                "turn {} is scored under the variant but not under the original",
                                q.qid
                            ))
                        }),
                    })
                    .collect::<Result<_>>()?;
                (0..inp.systems.len())
                    .map(|s| {
                        source
                            .iter()
                            .map(|&(new, i)| {
                                if new {
                                    sub_values[s][i]
                                } else {
                                    b.values[s][i]
                                }
                            })
                            .collect()
                    })
                    .collect()
            }
        };
        let clusters: Vec<usize> = set
            .queries
            .iter()
            .map(|q| {
                cluster_of
                    .get(&set.dialogues[q.dialogue])
                    .copied()
                    .unwrap_or(usize::MAX)
            })
            .collect();
        let means: Vec<f64> = values.iter().map(|v| crate::stats::mean(v)).collect();
        let series: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
        let all: Vec<usize> = (0..set.len()).collect();
        let reps = boot.replicates(&clusters, &all, &series);
        Ok(Scored {
            set,
            values,
            means,
            reps,
        })
    }

    fn estimate(&self, boot: &ClusterBootstrap, s: usize) -> Estimate {
        boot.interval(self.means[s], self.reps.column(s).iter().copied())
            .into()
    }

    fn ranks(&self) -> Vec<usize> {
        ranks_of(&self.means)
    }
}

/// 1-based rank of every system by mean (ties by system order).
fn ranks_of(means: &[f64]) -> Vec<usize> {
    let mut r = vec![0; means.len()];
    for (pos, s) in order(means).into_iter().enumerate() {
        r[s] = pos + 1;
    }
    r
}

/// Runs the whole analysis.
pub fn compute(inp: &Input) -> Result<LabelSensitivity> {
    let s = inp.settings;
    let in_scope: BTreeSet<&str> = inp
        .set
        .queries
        .iter()
        .map(|q| q.qid.as_str())
        .filter(|q| inp.edits.audited_turns.contains(*q))
        .collect();
    if in_scope.is_empty() {
        return Err(BenchError::option(
            "--audit",
            format!(
                "the audit covers none of the {} scored turns of this bench (it audited {} turns)",
                inp.set.len(),
                inp.edits.audited_turns.len()
            ),
        ));
    }
    let edits = inp.edits.restricted(&in_scope);
    let orig_q: Qrels = inp
        .set
        .qrels
        .iter()
        .filter(|(q, _)| in_scope.contains(q.as_str()))
        .map(|(q, d)| (q.clone(), d.clone()))
        .collect();
    let set0 = QuerySet::build(inp.dialogues, &orig_q);
    let cluster_of: BTreeMap<String, usize> = set0
        .dialogues
        .iter()
        .enumerate()
        .map(|(i, d)| (d.clone(), i))
        .collect();
    let boot = ClusterBootstrap::new(set0.dialogues.len(), s.resamples, s.level, s.seed);
    let base = Scored::new(set0, &cluster_of, inp, &boot, None)?;
    let k = inp.systems.len();
    let names: Vec<&str> = inp.systems.iter().map(|x| x.name).collect();
    let ranks0 = base.ranks();

    let mut variants = Vec::new();
    for v in edits.variants() {
        let (qv, applied, changed) = apply(&orig_q, &edits, v);
        let setv = QuerySet::build(inp.dialogues, &qv);
        let sv = Scored::new(setv, &cluster_of, inp, &boot, Some((&base, &changed)))?;
        variants.push(variant_result(
            inp, &boot, &base, &sv, v, applied, &changed, &edits, &names, &ranks0,
        ));
    }

    let original: Vec<SystemScore> = (0..k)
        .map(|i| SystemScore {
            system: names[i].to_string(),
            rank: ranks0[i],
            estimate: base.estimate(&boot, i),
        })
        .collect();
    let robustness = (0..k)
        .map(|i| {
            let ranks: BTreeMap<String, usize> = variants
                .iter()
                .map(|v| {
                    let r = v.systems.get(i).map_or(0, |x| x.rank);
                    (v.variant.name().to_string(), r)
                })
                .collect();
            let all = ranks.values().copied().chain([ranks0[i]]);
            let best = all.clone().min().unwrap_or(ranks0[i]);
            let worst = all.max().unwrap_or(ranks0[i]);
            RankInterval {
                system: names[i].to_string(),
                original_rank: ranks0[i],
                ranks,
                best,
                worst,
                robust: best == worst,
            }
        })
        .collect();
    let scored_turns_audited = base.set.len();
    let mut notes = inp.edits.notes.clone();
    if base.set.dialogues.len() < 30 {
        notes.push(format!(
            "only {} audited dialogues: the intervals rest on few independent units (with one dialogue they are points, not intervals)",
            base.set.dialogues.len()
        ));
    }
    if !inp.edits.complete {
        notes.push("the audit stopped early: some judgements are missing, so fewer golds may be removed or added than a complete audit would".into());
    }
    Ok(LabelSensitivity {
        measure: s.main.id(),
        scope: AuditScope {
            audit_fingerprint: inp.edits.fingerprint.clone(),
            flag_rating_below: inp.edits.flag_rating_below,
            added_golds: "suggestions whose pointwise verification made them probable missing golds (verdict probable_missing_gold), with their grade".into(),
            sampled: inp.edits.sampled,
            partial: scored_turns_audited < inp.set.len(),
            dialogues_audited: inp.edits.dialogues_audited,
            dialogues_total: inp.edits.dialogues_total,
            scored_turns: inp.set.len(),
            scored_turns_audited,
            scored_dialogues_audited: base.set.dialogues.len(),
            audit_complete: inp.edits.complete,
            notes,
        },
        original,
        variants,
        robustness,
        conventions: conventions(s),
    })
}

fn conventions(s: &Settings) -> Vec<String> {
    vec![
        format!("measure: {} only, per turn, as in the rest of the bench", s.main.id()),
        "turns: only the scored turns the audit covered, under the original and under every variant; a turn left without a relevant passage leaves the variant's mean (counted)".into(),
        format!("intervals: cluster bootstrap by dialogue, {} resamples, level {}, seed {}; the same resampled dialogues for the original and every variant, so a change's interval is paired", s.resamples, s.level, s.seed),
        "kendall_tau: tau-b between the systems' means under the original and under the variant; tau_ap: Yilmaz et al. (2008) of the original ranking against the variant's; both recomputed in every resample for their intervals".into(),
        format!("flips: pairs ordered differently under the two qrels; paired randomization (sign flip, {} permutations, seed {}) under each, Holm over the variant's flipped pairs, alpha {}", s.permutations, s.test_seed(), s.alpha),
    ]
}

#[allow(clippy::too_many_arguments)]
fn variant_result(
    inp: &Input,
    boot: &ClusterBootstrap,
    base: &Scored,
    sv: &Scored,
    v: Variant,
    applied: Applied,
    changed: &BTreeSet<String>,
    edits: &LabelEdits,
    names: &[&str],
    ranks0: &[usize],
) -> VariantResult {
    let (kendall_tau, tau_ap) = rank_correlations(boot, base, sv);
    VariantResult {
        variant: v,
        applied,
        turns: sv.set.len(),
        dialogues: sv.set.dialogues.len(),
        systems: system_shifts(boot, base, sv, names, ranks0),
        kendall_tau,
        tau_ap,
        flips: flips(inp.settings, base, sv, names, ranks0),
        moved_turns: moved_turns(base, sv, v, changed, edits, names, inp.moved_turns),
    }
}

/// Every system under the original and the variant, with the paired interval of its change.
fn system_shifts(
    boot: &ClusterBootstrap,
    base: &Scored,
    sv: &Scored,
    names: &[&str],
    ranks0: &[usize],
) -> Vec<SystemShift> {
    let ranksv = sv.ranks();
    (0..names.len())
        .map(|i| SystemShift {
            system: names[i].to_string(),
            original_rank: ranks0[i],
            rank: ranksv[i],
            original: base.estimate(boot, i),
            estimate: sv.estimate(boot, i),
            change: boot
                .interval(
                    sv.means[i] - base.means[i],
                    sv.reps
                        .column(i)
                        .iter()
                        .zip(base.reps.column(i).iter())
                        .map(|(a, b)| a - b),
                )
                .into(),
        })
        .collect()
}

/// Kendall's tau-b and tau_AP between the original and the variant ranking, each with the
/// interval of its values over the resamples.
fn rank_correlations(
    boot: &ClusterBootstrap,
    base: &Scored,
    sv: &Scored,
) -> (Option<Estimate>, Option<Estimate>) {
    let tau_reps = |f: fn(&[f64], &[f64]) -> Option<f64>| -> Vec<f64> {
        base.reps
            .rows()
            .into_iter()
            .zip(sv.reps.rows())
            .filter_map(|(a, b)| {
                let a: Vec<f64> = a.to_vec();
                let b: Vec<f64> = b.to_vec();
                if a.iter().chain(&b).all(|x| x.is_finite()) {
                    f(&a, &b)
                } else {
                    None
                }
            })
            .collect()
    };
    let kendall_tau = kendall_tau_b(&base.means, &sv.means)
        .map(|t| boot.interval(t, tau_reps(kendall_tau_b).into_iter()).into());
    let tau_ap_est = tau_ap(&base.means, &sv.means)
        .map(|t| boot.interval(t, tau_reps(tau_ap).into_iter()).into());
    (kendall_tau, tau_ap_est)
}

/// The pairs of systems ordered differently under the two qrels, each tested under both
/// (Holm over the flipped pairs).
fn flips(s: &Settings, base: &Scored, sv: &Scored, names: &[&str], ranks0: &[usize]) -> Vec<Flip> {
    let k = names.len();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for a in 0..k {
        for b in (a + 1)..k {
            let d0 = base.means[a] - base.means[b];
            let dv = sv.means[a] - sv.means[b];
            if d0 * dv < 0.0 {
                pairs.push(if d0 > 0.0 { (a, b) } else { (b, a) });
            }
        }
    }
    if pairs.is_empty() {
        return Vec::new();
    }
    pairs.sort_by_key(|&(a, b)| (ranks0[a], ranks0[b]));
    let involved: Vec<usize> = pairs
        .iter()
        .flat_map(|&(a, b)| [a, b])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let pos = |x: usize| involved.binary_search(&x).unwrap_or(0);
    let test = |sc: &Scored| {
        let series: Vec<&[f64]> = involved.iter().map(|&i| sc.values[i].as_slice()).collect();
        all_pairs(&series, s.permutations, s.test_seed())
    };
    let p0 = test(base);
    let pv = test(sv);
    let raw0: Vec<f64> = pairs.iter().map(|&(a, b)| p0.p[pos(a)][pos(b)]).collect();
    let rawv: Vec<f64> = pairs.iter().map(|&(a, b)| pv.p[pos(a)][pos(b)]).collect();
    let h0 = holm(&raw0);
    let hv = holm(&rawv);
    pairs
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| Flip {
            above: names[a].to_string(),
            below: names[b].to_string(),
            original_diff: base.means[a] - base.means[b],
            variant_diff: sv.means[a] - sv.means[b],
            p_original: raw0[i],
            p_original_holm: h0[i],
            original_significant: h0[i] < s.alpha,
            p_variant: rawv[i],
            p_variant_holm: hv[i],
            variant_significant: hv[i] < s.alpha,
        })
        .collect()
}

/// The changed turns that move systems most (at most `limit`), each with its three most moved
/// systems.
fn moved_turns(
    base: &Scored,
    sv: &Scored,
    v: Variant,
    changed: &BTreeSet<String>,
    edits: &LabelEdits,
    names: &[&str],
    limit: usize,
) -> Vec<TurnShift> {
    let index_of = |set: &QuerySet, qid: &str| {
        set.queries
            .binary_search_by(|q| q.qid.as_str().cmp(qid))
            .ok()
    };
    let mut moved: Vec<TurnShift> = changed
        .iter()
        .filter_map(|qid| {
            let i0 = index_of(&base.set, qid)?;
            let iv = index_of(&sv.set, qid);
            let mut shifts: Vec<TurnSystemShift> = (0..names.len())
                .map(|si| {
                    let o = base.values[si][i0];
                    let nv = iv.map(|i| sv.values[si][i]);
                    TurnSystemShift {
                        system: names[si].to_string(),
                        original: o,
                        variant: nv,
                        shift: nv.map_or(-o, |x| x - o),
                    }
                })
                .collect();
            shifts.sort_by(|a, b| b.shift.abs().total_cmp(&a.shift.abs()));
            let largest_shift = shifts.first().map_or(0.0, |x| x.shift.abs());
            shifts.truncate(3);
            Some(TurnShift {
                qid: qid.clone(),
                dialogue: base.set.dialogues[base.set.queries[i0].dialogue].clone(),
                removed: edits
                    .removals(v)
                    .get(qid)
                    .map(|p| p.iter().cloned().collect())
                    .unwrap_or_default(),
                added: edits
                    .additions(v)
                    .get(qid)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default(),
                left_the_mean: iv.is_none(),
                largest_shift,
                systems: shifts,
            })
        })
        .collect();
    moved.sort_by(|a, b| {
        b.largest_shift
            .total_cmp(&a.largest_shift)
            .then_with(|| a.qid.cmp(&b.qid))
    });
    moved.truncate(limit);
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query_set::tests::turn;

    fn run(entries: &[(&str, &[&str])]) -> Run {
        entries
            .iter()
            .map(|(q, docs)| {
                let n = docs.len();
                (
                    q.to_string(),
                    docs.iter()
                        .enumerate()
                        .map(|(i, d)| (d.to_string(), (n - i) as f64))
                        .collect(),
                )
            })
            .collect()
    }

    /// A wins on the original labels thanks to a wrong gold (`bad`) and a missing one (`n2`);
    /// B wins once they are fixed. d4 is not audited and must never enter a mean.
    fn fixture() -> (Vec<Dialogue>, Qrels, Run, Run, LabelEdits) {
        let dialogues: Vec<Dialogue> = [
            ("d1", vec![turn("d1::1", &[("g1", 1)])]),
            ("d2", vec![turn("d2::1", &[("g2", 1)])]),
            ("d3", vec![turn("d3::1", &[("bad", 1), ("good", 1)])]),
            ("d4", vec![turn("d4::1", &[("g4", 1)])]),
            ("d5", vec![turn("d5::1", &[("g5", 1)])]),
        ]
        .into_iter()
        .map(|(id, turns)| Dialogue {
            id: id.into(),
            turns,
            meta: Default::default(),
        })
        .collect();
        let qrels = mtr_core::model::qrels_from_dialogues(&dialogues);
        let a = run(&[
            ("d1::1", &["g1"]),
            ("d2::1", &["g2"]),
            ("d3::1", &["bad"]),
            ("d4::1", &["n4"]),
            ("d5::1", &["g5"]),
        ]);
        let b = run(&[
            ("d1::1", &["g1"]),
            ("d2::1", &["n2", "g2"]),
            ("d3::1", &["good"]),
            ("d4::1", &["g4"]),
            ("d5::1", &["x"]),
        ]);
        let edits = LabelEdits {
            fingerprint: "fp".into(),
            flag_rating_below: 3.0,
            sampled: true,
            dialogues_audited: 4,
            dialogues_total: 5,
            audited_turns: ["d1::1", "d2::1", "d3::1", "d5::1"]
                .map(String::from)
                .into(),
            removed: [
                ("d3::1".to_string(), ["bad".to_string()].into()),
                ("d5::1".to_string(), ["g5".to_string()].into()),
                // not a gold: nothing to remove
                ("d1::1".to_string(), ["zz".to_string()].into()),
            ]
            .into(),
            added: [("d2::1".to_string(), [("n2".to_string(), 1)].into())].into(),
            complete: true,
            notes: Vec::new(),
            reviewed: None,
        };
        (dialogues, qrels, a, b, edits)
    }

    #[test]
    fn apply_counts_what_changed() {
        let (_, qrels, _, _, edits) = fixture();
        let (q, a, changed) = apply(&qrels, &edits, Variant::NoiseRemoved);
        assert_eq!(a.golds_removed, 2);
        assert_eq!(a.golds_added, 0);
        assert_eq!(a.turns_changed, 2);
        assert_eq!(a.turns_left_without_gold, 1);
        assert!(!q.contains_key("d5::1"));
        assert_eq!(changed, ["d3::1", "d5::1"].map(String::from).into());
        let (q, a, _) = apply(&qrels, &edits, Variant::Corrected);
        assert_eq!((a.golds_removed, a.golds_added, a.turns_changed), (2, 1, 3));
        assert_eq!(q["d2::1"]["n2"], 1);
        let (q, a, _) = apply(&qrels, &edits, Variant::SparsityFilled);
        assert_eq!((a.golds_removed, a.golds_added), (0, 1));
        assert_eq!(q["d3::1"].len(), 2);
        assert_eq!("corrected".parse::<Variant>().unwrap(), Variant::Corrected);
        assert!("fixed".parse::<Variant>().is_err());
    }

    #[test]
    fn the_reviewed_variant_applies_only_what_reviewers_decided() {
        let (dialogues, qrels, a, b, mut edits) = fixture();
        // without reviewers' decisions there is no reviewed variant, and applying it is a no-op
        assert_eq!(edits.variants(), Variant::ALL.to_vec());
        let (q, applied, _) = apply(&qrels, &edits, Variant::Reviewed);
        assert_eq!((q, applied.turns_changed), (qrels.clone(), 0));
        // reviewers kept g5 (the judges removed it) and accepted n2
        edits.reviewed = Some(ReviewedEdits {
            removed: [("d3::1".to_string(), ["bad".to_string()].into())].into(),
            added: [("d2::1".to_string(), [("n2".to_string(), 1)].into())].into(),
        });
        let (q, applied, changed) = apply(&qrels, &edits, Variant::Reviewed);
        assert_eq!((applied.golds_removed, applied.golds_added), (1, 1));
        assert_eq!(changed, ["d2::1", "d3::1"].map(String::from).into());
        assert_eq!(q["d5::1"]["g5"], 1);
        assert_eq!("reviewed".parse::<Variant>().unwrap(), Variant::Reviewed);
        let set = QuerySet::build(&dialogues, &qrels);
        let settings = Settings {
            resamples: 200,
            permutations: 200,
            ..Settings::default()
        };
        let systems = [
            SystemRun { name: "A", run: &a },
            SystemRun { name: "B", run: &b },
        ];
        let inp = Input {
            dialogues: &dialogues,
            set: &set,
            systems: &systems,
            edits: &edits,
            settings: &settings,
            moved_turns: 10,
            original_values: None,
        };
        let r = compute(&inp).unwrap();
        let v = r.variant(Variant::Reviewed).unwrap();
        assert_eq!(v.turns, 4, "d5 keeps its gold");
        assert_eq!((v.systems[0].rank, v.systems[1].rank), (2, 1));
        let d3 = v.moved_turns.iter().find(|t| t.qid == "d3::1").unwrap();
        assert_eq!(d3.removed, ["bad"]);
        assert!(v.moved_turns.iter().all(|t| t.qid != "d5::1"));
    }

    #[test]
    fn corrected_labels_flip_the_pair_on_audited_turns_only() {
        let (dialogues, qrels, a, b, edits) = fixture();
        let set = QuerySet::build(&dialogues, &qrels);
        let settings = Settings {
            resamples: 300,
            permutations: 500,
            ..Settings::default()
        };
        let systems = [
            SystemRun { name: "A", run: &a },
            SystemRun { name: "B", run: &b },
        ];
        let inp = Input {
            dialogues: &dialogues,
            set: &set,
            systems: &systems,
            edits: &edits,
            settings: &settings,
            moved_turns: 10,
            original_values: None,
        };
        let r = compute(&inp).unwrap();
        assert_eq!(r.scope.scored_turns, 5);
        assert_eq!(r.scope.scored_turns_audited, 4);
        assert!(r.scope.partial);
        assert_eq!(r.scope.flag_rating_below, 3.0);
        // original on the 4 audited turns: A 1,1,x,1 ; B 1,y,x,0 (x = both retrieve one of two
        // golds at rank 1, y = the gold at rank 2)
        let x = 1.0 / (1.0 + 1.0 / 3f64.log2());
        let y = 1.0 / 3f64.log2();
        let a0 = (3.0 + x) / 4.0;
        let b0 = (1.0 + y + x) / 4.0;
        assert!((r.original[0].estimate.mean - a0).abs() < 1e-12);
        assert!((r.original[1].estimate.mean - b0).abs() < 1e-12);
        assert_eq!((r.original[0].rank, r.original[1].rank), (1, 2));

        let c = r.variant(Variant::Corrected).unwrap();
        // d5 leaves the mean; d3 now has only `good`; d2 has two golds, B finds both
        assert_eq!(c.turns, 3);
        assert_eq!(c.applied.turns_left_without_gold, 1);
        let d2a = 1.0 / (1.0 + 1.0 / 3f64.log2());
        let (ac, bc) = ((1.0 + d2a + 0.0) / 3.0, 1.0);
        assert!((c.systems[0].estimate.mean - ac).abs() < 1e-12);
        assert!((c.systems[1].estimate.mean - bc).abs() < 1e-12);
        assert!((c.systems[0].change.mean - (ac - a0)).abs() < 1e-12);
        assert!(c.systems[0].change.ci_low <= c.systems[0].change.mean);
        assert_eq!((c.systems[0].rank, c.systems[1].rank), (2, 1));
        assert_eq!(c.kendall_tau.unwrap().mean, -1.0);
        assert_eq!(c.tau_ap.unwrap().mean, -1.0);
        assert_eq!(c.flips.len(), 1);
        assert_eq!(
            (c.flips[0].above.as_str(), c.flips[0].below.as_str()),
            ("A", "B")
        );
        assert!(c.flips[0].original_diff > 0.0 && c.flips[0].variant_diff < 0.0);
        // too few turns for anything to be significant
        assert!(!c.flips[0].original_significant);
        // moved turns: d5 leaves the mean (A loses a 1), d3 moves A by -x, d2 moves A by
        // 1 - x (= 0.387) and B by 1 - y (= 0.369)
        let qids: Vec<&str> = c.moved_turns.iter().map(|t| t.qid.as_str()).collect();
        assert_eq!(qids, ["d5::1", "d3::1", "d2::1"]);
        assert_eq!(c.moved_turns[2].systems[0].system, "A");
        let d5 = c.moved_turns.iter().find(|t| t.qid == "d5::1").unwrap();
        assert!(d5.left_the_mean);
        assert_eq!(d5.removed, ["g5"]);
        assert_eq!(d5.systems[0].system, "A");
        assert_eq!(d5.systems[0].shift, -1.0);
        // d4 (not audited) is nowhere
        assert!(
            r.variants
                .iter()
                .all(|v| v.moved_turns.iter().all(|t| t.qid != "d4::1"))
        );
        let rob = r.robustness_of("A").unwrap();
        assert_eq!((rob.best, rob.worst, rob.robust), (1, 2, false));
        // the same inputs and seed give the same numbers
        assert_eq!(compute(&inp).unwrap(), r);
        // and the bench's own per-turn values give the same as scoring again
        let values: Vec<Vec<f64>> = [&a, &b]
            .iter()
            .map(|run| {
                crate::score::score_run(&set, run, &[settings.main])
                    .unwrap()
                    .values
                    .remove(0)
            })
            .collect();
        let refs: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
        let given = compute(&Input {
            original_values: Some(&refs),
            ..inp
        })
        .unwrap();
        assert_eq!(given, r);
    }

    #[test]
    fn an_audit_of_other_turns_is_refused() {
        let (dialogues, qrels, a, _, mut edits) = fixture();
        edits.audited_turns = ["x::1".to_string()].into();
        let set = QuerySet::build(&dialogues, &qrels);
        let settings = Settings::default();
        let systems = [SystemRun { name: "A", run: &a }];
        let e = compute(&Input {
            dialogues: &dialogues,
            set: &set,
            systems: &systems,
            edits: &edits,
            settings: &settings,
            moved_turns: 10,
            original_values: None,
        })
        .unwrap_err();
        assert!(e.to_string().contains("covers none"), "{e}");
    }
}
