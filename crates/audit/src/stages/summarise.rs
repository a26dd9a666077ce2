//! Stage 8, summarise: everything `summary.json` holds, computed once from the judgements and
//! item scores: per-dimension statistics ([`crate::statistics::dimension_statistics`]), biases (position, length,
//! self-preference), failures, the worst items with their text, the ensemble's warnings, cost,
//! the discriminability facts, and the verdict on the judges ([`crate::statistics::verdict`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mtr_core::{Benchmark, Passage};
use mtr_llm::Llm;

use crate::dimension::Dimension;
use crate::human::annotator_agreement::HumanCalibration;
use crate::human::self_preference;
use crate::items::aggregate::ItemScore;
use crate::job::AuditJob;
use crate::judges::context::ContextInfo;
use crate::judges::prompts::passage_display;
use crate::judges::record::Judgement;
use crate::report::excerpt;
use crate::stages::human_labels::HumanJudged;
use crate::stages::judge::Judgements;
use crate::stages::plan::Planned;
use crate::stages::score::Scored;
use crate::stages::verify::Verified;
use crate::statistics::all_dimensions::{self, Scores};
use crate::statistics::dimension_statistics::Lengths;
use crate::summary::*;

/// What the earlier stages leave for the summary.
pub(crate) struct Finished<'a> {
    pub planned: &'a Planned,
    pub judged: &'a Judgements,
    pub human_judged: &'a HumanJudged,
    pub scored: &'a Scored,
    /// Missing-gold candidates with their verdicts.
    pub verified: &'a Verified,
    pub human: Option<HumanCalibration>,
    pub warnings: Vec<String>,
}

