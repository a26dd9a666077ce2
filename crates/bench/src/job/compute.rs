//! The computation of a bench, pure and synchronous: score every system on the evaluation
//! set, then the cluster-bootstrap intervals (overall, per stratum, per turn position), the
//! metric-combination diagnosis, failure analysis, paired randomization tests against the
//! baseline with Holm, discriminative power over all pairs, and fusion ablation. Producing the
//! runs (retrievers, run files) and writing the outputs happen elsewhere.

use std::collections::{BTreeMap, BTreeSet};

use mtr_core::Run;
use rayon::prelude::*;

use super::config::Settings;
use crate::diagnose::{diagnose, too_easy};
use crate::error::{BenchError, Result};
use crate::failures;
use crate::measure::Measure;
use crate::query_set::QuerySet;
use crate::result::{
    Ablation, AblationComponent, BaselineTests, Comparison, DiscriminativePower, PairTest,
    Pairwise, PositionPoint, StratumFamily, StratumGroup, SystemKind, SystemResult,
};
use crate::score::{Scorer, Scores};
use crate::stats::bootstrap::{ClusterBootstrap, Estimate, estimates};
use crate::stats::randomization::{PairwiseP, all_pairs};
use crate::stats::{cohens_dz, holm};
use crate::strata::Strata;

/// One system to score.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemInput {
    /// The system's name.
    pub name: String,
    /// A retriever mtr ran, or an external run file.
    pub kind: SystemKind,
    /// Retriever spec (`bm25`, `dense`, `fusion:...`) for retriever systems.
    pub retriever: Option<String>,
    /// Query formulation (`last`, `full`, `rewrite`, ...) for retriever systems.
    pub formulation: Option<String>,
    /// Run file for external systems.
    pub source: Option<String>,
    /// Hash of the retriever configuration (or of the run file for external systems).
    pub config_hash: String,
    /// Hash of the prompts the system used (LLM rewrites), if any.
    pub prompt_hash: Option<String>,
    /// The system's ranking per query.
    pub run: Run,
    /// The query text the system used per qid (retriever systems), for failure examples.
    pub queries: BTreeMap<String, String>,
}

/// Leave-one-out runs of a fused system: the fusion recomputed without each component.
#[derive(Debug, Clone, PartialEq)]
pub struct AblationInput {
    /// The fused system.
    pub system: String,
    /// Per component: its name and the fusion's run without it.
    pub without: Vec<(String, Run)>,
}

/// Everything computed, ready to be placed into a [`crate::result::BenchResult`].
#[derive(Debug, Clone)]
pub struct Computed {
    pub systems: Vec<SystemResult>,
    pub strata: Vec<StratumFamily>,
    pub tests: Option<BaselineTests>,
    pub discriminative_power: Option<DiscriminativePower>,
    /// Every pair of systems on the main measure (two systems or more).
    pub pairwise: Option<Pairwise>,
    pub ablation: Vec<Ablation>,
    pub warnings: Vec<String>,
    /// Per system, per-query values of the reported measures (in `Settings::measures` order).
    pub scores: Vec<Scores>,
}

