//! The data model of one chat call: messages in, a [`ChatResult`] out with the parsed value,
//! the raw text, an honest [`ParseStatus`], usage, cost and where the answer came from.

use serde::{Deserialize, Serialize};

use crate::config::Sampling;
use crate::error::LlmError;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The system prompt.
    System,
    /// The user.
    User,
    /// The model (an earlier answer, or a few-shot example).
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who says it.
    pub role: MessageRole,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content: content.into(),
        }
    }
}

/// A JSON schema the answer must match. Sent as `response_format: json_schema` (strict) where
/// the endpoint supports it, and always checked locally after parsing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// Schema name sent to the provider (`[A-Za-z0-9_-]`, e.g. `relevance`).
    pub name: String,
    /// The schema (an object schema; strict mode wants `additionalProperties: false` and every
    /// property required).
    pub schema: serde_json::Value,
}

impl JsonSchema {
    /// A schema named `name`.
    pub fn new(name: impl Into<String>, schema: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            schema,
        }
    }
}

/// What the caller expects back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum OutputSpec {
    /// Free text; `value` is `None`, `status` is `Ok` for any non-empty answer.
    #[default]
    Text,
    /// Any JSON value (extracted tolerantly from the text).
    Json,
    /// JSON matching a schema.
    Schema(JsonSchema),
}

impl OutputSpec {
    /// The spec a Batch item recorded as JSON (`serde_json::to_string`); free text when the
    /// record is unreadable (written by another version).
    pub(crate) fn of_stored(json: &str) -> Self {
        serde_json::from_str(json).unwrap_or_default()
    }
}

/// Which prompt produced the messages (goes into results and fingerprints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptRef {
    /// `name@version`, e.g. `audit/relevance@3`.
    pub id: String,
    /// BLAKE3 of the template source and version ([`crate::Prompt::hash`]).
    pub hash: String,
}

/// The rating a request asks for: the JSON key its grade is written under and the scale.
/// On an endpoint whose `rating_mode` is `probability`, the client reads the grade's
/// probability distribution at that position ([`crate::logprob`]) and returns it in
/// [`ChatResult::rating`]; elsewhere the field changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RatingSpec {
    /// JSON key of the grade, e.g. `rating`.
    pub key: String,
    /// Lowest grade of the scale.
    pub lo: i64,
    /// Highest grade of the scale.
    pub hi: i64,
}

/// One chat call to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The messages sent, in order.
    pub messages: Vec<ChatMessage>,
    /// What the answer must be (default: free text).
    #[serde(default)]
    pub output: OutputSpec,
    /// The prompt these messages were rendered from, if any.
    #[serde(default)]
    pub prompt: Option<PromptRef>,
    /// Sample index for self-consistency (0 for the first/only sample); part of the cache key.
    #[serde(default)]
    pub sample: u32,
    /// Overrides the role's sampling parameters for this call.
    #[serde(default)]
    pub sampling: Option<Sampling>,
    /// Free-form label for logs and the plan (e.g. `relevance`), not part of the cache key.
    #[serde(default)]
    pub label: Option<String>,
    /// The answer is a rating on this scale (see [`RatingSpec`]).
    #[serde(default)]
    pub rating: Option<RatingSpec>,
    /// The conversation this call belongs to: calls with one key go to one server and slot
    /// where the endpoint reuses a slot's prompt prefix ([`crate::affinity`]); not part of
    /// the cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// A planning hint: the share of this prompt (0 to 1) the endpoint's prompt cache is
    /// expected to hold already, from a caller that knows the order of its calls
    /// ([`crate::prompt_cache`]); a dry-run plan times only the rest at the prompt speed.
    /// Never sent, cached or serialised.
    #[serde(skip)]
    pub planned_cached_share: Option<f64>,
    /// A time budget's deadline for sending: a call still waiting for a rate limit or a
    /// server slot when it passes is not sent and ends with [`crate::LlmError::NotStarted`]
    /// (a call already sent goes on, its retries included). Never sent, cached or serialised.
    #[serde(skip)]
    pub start_by: Option<std::time::Instant>,
}

