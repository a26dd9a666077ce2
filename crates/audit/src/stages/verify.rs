//! Stage 6, verify: the discriminability test's missing-gold candidates ([`merge_suggestions`])
//! are tagged (same document as the gold, shingle overlap) and, unless the audit stopped,
//! rated pointwise by every judge with the alignment prompt ([`crate::items::missing_gold`]), which decides
//! each candidate's verdict.

use std::collections::HashMap;

use mtr_core::Benchmark;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::{Suggestion, merge_suggestions};
use crate::items::missing_gold::DiscriminabilityInfo;
use crate::job::AuditJob;
use crate::judges::engine::{Judging, Unit};
use crate::judges::record::Judgement;
use crate::judges::render::BenchRender;
use crate::stages::judge::{Judgements, base_unit};
use crate::stages::plan::Planned;
use crate::stages::reuse::Reuse;
use crate::stages::score::Scored;

/// The candidates with their verdicts, and the pointwise judgements (`verify_items.jsonl`).
pub(crate) struct Verified {
    pub suggested: Vec<Suggestion>,
    pub records: Vec<Judgement>,
    /// Why the check stopped early, if it did.
    pub stopped: Option<String>,
    /// Discriminability facts: chance rate, abstentions, pool and candidate tags (with the
    /// completeness dimension).
    pub discriminability: Option<DiscriminabilityInfo>,
}

impl Verified {
    /// Why the audit is not complete: the scoring's reason, else the check's.
    pub(crate) fn stopped(&self, scored: &Scored) -> Option<String> {
        scored.stopped.clone().or_else(|| self.stopped.clone())
    }
}

/// Tags and rates the candidates (not when the audit stopped before the check).
pub(crate) async fn verify(
    bench: &Benchmark,
    job: &AuditJob,
    judging: &Judging<'_>,
    planned: &Planned,
    judged: &Judgements,
    reuse: &Reuse,
    scored: &Scored,
) -> Result<Verified> {
    let s = &job.settings;
    let passages = judged.passages(planned);
    let mut suggested = merge_suggestions(&scored.items);
    crate::items::missing_gold::tag(&mut suggested, passages);
    let mut records = Vec::new();
    let mut stopped = None;
    if !suggested.is_empty() && scored.stopped.is_none() {
        let render = BenchRender {
            bench,
            passages,
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
            judging,
            &suggested,
            &unit_of,
            &render,
            &|u: &Unit| render.fitted(u),
            &reuse.verify,
        )
        .await?;
        stopped = v.stopped.map(|st| format!("missing-gold check: {st}"));
        crate::items::missing_gold::apply(
            &mut suggested,
            &v.records,
            &planned.judge_names(),
            s.verify_rating_at_least,
        );
        records = v.records;
    }
    let discriminability = planned.dims.contains(&Dimension::Completeness).then(|| {
        crate::items::missing_gold::info(
            &scored.items,
            &scored.judgements,
            &suggested,
            passages,
            s.verify_rating_at_least,
        )
    });
    Ok(Verified {
        suggested,
        records,
        stopped,
        discriminability,
    })
}
