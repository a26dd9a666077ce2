//! `mtr bench`: score retrievers (x query formulations) and external runs on a benchmark, with
//! strata, cluster-bootstrap intervals, paired tests, diagnostics and failure analysis; writes
//! `bench.json`, `per_query.jsonl`, `report.md` (and the runs it produced) into `-o DIR`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use mtr_bench::engine::{Settings, SystemInput};
use mtr_bench::job::{Provenance, SplitRequest};
use mtr_bench::query_set::Part;
use mtr_bench::{BenchError, Measure};
use mtr_core::formats::{ImportOptions, open_any_with};
use mtr_core::progress::Progress as _;
use mtr_retrieve::dense::{DenseOptions, Embedder};
use mtr_retrieve::{CorpusSource, IndexOptions, QueryFormulation, RetrieverSpec};

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark: a native folder or any folder `mtr import` understands.
    pub bench: PathBuf,
    /// A retriever to run: bm25, dense, rrf(bm25,dense), weighted(bm25=0.3,dense=0.7). Repeatable.
    #[arg(long = "retriever", value_name = "SPEC")]
    pub retrievers: Vec<String>,
    /// Query formulations for the retrievers: last, all, full, full:N, window:N, rewrite,
    /// llm-rewrite (repeatable or comma-separated) [default: last, full, and rewrite when the
    /// benchmark has gold rewrites].
    #[arg(long = "query", value_name = "FORMULATION", value_delimiter = ',')]
    pub queries: Vec<String>,
    /// An external run (TREC 6-column or MTRAG JSONL), `FILE` or `NAME=FILE`. Repeatable.
    #[arg(long = "run", value_name = "[NAME=]FILE")]
    pub runs: Vec<String>,
    /// Output folder.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Index folder for the retrievers, built when missing [default: BENCH/.mtr/index, or a
    /// cache folder when BENCH is not writable].
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// Rank depth of the retriever runs.
    #[arg(long, default_value_t = 100)]
    pub k: usize,
    /// Measures to report, as trec_eval (ndcg_cut.10, recall.100, recip_rank_cut.10,
    /// map_cut.100, P.5, success.5, success_strict.5) or ir_measures (nDCG@10, R@100, RR@10,
    /// AP@100, P@5, Success@5) writes them; repeatable or comma-separated [default: nDCG@5,10,20,
    /// R@5,10,20,100, RR@10, AP@100, Success@1,5,10 strict and lenient].
    #[arg(long = "measure", value_name = "MEASURE", value_delimiter = ',')]
    pub measures: Vec<String>,
    /// The measure for ranking, tests, failure analysis and turn-depth curves.
    #[arg(long, default_value = "ndcg_cut.10")]
    pub main: String,
    /// The system every other is tested against [default: the first system].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Bootstrap resamples (over dialogues).
    #[arg(long, default_value_t = 1000)]
    pub resamples: usize,
    /// Confidence level of the intervals (not the relevance level: grade >= 1 is relevant).
    #[arg(
        long = "confidence-level",
        value_name = "LEVEL",
        default_value_t = 0.95
    )]
    pub level: f64,
    /// Sign-flip permutations of the randomization tests.
    #[arg(long, default_value_t = 10_000)]
    pub permutations: usize,
    /// Significance level.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Seed of every random choice (bootstrap, tests, split, example sampling).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Split dialogues into dev/test with this share in dev (seeded) and score one part.
    #[arg(long, value_name = "RATIO")]
    pub split: Option<f64>,
    /// Which part of the split to score.
    #[arg(long, value_enum, default_value_t = PartArg::Dev, requires = "split")]
    pub part: PartArg,
    /// Worst turns shown per system in the failure analysis.
    #[arg(long, default_value_t = 5)]
    pub examples: usize,
    /// Recall failure: no relevant passage in the top K.
    #[arg(long, default_value_t = 10)]
    pub failure_k: usize,
    /// Ranking failure: the first relevant passage is below this rank (within the top K).
    #[arg(long, default_value_t = 3)]
    pub failure_rank: usize,
    /// MTRAG sources: the domain to import (clapnq, govt, ...) when BENCH is not native.
    #[arg(long)]
    pub domain: Option<String>,
    /// Refuse runs that rank documents the corpus lacks (without it they score as non-relevant,
    /// as trec_eval does, with a warning and a count per system).
    #[arg(long)]
    pub strict: bool,
    /// Strata with fewer turns than this are marked small: a warning, greyed out in charts.
    #[arg(long, value_name = "TURNS", default_value_t = 30)]
    pub min_stratum: usize,
    #[command(flatten)]
    pub llm: super::common::LlmArgs,
    /// An audit of this benchmark (`mtr audit -o DIR`): also score every system under the qrels
    /// it supports (noise-removed, sparsity-filled, corrected) on the audited turns, in
    /// bench.json's `label_sensitivity` and the report.
    #[arg(long, value_name = "AUDIT_DIR")]
    pub audit: Option<PathBuf>,
    /// Changed turns listed per variant in the label-sensitivity section.
    #[arg(long, default_value_t = 20, requires = "audit")]
    pub moved_turns: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PartArg {
    Dev,
    Test,
}

