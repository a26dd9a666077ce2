//! Which provider failures are worth retrying and how long to wait: exponential backoff with
//! full jitter (backon), never shorter than the server's `Retry-After`. async-openai's own
//! retry layer is replaced (see [`crate::provider`]) so every attempt is visible here, counted
//! in the ledger, and bounded by `[llm.retry]`.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

use crate::config::RetryConfig;

/// A failed HTTP attempt, as seen by the retry loop.
#[derive(Debug, Clone)]
pub(crate) struct AttemptError {
    pub status: Option<u16>,
    pub retry_after: Option<Duration>,
    pub message: String,
    /// Worth another attempt (429, 408, 5xx, timeouts, connection errors, a cut body).
    pub retryable: bool,
}

impl AttemptError {
    pub(crate) fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> Self {
        let retryable = status == 429 || status == 408 || status == 409 || status >= 500;
        let body = body.trim();
        let detail = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| body.chars().take(300).collect());
        Self {
            status: Some(status),
            retry_after,
            message: detail,
            retryable,
        }
    }
}

/// The delays between attempts for one call.
pub(crate) struct Delays {
    inner: backon::ExponentialBackoff,
    max_retry_after: Duration,
}

impl Delays {
    pub(crate) fn new(cfg: &RetryConfig) -> Self {
        let inner = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(cfg.base_delay_ms.max(1)))
            .with_max_delay(Duration::from_secs_f64(cfg.max_delay_s.max(0.001)))
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(cfg.max_attempts.saturating_sub(1) as usize)
            .build();
        Self {
            inner,
            max_retry_after: Duration::from_secs_f64(cfg.max_retry_after_s.max(0.0)),
        }
    }

    /// How long to wait before the next attempt, or `None` when attempts are used up or the
    /// server asks for a wait longer than allowed.
    pub(crate) fn next(&mut self, err: &AttemptError) -> Option<Duration> {
        let backoff = self.inner.next()?;
        match err.retry_after {
            Some(ra) if ra > self.max_retry_after => None,
            Some(ra) => Some(ra.max(backoff.min(ra + Duration::from_millis(250)))),
            None => Some(backoff),
        }
    }
}

/// Parses `Retry-After` (seconds, possibly fractional) or `retry-after-ms`.
pub(crate) fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    v.parse::<f64>()
        .ok()
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honours_retry_after_and_gives_up() {
        let cfg = RetryConfig {
            max_attempts: 3,
            base_delay_ms: 10,
            max_delay_s: 1.0,
            max_retry_after_s: 5.0,
            parse_retries: 0,
        };
        let mut d = Delays::new(&cfg);
        let e = AttemptError {
            status: Some(429),
            retry_after: Some(Duration::from_secs(2)),
            message: String::new(),
            retryable: true,
        };
        let w = d.next(&e).unwrap();
        assert!(
            w >= Duration::from_secs(2) && w <= Duration::from_millis(2250),
            "{w:?}"
        );
        assert!(d.next(&e).is_some());
        assert!(d.next(&e).is_none(), "3 attempts = 2 waits");
        let mut d = Delays::new(&cfg);
        let long = AttemptError {
            retry_after: Some(Duration::from_secs(60)),
            ..e
        };
        assert!(d.next(&long).is_none());
    }

    #[test]
    fn classifies_statuses() {
        assert!(AttemptError::from_status(429, None, "").retryable);
        assert!(AttemptError::from_status(503, None, "").retryable);
        let e = AttemptError::from_status(400, None, r#"{"error":{"message":"bad schema"}}"#);
        assert!(!e.retryable);
        assert_eq!(e.message, "bad schema");
    }
}
