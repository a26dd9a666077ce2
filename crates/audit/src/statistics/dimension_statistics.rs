//! Statistics of an audit: dimension means with cluster-bootstrap confidence intervals (turns
//! of one dialogue are resampled together), per-judge means, inter-judge agreement, score
//! histograms, and bias diagnostics (gold pick-rate by position, score vs length).
//!
//! Item scores average whichever judges succeeded, so failures that are not at random (a
//! strict judge failing on long late turns) move the mean toward the other judges. Beside that
//! mean every dimension reports the complete-case mean (items every judge scored) and a
//! judge-adjusted mean (additive judge effects estimated on the items all judges share), and
//! the summary shows failure rates by turn depth and prompt length. Bias checks respect the
//! clustering of trials in items: the position test is Rao-Scott corrected, and the length
//! check compares the picked passage with the rest of its own pool.

use std::collections::{BTreeMap, HashMap};

use mtr_metrics::agreement::{self, Level};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::items::aggregate::ItemScore;
use crate::judges::record::Judgement;
pub(crate) use crate::statistics::interval::interval;
use crate::statistics::resample::{Resampling, cluster_interval, mean_at};
use crate::summary::{
    Agreement, Bin, DimensionSummary, Estimate, FailureRates, JudgeScore, LengthBias,
    PoolLengthBias, PositionBias, RateBin,
};

