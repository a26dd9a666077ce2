//! Test support: the real MTRAG clapnq benchmark imported into a temporary folder (tests skip
//! when `../shared` is absent), fake-server judges, and helpers to run an audit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mtr_core::Benchmark;
use mtr_core::formats::{Format, ImportOptions, import};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};

use crate::config::AuditSettings;
use crate::job::{AuditJob, Outcome};
use crate::judges::prompts::AuditPrompts;

pub(crate) fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
    if p.join("conversations_clapnq.jsonl").is_file() {
        Some(p)
    } else {
        eprintln!("skipping: {} is absent", p.display());
        None
    }
}

/// MTRAG clapnq imported into `dir/clapnq`.
pub(crate) fn clapnq(dir: &Path) -> Option<Benchmark> {
    let src = shared()?;
    let out = dir.join("clapnq");
    let opts = ImportOptions {
        domain: Some("clapnq".into()),
        ..Default::default()
    };
    import(
        Format::Mtrag,
        &src,
        &out,
        &opts,
        &mtr_core::progress::NoProgress,
    )
    .unwrap();
    Some(mtr_core::BenchmarkDir::open(&out).unwrap().load().unwrap())
}

fn hash(s: &str) -> u64 {
    let h = blake3::hash(s.as_bytes());
    u64::from_le_bytes(h.as_bytes()[..8].try_into().unwrap())
}

/// A deterministic judge: verdicts derived from a hash of the model and the prompt.
pub(crate) fn hashed_judge(req: &FakeRequest) -> FakeReply {
    let h = hash(&format!("{}\u{1f}{}", req.model, req.last_user));
    let schema = req.schema.clone().unwrap_or_default();
    if let Some(max) = crate::judges::record::pick_max(&schema) {
        FakeReply::json(serde_json::json!({"justification": "hashed pick", "choice": 1 + h % max}))
    } else {
        FakeReply::json(serde_json::json!({"justification": "hashed rating", "rating": 1 + h % 5}))
    }
}

/// Judges `names` (one endpoint each) on one fake server.
pub(crate) async fn fake_llm(
    fake: &FakeServer,
    names: &[&str],
    cache: &Path,
    concurrency: usize,
) -> Llm {
    let mut endpoints = Vec::new();
    for n in names {
        let mut e = fake.endpoint(n, &format!("{n}-model"));
        e.max_concurrency = concurrency;
        endpoints.push(e);
    }
    let config = LlmConfig {
        endpoints,
        roles: Roles {
            judges: names.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        ..Default::default()
    };
    llm_with_cache(config, cache).await
}

/// The client for `config` with its response cache at `cache` and default options.
pub(crate) async fn llm_with_cache(config: LlmConfig, cache: &Path) -> Llm {
    Llm::new(
        config,
        LlmOptions {
            cache_path: Some(cache.to_path_buf()),
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// A planning client (`--dry-run`: nothing is called) for `config` with its response cache at
/// `cache`.
pub(crate) async fn dry_run_llm(config: LlmConfig, cache: &Path) -> Llm {
    Llm::new(
        config,
        LlmOptions {
            cache_path: Some(cache.to_path_buf()),
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// Runs an audit with a BM25 index in `index`.
pub(crate) async fn audit(
    bench: &Benchmark,
    llm: &Llm,
    settings: AuditSettings,
    out: &Path,
    index: &Path,
) -> Outcome {
    let bm25 =
        crate::items::materials::bm25_index(bench, index, &mtr_core::progress::NoProgress).unwrap();
    audit_with(bench, llm, settings, out, vec![Arc::new(bm25)]).await
}

/// [`audit`] that must write the folder (not a dry run): its summary.
pub(crate) async fn audited(
    bench: &Benchmark,
    llm: &Llm,
    settings: AuditSettings,
    out: &Path,
    index: &Path,
) -> Box<crate::summary::Summary> {
    match audit(bench, llm, settings, out, index).await {
        Outcome::Audited(s) => s,
        Outcome::DryRun { .. } => panic!("a dry run where an audit was expected"),
    }
}

/// Runs an audit with the given retrievers for hard negatives.
pub(crate) async fn audit_with(
    bench: &Benchmark,
    llm: &Llm,
    settings: AuditSettings,
    out: &Path,
    retrievers: Vec<Arc<dyn mtr_retrieve::Retriever>>,
) -> Outcome {
    crate::run::run(bench, job(settings, out, retrievers), llm)
        .await
        .unwrap()
}

/// An audit job of the built-in prompts, no human labels and no progress display.
pub(crate) fn job(
    settings: AuditSettings,
    out: &Path,
    retrievers: Vec<Arc<dyn mtr_retrieve::Retriever>>,
) -> AuditJob {
    AuditJob {
        settings,
        out_dir: out.to_path_buf(),
        prompts: AuditPrompts::builtin().unwrap(),
        retrievers,
        config_hash: "test".into(),
        tool_version: "test".into(),
        git_commit: None,
        human_labels: None,
        human_sample: None,
        progress: mtr_core::progress::none(),
    }
}

/// Two judges on `fake`: `a` (a-model) as configured and `p` (p-model) continuing a prefilled
/// answer with ratings in `mode`.
pub(crate) fn probability_pair_config(
    fake: &FakeServer,
    mode: mtr_llm::logprob::RatingMode,
) -> LlmConfig {
    let a = fake.endpoint("a", "a-model");
    let mut p = fake.endpoint("p", "p-model");
    p.rating_mode = mode;
    p.continues_assistant = true;
    LlmConfig {
        endpoints: vec![a, p],
        roles: Roles {
            judges: vec!["a".into(), "p".into()],
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Splits a rendered user prompt into its sections (`## Title` -> body).
pub(crate) fn sections(prompt: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut cur: Option<(String, Vec<&str>)> = None;
    for line in prompt.lines() {
        if let Some(t) = line.strip_prefix("## ") {
            if let Some((k, v)) = cur.take() {
                out.insert(k, v.join("\n").trim().to_string());
            }
            cur = Some((t.trim().to_string(), Vec::new()));
        } else if let Some((_, v)) = cur.as_mut() {
            v.push(line);
        }
    }
    if let Some((k, v)) = cur {
        out.insert(k, v.join("\n").trim().to_string());
    }
    out
}

/// `[n] text` entries of a passage list section.
pub(crate) fn numbered(section: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in section.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[')
            && let Some((n, body)) = rest.split_once("] ")
            && n.parse::<usize>().is_ok_and(|n| n == out.len() + 1)
        {
            out.push(body.to_string());
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.push('\n');
            last.push_str(line);
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}
