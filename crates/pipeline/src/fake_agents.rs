//! Scripted agents for tests and benchmarks on the LLM layer's fake server
//! (`mtr_llm::fake`): well-formed, deterministic replies to each pipeline prompt, derived only
//! from the request's content (so a rerun gets the same answers), with knobs that script the
//! verifier's decisions. Not a model: never use it for real numbers.

use mtr_llm::fake::{FakeReply, FakeRequest};
use serde_json::{Value, json};

/// What the uniqueness judge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniquenessScript {
    /// No other passage answers.
    Unique,
    /// The first candidate answers as well (grade 2): it becomes an extra gold.
    FirstAnswers,
    /// Every candidate answers until the user agent was told to be more specific.
    GenericUntilFeedback,
    /// Every candidate always answers: every attempt fails, the turn is dropped.
    AlwaysGeneric,
}

/// Whether the agents repeat themselves, as small models do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepeatScript {
    /// Every question and answer is about its own passage.
    #[default]
    Never,
    /// A follow-up asks the previous question again with a word added ("So, ..."), until it
    /// is told that its attempt was rejected.
    Questions,
    /// The answerer gives the same answer to every question.
    Answers,
    /// A follow-up asks the previous question again, shorter (its last five words, as its
    /// own standalone form), until it is told that its attempt was rejected.
    Restatements,
    /// The answerer answers with the question it was asked.
    EchoQuestion,
}

/// The scripted agents.
#[derive(Debug, Clone, Copy)]
pub struct FakeAgents {
    /// What the uniqueness judge answers.
    pub uniqueness: UniquenessScript,
    /// Write questions and answers in Chinese (`true`) or English.
    pub chinese: bool,
    /// Answerability score given to every question (and to both passages of a two-passage
    /// one together).
    pub answerability: i64,
    /// Which questions the user agent repeats.
    pub repeat: RepeatScript,
    /// The answerer says it could not find the answer, as it is told to when the passage does
    /// not hold it.
    pub answer_not_found: bool,
    /// The answerer answers with the passage's heading line ("title / section"), as
    /// Qwen2.5-Coder-0.5B did on the Chinese corpus.
    pub answer_heading: bool,
    /// The verifier of a turn drawn `unanswerable` (or of a `partial` turn's missing part)
    /// finds that the first passage found answers it (quoting it): every such attempt is
    /// rejected.
    pub unanswerable_answered: bool,
    /// The verifier of a turn drawn `two_passage` finds that the first passage alone answers
    /// it: every such attempt is rejected.
    pub two_passage_one_suffices: bool,
    /// The verifier of a turn drawn `two_passage` grades both passages 1 but quotes the first
    /// passage's line for both, as Qwen2.5-Coder-0.5B did: the second part has no quote found
    /// in its passage.
    pub two_passage_one_quote: bool,
    /// The verifier of a turn drawn `conversational` finds that it needs a search: every such
    /// attempt is rejected.
    pub conversational_needs_search: bool,
    /// On a turn's first attempt, the user agent asks the first seed question its prompt
    /// shows, word for word (`[synth.seed_questions]`); a retry asks its own.
    pub copy_seed: bool,
    /// The topics' persona calls answer with no name (unparsable personas).
    pub persona_unparsable: bool,
}

impl Default for FakeAgents {
    fn default() -> Self {
        Self {
            uniqueness: UniquenessScript::Unique,
            chinese: false,
            answerability: 5,
            repeat: RepeatScript::Never,
            answer_not_found: false,
            answer_heading: false,
            unanswerable_answered: false,
            two_passage_one_suffices: false,
            two_passage_one_quote: false,
            conversational_needs_search: false,
            copy_seed: false,
            persona_unparsable: false,
        }
    }
}

const SPECIFIC_EN: &str = "More specifically,";
const SPECIFIC_ZH: &str = "具体来说，";

