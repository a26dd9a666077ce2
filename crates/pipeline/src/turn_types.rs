//! Turn types in MTRAG's vocabulary, so that `mtr bench` strata and `mtr stats` put a
//! synthesized benchmark's turns beside MTRAG's (whose importer keeps the same strings:
//! `Question Type` -> `question_type`, `Multi-Turn` -> `multi_turn_type`, `Answerability` ->
//! `answerability`, lower case). A synthesized turn's answerability is the kind it was made as
//! (`[synth.mix]`, verified: answerable from its gold, or unanswerable by the whole corpus);
//! its multi-turn type follows from where it stands in the dialogue; its question type is read
//! off the question's wording ([`question_type`]), a rule anyone can check, not a model's
//! label.

use serde::{Deserialize, Serialize};

use crate::generate::TurnRecord;

/// A turn's answerability kind, in MTRAG's spelling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answerability {
    /// The gold passages answer the question.
    #[default]
    Answerable,
    /// The corpus answers the question in part.
    Partial,
    /// No passage of the corpus answers the question.
    Unanswerable,
    /// No retrieval need.
    Conversational,
}

impl Answerability {
    /// Every kind, in the report's order.
    pub const ALL: [Answerability; 4] = [
        Answerability::Answerable,
        Answerability::Partial,
        Answerability::Unanswerable,
        Answerability::Conversational,
    ];

    /// The `answerability` tag's value (MTRAG's importer spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Answerability::Answerable => "answerable",
            Answerability::Partial => "partial",
            Answerability::Unanswerable => "unanswerable",
            Answerability::Conversational => "conversational",
        }
    }
}

/// MTRAG's turn types among its user turns, from the enrichments of
/// `../shared/data/mtrag/conversations_{clapnq,govt}.jsonl` (two of its four domains, 438 user
/// turns; MTRAG, Katsis et al. 2025, Apache-2.0): `(tag, value, turns)`. A turn may carry
/// several question types (567 labels on 438 turns).
pub(crate) const MTRAG_TURNS: usize = 438;

/// See [`MTRAG_TURNS`].
pub(crate) const MTRAG_MIX: &[(&str, &str, usize)] = &[
    ("answerability", "answerable", 369),
    ("answerability", "partial", 40),
    ("answerability", "unanswerable", 28),
    ("answerability", "conversational", 1),
    ("multi_turn_type", "Follow-up", 332),
    ("multi_turn_type", "N/A", 57),
    ("multi_turn_type", "Clarification", 49),
    ("question_type", "Factoid", 184),
    ("question_type", "Summarization", 114),
    ("question_type", "Explanation", 75),
    ("question_type", "Non-Question", 41),
    ("question_type", "Keyword", 38),
    ("question_type", "Composite", 32),
    ("question_type", "Opinion", 32),
    ("question_type", "How-To", 29),
    ("question_type", "Comparative", 10),
    ("question_type", "Troubleshooting", 2),
];

/// MTRAG's `Multi-Turn` value of a turn that follows up on the conversation.
pub(crate) const FOLLOW_UP: &str = "Follow-up";

/// MTRAG's `Multi-Turn` value of a turn that does not lean on what came before (a
/// conversation's first turn; here also the first turn after a topic switch, which the
/// `topic_switch` tag marks).
pub(crate) const NOT_APPLICABLE: &str = "N/A";

/// The `multi_turn_type` of turn `n` (1-based) of a dialogue.
pub(crate) fn multi_turn_type(n: usize, topic_switch: bool) -> &'static str {
    if n <= 1 || topic_switch {
        NOT_APPLICABLE
    } else {
        FOLLOW_UP
    }
}

/// The question types the wording rule tells apart, in MTRAG's spelling.
pub(crate) mod question {
    /// Asks for a fact.
    pub(crate) const FACTOID: &str = "Factoid";
    /// Asks how two things differ or compare.
    pub(crate) const COMPARATIVE: &str = "Comparative";
    /// Asks how to do something.
    pub(crate) const HOW_TO: &str = "How-To";
    /// Asks why, or for an explanation.
    pub(crate) const EXPLANATION: &str = "Explanation";
    /// Asks for an overview of a subject.
    pub(crate) const SUMMARIZATION: &str = "Summarization";
    /// A few words without a question (a search-box query).
    pub(crate) const KEYWORD: &str = "Keyword";
    /// Asks for facts of two passages at once.
    pub(crate) const COMPOSITE: &str = "Composite";
    /// Asks nothing (thanks, an acknowledgement).
    pub(crate) const NON_QUESTION: &str = "Non-Question";
}

/// The question type of a turn: of a two-passage turn `Comparative` when its wording
/// compares, else `Composite`; of a conversational message that does not ask `Non-Question`;
/// of any other its wording's ([`question_type`]).
pub(crate) fn question_type_of(t: &TurnRecord) -> &'static str {
    let q = &t.question;
    match question_type(q) {
        question::COMPARATIVE => question::COMPARATIVE,
        _ if t.second_evidence.is_some() => question::COMPOSITE,
        _ if t.kind == Answerability::Conversational && !asks(q) => question::NON_QUESTION,
        other => other,
    }
}

/// The `multi_turn_type` of turn `n` (1-based): a conversational message that asks is a
/// `Clarification`; any other turn as [`multi_turn_type`] says.
pub(crate) fn multi_turn_type_of(n: usize, t: &TurnRecord) -> &'static str {
    if t.kind == Answerability::Conversational && asks(&t.question) {
        CLARIFICATION
    } else {
        multi_turn_type(n, t.topic_switch)
    }
}

