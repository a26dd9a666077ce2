//! Per-query measure values from a ranked relevance list, written to follow trec_eval 10.0's
//! C code operation for operation (same summation order, same divisions), so that results are
//! equal to the last bit, not just to four decimals.
//!
//! Conventions (trec_eval's): a document is relevant when its grade >= the relevance level
//! (`-l`, default 1); R (num_rel) counts judged documents with grade >= level; nDCG ignores the
//! level and uses the raw grade as gain (or `-m ndcg.level=gain` gains); cutoffs beyond the
//! ranking are filled with non-relevant documents; a query without relevant documents scores 0.

use crate::input::{Compat, QrelsQuery};
use crate::measure::{Family, MeasureSet, Params};
use crate::rank::{NONPOOL, UNJUDGED};

/// trec_eval's floor for gm_map.
pub(crate) const MIN_GEO_MEAN: f64 = 0.00001;

pub(crate) struct QueryInput<'r> {
    pub rels: &'r [i32],
    pub qrels: &'r QrelsQuery,
    pub level: i64,
    pub compat: Compat,
}

struct Ctx<'r> {
    rels: &'r [i32],
    level: i64,
    num_rel: u64,
    levels: &'r [(i64, u64)],
    compat: Compat,
}

impl Ctx<'_> {
    #[inline]
    fn is_rel(&self, r: i32) -> bool {
        i64::from(r) >= self.level
    }
    fn num_rel_ret(&self) -> u64 {
        self.rels
            .iter()
            .filter(|r| **r >= 0 && self.is_rel(**r))
            .count() as u64
    }
}

/// Appends one value per column of `set` (in column order).
pub(crate) fn compute(set: &MeasureSet, q: &QueryInput<'_>, out: &mut Vec<f64>) {
    let cx = Ctx {
        rels: q.rels,
        level: q.level,
        num_rel: q.qrels.num_rel(q.level),
        levels: &q.qrels.levels,
        compat: q.compat,
    };
    for (family, params) in set.iter() {
        let cuts: &[usize] = match params {
            Params::Cutoffs(c) => c,
            _ => &[],
        };
        match family {
            Family::RunId => out.push(f64::NAN),
            Family::NumQ => out.push(1.0),
            Family::NumRet => out.push(cx.rels.len() as f64),
            Family::NumRel => out.push(cx.num_rel as f64),
            Family::NumRelRet => out.push(cx.num_rel_ret() as f64),
            Family::Map => out.push(ap(&cx)),
            Family::GmMap => out.push(gm_ap(&cx)),
            Family::Rprec => out.push(rprec(&cx)),
            Family::Bpref => out.push(bpref(&cx)),
            Family::RecipRank => out.push(recip_rank(&cx, usize::MAX)),
            Family::IprecAtRecall => {
                if let Params::Levels(l) = params {
                    iprec_at_recall(&cx, l, out);
                }
            }
            Family::P => precision(&cx, cuts, out),
            Family::Recall => recall(&cx, cuts, out),
            Family::Ndcg => {
                let pairs: &[(i64, f64)] = match params {
                    Params::Gains { pairs, .. } => pairs,
                    _ => &[],
                };
                out.push(ndcg(&cx, pairs));
            }
            Family::NdcgCut => ndcg_cut(&cx, cuts, Gain::Linear, out),
            Family::MapCut => map_cut(&cx, cuts, false, out),
            Family::Success => success(&cx, cuts, |r| cx.is_rel(r), out),
            Family::NdcgExpCut => ndcg_cut(&cx, cuts, Gain::Exponential, out),
            Family::MapCappedCut => map_cut(&cx, cuts, true, out),
            Family::SuccessStrict => success(&cx, cuts, |r| r >= 2, out),
            Family::SuccessLenient => success(&cx, cuts, |r| r >= 1, out),
            Family::RecipRankCut => {
                for k in cuts {
                    out.push(recip_rank(&cx, *k));
                }
            }
            Family::Judged => judged(&cx, cuts, out),
        }
    }
}

