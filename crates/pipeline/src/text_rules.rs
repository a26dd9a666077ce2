//! The text rules of questions and answers, apart from the agents that write them: what a
//! question must look like (a pattern for grammar-constrained endpoints, the guards of a
//! proposed question and its standalone rewrite, whether it asks at all), how an agent's text
//! is cleaned, when an answer found nothing or only names its source, whether a judge's quote
//! comes from its passage, whether text is in the corpus language, and the humanizer's
//! guards. Pure functions of text, tested on the cases that runs produced.

use crate::config::HumanizerOptions;
use crate::lang::{Language, is_cjk_char};

/// What the user agent's question and its standalone version must look like where the
/// endpoint enforces a string's `pattern` (llama.cpp grammars): one sentence on one line
/// that ends with a question mark, at most 40 characters in a CJK language and 150 elsewhere
/// (the prompt asks for 30 characters or 25 words). No sentence end (`.`, `!`, `?`, `。`,
/// `！`, `？`) comes before the last character, except a `.` between two digits (`1.5`): a
/// small model then cannot paste a passage sentence and ask about it after it, nor answer its
/// own question in the standalone version, and it stops writing at its first question mark
/// (measured on Qwen2.5-Coder-0.5B: the user call's completion tokens halved, every
/// standalone version a question). The digit before the `.` is part of the same step: when
/// only the digit after it was, a sentence the model wanted to end with a full stop went on
/// as ".0.0.0..." up to `max_tokens` (a partial turn's reply of 1,257 tokens, a third of a
/// run's generated tokens, benchmarks/pipeline/README.md). A quote or backslash is never
/// allowed, since the grammar writes these characters raw into the JSON string. The caller
/// still checks the question ([`question_problem`]): a pattern only shapes it.
pub(crate) fn question_pattern(lang: &Language) -> String {
    let max = question_max_chars(lang);
    format!(r#"^([^"\\\n.!?。！？]|[0-9]\.[0-9]){{2,{max}}}[?？]$"#)
}

/// The most characters [`question_pattern`] allows before the question mark.
fn question_max_chars(lang: &Language) -> u32 {
    if lang.is_cjk() { 40 } else { 150 }
}

/// Completion tokens that hold the longest reply the user agent's schema allows where the
/// pattern is enforced: a question and (with `rewrite`) a standalone version at
/// [`question_pattern`]'s length, at up to one token per character (two for CJK), and the
/// JSON around them. A
/// reply cut inside its JSON is lost whole; Qwen2.5-Coder-0.5B filled a standalone version
/// with "4.2023.4.2023..." (a token per character) and lost 3 of 17 user calls of a
/// main-job synthesis at `max_tokens = 160`, where the question itself was usable.
pub(crate) fn proposal_max_tokens(lang: &Language, rewrite: bool) -> u32 {
    let per_char = if lang.is_cjk() { 2 } else { 1 };
    let strings = if rewrite { 2 } else { 1 };
    strings * (question_max_chars(lang) + 1) * per_char + 32
}

/// The follow-up the user agent's prompt shows as an example, in the corpus language: an
/// earlier question from outside any handbook and two elliptical follow-ups to it. With it,
/// Qwen2.5-Coder-0.5B kept more follow-ups (a synthesis pair with and without it: English 7
/// verified turns against 6, Chinese 8 against 7; docs/main-job.md), and it once asked the
/// example itself, so [`copies_example`] rejects that.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct FollowUpExample {
    /// The earlier question.
    pub asked: &'static str,
    /// Follow-ups to it.
    pub follow_ups: [&'static str; 2],
}

/// The example for `lang` (Chinese for CJK corpora, whose user prompt is Chinese).
pub(crate) fn follow_up_example(lang: &Language) -> FollowUpExample {
    if lang.is_cjk() {
        FollowUpExample {
            asked: "这家店几点开门？",
            follow_ups: ["周末呢？", "要预约吗？"],
        }
    } else {
        FollowUpExample {
            asked: "When does the shop open?",
            follow_ups: ["And on weekends?", "Do I need to book?"],
        }
    }
}

/// True when `question` is one of the prompt's example questions (case, spacing and
/// punctuation ignored): a model that copies the example asks nothing about the passages.
pub(crate) fn copies_example(question: &str, lang: &Language) -> bool {
    let q = letters(question);
    let e = follow_up_example(lang);
    std::iter::once(e.asked)
        .chain(e.follow_ups)
        .any(|x| letters(x) == q)
}

/// Why the humanizer's rewrite was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HumanizerGuard {
    Empty,
    TooShort,
    TooLong,
    MetaPhrase,
    WrongLanguage,
    Unchanged,
}

