//! The whole synthesis job, stage by stage, each stage resumable from its fingerprinted
//! artefact in the work dir: curation -> chunking -> chunk vectors -> neighbour graph, topic
//! paths and coarse topics -> BM25 index -> breadth-first generation (checkpointed per turn
//! layer) -> the native benchmark folder and `synth_report.md`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use mtr_core::progress::Progress;
use mtr_core::{Dialogue, Manifest, Passage};
use mtr_llm::{Llm, Role, Target};
use mtr_retrieve::dense::{EmbedPrefixes, VectorMatrix};
use mtr_retrieve::{IndexBuilder, IndexDir, IndexOptions};
use serde_json::json;

use crate::agents::Agents;
use crate::config::{GenerationOptions, SynthConfig};
use crate::dryrun::budget::{self, BudgetPlan};
use crate::dryrun::calls::plan_dialogues;
use crate::error::{Error, Result};
use crate::generate::{
    Finish, GenState, Generator, Material, initial_state, load_state, to_core_turn,
};
use crate::job::SynthJob;
use crate::prepare::{Prepared, prepare};
use crate::report;
use crate::search::{CorpusSearch, DenseSide};
use crate::voices::{PersonaSource, Voices};
use crate::workdir::{WorkDir, fingerprint, to_json};

/// The BM25 index over all chunks (built once into the work dir).
fn bm25_index(wd: &WorkDir, prepared: &Prepared, progress: &dyn Progress) -> Result<IndexDir> {
    let fp = fingerprint(&[
        ("chunks", json!(prepared.chunks_fingerprint)),
        ("language", json!(prepared.language.code())),
    ]);
    let dir = wd.path("index");
    if wd.fresh::<usize>("index", &fp).is_some()
        && let Ok(idx) = IndexDir::open(&dir)
    {
        return Ok(idx);
    }
    let language = match prepared.language.code() {
        "en" => mtr_retrieve::Language::En,
        "zh" => mtr_retrieve::Language::Zh,
        _ => mtr_retrieve::Language::Auto,
    };
    let opts = IndexOptions {
        language,
        store_text: false,
        ..Default::default()
    };
    let idx = IndexBuilder::new(&dir, opts).build_from_passages(
        prepared.chunks.iter().map(|c| Ok(c.to_passage())),
        "synth-chunks",
        progress,
    )?;
    wd.mark("index", &fp, &prepared.chunks.len())?;
    Ok(idx)
}

/// What a finished (or budget-stopped) run produced.
#[derive(Debug, Clone)]
pub struct SynthOutcome {
    /// The benchmark folder written.
    pub out: PathBuf,
    /// Dialogues with at least one verified turn.
    pub dialogues: usize,
    /// Verified turns.
    pub turns: usize,
    /// What the report says about the run.
    pub stats: report::SynthStats,
    /// Whether `--max-cost` stopped the generation.
    pub budget_stopped: bool,
    /// Turn layers every dialogue finished.
    pub layers_done: usize,
    /// With `--time-budget`: the dialogues it started and left for a rerun.
    pub time_budget: Option<BudgetPlan>,
}

