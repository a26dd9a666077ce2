//! Relevance judges that are not chat models: cross-encoder rerankers and embedding models,
//! asked "how relevant is each of these passages to this query?" and answering with one score
//! per passage.
//!
//! A chat model of half a billion parameters writes the same grade for every passage; a
//! reranker is built for exactly this judgement and costs one forward pass per passage. An
//! endpoint with a `[llm.endpoints.rerank]` table is such a judge. It speaks one of the APIs
//! users already run ([`RerankApi`]): llama.cpp's `/v1/rerank` (`--reranking`), Hugging Face
//! TEI's `/rerank`, vLLM's `/score`, the Cohere/Jina-style hosted `/rerank`, or plain
//! OpenAI-compatible `/embeddings` (the cosine of query and passage vectors: a bi-encoder, what
//! the embedded local default uses). Each API's scores live on its own scale, so every answer
//! is normalised to 0-1 ([`RerankConfig::normalise`]) before a caller turns it into a grade or
//! a pick.
//!
//! The wire formats (request bodies, response parsing) are here; the call itself (cache, retry,
//! rate limits, ledger) is [`crate::Llm::rerank`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Which rerank API an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankApi {
    /// llama.cpp server with `--reranking`: `POST {base_url}/rerank` (base URL with `/v1`),
    /// `{query, documents}` -> `results[{index, relevance_score}]`; scores are logits.
    Llamacpp,
    /// Hugging Face text-embeddings-inference: `POST {base_url}/rerank`, `{query, texts}` ->
    /// `[{index, score}]`; scores are sigmoid probabilities (`raw_scores: false`).
    Tei,
    /// vLLM: `POST {base_url}/score`, `{model, text_1, text_2}` -> `data[{index, score}]`;
    /// cross-encoder scores are probabilities.
    Vllm,
    /// Cohere, Jina and compatible hosted APIs: `POST {base_url}/rerank`,
    /// `{model, query, documents}` -> `results[{index, relevance_score}]` in 0-1.
    Cohere,
    /// OpenAI-compatible `POST {base_url}/embeddings`: the cosine of the query's and each
    /// passage's vectors (a bi-encoder), mapped linearly from `score_range` to 0-1.
    Embeddings,
}

impl RerankApi {
    /// The path appended to the endpoint's base URL.
    pub fn path(self) -> &'static str {
        match self {
            RerankApi::Llamacpp | RerankApi::Tei | RerankApi::Cohere => "/rerank",
            RerankApi::Vllm => "/score",
            RerankApi::Embeddings => "/embeddings",
        }
    }

    /// The API's name in configurations (`llamacpp`, `tei`, `vllm`, `cohere`, `embeddings`).
    pub fn name(self) -> &'static str {
        match self {
            RerankApi::Llamacpp => "llamacpp",
            RerankApi::Tei => "tei",
            RerankApi::Vllm => "vllm",
            RerankApi::Cohere => "cohere",
            RerankApi::Embeddings => "embeddings",
        }
    }
}

/// `[llm.endpoints.rerank]`: this endpoint is a relevance judge, not a chat model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankConfig {
    /// The API it speaks.
    pub api: RerankApi,
    /// Put before the query text (e5 models want `query: `).
    #[serde(default)]
    pub query_prefix: String,
    /// Put before each passage text (e5 models want `passage: `).
    #[serde(default)]
    pub passage_prefix: String,
    /// `[lo, hi]`: the raw scores mapped linearly onto 0-1 (clipped). Default: the API's own
    /// scale (logits through a sigmoid for llama.cpp, 0-1 for the others) and, for
    /// `embeddings`, a cosine range of [`DEFAULT_COSINE_RANGE`].
    #[serde(default)]
    pub score_range: Option<[f64; 2]>,
    /// A judge's pick abstains with `none` when the best normalised score is below this.
    #[serde(default = "default_floor")]
    pub abstain_below: f64,
    /// A judge's pick abstains with `several` when the two best normalised scores are closer
    /// than this.
    #[serde(default = "default_margin")]
    pub tie_margin: f64,
}

/// The cosine range mapped onto 0-1 for an `embeddings` judge without `score_range`: where
/// multilingual-e5-small puts unrelated (about 0.72) and answering (about 0.88) passages.
pub(crate) const DEFAULT_COSINE_RANGE: [f64; 2] = [0.72, 0.90];

/// The relevance judge of the embedded local default: multilingual-e5-small through
/// `/embeddings`, with its `query: ` / `passage: ` prefixes and the default cosine range.
pub(crate) fn local_e5() -> RerankConfig {
    RerankConfig {
        query_prefix: "query: ".into(),
        passage_prefix: "passage: ".into(),
        ..RerankConfig::new(RerankApi::Embeddings)
    }
}