impl ChatRequest {
    /// A free-text call of these messages, first sample, the role's sampling.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        Self {
            messages,
            output: OutputSpec::Text,
            prompt: None,
            sample: 0,
            sampling: None,
            label: None,
            rating: None,
            affinity: None,
            planned_cached_share: None,
            start_by: None,
        }
    }
    /// The answer is a `lo..=hi` rating written under `key` (read from token probabilities
    /// on endpoints whose `rating_mode` is `probability`).
    pub fn with_rating(mut self, key: impl Into<String>, lo: i64, hi: i64) -> Self {
        self.rating = Some(RatingSpec {
            key: key.into(),
            lo,
            hi,
        });
        self
    }
    /// Expect JSON matching `schema`.
    pub fn with_schema(mut self, schema: JsonSchema) -> Self {
        self.output = OutputSpec::Schema(schema);
        self
    }
    /// Not sent once `deadline` has passed ([`ChatRequest::start_by`]; `None`: no deadline).
    pub fn start_by(mut self, deadline: Option<std::time::Instant>) -> Self {
        self.start_by = deadline;
        self
    }
    /// Expect any JSON value.
    pub fn json(mut self) -> Self {
        self.output = OutputSpec::Json;
        self
    }
    pub(crate) fn with_prompt(mut self, prompt: PromptRef) -> Self {
        self.prompt = Some(prompt);
        self
    }
    /// Sets the sample index ([`ChatRequest::sample`]).
    pub fn with_sample(mut self, sample: u32) -> Self {
        self.sample = sample;
        self
    }
    /// Overrides the role's sampling parameters.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = Some(sampling);
        self
    }
    /// Labels the call for logs and the plan.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// Names the conversation this call belongs to ([`crate::affinity`]).
    pub(crate) fn with_affinity(mut self, key: impl Into<String>) -> Self {
        self.affinity = Some(key.into());
        self
    }
}

/// How the answer's value was obtained. Failures are never turned into default values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ParseStatus {
    /// The whole answer parsed (and matched the schema).
    Ok,
    /// The value was recovered from surrounding text: a fenced block, JSON followed by prose,
    /// or the last `Rating: N` line. `method` says which.
    Extracted {
        /// The extraction that succeeded.
        method: String,
    },
    /// No valid value after every retry; `value` is `None`.
    Failed {
        /// Why there is no valid value.
        error: String,
    },
}

impl ParseStatus {
    /// True unless parsing failed (an extracted value counts).
    pub fn is_ok(&self) -> bool {
        !matches!(self, ParseStatus::Failed { .. })
    }
}

/// Token usage as reported by the provider (or counted with tiktoken when it reports none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt and completion tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// The answer to one [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResult {
    /// The parsed value (`None` for text output or when parsing failed).
    pub value: Option<serde_json::Value>,
    /// The model's final raw text.
    pub text: String,
    /// How the value was obtained.
    pub status: ParseStatus,
    /// Usage summed over every attempt of this call (parse retries included).
    pub usage: Usage,
    /// USD paid for this call now (0 for a cache hit).
    pub cost_usd: f64,
    /// USD this answer cost when it was fetched, cache hit or not: the cost of the result,
    /// the same whatever earlier (interrupted) runs paid.
    #[serde(default)]
    pub answer_cost_usd: f64,
    /// Served from the cache (nothing paid).
    pub cached: bool,
    /// Endpoint name and model that answered.
    pub endpoint: String,
    /// The model that answered.
    pub model: String,
    /// The request's sample index.
    pub sample: u32,
    /// HTTP attempts made (0 for a cache hit).
    pub attempts: u32,
    /// The content-addressed cache key of this call.
    pub key: String,
    /// `finish_reason` of the last attempt (`stop`, `length`, ...).
    pub finish_reason: Option<String>,
    /// The provider's refusal message (OpenAI `message.refusal`): the status is `Failed`
    /// and `text` holds the refusal; never cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The grade distribution read from token probabilities: set when the request carried a
    /// [`RatingSpec`] and the endpoint's `rating_mode` is `probability` (the score is then
    /// `rating.mean`, not the written grade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<crate::logprob::RatingDistribution>,
}

impl ChatResult {
    /// The value, or [`LlmError::Parse`] if parsing failed (text output gives the text as a
    /// JSON string).
    pub fn into_value(self) -> Result<serde_json::Value, LlmError> {
        match (self.status, self.value) {
            (ParseStatus::Failed { error }, _) => Err(LlmError::Parse {
                endpoint: self.endpoint,
                error,
                raw: self.text,
            }),
            (_, Some(v)) => Ok(v),
            (_, None) => Ok(serde_json::Value::String(self.text)),
        }
    }

    /// Deserialises the value into `T` (a parse error if it failed or does not fit).
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, LlmError> {
        let fail = |error: String| LlmError::Parse {
            endpoint: self.endpoint.clone(),
            error,
            raw: self.text.clone(),
        };
        match (&self.status, &self.value) {
            (ParseStatus::Failed { error }, _) => Err(fail(error.clone())),
            (_, Some(v)) => serde_json::from_value(v.clone()).map_err(|e| fail(e.to_string())),
            (_, None) => Err(fail("no JSON value (text output)".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stored_output_spec_reads_back_and_an_unreadable_one_is_text() {
        for spec in [
            OutputSpec::Text,
            OutputSpec::Json,
            OutputSpec::Schema(JsonSchema::new("g", json!({"type": "object"}))),
        ] {
            let stored = serde_json::to_string(&spec).unwrap();
            assert_eq!(OutputSpec::of_stored(&stored), spec);
        }
        assert_eq!(OutputSpec::of_stored("{not json"), OutputSpec::Text);
    }
}
