//! One HTTP exchange with an endpoint: rate limits, a replica slot (pinned to a conversation's
//! replica when asked), retries with backoff, a local server reconnected when it stopped
//! answering; and reading the first choice of a chat response (text, finish reason, usage,
//! refusal).

use serde_json::{Value, json};

use super::Llm;
use crate::balance::Endpoint;
use crate::chat::{ChatMessage, Usage};
use crate::error::{LlmError, Result};
use crate::ledger::Event;
use crate::retry::Delays;
use crate::tokens;

impl Llm {
    /// After a failed attempt at `ep`: reconnects a local server that did not answer, then
    /// waits for the next retry (Ok) or, when the error is final or the retries are spent,
    /// returns it as the endpoint's provider error. `what` names the exchange in the log.
    pub(crate) async fn retry_or_fail(
        &self,
        ep: &Endpoint,
        err: crate::retry::AttemptError,
        delays: &mut Delays,
        attempts: u32,
        what: &str,
    ) -> Result<()> {
        let wait = if err.retryable {
            delays.next(&err)
        } else {
            None
        };
        if err.status.is_none() && !ep.local.is_empty() {
            ep.recover_local().await?;
        }
        match wait {
            Some(d) => {
                self.inner.ledger.event(&ep.cfg.name, Event::Retry);
                tracing::debug!(endpoint = %ep.cfg.name, status = ?err.status, wait_ms = d.as_millis() as u64, "retrying {what}: {}", err.message);
                tokio::time::sleep(d).await;
                Ok(())
            }
            None => Err(LlmError::Provider {
                endpoint: ep.cfg.name.clone(),
                status: err.status,
                message: err.message,
                attempts,
            }),
        }
    }

    /// One HTTP exchange with retries; returns the response JSON and the attempts made. A
    /// pinned call (`pin`, see [`crate::affinity`]) goes to its conversation's replica and
    /// carries its slot (`id_slot`, with `cache_prompt`).
    pub(super) async fn send_with(
        &self,
        ep: &Endpoint,
        body: &Value,
        tokens: u64,
        embeddings: bool,
        pin: Option<u64>,
        start_by: Option<std::time::Instant>,
    ) -> Result<(Value, u32)> {
        let mut delays = Delays::new(&self.inner.config.retry);
        let mut attempts = 0u32;
        loop {
            ep.rate_limit(tokens).await;
            let slot = ep.slot(pin).await?;
            // a first attempt that waited past its deadline is not sent (retries of a call
            // already sent go on)
            if attempts == 0 && start_by.is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(LlmError::NotStarted);
            }
            attempts += 1;
            let res = if embeddings {
                slot.replica.embeddings(body).await
            } else if let Some(id) = slot.id_slot {
                let mut pinned = body.clone();
                if let Some(o) = pinned.as_object_mut() {
                    o.insert("id_slot".into(), json!(id));
                    o.insert("cache_prompt".into(), json!(true));
                }
                slot.replica.chat(&pinned).await
            } else {
                slot.replica.chat(body).await
            };
            if let Err(e) = &res {
                tracing::debug!(endpoint = %ep.cfg.name, replica = %crate::redact::mask_url_credentials(&slot.replica.url), status = ?e.status, "attempt failed: {}", e.message);
            }
            drop(slot);
            let err = match res {
                Ok(v) if embeddings || v.pointer("/choices/0").is_some() => {
                    return Ok((v, attempts));
                }
                Ok(v) => crate::retry::AttemptError {
                    status: None,
                    retry_after: None,
                    message: crate::redact::redact_owned(format!(
                        "response without choices: {}",
                        v.to_string().chars().take(200).collect::<String>()
                    )),
                    retryable: true,
                },
                Err(e) => e,
            };
            self.retry_or_fail(ep, err, &mut delays, attempts, "request")
                .await?;
        }
    }
}

/// The first choice's refusal message (OpenAI `message.refusal`), when the provider refused.
pub(crate) fn read_refusal(resp: &Value) -> Option<String> {
    resp.pointer("/choices/0/message/refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .map(|r| crate::redact::redact_owned(r.to_string()))
}

/// Text, finish reason and usage of the first choice (usage counted when not reported).
pub(crate) fn read_choice(
    resp: &Value,
    model: &str,
    body: &Value,
) -> (String, Option<String>, Usage) {
    // a secret echoed in an answer is masked before it can reach the cache or an output
    let text = crate::redact::redact_owned(
        resp.pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    );
    let finish = resp
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let prompt = resp
        .pointer("/usage/prompt_tokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| {
            let msgs: Vec<ChatMessage> = body
                .get("messages")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            tokens::count_messages(model, &msgs)
        });
    let completion = resp
        .pointer("/usage/completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| tokens::count_text(model, &text));
    (
        text,
        finish,
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
        },
    )
}
