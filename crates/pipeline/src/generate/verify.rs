//! The verifier's checks of a question before it is answered: (a) answerability from its
//! evidence, with the judge's quote found in the passage, and (b) uniqueness against the whole
//! corpus: the history-aware query retrieves the best other chunks (the hard negatives,
//! [`hard_negatives`]) and a judge grades whether each answers the question too; a few
//! partial or full answers become extra graded golds, too many mean the question is too
//! generic and the attempt is rejected.
//!
//! [`hard_negatives`]: Generator::hard_negatives

use super::schedule::Generator;
use super::state::DialogueState;
use super::turn::{Step, TurnInput, reject};
use crate::agents::{CallLog, PromptPassage};
use crate::error::Result;
use crate::search::CorpusSearch;
use crate::text_rules::quote_supported;

impl Generator<'_> {
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

    /// The corpus-wide uniqueness check: the extra golds `(chunk id, grade)` it found, or a
    /// rejection when the judge failed or too many other chunks answer the question. Nothing
    /// to check (no golds) when it is turned off or no hard negative was found.
    pub(super) async fn uniqueness(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        question: &str,
        evidence_id: &str,
        evidence: &PromptPassage,
        log: &mut CallLog,
    ) -> Step<Vec<(String, i32)>> {
        let o = &self.opts.uniqueness;
        let Some(search) = self.search.filter(|_| o.enabled) else {
            return Ok(Vec::new());
        };
        let cands = self
            .hard_negatives(search, input, question, evidence_id)
            .await?;
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