impl HumanizerGuard {
    pub(crate) fn name(self) -> &'static str {
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
pub(crate) fn quote_supported(quote: &str, passage: &str) -> bool {
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
pub(crate) fn question_problem(
    question: &str,
    standalone: &str,
    evidence: &str,
    lang: &Language,
    meta: &[String],
) -> Option<&'static str> {
    question_problem_within(question, standalone, evidence, lang, meta, None)
}

/// [`question_problem`] for a styled profile's message (`crate::style`): `too_long` only past
/// `max_len` words (CJK: characters), and a message of several sentences asks when its last
/// sentence does ("I work part-time in Porto. How many days of leave do I get?").
pub(crate) fn styled_question_problem(
    question: &str,
    standalone: &str,
    evidence: &str,
    lang: &Language,
    meta: &[String],
    max_len: usize,
) -> Option<&'static str> {
    question_problem_within(question, standalone, evidence, lang, meta, Some(max_len))
}

/// The guards, with a styled profile's cap (`Some`) or the concise one.
fn question_problem_within(
    question: &str,
    standalone: &str,
    evidence: &str,
    lang: &Language,
    meta: &[String],
    styled_max: Option<usize>,
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
    let max = styled_max.unwrap_or(if cjk { 80 } else { 40 });
    if len > max {
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
    let last_sentence_asks = || {
        styled_max.is_some()
            && last_sentence(question).is_some_and(|last| last != question && asks(last, cjk))
    };
    if !asks(question, cjk) && !last_sentence_asks() {
        return Some("not_a_question");
    }
    None
}

/// The last sentence of `text` (after the last `.`, `!`, `。`, `！` followed by more text).
fn last_sentence(text: &str) -> Option<&str> {
    let t = text.trim_end();
    let body = t.trim_end_matches(['?', '？', '.', '!', '。', '！']);
    let at = body.rfind(['.', '!', '?', '。', '！', '？'])?;
    let end = body[at..].chars().next().map_or(1, char::len_utf8);
    let rest = t[at + end..].trim();
    (!rest.is_empty()).then_some(rest)
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

/// Words that may come before an opener in a question ("In which year ...", "And how ...",
/// "For how long ...", "To whom ...").
const LEADS_EN: [&str; 14] = [
    "and", "so", "but", "then", "in", "for", "at", "on", "during", "after", "before", "by", "to",
    "from",
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
            let w = words(clause);
            let opener = |i: usize| w.get(i).is_some_and(|w| OPENERS_EN.contains(&w.as_str()));
            opener(0) || (w.first().is_some_and(|w| LEADS_EN.contains(&w.as_str())) && opener(1))
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
pub(crate) fn standalone_problem(
    standalone: &str,
    lang: &Language,
    meta: &[String],
) -> Option<&'static str> {
    // no evidence given: nothing to be copied from
    question_problem(standalone, "", "", lang, meta)
        .or_else(|| (!in_language(standalone, lang)).then_some("wrong_language"))
}

/// Trims whitespace, wrapping quotes and a leading label like `Question:`; collapses runs of
/// whitespace.
pub(crate) fn clean(s: &str) -> String {
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
pub(crate) fn without_source_preamble(answer: &str) -> String {
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

/// What an answerer writes when it found nothing, whatever it calls its source: "I could
/// not find", "no information", "is not specified", "未提及", "无法回答". None of these says
/// anything about a handbook's rules, so each rejects the answer wherever it stands.
const NOT_FOUND_PHRASES: [&str; 44] = [
    "could not find",
    "couldn't find",
    "cannot find",
    "can't find",
    "unable to find",
    "not able to find",
    "does not mention",
    "doesn't mention",
    "is not mentioned",
    "isn't mentioned",
    "not mentioned in",
    "no mention of",
    "is not specified",
    "isn't specified",
    "not specified in",
    "is not stated",
    "isn't stated",
    "not stated in",
    "not explicitly stated",
    "not explicitly mentioned",
    "no information",
    "no specific information",
    "no details",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "cannot be answered",
    "cannot be determined",
    "i don't know",
    "i do not know",
    "没有找到",
    "未找到",
    "找不到",
    "没有提到",
    "没有提及",
    "未提及",
    "并未提及",
    "未提到",
    "无法回答",
    "无法确定",
    "没有相关",
    "无相关信息",
    "未涉及",
    "没有涉及",
];

/// Words an answerer calls its evidence by: with one of them before it, a negated verb
/// ("does not provide", "未说明") says the source holds no answer; without one it may be the
/// answer ("The company does not provide parking.", "未提供证明的，不予报销。").
const SOURCE_SUBJECTS: [&str; 16] = [
    "passage",
    "text",
    "document",
    "context",
    "excerpt",
    "source",
    "information",
    "handbook",
    "资料",
    "内容",
    "段落",
    "文本",
    "文档",
    "文中",
    "上下文",
    "信息",
];

/// The negated verbs a source "does not" do when it holds no answer.
const SOURCE_NEGATIONS: [&str; 30] = [
    "does not provide",
    "doesn't provide",
    "does not specify",
    "doesn't specify",
    "does not state",
    "doesn't state",
    "does not say",
    "doesn't say",
    "does not contain",
    "doesn't contain",
    "does not include",
    "doesn't include",
    "does not give",
    "doesn't give",
    "does not indicate",
    "doesn't indicate",
    "does not address",
    "doesn't address",
    "does not detail",
    "doesn't detail",
    "does not answer",
    "doesn't answer",
    "没有提供",
    "未提供",
    "没有说明",
    "未说明",
    "没有明确",
    "未明确",
    "没有给出",
    "未给出",
];

/// True when the answerer says the evidence does not hold the answer (it is told to say that
/// it could not find it, and writes "The passage does not provide ...", "no information",
/// "资料中未提及" as often): the question is not answerable from its gold passage, whatever a
/// judge then rates the answer's faithfulness. An answer that merely says "not" ("Meals are
/// not reimbursed", "The company does not provide parking") is an answer.
pub(crate) fn says_not_found(answer: &str) -> bool {
    let lower = answer.to_lowercase();
    if NOT_FOUND_PHRASES.iter().any(|p| lower.contains(p)) {
        return true;
    }
    // a negated verb whose sentence names the source before it
    lower
        .split(['.', '!', '?', ';', '。', '！', '？', '；'])
        .any(|sentence| {
            SOURCE_NEGATIONS.iter().any(|n| {
                sentence.find(n).is_some_and(|at| {
                    let before = &sentence[..at];
                    SOURCE_SUBJECTS.iter().any(|s| before.contains(s))
                })
            })
        })
}

/// True when `answer` only restates the passage's heading path: its title, its section, or
/// parts joined with " / " (as the prompts show a passage's header line) each of which is
/// the title, the section or a whole line of the passage. Qwen2.5-Coder-0.5B answered
/// "账号的开通流程是什么？" with "账号与密码安全 / 账号锁定与重置 / 权限申请" on the Chinese
/// corpus, and its faithfulness judge rated that 5. Letters and digits are compared (case,
/// spacing and punctuation ignored).
pub(crate) fn names_only_headings(
    answer: &str,
    title: &str,
    section: Option<&str>,
    text: &str,
) -> bool {
    let whole: Vec<Vec<char>> = [title, section.unwrap_or_default()]
        .into_iter()
        .map(letters)
        .filter(|l| !l.is_empty())
        .collect();
    let a = letters(answer);
    if a.is_empty() {
        return false;
    }
    if whole.contains(&a) {
        return true;
    }
    let parts: Vec<Vec<char>> = answer
        .split(['/', '／'])
        .map(letters)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.len() < 2 {
        return false;
    }
    let lines: Vec<Vec<char>> = text
        .lines()
        .map(letters)
        .filter(|l| !l.is_empty())
        .collect();
    parts.iter().all(|p| whole.contains(p) || lines.contains(p))
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
pub(crate) fn humanizer_guard(
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
mod tests;