/// Whether an item is flagged as a probable label problem.
pub(crate) fn is_flagged(item: &ItemScore, s: &AuditSettings) -> bool {
    match (item.dimension, item.score) {
        (Dimension::Completeness, Some(x)) => {
            x < s.flag_share_below || item.suggestion.is_some() || item.none_majority()
        }
        (Dimension::Completeness, None) => item.suggestion.is_some() || item.none_majority(),
        (_, Some(x)) => x < s.flag_rating_below,
        (_, None) => false,
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn histogram(dim: Dimension, scores: &[f64]) -> Vec<Bin> {
    let (lo, hi, width): (f64, f64, f64) = if dim.is_rating() {
        (1.0, 5.0, 0.5)
    } else {
        (0.0, 1.0, 0.1)
    };
    let n = ((hi - lo) / width).round() as usize;
    let mut bins: Vec<Bin> = (0..n)
        .map(|i| Bin {
            lower: lo + i as f64 * width,
            upper: lo + (i + 1) as f64 * width,
            count: 0,
        })
        .collect();
    for &x in scores {
        let i = (((x - lo) / width) + 1e-9)
            .floor()
            .clamp(0.0, (n - 1) as f64) as usize;
        bins[i].count += 1;
    }
    bins
}

/// The summary of one dimension.
pub(crate) fn dimension_summary(
    dim: Dimension,
    items: &[&ItemScore],
    judgements: &[&Judgement],
    judges: &[String],
    s: &AuditSettings,
) -> DimensionSummary {
    let scored: Vec<&&ItemScore> = items.iter().filter(|i| i.score.is_some()).collect();
    let values: Vec<f64> = scored.iter().filter_map(|i| i.score).collect();
    let clusters: Vec<&str> = scored.iter().map(|i| i.dialogue_id.as_str()).collect();
    let mean = finite(crate::items::aggregate::mean(&values));
    let ci = interval(&values, &clusters, s, dim.name());
    let mut per_judge = BTreeMap::new();
    for j in judges {
        let mine: Vec<(f64, &str)> = items
            .iter()
            .filter_map(|i| i.per_judge.get(j).map(|v| (*v, i.dialogue_id.as_str())))
            .collect();
        let v: Vec<f64> = mine.iter().map(|x| x.0).collect();
        let c: Vec<&str> = mine.iter().map(|x| x.1).collect();
        let failed = judgements
            .iter()
            .filter(|x| &x.judge == j && !x.ok())
            .count();
        per_judge.insert(
            j.clone(),
            JudgeScore {
                n: v.len(),
                mean: finite(crate::items::aggregate::mean(&v)),
                ci: interval(&v, &c, s, &format!("{}/{j}", dim.name())),
                failed,
            },
        );
    }
    let mut verdicts: BTreeMap<String, Vec<usize>> = judges
        .iter()
        .map(|j| (j.clone(), vec![0; if dim.is_rating() { 5 } else { 2 }]))
        .collect();
    for x in judgements.iter().filter(|x| x.ok()) {
        let (Some(v), Some(score)) = (verdicts.get_mut(&x.judge), x.score) else {
            continue;
        };
        let i = if dim.is_rating() {
            (score.round() as usize).clamp(1, 5) - 1
        } else {
            usize::from(score > 0.5)
        };
        v[i] += 1;
    }
    let threshold = if dim.is_rating() {
        s.flag_rating_below
    } else {
        s.flag_share_below
    };
    let resampling = |salt: &str| Resampling {
        resamples: s.resamples,
        level: s.confidence,
        seed: crate::seed::derive(s.seed, &["bootstrap", dim.name(), salt]),
    };
    DimensionSummary {
        title: dim.title().to_string(),
        scale: [dim.scale().0, dim.scale().1],
        items: items.len(),
        scored: values.len(),
        unscored: items.len() - values.len(),
        mean,
        ci,
        complete_case: complete_case(items, judges, &resampling("complete-case")),
        judge_adjusted: judge_adjusted(items, judges, &resampling("judge-adjusted")),
        flagged: items.iter().filter(|i| is_flagged(i, s)).count(),
        flag_threshold: threshold,
        per_judge,
        agreement: agreement_of(dim, items, judgements, judges),
        histogram: histogram(dim, &values),
        verdicts,
    }
}

/// Mean over the items every judge scored, with its cluster-bootstrap interval.
pub(crate) fn complete_case(
    items: &[&ItemScore],
    judges: &[String],
    r: &Resampling,
) -> Option<Estimate> {
    if judges.is_empty() {
        return None;
    }
    let full: Vec<&&ItemScore> = items
        .iter()
        .filter(|i| judges.iter().all(|j| i.per_judge.contains_key(j)))
        .collect();
    let values: Vec<f64> = full
        .iter()
        .map(|i| judges.iter().map(|j| i.per_judge[j]).sum::<f64>() / judges.len() as f64)
        .collect();
    let clusters: Vec<&str> = full.iter().map(|i| i.dialogue_id.as_str()).collect();
    let all: Vec<usize> = (0..values.len()).collect();
    Some(Estimate {
        n: values.len(),
        mean: mean_at(&values, &all),
        ci: cluster_interval(&clusters, r, |idx| mean_at(&values, idx)),
        offsets: BTreeMap::new(),
    })
}

/// Judge offsets (judge score minus the ensemble mean, averaged over the complete items among
/// `idx`) and the mean of the adjusted item scores over `idx`.
fn adjusted_at(scores: &[Vec<Option<f64>>], idx: &[usize], k: usize) -> Option<(f64, Vec<f64>)> {
    let mut offsets = vec![0.0; k];
    let mut full = 0usize;
    for &i in idx {
        let row = &scores[i];
        if row.iter().all(Option::is_some) {
            let m = row.iter().flatten().sum::<f64>() / k as f64;
            for (o, x) in offsets.iter_mut().zip(row.iter().flatten()) {
                *o += x - m;
            }
            full += 1;
        }
    }
    if full == 0 {
        return None;
    }
    offsets.iter_mut().for_each(|o| *o /= full as f64);
    let (mut sum, mut n) = (0.0, 0usize);
    for &i in idx {
        let adj: Vec<f64> = scores[i]
            .iter()
            .zip(&offsets)
            .filter_map(|(x, o)| x.map(|x| x - o))
            .collect();
        if !adj.is_empty() {
            sum += adj.iter().sum::<f64>() / adj.len() as f64;
            n += 1;
        }
    }
    (n > 0).then(|| (sum / n as f64, offsets))
}

/// Mean over every scored item after subtracting additive judge effects (estimated on the
/// items all judges scored), with its cluster-bootstrap interval (offsets re-estimated in
/// every resample).
pub(crate) fn judge_adjusted(
    items: &[&ItemScore],
    judges: &[String],
    r: &Resampling,
) -> Option<Estimate> {
    let scored: Vec<&&ItemScore> = items.iter().filter(|i| !i.per_judge.is_empty()).collect();
    let scores: Vec<Vec<Option<f64>>> = scored
        .iter()
        .map(|i| judges.iter().map(|j| i.per_judge.get(j).copied()).collect())
        .collect();
    let clusters: Vec<&str> = scored.iter().map(|i| i.dialogue_id.as_str()).collect();
    let all: Vec<usize> = (0..scores.len()).collect();
    let (mean, offsets) = adjusted_at(&scores, &all, judges.len())?;
    Some(Estimate {
        n: scores.len(),
        mean: finite(mean),
        ci: cluster_interval(&clusters, r, |idx| {
            adjusted_at(&scores, idx, judges.len()).map(|x| x.0)
        }),
        offsets: judges.iter().cloned().zip(offsets).collect(),
    })
}

fn rate_bins(edges: &[u64], values: &[(u64, bool)]) -> Vec<RateBin> {
    edges
        .iter()
        .enumerate()
        .map(|(k, &lower)| {
            let upper = edges.get(k + 1).copied();
            let inside: Vec<bool> = values
                .iter()
                .filter(|(v, _)| *v >= lower && upper.is_none_or(|u| *v < u))
                .map(|(_, failed)| *failed)
                .collect();
            let failed = inside.iter().filter(|f| **f).count();
            RateBin {
                lower,
                upper,
                judgements: inside.len(),
                failed,
                rate: (!inside.is_empty()).then(|| failed as f64 / inside.len() as f64),
            }
        })
        .collect()
}

/// Turn-number bins of the failure table.
pub(crate) const TURN_BINS: [u64; 6] = [1, 2, 3, 4, 6, 9];
/// Prompt-token bins of the failure table.
pub(crate) const PROMPT_TOKEN_BINS: [u64; 6] = [0, 500, 1000, 2000, 4000, 8000];

/// Failure rates by turn depth and prompt length, overall (`all`) and per judge. A
/// judgement's prompt length is `prompt_tokens` of its item (tiktoken, as sent), else the
/// provider's count.
pub(crate) fn failure_rates(
    judgements: &[Judgement],
    prompt_tokens: &HashMap<crate::judges::context::ItemKey, u64>,
) -> BTreeMap<String, FailureRates> {
    let mut out = BTreeMap::new();
    let mut names: Vec<&str> = judgements.iter().map(|j| j.judge.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut groups: Vec<(&str, Vec<&Judgement>)> = vec![("all", judgements.iter().collect())];
    for n in names {
        groups.push((n, judgements.iter().filter(|j| j.judge == n).collect()));
    }
    for (name, js) in groups {
        let turns: Vec<(u64, bool)> = js.iter().map(|j| (j.turn as u64, !j.ok())).collect();
        let tokens: Vec<(u64, bool)> = js
            .iter()
            .filter_map(|j| {
                let key = (j.dimension, j.turn_id.clone(), j.passage_id.clone());
                let t = prompt_tokens
                    .get(&key)
                    .copied()
                    .or((j.prompt_tokens > 0).then_some(j.prompt_tokens))?;
                Some((t, !j.ok()))
            })
            .collect();
        out.insert(
            name.to_string(),
            FailureRates {
                judgements: js.len(),
                failed: js.iter().filter(|j| !j.ok()).count(),
                by_turn: rate_bins(&TURN_BINS, &turns),
                by_prompt_tokens: rate_bins(&PROMPT_TOKEN_BINS, &tokens),
            },
        );
    }
    out
}

fn agreement_of(
    dim: Dimension,
    items: &[&ItemScore],
    judgements: &[&Judgement],
    judges: &[String],
) -> Agreement {
    if judges.len() < 2 {
        return Agreement {
            krippendorff_alpha_ordinal: None,
            fleiss_kappa: None,
            units: 0,
            note: Some("agreement needs at least two judges".into()),
        };
    }
    let data: Vec<Vec<Option<f64>>> = judges
        .iter()
        .map(|j| items.iter().map(|i| i.per_judge.get(j).copied()).collect())
        .collect();
    let units = items.iter().filter(|i| i.per_judge.len() >= 2).count();
    let alpha = agreement::krippendorff_alpha(&data, Level::Ordinal)
        .ok()
        .and_then(finite);
    let mut note = None;
    if alpha.is_none() {
        note = Some(
            "alpha undefined (fewer than two units rated by two judges, or no variation)".into(),
        );
    }
    let fleiss = if dim == Dimension::Completeness {
        pick_kappa(judgements, judges.len())
    } else {
        None
    };
    Agreement {
        krippendorff_alpha_ordinal: alpha,
        fleiss_kappa: fleiss,
        units,
        note,
    }
}

/// Fleiss' kappa of discriminability answers. Units: (item, trial, sample) answered validly
/// by every judge; categories: the *passage* picked (or the abstention, `none` / `several`).
/// Each judge sees its own permutation of the pool, so positions are not comparable across
/// judges; passages are. The chance agreement comes from the pooled category shares, which
/// are small when pools share few passages: the kappa is then close to the raw agreement.
pub(crate) fn pick_kappa(judgements: &[&Judgement], judges: usize) -> Option<f64> {
    let mut by_unit: BTreeMap<(&str, Option<&str>, usize, u32), Vec<&str>> = BTreeMap::new();
    for j in judgements.iter().filter(|j| j.ok()) {
        let answer = match (&j.pick_passage_id, j.abstention) {
            (Some(p), None) => p.as_str(),
            (None, Some(a)) => a.name(),
            _ => continue,
        };
        if let Some(t) = j.trial {
            by_unit
                .entry((j.turn_id.as_str(), j.passage_id.as_deref(), t, j.sample))
                .or_default()
                .push(answer);
        }
    }
    let complete: Vec<&Vec<&str>> = by_unit.values().filter(|v| v.len() == judges).collect();
    let mut categories: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &complete {
        for a in v.iter() {
            let n = categories.len();
            categories.entry(a).or_insert(n);
        }
    }
    let counts: Vec<Vec<usize>> = complete
        .iter()
        .map(|v| {
            let mut c = vec![0usize; categories.len()];
            for a in v.iter() {
                c[categories[a]] += 1;
            }
            c
        })
        .collect();
    if counts.len() < 2 {
        return None;
    }
    agreement::fleiss_kappa(&counts).ok().and_then(finite)
}

/// Gold pick-rate by position per judge, for the most common pool size.
pub(crate) fn position_bias(judgements: &[&Judgement], judges: &[String]) -> Vec<PositionBias> {
    let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
    for j in judgements {
        if let Some(p) = &j.pool {
            *sizes.entry(p.len()).or_default() += 1;
        }
    }
    let Some((&size, _)) = sizes.iter().max_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0))) else {
        return Vec::new();
    };
    judges
        .iter()
        .map(|name| {
            let mut gold_at = vec![0usize; size];
            let mut gold_picked = vec![0usize; size];
            let mut picked_at = vec![0u64; size];
            // picks per position within each item (the trials of one item are a cluster)
            let mut per_item: BTreeMap<(&str, Option<&str>), Vec<u64>> = BTreeMap::new();
            for j in judgements.iter().filter(|j| {
                &j.judge == name && j.ok() && j.pool.as_ref().is_some_and(|p| p.len() == size)
            }) {
                let (Some(g), Some(p)) = (j.gold_position, j.pick_position) else {
                    continue;
                };
                if g == 0 || g > size || p == 0 || p > size {
                    continue;
                }
                gold_at[g - 1] += 1;
                if g == p {
                    gold_picked[g - 1] += 1;
                }
                picked_at[p - 1] += 1;
                per_item
                    .entry((j.turn_id.as_str(), j.passage_id.as_deref()))
                    .or_insert_with(|| vec![0; size])[p - 1] += 1;
            }
            let total: u64 = picked_at.iter().sum();
            let chi = if total > 0 && size >= 2 {
                agreement::chi_square_uniform(&picked_at).ok()
            } else {
                None
            };
            let items: Vec<Vec<u64>> = per_item.into_values().collect();
            let deff = design_effect(&items, size);
            let adjusted = chi.as_ref().zip(deff).and_then(|(c, d)| {
                chi_square_p(c.statistic / d, c.df).map(|p| (c.statistic / d, p))
            });
            PositionBias {
                judge: name.clone(),
                pool_size: size,
                gold_at,
                gold_picked,
                picked_at: picked_at.iter().map(|&x| x as usize).collect(),
                chi_square: adjusted.and_then(|a| finite(a.0)),
                df: chi.as_ref().map(|c| c.df),
                p_value: adjusted.and_then(|a| finite(a.1)),
                items: items.len(),
                design_effect: deff,
                chi_square_independent: chi.as_ref().and_then(|c| finite(c.statistic)),
                p_value_independent: chi.as_ref().and_then(|c| finite(c.p_value)),
            }
        })
        .collect()
}