/// Runs the whole job.
pub async fn synthesize(
    job: &SynthJob,
    llm: &Llm,
    progress: &dyn Progress,
) -> Result<SynthOutcome> {
    let cfg = &job.config;
    let g = &cfg.generation;
    let verifier = verifier_endpoint(g, llm)?;
    // a bad persona or seed file stops the job before anything is prepared or paid
    let mut voices = Voices::load(&cfg.personas, &cfg.seed_questions)?;
    let prepared = prepare(job, Some(llm), false, progress).await?;
    let wd = WorkDir::create(&job.work_dir)?;
    // the style profile: `concise` (None) keeps today's prompts, caps and fingerprints
    let profile = crate::style::profile_name(&cfg.style, llm.config().is_local_default())?;
    let style = crate::style::Style::resolve(&profile, &prepared.language)?;
    let styled = style.as_ref().map(|s| s.name.clone());
    let ids: Arc<Vec<String>> = Arc::new(prepared.chunks.iter().map(|c| c.id.clone()).collect());
    let search = corpus_search(g, llm, &wd, &prepared, ids, progress)?;
    let by_id: HashMap<String, u32> = prepared
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i as u32))
        .collect();
    let material = Material {
        chunks: &prepared.chunks,
        by_id: &by_id,
        paths: &prepared.topics.paths,
        path_topics: &prepared.topics.path_topics,
    };
    // the topics' persona calls, paid before any dialogue (in the cost ledger all the same)
    let mut topic_calls = crate::agents::CallLog::default();
    // the agents of this synthesis, with the voices they ask with (the topics' persona calls
    // ask with none)
    let none = Voices::default();
    let agents_with = |voices| Agents {
        llm,
        prompts: &job.prompts,
        opts: g,
        language: &prepared.language,
        verifier: verifier.clone(),
        style: style.as_ref(),
        seed: cfg.seed,
        voices,
        deadline: None,
    };
    if PersonaSource::of(&cfg.personas.file) == PersonaSource::Topics {
        let (set, written) = crate::agents::write_topic_personas(
            &agents_with(&none),
            &prepared,
            cfg.personas.max_topics,
        )
        .await?;
        let prompt_hash = job.prompts.persona.hash().to_string();
        voices.set_topic_personas(set, prompt_hash, written.failures);
        topic_calls = written.calls;
    }
    let state_fp = fingerprint(&[
        ("topics", json!(prepared.topics_fingerprint)),
        ("generation", to_json(g)),
        ("dialogues", json!(cfg.dialogues)),
        ("turns", json!(cfg.turns)),
        ("seed", json!(cfg.seed)),
        (
            "prompts",
            json!(job.prompts.hash_for(styled.is_some(), &cfg.mix)),
        ),
        ("llm", json!(llm.config().results_hash())),
        ("verifier", json!(verifier)),
        (
            "dense",
            json!(search.as_ref().is_some_and(|s| s.uses_dense())),
        ),
        ("voices", voices.fingerprint()),
    ]);
    let state_path = wd.path("state.json");
    let mut state = resumed_or_initial(cfg, &material, &state_path, state_fp)?;
    let mut generator = Generator {
        agents: agents_with(&voices),
        search: search.as_ref(),
        material,
        opts: g,
        progress,
        concurrency: concurrency(g, llm),
        mix: &cfg.mix,
        start_rule: None,
    };
    let plan = plan_budget(job, llm, &prepared, &state, &mut generator)?;
    let before: Vec<usize> = state.dialogues.iter().map(|d| d.layers_done).collect();
    let finish = generator.run(&mut state, cfg.turns, &state_path).await?;
    let budget_stopped = matches!(finish, Finish::BudgetStopped { .. });
    let cut = match &finish {
        Finish::Complete { cut } => cut.as_slice(),
        Finish::BudgetStopped { .. } => &[],
    };
    let plan = plan.map(|b| after_run(b, &before, &state, (cfg.turns, cut), budget_stopped));
    let bm25 = search.as_ref().map(CorpusSearch::bm25);
    let run = RunEnd {
        styled,
        verifier: &verifier,
        budget_stopped,
        time_budget: plan,
        bm25,
        voices: &voices,
        topic_calls: &topic_calls,
    };
    write_output(job, llm, &prepared, &state, run)
}