fn ap(cx: &Ctx<'_>) -> f64 {
    let mut sum = 0.0;
    let mut rel_so_far = 0u64;
    for (i, r) in cx.rels.iter().enumerate() {
        if cx.is_rel(*r) {
            rel_so_far += 1;
            sum += rel_so_far as f64 / (i + 1) as f64;
        }
    }
    if rel_so_far > 0 {
        sum / cx.num_rel as f64
    } else {
        0.0
    }
}

fn gm_ap(cx: &Ctx<'_>) -> f64 {
    ap(cx).max(MIN_GEO_MEAN).ln()
}

fn rprec(cx: &Ctx<'_>) -> f64 {
    let n = (cx.rels.len() as u64).min(cx.num_rel) as usize;
    if n == 0 {
        return 0.0;
    }
    let rel = cx.rels[..n].iter().filter(|r| cx.is_rel(**r)).count();
    rel as f64 / cx.num_rel as f64
}

fn bpref(cx: &Ctx<'_>) -> f64 {
    let num_nonrel: u64 = cx
        .levels
        .iter()
        .filter(|(g, _)| *g < cx.level)
        .map(|(_, c)| c)
        .sum();
    let mut nonrel_so_far = 0u64;
    let mut bpref = 0.0;
    for r in cx.rels {
        if *r == NONPOOL || *r == UNJUDGED {
            continue;
        }
        if *r >= 0 && i64::from(*r) < cx.level {
            nonrel_so_far += 1;
        } else if nonrel_so_far > 0 {
            bpref +=
                1.0 - (nonrel_so_far.min(cx.num_rel) as f64 / num_nonrel.min(cx.num_rel) as f64);
        } else {
            bpref += 1.0;
        }
    }
    if cx.num_rel > 0 {
        bpref /= cx.num_rel as f64;
    }
    bpref
}

