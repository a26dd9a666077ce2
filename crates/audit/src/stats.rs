//! Statistics of an audit: dimension means with cluster-bootstrap confidence intervals (turns
//! of one dialogue are resampled together), per-judge means, inter-judge agreement, score
//! histograms, and bias diagnostics (gold pick-rate by position, score vs length).

use std::collections::{BTreeMap, HashMap};

use mtr_metrics::agreement::{self, Level};
use mtr_metrics::stats::{BootstrapOptions, cluster_bootstrap_ci};

use crate::aggregate::ItemScore;
use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::record::Judgement;
use crate::summary::{
    Agreement, Bin, DimensionSummary, Interval, JudgeScore, LengthBias, PositionBias,
};

/// Whether an item is flagged as a probable label problem.
pub fn is_flagged(item: &ItemScore, s: &AuditSettings) -> bool {
    match (item.dimension, item.score) {
        (Dimension::Completeness, Some(x)) => x < s.flag_share_below || item.suggestion.is_some(),
        (Dimension::Completeness, None) => item.suggestion.is_some(),
        (_, Some(x)) => x < s.flag_rating_below,
        (_, None) => false,
    }
}

/// Cluster-bootstrap CI of the mean of `values` (one per item), clustered by dialogue.
pub fn interval(
    values: &[f64],
    clusters: &[&str],
    s: &AuditSettings,
    salt: &str,
) -> Option<Interval> {
    let mut distinct: Vec<&str> = clusters.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if values.len() < 2 || distinct.len() < 2 {
        return None;
    }
    let opts = BootstrapOptions {
        resamples: s.resamples,
        level: s.confidence,
        seed: crate::seed::derive(s.seed, &["bootstrap", salt]),
    };
    let ci = cluster_bootstrap_ci(values, clusters, &opts).ok()?;
    (ci.lower.is_finite() && ci.upper.is_finite()).then_some(Interval {
        lower: ci.lower,
        upper: ci.upper,
        level: ci.level,
        resamples: ci.resamples,
        clusters: distinct.len(),
    })
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
pub fn dimension_summary(
    dim: Dimension,
    items: &[&ItemScore],
    judgements: &[&Judgement],
    judges: &[String],
    s: &AuditSettings,
) -> DimensionSummary {
    let scored: Vec<&&ItemScore> = items.iter().filter(|i| i.score.is_some()).collect();
    let values: Vec<f64> = scored.iter().filter_map(|i| i.score).collect();
    let clusters: Vec<&str> = scored.iter().map(|i| i.dialogue_id.as_str()).collect();
    let mean = finite(crate::aggregate::mean(&values));
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
                mean: finite(crate::aggregate::mean(&v)),
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
    DimensionSummary {
        title: dim.title().to_string(),
        scale: [dim.scale().0, dim.scale().1],
        items: items.len(),
        scored: values.len(),
        unscored: items.len() - values.len(),
        mean,
        ci,
        flagged: items.iter().filter(|i| is_flagged(i, s)).count(),
        flag_threshold: threshold,
        per_judge,
        agreement: agreement_of(dim, items, judgements, judges),
        histogram: histogram(dim, &values),
        verdicts,
    }
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
        // units: (item, trial) answered validly by every judge; categories: chosen position
        let mut by_unit: BTreeMap<(&str, Option<&str>, usize), Vec<usize>> = BTreeMap::new();
        let mut max_pos = 0;
        for j in judgements.iter().filter(|j| j.ok()) {
            if let (Some(t), Some(p)) = (j.trial, j.pick_position) {
                by_unit
                    .entry((j.turn_id.as_str(), j.passage_id.as_deref(), t))
                    .or_default()
                    .push(p);
                max_pos = max_pos.max(p);
            }
        }
        let counts: Vec<Vec<usize>> = by_unit
            .values()
            .filter(|v| v.len() == judges.len())
            .map(|v| {
                let mut c = vec![0usize; max_pos];
                for &p in v {
                    c[p - 1] += 1;
                }
                c
            })
            .collect();
        if counts.len() >= 2 {
            agreement::fleiss_kappa(&counts).ok().and_then(finite)
        } else {
            None
        }
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

/// Gold pick-rate by position per judge, for the most common pool size.
pub fn position_bias(judgements: &[&Judgement], judges: &[String]) -> Vec<PositionBias> {
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
            }
            let total: u64 = picked_at.iter().sum();
            let chi = if total > 0 && size >= 2 {
                agreement::chi_square_uniform(&picked_at).ok()
            } else {
                None
            };
            PositionBias {
                judge: name.clone(),
                pool_size: size,
                gold_at,
                gold_picked,
                picked_at: picked_at.iter().map(|&x| x as usize).collect(),
                chi_square: chi.as_ref().and_then(|c| finite(c.statistic)),
                df: chi.as_ref().map(|c| c.df),
                p_value: chi.as_ref().and_then(|c| finite(c.p_value)),
            }
        })
        .collect()
}

