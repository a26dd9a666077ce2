//! The user agent's call of a turn drawn `partial` by `[synth.mix]`: one question in two
//! parts, of which the chosen passage answers one ([`Agents::user_partial`]). Its verifier and
//! answerer are the other kinds' calls, asked about one part each (the answerable turn's
//! judges for the answered part, the unanswerable turn's for the missing one), so this kind
//! adds no judge prompt of its own.

use mtr_llm::{OutputSpec, Sampling};
use serde_json::Value;

use super::schema::partial_question_schema;
use super::{Agents, Parsed, UserAsk, UserProposal, user_context};
use crate::agents::CallLog;
use crate::lang::Language;
use crate::text_rules::{clean, proposal_max_tokens};

/// The user agent's proposal of a turn drawn `partial`: the question on the chosen passage
/// (its `passage`, `question` and `standalone`), and its two parts as questions of their own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PartialProposal {
    pub proposal: UserProposal,
    /// The part the chosen passage answers.
    pub answered: String,
    /// The part no passage answers.
    pub missing: String,
}

/// `s` with room for the longest reply [`partial_question_schema`] allows in `lang`: the two
/// parts beside the question (and its standalone version), where its `max_tokens` is lower.
pub(crate) fn partial_proposal_room(mut s: Sampling, lang: &Language, rewrite: bool) -> Sampling {
    // two strings more than the proposal, at the same length each
    let room = proposal_max_tokens(lang, rewrite) + proposal_max_tokens(lang, true) - 32;
    s.max_tokens = Some(s.max_tokens.map_or(room, |m| m.max(room)));
    s
}

impl Agents<'_> {
    /// The user agent of a turn drawn `partial`: one of the passages, the question, and the
    /// part of it the passage answers and the part it does not.
    pub(crate) async fn user_partial(
        &self,
        ask: &UserAsk<'_>,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<PartialProposal> {
        let (rewrite, n) = (ask.rewrite, ask.passages.len());
        let ctx = user_context(self.language, ask);
        let schema = partial_question_schema(n, self.language, rewrite);
        let room = partial_proposal_room(self.generator_sampling(), self.language, rewrite);
        let req = self
            .prompts
            .user_partial
            .request(&ctx, OutputSpec::Schema(schema))?
            .with_sampling(room)
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let parsed = parse(&v, n, rewrite);
        if parsed.is_none() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
        }
        Ok(parsed)
    }
}

/// The proposal in the user agent's reply `v` for `n` offered passages; None when a field is
/// missing or empty or the passage is not one offered.
fn parse(v: &Value, n: usize, rewrite: bool) -> Option<PartialProposal> {
    let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
    let passage = v.get("passage").and_then(Value::as_i64).unwrap_or(0);
    let (question, answered, missing) = (
        field("question"),
        field("answered_part"),
        field("missing_part"),
    );
    let standalone = if rewrite {
        field("standalone")
    } else {
        String::new()
    };
    let empty = [&question, &answered, &missing]
        .iter()
        .any(|s| s.is_empty());
    if passage < 1 || passage as usize > n || empty {
        return None;
    }
    Some(PartialProposal {
        proposal: UserProposal {
            passage: passage as usize - 1,
            question,
            standalone,
        },
        answered,
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_needs_an_offered_passage_and_both_parts() {
        let v = json!({"passage": 2, "answered_part": "How many days carry over?",
            "missing_part": "Do interns get them?", "question": "How many days carry over, and do interns get them?",
            "standalone": "How many leave days carry over, and do interns get them?"});
        let p = parse(&v, 2, true).unwrap();
        assert_eq!(p.proposal.passage, 1);
        assert_eq!(p.answered, "How many days carry over?");
        assert_eq!(p.missing, "Do interns get them?");
        assert!(p.proposal.standalone.starts_with("How many leave days"));
        assert_eq!(parse(&v, 2, false).unwrap().proposal.standalone, "");
        assert!(parse(&v, 1, true).is_none());
        let mut no_missing = v.clone();
        no_missing["missing_part"] = json!(" ");
        assert!(parse(&no_missing, 2, true).is_none());
    }

    #[test]
    fn the_room_holds_two_more_questions_than_a_proposal() {
        let en = Language::from_code("en");
        let unset = Sampling {
            max_tokens: None,
            ..Default::default()
        };
        let room = partial_proposal_room(unset, &en, true)
            .max_tokens
            .unwrap_or(0);
        assert!(room > proposal_max_tokens(&en, true) + 2 * 150);
    }
}
