//! The agents' prompt templates (`prompts/synth/*.j2`). They are compiled into the binary so
//! that `mtr synth` works from any folder; `--prompts DIR` loads edited copies instead. Each
//! template carries a name and version; their hashes go into the benchmark's manifest and,
//! through the rendered messages, into every LLM cache key.

use std::collections::BTreeMap;
use std::path::Path;

use mtr_llm::Prompt;

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::mix::MixOptions;

const SOURCES: [(&str, &str); 7] = [
    ("user", include_str!("../../../prompts/synth/user.j2")),
    ("user_zh", include_str!("../../../prompts/synth/user_zh.j2")),
    (
        "humanize",
        include_str!("../../../prompts/synth/humanize.j2"),
    ),
    ("answer", include_str!("../../../prompts/synth/answer.j2")),
    (
        "answerability",
        include_str!("../../../prompts/synth/answerability.j2"),
    ),
    (
        "uniqueness",
        include_str!("../../../prompts/synth/uniqueness.j2"),
    ),
    (
        "faithfulness",
        include_str!("../../../prompts/synth/faithfulness.j2"),
    ),
];

/// The prompts of the styled profiles (`production`, `like:BENCH`), apart from the seven:
/// a `concise` synthesis neither uses nor hashes them, so its fingerprints stay as they were.
const STYLED_SOURCES: [(&str, &str); 2] = [
    (
        "user_styled",
        include_str!("../../../prompts/synth/user_styled.j2"),
    ),
    (
        "humanize_styled",
        include_str!("../../../prompts/synth/humanize_styled.j2"),
    ),
];

/// The prompts of the turn kinds `[synth.mix]` may ask for beyond answerable single-passage
/// turns: used and hashed only by a synthesis whose mix asks for that kind (a share above
/// 0), so a synthesis that asks for none keeps its fingerprints.
const MIX_SOURCES: [(&str, &str); 7] = [
    (
        "user_unanswerable",
        include_str!("../../../prompts/synth/user_unanswerable.j2"),
    ),
    (
        "unanswerable",
        include_str!("../../../prompts/synth/unanswerable.j2"),
    ),
    (
        "user_two_passage",
        include_str!("../../../prompts/synth/user_two_passage.j2"),
    ),
    (
        "two_passage",
        include_str!("../../../prompts/synth/two_passage.j2"),
    ),
    (
        "user_conversational",
        include_str!("../../../prompts/synth/user_conversational.j2"),
    ),
    (
        "conversational",
        include_str!("../../../prompts/synth/conversational.j2"),
    ),
    (
        "user_partial",
        include_str!("../../../prompts/synth/user_partial.j2"),
    ),
];

/// The prompt of personas drawn from the corpus's topics (`[synth.personas] file =
/// "topics"`): used, and hashed into the fingerprint (`crate::voices`), only then.
const VOICE_SOURCES: [(&str, &str); 1] =
    [("persona", include_str!("../../../prompts/synth/persona.j2"))];

/// The seven prompts of the pipeline, the two of the styled profiles and those of the mix's
/// turn kinds.
#[derive(Debug)]
pub struct SynthPrompts {
    pub(crate) user: Prompt,
    /// The user agent's prompt for a Chinese corpus, written in Chinese: with the English
    /// prompt, Qwen2.5-Coder-0.5B kept almost no Chinese follow-up (issue 25: copied passage
    /// sentences, repeated questions). Its effect on that yield is not measured yet; see
    /// [`SynthPrompts::user_for`].
    pub user_zh: Prompt,
    pub(crate) humanize: Prompt,
    pub(crate) answer: Prompt,
    pub(crate) answerability: Prompt,
    pub(crate) uniqueness: Prompt,
    pub(crate) faithfulness: Prompt,
    /// The user agent's prompt under a styled profile (any corpus language).
    pub user_styled: Prompt,
    /// The humanizer's prompt under a styled profile.
    pub humanize_styled: Prompt,
    /// The user agent's prompt of a turn drawn `unanswerable`.
    pub(crate) user_unanswerable: Prompt,
    /// The verifier's prompt of a turn drawn `unanswerable`: does a passage found answer it?
    pub(crate) unanswerable: Prompt,
    /// The user agent's prompt of a turn drawn `two_passage`.
    pub(crate) user_two_passage: Prompt,
    /// The verifier's prompt of a turn drawn `two_passage`: each passage alone, and both?
    pub(crate) two_passage: Prompt,
    /// The user agent's prompt of a turn drawn `conversational` (message and reply).
    pub(crate) user_conversational: Prompt,
    /// The verifier's prompt of a turn drawn `conversational`: does it need a search?
    pub(crate) conversational: Prompt,
    /// The user agent's prompt of a turn drawn `partial` (its verifier's prompts are the
    /// answerable and unanswerable turns').
    pub(crate) user_partial: Prompt,
    /// The generator's prompt of a topic's persona (`[synth.personas] file = "topics"`).
    pub(crate) persona: Prompt,
}