/// Upper tail of the chi-square distribution.
fn chi_square_p(x: f64, df: usize) -> Option<f64> {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    let d = ChiSquared::new(df as f64).ok()?;
    finite(d.sf(x))
}

/// Rao-Scott first-order design effect of the position shares when picks come in clusters
/// (`items[c][k]`: picks of position k in item c): the mean over positions of the clustered
/// (ratio-estimator) variance over the independent-trials variance, weighted by (1 - 1/P) as
/// under uniform positions, and never below 1. `None` with fewer than two items.
pub(crate) fn design_effect(items: &[Vec<u64>], size: usize) -> Option<f64> {
    let c = items.len();
    if c < 2 || size < 2 {
        return None;
    }
    let m: Vec<f64> = items.iter().map(|v| v.iter().sum::<u64>() as f64).collect();
    let total: f64 = m.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut num = 0.0;
    let mut den = 0.0;
    for k in 0..size {
        let p = items.iter().map(|v| v[k] as f64).sum::<f64>() / total;
        if p <= 0.0 || p >= 1.0 {
            continue;
        }
        let var_cluster = c as f64 / (c as f64 - 1.0)
            * items
                .iter()
                .zip(&m)
                .map(|(v, mc)| (v[k] as f64 - p * mc).powi(2))
                .sum::<f64>()
            / (total * total);
        let var_srs = p * (1.0 - p) / total;
        num += (1.0 - 1.0 / size as f64) * var_cluster / var_srs;
        den += 1.0 - 1.0 / size as f64;
    }
    (den > 0.0).then(|| (num / den).max(1.0))
}

