//! `mtr local speed`: prompt and generation tokens per second of a local server: a chat model
//! from llama.cpp's own timings, the embeddings server from the wall time of its batches.
//! [`super::SpeedFile`] keeps the figures for the plans of later commands.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{LocalServer, ServerKind, ensure_crypto};
use crate::error::{LocalError, Result};

/// Measured speed of one local server, averaged over runs: the server's total, with its
/// requests one at a time on a machine otherwise at rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpeedReport {
    /// The server's (and its endpoint's) name, e.g. `local-qwen2.5-coder-0.5b-instruct-q4_k_m`.
    pub server: String,
    /// The model's name in requests (the GGUF stem, or `multilingual-e5-small`).
    pub alias: String,
    /// The GGUF file name of a chat server; empty for the embeddings server.
    pub model_file: String,
    /// Threads the server ran with.
    pub threads: u32,
    /// Slots the server ran with.
    pub slots: u32,
    /// How many runs were measured.
    pub runs: usize,
    /// Prompt tokens processed, summed over the runs.
    pub prompt_tokens: u64,
    /// Prompt processing speed, tokens per second.
    pub prompt_tok_s: f64,
    /// 0 for the embeddings server (it generates nothing).
    pub generated_tokens: u64,
    /// Generation speed, tokens per second (0 for the embeddings server).
    pub generation_tok_s: f64,
    /// When it was measured, seconds since the Unix epoch.
    pub measured_unix: u64,
}

const SPEED_PASSAGE: &str = "The MTRAG benchmark contains multi-turn conversations between a user and an assistant about documents from four domains: government web pages, cloud documentation, financial question answering and Wikipedia-style articles. Each turn has a question, a rewritten standalone question, reference passages marked as relevant by annotators, and a reference answer. Retrieval systems are scored on every turn with nDCG and recall, and the conversations include follow-up questions, clarifications, unanswerable questions and topic switches, which make the task harder than single-turn retrieval. Annotators also labeled whether each question is answerable from the corpus at all.";

/// Passages per embeddings run.
const EMBED_TEXTS: usize = 16;

/// Token counts and milliseconds summed over the runs.
#[derive(Default)]
struct Totals {
    prompt_n: u64,
    prompt_ms: f64,
    predicted_n: u64,
    predicted_ms: f64,
}

/// Starts (if needed) a local server and measures its speed, `runs` times: a chat server on a
/// ~200-token prompt with a ~100-token answer (each prompt differs, so the prompt cache does
/// not help), the embeddings server on batches of [`EMBED_TEXTS`] passages (tokens counted as
/// `--dry-run` counts them: `count_tokens(model, text)`, the LLM client's own count).
pub async fn measure_speed(
    server: &LocalServer,
    runs: usize,
    count_tokens: fn(&str, &str) -> u64,
) -> Result<SpeedReport> {
    let url = server.ensure_running().await?;
    ensure_crypto();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| LocalError::Internal(format!("HTTP client: {e}")))?;
    let runs = runs.max(1);
    let (totals, model_file) = match &server.kind {
        ServerKind::Chat { model } => (
            chat_runs(&client, server, &url, runs).await?,
            model
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        ServerKind::Embeddings => (
            embed_runs(&client, server, &url, runs, count_tokens).await?,
            String::new(),
        ),
    };
    let rate = |n: u64, ms: f64| {
        if ms > 0.0 {
            n as f64 / (ms / 1000.0)
        } else {
            0.0
        }
    };
    Ok(SpeedReport {
        server: server.name.clone(),
        alias: server.alias.clone(),
        model_file,
        threads: server.threads,
        slots: server.slots,
        runs,
        prompt_tokens: totals.prompt_n,
        prompt_tok_s: rate(totals.prompt_n, totals.prompt_ms),
        generated_tokens: totals.predicted_n,
        generation_tok_s: rate(totals.predicted_n, totals.predicted_ms),
        measured_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    })
}

/// POSTs `body` to `url` and reads the JSON answer.
async fn post(
    client: &reqwest::Client,
    server: &LocalServer,
    url: String,
    body: &serde_json::Value,
) -> Result<serde_json::Value> {
    client
        .post(url)
        .json(body)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| LocalError::Protocol {
            message: format!("speed run failed: {e}"),
            hint: format!("see {}", server.log_path().display()),
        })?
        .json()
        .await
        .map_err(|e| LocalError::Protocol {
            message: format!("speed run answer: {e}"),
            hint: format!("see {}", server.log_path().display()),
        })
}

/// A chat server's runs, from llama.cpp's `timings`.
async fn chat_runs(
    client: &reqwest::Client,
    server: &LocalServer,
    url: &str,
    runs: usize,
) -> Result<Totals> {
    let mut t = Totals::default();
    for run in 0..runs {
        let body = serde_json::json!({
            "model": server.alias,
            "messages": [
                {"role": "system", "content": format!("Run {run}. You are a careful assistant.")},
                {"role": "user", "content": format!("{SPEED_PASSAGE}\n\nExplain in about 80 words what makes this benchmark harder than single-turn retrieval (run {run}).")}
            ],
            "temperature": 0.0,
            "seed": run,
            "max_tokens": 100,
            "cache_prompt": false
        });
        let resp = post(client, server, format!("{url}/chat/completions"), &body).await?;
        let timing = |k: &str| {
            resp.pointer(&format!("/timings/{k}"))
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        t.prompt_n += timing("prompt_n") as u64;
        t.prompt_ms += timing("prompt_ms");
        t.predicted_n += timing("predicted_n") as u64;
        t.predicted_ms += timing("predicted_ms");
    }
    Ok(t)
}

/// The embeddings server's runs: wall time per batch, tokens as the client counts them.
async fn embed_runs(
    client: &reqwest::Client,
    server: &LocalServer,
    url: &str,
    runs: usize,
    count_tokens: fn(&str, &str) -> u64,
) -> Result<Totals> {
    let mut t = Totals::default();
    for run in 0..runs {
        let texts: Vec<String> = (0..EMBED_TEXTS)
            .map(|i| format!("(run {run}, text {i}) {SPEED_PASSAGE}"))
            .collect();
        // as the relevance judge and the dense retriever send passages: the embedded server
        // adds the E5 prefix itself from `input_type` (no doubled prefix)
        let body =
            serde_json::json!({"model": server.alias, "input": texts, "input_type": "passage"});
        let started = Instant::now();
        post(client, server, format!("{url}/embeddings"), &body).await?;
        t.prompt_ms += started.elapsed().as_secs_f64() * 1000.0;
        t.prompt_n += texts
            .iter()
            .map(|x| count_tokens(&server.alias, &format!("passage: {x}")))
            .sum::<u64>();
    }
    Ok(t)
}
