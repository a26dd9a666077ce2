//! Stage 4, verify: the discriminability test's missing-gold candidates ([`merge_suggestions`])
//! are tagged (same document as the gold, shingle overlap) and, unless the audit stopped,
//! rated pointwise by every judge with the alignment prompt ([`crate::items::missing_gold`]), which decides
//! each candidate's verdict.

use std::collections::HashMap;

use mtr_core::Benchmark;
use mtr_llm::Llm;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::{Suggestion, merge_suggestions};
use crate::job::AuditJob;
use crate::judges::engine::Unit;
use crate::judges::record::Judgement;
use crate::judges::render::BenchRender;
use crate::output;
use crate::stages::judge::{Judgements, Scored, base_unit};
use crate::stages::plan::Planned;
use crate::stages::reuse::Reuse;

/// The candidates with their verdicts, and the pointwise judgements (`verify_items.jsonl`).
pub struct Verified {
    pub suggested: Vec<Suggestion>,
    pub records: Vec<Judgement>,
}

/// Tags and rates the candidates; a stop of the check is added to `scored.stopped`.
pub async fn verify(
    bench: &Benchmark,
    job: &AuditJob,
    llm: &Llm,
    planned: &Planned,
    judged: &Judgements,
    reuse: &Reuse,
    scored: &mut Scored,
) -> Result<Verified> {
    let s = &job.settings;
    let mut suggested = merge_suggestions(&scored.items);
    crate::items::missing_gold::tag(&mut suggested, &planned.passages);
    let mut records = Vec::new();
    if !suggested.is_empty() && scored.stopped.is_none() {
        let render = BenchRender {
            bench,
            passages: &planned.passages,
            prompts: &job.prompts,
            subjects: &judged.subjects,
            budget: planned.budget,
            letter_judges: &[],
        };
        // a candidate is rated in its turn's completeness item, with itself as the passage
        let source: HashMap<&str, usize> = judged
            .comp_items
            .iter()
            .map(|&k| {
                let (d, t) = judged.subjects[k];
                (bench.dialogues[d].turns[t].id.as_str(), k)
            })
            .collect();
        let unit_of = |x: &Suggestion| {
            source.get(x.turn_id.as_str()).map(|&k| Unit {
                dimension: Dimension::Alignment,
                turn_id: x.turn_id.clone(),
                passage_id: Some(x.passage_id.clone()),
                ..base_unit(bench, &planned.plan, k)
            })
        };
        let v = crate::items::missing_gold::judge(
            &planned.judging(llm, &job.progress),
            &suggested,
            &unit_of,
            &render,
            &|u: &Unit| render.fitted(u),
            &reuse.earlier(output::VERIFY_ITEMS),
        )
        .await?;
        scored.stopped = scored
            .stopped
            .take()
            .or(v.stopped.map(|st| format!("missing-gold check: {st}")));
        crate::items::missing_gold::apply(
            &mut suggested,
            &v.records,
            &planned.judge_names(),
            s.verify_rating_at_least,
        );
        records = v.records;
    }
    Ok(Verified { suggested, records })
}