/// Runs the whole computation: check the inputs, score every system, the intervals, each
/// system's result, the evaluation set's warnings, the paired tests and the ablations.
pub fn compute(
    set: &QuerySet,
    systems: &[SystemInput],
    ablations: &[AblationInput],
    s: &Settings,
) -> Result<Computed> {
    check_inputs(set, systems, s)?;
    let baseline_index = baseline_index(systems, s)?;
    let internal = Internal::new(s);
    let scorer = Scorer::new(set, &internal.measures)?;
    let scores: Vec<Scores> = systems
        .par_iter()
        .map(|sys| scorer.score(set, &sys.run))
        .collect::<Result<_>>()?;
    let strata = Strata::build(set);
    let ctx = Context {
        set,
        s,
        intervals: Intervals::compute(set, &strata, &scores, s, internal.main),
        strata,
        internal,
    };

    let mut warnings = Vec::new();
    let results: Vec<SystemResult> = systems
        .iter()
        .zip(&scores)
        .enumerate()
        .map(|(si, (sys, sc))| ctx.system_result(si, sys, sc, &mut warnings))
        .collect();
    let strata_info = strata_info(&ctx.strata, set, s);
    warnings.extend(set_warnings(set, &ctx.strata, s));

    let main_i = ctx.internal.main;
    let (tests, dp, pairwise) = if systems.len() >= 2 {
        pair_statistics(systems, &scores, main_i, baseline_index, s)
    } else {
        (None, None, None)
    };
    let ablation = ablations
        .iter()
        .map(|a| ablation(set, systems, &scores, main_i, a, s))
        .collect::<Result<_>>()?;

    let n_rep = s.measures.len();
    let reported: Vec<Scores> = scores
        .into_iter()
        .map(|mut sc| {
            sc.values.truncate(n_rep);
            sc
        })
        .collect();
    Ok(Computed {
        systems: results,
        strata: strata_info,
        tests,
        discriminative_power: dp,
        pairwise,
        ablation,
        warnings,
        scores: reported,
    })
}

/// Refuses what cannot be computed: no measure, no turn, two systems of one name.
fn check_inputs(set: &QuerySet, systems: &[SystemInput], s: &Settings) -> Result<()> {
    if s.measures.is_empty() {
        return Err(BenchError::option("--measure", "no measure to report"));
    }
    if set.is_empty() {
        return Err(BenchError::Internal("the evaluation set is empty".into()));
    }
    let mut names = BTreeSet::new();
    for sys in systems {
        if !names.insert(sys.name.as_str()) {
            return Err(BenchError::option(
                "--name",
                format!(
                    "two systems are named `{}`; give them distinct names",
                    sys.name
                ),
            ));
        }
    }
    Ok(())
}

