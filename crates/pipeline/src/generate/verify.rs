//! The verifier's checks of a question: (a) answerability from its evidence, with the
//! judge's quote found in the passage (before the question is answered), and (b) uniqueness
//! against the whole corpus (after the answer and its faithfulness passed, as the most
//! expensive check; [`unique`]): the history-aware query retrieves the best other chunks (the hard negatives,
//! [`hard_negatives`]) and a judge grades whether each answers the question too; a few
//! partial or full answers become extra graded golds, too many mean the question is too
//! generic and the attempt is rejected.
//!
//! Before both, when a relevance judge is configured (`[synth.generation.relevance]`, by
//! default the embedded default's e5 judge), a cheap gate ([`relevance`]): one rerank call
//! scores the question (its standalone rewrite, else the question after the previous user
//! question, as the audit asks a relevance judge) against `[gold, hard negatives...]`. A gold
//! scored below `min_gold` rejects the attempt as unanswerable
//! (`answerability/relevance_below_floor`); a hard negative scored above the gold by more than
//! `margin` rejects it as not unique (`uniqueness/gold_not_best`). A chat judge of half a
//! billion parameters writes the same score for any passage (issue 24); the relevance score
//! tells a question's own passage from another. The scores are kept with the accepted turn.
//! Without a relevance judge the checks run as before, in the same order (answerability,
//! answer, uniqueness). With `answerability_judge = false` the gate's floor is the only
//! answerability check (the chat judge is not called; the config requires the gate then).
//!
//! [`hard_negatives`]: Generator::hard_negatives
//! [`unique`]: Generator::unique
//! [`relevance`]: Generator::relevance

use super::attempt::{Step, TurnInput, reject};
use super::record::RelevanceScores;
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{CallLog, PromptPassage};
use crate::error::Result;
use crate::search::CorpusSearch;
use crate::text_rules::quote_supported;

/// What the verifier found for a question it passed, before the uniqueness check.
pub(super) struct Verified {
    /// Answerability 1-5; None when the chat judge is off (`answerability_judge = false`: the
    /// relevance gate's floor checked it).
    pub answerability: Option<i64>,
    /// The hard negatives the relevance gate searched for, if it did (the uniqueness check
    /// judges the same ones).
    pub negatives: Option<Vec<(String, PromptPassage)>>,
    /// The relevance gate's scores, when it is on.
    pub relevance: Option<RelevanceScores>,
}

/// The question being verified and its evidence.
pub(super) struct Subject<'a> {
    /// The question as the benchmark holds it.
    pub question: &'a str,
    /// Its standalone version (empty when it failed its guards).
    pub standalone: &'a str,
    pub evidence_id: &'a str,
    pub evidence: &'a PromptPassage,
}

