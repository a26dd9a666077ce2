//! The four agents of a dialogue turn, as LLM calls: the user agent (picks evidence from its
//! path and asks), the humanizer (rewrites later questions the way people type, guarded), the
//! answerer (sees only the evidence and the history) and the verifier's three judges
//! (answerability, corpus-wide uniqueness, faithfulness). Each call goes through the LLM
//! layer's cache; every call's usage is added to a [`CallLog`] so costs can be reported per
//! dialogue and per role. A parse failure is returned as `None` and counted by the caller as a
//! rejection, never turned into a score.

use std::collections::BTreeMap;

use mtr_llm::{ChatRequest, ChatResult, JsonSchema, Llm, LlmError, OutputSpec, Role, Sampling};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{GenerationOptions, HumanizerOptions};
use crate::error::{Error, Result};
use crate::lang::{Language, is_cjk_char};
use crate::prompts::SynthPrompts;

/// What the user agent's question and its standalone version must look like where the
/// endpoint enforces a string's `pattern` (llama.cpp grammars): one sentence on one line
/// that ends with a question mark, at most 40 characters in a CJK language and 150 elsewhere
/// (the prompt asks for 30 characters or 25 words). No sentence end (`.`, `!`, `?`, `。`,
/// `！`, `？`) comes before the last character, except a `.` inside a number (`1.5`): a small
/// model then cannot paste a passage sentence and ask about it after it, nor answer its own
/// question in the standalone version, and it stops writing at its first question mark
/// (measured on Qwen2.5-Coder-0.5B: the user call's completion tokens halved, every
/// standalone version a question). A quote or backslash is never allowed, since the grammar
/// writes these characters raw into the JSON string. The caller still checks the question
/// ([`question_problem`]): a pattern only shapes it.
pub fn question_pattern(lang: &Language) -> String {
    let max = if lang.is_cjk() { 40 } else { 150 };
    format!(r#"^([^"\\\n.!?。！？]|\.[0-9]){{2,{max}}}[?？]$"#)
}

/// A passage as the prompts show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptPassage {
    pub title: String,
    pub section: Option<String>,
    pub text: String,
}

impl PromptPassage {
    /// A chunk as shown to agents. Markdown heading markers are removed from its lines so
    /// that a passage's `## Section` cannot be mistaken for a heading of the prompt itself.
    pub fn of(c: &crate::chunk::Chunk) -> Self {
        let text = c
            .text
            .lines()
            .map(|l| match crate::curate::heading(l) {
                Some((_, h)) => h,
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            title: c.title.clone(),
            section: c.section.clone(),
            text,
        }
    }
}

/// One utterance of the history shown to agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Utter {
    pub speaker: String,
    pub text: String,
}

/// Usage of one agent role.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleUsage {
    pub calls: u64,
    /// Calls answered from the LLM cache (paid in an earlier run).
    pub cached: u64,
    pub parse_failed: u64,
    /// Free-text answers cut at `max_tokens` (`finish_reason: length`) after the retry with
    /// twice the room: failed attempts, never used (a cut answer would enter the benchmark).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// List price of the calls (what they cost when first made, cache hits included), in
    /// picodollars: integer sums are exact and survive the JSON checkpoint bit for bit, so a
    /// resumed run reports the same cost as an uninterrupted one.
    pub cost_pusd: u64,
}

impl RoleUsage {
    pub fn cost_usd(&self) -> f64 {
        pico_to_usd(self.cost_pusd)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn usd_to_pico(usd: f64) -> u64 {
    (usd.max(0.0) * 1e12).round() as u64
}

fn pico_to_usd(p: u64) -> f64 {
    p as f64 / 1e12
}

/// Usage per agent role (`user`, `humanizer`, `answerer`, `answerability`, `uniqueness`,
/// `faithfulness`) and the models that answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallLog {
    pub roles: BTreeMap<String, RoleUsage>,
    /// Role -> model ids that answered its calls.
    pub models: BTreeMap<String, Vec<String>>,
}

impl CallLog {
    pub fn cost(&self) -> f64 {
        pico_to_usd(self.roles.values().map(|r| r.cost_pusd).sum())
    }
    pub fn calls(&self) -> u64 {
        self.roles.values().map(|r| r.calls).sum()
    }
    pub fn merge(&mut self, other: &CallLog) {
        for (k, v) in &other.roles {
            let e = self.roles.entry(k.clone()).or_default();
            e.calls += v.calls;
            e.cached += v.cached;
            e.parse_failed += v.parse_failed;
            e.truncated += v.truncated;
            e.prompt_tokens += v.prompt_tokens;
            e.completion_tokens += v.completion_tokens;
            e.cost_pusd += v.cost_pusd;
        }
        for (k, ms) in &other.models {
            let e = self.models.entry(k.clone()).or_default();
            for m in ms {
                if !e.contains(m) {
                    e.push(m.clone());
                    e.sort();
                }
            }
        }
    }
}

/// True when the answer was cut at `max_tokens`.
fn cut(out: &ChatResult) -> bool {
    out.finish_reason.as_deref() == Some("length")
}

/// What the user agent proposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserProposal {
    /// 0-based index into the offered passages.
    pub passage: usize,
    pub question: String,
    pub standalone: String,
}