impl FakeAgents {
    /// The reply to one request of the pipeline; a structured reply holds only the fields the
    /// request's schema asks for (a verdict-first judge is asked for no justification).
    pub fn reply(&self, req: &FakeRequest) -> FakeReply {
        match (self.reply_in_full(req), &req.schema) {
            (FakeReply::Content(text), Some(schema)) => {
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) => FakeReply::json(fit(v, schema)),
                    Err(_) => FakeReply::Content(text),
                }
            }
            (other, _) => other,
        }
    }

    fn reply_in_full(&self, req: &FakeRequest) -> FakeReply {
        let schema = req
            .body
            .pointer("/response_format/json_schema/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let system = req.system.clone().unwrap_or_default();
        match schema {
            "user_turn" => FakeReply::json(self.user(&req.last_user)),
            "unanswerable_turn" => FakeReply::json(self.user_unanswerable(&req.last_user)),
            "partial_turn" => FakeReply::json(self.user_partial(&req.last_user)),
            "two_passage_turn" => FakeReply::json(self.user_two_passage(&req.last_user)),
            "two_passage" => FakeReply::json(self.two_passage(&req.last_user)),
            "conversational_turn" => FakeReply::json(self.user_conversational(&req.last_user)),
            "conversational" => {
                let need = if self.conversational_needs_search {
                    5
                } else {
                    1
                };
                FakeReply::json(json!({"justification": "scripted", "score": need}))
            }
            "unanswerable" => {
                let n = req
                    .schema
                    .as_ref()
                    .and_then(|s| s.pointer("/properties/grades/minItems"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                FakeReply::json(self.unanswerable(&req.last_user, n as usize))
            }
            "answerability" => {
                let quote = first_line(section(&req.last_user, "## Passage"));
                FakeReply::json(
                    json!({"justification": "scripted", "quote": quote, "score": self.answerability}),
                )
            }
            "faithfulness" => FakeReply::json(json!({"justification": "scripted", "score": 5})),
            "persona" => FakeReply::json(self.persona(&req.last_user)),
            "uniqueness" => {
                let n = req
                    .schema
                    .as_ref()
                    .and_then(|s| s.pointer("/properties/grades/minItems"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                FakeReply::json(self.uniqueness(&req.last_user, n as usize))
            }
            _ if system.contains("rewrite questions") => {
                FakeReply::Content(self.humanize(&req.last_user))
            }
            _ if system.contains("search assistant") => {
                FakeReply::Content(self.answer(&req.last_user))
            }
            // other commands' prompts (audit, bench rewrites): the fake's minimal valid answer
            _ => mtr_llm::fake::default_reply(req),
        }
    }

    fn user(&self, prompt: &str) -> Value {
        let n = prompt.matches("\n[").count().max(1);
        // the chosen passage depends only on the prompt: a stable hash of it
        let h = prompt
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let pick = (h % n as u64) as usize + 1;
        if !self.chinese
            && let Some(styled) = styled_question(prompt, pick, h)
        {
            return json!({"passage": pick, "question": styled, "standalone": standalone_of(&styled)});
        }
        let words = passage_words(prompt, pick, if self.chinese { 10 } else { 6 });
        let retry = prompt.contains("A previous attempt was rejected");
        if self.copy_seed
            && !retry
            && let Some(seed) = first_seed(prompt)
        {
            return json!({"passage": pick, "question": seed, "standalone": seed});
        }
        if let (RepeatScript::Questions, false) = (self.repeat, retry) {
            if let Some(last) = last_asked(prompt) {
                let question = format!("So, {}", last.trim());
                return json!({"passage": pick, "question": question, "standalone": standalone_of(&question)});
            }
        }
        if let (RepeatScript::Restatements, false) = (self.repeat, retry) {
            if let Some(last) = last_asked(prompt) {
                let w: Vec<&str> = last.split_whitespace().collect();
                let question = w[w.len().saturating_sub(5)..].join(" ");
                return json!({"passage": pick, "question": question, "standalone": question});
            }
        }
        let question = if self.chinese {
            format!(
                "{}{}有什么规定？",
                if retry { SPECIFIC_ZH } else { "" },
                words
            )
        } else {
            format!(
                "{}what does it say about {}?",
                if retry { "More specifically, " } else { "" },
                words
            )
        };
        let question = capitalise(&question);
        json!({"passage": pick, "question": question, "standalone": standalone_of(&question)})
    }

    /// A persona for the topic the prompt's first document shows (none with
    /// `persona_unparsable`).
    fn persona(&self, prompt: &str) -> Value {
        let title: String = section(prompt, "## Documents")
            .lines()
            .find_map(|l| l.strip_prefix("[1] "))
            .unwrap_or("the handbook")
            .chars()
            .take(30)
            .collect();
        let name = if self.persona_unparsable {
            String::new()
        } else {
            format!("reader of {}", title.trim())
        };
        json!({"name": name, "description": format!("Someone who needs to know about {} and writes short questions.", title.trim())})
    }

    /// Keeps the last few words (and the "more specifically" marker of a regenerated
    /// question, so the scripted uniqueness judge still sees it).
    fn humanize(&self, prompt: &str) -> String {
        let q = section(prompt, "## Question")
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        if self.chinese {
            let marker = if q.starts_with(SPECIFIC_ZH) {
                SPECIFIC_ZH
            } else {
                ""
            };
            let tail: String = q
                .chars()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("{marker}那{tail}")
        } else {
            let marker = if q.starts_with(SPECIFIC_EN) {
                "More specifically, "
            } else {
                ""
            };
            let words: Vec<&str> = q.split_whitespace().collect();
            let tail = words[words.len().saturating_sub(4)..].join(" ");
            format!("{marker}and {tail}")
        }
    }

    fn answer(&self, prompt: &str) -> String {
        if self.repeat == RepeatScript::Answers {
            return "According to the handbook: the office is open on weekdays.".into();
        }
        if self.answer_not_found {
            return "I could not find that in the handbook.".into();
        }
        if self.repeat == RepeatScript::EchoQuestion {
            let latest = section(prompt, "## Latest question");
            return latest.trim().trim_start_matches("User: ").to_string();
        }
        let passage = section(prompt, "## Passage");
        if self.answer_heading {
            return passage
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
        }
        let body: Vec<&str> = passage
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        let first = body.first().copied().unwrap_or("nothing");
        if self.chinese {
            format!("根据手册：{first}")
        } else {
            format!("According to the handbook: {first}")
        }
    }

    /// A question about the first passage's subject that it does not answer (a case it
    /// leaves out), in the corpus language; another on a retry.
    fn user_unanswerable(&self, prompt: &str) -> Value {
        let words = passage_words(prompt, 1, if self.chinese { 6 } else { 3 });
        let retry = prompt.contains("A previous attempt was rejected");
        let question = match (self.chinese, retry) {
            (true, false) => format!("{words}对外籍实习生也一样吗？"),
            (true, true) => format!("{words}在海外分公司怎么算？"),
            (false, false) => format!("Does {words} also apply to interns from abroad?"),
            (false, true) => format!("How is {words} handled at offices overseas?"),
        };
        json!({"question": question, "standalone": question})
    }

    /// A question in two parts on a passage chosen by the prompt's hash: what it says about
    /// its first words (the part it answers) and, drawn by the hash, a case the handbook
    /// leaves out (the part no passage answers), in the corpus language; marked on a retry. The
    /// verifier's scripts decide the parts' fate: `answerability` the answered part's,
    /// `unanswerable_answered` the missing part's.
    fn user_partial(&self, prompt: &str) -> Value {
        const MISSING_EN: [&str; 4] = [
            "does that also apply to interns from abroad",
            "is that different at offices overseas",
            "what happens to contractors on a visa",
            "how is that handled for staff on secondment",
        ];
        const MISSING_ZH: [&str; 4] = [
            "对外籍实习生也一样吗",
            "在海外分公司怎么算",
            "外包人员适用吗",
            "借调员工怎么处理",
        ];
        let n = prompt.matches("\n[").count().max(1);
        let h = prompt
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let pick = (h % n as u64) as usize + 1;
        let retry = prompt.contains("A previous attempt was rejected");
        let which = (h / 7) as usize % MISSING_EN.len();
        let words = passage_words(prompt, pick, if self.chinese { 8 } else { 5 });
        let (answered, missing, question) = if self.chinese {
            let marker = if retry { SPECIFIC_ZH } else { "" };
            let m = MISSING_ZH[which];
            (
                format!("{marker}{words}有什么规定？"),
                format!("{m}？"),
                format!("{marker}{words}有什么规定，{m}？"),
            )
        } else {
            let marker = if retry { "More specifically, " } else { "" };
            let m = MISSING_EN[which];
            (
                capitalise(&format!("{marker}what does it say about {words}?")),
                capitalise(&format!("{m}?")),
                capitalise(&format!("{marker}what does it say about {words}, and {m}?")),
            )
        };
        json!({"passage": pick, "answered_part": answered, "missing_part": missing,
               "question": question, "standalone": standalone_of(&question)})
    }

    /// Grades of the passages found for an unanswerable question: none answers, unless
    /// scripted to find the first one answering (quoting its first line).
    fn unanswerable(&self, prompt: &str, n: usize) -> Value {
        let found = section(prompt, "## Passages found");
        let grades: Vec<i64> = (0..n)
            .map(|i| i64::from(self.unanswerable_answered && i == 0) * 2)
            .collect();
        let quotes: Vec<String> = (0..n)
            .map(|i| {
                if grades[i] == 0 {
                    return String::new();
                }
                found
                    .find("[1] ")
                    .map(|at| first_line(&found[at..]))
                    .unwrap_or_default()
            })
            .collect();
        json!({"justification": "scripted", "grades": grades, "quotes": quotes})
    }

    /// A question on the first two passages: a comparison or (by the prompt's hash) two facts
    /// at once, in the corpus language.
    fn user_two_passage(&self, prompt: &str) -> Value {
        let n = if self.chinese { 4 } else { 3 };
        let (a, b) = (passage_words(prompt, 1, n), passage_words(prompt, 2, n));
        let h = prompt
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let retry = prompt.contains("A previous attempt was rejected");
        let question = match (self.chinese, h % 2 == 0, retry) {
            (true, true, _) => format!("{a}和{b}有什么区别？"),
            (true, false, _) => format!("{a}是什么，{b}又是什么？"),
            (false, true, false) => format!("How do {a} and {b} compare?"),
            (false, false, false) => format!("What about {a}, and what about {b}?"),
            (false, _, true) => format!("More specifically, how do {a} and {b} differ?"),
        };
        json!({"passages": [1, 2], "question": question, "standalone": question})
    }

    /// Each passage answers a part (its first line quoted), both together score
    /// `answerability` (all, by default); unless scripted to find that the first alone
    /// answers all.
    fn two_passage(&self, prompt: &str) -> Value {
        let quote = |h: &str| first_line(section(prompt, h));
        let a = if self.two_passage_one_suffices { 2 } else { 1 };
        let b_from = if self.two_passage_one_quote {
            "## Passage A"
        } else {
            "## Passage B"
        };
        json!({"justification": "scripted", "a": a, "b": 1, "both": self.answerability,
               "quote_a": quote("## Passage A"), "quote_b": quote(b_from)})
    }

    /// A thank-you or (by the prompt's hash) a request to clarify the last answer, with a
    /// reply, in the corpus language.
    fn user_conversational(&self, prompt: &str) -> Value {
        let h = prompt
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let history = section(prompt, "## Conversation so far");
        let last = history
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("Assistant: "))
            .unwrap_or_default();
        let words = words_of(last.trim_start_matches("According to the handbook: "), 3);
        let (message, reply) = match (self.chinese, h % 2 == 0) {
            (true, true) => ("谢谢，这很有帮助。".to_string(), "不客气！".to_string()),
            (true, false) => (format!("{words}是什么意思？"), format!("意思是：{last}")),
            (false, true) => (
                "Thanks, that helps a lot.".to_string(),
                "You're welcome!".to_string(),
            ),
            (false, false) => (
                format!("Sorry, what do you mean by {words}?"),
                format!("I mean: {last}"),
            ),
        };
        json!({"message": message, "reply": reply})
    }

    fn uniqueness(&self, prompt: &str, n: usize) -> Value {
        let question = section(prompt, "## Current question");
        let specific = question.contains(SPECIFIC_EN) || question.contains(SPECIFIC_ZH);
        let grades: Vec<i64> = (0..n)
            .map(|i| match self.uniqueness {
                UniquenessScript::Unique => 0,
                UniquenessScript::FirstAnswers => i64::from(i == 0) * 2,
                UniquenessScript::GenericUntilFeedback if specific => 0,
                UniquenessScript::GenericUntilFeedback | UniquenessScript::AlwaysGeneric => 2,
            })
            .collect();
        // quote each answering candidate's first line, as a careful judge would
        let others = section(prompt, "## Other passages");
        let quotes: Vec<String> = (0..n)
            .map(|i| {
                if grades[i] == 0 {
                    return String::new();
                }
                let marker = format!("[{}] ", i + 1);
                others
                    .find(&marker)
                    .map(|at| first_line(&others[at..]))
                    .unwrap_or_default()
            })
            .collect();
        json!({"justification": "scripted", "grades": grades, "quotes": quotes})
    }
}

/// `v` without the fields that `schema`'s properties do not name.
fn fit(mut v: Value, schema: &Value) -> Value {
    let props = schema.get("properties").and_then(Value::as_object);
    if let (Some(props), Value::Object(fields)) = (props, &mut v) {
        fields.retain(|k, _| props.contains_key(k));
    }
    v
}

/// The first body line after a passage header line that is long enough to quote (headings
/// and short list items are skipped).
/// The user's latest question in a user prompt: the last line of the list of questions asked
/// already, else (the list shows only what the history does not) the history's last user line.
/// The last question a user prompt shows: listed, or in the history, or, where the history
/// shows only the assistant's answers (the English user prompt), the question the scripted
/// agents asked about the passage that answer quotes.
fn last_asked(prompt: &str) -> Option<String> {
    let listed = section(prompt, "## Questions the user already asked");
    let history = section(prompt, "## Conversation so far");
    let shown = listed
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("- "))
        .or_else(|| history.lines().rev().find_map(|l| l.strip_prefix("User: ")));
    if let Some(q) = shown {
        return Some(q.to_string());
    }
    let answer = history
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Assistant: "))?;
    let line = answer.strip_prefix("According to the handbook: ")?;
    Some(capitalise(&format!(
        "what does it say about {}?",
        words_of(line, 6)
    )))
}

fn first_line(text: &str) -> String {
    text.lines()
        .skip(1)
        // the answerability prompt labels the passage's title line and its text
        .filter(|l| !l.starts_with("Title: "))
        .map(|l| l.strip_prefix("Text: ").unwrap_or(l))
        .find(|l| !l.starts_with('[') && l.chars().filter(|c| c.is_alphanumeric()).count() >= 12)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The first seed question the user agent's prompt shows (`## How real users ask`).
fn first_seed(prompt: &str) -> Option<String> {
    section(prompt, "## How real users ask")
        .lines()
        .find_map(|l| l.strip_prefix("- "))
        .map(|l| l.trim().to_string())
}

/// The text after a `## Heading` line up to the next `## ` heading.
fn section<'a>(prompt: &'a str, heading: &str) -> &'a str {
    let Some(start) = prompt.find(heading) else {
        return "";
    };
    let rest = &prompt[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].trim_matches('\n')
}

/// Words the styled scripted messages fill their context sentence with (drawn by the
/// prompt's hash, so two messages share few word sequences).
const FILLER_EN: [&str; 48] = [
    "I",
    "we",
    "my",
    "team",
    "work",
    "office",
    "month",
    "week",
    "new",
    "contract",
    "manager",
    "started",
    "recently",
    "next",
    "plan",
    "trip",
    "home",
    "remote",
    "family",
    "because",
    "need",
    "know",
    "soon",
    "before",
    "after",
    "really",
    "usually",
    "colleague",
    "asked",
    "told",
    "heard",
    "probably",
    "maybe",
    "still",
    "already",
    "project",
    "deadline",
    "schedule",
    "budget",
    "request",
    "approval",
    "form",
    "system",
    "policy",
    "change",
    "summer",
    "winter",
    "city",
];

/// The scripted answer to a styled user prompt (English): a message of the length the prompt
/// asks for ("Write about N words"), a context sentence of filler words and a question about
/// two words of the chosen passage that refers back ("And for those ...?") when the prompt
/// says to lean on the conversation, and names its subject otherwise. None for any other
/// prompt.
fn styled_question(prompt: &str, pick: usize, h: u64) -> Option<String> {
    let at = prompt.find("Write about ")?;
    let rest = &prompt[at + "Write about ".len()..];
    let n: usize = rest.split_whitespace().next()?.parse().ok()?;
    let body = passage_words(prompt, pick, 12);
    let pw: Vec<&str> = body.split_whitespace().collect();
    let off = if pw.len() > 2 {
        (h as usize / 7) % (pw.len() - 1)
    } else {
        0
    };
    let topic = pw[off.min(pw.len().saturating_sub(1))..]
        .iter()
        .take(2)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let question = if prompt.contains("Lean on the conversation") {
        format!("And for those {topic}?")
    } else {
        format!("Which rules cover {topic}?")
    };
    let pad = n.saturating_sub(question.split_whitespace().count());
    let mut x = h | 1;
    let filler: Vec<&str> = (0..pad)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            FILLER_EN[(x >> 33) as usize % FILLER_EN.len()]
        })
        .collect();
    if filler.is_empty() {
        return Some(question);
    }
    Some(format!("{}. {question}", capitalise(&filler.join(" "))))
}

/// The first `n` words (CJK: characters) of the body of passage `[pick]` in a user prompt.
fn passage_words(prompt: &str, pick: usize, n: usize) -> String {
    let marker = format!("[{pick}] ");
    let Some(at) = prompt.find(&marker) else {
        return "this".into();
    };
    let rest = &prompt[at..];
    let body = rest
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .unwrap_or("this");
    words_of(body, n)
}

/// The first `n` words (CJK: characters) of `body`, as the scripted questions name them.
fn words_of(body: &str, n: usize) -> String {
    let cjk = body.chars().any(crate::lang::is_cjk_char);
    if cjk {
        body.chars()
            .filter(|c| crate::lang::is_cjk_char(*c))
            .take(n)
            .collect()
    } else {
        body.split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .take(n)
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The scripted standalone version of a question: the question marked as standalone, still
/// ending with its question mark so that it matches the schema's question pattern (which the
/// LLM layer checks with the jsonschema crate).
fn standalone_of(question: &str) -> String {
    match question.strip_suffix(['?', '？']) {
        Some(stem) => format!("{stem} (standalone)?"),
        None => format!("{question} (standalone)"),
    }
}