fn default_floor() -> f64 {
    0.25
}

fn default_margin() -> f64 {
    0.02
}

impl RerankConfig {
    /// A judge of `api` with the default scale and abstention rule.
    pub fn new(api: RerankApi) -> Self {
        Self {
            api,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            score_range: None,
            abstain_below: default_floor(),
            tie_margin: default_margin(),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if let Some([lo, hi]) = self.score_range
            && !(lo.is_finite() && hi.is_finite() && lo < hi)
        {
            return Err(format!(
                "rerank `score_range` [{lo}, {hi}] must have lo < hi"
            ));
        }
        if !(0.0..=1.0).contains(&self.abstain_below) || !(0.0..=1.0).contains(&self.tie_margin) {
            return Err("rerank `abstain_below` and `tie_margin` must lie in 0-1".into());
        }
        Ok(())
    }

    /// A raw score on this API's scale, mapped onto 0-1.
    pub fn normalise(&self, raw: f64) -> f64 {
        let range = self.score_range.or(match self.api {
            RerankApi::Embeddings => Some(DEFAULT_COSINE_RANGE),
            _ => None,
        });
        let s = match (range, self.api) {
            (Some([lo, hi]), _) => (raw - lo) / (hi - lo),
            (None, RerankApi::Llamacpp) => 1.0 / (1.0 + (-raw).exp()),
            (None, _) => raw,
        };
        if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) }
    }

    /// The query as sent.
    pub fn query_text(&self, query: &str) -> String {
        format!("{}{query}", self.query_prefix)
    }

    /// A passage as sent.
    pub fn passage_text(&self, passage: &str) -> String {
        format!("{}{passage}", self.passage_prefix)
    }

    /// The request body for `query` and `passages` (prefixes applied).
    pub fn body(&self, model: &str, query: &str, passages: &[String]) -> Value {
        let q = self.query_text(query);
        let docs: Vec<String> = passages.iter().map(|p| self.passage_text(p)).collect();
        match self.api {
            RerankApi::Llamacpp | RerankApi::Cohere => {
                json!({"model": model, "query": q, "documents": docs, "top_n": docs.len()})
            }
            RerankApi::Tei => json!({"query": q, "texts": docs, "raw_scores": false}),
            RerankApi::Vllm => json!({"model": model, "text_1": q, "text_2": docs}),
            RerankApi::Embeddings => {
                let mut input = vec![q];
                input.extend(docs);
                json!({"model": model, "input": input, "encoding_format": "float"})
            }
        }
    }

    /// For an `embeddings` judge whose server adds the E5 prefixes itself from `input_type`
    /// (`prefix_as_input_type`): the query's and the passages' request bodies, each with its
    /// `input_type` and the texts without a leading `query: ` / `passage: `. Their answers
    /// are put together by [`merge_split`].
    pub(crate) fn split_bodies(&self, model: &str, query: &str, passages: &[String]) -> [Value; 2] {
        let q = self.query_text(query);
        let q = q.strip_prefix("query: ").unwrap_or(&q);
        let docs: Vec<String> = passages
            .iter()
            .map(|p| {
                let p = self.passage_text(p);
                p.strip_prefix("passage: ")
                    .map_or(p.clone(), str::to_string)
            })
            .collect();
        [
            json!({"model": model, "input": [q], "encoding_format": "float", "input_type": "query"}),
            json!({"model": model, "input": docs, "encoding_format": "float", "input_type": "passage"}),
        ]
    }

    /// The raw score of each of `n` passages, in input order, from a response body.
    pub fn parse(&self, resp: &Value, n: usize) -> Result<Vec<f64>, String> {
        match self.api {
            RerankApi::Embeddings => parse_cosines(resp, n),
            api => {
                let (list, score) = match api {
                    RerankApi::Tei => (resp.as_array(), "score"),
                    RerankApi::Vllm => (resp.get("data").and_then(Value::as_array), "score"),
                    _ => (
                        resp.get("results").and_then(Value::as_array),
                        "relevance_score",
                    ),
                };
                let list = list.ok_or_else(|| {
                    format!(
                        "a {} rerank answer without its list of scores: {}",
                        api.name(),
                        excerpt(resp)
                    )
                })?;
                let mut out: Vec<Option<f64>> = vec![None; n];
                for (pos, item) in list.iter().enumerate() {
                    let at = item
                        .get("index")
                        .and_then(Value::as_u64)
                        .map_or(pos, |i| i as usize);
                    let s = item.get(score).and_then(Value::as_f64);
                    if let (Some(slot), Some(s)) = (out.get_mut(at), s) {
                        *slot = Some(s);
                    }
                }
                out.into_iter()
                    .enumerate()
                    .map(|(i, s)| {
                        s.ok_or_else(|| format!("the rerank answer has no score for passage {i}"))
                    })
                    .collect()
            }
        }
    }
}

