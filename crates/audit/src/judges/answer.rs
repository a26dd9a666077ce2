//! An LLM answer read into a [`Judgement`] record: the score or pick, the parse status, the
//! justification, tokens and cost; a value outside the schema's range is a failure, never a
//! score. Apart from the engine so that relevance judges ([`crate::judges::relevance`]) build their
//! records the same way without importing the engine.

use mtr_llm::{ChatResult, ParseStatus};

use crate::judges::record::{
    Choice, Judgement, ParseOutcome, PickVerdict, RAW_EXCERPT_CHARS, RatingVerdict, judgement_id,
    raw_excerpt,
};
use crate::judges::unit::{JudgeRef, Unit};

/// Turns an LLM answer (or a per-item failure, as its message) into a record. Values outside
/// the schema's range count as failures, never as scores.
pub(crate) fn record(
    unit: &Unit,
    judge: &JudgeRef,
    sample: u32,
    prompt: &str,
    res: std::result::Result<ChatResult, String>,
) -> Judgement {
    let mut j = unanswered(unit, judge, sample, prompt);
    let r = match res {
        Ok(r) => r,
        Err(e) => {
            j.parse_detail = Some(e);
            return j;
        }
    };
    j.model = r.model.clone();
    j.prompt_tokens = r.usage.prompt_tokens;
    j.completion_tokens = r.usage.completion_tokens;
    j.cost_usd = r.answer_cost_usd;
    j.cache_hit = r.cached;
    j.cache_key = r.key.clone();
    let (outcome, detail) = match &r.status {
        ParseStatus::Ok => (ParseOutcome::Ok, None),
        ParseStatus::Extracted { method } => (ParseOutcome::Extracted, Some(method.clone())),
        ParseStatus::Failed { error } => {
            j.parse_detail = Some(error.clone());
            j.raw_excerpt = raw_excerpt(&r.text, RAW_EXCERPT_CHARS);
            if let Some(refusal) = &r.refusal {
                j.parse_status = ParseOutcome::Refused;
                j.parse_detail = Some("the provider refused to answer".into());
                j.raw_excerpt = raw_excerpt(refusal, RAW_EXCERPT_CHARS);
            }
            return j;
        }
    };
    let read = if unit.dimension.is_rating() {
        read_rating(&mut j, &r)
    } else {
        read_pick(&mut j, unit, &r)
    };
    if let Err(why) = read {
        j.parse_status = ParseOutcome::Failed;
        j.parse_detail = Some(why);
        j.score = None;
        j.pick_position = None;
        j.pick_passage_id = None;
        j.abstention = None;
        j.raw_excerpt = raw_excerpt(&r.text, RAW_EXCERPT_CHARS);
        return j;
    }
    j.parse_status = outcome;
    j.parse_detail = detail;
    j
}

/// The record of (unit, judge, sample) before any answer: failed, no score, nothing spent.
fn unanswered(unit: &Unit, judge: &JudgeRef, sample: u32, prompt: &str) -> Judgement {
    Judgement {
        id: judgement_id(
            unit.dimension,
            &unit.turn_id,
            unit.passage_id.as_deref(),
            unit.trial,
            &judge.name,
            sample,
        ),
        dimension: unit.dimension,
        judge: judge.name.clone(),
        model: judge.model.clone(),
        dialogue_id: unit.dialogue_id.clone(),
        turn_id: unit.turn_id.clone(),
        turn: unit.turn,
        passage_id: unit.passage_id.clone(),
        trial: unit.trial,
        sample,
        pool: unit.pool.clone(),
        gold_position: unit.gold_position,
        pick_position: None,
        pick_passage_id: None,
        abstention: None,
        score: None,
        rating_mode: unit.dimension.is_rating().then_some(judge.rating_mode),
        rating_distribution: None,
        parse_status: ParseOutcome::Failed,
        parse_detail: None,
        raw_excerpt: None,
        justification: None,
        prompt: prompt.to_string(),
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_usd: 0.0,
        cache_hit: false,
        cache_key: String::new(),
    }
}

/// A 1-5 rating: read from the token probabilities where the answer carries them, else the
/// written grade; `Err` says why the answer is no rating.
fn read_rating(j: &mut Judgement, r: &ChatResult) -> std::result::Result<(), String> {
    if let Some(d) = &r.rating {
        // read from the token probabilities: the score is the probability-weighted grade; a
        // whole generated answer still carries its justification, a prefilled one none
        j.score = Some(d.mean);
        j.rating_distribution = Some(d.clone());
        j.justification = r.parse::<RatingVerdict>().ok().map(|v| v.justification);
        return Ok(());
    }
    match r.parse::<RatingVerdict>() {
        Ok(v) if (1..=5).contains(&v.rating) => {
            j.score = Some(v.rating as f64);
            j.justification = Some(v.justification);
            Ok(())
        }
        Ok(v) => Err(format!("rating {} is outside 1-5", v.rating)),
        Err(e) => Err(e.to_string()),
    }
}