fn recip_rank(cx: &Ctx<'_>, k: usize) -> f64 {
    cx.rels
        .iter()
        .take(k)
        .position(|r| cx.is_rel(*r))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

fn iprec_at_recall(cx: &Ctx<'_>, levels: &[f64], out: &mut Vec<f64>) {
    let base = out.len();
    out.resize(base + levels.len(), 0.0);
    let num_rel_ret = cx.num_rel_ret() as i64;
    let num_ret = cx.rels.len();
    // Recall level -> number of relevant documents: trec_eval 10 rounds (lround); 9.x and
    // earlier added 0.9 and truncated.
    let cutoffs: Vec<i64> = levels
        .iter()
        .map(|p| match cx.compat {
            Compat::TrecEval10 => (p * cx.num_rel as f64).round() as i64,
            Compat::TrecEval9 => (p * cx.num_rel as f64 + 0.9) as i64,
        })
        .collect();
    let mut current: isize = levels.len() as isize - 1;
    while current >= 0 && cutoffs[current as usize] > num_rel_ret {
        current -= 1;
    }
    let mut int_precis = num_rel_ret as f64 / num_ret as f64;
    let mut rel_so_far = num_rel_ret;
    let mut i = num_ret;
    while i > 0 && rel_so_far > 0 {
        let precis = rel_so_far as f64 / i as f64;
        if int_precis < precis {
            int_precis = precis;
        }
        if cx.is_rel(cx.rels[i - 1]) {
            while current >= 0 && rel_so_far == cutoffs[current as usize] {
                out[base + current as usize] = int_precis;
                current -= 1;
            }
            rel_so_far -= 1;
        }
        i -= 1;
    }
    while current >= 0 {
        out[base + current as usize] = int_precis;
        current -= 1;
    }
}

/// Number of relevant documents in the top k, for each cutoff k (ascending).
fn rel_at_cutoffs(
    cx: &Ctx<'_>,
    cuts: &[usize],
    is_rel: impl Fn(i32) -> bool,
    mut emit: impl FnMut(usize, u64),
) {
    let mut ci = 0;
    let mut rel_so_far = 0u64;
    for (i, r) in cx.rels.iter().enumerate() {
        if ci < cuts.len() && i == cuts[ci] {
            emit(ci, rel_so_far);
            ci += 1;
            if ci == cuts.len() {
                return;
            }
        }
        if is_rel(*r) {
            rel_so_far += 1;
        }
    }
    while ci < cuts.len() {
        emit(ci, rel_so_far);
        ci += 1;
    }
}

fn precision(cx: &Ctx<'_>, cuts: &[usize], out: &mut Vec<f64>) {
    rel_at_cutoffs(
        cx,
        cuts,
        |r| cx.is_rel(r),
        |ci, rel| out.push(rel as f64 / cuts[ci] as f64),
    );
}

fn recall(cx: &Ctx<'_>, cuts: &[usize], out: &mut Vec<f64>) {
    if cx.num_rel == 0 {
        out.extend(std::iter::repeat_n(0.0, cuts.len()));
        return;
    }
    rel_at_cutoffs(
        cx,
        cuts,
        |r| cx.is_rel(r),
        |_, rel| out.push(rel as f64 / cx.num_rel as f64),
    );
}

fn success(cx: &Ctx<'_>, cuts: &[usize], is_rel: impl Fn(i32) -> bool, out: &mut Vec<f64>) {
    rel_at_cutoffs(cx, cuts, is_rel, |_, rel| {
        out.push(if rel > 0 { 1.0 } else { 0.0 })
    });
}

/// ir_measures' `Judged@k`: of the top `min(k, retrieved)` documents, the share the qrels
/// judge with any grade (0 and negative grades included); 0 when nothing was retrieved (a
/// query `-c` fills in).
fn judged(cx: &Ctx<'_>, cuts: &[usize], out: &mut Vec<f64>) {
    let judged = |r: i32| r != NONPOOL;
    let retrieved = cx.rels.len();
    rel_at_cutoffs(cx, cuts, judged, |ci, n| {
        let shown = cuts[ci].min(retrieved);
        out.push(if shown == 0 {
            0.0
        } else {
            n as f64 / shown as f64
        });
    });
}

fn map_cut(cx: &Ctx<'_>, cuts: &[usize], capped: bool, out: &mut Vec<f64>) {
    let base = out.len();
    out.resize(base + cuts.len(), 0.0);
    if cx.num_rel == 0 {
        return;
    }
    let denom = |k: usize| -> f64 {
        if capped {
            cx.num_rel.min(k as u64) as f64
        } else {
            cx.num_rel as f64
        }
    };
    let mut ci = 0;
    let mut rel_so_far = 0u64;
    let mut sum = 0.0;
    for (i, r) in cx.rels.iter().enumerate() {
        if i == cuts[ci] {
            out[base + ci] = sum / denom(cuts[ci]);
            ci += 1;
            if ci == cuts.len() {
                return;
            }
        }
        if cx.is_rel(*r) {
            rel_so_far += 1;
            sum += rel_so_far as f64 / (i + 1) as f64;
        }
    }
    while ci < cuts.len() {
        out[base + ci] = sum / denom(cuts[ci]);
        ci += 1;
    }
}

/// One entry of trec_eval's gain table for nDCG.
#[derive(Debug, Clone, Copy)]
struct RelGain {
    level: i64,
    count: u64,
    gain: f64,
}

/// trec_eval's `setup_gains`: explicit `level=gain` pairs first, then every judged level
/// (grade >= 0) not given explicitly with gain = level; sorted by increasing gain with its
/// comparator, which truncates the gain difference to an int (so gains closer than 1 compare
/// equal); glibc's qsort is a stable merge sort here, so we insertion-sort.
fn setup_gains(levels: &[(i64, u64)], pairs: &[(i64, f64)]) -> Vec<RelGain> {
    let mut gains: Vec<RelGain> = pairs
        .iter()
        .map(|(l, g)| RelGain {
            level: *l,
            count: 0,
            gain: *g,
        })
        .collect();
    let n_pairs = gains.len();
    for (level, count) in levels {
        if let Some(g) = gains[..n_pairs].iter_mut().find(|g| g.level == *level) {
            g.count = *count;
        } else {
            gains.push(RelGain {
                level: *level,
                count: *count,
                gain: *level as f64,
            });
        }
    }
    let cmp = |a: &RelGain, b: &RelGain| (a.gain - b.gain) as i32;
    for i in 1..gains.len() {
        let mut j = i;
        while j > 0 && cmp(&gains[j - 1], &gains[j]) > 0 {
            gains.swap(j - 1, j);
            j -= 1;
        }
    }
    gains
}

#[inline]
fn get_gain(gains: &[RelGain], rel: i32) -> f64 {
    gains
        .iter()
        .find(|g| g.level == i64::from(rel))
        .map_or(0.0, |g| g.gain)
}

/// trec_eval's `ndcg` (te_calc_ndcg), including its ideal-ranking walk over the gain table.
fn ndcg(cx: &Ctx<'_>, pairs: &[(i64, f64)]) -> f64 {
    let gains = setup_gains(cx.levels, pairs);
    let rels = cx.rels;
    let mut results_dcg = 0.0;
    let mut ideal_dcg = 0.0;
    let mut cur: isize = gains.len() as isize - 1;
    let mut ideal_gain = if cur >= 0 {
        gains[cur as usize].gain
    } else {
        0.0
    };
    let mut num_at_level: u64 = 0;
    let mut i = 0usize;
    let advance = |cur: &mut isize, num_at_level: &mut u64, ideal_gain: &mut f64| {
        while *cur >= 0 && *num_at_level > gains[*cur as usize].count {
            *num_at_level = 1;
            *cur -= 1;
            *ideal_gain = if *cur >= 0 {
                gains[*cur as usize].gain
            } else {
                0.0
            };
        }
    };
    while i < rels.len() && ideal_gain > 0.0 {
        let g = get_gain(&gains, rels[i]);
        if g != 0.0 {
            results_dcg += g / ((i + 2) as f64).log2();
        }
        num_at_level += 1;
        advance(&mut cur, &mut num_at_level, &mut ideal_gain);
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    while i < rels.len() {
        let g = get_gain(&gains, rels[i]);
        if g != 0.0 {
            results_dcg += g / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    while ideal_gain > 0.0 {
        num_at_level += 1;
        advance(&mut cur, &mut num_at_level, &mut ideal_gain);
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    if ideal_dcg > 0.0 {
        results_dcg / ideal_dcg
    } else {
        0.0
    }
}

#[derive(Clone, Copy)]
enum Gain {
    /// The grade itself (trec_eval's ndcg_cut).
    Linear,
    /// 2^grade - 1 (Burges et al.).
    Exponential,
}

impl Gain {
    #[inline]
    fn of(self, grade: i64) -> f64 {
        match self {
            Gain::Linear => grade as f64,
            Gain::Exponential => (grade as f64).exp2() - 1.0,
        }
    }
}

/// nDCG at each cutoff: DCG over the top k with gain of positive grades and discount
/// log2(rank + 1), over the ideal DCG of the k best judged documents.
fn ndcg_cut(cx: &Ctx<'_>, cuts: &[usize], gain: Gain, out: &mut Vec<f64>) {
    let base = out.len();
    out.resize(base + cuts.len(), 0.0);
    // DCG at cutoffs.
    let mut ci = 0;
    let mut sum = 0.0;
    for (i, r) in cx.rels.iter().enumerate() {
        if i == cuts[ci] {
            out[base + ci] = sum;
            ci += 1;
            if ci == cuts.len() {
                break;
            }
        }
        if *r > 0 {
            sum += gain.of(i64::from(*r)) / ((i + 2) as f64).log2();
        }
    }
    while ci < cuts.len() {
        out[base + ci] = sum;
        ci += 1;
    }
    // Ideal DCG at cutoffs: positive grades, best first.
    let mut ci = 0;
    let mut ideal = 0.0;
    let mut i = 0usize;
    'levels: for (grade, count) in cx.levels.iter().rev() {
        if *grade <= 0 {
            break;
        }
        let g = gain.of(*grade);
        for _ in 0..*count {
            if i == cuts[ci] {
                if ideal > 0.0 {
                    out[base + ci] /= ideal;
                }
                ci += 1;
                if ci == cuts.len() {
                    break 'levels;
                }
            }
            ideal += g / ((i + 2) as f64).log2();
            i += 1;
        }
    }
    while ci < cuts.len() {
        if ideal > 0.0 {
            out[base + ci] /= ideal;
        }
        ci += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::EvalQrels;

    fn q(judged: &[(&str, i32)]) -> EvalQrels {
        let mut qr = mtr_core::Qrels::new();
        let e = qr.entry("q".into()).or_default();
        for (d, g) in judged {
            e.insert((*d).into(), *g);
        }
        EvalQrels::from_qrels(&qr)
    }

    fn run(set: &str, rels: &[i32], judged: &[(&str, i32)], level: i64) -> Vec<f64> {
        let set = MeasureSet::parse(set.split(' ')).unwrap();
        let qr = q(judged);
        let mut out = Vec::new();
        compute(
            &set,
            &QueryInput {
                rels,
                qrels: qr.get("q").unwrap(),
                level,
                compat: Compat::TrecEval10,
            },
            &mut out,
        );
        out
    }

    #[test]
    fn case01_q1_values() {
        // case01_ties q1 ranked: d9(0) d2(0) d10(2) d1(1) d3(nonpool)
        let judged = [("d1", 1), ("d2", 0), ("d10", 2), ("d9", 0)];
        let rels = [0, 0, 2, 1, NONPOOL];
        // Columns come out in trec_eval's order whatever order they were asked in.
        let v = run(
            "recip_rank map map_cut.3 ndcg_cut.3,10 Rprec",
            &rels,
            &judged,
            1,
        );
        let want = [
            0.41666666666666663,
            0.0,
            1.0 / 3.0,
            0.38009376671593426,
            0.543791241910304,
            0.16666666666666666,
        ];
        for (a, b) in v.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{v:?}");
        }
        let v = run("ndcg", &rels, &judged, 2);
        assert!((v[0] - 0.543791241910304).abs() < 1e-15);
    }

    #[test]
    fn judged_counts_every_grade_over_what_was_retrieved() {
        let judged = [("a", 3), ("b", 0), ("c", -1)];
        // ranked: a x b c y (x, y unjudged)
        let rels = [3, NONPOOL, 0, UNJUDGED, NONPOOL];
        let v = run("judged.1,2,4,5,10", &rels, &judged, 1);
        // top 10 of 5 retrieved: the share of the 5 (ir_measures' denominator min(k, n))
        assert_eq!(v, [1.0, 0.5, 0.75, 0.6, 0.6]);
        // a query `-c` fills in (one unjudged document) and nothing retrieved judge nothing
        assert_eq!(run("judged.10", &[NONPOOL], &judged, 1), [0.0]);
        assert_eq!(run("judged.10", &[], &judged, 1), [0.0]);
        // the relevance level does not matter
        assert_eq!(run("judged.5", &rels, &judged, 3), [0.6]);
    }

    #[test]
    fn extensions_differ_where_they_should() {
        let judged = [("a", 3), ("b", 1), ("c", 1)];
        // ranked: b a x
        let rels = [1, 3, NONPOOL];
        let v = run(
            "ndcg_cut.2 ndcg_exp_cut.2 map_cut.1 map_capped_cut.1 success_strict.1 success_lenient.1 recip_rank_cut.1,2",
            &rels,
            &judged,
            1,
        );
        let lin = (1.0 + 3.0 / 3f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        let exp = (1.0 + 7.0 / 3f64.log2()) / (7.0 + 1.0 / 3f64.log2());
        // order: ndcg_cut_2, map_cut_1, ndcg_exp_cut_2, map_capped_cut_1, success_strict_1,
        // success_lenient_1, recip_rank_cut_1, recip_rank_cut_2
        assert!(
            (v[0] - lin).abs() < 1e-15 && (v[2] - exp).abs() < 1e-15,
            "{v:?}"
        );
        assert_eq!(v[1], 1.0 / 3.0);
        assert_eq!(&v[3..], &[1.0, 0.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn gain_table_follows_trec_eval() {
        let judged = [("a", 1), ("b", 2), ("c", 4), ("d", 0)];
        let rels = [2, 4, 1];
        let v = run("ndcg.1=3,2=9,4=4.5", &rels, &judged, 1);
        // gains: 1->3, 2->9, 4->4.5, 0->0; ideal order 9, 4.5, 3
        let dcg = 9.0 + 4.5 / 3f64.log2() + 3.0 / 2.0;
        assert!((v[0] - dcg / dcg).abs() < 1e-15);
    }
}