impl Generator<'_> {
    /// The verifier's checks before the answer: the relevance gate when a relevance judge is
    /// configured, then answerability. The corpus-wide uniqueness check comes after the answer
    /// ([`Generator::unique`]): it is the check that reads the most passages, and with as few
    /// candidates as the small-model settings judge (`judge_candidates = 1`, at most
    /// `max_extra_golds` and `max_full`) it cannot reject at all, so an attempt that the answer
    /// or its faithfulness rejects no longer pays for it.
    pub(super) async fn verify(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        s: &Subject<'_>,
        log: &mut CallLog,
    ) -> Step<Verified> {
        // the cheap gate first: one rerank call before any chat judge is paid
        let (mut negatives, mut relevance) = (None, None);
        if let Some(judge) = self.agents.relevance_judge() {
            let found = self.checked_negatives(input, s).await?;
            relevance = Some(self.relevance(st, &judge, s, &found, log).await?);
            negatives = Some(found);
        }
        let answerability = if self.opts.answerability_judge {
            Some(
                self.answerability(st, input, s.question, s.evidence, log)
                    .await?,
            )
        } else {
            None
        };
        Ok(Verified {
            answerability,
            negatives,
            relevance,
        })
    }

    /// The corpus-wide uniqueness check of a question that passed every other check: the extra
    /// golds `(chunk id, grade)` it found, or a rejection.
    pub(super) async fn unique(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        s: &Subject<'_>,
        negatives: Option<Vec<(String, PromptPassage)>>,
        log: &mut CallLog,
    ) -> Step<Vec<(String, i32)>> {
        // without the gate the corpus is searched only for a question found answerable
        let negatives = match negatives {
            Some(found) => found,
            None => self.checked_negatives(input, s).await?,
        };
        self.uniqueness(st, input, s.question, s.evidence, &negatives, log)
            .await
    }

    /// The relevance gate: the judge's scores of the gold and the hard negatives, or a
    /// rejection when the gold scores below `min_gold` or a hard negative above it by more
    /// than `margin`.
    pub(super) async fn relevance(
        &self,
        st: &mut DialogueState,
        judge: &str,
        s: &Subject<'_>,
        negatives: &[(String, PromptPassage)],
        log: &mut CallLog,
    ) -> Step<RelevanceScores> {
        let o = &self.opts.relevance;
        let passages = std::iter::once(s.evidence).chain(negatives.iter().map(|(_, p)| p));
        let scores = self
            .relevance_scores(st, judge, (s.question, s.standalone), passages, log)
            .await?;
        let Some((&gold, others)) = scores.split_first() else {
            return Err(reject(st, "relevance/judge_failed", "answerability", None));
        };
        let scored = RelevanceScores {
            gold,
            negatives: others.to_vec(),
        };
        if gold < o.min_gold {
            let f = Some("not_answerable");
            let e = "answerability/relevance_below_floor";
            return Err(reject(st, e, "answerability", f));
        }
        if scored.best_negative().is_some_and(|b| b > gold + o.margin) {
            let f = Some("not_unique");
            return Err(reject(st, "uniqueness/gold_not_best", "uniqueness", f));
        }
        st.count("relevance/passed");
        Ok(scored)
    }

    /// The relevance judge, where its floor decides whether a passage answers a question
    /// (`answerability_judge = false`: the chat judge is not asked); None elsewhere.
    pub(super) fn floor_judge(&self) -> Option<String> {
        self.agents
            .relevance_judge()
            .filter(|_| !self.opts.answerability_judge)
    }

    /// The relevance judge's scores of `passages` for the question, asked as the audit asks
    /// a relevance judge ([`relevance_query`], [`relevance_text`]), in their order.
    pub(super) async fn relevance_scores<'p>(
        &self,
        st: &DialogueState,
        judge: &str,
        (question, standalone): (&str, &str),
        passages: impl IntoIterator<Item = &'p PromptPassage>,
        log: &mut CallLog,
    ) -> Result<Vec<f64>> {
        let previous = st.turns.last().map(|t| t.question.as_str());
        let query = relevance_query(previous, question, standalone);
        let texts: Vec<String> = passages.into_iter().map(relevance_text).collect();
        self.agents.relevance(judge, &query, &texts, log).await
    }

    /// The relevance gate's floor on both passages of a two-passage question, where it stands
    /// in for the chat judge's answerability score (`answerability_judge = false`, as for a
    /// one-passage question): a rejection when either scores below `min_gold`, since each
    /// must answer a part. Without a relevance judge there is nothing to check.
    pub(super) async fn both_above_floor(
        &self,
        st: &mut DialogueState,
        (question, standalone): (&str, &str),
        (pa, pb): (&PromptPassage, &PromptPassage),
        log: &mut CallLog,
    ) -> Step<()> {
        let Some(judge) = self.agents.relevance_judge() else {
            return Ok(());
        };
        let scores = self
            .relevance_scores(st, &judge, (question, standalone), [pa, pb], log)
            .await?;
        if scores.len() != 2 {
            return Err(reject(st, "relevance/judge_failed", "two_passage", None));
        }
        if scores.iter().any(|&s| s < self.opts.relevance.min_gold) {
            let f = Some("not_answerable");
            let e = "two_passage/relevance_below_floor";
            return Err(reject(st, e, "two_passage", f));
        }
        st.count("relevance/passed");
        Ok(())
    }

    /// Answerability 1-5 of `question` from its evidence; a high score must point at the
    /// sentence that answers.
    pub(super) async fn answerability(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        question: &str,
        evidence: &PromptPassage,
        log: &mut CallLog,
    ) -> Step<i64> {
        let judged = self
            .agents
            .answerability(&input.history, question, evidence, log)
            .await?;
        match judged {
            None => Err(reject(
                st,
                "answerability/judge_failed",
                "answerability",
                None,
            )),
            Some((s, _)) if s < self.opts.min_answerability => Err(reject(
                st,
                "answerability/low_score",
                "answerability",
                Some("not_answerable"),
            )),
            // a judge that cannot quote the answering sentence from the passage has not
            // found the answer there
            Some((_, quote)) if !quote_supported(&quote, &evidence.text) => Err(reject(
                st,
                "answerability/unsupported_quote",
                "answerability",
                Some("not_answerable"),
            )),
            Some((s, _)) => Ok(s),
        }
    }

    /// The corpus-wide uniqueness check of the hard negatives `cands`: the extra golds
    /// `(chunk id, grade)` it found, or a rejection when the judge failed or too many other
    /// chunks answer the question. Nothing to check (no golds) when no hard negative was found
    /// (or the check is turned off: [`Generator::checked_negatives`]).
    pub(super) async fn uniqueness(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        question: &str,
        evidence: &PromptPassage,
        cands: &[(String, PromptPassage)],
        log: &mut CallLog,
    ) -> Step<Vec<(String, i32)>> {
        let o = &self.opts.uniqueness;
        if cands.is_empty() {
            return Ok(Vec::new());
        }
        let shown: Vec<PromptPassage> = cands.iter().map(|(_, p)| p.clone()).collect();
        let Some(grades) = self
            .agents
            .uniqueness(&input.history, question, evidence, &shown, log)
            .await?
        else {
            return Err(reject(st, "uniqueness/judge_failed", "uniqueness", None));
        };
        // a grade counts only with a quote found in that candidate
        let grades: Vec<i64> = grades
            .into_iter()
            .zip(&shown)
            .map(|((g, quote), cand)| {
                if g >= 1 && !quote_supported(&quote, &cand.text) {
                    st.count("uniqueness/unsupported_grade");
                    0
                } else {
                    g
                }
            })
            .collect();
        let full = grades.iter().filter(|&&g| g == 2).count();
        let any = grades.iter().filter(|&&g| g >= 1).count();
        if full > o.max_full || any > o.max_extra_golds {
            let f = Some("not_unique");
            return Err(reject(st, "uniqueness/not_unique", "uniqueness", f));
        }
        let mut extra_golds = Vec::new();
        for ((id, _), g) in cands.iter().zip(&grades) {
            if *g >= 1 {
                extra_golds.push((id.clone(), *g as i32));
                st.count("uniqueness/extra_gold_added");
            }
        }
        if any == 0 {
            st.count("uniqueness/unique");
        }
        Ok(extra_golds)
    }

    /// The hard negatives of the question when the uniqueness check is on (none otherwise).
    async fn checked_negatives(
        &self,
        input: &TurnInput,
        s: &Subject<'_>,
    ) -> Result<Vec<(String, PromptPassage)>> {
        match self.search.filter(|_| self.opts.uniqueness.enabled) {
            Some(search) => {
                self.hard_negatives(search, input, s.question, s.evidence_id)
                    .await
            }
            None => Ok(Vec::new()),
        }
    }

    /// The hard negatives of a question: the chunks other than its evidence that the
    /// history-aware query retrieves best, at most `judge_candidates` of them.
    async fn hard_negatives(
        &self,
        search: &CorpusSearch,
        input: &TurnInput,
        question: &str,
        evidence_id: &str,
    ) -> Result<Vec<(String, PromptPassage)>> {
        let o = &self.opts.uniqueness;
        let query = search.query_text(&input.core_history, question)?;
        let hits = search
            .search(&query, o.retrieve_k, &[evidence_id.to_string()])
            .await?;
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                self.material
                    .by_id
                    .get(&h.id)
                    .map(|&c| (h.id, self.passage(c)))
            })
            .take(o.judge_candidates)
            .collect())
    }
}