/// The verifier's endpoint (`[synth.generation] verifier`, else the first judge), checked to
/// exist, and the answerability check that must remain when the chat judge's is off.
fn verifier_endpoint(g: &GenerationOptions, llm: &Llm) -> Result<String> {
    let verifier = match &g.verifier {
        Some(v) => v.clone(),
        None => llm.judges().first().cloned().ok_or_else(|| {
            Error::param(
                "generation.verifier",
                "no verifier endpoint: set [synth.generation] verifier or [llm.roles] judges",
            )
        })?,
    };
    if llm.config().endpoint(&verifier).is_none() {
        return Err(Error::param(
            "generation.verifier",
            format!("no endpoint named `{verifier}`"),
        ));
    }
    // `auto` may find no relevance judge among the endpoints: then nothing would check
    // answerability at all
    g.relevance.judge.check(llm)?;
    if !g.answerability_judge && g.relevance.judge.resolve(llm).is_none() {
        return Err(Error::param(
            "generation.answerability_judge",
            crate::config::ANSWERABILITY_NEEDS_GATE,
        ));
    }
    Ok(verifier)
}

/// The corpus-wide search of the uniqueness check (BM25, with the chunk vectors when they
/// come from the embedder); None when the check is off.
fn corpus_search(
    g: &GenerationOptions,
    llm: &Llm,
    wd: &WorkDir,
    prepared: &Prepared,
    ids: Arc<Vec<String>>,
    progress: &dyn Progress,
) -> Result<Option<CorpusSearch>> {
    if !g.uniqueness.enabled {
        return Ok(None);
    }
    progress.stage("bm25 index", prepared.chunks.len() as u64);
    let idx = bm25_index(wd, prepared, progress)?;
    progress.finish_stage();
    let dense = if prepared.vector_info.source.starts_with("embedder:") {
        let model = llm.embedding_model().unwrap_or_default();
        Some(DenseSide {
            matrix: Arc::new(VectorMatrix::from_rows(
                prepared.vector_info.dim,
                prepared.vectors.clone(),
            )?),
            llm: llm.clone(),
            prefixes: EmbedPrefixes::for_model(&model),
        })
    } else {
        None
    };
    Ok(Some(CorpusSearch::new(
        idx.bm25()?,
        dense,
        ids,
        g.uniqueness.query,
    )))
}

/// The checkpointed generation state when its fingerprint matches, else a fresh one.
fn resumed_or_initial(
    cfg: &SynthConfig,
    material: &Material<'_>,
    state_path: &std::path::Path,
    state_fp: String,
) -> Result<GenState> {
    if let Some(s) = load_state(state_path, &state_fp)? {
        tracing::info!(
            "resuming after {} of {} turn layers",
            s.layers_done,
            cfg.turns
        );
        return Ok(s);
    }
    Ok(initial_state(
        state_fp,
        material,
        cfg.dialogues,
        cfg.turns,
        cfg.generation.switch_share,
        cfg.seed,
    ))
}

/// Dialogues in flight at once: the setting, else enough to keep the generator busy.
fn concurrency(g: &GenerationOptions, llm: &Llm) -> usize {
    if g.concurrency > 0 {
        return g.concurrency;
    }
    // a turn makes about 3 generator calls among 6-7 calls in all: 4x the generator's
    // capacity in dialogues keeps it busy while the others wait on judges and retrieval
    (llm.capacity(&Target::Role(Role::Generator)) * 4).max(8)
}

/// How the generation ended, and the index the report measures the history gap with.
struct RunEnd<'a> {
    /// The styled profile in force (`production`, `like:NAME`); None: `concise`.
    styled: Option<String>,
    verifier: &'a str,
    budget_stopped: bool,
    time_budget: Option<BudgetPlan>,
    /// None when the uniqueness check (and so the index) was off.
    bm25: Option<&'a mtr_retrieve::Bm25Index>,
    /// The personas and seed questions.
    voices: &'a Voices,
    /// The calls that wrote the topics' personas.
    topic_calls: &'a crate::agents::CallLog,
}

