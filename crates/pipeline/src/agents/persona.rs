//! Personas drawn from the corpus's topics (`[synth.personas] file = "topics"`, see
//! `crate::voices`): the generator writes one persona per coarse topic (the `max_topics` with
//! the most paths), each in one structured call through the LLM cache like every agent call
//! (a rerun pays nothing), its usage logged under the role `persona`, shown a few passages of
//! the topic. A failed or unparsable call leaves its topic without a persona, counted. The
//! tests here also render the user agent's prompts with a persona and seed questions.

use mtr_llm::{ChatRequest, JsonSchema, OutputSpec};
use serde_json::{Value, json};

use super::{Agents, Parsed, PromptPassage};
use crate::agents::CallLog;
use crate::error::Result;
use crate::lang::Language;
use crate::prepare::Prepared;
use crate::prompts::SynthPrompts;
use crate::text_rules::clean;
use crate::voices::{Persona, PersonaSet};

/// The longest persona name and description the schema allows (characters).
const NAME_MAX: usize = 60;
const DESCRIPTION_MAX: usize = 600;

/// The persona call's schema: a short name and a description.
fn persona_schema() -> JsonSchema {
    JsonSchema::new(
        "persona",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": NAME_MAX},
                "description": {"type": "string", "maxLength": DESCRIPTION_MAX},
            },
            "required": ["name", "description"],
            "additionalProperties": false
        }),
    )
}

/// The persona call for a topic shown by `passages` (the synthesis and its dry run alike).
pub(crate) fn topic_persona_request(
    prompts: &SynthPrompts,
    lang: &Language,
    passages: &[PromptPassage],
) -> Result<ChatRequest> {
    let ctx = json!({"language": lang.name(), "passages": passages});
    Ok(prompts
        .persona
        .request(&ctx, OutputSpec::Schema(persona_schema()))?)
}

impl Agents<'_> {
    /// A persona for the topic `passages` show; `None` when the answer cannot be parsed or
    /// lacks a name or description.
    pub(crate) async fn topic_persona(
        &self,
        passages: &[PromptPassage],
        log: &mut CallLog,
    ) -> Parsed<Persona> {
        let mut s = self.generator_sampling();
        s.max_tokens = Some(s.max_tokens.map_or(400, |m| m.max(400)));
        let req = topic_persona_request(self.prompts, self.language, passages)?
            .with_sampling(s)
            .with_sample(0);
        let Some(out) = self.call("persona", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
        let (name, description) = (field("name"), field("description"));
        if name.is_empty() || description.is_empty() {
            log.roles.entry("persona".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some(Persona { name, description }))
    }
}

/// Passages shown per topic, and the characters kept of each.
const PASSAGES_PER_TOPIC: usize = 4;
const PASSAGE_CHARS: usize = 500;

/// What writing the topics' personas did.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopicPersonas {
    /// The persona calls' usage (role `persona`), for the cost ledger.
    pub calls: CallLog,
    /// Topics with a persona.
    pub written: usize,
    /// Topics whose call failed or could not be parsed.
    pub failures: usize,
}

/// The topics that get a persona (at most `max_topics`, those with the most paths first, then
/// by number) and the passages each is shown: the first chunk of its first paths.
pub(crate) fn topic_passages(
    prepared: &Prepared,
    max_topics: usize,
) -> Vec<(usize, Vec<PromptPassage>)> {
    let t = &prepared.topics;
    let mut paths_of: Vec<Vec<usize>> = vec![Vec::new(); t.topics];
    for (p, &topic) in t.path_topics.iter().enumerate() {
        if let Some(v) = paths_of.get_mut(topic) {
            v.push(p);
        }
    }
    let mut order: Vec<usize> = (0..t.topics).filter(|&i| !paths_of[i].is_empty()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(paths_of[i].len()), i));
    order.truncate(max_topics);
    order
        .into_iter()
        .map(|topic| {
            let passages = paths_of[topic]
                .iter()
                .filter_map(|&p| t.paths.get(p).and_then(|path| path.first()))
                .take(PASSAGES_PER_TOPIC)
                .filter_map(|&c| prepared.chunks.get(c as usize))
                .map(|c| {
                    let mut p = PromptPassage::of(c);
                    if p.text.chars().count() > PASSAGE_CHARS {
                        p.text = p.text.chars().take(PASSAGE_CHARS).collect::<String>() + " ...";
                    }
                    p
                })
                .collect();
            (topic, passages)
        })
        .collect()
}