/// The query the relevance judge is given: the standalone rewrite when there is one, else the
/// question after the previous user question, so a follow-up keeps its subject (the audit's
/// rule for relevance judges).
fn relevance_query(previous: Option<&str>, question: &str, standalone: &str) -> String {
    let (rewrite, question) = (standalone.trim(), question.trim());
    if !rewrite.is_empty() {
        return rewrite.to_string();
    }
    match previous.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}\n{question}"),
        None => question.to_string(),
    }
}

/// A passage as the relevance judge reads it: its title, then its text (the audit's
/// passage display: the title is left out when the text already opens with it).
fn relevance_text(p: &PromptPassage) -> String {
    let (title, text) = (p.title.trim(), p.text.trim());
    if title.is_empty() || text.starts_with(title) {
        text.to_string()
    } else {
        format!("{title}\n{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_the_rewrite_else_the_question_after_the_previous_one() {
        assert_eq!(relevance_query(Some("a?"), "b?", " r "), "r");
        assert_eq!(relevance_query(Some("a?"), " b? ", ""), "a?\nb?");
        assert_eq!(relevance_query(None, "b?", " "), "b?");
        assert_eq!(relevance_query(Some(" "), "b?", ""), "b?");
    }

    #[test]
    fn a_passage_is_read_with_its_title_unless_it_opens_with_it() {
        let p = |title: &str, text: &str| PromptPassage {
            title: title.into(),
            section: None,
            text: text.into(),
        };
        assert_eq!(
            relevance_text(&p("Leave", "Staff get 25 days.")),
            "Leave\nStaff get 25 days."
        );
        assert_eq!(
            relevance_text(&p("Leave", "Leave: 25 days.")),
            "Leave: 25 days."
        );
        assert_eq!(relevance_text(&p(" ", "25 days.")), "25 days.");
    }
}