/// MTRAG's `Multi-Turn` value of a turn that asks to clarify what was said.
pub(crate) const CLARIFICATION: &str = "Clarification";

/// Whether `q` ends as a question does.
fn asks(q: &str) -> bool {
    let q = q.trim_end();
    q.ends_with('?') || q.ends_with('？') || q.ends_with('吗')
}

/// The question type of `q` by its wording: a comparison's words, a how-to's or an
/// explanation's opening, an overview's request, a few words without a question mark or
/// question word (a keyword query); else a factoid. Chinese cues are matched too.
pub(crate) fn question_type(q: &str) -> &'static str {
    let lower = q.trim().to_lowercase();
    let has = |cues: &[&str]| cues.iter().any(|c| lower.contains(c));
    let opens = |cues: &[&str]| cues.iter().any(|c| lower.starts_with(c));
    if has(&[
        " vs ",
        " vs. ",
        "versus",
        "compare",
        "comparison",
        "difference between",
        "differ from",
        "different from",
        "better than",
        "区别",
        "比较",
        "不同",
        "相比",
    ]) {
        return question::COMPARATIVE;
    }
    if opens(&[
        "how do ",
        "how can ",
        "how to ",
        "how should ",
        "how would i",
        "what steps",
        "what should i do",
    ]) || has(&["怎么", "如何", "怎样"])
    {
        return question::HOW_TO;
    }
    if opens(&["why ", "explain", "how does ", "how is ", "how are "])
        || has(&["为什么", "为何", "解释"])
    {
        return question::EXPLANATION;
    }
    if opens(&[
        "summarize",
        "summarise",
        "give me an overview",
        "tell me about",
        "describe",
        "what are the main",
    ]) || has(&["overview of", "概述", "总结", "介绍一下"])
    {
        return question::SUMMARIZATION;
    }
    let asks = lower.ends_with('?') || lower.ends_with('？') || lower.ends_with('吗');
    let question_word = opens(&[
        "what", "when", "where", "who", "which", "how", "is ", "are ", "can ", "do ", "does ",
        "should ", "will ", "may ",
    ]) || has(&["什么", "多少", "哪", "谁", "几"]);
    let words = lower.split_whitespace().count();
    let short = if lower.is_ascii() {
        words <= 4
    } else {
        lower.chars().count() <= 8
    };
    if !asks && !question_word && short {
        return question::KEYWORD;
    }
    question::FACTOID
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wording_gives_the_question_type() {
        for (q, t) in [
            (
                "How many days of annual leave do new employees get?",
                question::FACTOID,
            ),
            (
                "What is the difference between sick leave and parental leave?",
                question::COMPARATIVE,
            ),
            ("How do I reset my VPN password?", question::HOW_TO),
            (
                "Why does the laptop need full-disk encryption?",
                question::EXPLANATION,
            ),
            (
                "Tell me about the expenses policy.",
                question::SUMMARIZATION,
            ),
            ("per diem rates", question::KEYWORD),
            ("年假和病假有什么区别？", question::COMPARATIVE),
            ("如何申请报销？", question::HOW_TO),
            ("为什么要加密笔记本？", question::EXPLANATION),
            ("新员工有多少天年假？", question::FACTOID),
        ] {
            assert_eq!(question_type(q), t, "{q}");
        }
    }

    fn record(q: &str, second: bool, kind: Answerability) -> TurnRecord {
        TurnRecord {
            layer: 1,
            question: q.into(),
            original: None,
            standalone: String::new(),
            answer: "a".into(),
            evidence: String::new(),
            second_evidence: second.then(|| "c2".to_string()),
            extra_golds: Vec::new(),
            topic_switch: false,
            topic: 0,
            path: 0,
            answerability: None,
            faithfulness: 0,
            attempts: 1,
            relevance: None,
            kind,
            parts: None,
        }
    }

    #[test]
    fn a_two_passage_turn_is_comparative_or_composite() {
        let a = Answerability::Answerable;
        let cmp = "What is the difference between sick leave and parental leave?";
        assert_eq!(
            question_type_of(&record(cmp, true, a)),
            question::COMPARATIVE
        );
        let both = "How many days of annual leave and of sick leave do staff get?";
        assert_eq!(
            question_type_of(&record(both, true, a)),
            question::COMPOSITE
        );
        assert_eq!(question_type_of(&record(both, false, a)), question::FACTOID);
    }

    #[test]
    fn a_conversational_turn_is_a_non_question_or_a_clarification() {
        let c = Answerability::Conversational;
        let thanks = record("Thanks, that helps a lot.", false, c);
        assert_eq!(question_type_of(&thanks), question::NON_QUESTION);
        assert_eq!(multi_turn_type_of(2, &thanks), FOLLOW_UP);
        let clarify = record("What do you mean by carry over?", false, c);
        assert_eq!(multi_turn_type_of(2, &clarify), CLARIFICATION);
        assert_eq!(question_type_of(&clarify), question::FACTOID);
    }

    #[test]
    fn only_a_turn_that_leans_on_the_conversation_is_a_follow_up() {
        assert_eq!(multi_turn_type(1, false), NOT_APPLICABLE);
        assert_eq!(multi_turn_type(2, false), FOLLOW_UP);
        assert_eq!(multi_turn_type(3, true), NOT_APPLICABLE);
    }
}