/// Length of the picked passage against the rest of its pool, per judge and for all judges'
/// picks together (`ensemble`).
pub(crate) fn pool_length_bias(
    judgements: &[&Judgement],
    judges: &[String],
    lengths: &Lengths,
    r: &Resampling,
) -> Vec<PoolLengthBias> {
    let trials = pool_trials(judgements, lengths);
    let mut names = vec!["ensemble".to_string()];
    names.extend(judges.iter().cloned());
    names
        .into_iter()
        .map(|name| {
            let mine: Vec<&Trial<'_>> = trials
                .iter()
                .filter(|t| name == "ensemble" || t.judge == name)
                .collect();
            let all: Vec<usize> = (0..mine.len()).collect();
            let picked: Vec<f64> = mine.iter().map(|t| t.picked).collect();
            let gold: Vec<f64> = mine.iter().map(|t| t.gold).collect();
            let excess: Vec<f64> = mine.iter().map(|t| t.picked - t.gold).collect();
            let share = |f: &dyn Fn(&Trial<'_>) -> bool| {
                (!mine.is_empty())
                    .then(|| mine.iter().filter(|t| f(t)).count() as f64 / mine.len() as f64)
            };
            let clusters: Vec<&str> = mine.iter().map(|t| t.item.as_str()).collect();
            let r = Resampling {
                seed: crate::seed::derive(r.seed, &["pool-length", &name]),
                ..*r
            };
            PoolLengthBias {
                picks: mine.len(),
                picked_minus_rest: mean_at(&picked, &all),
                gold_minus_rest: mean_at(&gold, &all),
                excess: mean_at(&excess, &all),
                excess_ci: cluster_interval(&clusters, &r, |idx| mean_at(&excess, idx)),
                longest_picked: share(&|t| t.longest_picked),
                longest_is_gold: share(&|t| t.longest_gold),
                judge: name,
            }
        })
        .collect()
}

