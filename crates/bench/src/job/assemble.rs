//! A bench job from start to finish, minus producing the runs: open the benchmark (refused,
//! with `mtr validate`'s message, when validation finds errors: bench scores only what validate
//! accepts), build the evaluation set (and the dev/test split), check every external run
//! against it, compute, read the passages the failure examples show (one streaming pass over
//! the corpus, which also finds ranked documents the corpus lacks: scored as non-relevant and
//! counted, or refused under `--strict`), mark measures deeper than each run ([`crate::depth`]),
//! and assemble the [`BenchResult`] with its fingerprint. Nothing is written here; see
//! [`crate::output`].

use std::collections::{BTreeMap, HashSet};

use mtr_core::fingerprint::{Fingerprint, hash_json};
use mtr_core::{Benchmark, BenchmarkDir, Qrels};
use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::job::compute::{AblationInput, Computed, SystemInput, compute};
use crate::job::config::Settings;
use crate::query_set::{Part, QuerySet};
use crate::result::{
    BenchResult, BenchmarkInfo, BootstrapConventions, Conventions, MeasureInfo, PassageView,
    SCHEMA, SplitInfo, SystemKind, SystemResult, TestConventions,
};
use crate::runs::{CorpusLookup, out_of_corpus, scan_corpus, unknown_docs_error};
use crate::split::Split;

/// Longest passage text kept in failure examples (characters).
pub(crate) const SNIPPET_CHARS: usize = 400;

/// A dev/test split request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SplitRequest {
    /// Share of the dialogues in the dev part, in (0, 1).
    pub ratio: f64,
    /// The seed that shuffles the dialogues.
    pub seed: u64,
    /// The part scored.
    pub part: Part,
}

/// Who ran the job: recorded in the fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    /// The mtr version.
    pub tool_version: String,
    /// The git commit mtr was built from, when known.
    pub git_commit: Option<String>,
    /// Hash of the effective mtr configuration (secrets masked).
    pub config_hash: String,
    /// `YYYY-MM-DD`.
    pub date: String,
}

/// An opened benchmark with its evaluation set.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The opened benchmark.
    pub bench: Benchmark,
    /// Its qrels.
    pub qrels: Qrels,
    /// The scored turns (after the split, if any).
    pub set: QuerySet,
    /// The split and the request that made it, if one was asked for.
    pub split: Option<(Split, SplitRequest)>,
    /// The benchmark's data fingerprint, computed from its files.
    pub fingerprint: String,
    /// Warnings about the benchmark's data, for the report.
    pub warnings: Vec<String>,
}

/// Opens a native benchmark folder and builds its evaluation set.
pub fn prepare(dir: &BenchmarkDir, split: Option<SplitRequest>) -> Result<Prepared> {
    let validation =
        mtr_core::validate::validate(dir, &mtr_core::validate::ValidateOptions::default())?;
    if let Some(first) = validation.errors.first() {
        return Err(BenchError::input(
            mtr_core::InputError::new(
                dir.root(),
                format!(
                    "the benchmark does not validate ({} error(s)) and bench scores only what `mtr validate` accepts; the first: {}",
                    validation.error_count, first.error
                ),
            )
            .hint(format!("`mtr validate {}` lists every problem", dir.root().display())),
        ));
    }
    let empty_passages = validation
        .warnings
        .iter()
        .filter(|w| w.kind == "empty-passage")
        .count();
    let bench = dir.load()?;
    let qrels = dir.qrels()?;
    let full = QuerySet::build(&bench.dialogues, &qrels);
    let mut warnings = Vec::new();
    if full.is_empty() {
        return Err(BenchError::input(
            mtr_core::InputError::new(
                dir.root(),
                "no turn of the benchmark has a passage judged relevant: nothing to score",
            )
            .hint("check the qrels (grade > 0 means relevant)"),
        ));
    }
    if empty_passages > 0 {
        warnings.push(format!(
            "the corpus holds {empty_passages} passage(s) whose text is only whitespace (kept: runs may rank them)"
        ));
    }
    let fingerprint = dir.compute_fingerprint()?;
    if !bench.manifest.fingerprint.is_empty() && bench.manifest.fingerprint != fingerprint {
        warnings.push(format!(
            "the benchmark's data files changed since its manifest was written (manifest fingerprint {}, now {})",
            mtr_core::fingerprint::short(&bench.manifest.fingerprint),
            mtr_core::fingerprint::short(&fingerprint)
        ));
    }
    let (set, split) = match split {
        None => (full, None),
        Some(req) => {
            if req.ratio <= 0.0 || req.ratio >= 1.0 || req.ratio.is_nan() {
                return Err(BenchError::option(
                    "--split",
                    format!("ratio {} must be between 0 and 1 (exclusive)", req.ratio),
                ));
            }
            let s = Split::new(
                full.dialogues.iter().map(String::as_str),
                req.ratio,
                req.seed,
            );
            let set = full.restrict_to_dialogues(s.dialogues(req.part));
            if set.is_empty() {
                return Err(BenchError::option(
                    "--split",
                    format!("the {} part has no scored turn", req.part.as_str()),
                ));
            }
            (set, Some((s, req)))
        }
    };
    Ok(Prepared {
        bench,
        qrels,
        set,
        split,
        fingerprint,
        warnings,
    })
}

