//! Judgements by relevance judges: rerankers and embedding models (see [`mtr_llm::rerank`]),
//! which score passages against a query instead of writing an answer.
//!
//! A relevance judge takes part in the two dimensions about whether a passage answers the
//! question: alignment (one gold passage, rated 1-5) and discriminability (a pool, one pick).
//! Faithfulness and answer quality are about an answer, which a relevance score says nothing
//! of: those stay with the chat judges. The rules, applied to the 0-1 score the rerank layer
//! normalised from the API's own scale:
//!
//! - **rating** = `1 + 4 * score`, rounded to 3 decimals: 0 -> 1, 0.5 -> 3, 1 -> 5;
//! - **pick** = the pool's best-scored passage, except that the judge abstains with `none`
//!   when the best score is below the endpoint's `abstain_below` (no passage answers) and with
//!   `several` when the two best scores are closer than its `tie_margin` (it cannot tell).
//!
//! Judgements are recorded as any judge's are (judge, model, mode `relevance`), so agreement
//! statistics, reuse on reruns and the report treat the judge as one of the ensemble.

use mtr_llm::rerank::{RerankConfig, Reranked};
use mtr_llm::{Llm, LlmError};

use crate::dimension::Dimension;
use crate::judges::record::{Abstention, Judgement, ParseOutcome};
use crate::judges::unit::{JudgeRef, Unit};

/// What a relevance judge is asked: the question (as a search query) and the passages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RelevanceInput {
    pub query: String,
    pub passages: Vec<String>,
}

/// The "prompt" a relevance judgement records (the query rule's version): a rerun with
/// another rule does not reuse the old judgements.
pub(crate) const PROMPT_ID: &str = "relevance-query@1";

/// True when a relevance judge judges this dimension.
pub(crate) fn judges(dimension: Dimension) -> bool {
    matches!(dimension, Dimension::Alignment | Dimension::Completeness)
}

/// The 1-5 rating of a 0-1 relevance score.
pub(crate) fn rating(score: f64) -> f64 {
    let s = if score.is_nan() {
        0.0
    } else {
        score.clamp(0.0, 1.0)
    };
    ((1.0 + 4.0 * s) * 1000.0).round() / 1000.0
}

/// The pick among `scores` (0-based), or the abstention the rule gives.
pub(crate) fn pick(scores: &[f64], cfg: &RerankConfig) -> Result<usize, Abstention> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // best first; equal scores keep pool order, so the outcome never depends on timing
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    let Some(&best) = order.first() else {
        return Err(Abstention::None);
    };
    if scores[best] < cfg.abstain_below {
        return Err(Abstention::None);
    }
    if let Some(&second) = order.get(1)
        && scores[best] - scores[second] < cfg.tie_margin
    {
        return Err(Abstention::Several);
    }
    Ok(best)
}

/// The query a relevance judge is given for a turn: the turn's rewrite (a stand-alone
/// question) when the benchmark has one, else the question after the user's previous one, so
/// that a follow-up ("and the second one?") carries its subject.
pub(crate) fn query(previous_user: Option<&str>, question: &str, rewrite: Option<&str>) -> String {
    if let Some(r) = rewrite.map(str::trim).filter(|r| !r.is_empty()) {
        return r.to_string();
    }
    match previous_user.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}\n{}", question.trim()),
        None => question.trim().to_string(),
    }
}

/// Judges one unit with relevance judge `judge`: one rerank call, turned into a record.
pub(crate) async fn judge(
    llm: &Llm,
    judge: &JudgeRef,
    unit: &Unit,
    sample: u32,
    input: RelevanceInput,
) -> Result<Judgement, LlmError> {
    let cfg = llm.reranker(&judge.name).cloned().ok_or_else(|| {
        LlmError::Config(format!("judge `{}` is not a relevance judge", judge.name))
    })?;
    match llm.rerank(&judge.name, &input.query, &input.passages).await {
        Ok(r) => Ok(record(unit, judge, sample, &cfg, &r)),
        // a provider failure after every retry is this item's failure, recorded as such
        Err(e @ LlmError::Provider { .. }) => Ok(failed(unit, judge, sample, e.to_string())),
        Err(e) => Err(e),
    }
}