/// With `--time-budget`: the dialogues to start, from their remaining calls at the
/// endpoints' speed and the time spent since the job began; the generator starts only
/// those, and the job announces the plan.
fn plan_budget(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    state: &GenState,
    generator: &mut Generator<'_>,
) -> Result<Option<BudgetPlan>> {
    let Some(b) = job.time_budget else {
        return Ok(None);
    };
    let calls = plan_dialogues(job, llm, prepared, state)?;
    let work = budget::remaining_work(&calls, state, job.config.turns);
    let spent = job.clock.elapsed_s();
    let plan = budget::select(&work, llm, b.as_secs_f64(), spent);
    if let Some(say) = &job.announce {
        say(&plan.line(mtr_llm::budget::Run::Real));
    }
    let (allowed, expected) = (plan.selected.clone(), plan.seconds.clone());
    generator.limit_starts(
        job.clock.clone(),
        plan.budget_s,
        allowed,
        expected,
        job.start_ahead,
    );
    Ok(Some(plan))
}

/// The plan after the run: the dialogues the deadline kept from starting (when `--max-cost`
/// did not stop it first), those whose turn in flight it cut (`cut`, dialogue indices), and
/// those left.
fn after_run(
    mut b: BudgetPlan,
    before: &[usize],
    state: &GenState,
    (turns, cut): (usize, &[usize]),
    cost_stopped: bool,
) -> BudgetPlan {
    let was_cut = |d: &crate::generate::DialogueState| cut.contains(&d.index);
    let refused = state
        .dialogues
        .iter()
        .zip(before)
        .zip(&b.selected)
        .filter(|((d, was), taken)| {
            **taken && d.layers_done == **was && d.layers_done < turns && !was_cut(d)
        })
        .count();
    let refused = if cost_stopped { 0 } else { refused };
    b.refused_at_run_time = refused;
    b.start -= refused.min(b.start);
    // not taken by the plan, started all the same: the work ran ahead of the plan
    b.started_ahead = state
        .dialogues
        .iter()
        .zip(before)
        .zip(&b.selected)
        .filter(|((d, was), taken)| !**taken && (d.layers_done > **was || was_cut(d)))
        .count();
    b.start += b.started_ahead;
    b.cut_at_deadline = cut.len();
    // started (a turn made in this run), not finished: the deadline stopped it between turns
    b.stopped_at_turn_boundary = if cost_stopped {
        0
    } else {
        state
            .dialogues
            .iter()
            .zip(before)
            .filter(|(d, was)| d.layers_done > **was && d.layers_done < turns && !was_cut(d))
            .count()
    };
    b.left = state
        .dialogues
        .iter()
        .filter(|d| d.layers_done < turns)
        .count();
    b
}

