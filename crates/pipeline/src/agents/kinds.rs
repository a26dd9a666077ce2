//! The agents' calls of the turn kinds `[synth.mix]` asks for beyond an answerable question on
//! one passage: for a turn drawn `unanswerable`, the user agent's question that the passages
//! shown do not answer ([`Agents::user_unanswerable`]) and the verifier's grades of the
//! passages the corpus-wide search found for it ([`Agents::unanswerable`]). Apart from
//! `agents.rs` so each kind's calls sit together.

use mtr_llm::OutputSpec;
use serde_json::{Value, json};

use super::schema::{unanswerable_question_schema, unanswerable_schema};
use super::{Agents, Parsed, PromptPassage, UserAsk, UserProposal, user_context};
use crate::agents::CallLog;
use crate::text_rules::clean;

impl Agents<'_> {
    /// The user agent of a turn drawn `unanswerable`: a question on the subject of the
    /// passages that none of them answers (its `passage` is 0: it has none).
    pub(crate) async fn user_unanswerable(
        &self,
        ask: &UserAsk<'_>,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<UserProposal> {
        let rewrite = ask.rewrite;
        let ctx = user_context(self.language, ask);
        let req = self
            .prompts
            .user_unanswerable
            .request(
                &ctx,
                OutputSpec::Schema(unanswerable_question_schema(self.language, rewrite)),
            )?
            .with_sampling(self.proposal_sampling())
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
        let question = field("question");
        let standalone = if rewrite {
            field("standalone")
        } else {
            String::new()
        };
        if question.is_empty() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some(UserProposal {
            passage: 0,
            question,
            standalone,
        }))
    }

    /// The verifier of a turn drawn `unanswerable`: for each passage found, 2 = answers the
    /// question, 1 = partly, 0 = no, with the quote that answers.
    pub(crate) async fn unanswerable(
        &self,
        history: &[super::Utter],
        question: &str,
        candidates: &[PromptPassage],
        log: &mut CallLog,
    ) -> Parsed<Vec<(i64, String)>> {
        let n = candidates.len();
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "candidates": candidates, "justify": justify});
        let req = self
            .prompts
            .unanswerable
            .request(&ctx, OutputSpec::Schema(unanswerable_schema(n, justify)))?;
        let Some(out) = self.call("unanswerable", req, true, log).await? else {
            return Ok(None);
        };
        let graded = super::grades_of(&out.value.unwrap_or(Value::Null), n);
        if graded.is_none() {
            log.roles
                .entry("unanswerable".into())
                .or_default()
                .parse_failed += 1;
        }
        Ok(graded)
    }
}
