//! The bench job as named stages, in the order `mtr bench` runs them, so that the job lives in
//! this crate as the audit and the synthesis live in theirs and the binary only parses flags,
//! opens the LLM client when a stage needs one, and prints:
//!
//! 1. [`settings`]: measures and statistics checked before any work;
//! 2. [`crate::job::prepare`]: the benchmark, its evaluation set and split;
//! 3. [`load_externals`]: external runs, refused before any retrieval when they do not fit;
//! 4. [`plan_retrieval`], [`open_index`], [`retrieve`]: the runs of the retriever specs x query
//!    formulations (the embedder and rewriter come from the LLM client the binary opens);
//! 5. [`score`]: intervals, tests, diagnostics, failures, and the label sensitivity under an
//!    audit's qrels;
//! 6. [`crate::output::write_results`]: the results folder;
//! 7. [`summary`]: the text the command prints.

use std::path::{Path, PathBuf};

use crate::error::{BenchError, Result};
use crate::job::assemble::{Outcome, Prepared, Provenance};
use crate::job::compute::{AblationInput, SystemInput};
use crate::job::config::BenchSettings;
use crate::job::config::Settings;
use crate::measure::Measure;
use crate::runs::ExternalRun;
use crate::sensitivity::{self, LabelEdits, SystemRun};