/// The native benchmark folder and the report.
fn write_output(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    state: &GenState,
    run: RunEnd<'_>,
) -> Result<SynthOutcome> {
    let RunEnd {
        styled,
        verifier,
        budget_stopped,
        time_budget,
        bm25,
        voices,
        topic_calls,
    } = run;
    let cfg = &job.config;
    let dialogues = benchmark_dialogues(prepared, state, voices, cfg.seed);
    let mut stats = report::SynthStats::compute(cfg, state);
    // the topics' persona calls are paid before any dialogue: in the ledger all the same
    if topic_calls.calls() > 0 {
        stats.calls.merge(topic_calls);
        stats.cost_total_usd = stats.calls.cost();
        stats.models = stats.calls.models.clone();
    }
    let path_topics = &prepared.topics.path_topics;
    let voices_report = voices.report(
        cfg.seed,
        state
            .dialogues
            .iter()
            .map(|d| crate::voices::DialogueOutcome {
                index: d.index,
                topic: path_topics.get(d.start_path).copied().unwrap_or(0),
                turns: d.turns.len(),
                near_copies: d.events.get("user/near_copy_seed").copied().unwrap_or(0),
            }),
    );
    let roles_models = roles_models(llm, prepared, &stats, verifier);
    let name = cfg.name.clone().unwrap_or_else(|| {
        job.out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "synth".into())
    });
    let fp = mtr_core::fingerprint::Fingerprint {
        data: prepared.input_fingerprint.clone(),
        // the persona and seed files by name in the settings, by content hash beside them
        config: if voices.is_empty() {
            mtr_core::fingerprint::config_hash(&cfg.recorded())
        } else {
            mtr_core::fingerprint::config_hash(&(cfg.recorded(), voices.fingerprint()))
        },
        prompts: job.prompts.hash_for(styled.is_some(), &cfg.mix),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: None,
    };
    let record = RunRecord {
        styled: styled.as_deref(),
        verifier,
        budget_stopped,
        time_budget: time_budget.as_ref(),
        models: &stats.models,
        fingerprint: &fp,
        voices,
    };
    let extra = synth_record(job, llm, prepared, state, &record)?;
    let manifest = Manifest {
        name,
        version: "1".into(),
        language: prepared.language.code().to_string(),
        source: "mtr-synth".into(),
        license: cfg
            .license
            .clone()
            .unwrap_or_else(|| "see the source corpus".into()),
        description: format!(
            "Synthesized by mtr synth (MTR-Pipeline) from {}: {} dialogues, {} turns, uniqueness verified against all {} chunks.",
            job.corpus.display(),
            dialogues.len(),
            stats.turns,
            prepared.chunks.len()
        ),
        fingerprint: String::new(),
        generator: roles_models,
        extra,
    };
    let corpus = prepared
        .chunks
        .iter()
        .map(|c| Ok::<Passage, mtr_core::Error>(c.to_passage()));
    let dir = mtr_core::benchmark::write_benchmark(&job.out, manifest, &dialogues, corpus)?;
    let realism = mtr_retrieve::realism::measure(
        &dialogues,
        &mtr_retrieve::realism::RealismInput {
            // not the folder's name: the report must not depend on where it was written
            name: "this benchmark".into(),
            bm25,
            intervals: mtr_retrieve::realism::IntervalOptions {
                seed: cfg.seed,
                ..Default::default()
            },
        },
    )?;
    let text = report::render(&report::ReportInput {
        cfg,
        prepared,
        state,
        stats: &stats,
        budget_stopped,
        time_budget: time_budget.as_ref(),
        corpus: &job.corpus,
        fingerprint: &fp,
        realism: &realism,
        voices: &voices_report,
    });
    mtr_core::atomic::write_atomic(dir.path("synth_report.md"), text.as_bytes())?;
    Ok(SynthOutcome {
        out: job.out.clone(),
        dialogues: dialogues.len(),
        turns: stats.turns,
        stats,
        budget_stopped,
        layers_done: state.layers_done,
        time_budget,
    })
}

/// What `benchmark.toml` records of the run, beside the job's own settings.
struct RunRecord<'a> {
    styled: Option<&'a str>,
    verifier: &'a str,
    budget_stopped: bool,
    time_budget: Option<&'a BudgetPlan>,
    models: &'a BTreeMap<String, Vec<String>>,
    fingerprint: &'a mtr_core::fingerprint::Fingerprint,
    voices: &'a Voices,
}

/// The `[synth]` table of `benchmark.toml`: how the benchmark was made.
fn synth_record(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    state: &GenState,
    r: &RunRecord<'_>,
) -> Result<toml::Table> {
    let cfg = &job.config;
    let mut extra = toml::Table::new();
    let synth = json!({
        "corpus": job.corpus.display().to_string(),
        "corpus_fingerprint": prepared.input_fingerprint,
        "seed": cfg.seed,
        "dialogues_requested": cfg.dialogues,
        "turns_requested": cfg.turns,
        "layers_done": state.layers_done,
        "budget_stopped": r.budget_stopped,
        "time_budget": r.time_budget,
        "vectors": prepared.vector_info.source,
        "graph": {"method": prepared.topics.graph_method, "k": prepared.topics.graph_k},
        "verifier": r.verifier,
        "models": r.models,
        "prompts": job.prompts.hashes_for(r.styled.is_some(), &cfg.mix),
        "llm_config_hash": llm.config().results_hash(),
        "fingerprint": r.fingerprint,
        "parameters": cfg.recorded(),
    });
    // the style a benchmark was written in (a concise one's record stays as it was)
    let mut synth = synth;
    if let Some(name) = r.styled {
        synth["style"] = json!(name);
    }
    // the persona and seed files by name and content hash (a run without them stays as it was)
    if !r.voices.is_empty() {
        synth["voices"] = r.voices.fingerprint();
    }
    match toml::Value::try_from(tomlable(synth)) {
        Ok(toml::Value::Table(t)) => {
            extra.insert("synth".into(), toml::Value::Table(t));
        }
        Ok(_) => {}
        Err(e) => {
            return Err(Error::Internal(format!(
                "synthesis record for benchmark.toml: {e}"
            )));
        }
    }
    Ok(extra)
}