/// Prompt tokens an answer reports (`usage.prompt_tokens`, `usage.total_tokens`, Cohere's
/// `meta.billed_units.input_tokens`), if any.
pub(crate) fn reported_tokens(resp: &Value) -> Option<u64> {
    [
        "/usage/prompt_tokens",
        "/usage/total_tokens",
        "/meta/billed_units/input_tokens",
    ]
    .iter()
    .find_map(|p| resp.pointer(p).and_then(Value::as_u64))
}

fn excerpt(v: &Value) -> String {
    crate::redact::redact_owned(v.to_string().chars().take(200).collect())
}

/// The answers to [`RerankConfig::split_bodies`] as one answer to [`RerankConfig::body`]: the
/// query's vector at index 0, the passages' after it, the prompt tokens added up (when both
/// report them).
pub(crate) fn merge_split(query: &Value, passages: &Value) -> Value {
    let data = |v: &Value| v.get("data").and_then(Value::as_array).cloned();
    let mut merged: Vec<Value> = Vec::new();
    for (offset, d) in [(0, data(query)), (1, data(passages))] {
        for (pos, mut item) in d.unwrap_or_default().into_iter().enumerate() {
            let at = item
                .get("index")
                .and_then(Value::as_u64)
                .map_or(pos, |i| i as usize);
            if let Some(m) = item.as_object_mut() {
                m.insert("index".into(), Value::from(at + offset));
            }
            merged.push(item);
        }
    }
    let mut out = json!({"object": "list", "data": merged});
    if let (Some(a), Some(b), Some(m)) = (
        reported_tokens(query),
        reported_tokens(passages),
        out.as_object_mut(),
    ) {
        m.insert("usage".into(), json!({"prompt_tokens": a + b}));
    }
    out
}

/// Cosines of the first vector (the query) with each of the `n` others.
fn parse_cosines(resp: &Value, n: usize) -> Result<Vec<f64>, String> {
    let data = resp
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("an embeddings answer without `data`: {}", excerpt(resp)))?;
    let mut vecs: Vec<Option<Vec<f64>>> = vec![None; n + 1];
    for (pos, d) in data.iter().enumerate() {
        let at = d
            .get("index")
            .and_then(Value::as_u64)
            .map_or(pos, |i| i as usize);
        let v = d
            .get("embedding")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect::<Vec<_>>());
        if let (Some(slot), Some(v)) = (vecs.get_mut(at), v) {
            *slot = Some(v);
        }
    }
    let vecs: Vec<Vec<f64>> = vecs
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("the embeddings answer has no vector for input {i}")))
        .collect::<Result<_, _>>()?;
    let q = &vecs[0];
    Ok(vecs[1..].iter().map(|p| cosine(q, p)).collect())
}

/// Cosine similarity (0 for a zero vector).
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Content-addressed key of one rerank answer: API, model, prefixes, query and passages, and
/// whether the prefixes went as `input_type` (`typed`: the server embedded other strings).
pub(crate) fn cache_key(
    cfg: &RerankConfig,
    model: &str,
    query: &str,
    passages: &[String],
    typed: bool,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm rerank v1\0");
    if typed {
        h.update(b"input_type\0");
    }
    for part in [
        cfg.api.name(),
        model,
        &cfg.query_prefix,
        &cfg.passage_prefix,
        query,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    for p in passages {
        h.update(p.as_bytes());
        h.update(b"\0");
    }
    h.finalize().to_hex().to_string()
}

/// One rerank answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reranked {
    /// Raw scores on the API's scale, in the order of the passages given.
    pub raw: Vec<f64>,
    /// The same, normalised to 0-1 ([`RerankConfig::normalise`]).
    pub scores: Vec<f64>,
    /// Prompt tokens, as the API reports them, else as counted.
    pub prompt_tokens: u64,
    /// USD of this call (0 for a cache hit).
    pub cost_usd: f64,
    /// USD the answer cost when it was made (also for a cache hit).
    pub answer_cost_usd: f64,
    /// Served from the cache (nothing paid).
    pub cached: bool,
    /// The endpoint that answered.
    pub endpoint: String,
    /// Its model.
    pub model: String,
    /// HTTP attempts made (0 for a cache hit).
    pub attempts: u32,
    /// The cache key.
    pub key: String,
}

#[cfg(test)]
mod tests;
