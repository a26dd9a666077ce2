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
/// `！`, `？`) comes before the last character, except a `.` inside a number (`1.5`): a small
/// model then cannot paste a passage sentence and ask about it after it, nor answer its own
/// question in the standalone version, and it stops writing at its first question mark
/// (measured on Qwen2.5-Coder-0.5B: the user call's completion tokens halved, every
/// standalone version a question). A quote or backslash is never allowed, since the grammar
/// writes these characters raw into the JSON string. The caller still checks the question
/// ([`question_problem`]): a pattern only shapes it.
pub fn question_pattern(lang: &Language) -> String {
    let max = question_max_chars(lang);
    format!(r#"^([^"\\\n.!?。！？]|\.[0-9]){{2,{max}}}[?？]$"#)
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
pub fn proposal_max_tokens(lang: &Language, rewrite: bool) -> u32 {
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
pub struct FollowUpExample {
    /// The earlier question.
    pub asked: &'static str,
    /// Follow-ups to it.
    pub follow_ups: [&'static str; 2],
}

/// The example for `lang` (Chinese for CJK corpora, whose user prompt is Chinese).
pub fn follow_up_example(lang: &Language) -> FollowUpExample {
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
pub fn copies_example(question: &str, lang: &Language) -> bool {
    let q = letters(question);
    let e = follow_up_example(lang);
    std::iter::once(e.asked)
        .chain(e.follow_ups)
        .any(|x| letters(x) == q)
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
    question_problem_within(question, standalone, evidence, lang, meta, None)
}

/// [`question_problem`] for a styled profile's message (`crate::style`): `too_long` only past
/// `max_len` words (CJK: characters), and a message of several sentences asks when its last
/// sentence does ("I work part-time in Porto. How many days of leave do I get?").
pub fn styled_question_problem(
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
pub fn standalone_problem(
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
pub fn says_not_found(answer: &str) -> bool {
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
pub fn names_only_headings(answer: &str, title: &str, section: Option<&str>, text: &str) -> bool {
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
    fn an_answer_that_only_names_the_headings_is_caught() {
        let text =
            "账号锁定与重置\n连续输错密码5次，账号锁定30分钟。\n权限申请\n权限每半年复核一次。";
        let only = |a: &str| names_only_headings(a, "账号与密码安全", Some("账号锁定与重置"), text);
        // seen in a main-job run, as the answer to "账号的开通流程是什么？"
        assert!(only("账号与密码安全 / 账号锁定与重置 / 权限申请"));
        assert!(only("账号与密码安全"));
        assert!(only(" 账号锁定与重置。"));
        assert!(!only("连续输错密码5次，账号锁定30分钟。"));
        assert!(!only("账号锁定与重置：连续输错密码5次，账号锁定30分钟。"));
        assert!(!only("账号与密码安全 / 30分钟"));
        assert!(!only(""));
        let en =
            |a: &str| names_only_headings(a, "Annual Leave", None, "Carry-over\nUp to 5 days.");
        assert!(en("Annual leave / Carry-over"));
        assert!(!en("Up to 5 days."));
        assert!(!en("Annual leave: up to 5 days carry over."));
    }

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

    /// Seen in a main-job Chinese synthesis: the user agent, told what the "资料" are, asked
    /// about "某段资料" itself, and the turn was accepted.
    #[test]
    fn a_chinese_question_about_the_passages_is_a_meta_phrase() {
        let meta = HumanizerOptions::default().meta_phrases;
        let zh = Language::from_code("zh");
        let ev = "因业务需要在法定节假日安排加班的，须事先经部门负责人批准，并在青云系统中提交加班申请。";
        for q in [
            "某段资料中的规定是什么？",
            "这段资料说加班要谁批准？",
            "资料里写的加班工资是多少？",
        ] {
            assert_eq!(
                question_problem(q, "", ev, &zh, &meta),
                Some("meta_phrase"),
                "{q}"
            );
        }
        // the word alone is no meta phrase: a handbook speaks of documents to keep
        assert_eq!(
            question_problem("离职前需要保留哪些资料？", "", ev, &zh, &meta),
            None
        );
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
    fn a_question_may_open_with_a_preposition_or_conjunction_before_its_question_word() {
        // long questions the small model wrote that the check took for statements
        let meta = HumanizerOptions::default().meta_phrases;
        let en = Language::from_code("en");
        for q in [
            "In which annual leave does the primary caregiver take up to 52 weeks of leave?",
            "For how many weeks is the primary caregiver paid at the normal daily rate?",
            "And what happens to the annual leave accrued during all of the parental leave?",
        ] {
            assert_eq!(question_problem(q, q, "", &en, &meta), None, "{q}");
        }
        // a lead word alone asks nothing
        for q in [
            "In Portugal the office is closed on the 13 national holidays and on Christmas Eve?",
            "And the annual leave and benefits continue to accrue during all parental leave?",
        ] {
            assert_eq!(
                question_problem(q, q, "", &en, &meta),
                Some("not_a_question"),
                "{q}"
            );
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
            // kept as verified turns by a main-job synthesis (Qwen2.5-Coder-0.5B)
            "The passage does not provide a specific minimum amount for the bicycle lease.",
            "The passage does not provide any special requirements for remote work equipment.",
            "The text does not specify how many days can be carried over.",
            "There is no information about parking in the handbook.",
            "The notice period for contractors is not mentioned in the provided information.",
            "The exact amount isn't stated.",
            "The provided information doesn't say whether part-time staff are eligible.",
            "I'm sorry, but I cannot answer that from what I have.",
            "资料中没有提到加班费的标准。",
            "文中未说明具体的报销上限。",
            "提供的内容没有相关信息。",
            "根据提供的资料，无法回答这个问题。",
            "资料没有给出具体天数。",
        ] {
            assert!(says_not_found(a), "{a}");
        }
        // real answers that merely say "not" (or 不, 未) are answers
        for a in [
            "Meals are not reimbursed on flights under 3 hours.",
            "The company does not provide parking, but the office pays 50% of a public transport pass.",
            "No, contractors do not get paid parental leave; only employees do.",
            "You cannot carry over more than 5 days, and they must be used by 30 June.",
            "It is not possible to work remotely from outside the EU for more than 30 days a year.",
            "The allowance does not include hardware, which IT provides separately.",
            "Up to 2,500 pounds, not counting the safety equipment, through salary sacrifice.",
            "Unless specified otherwise in your contract, the notice period is one month.",
            "年假最多可结转5天。",
            "未提供证明的，不予报销。",
            "不需要，试用期员工也可以申请。",
            "未休完的年假最多可以结转五天，须在次年3月31日前休完。",
            "公司不提供停车位，但报销一半的公共交通月票。",
        ] {
            assert!(!says_not_found(a), "{a}");
        }
    }

    #[test]
    fn a_styled_message_may_be_long_and_ask_in_its_last_sentence() {
        let meta = HumanizerOptions::default().meta_phrases;
        let en = Language::from_code("en");
        let msg = "I just moved to the Porto office and I work part-time, three days a week, so I am not sure the usual rules apply to me. How many days of annual leave do I get?";
        // concise: one sentence that asks, or nothing
        assert_eq!(
            question_problem(msg, "", "", &en, &meta),
            Some("not_a_question")
        );
        assert_eq!(styled_question_problem(msg, "", "", &en, &meta, 80), None);
        assert_eq!(
            styled_question_problem(msg, "", "", &en, &meta, 20),
            Some("too_long")
        );
        // statements alone still ask nothing
        assert_eq!(
            styled_question_problem(
                "I work part-time. The office is in Porto.",
                "",
                "",
                &en,
                &meta,
                80
            ),
            Some("not_a_question")
        );
        let zh = Language::from_code("zh");
        assert_eq!(
            styled_question_problem(
                "我刚入职，在上海办公室工作。年假最多能结转几天？",
                "",
                "",
                &zh,
                &meta,
                200
            ),
            None
        );
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

    #[test]
    fn a_question_copied_from_the_prompts_example_is_caught() {
        let (en, zh) = (Language::from_code("en"), Language::from_code("zh"));
        // asked by Qwen2.5-Coder-0.5B in a synthesis, after the prompt's example
        assert!(copies_example("Do I need to book?", &en));
        assert!(copies_example("do i need to book", &en));
        assert!(copies_example("And on weekends?", &en));
        assert!(!copies_example("Do I need to book the welcome call?", &en));
        assert!(copies_example("周末呢？", &zh));
        assert!(!copies_example("周末加班有补贴吗？", &zh));
    }

    #[test]
    fn the_user_agents_room_holds_the_longest_patterned_reply() {
        let en = Language::from_code("en");
        // two strings of the pattern's 150 characters and a question mark, a token each
        assert!(proposal_max_tokens(&en, true) >= 2 * 151 + 20);
        let zh = Language::from_code("zh");
        assert!(proposal_max_tokens(&zh, true) >= 2 * 2 * 41 + 20);
        // the question alone: one string
        assert!(proposal_max_tokens(&en, false) >= 151 + 20);
        assert!(proposal_max_tokens(&en, false) < proposal_max_tokens(&en, true));
        assert!(proposal_max_tokens(&zh, false) >= 2 * 41 + 20);
    }
}
