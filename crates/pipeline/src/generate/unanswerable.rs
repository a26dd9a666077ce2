//! A turn drawn `unanswerable` by `[synth.mix]`: the user agent asks a question on the
//! dialogue's subject that the passages it is shown do not answer; the text guards check it
//! as any question; the corpus-wide search of the uniqueness check finds the passages best
//! for it and the verifier grades them ([`Agents::unanswerable`]); the turn is kept only when
//! none answers it (a grade counts only with its quote found in that passage, as in the
//! uniqueness check, and, where the relevance gate's floor decides answerability, only for a
//! passage that clears that floor: [`Generator::claims_hold`]). Its gold is empty, its
//! reference answer says that the documents do not hold the answer, and it is tagged
//! `answerability = unanswerable`. Not humanized: the
//! humanizer's rewrite could only be checked again at the price of a second search and judge.
//!
//! [`Agents::unanswerable`]: crate::agents::Agents::unanswerable

use super::attempt::{Step, TurnInput, reject};
use super::record::TurnRecord;
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{CallLog, PromptPassage};
use crate::lang::Language;
use crate::text_rules::quote_supported;
use crate::turn_types::Answerability;

/// Passages of the corpus-wide search the verifier grades for an unanswerable question, at
/// least (the uniqueness check's `judge_candidates` when larger).
pub(crate) const UNANSWERABLE_CANDIDATES: usize = 3;

/// The reference answer of an unanswerable turn, in the corpus language (English where no
/// other is written).
pub(crate) fn not_found_answer(lang: &Language) -> &'static str {
    match lang.code() {
        "zh" => "文档中没有找到这个问题的答案。",
        _ => "I could not find the answer to this in the documents.",
    }
}

impl Generator<'_> {
    /// Whether a turn drawn `unanswerable` (or `partial`, whose missing part is checked the
    /// same way) can be made: only with the corpus-wide search, which verifies it (a drawn turn
    /// is made answerable otherwise).
    pub(super) fn can_make_unanswerable(&self) -> bool {
        self.search.is_some() && self.opts.uniqueness.enabled
    }

    /// One attempt of a turn drawn `unanswerable`: the accepted record, or a rejection.
    pub(super) async fn unanswerable_attempt(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        attempt: usize,
        feedback: Option<&'static str>,
        log: &mut CallLog,
    ) -> Step<TurnRecord> {
        let sample = self.attempt_sample(st, attempt);
        let (persona, examples) = self.voice(st, input.layer, attempt);
        let ask = input
            .user_ask(&input.asked, feedback, self.opts.rewrites)
            .voiced(persona, examples);
        let proposal = self.agents.user_unanswerable(&ask, sample, log).await?;
        let p = proposal.ok_or_else(|| reject(st, "user/parse_failed", "user", None))?;
        let standalone = self.check_question(st, input, &p)?;
        let probe = Probe {
            stage: "unanswerable",
            answered: ("unanswerable/answered", "answered"),
        };
        self.none_answers(st, input, &p.question, probe, log)
            .await?;
        st.count("unanswerable/verified");
        Ok(TurnRecord {
            layer: input.layer,
            question: p.question,
            original: None,
            standalone,
            answer: not_found_answer(self.agents.language).to_string(),
            evidence: String::new(),
            second_evidence: None,
            extra_golds: Vec::new(),
            topic_switch: input.switch,
            topic: input.topic,
            path: st.path,
            answerability: None,
            faithfulness: 0,
            attempts: attempt as u32 + 1,
            relevance: None,
            kind: Answerability::Unanswerable,
            parts: None,
        })
    }

    /// The verifier: the passages the corpus-wide search finds best for `question` (with the
    /// conversation), graded; a rejection when one answers it, in whole or in part. `question`
    /// is an unanswerable turn's question or a partial turn's missing part; `probe` names the
    /// stage and events a rejection counts under.
    pub(super) async fn none_answers(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        question: &str,
        probe: Probe,
        log: &mut CallLog,
    ) -> Step<()> {
        let stage = probe.stage;
        let Some(search) = self.search else {
            return Err(reject(st, &format!("{stage}/no_search"), stage, None));
        };
        let o = &self.opts.uniqueness;
        let query = search.query_text(&input.core_history, question)?;
        let want = o.judge_candidates.max(UNANSWERABLE_CANDIDATES);
        let hits = search.search(&query, o.retrieve_k.max(want), &[]).await?;
        let found: Vec<PromptPassage> = hits
            .iter()
            .filter_map(|h| self.material.by_id.get(&h.id).map(|&c| self.passage(c)))
            .take(want)
            .collect();
        if found.is_empty() {
            // nothing in the corpus shares a word with it
            return Ok(());
        }
        let graded = self
            .agents
            .unanswerable(&input.history, question, &found, log)
            .await?;
        let Some(graded) = graded else {
            return Err(reject(st, &format!("{stage}/judge_failed"), stage, None));
        };
        let claimed: Vec<&PromptPassage> = graded
            .iter()
            .zip(&found)
            .filter(|((g, quote), p)| *g >= 1 && quote_supported(quote, &p.text))
            .map(|(_, p)| p)
            .collect();
        if !claimed.is_empty() && self.claims_hold(st, question, &claimed, stage, log).await? {
            let (event, feedback) = probe.answered;
            return Err(reject(st, event, stage, Some(feedback)));
        }
        Ok(())
    }

    /// Whether the chat judge's claim that one of `claimed` answers `question` stands. Where
    /// the relevance gate's floor decides answerability (`answerability_judge = false`: an
    /// answerable question's gold must clear it), a passage answers only when it clears the
    /// same floor too; a claim on passages that all score below it is counted
    /// (`STAGE/claim_below_floor`) and set aside. Qwen2.5-Coder-0.5B graded the three passages
    /// it was shown 2, 1, 0 in every call of two main-job-sized runs, quoting a passage's
    /// opening sentence, so no unanswerable turn was ever kept (benchmarks/pipeline/README.md).
    /// Elsewhere the judge's claim decides.
    async fn claims_hold(
        &self,
        st: &mut DialogueState,
        question: &str,
        claimed: &[&PromptPassage],
        stage: &'static str,
        log: &mut CallLog,
    ) -> Step<bool> {
        let Some(judge) = self.floor_judge() else {
            return Ok(true);
        };
        let scores = self
            .relevance_scores(st, &judge, (question, ""), claimed.iter().copied(), log)
            .await?;
        if scores.len() != claimed.len() {
            return Err(reject(st, "relevance/judge_failed", stage, None));
        }
        let floor = self.opts.relevance.min_gold;
        if scores.iter().any(|&s| s >= floor) {
            return Ok(true);
        }
        st.count(&format!("{stage}/claim_below_floor"));
        Ok(false)
    }
}

/// Where [`Generator::none_answers`] counts a rejection: the stage (`unanswerable`, `partial`)
/// and, when a passage answers, the event and the reason code fed back to the user agent.
pub(super) struct Probe {
    pub stage: &'static str,
    pub answered: (&'static str, &'static str),
}