/// The system every other is tested against: the one named by `--baseline`, else the first.
fn baseline_index(systems: &[SystemInput], s: &Settings) -> Result<Option<usize>> {
    Ok(match &s.baseline {
        Some(b) => Some(systems.iter().position(|x| &x.name == b).ok_or_else(|| {
            BenchError::option(
                "--baseline",
                format!(
                    "no system named `{b}`; systems are: {}",
                    systems
                        .iter()
                        .map(|x| x.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?),
        None => (!systems.is_empty()).then_some(0),
    })
}

/// The measures scored internally: the reported ones first, then what the diagnostics need.
struct Internal {
    measures: Vec<Measure>,
    /// Index of the main measure.
    main: usize,
}

impl Internal {
    fn new(s: &Settings) -> Internal {
        let dk = s.diagnosis_k;
        let mut measures: Vec<Measure> = s.measures.clone();
        for m in [
            s.main,
            Measure::HitLenient(dk),
            Measure::Mrr(dk),
            Measure::Recall(dk),
            Measure::Ndcg(dk),
            Measure::HitLenient(5),
        ] {
            if !measures.contains(&m) {
                measures.push(m);
            }
        }
        let mut internal = Internal { measures, main: 0 };
        internal.main = internal.index(s.main);
        internal
    }

    fn index(&self, m: Measure) -> usize {
        self.measures.iter().position(|x| *x == m).unwrap_or(0)
    }
}

/// The cluster-bootstrap intervals of every system, all from one set of resamples.
struct Intervals {
    /// `[group][system * reported + measure]`: group 0 is every turn, then the strata's
    /// groups in family order.
    groups: Vec<Vec<Estimate>>,
    /// The main measure by turn position: (position, turns, one estimate per system).
    by_position: Vec<(usize, usize, Vec<Estimate>)>,
}

impl Intervals {
    fn compute(
        set: &QuerySet,
        strata: &Strata,
        scores: &[Scores],
        s: &Settings,
        main_i: usize,
    ) -> Intervals {
        let clusters = set.clusters();
        let boot = ClusterBootstrap::new(set.dialogues.len(), s.resamples, s.level, s.seed);
        let n_rep = s.measures.len();
        // Series for the bootstrap: system-major, reported measures.
        let series: Vec<&[f64]> = scores
            .iter()
            .flat_map(|sc| sc.values[..n_rep].iter().map(Vec::as_slice))
            .collect();
        let mut groups: Vec<Option<&[usize]>> = vec![None];
        for f in &strata.families {
            for g in &f.groups {
                groups.push(Some(&g.members));
            }
        }
        let groups: Vec<Vec<Estimate>> = groups
            .par_iter()
            .map(|members| estimates(&boot, &clusters, *members, &series))
            .collect();

        let mut by_pos: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, q) in set.queries.iter().enumerate() {
            if q.position > 0 {
                by_pos
                    .entry(q.position.min(s.max_position))
                    .or_default()
                    .push(i);
            }
        }
        let main_series = main_series(scores, main_i);
        let by_position = by_pos
            .par_iter()
            .map(|(p, members)| {
                (
                    *p,
                    members.len(),
                    estimates(&boot, &clusters, Some(members), &main_series),
                )
            })
            .collect();
        Intervals {
            groups,
            by_position,
        }
    }
}

/// Every system's per-turn values of the main measure.
fn main_series(scores: &[Scores], main_i: usize) -> Vec<&[f64]> {
    scores
        .iter()
        .map(|sc| sc.values[main_i].as_slice())
        .collect()
}

/// What every system's result reads.
struct Context<'a> {
    set: &'a QuerySet,
    s: &'a Settings,
    strata: Strata,
    intervals: Intervals,
    internal: Internal,
}

impl Context<'_> {
    /// One system's result; its warnings go to `warnings`.
    fn system_result(
        &self,
        si: usize,
        sys: &SystemInput,
        sc: &Scores,
        warnings: &mut Vec<String>,
    ) -> SystemResult {
        let (set, s) = (self.set, self.s);
        let dk = s.diagnosis_k;
        let measures = self.measure_estimates(si, 0);
        let mean_of = |m: Measure| sc.mean(self.internal.index(m));
        let diagnosis = diagnose(
            dk,
            mean_of(Measure::HitLenient(dk)),
            mean_of(Measure::Mrr(dk)),
            mean_of(Measure::Recall(dk)),
            mean_of(Measure::Ndcg(dk)),
        );
        if let Some(w) = too_easy(
            &sys.name,
            mean_of(Measure::HitLenient(5)),
            mean_of(Measure::Mrr(dk)),
            dk,
        ) {
            warnings.push(w);
        }
        let answered = set
            .queries
            .iter()
            .filter(|q| sys.run.contains_key(&q.qid))
            .count();
        if answered < set.len() {
            warnings.push(format!(
                "{}: answers {answered} of {} scored turns; the {} it does not answer score 0 (trec_eval -c)",
                sys.name,
                set.len(),
                set.len() - answered
            ));
        }
        let failures = failures::analyse(
            set,
            &sys.run,
            &sc.values[self.internal.main],
            &sc.first_relevant,
            failures::FailureRule {
                k: s.failure_k,
                r: s.failure_rank,
                examples: s.failure_examples,
                seed: s.failure_seed(),
            },
            &|qid: &str| sys.queries.get(qid).cloned(),
        );
        SystemResult {
            name: sys.name.clone(),
            kind: sys.kind,
            retriever: sys.retriever.clone(),
            formulation: sys.formulation.clone(),
            source: sys.source.clone(),
            config_hash: sys.config_hash.clone(),
            prompt_hash: sys.prompt_hash.clone(),
            answered,
            depth: run_depth(set, &sys.run),
            out_of_corpus: 0,
            out_of_corpus_distinct: 0,
            measures,
            beyond_depth: BTreeMap::new(),
            strata: self.strata_estimates(si),
            by_position: self.by_position(si),
            diagnosis,
            failures,
            holes: None,
        }
    }

    /// The reported measures' estimates of system `si` in interval group `g`.
    fn measure_estimates(&self, si: usize, g: usize) -> BTreeMap<String, Estimate> {
        let n_rep = self.s.measures.len();
        self.s
            .measures
            .iter()
            .enumerate()
            .map(|(m, mm)| (mm.id(), self.intervals.groups[g][si * n_rep + m]))
            .collect()
    }

    /// family -> group -> measure -> estimate of system `si`.
    fn strata_estimates(
        &self,
        si: usize,
    ) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, Estimate>>> {
        let mut out: BTreeMap<String, BTreeMap<String, BTreeMap<String, Estimate>>> =
            BTreeMap::new();
        let mut g = 1;
        for f in &self.strata.families {
            let fam = out.entry(f.name.clone()).or_default();
            for grp in &f.groups {
                fam.insert(grp.name.clone(), self.measure_estimates(si, g));
                g += 1;
            }
        }
        out
    }

    /// The by-position curve of system `si`.
    fn by_position(&self, si: usize) -> Vec<PositionPoint> {
        let s = self.s;
        self.intervals
            .by_position
            .iter()
            .map(|(p, n, e)| PositionPoint {
                position: *p,
                and_deeper: *p == s.max_position
                    && self.set.queries.iter().any(|q| q.position > s.max_position),
                n: *n,
                estimate: e[si],
            })
            .collect()
    }
}

/// The strata families and their groups' sizes.
fn strata_info(strata: &Strata, set: &QuerySet, s: &Settings) -> Vec<StratumFamily> {
    strata
        .families
        .iter()
        .map(|f| StratumFamily {
            name: f.name.clone(),
            groups: f
                .groups
                .iter()
                .map(|g| StratumGroup {
                    name: g.name.clone(),
                    n: g.members.len(),
                    dialogues: g
                        .members
                        .iter()
                        .map(|&q| set.queries[q].dialogue)
                        .collect::<BTreeSet<_>>()
                        .len(),
                    small: g.members.len() < s.min_stratum,
                })
                .collect(),
        })
        .collect()
}

/// The warnings about the evaluation set itself: small strata, unused tags, orphan qrels,
/// binary qrels under a strict measure, few dialogues.
fn set_warnings(set: &QuerySet, strata: &Strata, s: &Settings) -> Vec<String> {
    let mut warnings = Vec::new();
    let small: Vec<String> = strata
        .families
        .iter()
        .flat_map(|f| {
            f.groups
                .iter()
                .filter(|g| g.members.len() < s.min_stratum)
                .map(move |g| format!("{}={} ({})", f.name, g.name, g.members.len()))
        })
        .collect();
    if !small.is_empty() {
        warnings.push(format!(
            "{} strata have fewer than {} turns, read them with care (greyed out, not plotted): {}",
            small.len(),
            s.min_stratum,
            small.join(", ")
        ));
    }
    for t in &strata.skipped_tags {
        warnings.push(format!("tag {t} not used as a stratum (too many values)"));
    }
    if !set.orphan_qids.is_empty() {
        warnings.push(format!(
            "{} qrels queries match no turn of the benchmark (scored, each as its own dialogue, no position): {}",
            set.orphan_qids.len(),
            set.orphan_qids.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let strict: Vec<&Measure> = s
        .measures
        .iter()
        .filter(|m| matches!(m, Measure::HitStrict(_)))
        .collect();
    if !strict.is_empty() && !set.qrels.values().flat_map(|d| d.values()).any(|&g| g >= 2) {
        warnings.push(format!(
            "no passage is graded 2 or higher (binary qrels): {} is 0 for every system; read the lenient HitRate",
            strict.iter().map(|m| m.label()).collect::<Vec<_>>().join(", ")
        ));
    }
    if set.dialogues.len() < 30 {
        warnings.push(format!(
            "only {} dialogues: the cluster-bootstrap intervals rest on few independent units",
            set.dialogues.len()
        ));
    }
    warnings
}

/// Paired tests over all pairs (two systems or more), on the main measure, with one shared set
/// of sign flips: the tests against the baseline, discriminative power and every pair.
fn pair_statistics(
    systems: &[SystemInput],
    scores: &[Scores],
    main_i: usize,
    baseline_index: Option<usize>,
    s: &Settings,
) -> (
    Option<BaselineTests>,
    Option<DiscriminativePower>,
    Option<Pairwise>,
) {
    let main_series = main_series(scores, main_i);
    let pairs = all_pairs(&main_series, s.permutations, s.test_seed());
    let means: Vec<f64> = scores.iter().map(|sc| sc.mean(main_i)).collect();
    let tests = baseline_index.map(|b| baseline_tests(systems, &main_series, &means, &pairs, b, s));
    let raw: Vec<f64> = pairs
        .p
        .iter()
        .enumerate()
        .flat_map(|(a, row)| row.iter().skip(a + 1).copied())
        .collect();
    let adj = holm(&raw);
    let pairwise = pairwise(systems, &main_series, &means, &raw, &adj, s);
    let dp = discriminative_power(systems.len(), &means, &raw, &adj, s);
    (tests, Some(dp), Some(pairwise))
}

/// Every other system against the baseline `b`, Holm over those comparisons.
fn baseline_tests(
    systems: &[SystemInput],
    main_series: &[&[f64]],
    means: &[f64],
    pairs: &PairwiseP,
    b: usize,
    s: &Settings,
) -> BaselineTests {
    let others: Vec<usize> = (0..systems.len()).filter(|&i| i != b).collect();
    let raw: Vec<f64> = others.iter().map(|&i| pairs.p[b][i]).collect();
    let adj = holm(&raw);
    BaselineTests {
        baseline: systems[b].name.clone(),
        measure: s.main.id(),
        comparisons: others
            .iter()
            .zip(raw.iter().zip(&adj))
            .map(|(&i, (&p, &p_holm))| {
                let diff = means[i] - means[b];
                Comparison {
                    system: systems[i].name.clone(),
                    mean: means[i],
                    baseline_mean: means[b],
                    diff,
                    rel_diff: (means[b] != 0.0).then(|| diff / means[b]),
                    effect_size: cohens_dz(main_series[i], main_series[b]),
                    p,
                    p_holm,
                    significant: p_holm < s.alpha,
                }
            })
            .collect(),
    }
}

/// Every pair `a < b` with its p-values (`raw`, Holm-adjusted `adj`, in pair order) and
/// wins/ties/losses per turn.
fn pairwise(
    systems: &[SystemInput],
    main_series: &[&[f64]],
    means: &[f64],
    raw: &[f64],
    adj: &[f64],
    s: &Settings,
) -> Pairwise {
    let mut pair_tests = Vec::with_capacity(raw.len());
    let mut k = 0;
    for a in 0..systems.len() {
        for b in a + 1..systems.len() {
            let (wins, ties, losses) = win_tie_loss(main_series[a], main_series[b]);
            pair_tests.push(PairTest {
                a: systems[a].name.clone(),
                b: systems[b].name.clone(),
                diff: means[a] - means[b],
                p: raw[k],
                p_holm: adj[k],
                significant: adj[k] < s.alpha,
                wins,
                ties,
                losses,
            });
            k += 1;
        }
    }
    Pairwise {
        measure: s.main.id(),
        alpha: s.alpha,
        pairs: pair_tests,
    }
}

/// How many pairs the tests separate, and the spread of the systems' means.
fn discriminative_power(
    n_systems: usize,
    means: &[f64],
    raw: &[f64],
    adj: &[f64],
    s: &Settings,
) -> DiscriminativePower {
    let separated = raw.iter().filter(|p| **p < s.alpha).count();
    let separated_holm = adj.iter().filter(|p| **p < s.alpha).count();
    let min = means.iter().copied().fold(f64::INFINITY, f64::min);
    let max = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mu = crate::stats::mean(means);
    let sd =
        (means.iter().map(|m| (m - mu).powi(2)).sum::<f64>() / (means.len() - 1) as f64).sqrt();
    DiscriminativePower {
        measure: s.main.id(),
        alpha: s.alpha,
        systems: n_systems,
        pairs: raw.len(),
        separated,
        share: separated as f64 / raw.len() as f64,
        separated_holm,
        share_holm: separated_holm as f64 / raw.len() as f64,
        min,
        max,
        range: max - min,
        sd,
    }
}

/// A fused system against its leave-one-out runs on the main measure.
fn ablation(
    set: &QuerySet,
    systems: &[SystemInput],
    scores: &[Scores],
    main_i: usize,
    a: &AblationInput,
    s: &Settings,
) -> Result<Ablation> {
    let Some(fi) = systems.iter().position(|x| x.name == a.system) else {
        return Err(BenchError::Internal(format!(
            "ablation of unknown system `{}`",
            a.system
        )));
    };
    let full = &scores[fi].values[main_i];
    let main_scorer = Scorer::new(set, &[s.main])?;
    let without: Vec<Vec<f64>> = a
        .without
        .par_iter()
        .map(|(_, run)| {
            main_scorer
                .score(set, run)
                .map(|sc| sc.values.into_iter().next().unwrap_or_default())
        })
        .collect::<Result<_>>()?;
    let mut series: Vec<&[f64]> = vec![full.as_slice()];
    series.extend(without.iter().map(Vec::as_slice));
    let p = all_pairs(&series, s.permutations, s.test_seed());
    let full_mean = crate::stats::mean(full);
    Ok(Ablation {
        system: a.system.clone(),
        measure: s.main.id(),
        full: full_mean,
        components: a
            .without
            .iter()
            .zip(&without)
            .enumerate()
            .map(|(i, ((name, _), v))| {
                let w = crate::stats::mean(v);
                AblationComponent {
                    component: name.clone(),
                    without: w,
                    contribution: full_mean - w,
                    p: p.p[0][i + 1],
                }
            })
            .collect(),
    })
}

/// The rank depth of a run: the most documents it ranks for one scored turn.
pub(crate) fn run_depth(set: &QuerySet, run: &Run) -> usize {
    set.queries
        .iter()
        .filter_map(|q| run.get(&q.qid).map(Vec::len))
        .max()
        .unwrap_or(0)
}

/// Turns where `a` scores higher than `b`, equal (within 1e-12), and lower.
pub(crate) fn win_tie_loss(a: &[f64], b: &[f64]) -> (usize, usize, usize) {
    let (mut w, mut t, mut l) = (0, 0, 0);
    for (x, y) in a.iter().zip(b) {
        if (x - y).abs() <= 1e-12 {
            t += 1;
        } else if x > y {
            w += 1;
        } else {
            l += 1;
        }
    }
    (w, t, l)
}

#[cfg(test)]
mod pair_tests {
    use super::*;

    #[test]
    fn wins_ties_losses_and_depth() {
        assert_eq!(
            win_tie_loss(&[1.0, 0.5, 0.2, 0.0], &[0.5, 0.5, 0.3, 0.0]),
            (1, 2, 1)
        );
        let mut qrels = mtr_core::Qrels::new();
        for q in ["a", "b"] {
            qrels.entry(q.into()).or_default().insert("d1".into(), 1);
        }
        let set = QuerySet::build(&[], &qrels);
        let mut run = Run::new();
        run.insert("a".into(), vec![("d1".into(), 1.0), ("d2".into(), 0.5)]);
        run.insert(
            "zz".into(),
            (0..50).map(|i| (format!("x{i}"), 0.0)).collect(),
        );
        assert_eq!(run_depth(&set, &run), 2, "only scored turns count");
    }
}