/// The summary of a finished (or budget-stopped) audit, its verdict included.
pub(crate) fn summarise(bench: &Benchmark, job: &AuditJob, llm: &Llm, f: Finished<'_>) -> Summary {
    let s = &job.settings;
    let (planned, scored) = (f.planned, f.scored);
    let passages = f.judged.passages(planned);
    let stopped = f.verified.stopped(scored);
    let lengths = lengths(bench, planned, passages);
    let worst = worst(bench, planned, scored, passages, s.worst);
    let mut warnings = f.warnings;
    warnings.extend(ensemble_warnings(planned, stopped.as_deref()));
    let plan = plan_info(bench, planned, f.judged, scored);
    let cost = cost(&scored.judgements, llm);
    let mut self_preference = generator_family(bench, &planned.judge_infos);
    let judge_names = planned.judge_names();
    let st = all_dimensions::of(
        s,
        &Scores {
            dims: &planned.dims,
            judge_names: &judge_names,
            items: &scored.items,
            judgements: &scored.judgements,
            lengths: &lengths,
            prompt_tokens: &f.judged.prompt_tokens,
        },
    );
    if let Some(h) = &f.human {
        self_preference.extend(self_preference::warnings(h, &planned.judge_infos));
    }
    let mut summary = Summary {
        summary_version: SUMMARY_VERSION,
        verdict: None,
        benchmark: BenchmarkInfo {
            name: bench.manifest.name.clone(),
            path: bench.dir.display_name(),
            source: bench.manifest.source.clone(),
            language: bench.manifest.language.clone(),
            fingerprint: planned.fingerprint.data.clone(),
            generator: bench.manifest.generator.clone(),
        },
        fingerprint: planned.fingerprint.clone(),
        settings: s.clone(),
        judges: planned.judge_infos.clone(),
        complete: stopped.is_none(),
        stopped,
        plan,
        dimensions: st.dimensions,
        bias: BiasInfo {
            self_preference,
            ..st.bias
        },
        failures: st.failures,
        suggested_qrels: f.verified.suggested.clone(),
        discriminability: f.verified.discriminability.clone(),
        flagged_turns: st.flagged_turns,
        cost,
        human: f.human,
        review: None,
        failure_rates: st.failure_rates,
        context: ContextInfo {
            human_shortened: f.human_judged.shortened,
            human_too_long: f.human_judged.too_long,
            ..f.judged.context.clone()
        },
        worst,
        warnings,
        time_budget: f.judged.time_budget.as_ref().map(|b| {
            let mut info = b.info.clone();
            info.deadline_stopped = planned.gate.ran_out();
            info
        }),
        paper_scale: s
            .paper_scale
            .then(|| crate::paper_scale::of(&scored.judgements))
            .flatten(),
    };
    summary.verdict = Some(crate::statistics::verdict::of(&summary));
    summary
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Words of every loaded passage and of every audited turn's answer.
fn lengths(bench: &Benchmark, planned: &Planned, passages: &HashMap<String, Passage>) -> Lengths {
    let mut lengths = Lengths::default();
    for (id, p) in passages {
        lengths.passage_words.insert(id.clone(), words(&p.text));
    }
    for &d in &planned.plan.selected {
        for t in &bench.dialogues[d].turns {
            if let Some(a) = &t.answer {
                lengths.answer_words.insert(t.id.clone(), words(a));
            }
        }
    }
    lengths
}

/// The lowest-scoring items of every dimension.
fn worst(
    bench: &Benchmark,
    planned: &Planned,
    scored: &Scored,
    passages: &HashMap<String, Passage>,
    n: usize,
) -> BTreeMap<Dimension, Vec<WorstItem>> {
    let mut out = BTreeMap::new();
    for &dim in &planned.dims {
        let di: Vec<&ItemScore> = scored.items.iter().filter(|i| i.dimension == dim).collect();
        let dj: Vec<&Judgement> = scored
            .judgements
            .iter()
            .filter(|j| j.dimension == dim)
            .collect();
        out.insert(dim, worst_items(bench, passages, &di, &dj, n));
    }
    out
}

/// Judges of the benchmark generator's model family (the human calibration adds the judges
/// that rate their own family's answers above the annotators).
fn generator_family(bench: &Benchmark, judges: &[JudgeInfo]) -> Vec<String> {
    let mut out = Vec::new();
    let generator_families: BTreeSet<String> = bench
        .manifest
        .generator
        .values()
        .filter_map(|m| crate::judges::family::family(m, None))
        .collect();
    for j in judges {
        if let Some(f) = &j.family
            && generator_families.contains(f)
        {
            out.push(format!(
                "judge `{}` ({}) is of the `{f}` family, like the benchmark's generator ({}): it may prefer its own family's output",
                j.name,
                j.model,
                bench.manifest.generator.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}

/// Warnings on the ensemble (one judge, judges of one family) and on an incomplete audit.
fn ensemble_warnings(planned: &Planned, stopped: Option<&str>) -> Vec<String> {
    let mut warnings = Vec::new();
    if planned.judges.len() < 2 {
        warnings.push("only one judge: no inter-judge agreement; configure at least two judges of different model families".into());
    }
    let mut fams: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for j in &planned.judge_infos {
        if let Some(f) = &j.family {
            fams.entry(f.as_str()).or_default().push(j.name.as_str());
        }
    }
    for (f, names) in fams.iter().filter(|(_, n)| n.len() > 1) {
        warnings.push(format!(
            "judges {} share the `{f}` model family: their errors may be correlated",
            names.join(", ")
        ));
    }
    if let Some(st) = stopped {
        warnings.push(format!("incomplete: {st}"));
    }
    warnings
}

/// Tokens and cost of the judgements, in total, per judge and per dimension.
fn cost(judgements: &[Judgement], llm: &Llm) -> CostInfo {
    let mut cost = CostInfo::default();
    let mut tokens_per: BTreeMap<Dimension, (u64, usize)> = BTreeMap::new();
    for j in judgements {
        cost.total.add(j);
        cost.per_judge.entry(j.judge.clone()).or_default().add(j);
        cost.per_dimension.entry(j.dimension).or_default().add(j);
        let e = tokens_per.entry(j.dimension).or_default();
        e.0 += j.prompt_tokens;
        e.1 += 1;
    }
    cost.max_cost_usd = llm.ledger().max_cost_usd;
    cost.prompt_tokens_per_judgement = tokens_per
        .into_iter()
        .map(|(d, (t, n))| (d, t as f64 / n.max(1) as f64))
        .collect();
    cost
}

/// What was planned, audited and skipped.
fn plan_info(
    bench: &Benchmark,
    planned: &Planned,
    judged: &Judgements,
    scored: &Scored,
) -> PlanInfo {
    let (plan, too_long) = (&planned.plan, &judged.context.too_long);
    PlanInfo {
        dialogues_total: plan.dialogues_total,
        dialogues_audited: plan.selected.len(),
        sampled: plan.selected.len() < plan.dialogues_total,
        turns_total: plan.turns_total,
        turns_audited: plan.turns_audited,
        audited_turns: plan
            .selected
            .iter()
            .flat_map(|&di| bench.dialogues[di].turns.iter().map(|t| t.id.clone()))
            .collect(),
        items: planned
            .dims
            .iter()
            .map(|d| {
                let n = if *d == Dimension::Completeness {
                    judged.comp_count
                } else {
                    plan.count(*d)
                };
                (*d, n.saturating_sub(too_long.get(d).copied().unwrap_or(0)))
            })
            .collect(),
        skipped: judged.skipped.clone(),
        judgements_planned: scored.planned,
        judgements_done: scored.done,
    }
}

/// The last four utterances before a turn, each cut to 300 characters.
fn latest_history(d: &mtr_core::model::Dialogue, ti: usize) -> Vec<String> {
    let hist = d.history(ti);
    hist.iter()
        .skip(hist.len().saturating_sub(4))
        .map(|u| {
            format!(
                "{}: {}",
                if u.speaker == mtr_core::model::Speaker::User {
                    "User"
                } else {
                    "Assistant"
                },
                excerpt(u.text, 300)
            )
        })
        .collect()
}

/// The passage the judges picked most often instead of the gold (ties: the smaller id).
fn most_picked_instead(mine: &[&&Judgement]) -> Option<String> {
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for j in mine.iter().filter(|j| j.score == Some(0.0)) {
        if let Some(p) = j.pick_passage_id.as_deref() {
            *votes.entry(p).or_default() += 1;
        }
    }
    votes
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(p, _)| p.to_string())
}

/// The lowest-scoring items of a dimension with the text a reviewer needs.
fn worst_items(
    bench: &Benchmark,
    passages: &HashMap<String, Passage>,
    items: &[&ItemScore],
    judgements: &[&Judgement],
    n: usize,
) -> Vec<WorstItem> {
    let mut scored: Vec<&&ItemScore> = items.iter().filter(|i| i.score.is_some()).collect();
    scored.sort_by(|a, b| {
        a.score
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.score.unwrap_or(f64::INFINITY))
            .then_with(|| a.turn_id.cmp(&b.turn_id))
            .then_with(|| a.passage_id.cmp(&b.passage_id))
    });
    let mut out = Vec::new();
    for it in scored.into_iter().take(n) {
        let Some((d, ti)) = bench.find_turn(&it.turn_id) else {
            continue;
        };
        let turn = &d.turns[ti];
        let history = latest_history(d, ti);
        let mine: Vec<&&Judgement> = judgements
            .iter()
            .filter(|j| j.turn_id == it.turn_id && j.passage_id == it.passage_id && j.ok())
            .collect();
        let mut justifications = BTreeMap::new();
        for j in &mine {
            if let Some(t) = &j.justification {
                justifications
                    .entry(j.judge.clone())
                    .or_insert_with(|| excerpt(t, 400));
            }
        }
        let preferred = it
            .suggestion
            .as_ref()
            .map(|s| s.passage_id.clone())
            .or_else(|| most_picked_instead(&mine));
        let needs_answer = it.dimension.needs_answer();
        out.push(WorstItem {
            turn_id: it.turn_id.clone(),
            dialogue_id: it.dialogue_id.clone(),
            turn: it.turn,
            passage_id: it.passage_id.clone(),
            score: it.score.unwrap_or(f64::NAN),
            per_judge: it.per_judge.clone(),
            history,
            question: turn.user.clone(),
            passage: it
                .passage_id
                .as_ref()
                .and_then(|p| passages.get(p))
                .map(|p| excerpt(&passage_display(p), 1200)),
            answer: if needs_answer {
                turn.answer.as_ref().map(|a| excerpt(a, 1200))
            } else {
                None
            },
            preferred_passage: preferred
                .as_ref()
                .and_then(|p| passages.get(p))
                .map(|p| excerpt(&passage_display(p), 1200)),
            preferred_passage_id: preferred,
            justifications,
        });
    }
    out
}