/// A pick out of a completeness pool (or an abstention); `Err` says why the answer is none.
fn read_pick(j: &mut Judgement, unit: &Unit, r: &ChatResult) -> std::result::Result<(), String> {
    if let Some(d) = &r.rating {
        // a letter pick: the label probabilities of one token ([`crate::judges::letters`]), read by
        // the default rule here and by the configured one once the pools are judged
        crate::judges::letters::record_pick(j, d, &crate::config::LetterPicks::default());
        return Ok(());
    }
    let pool = unit.pool.as_deref().unwrap_or_default();
    match r.parse::<PickVerdict>() {
        Ok(PickVerdict {
            justification,
            choice: Choice::Abstain(a),
        }) => {
            j.abstention = Some(a);
            j.justification = Some(justification);
            Ok(())
        }
        Ok(PickVerdict {
            justification,
            choice: Choice::Passage(c),
        }) if c >= 1 && (c as usize) <= pool.len() => {
            let pos = c as usize;
            j.pick_position = Some(pos);
            j.pick_passage_id = Some(pool[pos - 1].clone());
            j.score = Some(if Some(pos) == unit.gold_position {
                1.0
            } else {
                0.0
            });
            j.justification = Some(justification);
            Ok(())
        }
        Ok(PickVerdict {
            choice: Choice::Passage(c),
            ..
        }) => Err(format!("choice {c} is outside 1-{}", pool.len())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimension::Dimension;
    use mtr_llm::Usage;
    use mtr_llm::logprob::RatingMode;

    fn unit(dim: Dimension) -> Unit {
        Unit {
            dimension: dim,
            dialogue_id: "d".into(),
            turn_id: "d::1".into(),
            turn: 1,
            passage_id: Some("g".into()),
            trial: Some(0),
            pool: Some(vec!["x".into(), "g".into()]),
            gold_position: Some(2),
            source: 0,
            judge: None,
        }
    }

    fn answer(text: &str, status: ParseStatus, refusal: Option<&str>) -> ChatResult {
        ChatResult {
            value: serde_json::from_str(text).ok(),
            text: text.into(),
            status,
            usage: Usage::default(),
            cost_usd: 0.0,
            answer_cost_usd: 0.0,
            cached: false,
            endpoint: "a".into(),
            model: "a-model".into(),
            sample: 0,
            attempts: 1,
            key: "k".into(),
            finish_reason: Some("stop".into()),
            refusal: refusal.map(Into::into),
            rating: None,
        }
    }

    fn judge() -> JudgeRef {
        JudgeRef {
            name: "a".into(),
            model: "a-model".into(),
            rating_mode: RatingMode::Generated,
            relevance: false,
        }
    }

    #[test]
    fn abstentions_are_valid_answers_without_a_pick() {
        let u = unit(Dimension::Completeness);
        let r = answer(
            r#"{"justification": "neither", "choice": "none"}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert!(j.ok());
        assert_eq!(j.abstention, Some(crate::judges::record::Abstention::None));
        assert_eq!(
            (j.score, j.pick_position, j.pick_passage_id),
            (None, None, None)
        );
        let r = answer(
            r#"{"justification": "both", "choice": "several"}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert_eq!(
            j.abstention,
            Some(crate::judges::record::Abstention::Several)
        );
        let r = answer(
            r#"{"justification": "g", "choice": 2}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert_eq!((j.score, j.abstention), (Some(1.0), None));
    }

    #[test]
    fn refusals_have_their_own_status_and_failures_keep_the_raw_answer() {
        let u = unit(Dimension::Alignment);
        let refusal = "I'm sorry, I can't help with that. ".repeat(20);
        let r = answer(
            &refusal,
            ParseStatus::Failed {
                error: "the provider refused to answer".into(),
            },
            Some(&refusal),
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Refused);
        assert!(!j.ok() && j.score.is_none());
        let ex = j.raw_excerpt.unwrap();
        assert!(ex.starts_with("I'm sorry") && ex.chars().count() <= RAW_EXCERPT_CHARS + 3);
        // an unparsable answer is failed, its text kept (cut at a character boundary)
        let prose = format!("Je pense que la réponse est bonne. {}", "é".repeat(400));
        let r = answer(
            &prose,
            ParseStatus::Failed {
                error: "not valid JSON".into(),
            },
            None,
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Failed);
        assert_eq!(j.parse_detail.as_deref(), Some("not valid JSON"));
        assert!(j.raw_excerpt.as_deref().unwrap().starts_with("Je pense"));
        // a rating outside the scale fails, with the answer kept
        let r = answer(
            r#"{"justification": "x", "rating": 9}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Failed);
        assert!(j.raw_excerpt.unwrap().contains("\"rating\": 9"));
    }
}