/// One persona per chosen topic, written by the generator.
pub(crate) async fn write_topic_personas(
    agents: &Agents<'_>,
    prepared: &Prepared,
    max_topics: usize,
) -> Result<(PersonaSet, TopicPersonas)> {
    let mut by_topic: Vec<Option<Persona>> = vec![None; prepared.topics.topics];
    let mut report = TopicPersonas::default();
    for (topic, passages) in topic_passages(prepared, max_topics) {
        match agents.topic_persona(&passages, &mut report.calls).await {
            Ok(Some(p)) => {
                report.written += 1;
                by_topic[topic] = Some(p);
            }
            Ok(None) => report.failures += 1,
            // the budget stop and a provider that is down stop the job as any call does
            Err(e) if e.is_budget_stop() => return Err(e),
            Err(e) => {
                tracing::warn!(topic, "persona call failed: {e}");
                report.failures += 1;
            }
        }
    }
    Ok((PersonaSet::ByTopic(by_topic), report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{UserAsk, Utter, user_context};

    /// The user agent's prompt of a follow-up with a persona and three seed questions, rendered
    /// from the context the synthesis builds (`user_context`).
    fn voiced(prompt_of: impl Fn(&SynthPrompts) -> &mtr_llm::Prompt, lang: &str) -> String {
        let p = SynthPrompts::builtin().unwrap();
        let lang = Language::from_code(lang);
        let history = vec![
            Utter {
                speaker: "user".into(),
                text: "How many days of leave can I carry over?".into(),
            },
            Utter {
                speaker: "agent".into(),
                text: "Up to 5 days, to be taken by 31 March.".into(),
            },
        ];
        let passages = vec![PromptPassage {
            title: "Annual Leave".into(),
            section: Some("Carry-over".into()),
            text: "Up to 5 days carry over; they lapse on 31 March.".into(),
        }];
        let persona = Persona {
            name: "Night-shift nurse".into(),
            description: "Works nights at a hospital, knows HR rules only from colleagues, writes short practical questions from her phone.".into(),
        };
        let ask = UserAsk {
            history: &history,
            asked: &[],
            passages: &passages,
            first: false,
            switch: false,
            feedback: Some("near_copy"),
            rewrite: true,
            persona: None,
            examples: Vec::new(),
        }
        .voiced(
            Some(&persona),
            vec![
                "can i swap a shift with someone on a different ward?".into(),
                "What happens to my pension if I go part time?".into(),
                "do night hours count double for overtime".into(),
            ],
        );
        let mut ctx = user_context(&lang, &ask);
        ctx["style"] = serde_json::json!({"length": 20, "unit": "words", "refer_back": true});
        let msgs = prompt_of(&p).render(&ctx).unwrap();
        msgs.iter()
            .map(|m| format!("[{:?}]\n{}", m.role, m.content))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    #[test]
    fn the_persona_and_seeds_appear_after_the_passages_in_every_user_prompt() {
        for (name, text) in [
            ("user", voiced(|p| &p.user, "en")),
            ("user_zh", voiced(|p| &p.user_zh, "zh")),
            ("user_styled", voiced(|p| &p.user_styled, "en")),
            ("user_unanswerable", voiced(|p| &p.user_unanswerable, "en")),
            ("user_two_passage", voiced(|p| &p.user_two_passage, "en")),
            ("user_partial", voiced(|p| &p.user_partial, "en")),
        ] {
            let (system, user) = text.split_once("[User]").unwrap();
            // never in the system block: the prefix shared between dialogues stays the same
            assert!(!system.contains("Night-shift nurse"), "{name}");
            let at = |s: &str| {
                user.find(s)
                    .unwrap_or_else(|| panic!("{name}: no {s}: {user}"))
            };
            let persona = at("Night-shift nurse");
            let seed = at("can i swap a shift");
            // after the passages and the conversation
            assert!(
                persona > at("Up to 5 days carry over") && persona > at("Up to 5 days, to be"),
                "{name}"
            );
            assert!(seed > persona, "{name}");
            // the reason of a rejected near copy is worded, not shown as its code
            assert!(!user.contains("near_copy"), "{name}: {user}");
        }
        insta::assert_snapshot!("user_voiced", voiced(|p| &p.user, "en"));
        insta::assert_snapshot!("user_zh_voiced", voiced(|p| &p.user_zh, "zh"));
    }

    #[test]
    fn without_voices_the_prompt_shows_neither() {
        let p = SynthPrompts::builtin().unwrap();
        let lang = Language::from_code("en");
        let passages = vec![PromptPassage {
            title: "T".into(),
            section: None,
            text: "x".into(),
        }];
        let ask = UserAsk {
            history: &[],
            asked: &[],
            passages: &passages,
            first: true,
            switch: false,
            feedback: None,
            rewrite: true,
            persona: None,
            examples: Vec::new(),
        };
        let msgs = p.user.render(&user_context(&lang, &ask)).unwrap();
        assert!(!msgs[1].content.contains("Who you are"));
        assert!(!msgs[1].content.contains("How real users ask"));
    }
}