/// Word counts used by the length-bias check.
#[derive(Debug, Default, Clone)]
pub struct Lengths {
    pub passage_words: HashMap<String, usize>,
    pub answer_words: HashMap<String, usize>,
}

/// Pearson correlation between item score and length (passage words for alignment and
/// completeness, answer words for faithfulness and quality), for the ensemble and each judge.
pub fn length_bias(
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
mod tests {
    use super::*;
    use crate::aggregate::score_items;
    use crate::aggregate::tests::judgement;

    #[test]
    fn histogram_bins_cover_the_scale() {
        let h = histogram(Dimension::Alignment, &[1.0, 1.49, 5.0, 4.5, 3.0]);
        assert_eq!(h.len(), 8);
        assert_eq!(h[0].count, 2);
        assert_eq!(h[7].count, 2);
        assert_eq!(h[4].count, 1);
        let h = histogram(Dimension::Completeness, &[0.0, 1.0, 1.0 / 3.0, 0.1]);
        assert_eq!(h.len(), 10);
        assert_eq!(
            (h[0].count, h[1].count, h[3].count, h[9].count),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn summary_counts_failures_and_flags() {
        let s = AuditSettings {
            resamples: 200,
            ..Default::default()
        };
        let mut js = Vec::new();
        for (d, score_a, score_b) in [
            ("d1", Some(5.0), Some(4.0)),
            ("d2", Some(1.0), Some(2.0)),
            ("d3", Some(4.0), None),
            ("d4", Some(3.0), Some(3.0)),
        ] {
            js.push(judgement(
                Dimension::Alignment,
                &format!("{d}::1"),
                Some("p"),
                "a",
                None,
                score_a,
                None,
            ));
            js.push(judgement(
                Dimension::Alignment,
                &format!("{d}::1"),
                Some("p"),
                "b",
                None,
                score_b,
                None,
            ));
        }
        let items = score_items(&js, 2, 1);
        let judges = vec!["a".to_string(), "b".to_string()];
        let ir: Vec<&ItemScore> = items.iter().collect();
        let jr: Vec<&Judgement> = js.iter().collect();
        let sum = dimension_summary(Dimension::Alignment, &ir, &jr, &judges, &s);
        assert_eq!(sum.items, 4);
        assert_eq!(sum.scored, 4);
        assert_eq!(sum.per_judge["b"].failed, 1);
        assert_eq!(sum.per_judge["b"].n, 3);
        assert_eq!(sum.flagged, 1); // d2: 1.5 < 3
        let m = sum.mean.unwrap();
        assert!((m - (4.5 + 1.5 + 4.0 + 3.0) / 4.0).abs() < 1e-12);
        let ci = sum.ci.unwrap();
        assert!(ci.lower <= m && m <= ci.upper);
        assert_eq!(ci.clusters, 4);
        assert_eq!(sum.verdicts["a"], vec![1, 0, 1, 1, 1]);
        assert!(sum.agreement.krippendorff_alpha_ordinal.unwrap() > 0.5);
    }

    #[test]
    fn position_table_counts_gold_and_picks() {
        let mut js = Vec::new();
        for (t, gold, pick) in [(0usize, 1usize, 1usize), (1, 2, 1), (2, 3, 1)] {
            let mut j = judgement(
                Dimension::Completeness,
                "d::1",
                Some("g"),
                "a",
                Some(t),
                Some(f64::from(u8::from(gold == pick))),
                Some("x"),
            );
            j.pool = Some(vec!["1".into(), "2".into(), "3".into()]);
            j.gold_position = Some(gold);
            j.pick_position = Some(pick);
            js.push(j);
        }
        let jr: Vec<&Judgement> = js.iter().collect();
        let pb = position_bias(&jr, &["a".to_string()]);
        assert_eq!(pb[0].gold_at, vec![1, 1, 1]);
        assert_eq!(pb[0].gold_picked, vec![1, 0, 0]);
        assert_eq!(pb[0].picked_at, vec![3, 0, 0]);
        assert_eq!(pb[0].df, Some(2));
        assert!((pb[0].chi_square.unwrap() - 6.0).abs() < 1e-9);
    }
}