/// Why the humanizer's rewrite was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HumanizerGuard {
    Empty,
    TooShort,
    TooLong,
    MetaPhrase,
    WrongLanguage,
    Unchanged,
}

impl HumanizerGuard {
    pub fn name(self) -> &'static str {
        match self {
            HumanizerGuard::Empty => "empty",
            HumanizerGuard::TooShort => "too_short",
            HumanizerGuard::TooLong => "too_long",
            HumanizerGuard::MetaPhrase => "meta_phrase",
            HumanizerGuard::WrongLanguage => "wrong_language",
            HumanizerGuard::Unchanged => "unchanged",
        }
    }
}

/// The agents with their prompts, models and options.
pub struct Agents<'a> {
    pub llm: &'a Llm,
    pub prompts: &'a SynthPrompts,
    pub opts: &'a GenerationOptions,
    pub language: &'a Language,
    /// Endpoint name of the verifier's judge.
    pub verifier: String,
}

/// The outcome of one call: `None` when the output could not be parsed.
type Parsed<T> = Result<Option<T>>;

impl Agents<'_> {
    fn generator_sampling(&self) -> Sampling {
        let mut s = self.llm.sampling(Role::Generator).clone();
        s.max_tokens = Some(
            s.max_tokens
                .map_or(self.opts.max_tokens, |m| m.min(self.opts.max_tokens)),
        );
        s
    }

    /// Whether the verifier's judges write a justification ([`judges_justify`]).
    fn justify(&self) -> bool {
        judges_justify(self.llm, &self.verifier)
    }

    /// One call; a free-text answer cut at `max_tokens` is asked again once with twice the
    /// room, and if cut again is a failed attempt (`None`, counted as `truncated`).
    async fn call(
        &self,
        role: &str,
        req: ChatRequest,
        judge: bool,
        log: &mut CallLog,
    ) -> Result<Option<ChatResult>> {
        let text = matches!(req.output, OutputSpec::Text);
        let first = self.call_once(role, req.clone(), judge, log).await?;
        let Some(out) = first else { return Ok(None) };
        if !(text && cut(&out)) {
            return Ok(Some(out));
        }
        let mut roomier = req;
        let mut s = roomier.sampling.clone().unwrap_or_else(|| {
            if judge {
                self.llm.sampling(Role::Judges).clone()
            } else {
                self.generator_sampling()
            }
        });
        s.max_tokens = Some(s.max_tokens.unwrap_or(512).saturating_mul(2));
        roomier.sampling = Some(s);
        match self.call_once(role, roomier, judge, log).await? {
            Some(out) if !cut(&out) => Ok(Some(out)),
            Some(_) => {
                let r = log.roles.entry(role.to_string()).or_default();
                r.truncated += 1;
                tracing::debug!(role, "answer cut at max_tokens twice; attempt dropped");
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn call_once(
        &self,
        role: &str,
        req: ChatRequest,
        judge: bool,
        log: &mut CallLog,
    ) -> Result<Option<ChatResult>> {
        let req = req.with_label(format!("synth/{role}"));
        // each call in its own task: the generation loop polls every dialogue from one task,
        // and HTTP handling done there would queue behind the other dialogues' work
        let target = if judge {
            mtr_llm::client::Target::Endpoint(self.verifier.clone())
        } else {
            mtr_llm::client::Target::Role(Role::Generator)
        };
        let res = self.llm.spawn_chat(target, req).await;
        let r = log.roles.entry(role.to_string()).or_default();
        r.calls += 1;
        match res {
            Ok(out) => {
                r.cached += u64::from(out.cached);
                r.prompt_tokens += out.usage.prompt_tokens;
                r.completion_tokens += out.usage.completion_tokens;
                r.cost_pusd += usd_to_pico(self.list_price(&out));
                let models = log.models.entry(role.to_string()).or_default();
                if !models.contains(&out.model) {
                    models.push(out.model.clone());
                    models.sort();
                }
                if out.status.is_ok() {
                    Ok(Some(out))
                } else {
                    r.parse_failed += 1;
                    Ok(None)
                }
            }
            Err(LlmError::Parse { .. }) => {
                r.parse_failed += 1;
                Ok(None)
            }
            Err(e) => Err(Error::Llm(e)),
        }
    }

    /// What the call costs at the endpoint's list price, computed from its usage the same way
    /// whether it was paid now or served from the cache, so per-dialogue costs do not depend
    /// on what an earlier (interrupted) run already paid.
    fn list_price(&self, out: &ChatResult) -> f64 {
        self.llm
            .config()
            .endpoint(&out.endpoint)
            .map(|e| e.cost(out.usage.prompt_tokens, out.usage.completion_tokens))
            .unwrap_or(out.cost_usd)
    }

    /// The user agent: picks one of `passages` and asks about it. Where the endpoint enforces
    /// patterns, the question and its standalone version are one short sentence that ends
    /// with a question mark ([`question_pattern`]); everywhere the caller checks them with
    /// [`question_problem`].
    #[allow(clippy::too_many_arguments)]
    pub async fn user(
        &self,
        history: &[Utter],
        asked: &[String],
        passages: &[PromptPassage],
        first: bool,
        switch: bool,
        feedback: Option<&str>,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<UserProposal> {
        let choices: Vec<usize> = (1..=passages.len()).collect();
        let pattern = question_pattern(self.language);
        let schema = json!({
            "type": "object",
            "properties": {
                "passage": {"type": "integer", "enum": choices},
                "question": {"type": "string", "pattern": pattern},
                "standalone": {"type": "string", "pattern": pattern}
            },
            "required": ["passage", "question", "standalone"],
            "additionalProperties": false
        });
        let ctx = json!({
            "language": self.language.name(), "history": history, "asked": asked, "passages": passages,
            "first": first, "switch": switch, "feedback": feedback,
        });
        let req = self
            .prompts
            .user_for(self.language)
            .request(
                &ctx,
                OutputSpec::Schema(JsonSchema::new("user_turn", schema)),
            )?
            .with_sampling(self.generator_sampling())
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let passage = v.get("passage").and_then(Value::as_i64).unwrap_or(0);
        let question = clean(
            v.get("question")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let standalone = clean(
            v.get("standalone")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        if passage < 1 || passage as usize > passages.len() || question.is_empty() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some(UserProposal {
            passage: passage as usize - 1,
            question,
            standalone,
        }))
    }

    /// The humanizer's rewrite, or the guard that rejected it (`Err`), or `None` if the call
    /// could not be parsed.
    pub async fn humanize(
        &self,
        history: &[Utter],
        question: &str,
        switch: bool,
        log: &mut CallLog,
    ) -> Result<Option<std::result::Result<String, HumanizerGuard>>> {
        let ctx = json!({"language": self.language.name(), "history": history, "question": question, "switch": switch});
        let req = self
            .prompts
            .humanize
            .request(&ctx, OutputSpec::Text)?
            .with_sampling(self.generator_sampling());
        let Some(out) = self.call("humanizer", req, false, log).await? else {
            return Ok(None);
        };
        Ok(Some(humanizer_guard(
            question,
            &clean(&out.text),
            &self.opts.humanizer,
            self.language,
        )))
    }

    /// The answerer: sees only the evidence and the history.
    pub async fn answer(
        &self,
        passage: &PromptPassage,
        history: &[Utter],
        question: &str,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<String> {
        let ctx = json!({"language": self.language.name(), "passage": passage, "history": history, "question": question});
        let req = self
            .prompts
            .answer
            .request(&ctx, OutputSpec::Text)?
            .with_sampling(self.generator_sampling())
            .with_sample(sample);
        let Some(out) = self.call("answerer", req, false, log).await? else {
            return Ok(None);
        };
        let a = without_source_preamble(&clean(&out.text));
        Ok((!a.is_empty()).then_some(a))
    }

    /// Answerability of the question from the evidence, 1-5.
    /// Answerability 1-5 and the judge's quote of the answering sentence (checked by the
    /// caller against the passage with [`quote_supported`]).
    pub async fn answerability(
        &self,
        history: &[Utter],
        question: &str,
        passage: &PromptPassage,
        log: &mut CallLog,
    ) -> Parsed<(i64, String)> {
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "passage": passage, "justify": justify});
        let req = self
            .prompts
            .answerability
            .request(&ctx, OutputSpec::Schema(answerability_schema(justify)))?;
        let Some(out) = self.call("answerability", req, true, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        match v.get("score").and_then(Value::as_i64) {
            Some(s) if (1..=5).contains(&s) => {
                let quote = v
                    .get("quote")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                Ok(Some((s, quote)))
            }
            _ => {
                log.roles
                    .entry("answerability".into())
                    .or_default()
                    .parse_failed += 1;
                Ok(None)
            }
        }
    }

    /// Faithfulness of the answer to the evidence, 1-5.
    pub async fn faithfulness(
        &self,
        history: &[Utter],
        question: &str,
        passage: &PromptPassage,
        answer: &str,
        log: &mut CallLog,
    ) -> Parsed<i64> {
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "passage": passage, "answer": answer, "justify": justify});
        let req = self.prompts.faithfulness.request(
            &ctx,
            OutputSpec::Schema(score_schema("faithfulness", justify)),
        )?;
        self.score("faithfulness", req, log).await
    }

    async fn score(&self, role: &str, req: ChatRequest, log: &mut CallLog) -> Parsed<i64> {
        let Some(out) = self.call(role, req, true, log).await? else {
            return Ok(None);
        };
        let s = out
            .value
            .as_ref()
            .and_then(|v| v.get("score"))
            .and_then(Value::as_i64);
        match s {
            Some(s) if (1..=5).contains(&s) => Ok(Some(s)),
            _ => {
                log.roles.entry(role.into()).or_default().parse_failed += 1;
                Ok(None)
            }
        }
    }

    /// For each candidate: 2 = answers as well as the reference, 1 = partly, 0 = no.
    pub async fn uniqueness(
        &self,
        history: &[Utter],
        question: &str,
        reference: &PromptPassage,
        candidates: &[PromptPassage],
        log: &mut CallLog,
    ) -> Parsed<Vec<(i64, String)>> {
        let n = candidates.len();
        let justify = self.justify();
        let schema = uniqueness_schema(n, justify);
        let ctx = json!({"history": history, "question": question, "reference": reference, "candidates": candidates, "justify": justify});
        let req = self
            .prompts
            .uniqueness
            .request(&ctx, OutputSpec::Schema(schema))?;
        let Some(out) = self.call("uniqueness", req, true, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let grades: Option<Vec<i64>> = v
            .get("grades")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect());
        let quotes: Vec<String> = v
            .get("quotes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|q| q.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        match grades {
            Some(g) if g.len() == n && g.iter().all(|x| (0..=2).contains(x)) => Ok(Some(
                g.into_iter()
                    .enumerate()
                    .map(|(i, g)| (g, quotes.get(i).cloned().unwrap_or_default()))
                    .collect(),
            )),
            _ => {
                log.roles
                    .entry("uniqueness".into())
                    .or_default()
                    .parse_failed += 1;
                Ok(None)
            }
        }
    }
}

/// Whether the verifier's judges on `endpoint` are asked for a justification. Not where the
/// endpoint writes the verdict first (`verdict_first`, the embedded local default): a
/// justification written after the score cannot inform it, and synthesis keeps none, so it
/// would only cost generated tokens (on the local 0.5B judge, Chinese corpus: 187 completion
/// tokens per answerability call, most of them the justification).
pub fn judges_justify(llm: &Llm, endpoint: &str) -> bool {
    !llm.config()
        .endpoint(endpoint)
        .is_some_and(|e| e.verdict_first)
}

/// `properties` and `required` of a judge's output, with a free-text `justification` first
/// when `justify`.
fn judge_schema(name: &str, justify: bool, fields: Vec<(&str, Value)>) -> JsonSchema {
    let mut properties = serde_json::Map::new();
    if justify {
        properties.insert("justification".into(), json!({"type": "string"}));
    }
    for (k, v) in fields {
        properties.insert(k.into(), v);
    }
    let required: Vec<&String> = properties.keys().collect();
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    });
    JsonSchema::new(name, schema)
}

