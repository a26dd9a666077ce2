//! `mtr local speed`: prompt and generation tokens per second of a local chat model, from
//! llama.cpp's own timings.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{LocalServer, ensure_crypto};
use crate::error::{LlmError, Result};

/// Measured speed of one local chat model (llama.cpp's own timings, averaged over runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    pub server: String,
    pub threads: u32,
    pub runs: usize,
    pub prompt_tokens: u64,
    pub prompt_tok_s: f64,
    pub generated_tokens: u64,
    pub generation_tok_s: f64,
}

const SPEED_PASSAGE: &str = "The MTRAG benchmark contains multi-turn conversations between a user and an assistant about documents from four domains: government web pages, cloud documentation, financial question answering and Wikipedia-style articles. Each turn has a question, a rewritten standalone question, reference passages marked as relevant by annotators, and a reference answer. Retrieval systems are scored on every turn with nDCG and recall, and the conversations include follow-up questions, clarifications, unanswerable questions and topic switches, which make the task harder than single-turn retrieval. Annotators also labeled whether each question is answerable from the corpus at all.";

/// Starts (if needed) a chat server and measures prompt processing and generation speed on a
/// ~200-token prompt with a ~100-token answer, `runs` times (each prompt differs, so the
/// prompt cache does not help).
pub async fn measure_speed(server: &LocalServer, runs: usize) -> Result<SpeedReport> {
    let url = server.ensure_running().await?;
    ensure_crypto();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| LlmError::Local {
            message: e.to_string(),
            hint: String::new(),
        })?;
    let (mut pn, mut pms, mut gn, mut gms) = (0u64, 0f64, 0u64, 0f64);
    for run in 0..runs.max(1) {
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
        let resp: serde_json::Value = client
            .post(format!("{url}/chat/completions"))
            .json(&body)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| LlmError::Local {
                message: format!("speed run failed: {e}"),
                hint: format!("see {}", server.log_path().display()),
            })?
            .json()
            .await
            .map_err(|e| LlmError::Local {
                message: format!("speed run answer: {e}"),
                hint: String::new(),
            })?;
        let t = |k: &str| {
            resp.pointer(&format!("/timings/{k}"))
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        pn += t("prompt_n") as u64;
        pms += t("prompt_ms");
        gn += t("predicted_n") as u64;
        gms += t("predicted_ms");
    }
    let rate = |n: u64, ms: f64| {
        if ms > 0.0 {
            n as f64 / (ms / 1000.0)
        } else {
            0.0
        }
    };
    Ok(SpeedReport {
        server: server.name.clone(),
        threads: server.threads,
        runs: runs.max(1),
        prompt_tokens: pn,
        prompt_tok_s: rate(pn, pms),
        generated_tokens: gn,
        generation_tok_s: rate(gn, gms),
    })
}