/// The computed result plus what the outputs need beyond `bench.json`.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The result written to `bench.json`.
    pub result: BenchResult,
    /// Per system, in the result's order: its per-query values.
    pub computed_scores: Vec<crate::score::Scores>,
    /// The scored turns.
    pub set: QuerySet,
    /// The dev/test split, if any.
    pub split: Option<Split>,
}

/// Computes everything and assembles the result. Fails, before anything is written, when a
/// run ranks documents the corpus does not have.
pub(crate) fn assemble(
    p: &Prepared,
    systems: &[SystemInput],
    ablations: &[AblationInput],
    s: &Settings,
    prov: &Provenance,
) -> Result<Outcome> {
    let computed: Computed = compute(&p.set, systems, ablations, s)?;
    let mut systems_out = computed.systems;

    let lookup = read_corpus(p, systems, &systems_out)?;
    let mut corpus_warnings = out_of_corpus_runs(p, systems, &mut systems_out, &lookup, s)?;
    fill_examples(&mut systems_out, &lookup);
    corpus_warnings.extend(mark_depths(&mut systems_out, s, lookup.passages));

    let mut warnings = p.warnings.clone();
    warnings.extend(computed.warnings);
    warnings.extend(corpus_warnings);
    if p.set.skipped_without_relevant > 0 {
        warnings.push(format!(
            "{} turns have no passage judged relevant and are not scored (unanswerable or unjudged)",
            p.set.skipped_without_relevant
        ));
    }
    let baseline = computed.tests.as_ref().map(|t| t.baseline.clone());
    let result = BenchResult {
        schema: SCHEMA.into(),
        mtr_version: prov.tool_version.clone(),
        date: prov.date.clone(),
        benchmark: benchmark_info(p),
        fingerprint: fingerprint(p, systems, s, prov, baseline),
        conventions: conventions(s),
        measures: s
            .measures
            .iter()
            .map(|m| MeasureInfo {
                id: m.id(),
                label: m.label(),
            })
            .collect(),
        main_measure: s.main.id(),
        split: p.split.as_ref().map(|(sp, r)| SplitInfo {
            ratio: r.ratio,
            seed: r.seed,
            part: r.part,
            dev_dialogues: sp.dev.len(),
            test_dialogues: sp.test.len(),
        }),
        strata: computed.strata,
        systems: systems_out,
        tests: computed.tests,
        discriminative_power: computed.discriminative_power,
        ablation: computed.ablation,
        pairwise: computed.pairwise,
        min_stratum_turns: s.min_stratum,
        warnings,
        label_sensitivity: None,
        holes: None,
    };
    Ok(Outcome {
        result,
        computed_scores: computed.scores,
        set: p.set.clone(),
        split: p.split.as_ref().map(|(s, _)| s.clone()),
    })
}