/// The job's settings from `[bench]` and the reported measures parsed from their names (the
/// main measure is always reported, so that the ranking's measure has a column), with the
/// statistics checked.
pub fn settings(section: &BenchSettings, measures: &[String]) -> Result<Settings> {
    let base = Settings::from(section);
    let main = base.main;
    let mut measures = if measures.is_empty() {
        Measure::defaults()
    } else {
        measures
            .iter()
            .map(|m| {
                m.parse::<Measure>()
                    .map_err(|e| BenchError::option("--measure", e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?
    };
    if !measures.contains(&main) {
        measures.insert(0, main);
    }
    if base.level <= 0.0 || base.level >= 1.0 || base.level.is_nan() {
        return Err(BenchError::option(
            "--confidence-level",
            "must be between 0 and 1",
        ));
    }
    if base.resamples == 0 || base.permutations == 0 {
        return Err(BenchError::option(
            "--resamples/--permutations",
            "must be at least 1",
        ));
    }
    Ok(Settings {
        main,
        measures,
        ..base
    })
}

/// Reads every external run (`FILE` or `NAME=FILE`) and checks it against the evaluation set.
pub fn load_externals(args: &[String], prepared: &Prepared) -> Result<Vec<ExternalRun>> {
    let name = &prepared.bench.manifest.name;
    args.iter()
        .map(|arg| {
            let (run_name, path) = crate::runs::parse_run_arg(arg);
            let r = crate::runs::load(&path, run_name)?;
            crate::runs::check_overlap(&r, &prepared.set, name)?;
            Ok(r)
        })
        .collect()
}

/// Scores every system, then, given an audit's label edits, the same systems under the qrels
/// the audit supports.
pub fn score(
    prepared: &Prepared,
    systems: &[SystemInput],
    ablations: &[AblationInput],
    settings: &Settings,
    prov: &Provenance,
    edits: Option<(&LabelEdits, usize)>,
) -> Result<Outcome> {
    let mut outcome = crate::job::assemble::assemble(prepared, systems, ablations, settings, prov)?;
    let Some((edits, moved_turns)) = edits else {
        return Ok(outcome);
    };
    let runs: Vec<SystemRun> = systems
        .iter()
        .map(|s| SystemRun {
            name: &s.name,
            run: &s.run,
        })
        .collect();
    // the bench's own per-turn values of the main measure, when it reports it
    let main_values: Option<Vec<&[f64]>> = settings
        .measures
        .iter()
        .position(|m| *m == settings.main)
        .map(|mi| {
            outcome
                .computed_scores
                .iter()
                .filter_map(|sc| sc.values.get(mi).map(Vec::as_slice))
                .collect()
        });
    let ls = sensitivity::compute(&sensitivity::Input {
        dialogues: &prepared.bench.dialogues,
        set: &prepared.set,
        systems: &runs,
        edits,
        settings,
        moved_turns,
        original_values: main_values.as_deref(),
    })?;
    outcome.result.label_sensitivity = Some(ls);
    Ok(outcome)
}

/// `BENCH/.mtr/index` when the benchmark folder is writable, else `indexes/<fingerprint>` in
/// mtr's cache folder (`mtr_core::dirs`).
pub fn default_index_path(root: &Path, fingerprint: &str) -> PathBuf {
    let local = root.join(".mtr").join("index");
    if std::fs::create_dir_all(root.join(".mtr")).is_ok() {
        return local;
    }
    mtr_core::dirs::Dirs::from_env()
        .indexes()
        .join(mtr_core::fingerprint::short(fingerprint))
}

#[cfg(feature = "retrieve")]
pub use self::retrieval::{RetrievalPlan, open_index, plan_retrieval, retrieve};

#[cfg(feature = "retrieve")]
mod retrieval {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use mtr_core::Benchmark;
    use mtr_core::progress::Progress;
    use mtr_retrieve::dense::Embedder;
    use mtr_retrieve::{CorpusSource, IndexDir, IndexOptions, QueryFormulation, RetrieverSpec};

    use crate::error::{BenchError, Result};
    use crate::job::assemble::Prepared;
    use crate::job::compute::{AblationInput, SystemInput};
    use crate::retrievers::RetrievalSetup;

    /// What the retrievers will run: specs, formulations and the index folder.
    pub struct RetrievalPlan {
        /// The retrievers to run.
        pub specs: Vec<RetrieverSpec>,
        /// The query formulations each retriever runs with.
        pub formulations: Vec<QueryFormulation>,
        /// The benchmark's index folder.
        pub index_path: PathBuf,
    }

    impl RetrievalPlan {
        /// Whether a retriever needs the dense index (and so an embedder).
        pub fn needs_dense(&self) -> bool {
            self.specs.iter().any(RetrieverSpec::needs_dense)
        }
        /// Whether a formulation needs the LLM rewriter (`llm-rewrite`).
        pub fn needs_rewriter(&self) -> bool {
            self.formulations.contains(&QueryFormulation::LlmRewrite)
        }
        /// Whether a stage needs the LLM client (an embedder or a rewriter).
        pub fn needs_llm(&self) -> bool {
            self.needs_dense() || self.needs_rewriter()
        }
    }

    /// Parses the retriever specs and query formulations (default: last, full, and rewrite
    /// when the benchmark has gold rewrites); `None` when no retriever is asked for.
    pub fn plan_retrieval(
        retrievers: &[String],
        queries: &[String],
        index: Option<&Path>,
        root: &Path,
        prepared: &Prepared,
    ) -> Result<Option<RetrievalPlan>> {
        if retrievers.is_empty() {
            return Ok(None);
        }
        let specs = retrievers
            .iter()
            .map(|s| {
                s.parse::<RetrieverSpec>()
                    .map_err(|e| BenchError::option("--retriever", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let formulations = formulations(queries, &prepared.bench)?;
        let index_path = match index {
            Some(p) => p.to_path_buf(),
            None => super::default_index_path(root, &prepared.fingerprint),
        };
        Ok(Some(RetrievalPlan {
            specs,
            formulations,
            index_path,
        }))
    }

    fn formulations(queries: &[String], bench: &Benchmark) -> Result<Vec<QueryFormulation>> {
        let names: Vec<String> = if queries.is_empty() {
            let has_rewrite = bench
                .dialogues
                .iter()
                .flat_map(|d| &d.turns)
                .any(|t| t.rewrite.is_some());
            let mut v = vec!["last".to_string(), "full".to_string()];
            if has_rewrite {
                v.push("rewrite".into());
            }
            v
        } else {
            queries.to_vec()
        };
        let mut out: Vec<QueryFormulation> = Vec::new();
        for n in names {
            let f: QueryFormulation = n
                .parse()
                .map_err(|e: String| BenchError::option("--query", e))?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// The benchmark's corpus and its index (built when missing).
    pub fn open_index(
        plan: &RetrievalPlan,
        root: &Path,
        progress: &dyn Progress,
    ) -> Result<(CorpusSource, IndexDir)> {
        let core = |e: mtr_retrieve::Error| BenchError::Core(mtr_core::Error::from(e));
        let src = CorpusSource::detect(root).map_err(core)?;
        let idx =
            mtr_retrieve::ensure_index(&src, &plan.index_path, &IndexOptions::default(), progress)
                .map_err(core)?;
        Ok((src, idx))
    }

    /// Runs every spec with every formulation (see [`crate::retrievers::run_all`]).
    pub async fn retrieve(
        plan: &RetrievalPlan,
        prepared: &Prepared,
        index: &IndexDir,
        embedder: Option<Arc<dyn Embedder>>,
        rewriter: Option<&dyn mtr_retrieve::Rewriter>,
        k: usize,
        progress: &dyn Progress,
    ) -> Result<(Vec<SystemInput>, Vec<AblationInput>)> {
        let setup = RetrievalSetup {
            bench: &prepared.bench,
            set: &prepared.set,
            index,
            embedder,
            rewriter,
            k,
            progress,
        };
        crate::retrievers::run_all(&setup, &plan.specs, &plan.formulations).await
    }
}

/// The text `mtr bench` prints: the ranking by the main measure with intervals and tests,
/// documents missing from the corpus, discriminative power, and the label sensitivity.
pub fn summary(r: &crate::result::BenchResult) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let label = |id: &str| {
        r.measures
            .iter()
            .find(|m| m.id == id)
            .map_or(id.to_string(), |m| m.label.clone())
    };
    let _ = writeln!(
        o,
        "{}: {} scored turns in {} dialogues; main measure {} with {:.0}% cluster-bootstrap intervals",
        r.benchmark.name,
        r.benchmark.scored_queries,
        r.benchmark.scored_dialogues,
        label(&r.main_measure),
        r.conventions.bootstrap.level * 100.0
    );
    let sig: std::collections::BTreeMap<&str, bool> = r
        .tests
        .iter()
        .flat_map(|t| {
            t.comparisons
                .iter()
                .map(|c| (c.system.as_str(), c.significant))
        })
        .collect();
    let width = r
        .systems
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        o,
        "{:>3}  {:width$}  {:>24}  vs baseline",
        "#",
        "system",
        label(&r.main_measure)
    );
    for (i, s) in crate::report::ranked_systems(r).iter().enumerate() {
        let e = s.measures.get(&r.main_measure);
        let cell = e.map_or("–".into(), |e| {
            format!("{:.4} [{:.3}, {:.3}]", e.mean, e.ci_low, e.ci_high)
        });
        let vs = match (
            r.tests.as_ref().map(|t| t.baseline.as_str()),
            sig.get(s.name.as_str()),
        ) {
            (Some(b), _) if b == s.name => "baseline",
            (_, Some(true)) => "significant",
            (_, Some(false)) => "n.s.",
            _ => "",
        };
        let cell = format!("{cell}{}", crate::report::significance_mark(r, &s.name));
        let _ = writeln!(o, "{:>3}  {:width$}  {cell:>26}  {vs}", i + 1, s.name);
    }
    for s in &r.systems {
        if s.out_of_corpus > 0 {
            let _ = writeln!(
                o,
                "{}: {} ranked documents ({} distinct) not in the corpus, scored as non-relevant",
                s.name, s.out_of_corpus, s.out_of_corpus_distinct
            );
        }
    }
    if let Some(d) = &r.discriminative_power {
        let _ = writeln!(
            o,
            "discriminative power: {}/{} pairs separated at p < {} ({:.1}%), spread {:.4}",
            d.separated,
            d.pairs,
            d.alpha,
            d.share * 100.0,
            d.range
        );
        let _ = writeln!(o, "  {}", crate::report::compared_systems(r));
    }
    if let Some(ls) = &r.label_sensitivity {
        o.push_str(&crate::sensitivity_report::text_summary(ls));
    }
    o
}
