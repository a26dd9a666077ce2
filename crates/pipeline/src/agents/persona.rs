//! The generator's call that writes one persona for a coarse topic of the corpus
//! (`[synth.personas] file = "topics"`, see `crate::voices`): through the LLM cache like every
//! agent call, its usage logged under the role `persona`.

use mtr_llm::{ChatRequest, JsonSchema, OutputSpec};
use serde_json::{Value, json};

use super::{Agents, Parsed, PromptPassage};
use crate::agents::CallLog;
use crate::error::Result;
use crate::lang::Language;
use crate::prompts::SynthPrompts;
use crate::text_rules::clean;
use crate::voices::Persona;

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