/// The valid picks whose pool's lengths are all known.
fn pool_trials<'a>(judgements: &[&'a Judgement], lengths: &Lengths) -> Vec<Trial<'a>> {
    let mut trials = Vec::new();
    for j in judgements.iter().filter(|j| j.ok()) {
        let (Some(pool), Some(pick), Some(gold)) = (&j.pool, j.pick_position, j.gold_position)
        else {
            continue;
        };
        if pool.len() < 2 || pick == 0 || pick > pool.len() || gold == 0 || gold > pool.len() {
            continue;
        }
        let Some(words) = pool
            .iter()
            .map(|p| lengths.passage_words.get(p).map(|&w| w as f64))
            .collect::<Option<Vec<f64>>>()
        else {
            continue;
        };
        let total: f64 = words.iter().sum();
        let rest = |i: usize| words[i] - (total - words[i]) / (words.len() - 1) as f64;
        let max = words.iter().copied().fold(f64::MIN, f64::max);
        trials.push(Trial {
            judge: j.judge.as_str(),
            item: format!(
                "{}\u{1f}{}",
                j.turn_id,
                j.passage_id.as_deref().unwrap_or_default()
            ),
            picked: rest(pick - 1),
            gold: rest(gold - 1),
            longest_picked: words[pick - 1] >= max,
            longest_gold: words[gold - 1] >= max,
        });
    }
    trials
}