fn bench_err(e: BenchError) -> anyhow::Error {
    match e {
        BenchError::Core(c) => anyhow::Error::new(c),
        other => anyhow::Error::new(other),
    }
}

fn user_error(option: &str, message: impl Into<String>) -> anyhow::Error {
    bench_err(BenchError::option(option, message))
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    if args.retrievers.is_empty() && args.runs.is_empty() {
        return Err(user_error(
            "--retriever/--run",
            "nothing to score: give at least one --retriever or --run",
        ));
    }
    let settings = settings(&args)?;
    let import = ImportOptions {
        domain: args.domain.clone(),
        ..Default::default()
    };
    let dir = open_any_with(&args.bench, None, &import, ctx.progress.as_ref())
        .map_err(anyhow::Error::new)?;
    let split = args.split.map(|ratio| SplitRequest {
        ratio,
        seed: args.seed,
        part: match args.part {
            PartArg::Dev => Part::Dev,
            PartArg::Test => Part::Test,
        },
    });
    let prepared = mtr_bench::job::prepare(&dir, split).map_err(bench_err)?;
    let bench_name = prepared.bench.manifest.name.clone();
    // An audit of another benchmark is refused before any work.
    let label_edits = match &args.audit {
        Some(a) => Some(super::qrels::load_edits(a, &prepared.fingerprint)?),
        None => None,
    };

    // External runs first: bad input should fail before any retrieval work.
    let mut externals = Vec::new();
    for arg in &args.runs {
        let (name, path) = mtr_bench::runs::parse_run_arg(arg);
        let r = mtr_bench::runs::load(&path, name).map_err(bench_err)?;
        mtr_bench::runs::check_overlap(&r, &prepared.set, &bench_name).map_err(bench_err)?;
        externals.push(r);
    }

    let mut systems: Vec<SystemInput> = Vec::new();
    let mut ablations = Vec::new();
    if !args.retrievers.is_empty() {
        let specs: Vec<RetrieverSpec> = args
            .retrievers
            .iter()
            .map(|s| {
                s.parse::<RetrieverSpec>()
                    .map_err(|e| user_error("--retriever", e))
            })
            .collect::<anyhow::Result<_>>()?;
        let formulations = formulations(&args, &prepared.bench)?;
        let index_path = match &args.index {
            Some(p) => p.clone(),
            None => default_index_path(dir.root(), &prepared.fingerprint),
        };
        let src = CorpusSource::detect(dir.root())
            .map_err(|e| anyhow::Error::new(mtr_core::Error::from(e)))?;
        let idx = mtr_retrieve::ensure_index(
            &src,
            &index_path,
            &IndexOptions::default(),
            ctx.progress.as_ref(),
        )
        .map_err(|e| anyhow::Error::new(mtr_core::Error::from(e)))
        .with_context(|| format!("index {}", index_path.display()))?;
        let needs_llm = specs.iter().any(RetrieverSpec::needs_dense)
            || formulations.contains(&QueryFormulation::LlmRewrite);
        let llm = if needs_llm {
            // the output folder and the LLM cache must take writes before anything is paid
            super::preflight::writable_dir(&args.output, "--output")?;
            let l = super::open::open_llm(ctx, &args.llm).await?;
            super::preflight::writable_cache(&l)?;
            Some(l)
        } else {
            None
        };
        let embedder: Option<Arc<dyn Embedder>> = match &llm {
            Some(l) if specs.iter().any(RetrieverSpec::needs_dense) => {
                let e = mtr_retrieve::llm::LlmEmbedder::new(l.clone()).ok_or_else(|| {
                    user_error(
                        "--retriever",
                        "a dense retriever needs the `embedder` role in [llm]",
                    )
                })?;
                let e: Arc<dyn Embedder> = Arc::new(e);
                mtr_retrieve::ensure_dense(
                    &idx,
                    &src,
                    e.as_ref(),
                    &DenseOptions::default(),
                    ctx.progress.as_ref(),
                )
                .await
                .map_err(|e| anyhow::Error::new(mtr_core::Error::from(e)))?;
                Some(e)
            }
            _ => None,
        };
        let rewriter = match &llm {
            Some(l) if formulations.contains(&QueryFormulation::LlmRewrite) => Some(
                mtr_retrieve::llm::LlmRewriter::new(l.clone())
                    .map_err(|e| anyhow::Error::new(mtr_core::Error::from(e)))?,
            ),
            _ => None,
        };
        let setup = mtr_bench::retrievers::RetrievalSetup {
            bench: &prepared.bench,
            set: &prepared.set,
            index: &idx,
            embedder,
            rewriter: rewriter.as_ref().map(|r| r as &dyn mtr_retrieve::Rewriter),
            k: args.k,
            progress: ctx.progress.as_ref(),
        };
        let (s, a) = mtr_bench::retrievers::run_all(&setup, &specs, &formulations)
            .await
            .map_err(bench_err)?;
        systems.extend(s);
        ablations.extend(a);
    }
    systems.extend(externals.into_iter().map(SystemInput::external));

    let prov = Provenance {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("MTR_GIT_COMMIT")
            .map(str::to_string)
            .or_else(|| std::env::var("MTR_GIT_COMMIT").ok()),
        config_hash: ctx.config.hash(),
        date: mtr_bench::job::today(),
    };
    ctx.progress.stage("scoring", 0);
    let mut outcome = mtr_bench::job::assemble(&prepared, &systems, &ablations, &settings, &prov)
        .map_err(bench_err)?;
    if let Some(edits) = &label_edits {
        let runs: Vec<mtr_bench::sensitivity::SystemRun> = systems
            .iter()
            .map(|s| mtr_bench::sensitivity::SystemRun {
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
        let ls = mtr_bench::sensitivity::compute(&mtr_bench::sensitivity::Input {
            dialogues: &prepared.bench.dialogues,
            set: &prepared.set,
            systems: &runs,
            edits,
            settings: &settings,
            moved_turns: args.moved_turns,
            original_values: main_values.as_deref(),
        })
        .map_err(bench_err)?;
        outcome.result.label_sensitivity = Some(ls);
    }
    ctx.progress.finish_stage();
    let runs = mtr_bench::output::retriever_runs(&systems);
    let written =
        mtr_bench::output::write_results(&args.output, &outcome, &runs).map_err(bench_err)?;

    for w in &outcome.result.warnings {
        tracing::warn!("{w}");
    }
    let mut text = summary(&outcome.result);
    if let Some(ls) = &outcome.result.label_sensitivity {
        text.push_str(&mtr_bench::sensitivity_report::text_summary(ls));
    }
    text.push_str(&format!(
        "\nwrote {} files to {}\n",
        written.len(),
        args.output.display()
    ));
    super::open::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn settings(args: &Args) -> anyhow::Result<Settings> {
    let parse = |s: &str, opt: &str| {
        s.parse::<Measure>()
            .map_err(|e| user_error(opt, e.to_string()))
    };
    let main = parse(&args.main, "--main")?;
    let mut measures = if args.measures.is_empty() {
        Measure::defaults()
    } else {
        args.measures
            .iter()
            .map(|m| parse(m, "--measure"))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    // the ranking measure is always reported: `--measure RR@10` alone ranked every system by
    // an nDCG@10 it never reported, and the board showed "-" for every score
    if !measures.contains(&main) {
        measures.insert(0, main);
    }
    if args.level <= 0.0 || args.level >= 1.0 || args.level.is_nan() {
        return Err(user_error("--confidence-level", "must be between 0 and 1"));
    }
    if args.resamples == 0 || args.permutations == 0 {
        return Err(user_error(
            "--resamples/--permutations",
            "must be at least 1",
        ));
    }
    Ok(Settings {
        main,
        measures,
        resamples: args.resamples,
        level: args.level,
        permutations: args.permutations,
        alpha: args.alpha,
        seed: args.seed,
        baseline: args.baseline.clone(),
        failure_k: args.failure_k,
        failure_rank: args.failure_rank,
        failure_examples: args.examples,
        strict: args.strict,
        min_stratum: args.min_stratum,
        ..Settings::default()
    })
}

fn formulations(args: &Args, bench: &mtr_core::Benchmark) -> anyhow::Result<Vec<QueryFormulation>> {
    let names: Vec<String> = if args.queries.is_empty() {
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
        args.queries.clone()
    };
    let mut out: Vec<QueryFormulation> = Vec::new();
    for n in names {
        let f: QueryFormulation = n.parse().map_err(|e: String| user_error("--query", e))?;
        if !out.contains(&f) {
            out.push(f);
        }
    }
    Ok(out)
}

/// `BENCH/.mtr/index` when the benchmark folder is writable, else a cache folder keyed by the
/// benchmark's fingerprint.
fn default_index_path(root: &Path, fingerprint: &str) -> PathBuf {
    let local = root.join(".mtr").join("index");
    if std::fs::create_dir_all(root.join(".mtr")).is_ok() {
        return local;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("mtr")
        .join("indexes")
        .join(mtr_core::fingerprint::short(fingerprint))
}

fn summary(r: &mtr_bench::result::BenchResult) -> String {
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
    for (i, s) in mtr_bench::report::ranked_systems(r).iter().enumerate() {
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
        let cell = format!("{cell}{}", mtr_bench::report::significance_mark(r, &s.name));
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
    }
    o
}