/// One pass over the corpus: unknown ids in any run, and the texts of the failure examples.
fn read_corpus(
    p: &Prepared,
    systems: &[SystemInput],
    systems_out: &[SystemResult],
) -> Result<CorpusLookup> {
    let mut wanted: HashSet<&str> = HashSet::new();
    for sys in systems {
        for docs in sys.run.values() {
            wanted.extend(docs.iter().map(|(d, _)| d.as_str()));
        }
    }
    let mut show: HashSet<String> = HashSet::new();
    for sys in systems_out {
        for e in &sys.failures.examples {
            show.extend(e.gold.iter().chain(&e.top).map(|v| v.id.clone()));
        }
    }
    let show_ref: HashSet<&str> = show.iter().map(String::as_str).collect();
    scan_corpus(&p.bench.dir, &wanted, &show_ref)
}

/// Ranked documents the corpus lacks: counted per system with a warning, or, under
/// `--strict`, the first run that ranks one refused.
fn out_of_corpus_runs(
    p: &Prepared,
    systems: &[SystemInput],
    systems_out: &mut [SystemResult],
    lookup: &CorpusLookup,
    s: &Settings,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    if lookup.missing.is_empty() {
        return Ok(warnings);
    }
    if !s.strict {
        for (sys, out) in systems.iter().zip(systems_out.iter_mut()) {
            let (n, distinct) = out_of_corpus(&sys.run, &lookup.missing);
            out.out_of_corpus = n;
            out.out_of_corpus_distinct = distinct;
            if n > 0 {
                warnings.push(format!(
                    "{}: {n} ranked documents ({distinct} distinct ids) are not in the benchmark's corpus; scored as non-relevant, as trec_eval does (--strict refuses such runs)",
                    sys.name
                ));
            }
        }
        return Ok(warnings);
    }
    for sys in systems {
        if sys
            .run
            .values()
            .flatten()
            .any(|(d, _)| lookup.missing.contains(d))
        {
            let path = sys
                .source
                .clone()
                .unwrap_or_else(|| format!("run of {}", sys.name));
            return Err(unknown_docs_error(
                std::path::Path::new(&path),
                &sys.run,
                &lookup.missing,
                &p.bench.dir.corpus_path(),
            ));
        }
    }
    Ok(warnings)
}

/// The failure examples' passages get their titles and (cut) texts.
fn fill_examples(systems_out: &mut [SystemResult], lookup: &CorpusLookup) {
    let fill = |v: &mut PassageView| {
        if let Some((title, text)) = lookup.texts.get(&v.id) {
            v.title = title.clone();
            v.text = snippet(text, SNIPPET_CHARS);
        }
    };
    for sys in systems_out {
        for e in &mut sys.failures.examples {
            e.gold.iter_mut().for_each(fill);
            e.top.iter_mut().for_each(fill);
        }
    }
}