/// One pick out of a pool whose passages all have a length: the picked and the gold
/// passage's length minus the rest of the pool's mean.
struct Trial<'a> {
    judge: &'a str,
    item: String,
    picked: f64,
    gold: f64,
    longest_picked: bool,
    longest_gold: bool,
}

/// Word counts used by the length-bias check.
#[derive(Debug, Default, Clone)]
pub(crate) struct Lengths {
    pub passage_words: HashMap<String, usize>,
    pub answer_words: HashMap<String, usize>,
}

/// Pearson correlation between item score and length (passage words for alignment and
/// completeness, answer words for faithfulness and quality), for the ensemble and each judge.
pub(crate) fn length_bias(
    dim: Dimension,
    items: &[&ItemScore],
    judges: &[String],
    lengths: &Lengths,
) -> Vec<LengthBias> {
    let what = if dim.needs_answer() {
        "answer_words"
    } else {
        "passage_words"
    };
    let len_of = |i: &ItemScore| -> Option<usize> {
        if dim.needs_answer() {
            lengths.answer_words.get(&i.turn_id).copied()
        } else {
            i.passage_id
                .as_ref()
                .and_then(|p| lengths.passage_words.get(p).copied())
        }
    };
    let mut out = Vec::new();
    let mut names = vec!["ensemble".to_string()];
    names.extend(judges.iter().cloned());
    for name in names {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in items {
            let s = if name == "ensemble" {
                i.score
            } else {
                i.per_judge.get(&name).copied()
            };
            if let (Some(s), Some(l)) = (s, len_of(i)) {
                x.push(s);
                y.push(l as f64);
            }
        }
        let c = if x.len() >= 3 {
            agreement::pearson(&x, &y).ok()
        } else {
            None
        };
        out.push(LengthBias {
            dimension: dim,
            judge: name,
            length_of: what.to_string(),
            pearson: c.as_ref().and_then(|c| finite(c.r)),
            p_value: c.as_ref().and_then(|c| finite(c.p_value)),
            n: x.len(),
        });
    }
    out
}

#[cfg(test)]
mod tests;