/// The dialogues with at least one accepted turn, as the benchmark holds them.
fn benchmark_dialogues(
    prepared: &Prepared,
    state: &GenState,
    voices: &Voices,
    seed: u64,
) -> Vec<Dialogue> {
    state
        .dialogues
        .iter()
        .filter(|d| !d.turns.is_empty())
        .map(|d| {
            let mut meta = serde_json::Map::new();
            meta.insert("path".into(), d.start_path.into());
            meta.insert(
                "topic".into(),
                format!("topic-{}", prepared.topics.path_topics[d.start_path]).into(),
            );
            if let (Some(at), Some(p)) = (d.switch_at, d.switch_path) {
                meta.insert("switch_turn_planned".into(), (at + 1).into());
                meta.insert("switch_path".into(), p.into());
            }
            let topic = prepared.topics.path_topics[d.start_path];
            if let Some(p) = voices.persona(seed, d.index, topic) {
                meta.insert("persona".into(), json!(p.name));
            }
            meta.insert("cost_usd".into(), json!(round6(d.log.cost())));
            meta.insert("calls".into(), d.log.calls().into());
            Dialogue {
                id: d.id.clone(),
                turns: d
                    .turns
                    .iter()
                    .enumerate()
                    .map(|(i, t)| to_core_turn(&d.id, i + 1, t))
                    .collect(),
                meta,
            }
        })
        .collect()
}

/// The manifest's `generator` table: role -> models that answered it (and the generator,
/// verifier and embedder roles).
fn roles_models(
    llm: &Llm,
    prepared: &Prepared,
    stats: &report::SynthStats,
    verifier: &str,
) -> BTreeMap<String, String> {
    let mut roles_models: BTreeMap<String, String> = BTreeMap::new();
    for (role, models) in &stats.models {
        roles_models.insert(role.clone(), models.join(","));
    }
    let generator_models: Vec<String> = ["user", "humanizer", "answerer"]
        .iter()
        .filter_map(|r| stats.models.get(*r))
        .flatten()
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !generator_models.is_empty() {
        roles_models.insert("generator".into(), generator_models.join(","));
    }
    if let Some(m) = llm.config().endpoint(verifier).map(|e| e.model.clone()) {
        roles_models.entry("verifier".into()).or_insert(m);
    }
    if let Some(m) = llm
        .embedding_model()
        .filter(|_| prepared.vector_info.source.starts_with("embedder:"))
    {
        roles_models.insert("embedder".into(), m);
    }
    roles_models
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Makes JSON representable in TOML: nulls are dropped (TOML has none) and integers beyond
/// TOML's signed 64-bit range (a large seed) become strings.
fn tomlable(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, tomlable(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.into_iter()
                .filter(|v| !v.is_null())
                .map(tomlable)
                .collect(),
        ),
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => Value::String(n.to_string()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_cannot_hold_null_or_huge_integers() {
        let v = tomlable(
            json!({"a": null, "b": [1, null], "seed": u64::MAX, "c": {"d": null, "e": 2}}),
        );
        assert_eq!(
            v,
            json!({"b": [1], "seed": u64::MAX.to_string(), "c": {"e": 2}})
        );
        assert!(toml::Value::try_from(v).is_ok());
    }
}

#[cfg(test)]
mod budget_tests;