/// Measures deeper than each run move aside ([`crate::depth`]); the warnings that say so,
/// and one when the runs' depths differ.
fn mark_depths(systems_out: &mut [SystemResult], s: &Settings, passages: u64) -> Vec<String> {
    let mut warnings = Vec::new();
    for sys in systems_out.iter_mut() {
        warnings.extend(crate::depth::apply(sys, &s.measures, s.main, passages));
    }
    let depths: std::collections::BTreeSet<usize> = systems_out
        .iter()
        .map(|x| x.depth)
        .filter(|d| *d > 0)
        .collect();
    if depths.len() > 1 {
        warnings.push(format!(
            "the runs have different depths ({}): measures deeper than a run are n/a for it",
            depths
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    warnings
}

/// The benchmark's side of the result.
fn benchmark_info(p: &Prepared) -> BenchmarkInfo {
    let m = &p.bench.manifest;
    BenchmarkInfo {
        name: m.name.clone(),
        version: m.version.clone(),
        language: m.language.clone(),
        source: m.source.clone(),
        fingerprint: p.fingerprint.clone(),
        dialogues: p.bench.dialogues.len(),
        turns: p.bench.turn_count(),
        scored_queries: p.set.len(),
        scored_dialogues: p.set.dialogues.len(),
        skipped_without_relevant: p.set.skipped_without_relevant,
    }
}

/// The result's fingerprint: the data, everything that changes the numbers, the prompts.
fn fingerprint(
    p: &Prepared,
    systems: &[SystemInput],
    s: &Settings,
    prov: &Provenance,
    baseline: Option<String>,
) -> Fingerprint {
    let config = ConfigRecord {
        measures: s.measures.iter().map(|m| m.id()).collect(),
        main: s.main.id(),
        resamples: s.resamples,
        level: s.level,
        permutations: s.permutations,
        alpha: s.alpha,
        seed: s.seed,
        baseline,
        diagnosis_k: s.diagnosis_k,
        failure_k: s.failure_k,
        failure_rank: s.failure_rank,
        failure_examples: s.failure_examples,
        split: p.split.as_ref().map(|(_, r)| *r),
        min_stratum: s.min_stratum,
        strict: s.strict,
        systems: systems
            .iter()
            .map(|x| (x.name.clone(), x.config_hash.clone()))
            .collect(),
        mtr_config: prov.config_hash.clone(),
    };
    let prompt_hashes: BTreeMap<&str, &str> = systems
        .iter()
        .filter_map(|x| x.prompt_hash.as_deref().map(|h| (x.name.as_str(), h)))
        .collect();
    Fingerprint {
        data: p.fingerprint.clone(),
        config: mtr_core::fingerprint::config_hash(&config),
        prompts: if prompt_hashes.is_empty() {
            "none".into()
        } else {
            hash_json(&prompt_hashes)
        },
        tool_version: prov.tool_version.clone(),
        git_commit: prov.git_commit.clone(),
    }
}

/// Everything that changes the numbers, hashed into the fingerprint's config hash.
#[derive(Debug, Serialize)]
struct ConfigRecord {
    measures: Vec<String>,
    main: String,
    resamples: usize,
    level: f64,
    permutations: usize,
    alpha: f64,
    seed: u64,
    baseline: Option<String>,
    diagnosis_k: usize,
    failure_k: usize,
    failure_rank: usize,
    failure_examples: usize,
    split: Option<SplitRequest>,
    min_stratum: usize,
    strict: bool,
    systems: Vec<(String, String)>,
    mtr_config: String,
}

fn conventions(s: &Settings) -> Conventions {
    Conventions {
        scoring: vec![
            "per-query values from mtr-metrics (trec_eval 10.0 semantics, f64 scores)".into(),
            "ranking: score descending, ties by document id descending (byte order); the rank column is ignored".into(),
            "relevant: grade > 0; grade <= 0 judged non-relevant".into(),
            "scored turns: turns with at least one passage judged relevant; a turn a run does not answer scores 0 (trec_eval -c)".into(),
            "ranked documents the corpus lacks: kept at their ranks and scored as non-relevant (trec_eval), counted per system (out_of_corpus); --strict refuses them".into(),
            "run depth: the most documents a run ranks for one scored turn; a measure with a deeper cutoff (unless the run ranks the whole corpus) is moved to beyond_depth and shown as n/a (depth N)".into(),
            "means: arithmetic over scored turns (every system over the same turns)".into(),
        ],
        measures: s.measures.iter().map(|m| (m.id(), m.convention().to_string())).collect(),
        bootstrap: BootstrapConventions {
            unit: "dialogue".into(),
            resamples: s.resamples,
            level: s.level,
            method: "percentile (type 7) of the ratio mean sum(turn values)/count(turns) over resampled dialogues; one set of resamples for every system, measure and stratum".into(),
            seed: s.seed,
        },
        tests: TestConventions {
            method: "paired randomization (sign flip per turn), two-sided, p = (1 + hits) / (1 + permutations); one set of sign vectors for every pair".into(),
            permutations: s.permutations,
            seed: s.test_seed(),
            alpha: s.alpha,
            correction: "holm (over comparisons with the baseline; separately over all pairs for discriminative power)".into(),
        },
    }
}

/// The first `max` characters of a text, with an ellipsis when cut.
pub(crate) fn snippet(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

impl SystemInput {
    /// An external run as a system.
    pub fn external(r: crate::runs::ExternalRun) -> SystemInput {
        SystemInput {
            name: r.name,
            kind: SystemKind::External,
            retriever: None,
            formulation: None,
            source: Some(r.path.display().to_string()),
            config_hash: r.hash,
            prompt_hash: None,
            run: r.run,
            queries: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::measure::Measure;
    use crate::testdata;

    fn external_runs() -> Vec<SystemInput> {
        let dir = testdata::mtrag_dir().unwrap().join("runs_clapnq");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| SystemInput::external(crate::runs::load(f, None).unwrap()))
            .collect()
    }

    /// The done-when check: the 12 real MTRAG runs scored by bench equal trec_eval 10.0's
    /// `-q -c` output, per query and in the mean, for every measure both report.
    #[test]
    fn mtrag_external_runs_equal_trec_eval() {
        let Some(dir) = testdata::clapnq() else {
            return;
        };
        let p = prepare(&dir, None).unwrap();
        assert_eq!(p.set.len(), 208);
        let systems = external_runs();
        assert_eq!(systems.len(), 12);
        let settings = Settings {
            resamples: 200,
            permutations: 500,
            ..Settings::default()
        };
        let prov = Provenance {
            tool_version: "test".into(),
            date: "2026-01-01".into(),
            ..Default::default()
        };
        let out = assemble(&p, &systems, &[], &settings, &prov).unwrap();
        let pairs: [(&str, Measure); 11] = [
            ("ndcg_cut_5", Measure::Ndcg(5)),
            ("ndcg_cut_10", Measure::Ndcg(10)),
            ("ndcg_cut_20", Measure::Ndcg(20)),
            ("recall_5", Measure::Recall(5)),
            ("recall_10", Measure::Recall(10)),
            ("recall_20", Measure::Recall(20)),
            ("recip_rank", Measure::Mrr(10)),
            ("map", Measure::MapCut(100)),
            ("success_1", Measure::HitLenient(1)),
            ("success_5", Measure::HitLenient(5)),
            ("success_10", Measure::HitLenient(10)),
        ];
        let expected_dir = testdata::mtrag_dir().unwrap().join("expected");
        let mut checked = 0;
        for (si, sys) in out.result.systems.iter().enumerate() {
            let expected =
                testdata::read_trec_eval(&expected_dir.join(format!("{}.trec_eval.txt", sys.name)));
            assert_eq!(expected[&("num_q".to_string(), "all".to_string())], "208");
            for (te, m) in pairs {
                let mi = settings.measures.iter().position(|x| *x == m).unwrap();
                // depth-10 runs: the deeper measures are kept aside, with trec_eval's values
                let mean = sys
                    .measures
                    .get(&m.id())
                    .or_else(|| sys.beyond_depth.get(&m.id()))
                    .unwrap()
                    .mean;
                assert_eq!(
                    format!("{mean:.4}"),
                    expected[&(te.to_string(), "all".to_string())],
                    "{} {te} mean",
                    sys.name
                );
                for (qi, q) in out.set.queries.iter().enumerate() {
                    let v = out.computed_scores[si].values[mi][qi];
                    assert_eq!(
                        format!("{v:.4}"),
                        expected[&(te.to_string(), q.qid.clone())],
                        "{} {te} {}",
                        sys.name,
                        q.qid
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 12 * 11 * 208);
        for sys in &out.result.systems {
            assert_eq!(sys.depth, 10, "{}", sys.name);
            assert!(!sys.measures.contains_key("recall.100"), "{}", sys.name);
            assert!(sys.beyond_depth.contains_key("map_cut.100"), "{}", sys.name);
            assert!(sys.measures.contains_key("ndcg_cut.10"), "{}", sys.name);
        }
        // The bm25 lastturn run lacks queries: they score 0 and are reported.
        assert!(
            out.result
                .warnings
                .iter()
                .any(|w| w.contains("bm25__bm25_clapnq_lastturn: answers")),
            "{:?}",
            out.result.warnings
        );
    }

    #[test]
    fn snippets_cut_on_characters() {
        assert_eq!(snippet("年假有几天", 2), "年假…");
        assert_eq!(snippet("abc", 3), "abc");
    }
}

/// The civil date (`YYYY-MM-DD`, UTC) of a Unix time in seconds.
pub(super) fn date_from_unix(secs: i64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Today's date, or the date of `SOURCE_DATE_EPOCH` when set (reproducible builds' convention),
/// so that a rerun with it pinned writes byte-identical results.
pub fn today() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    date_from_unix(secs)
}

#[cfg(test)]
mod date_tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::date_from_unix(0), "1970-01-01");
        assert_eq!(super::date_from_unix(951_782_400), "2000-02-29");
        assert_eq!(super::date_from_unix(1_767_225_600), "2026-01-01");
    }
}