/// The answerability judge's output: (a justification,) the quoted answering sentence, a score.
pub fn answerability_schema(justify: bool) -> JsonSchema {
    judge_schema(
        "answerability",
        justify,
        vec![
            ("quote", json!({"type": "string"})),
            ("score", json!({"type": "integer", "enum": [1, 2, 3, 4, 5]})),
        ],
    )
}

/// The uniqueness judge's output for `n` candidates: (a justification,) a grade and a quote for
/// each.
pub fn uniqueness_schema(n: usize, justify: bool) -> JsonSchema {
    judge_schema(
        "uniqueness",
        justify,
        vec![
            (
                "grades",
                json!({"type": "array", "items": {"type": "integer", "enum": [0, 1, 2]}, "minItems": n, "maxItems": n}),
            ),
            (
                "quotes",
                json!({"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n}),
            ),
        ],
    )
}

/// Letters, digits and CJK characters, lower-cased: what a quote must share with its source.
pub(crate) fn letters(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn contains(hay: &[char], needle: &[char]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// True when a judge's quote really comes from `passage`: its letters and digits (case,
/// spacing and punctuation ignored) appear in the passage, or, for a long quote that the
/// judge shortened or joined, some 24-character stretch of it does. A quote under 8 such
/// characters supports nothing. This catches judges that claim an answer which is not there.
pub fn quote_supported(quote: &str, passage: &str) -> bool {
    let (q, p) = (letters(quote), letters(passage));
    if q.len() < 8 {
        return false;
    }
    if contains(&p, &q) {
        return true;
    }
    const W: usize = 24;
    q.len() > W
        && (0..=q.len() - W)
            .step_by(8)
            .any(|i| contains(&p, &q[i..i + W]))
}

/// Why a proposed question is unusable, if it is: not a question, too long, copied from the
/// passage, or talking about "the passage" (in the question or its standalone version).
pub fn question_problem(
    question: &str,
    standalone: &str,
    evidence: &str,
    lang: &Language,
    meta: &[String],
) -> Option<&'static str> {
    let lower = format!("{} {}", question.to_lowercase(), standalone.to_lowercase());
    if meta.iter().any(|m| lower.contains(&m.to_lowercase())) {
        return Some("meta_phrase");
    }
    let cjk = lang.is_cjk();
    let len = if cjk {
        question.chars().filter(|c| is_cjk_char(*c)).count()
    } else {
        question.split_whitespace().count()
    };
    if len > if cjk { 80 } else { 40 } {
        return Some("too_long");
    }
    let q = letters(question);
    let w = if cjk { 16 } else { 40 };
    if q.len() >= w {
        let p = letters(evidence);
        if (0..=q.len() - w)
            .step_by(4)
            .any(|i| contains(&p, &q[i..i + w]))
        {
            return Some("copied_passage");
        }
    }
    if !asks(question, cjk) {
        return Some("not_a_question");
    }
    None
}

/// Chinese words that make a sentence a question (吗, 什么, 几, 是否, ...).
const QUESTION_WORDS_ZH: [&str; 17] = [
    "吗",
    "呢",
    "什么",
    "多少",
    "几",
    "哪",
    "怎么",
    "如何",
    "是否",
    "谁",
    "为何",
    "为什么",
    "请问",
    "能否",
    "可否",
    "有没有",
    "是不是",
];

/// English words a question or request opens with.
const OPENERS_EN: [&str; 29] = [
    "what", "how", "when", "where", "who", "whom", "whose", "which", "why", "can", "could", "do",
    "does", "did", "is", "are", "was", "were", "will", "would", "should", "may", "must", "has",
    "have", "tell", "list", "explain", "describe",
];

/// A question marked by its question mark alone asks only when it is this short (words; CJK:
/// characters): an elliptical follow-up ("And for part-time staff?", "病假也一样？").
const SHORT_QUESTION: (usize, usize) = (10, 12);

/// Whether `question` asks something. A question mark alone is not enough: a grammar that
/// ends every answer with one ([`question_pattern`]) turns a pasted statement into "...?"
/// too. A question opens as one ("How ...", "Is ...", "Tell me ...", "请告诉我..."), holds a
/// question word (Chinese: anywhere; English: opening a clause after a comma, where it ends
/// with a question mark), or is a short follow-up that ends with a question mark.
fn asks(question: &str, cjk: bool) -> bool {
    let marked = question.trim_end().ends_with(['?', '？']);
    if cjk {
        let short = question.chars().filter(|c| is_cjk_char(*c)).count() <= SHORT_QUESTION.1;
        // a request opens with its verb (after a polite 请 or 麻烦), as "tell", "list",
        // "explain", "describe" open one in English; inside a statement (除特别说明外) the
        // same word asks nothing
        let q = question.trim_start();
        let q = ["请你", "请", "麻烦你", "麻烦"]
            .iter()
            .find_map(|p| q.strip_prefix(p))
            .unwrap_or(q);
        let request = ["告诉", "列出", "说明", "解释", "介绍", "描述"]
            .iter()
            .any(|w| q.starts_with(w));
        QUESTION_WORDS_ZH.iter().any(|w| question.contains(w)) || request || (marked && short)
    } else {
        let words = |clause: &str| -> Vec<String> {
            clause
                .split_whitespace()
                .map(|w| {
                    w.trim_matches(|c: char| !c.is_alphanumeric())
                        .to_lowercase()
                })
                .filter(|w| !w.is_empty())
                .collect()
        };
        let opens_as_question = |clause: &str| {
            words(clause)
                .first()
                .is_some_and(|w| OPENERS_EN.contains(&w.as_str()))
        };
        // a question may open after an introductory phrase ("For contractors, how long ...?");
        // a relative "who" or "which" inside a statement is no question word
        let clause_asks = question
            .split([',', ';', ':'])
            .skip(1)
            .any(opens_as_question);
        opens_as_question(question)
            || (marked && (clause_asks || words(question).len() <= SHORT_QUESTION.0))
    }
}

/// Why a proposed standalone rewrite is unusable, if it is: the guards of
/// [`question_problem`] except the copy check (a rewrite restates names and context from the
/// conversation, and in Chinese a 16-character overlap with the passage is often just a name
/// and a title), and it must be written in `lang`. A copied passage sentence that is no
/// question still fails, as `not_a_question`.
pub fn standalone_problem(
    standalone: &str,
    lang: &Language,
    meta: &[String],
) -> Option<&'static str> {
    // no evidence given: nothing to be copied from
    question_problem(standalone, "", "", lang, meta)
        .or_else(|| (!in_language(standalone, lang)).then_some("wrong_language"))
}

/// A 1-5 score (after a justification when `justify`).
pub fn score_schema(name: &str, justify: bool) -> JsonSchema {
    judge_schema(
        name,
        justify,
        vec![("score", json!({"type": "integer", "enum": [1, 2, 3, 4, 5]}))],
    )
}

/// Trims whitespace, wrapping quotes and a leading label like `Question:`; collapses runs of
/// whitespace.
pub fn clean(s: &str) -> String {
    let mut t = s.trim();
    for _ in 0..2 {
        for label in [
            "Question:",
            "Rewritten question:",
            "Answer:",
            "问题：",
            "回答：",
            "答：",
        ] {
            if let Some(rest) = t.strip_prefix(label) {
                t = rest.trim();
            }
        }
        for (a, b) in [('"', '"'), ('“', '”'), ('「', '」'), ('\'', '\'')] {
            if t.len() >= 2 && t.starts_with(a) && t.ends_with(b) {
                t = t[a.len_utf8()..t.len() - b.len_utf8()].trim();
            }
        }
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Words of a leading "Based on the passage," or "根据您提供的内容，" that name the answerer's
/// source: the answerer is told not to mention the passage (the user never saw it), and the
/// small local model opens most answers that way anyway.
const SOURCE_WORDS: [&str; 16] = [
    "passage",
    "text",
    "document",
    "context",
    "information",
    "provided",
    "given",
    "conversation",
    "资料",
    "内容",
    "段落",
    "文本",
    "文档",
    "提供",
    "上下文",
    "信息",
];

/// `answer` without a leading clause that only names its source ("Based on the passage,",
/// "According to the provided text,", "根据您提供的内容，"); "According to the handbook:" or
/// "根据规定，" say something and stay.
pub fn without_source_preamble(answer: &str) -> String {
    let Some(at) = answer.find([',', '，']) else {
        return answer.to_string();
    };
    let clause = answer[..at].to_lowercase();
    let opens = ["based on", "according to", "根据", "依据", "按照"]
        .iter()
        .any(|p| clause.starts_with(p));
    if !opens || !SOURCE_WORDS.iter().any(|w| clause.contains(w)) {
        return answer.to_string();
    }
    let rest = answer[at..].trim_start_matches([',', '，']).trim_start();
    let mut c = rest.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => answer.to_string(),
    }
}

/// True when the answerer says the evidence does not hold the answer (it is told to say that
/// it could not find it): the question is not answerable from its gold passage, whatever a
/// judge then rates the answer's faithfulness.
pub fn says_not_found(answer: &str) -> bool {
    let lower = answer.to_lowercase();
    [
        "could not find",
        "couldn't find",
        "cannot find",
        "can't find",
        "does not contain",
        "doesn't contain",
        "does not mention",
        "doesn't mention",
        "is not mentioned",
        "没有找到",
        "未找到",
        "找不到",
        "没有提到",
        "没有提及",
        "未提及",
        "无法回答",
        "没有相关",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// True when `text` is written in the script of `lang`: CJK languages need at least 30% CJK
/// among letters, others at most 10%.
pub fn in_language(text: &str, lang: &Language) -> bool {
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.is_empty() {
        return false;
    }
    let cjk = letters.iter().filter(|c| is_cjk_char(**c)).count() as f64 / letters.len() as f64;
    if lang.is_cjk() {
        cjk >= 0.3
    } else {
        cjk <= 0.1
    }
}

/// Checks a humanized rewrite against the original question.
pub fn humanizer_guard(
    original: &str,
    rewrite: &str,
    opts: &HumanizerOptions,
    lang: &Language,
) -> std::result::Result<String, HumanizerGuard> {
    if rewrite.is_empty() {
        return Err(HumanizerGuard::Empty);
    }
    if rewrite == original {
        return Err(HumanizerGuard::Unchanged);
    }
    let (a, b) = (
        original.chars().count().max(1) as f64,
        rewrite.chars().count() as f64,
    );
    if b / a < opts.min_ratio {
        return Err(HumanizerGuard::TooShort);
    }
    if b / a > opts.max_ratio {
        return Err(HumanizerGuard::TooLong);
    }
    let lower = rewrite.to_lowercase();
    if opts
        .meta_phrases
        .iter()
        .any(|p| lower.contains(&p.to_lowercase()))
        || rewrite.contains('\n')
    {
        return Err(HumanizerGuard::MetaPhrase);
    }
    if !in_language(rewrite, lang) {
        return Err(HumanizerGuard::WrongLanguage);
    }
    Ok(rewrite.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanizer_guards() {
        let o = HumanizerOptions::default();
        let en = Language::from_code("en");
        let q = "How many days of annual leave can be carried over into the next leave year?";
        assert_eq!(
            humanizer_guard(q, "and how many carry over?", &o, &en),
            Ok("and how many carry over?".into())
        );
        assert_eq!(humanizer_guard(q, "", &o, &en), Err(HumanizerGuard::Empty));
        assert_eq!(
            humanizer_guard(q, q, &o, &en),
            Err(HumanizerGuard::Unchanged)
        );
        assert_eq!(
            humanizer_guard(q, "days?", &o, &en),
            Err(HumanizerGuard::TooShort)
        );
        assert_eq!(
            humanizer_guard(
                q,
                &format!("{q} Also, tell me more about everything else."),
                &o,
                &en
            ),
            Err(HumanizerGuard::TooLong)
        );
        assert_eq!(
            humanizer_guard(q, "Here is the rewritten question: carry over?", &o, &en),
            Err(HumanizerGuard::MetaPhrase)
        );
        let zh = Language::from_code("zh");
        let qz = "未休完的年假最多可以结转几天到下一年？";
        assert_eq!(
            humanizer_guard(qz, "能结转几天？", &o, &zh),
            Ok("能结转几天？".into())
        );
        assert_eq!(
            humanizer_guard(qz, "How many carry over?", &o, &zh),
            Err(HumanizerGuard::WrongLanguage)
        );
        assert_eq!(
            humanizer_guard(qz, "以下是改写：结转几天？", &o, &zh),
            Err(HumanizerGuard::MetaPhrase)
        );
    }

    #[test]
    fn quotes_must_come_from_the_passage() {
        let p = "Up to 5 unused days may be carried over into the next leave year. Carried-over days must be used by 30 June.";
        assert!(quote_supported(
            "up to 5 unused days may be carried over",
            p
        ));
        assert!(quote_supported(
            "Carried-over days must be used by 30 June",
            p
        ));
        assert!(!quote_supported(
            "Unused days are paid out at the end of the year.",
            p
        ));
        assert!(
            !quote_supported("5 days", p),
            "too short to support anything"
        );
        assert!(!quote_supported("", p));
        // a long quote joined from two places still counts
        assert!(quote_supported(
            "Up to 5 unused days may be carried over into the next leave year ... must be used by 30 June",
            p
        ));
        let zh = "当年未休完的年假，最多可结转5天到下一年度，结转的天数须在次年3月31日前休完。";
        assert!(quote_supported("最多可结转5天到下一年度", zh));
        assert!(!quote_supported("最多可结转10天到下一年度", zh));
    }

    #[test]
    fn question_guards() {
        let meta = HumanizerOptions::default().meta_phrases;
        let en = Language::from_code("en");
        let ev = "UK employees can lease a bicycle and safety equipment of up to 2,500 pounds through the salary sacrifice scheme.";
        assert_eq!(
            question_problem(
                "How much can I lease a bike for?",
                "How much can UK staff lease a bike for?",
                ev,
                &en,
                &meta
            ),
            None
        );
        assert_eq!(
            question_problem("Tell me the bike leasing limit", "", ev, &en, &meta),
            None
        );
        assert_eq!(
            question_problem(ev, "What is the limit?", ev, &en, &meta),
            Some("copied_passage")
        );
        assert_eq!(
            question_problem("The bike limit.", "", ev, &en, &meta),
            Some("not_a_question")
        );
        assert_eq!(
            question_problem(
                "What is the limit?",
                "Does the passage answer the question about bikes?",
                ev,
                &en,
                &meta
            ),
            Some("meta_phrase")
        );
        let zh = Language::from_code("zh");
        let evz = "员工每年享有带薪年休假，未休完的年假最多可以结转五天。";
        assert_eq!(
            question_problem("年假最多能结转几天？", "", evz, &zh, &meta),
            None
        );
        assert_eq!(
            question_problem(
                "员工每年享有带薪年休假，未休完的年假最多可以结转五天",
                "",
                evz,
                &zh,
                &meta
            ),
            Some("copied_passage")
        );
        // a request is a question in Chinese as "Tell me ..." is in English
        for request in [
            "请告诉我年假结转的规定",
            "请说明年假结转的规定。",
            "介绍一下年假结转",
        ] {
            assert_eq!(
                question_problem(request, "", evz, &zh, &meta),
                None,
                "{request}"
            );
        }
        assert_eq!(
            question_problem("年假结转五天。", "", evz, &zh, &meta),
            Some("not_a_question")
        );
        // a request word inside a statement asks nothing
        assert_eq!(
            question_problem(
                "除特别说明外，员工自入职当天起即可享受。",
                "",
                evz,
                &zh,
                &meta
            ),
            Some("not_a_question")
        );
    }

    #[test]
    fn the_question_pattern_admits_one_short_question() {
        let en = regex::Regex::new(&question_pattern(&Language::from_code("en"))).unwrap();
        let zh = regex::Regex::new(&question_pattern(&Language::from_code("zh"))).unwrap();
        for q in [
            "How many days of annual leave do I get?",
            "Can I carry over 2.5 days?",
            "And for part-time staff?",
        ] {
            assert!(en.is_match(q), "{q}");
        }
        for q in ["年假最多能结转几天？", "那病假呢？", "年假可以结转2.5天吗?"]
        {
            assert!(zh.is_match(q), "{q}");
        }
        // a pasted sentence with a question after it, an answer after the question, two
        // lines, a raw quote, no question mark, or too long: never
        for q in [
            "Employees get 25 days. How many days do I get?",
            "How many days do I get? It is 25 days?",
            "How many days\ndo I get?",
            "What does \"carry over\" mean?",
            "How many days do I get",
            &format!("{}?", "very ".repeat(40)),
        ] {
            assert!(!en.is_match(q), "{q}");
        }
        for q in [
            "员工每年享有10天带薪年假。我有几天？",
            "年假有几天？有10天？",
            "年假有几天",
            &format!("{}？", "年".repeat(41)),
        ] {
            assert!(!zh.is_match(q), "{q}");
        }
    }

    #[test]
    fn a_question_mark_alone_does_not_make_a_statement_a_question() {
        // what a grammar that ends every answer with a question mark makes of a pasted or
        // answered statement (seen with Qwen2.5-Coder-0.5B under the question pattern)
        let meta = HumanizerOptions::default().meta_phrases;
        let en = Language::from_code("en");
        let zh = Language::from_code("zh");
        for statement in [
            "The annual leave period for employees in the United States is 25 days, with unused leave up to 5 days carrying over?",
            "Employees who work at least one day a week from home get a monthly allowance of 150 euros?",
        ] {
            assert_eq!(
                question_problem(statement, "", "", &en, &meta),
                Some("not_a_question"),
                "{statement}"
            );
        }
        for statement in [
            "员工每年享受一次免费年度体检，体检套餐标准为每人1200元？",
            "新员工须在入职后14天内完成课程？",
        ] {
            assert_eq!(
                question_problem(statement, "", "", &zh, &meta),
                Some("not_a_question"),
                "{statement}"
            );
        }
        // short follow-ups, question words anywhere, and particles still ask
        for q in [
            "And for part-time staff?",
            "For contractors in Portugal, how long is the notice period?",
            "Is the allowance paid monthly?",
        ] {
            assert_eq!(question_problem(q, "", "", &en, &meta), None, "{q}");
        }
        for q in [
            "病假也一样？",
            "员工每年享受的免费体检套餐标准是多少？",
            "家属可以参保吗",
        ] {
            assert_eq!(question_problem(q, "", "", &zh, &meta), None, "{q}");
        }
    }

    #[test]
    fn a_standalone_rewrite_may_restate_the_passage_but_must_ask() {
        let meta = HumanizerOptions::default().meta_phrases;
        let zh = Language::from_code("zh");
        // a main-job run kept these passage sentences as rewrites: they are no questions
        for pasted in [
            "年休假的结转，当年未休完的年假，最多可结转5天到下一年度，结转的天数须在次年3月31日前休完，逾期作废。",
            "公司为正式员工提供以下福利。除特别说明外，员工自入职当天起即可享受。五险一金",
        ] {
            assert_eq!(
                standalone_problem(pasted, &zh, &meta),
                Some("not_a_question"),
                "{pasted}"
            );
        }
        // a question that repeats a long name from the passage is a good rewrite
        assert_eq!(
            standalone_problem("员工福利中的补充商业医疗保险的保费由谁承担？", &zh, &meta),
            None
        );
        assert_eq!(
            standalone_problem("Who pays the premium?", &zh, &meta),
            Some("wrong_language")
        );
        assert_eq!(standalone_problem("", &zh, &meta), Some("not_a_question"));
    }

    #[test]
    fn an_answer_loses_a_preamble_that_only_names_its_source() {
        for (raw, kept) in [
            (
                "Based on the passage, Porto office closes on 24 December.",
                "Porto office closes on 24 December.",
            ),
            (
                "According to the provided text, the cap is 220 euros.",
                "The cap is 220 euros.",
            ),
            ("根据您提供的内容，年假最多结转5天。", "年假最多结转5天。"),
            // a source that says something stays, and so does a plain answer
            (
                "According to the handbook: the office is open on weekdays.",
                "According to the handbook: the office is open on weekdays.",
            ),
            ("根据规定，年假最多结转5天。", "根据规定，年假最多结转5天。"),
            (
                "Based on your contract, 25 days.",
                "Based on your contract, 25 days.",
            ),
            ("25 days.", "25 days."),
        ] {
            assert_eq!(without_source_preamble(raw), kept, "{raw}");
        }
    }

    #[test]
    fn an_answer_that_found_nothing_is_recognised() {
        for a in [
            "I could not find that in the handbook.",
            "The passage does not mention a limit.",
            "没有找到相关规定。",
            "资料中未提及此事。",
        ] {
            assert!(says_not_found(a), "{a}");
        }
        for a in [
            "Meals are not reimbursed on flights under 3 hours.",
            "年假最多可结转5天。",
        ] {
            assert!(!says_not_found(a), "{a}");
        }
    }

    #[test]
    fn cleaning_and_language() {
        assert_eq!(clean("  \"Question: How long?\" "), "How long?");
        assert_eq!(clean("“年假有几天？”"), "年假有几天？");
        assert!(in_language("年假有几天？", &Language::from_code("zh")));
        assert!(!in_language("How many days?", &Language::from_code("zh")));
        assert!(in_language("How many days?", &Language::from_code("en")));
        assert!(!in_language("123", &Language::from_code("en")));
    }
}
