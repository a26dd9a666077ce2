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

use crate::error::{BenchError, Result};
use crate::job::Settings;
use crate::query_set::QuerySet;
use crate::score::Scorer;
use crate::stats::bootstrap::{ClusterBootstrap, Estimate};
use crate::stats::holm;
use crate::stats::randomization::all_pairs;
use mtr_core::{Dialogue, Qrels, Run};
use mtr_metrics::agreement::{descending_order, tau_ap, tau_b};
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
    /// The system's name.
    pub name: &'a str,
    /// Its run.
    pub run: &'a Run,
}

/// Everything the analysis needs.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The benchmark's dialogues.
    pub dialogues: &'a [Dialogue],
    /// The bench's evaluation set (after any split).
    pub set: &'a QuerySet,
    /// The systems to analyse, in order.
    pub systems: &'a [SystemRun<'a>],
    /// What the audit says about the labels.
    pub edits: &'a LabelEdits,
    /// The bench's settings (measure, bootstrap, tests).
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
    for (pos, s) in descending_order(means).into_iter().enumerate() {
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

    let reference = Original {
        boot: &boot,
        base: &base,
        edits: &edits,
        names: &names,
        ranks0: &ranks0,
    };
    let mut variants = Vec::new();
    for v in edits.variants() {
        let (qv, applied, changed) = apply(&orig_q, &edits, v);
        let setv = QuerySet::build(inp.dialogues, &qv);
        let sv = Scored::new(setv, &cluster_of, inp, &boot, Some((&base, &changed)))?;
        variants.push(variant_result(inp, &reference, &sv, v, applied, &changed));
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

/// What every variant is compared with: the original qrels' scores and ranks, the resamples
/// they share, the audit's edits and the systems' names.
struct Original<'a> {
    boot: &'a ClusterBootstrap,
    base: &'a Scored,
    edits: &'a LabelEdits,
    names: &'a [&'a str],
    ranks0: &'a [usize],
}

/// One variant's result against the original.
fn variant_result(
    inp: &Input,
    original: &Original<'_>,
    sv: &Scored,
    v: Variant,
    applied: Applied,
    changed: &BTreeSet<String>,
) -> VariantResult {
    let Original {
        boot,
        base,
        edits,
        names,
        ranks0,
    } = *original;
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
    let kendall_tau =
        tau_b(&base.means, &sv.means).map(|t| boot.interval(t, tau_reps(tau_b).into_iter()).into());
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
mod tests;
