//! Whether a follow-up question refers back to the conversation: a pronoun or demonstrative
//! that points at something said before ("Is it paid?", "那这个呢？"), or an ellipsis that leaves
//! it out ("And for part-time staff?", "病假呢？"). Word lists per language; English and
//! Chinese have them, other languages count as never referring back (reported as such).
//! Surface cues only: a lexical measure that reads the same on a synthesized set and a real
//! one, not a judge.

use super::length::{LengthUnit, is_cjk_language};

/// English pronouns and demonstratives that point back ("there" and "that" are left out:
/// "Is there ...", "... that applies ..." point nowhere far more often than back).
const POINTERS_EN: [&str; 16] = [
    "it", "its", "it's", "itself", "they", "them", "their", "theirs", "this", "these", "those",
    "he", "she", "him", "his", "her",
];

/// Phrases an elliptical English follow-up opens with.
const ELLIPSIS_OPENERS_EN: [&str; 10] = [
    "and ",
    "what about",
    "how about",
    "what if",
    "also ",
    "same for",
    "or ",
    "and?",
    "then ",
    "so ",
];

/// English phrases that point back wherever they stand.
const BACK_PHRASES_EN: [&str; 6] = [
    "the same",
    "that one",
    "mentioned",
    "you said",
    "as well",
    "the above",
];

/// Chinese pronouns and demonstratives that point back.
/// ("该" and "此" are left out: 应该, 因此 hold them; 其他 is taken out before 他 is looked for.)
const POINTERS_ZH: [&str; 16] = [
    "它", "他们", "她们", "他", "她", "这个", "那个", "这些", "那些", "这种", "那种", "这项",
    "这样", "其中", "上述", "此项",
];

/// Openers and particles of an elliptical Chinese follow-up (那…呢？, 还有…, 同样…).
const ELLIPSIS_ZH: [&str; 7] = ["那", "那么", "还有", "另外", "同样", "也", "呢"];

/// A follow-up this short (words; CJK characters) leaves what it asks about to the
/// conversation ("How much?", "几天？").
const ELLIPTICAL_LENGTH: (usize, usize) = (3, 5);

/// True when `question`, asked after earlier turns, refers back to them.
pub fn refers_back(question: &str, language: &str) -> bool {
    if is_cjk_language(language) {
        refers_back_zh(question)
    } else if language == "en" {
        refers_back_en(question)
    } else {
        false
    }
}

fn refers_back_en(question: &str) -> bool {
    let lower = question.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| POINTERS_EN.contains(w))
        || ELLIPSIS_OPENERS_EN.iter().any(|o| lower.starts_with(o))
        || BACK_PHRASES_EN.iter().any(|p| lower.contains(p))
        || LengthUnit::Words.length(&lower) <= ELLIPTICAL_LENGTH.0
}

fn refers_back_zh(question: &str) -> bool {
    let q = question.trim();
    let ellipsis = ELLIPSIS_ZH.iter().any(|w| {
        if *w == "呢" {
            q.contains(w)
        } else {
            q.starts_with(w)
        }
    });
    let without_other = q.replace("其他", "");
    POINTERS_ZH.iter().any(|w| without_other.contains(w))
        || ellipsis
        || LengthUnit::Characters.length(q) <= ELLIPTICAL_LENGTH.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_ups_that_lean_on_the_history_refer_back() {
        for q in [
            "Is it paid?",
            "And for part-time staff?",
            "What about contractors?",
            "How much?",
            "Do they need a doctor's note?",
            "Can I carry those over?",
        ] {
            assert!(refers_back(q, "en"), "{q}");
        }
        for q in [
            "那病假呢？",
            "它需要审批吗？",
            "几天？",
            "还有别的补贴吗？",
            "这个要预约吗？",
        ] {
            assert!(refers_back(q, "zh"), "{q}");
        }
    }

    #[test]
    fn standalone_questions_do_not_refer_back() {
        for q in [
            "How many days of annual leave do UK employees get?",
            "Is there a bicycle leasing scheme for employees in Germany?",
            "What is the notice period for contractors in Portugal?",
        ] {
            assert!(!refers_back(q, "en"), "{q}");
        }
        for q in [
            "员工每年可以享受多少天带薪年假？",
            "报销差旅费需要提交哪些材料？",
            "其他员工应该怎么申请？",
        ] {
            assert!(!refers_back(q, "zh"), "{q}");
        }
        assert!(!refers_back("Wie viel?", "de"));
    }
}