fn base(unit: &Unit, judge: &JudgeRef, sample: u32) -> Judgement {
    let mut j = crate::judges::answer::record(
        unit,
        judge,
        sample,
        PROMPT_ID,
        Err("not judged".to_string()),
    );
    j.parse_detail = None;
    j
}

fn failed(unit: &Unit, judge: &JudgeRef, sample: u32, why: String) -> Judgement {
    let mut j = base(unit, judge, sample);
    j.parse_status = ParseOutcome::Failed;
    j.parse_detail = Some(why);
    j
}

/// The record of a rerank answer.
pub(crate) fn record(
    unit: &Unit,
    judge: &JudgeRef,
    sample: u32,
    cfg: &RerankConfig,
    r: &Reranked,
) -> Judgement {
    let mut j = base(unit, judge, sample);
    j.model = r.model.clone();
    j.prompt_tokens = r.prompt_tokens;
    j.cost_usd = r.answer_cost_usd;
    j.cache_key = r.key.clone();
    let shown = |s: &[f64]| {
        s.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match unit.dimension {
        Dimension::Completeness => {
            let pool = unit.pool.as_deref().unwrap_or_default();
            if pool.len() != r.scores.len() {
                return failed(
                    unit,
                    judge,
                    sample,
                    format!("{} scores for a pool of {}", r.scores.len(), pool.len()),
                );
            }
            match pick(&r.scores, cfg) {
                Ok(i) => {
                    let pos = i + 1;
                    j.pick_position = Some(pos);
                    j.pick_passage_id = Some(pool[i].clone());
                    j.score = Some(if Some(pos) == unit.gold_position {
                        1.0
                    } else {
                        0.0
                    });
                }
                Err(a) => j.abstention = Some(a),
            }
            j.justification = Some(format!("relevance scores {}", shown(&r.scores)));
        }
        _ => {
            let Some(&s) = r.scores.first() else {
                return failed(unit, judge, sample, "no score for the passage".into());
            };
            j.score = Some(rating(s));
            j.justification = Some(format!("relevance score {}", shown(&r.scores)));
        }
    }
    j.parse_status = ParseOutcome::Ok;
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_llm::rerank::RerankApi;

    #[test]
    fn ratings_map_the_score_linearly_onto_1_to_5() {
        assert_eq!(rating(0.0), 1.0);
        assert_eq!(rating(0.5), 3.0);
        assert_eq!(rating(1.0), 5.0);
        assert_eq!(rating(0.3333), 2.333);
        assert_eq!(rating(-1.0), 1.0);
        assert_eq!(rating(f64::NAN), 1.0);
    }

    #[test]
    fn the_pick_is_the_best_unless_too_low_or_too_close() {
        let mut c = RerankConfig::new(RerankApi::Tei);
        c.abstain_below = 0.3;
        c.tie_margin = 0.05;
        assert_eq!(pick(&[0.1, 0.9, 0.5], &c), Ok(1));
        assert_eq!(pick(&[0.1, 0.2, 0.25], &c), Err(Abstention::None));
        assert_eq!(pick(&[0.8, 0.1, 0.77], &c), Err(Abstention::Several));
        // exactly equal scores with no margin: the earlier passage, every time
        c.tie_margin = 0.0;
        assert_eq!(pick(&[0.5, 0.9, 0.9], &c), Ok(1));
        assert_eq!(pick(&[], &c), Err(Abstention::None));
    }

    #[test]
    fn the_query_prefers_a_rewrite_then_adds_the_previous_question() {
        assert_eq!(query(Some("a?"), "b?", Some(" r ")), "r");
        assert_eq!(query(Some("a?"), "b?", None), "a?\nb?");
        assert_eq!(query(None, " b? ", Some("")), "b?");
    }
}