impl SynthPrompts {
    /// The built-in prompts.
    pub fn builtin() -> Result<Self> {
        Self::build(|name, src| Prompt::parse(&format!("synth/{name}"), src))
    }

    /// Prompts from `dir/<name>.j2`, falling back to the built-in one for a missing file.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        Self::build(|name, src| {
            let p = dir.join(format!("{name}.j2"));
            if p.is_file() {
                Prompt::load(&p)
            } else {
                Prompt::parse(&format!("synth/{name}"), src)
            }
        })
    }

    fn build(mut load: impl FnMut(&str, &str) -> mtr_llm::Result<Prompt>) -> Result<Self> {
        let mut got = BTreeMap::new();
        for (name, src) in SOURCES
            .into_iter()
            .chain(STYLED_SOURCES)
            .chain(MIX_SOURCES)
            .chain(VOICE_SOURCES)
        {
            let p = load(name, src).map_err(|e| Error::param("prompts", e.to_string()))?;
            got.insert(name, p);
        }
        let mut take = |n: &str| {
            got.remove(n)
                .ok_or_else(|| Error::Internal(format!("prompt {n} missing")))
        };
        Ok(Self {
            user: take("user")?,
            user_zh: take("user_zh")?,
            humanize: take("humanize")?,
            answer: take("answer")?,
            answerability: take("answerability")?,
            uniqueness: take("uniqueness")?,
            faithfulness: take("faithfulness")?,
            user_styled: take("user_styled")?,
            humanize_styled: take("humanize_styled")?,
            user_unanswerable: take("user_unanswerable")?,
            unanswerable: take("unanswerable")?,
            user_two_passage: take("user_two_passage")?,
            two_passage: take("two_passage")?,
            user_conversational: take("user_conversational")?,
            conversational: take("conversational")?,
            user_partial: take("user_partial")?,
            persona: take("persona")?,
        })
    }

    /// The user agent's prompt for a corpus in `lang`.
    pub(crate) fn user_for(&self, lang: &Language) -> &Prompt {
        if lang.code() == "zh" {
            &self.user_zh
        } else {
            &self.user
        }
    }

    /// Every prompt, in a fixed order.
    pub fn all(&self) -> [&Prompt; 7] {
        [
            &self.user,
            &self.user_zh,
            &self.humanize,
            &self.answer,
            &self.answerability,
            &self.uniqueness,
            &self.faithfulness,
        ]
    }

    /// The prompts a synthesis uses: the seven, and with a styled profile its two.
    pub fn used(&self, styled: bool) -> Vec<&Prompt> {
        let mut v = self.all().to_vec();
        if styled {
            v.extend([&self.user_styled, &self.humanize_styled]);
        }
        v
    }

    /// The prompts a synthesis uses: [`SynthPrompts::used`], and those of the turn kinds its
    /// mix asks for.
    pub(crate) fn used_with(&self, styled: bool, mix: &MixOptions) -> Vec<&Prompt> {
        let mut v = self.used(styled);
        if mix.unanswerable > 0.0 {
            v.extend([&self.user_unanswerable, &self.unanswerable]);
        }
        if mix.two_passage > 0.0 {
            v.extend([&self.user_two_passage, &self.two_passage]);
        }
        if mix.conversational > 0.0 {
            v.extend([&self.user_conversational, &self.conversational]);
        }
        if mix.partial > 0.0 {
            // its missing part is verified with the unanswerable turn's judge
            v.push(&self.user_partial);
            if mix.unanswerable <= 0.0 {
                v.push(&self.unanswerable);
            }
        }
        v
    }

    /// `id -> hash` of every prompt.
    pub fn hashes(&self) -> BTreeMap<String, String> {
        self.used(false)
            .iter()
            .map(|p| (p.id(), p.hash().to_string()))
            .collect()
    }

    /// `id -> hash` of the prompts used ([`SynthPrompts::used_with`]).
    pub(crate) fn hashes_for(&self, styled: bool, mix: &MixOptions) -> BTreeMap<String, String> {
        self.used_with(styled, mix)
            .iter()
            .map(|p| (p.id(), p.hash().to_string()))
            .collect()
    }

    /// One hash over all prompts (the fingerprint's `prompts` field).
    pub fn hash(&self) -> String {
        mtr_llm::prompts_hash(self.all())
    }

    /// One hash over the prompts used ([`SynthPrompts::used_with`]); [`SynthPrompts::hash`]
    /// without a styled profile or a mix kind that has its own prompts.
    pub(crate) fn hash_for(&self, styled: bool, mix: &MixOptions) -> String {
        mtr_llm::prompts_hash(self.used_with(styled, mix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `prompt` with `ctx` after an attempt rejected for each reason code the
    /// generator feeds back: the prompt words every one of them after `marker`, never shows
    /// the code, and an unknown code is an error, never an empty line.
    fn assert_every_reason_worded(prompt: &Prompt, ctx: serde_json::Value, marker: &str) {
        let with_feedback = |reason: &str| {
            let mut ctx = ctx.clone();
            ctx["feedback"] = reason.into();
            prompt.render(&ctx)
        };
        for reason in [
            "wrong_language",
            "repeated_question",
            "near_duplicate",
            "near_copy",
            "copied_passage",
            "too_long",
            "not_a_question",
            "meta_phrase",
            "not_answerable",
            "not_unique",
            "repeated_answer",
            "copied_example",
        ] {
            let msgs = with_feedback(reason).unwrap();
            let text = &msgs[1].content;
            assert!(text.contains(marker), "{reason}: {text}");
            assert!(
                !text.contains(reason),
                "{reason} is worded, not shown as a code"
            );
        }
        let unknown = with_feedback("no_such_reason");
        assert!(unknown.is_err(), "{unknown:?}");
    }

    /// The user prompt of a follow-up after a rejected attempt, as the small local model reads
    /// it: every message with its role.
    fn follow_up(prompt: &Prompt, passage: &serde_json::Value, language: Option<&str>) -> String {
        let mut ctx = serde_json::json!({
            "history": [
                {"speaker": "user", "text": "年假最多能结转几天？"},
                {"speaker": "agent", "text": "最多可结转5天，须在次年3月31日前休完。"}
            ],
            "asked": ["年假最多能结转几天？"],
            "passages": [passage, {"title": "病假", "section": null, "text": "连续病假3天及以上的，须提交诊断证明。"}],
            "first": false, "switch": false, "feedback": "copied_passage", "rewrite": true,
        });
        let lang = Language::from_code(if prompt.id().starts_with("synth/user_zh") {
            "zh"
        } else {
            "en"
        });
        ctx["example"] = serde_json::json!(crate::text_rules::follow_up_example(&lang));
        if let Some(language) = language {
            ctx["language"] = language.into();
        }
        let text: Vec<String> = prompt
            .render(&ctx)
            .unwrap()
            .iter()
            .map(|m| format!("[{:?}]\n{}", m.role, m.content))
            .collect();
        text.join("\n\n")
    }

    #[test]
    fn builtin_prompts_parse_and_render() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(p.user.id(), "synth/user@7");
        let passage = serde_json::json!({"title": "Annual Leave", "section": "Entitlement", "text": "25 days."});
        let msgs = p
            .user
            .render(&serde_json::json!({
                "language": "Chinese", "history": [], "asked": [], "passages": [passage],
                "first": true, "switch": false, "feedback": null, "rewrite": true,
            }))
            .unwrap();
        assert_eq!(msgs.len(), 2);
        assert!(msgs[0].content.contains("Write in Chinese"));
        assert!(msgs[1].content.contains("[1] Annual Leave / Entitlement"));
        assert!(msgs[1].content.contains("Start the conversation"));
        assert_eq!(p.hashes().len(), 7);
        // the generator passes why an attempt was rejected as a reason code: the prompt
        // words every one of them, and an unknown one is an error, never an empty line
        assert_every_reason_worded(
            &p.user,
            serde_json::json!({
                "language": "English", "history": [], "asked": [], "passages": [passage],
                "first": false, "switch": false, "feedback": null, "rewrite": true,
                "example": crate::text_rules::follow_up_example(&Language::from_code("en")),
            }),
            "A previous attempt was rejected: ",
        );
        // a follow-up after a rejected attempt, as the small local model reads it: the
        // assistant's answer, not the user's earlier question (which it asked again)
        let rendered = follow_up(&p.user, &passage, Some("Chinese"));
        assert!(rendered.contains("Assistant: 最多可结转5天"), "{rendered}");
        assert!(!rendered.contains("User: 年假最多能结转几天"), "{rendered}");
        insta::assert_snapshot!("user_follow_up", rendered);
        assert_eq!(p.hash(), SynthPrompts::builtin().unwrap().hash());
    }

    #[test]
    fn without_rewrites_the_user_prompts_ask_for_the_question_alone() {
        let p = SynthPrompts::builtin().unwrap();
        let passage = serde_json::json!({"title": "年假", "section": null, "text": "未休完的年假最多可结转5天。"});
        for prompt in [&p.user, &p.user_zh] {
            let render = |rewrite: bool| {
                let ctx = serde_json::json!({
                    "language": "Chinese", "history": [], "asked": [], "passages": [passage],
                    "first": true, "switch": false, "feedback": null, "rewrite": rewrite,
                });
                let msgs = prompt.render(&ctx).unwrap();
                msgs.iter()
                    .map(|m| m.content.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let (with, without) = (render(true), render(false));
            assert_eq!(with.matches("\"standalone\"").count(), 2, "{with}");
            assert!(!without.contains("standalone"), "{without}");
            // the reply format still closes its object
            assert!(without.contains(r#""question": "..."}"#), "{without}");
            // nothing else changes: the standalone rule goes, the reply format loses a field
            let reply = |l: &&str| l.contains(r#""passage": N"#);
            let kept: Vec<&str> = with.lines().filter(|l| !l.contains("standalone")).collect();
            let kept_without: Vec<&str> = without.lines().filter(|l| !reply(l)).collect();
            assert_eq!(kept, kept_without);
        }
    }

    #[test]
    fn a_chinese_corpus_gets_the_user_prompt_written_in_chinese() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(
            p.user_for(&Language::from_code("zh")).id(),
            "synth/user_zh@4"
        );
        for other in ["en", "ja", "de"] {
            assert_eq!(p.user_for(&Language::from_code(other)).id(), "synth/user@7");
        }
        let passage = serde_json::json!({"title": "年假", "section": "结转", "text": "未休完的年假最多可结转5天。"});
        // every reason code the generator feeds back is worded in Chinese
        assert_every_reason_worded(
            &p.user_zh,
            serde_json::json!({
                "history": [], "asked": [], "passages": [passage],
                "first": false, "switch": false, "feedback": null, "rewrite": true,
                "example": crate::text_rules::follow_up_example(&Language::from_code("zh")),
            }),
            "上一次尝试被拒绝了：",
        );
        insta::assert_snapshot!("user_zh_follow_up", follow_up(&p.user_zh, &passage, None));
    }

    #[test]
    fn the_unanswerable_prompts_render_and_are_hashed_only_when_the_mix_asks_for_them() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(p.user_unanswerable.id(), "synth/user_unanswerable@2");
        assert_eq!(p.unanswerable.id(), "synth/unanswerable@1");
        let passage = serde_json::json!({"title": "Annual Leave", "section": "Carry-over", "text": "Up to 5 unused days carry over to the next year."});
        let ctx = serde_json::json!({
            "language": "English",
            "history": [{"speaker": "user", "text": "How many days carry over?"},
                        {"speaker": "agent", "text": "Up to 5 days."}],
            "asked": [], "passages": [passage], "first": false, "switch": false,
            "feedback": "answered", "rewrite": true,
        });
        let render = |prompt: &Prompt, ctx: &serde_json::Value| -> String {
            prompt
                .render(ctx)
                .unwrap()
                .iter()
                .map(|m| format!("[{:?}]\n{}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let user = render(&p.user_unanswerable, &ctx);
        assert!(user.contains("NONE of the passages states"), "{user}");
        assert!(user.contains("a passage of the collection answers that question"));
        insta::assert_snapshot!("user_unanswerable_follow_up", user);
        // every reason an unanswerable attempt is rejected for is worded, never shown as a code
        for reason in [
            "wrong_language",
            "repeated_question",
            "near_duplicate",
            "near_copy",
            "copied_passage",
            "too_long",
            "not_a_question",
            "meta_phrase",
            "answered",
            "copied_example",
        ] {
            let mut c = ctx.clone();
            c["feedback"] = reason.into();
            let text = render(&p.user_unanswerable, &c);
            assert!(
                text.contains("A previous attempt was rejected: "),
                "{reason}"
            );
            assert!(!text.contains(&format!(": {reason}")), "{reason}");
        }
        let judge = serde_json::json!({
            "history": ctx["history"], "question": "Do interns get carry-over days?",
            "candidates": [passage, passage], "justify": false,
        });
        let judge = render(&p.unanswerable, &judge);
        assert!(judge.contains("exactly 2 grades"), "{judge}");
        insta::assert_snapshot!("unanswerable_judge", judge);
        // used and hashed only when the mix asks for unanswerable turns (or partial ones,
        // whose missing part it checks)
        let none = MixOptions {
            partial: 0.0,
            unanswerable: 0.0,
            two_passage: 0.0,
            conversational: 0.0,
        };
        assert_eq!(p.hash_for(false, &none), p.hash());
        assert_ne!(p.hash_for(false, &MixOptions::default()), p.hash());
        assert_eq!(p.hashes_for(false, &MixOptions::default()).len(), 14);
    }

    #[test]
    fn the_two_passage_prompts_render() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(p.user_two_passage.id(), "synth/user_two_passage@2");
        assert_eq!(p.two_passage.id(), "synth/two_passage@1");
        let a = serde_json::json!({"title": "Annual Leave", "section": null, "text": "Staff get 25 days a year."});
        let b = serde_json::json!({"title": "Sick Leave", "section": null, "text": "Staff get 10 paid sick days."});
        let ctx = serde_json::json!({
            "language": "English", "history": [], "asked": [], "passages": [a, b],
            "first": true, "switch": false, "feedback": "one_suffices", "rewrite": true,
        });
        let render = |prompt: &Prompt, ctx: &serde_json::Value| -> String {
            prompt
                .render(ctx)
                .unwrap()
                .iter()
                .map(|m| format!("[{:?}]\n{}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let user = render(&p.user_two_passage, &ctx);
        assert!(user.contains("one passage alone answered the whole question"));
        insta::assert_snapshot!("user_two_passage_first", user);
        for reason in [
            "wrong_language",
            "repeated_question",
            "near_duplicate",
            "near_copy",
            "copied_passage",
            "too_long",
            "not_a_question",
            "meta_phrase",
            "not_answerable",
            "one_suffices",
            "repeated_answer",
            "copied_example",
        ] {
            let mut c = ctx.clone();
            c["feedback"] = reason.into();
            let text = render(&p.user_two_passage, &c);
            assert!(
                text.contains("A previous attempt was rejected: "),
                "{reason}"
            );
        }
        let judge = serde_json::json!({
            "history": [], "question": "Which is longer, annual or sick leave?",
            "a": a, "b": b, "justify": false,
        });
        insta::assert_snapshot!("two_passage_judge", render(&p.two_passage, &judge));
    }

    #[test]
    fn the_partial_prompt_renders_passages_first_and_is_hashed_only_when_the_mix_asks() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(p.user_partial.id(), "synth/user_partial@1");
        let a = serde_json::json!({"title": "Annual Leave", "section": "Carry-over", "text": "Up to 5 unused days carry over to the next year."});
        let b = serde_json::json!({"title": "Sick Leave", "section": null, "text": "Staff get 10 paid sick days."});
        let ctx = serde_json::json!({
            "language": "English",
            "history": [{"speaker": "user", "text": "How many days of leave do I get?"},
                        {"speaker": "agent", "text": "Staff get 25 days a year."}],
            "asked": ["Is leave paid?"], "passages": [a, b], "first": false, "switch": false,
            "feedback": "missing_answered", "rewrite": true,
        });
        let render = |ctx: &serde_json::Value| -> String {
            p.user_partial
                .render(ctx)
                .unwrap()
                .iter()
                .map(|m| format!("[{:?}]\n{}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let user = render(&ctx);
        // passages, then the conversation, then the task: a prefix the server's cache reuses
        let at = |s: &str| user.find(s).unwrap_or_else(|| panic!("{s}: {user}"));
        assert!(at("## Passages") < at("## Conversation so far"));
        assert!(at("## Conversation so far") < at("## Task"));
        assert!(at("## Task") < at("Reply as"));
        assert!(user.contains("answers the missing part"), "{user}");
        insta::assert_snapshot!("user_partial_follow_up", user);
        for reason in [
            "wrong_language",
            "repeated_question",
            "near_duplicate",
            "near_copy",
            "copied_passage",
            "too_long",
            "not_a_question",
            "meta_phrase",
            "not_answerable",
            "not_unique",
            "repeated_answer",
            "missing_answered",
            "same_parts",
            "copied_example",
        ] {
            let mut c = ctx.clone();
            c["feedback"] = reason.into();
            let text = render(&c);
            assert!(
                text.contains("A previous attempt was rejected: "),
                "{reason}"
            );
            assert!(!text.contains(&format!(": {reason}")), "{reason}");
        }
        let mut unknown = ctx.clone();
        unknown["feedback"] = "no_such_reason".into();
        assert!(p.user_partial.render(&unknown).is_err());
        // without rewrites no standalone version is asked for
        let mut c = ctx.clone();
        c["rewrite"] = false.into();
        assert!(!render(&c).contains("standalone"));
        // used and hashed only when the mix asks for partial turns, with the unanswerable
        // turn's verifier, which checks the missing part
        let only = MixOptions {
            partial: 0.5,
            unanswerable: 0.0,
            two_passage: 0.0,
            conversational: 0.0,
        };
        let ids: Vec<String> = p.used_with(false, &only).iter().map(|p| p.id()).collect();
        assert!(ids.contains(&"synth/user_partial@1".to_string()), "{ids:?}");
        assert!(ids.contains(&"synth/unanswerable@1".to_string()), "{ids:?}");
        assert_eq!(ids.len(), 9, "{ids:?}");
        let both = MixOptions {
            unanswerable: 0.1,
            ..only.clone()
        };
        assert_eq!(p.used_with(false, &both).len(), 10);
        let none = MixOptions {
            partial: 0.0,
            ..only
        };
        assert_eq!(p.hash_for(false, &none), p.hash());
    }

    #[test]
    fn the_conversational_prompts_render() {
        let p = SynthPrompts::builtin().unwrap();
        assert_eq!(p.user_conversational.id(), "synth/user_conversational@1");
        assert_eq!(p.conversational.id(), "synth/conversational@1");
        let history = serde_json::json!([
            {"speaker": "user", "text": "How many days carry over?"},
            {"speaker": "agent", "text": "Up to 5 unused days carry over to the next year."}
        ]);
        let render = |prompt: &Prompt, ctx: &serde_json::Value| -> String {
            prompt
                .render(ctx)
                .unwrap()
                .iter()
                .map(|m| format!("[{:?}]\n{}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let ctx = serde_json::json!({"language": "English", "history": history, "feedback": "needs_search"});
        let user = render(&p.user_conversational, &ctx);
        assert!(
            user.contains("the message asked for new information"),
            "{user}"
        );
        insta::assert_snapshot!("user_conversational", user);
        for reason in [
            "wrong_language",
            "repeated_question",
            "too_long",
            "needs_search",
        ] {
            let mut c = ctx.clone();
            c["feedback"] = reason.into();
            let text = render(&p.user_conversational, &c);
            assert!(
                text.contains("A previous attempt was rejected: "),
                "{reason}"
            );
        }
        let judge = serde_json::json!({"history": history, "question": "Thanks, that helps!", "justify": false});
        insta::assert_snapshot!("conversational_judge", render(&p.conversational, &judge));
    }
}
