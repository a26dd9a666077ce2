//! The audit, end to end: plan the items, load the passages, retrieve hard negatives and build
//! position-balanced pools, judge every unit with every judge, aggregate, compute statistics,
//! calibrate against human labels, and write the output folder.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use mtr_core::progress::SharedProgress;
use mtr_core::{Benchmark, Passage};
use mtr_llm::{ChatRequest, Llm};
use mtr_retrieve::Retriever;

use crate::aggregate::{ItemScore, merge_suggestions, score_items};
use crate::calibrate;
use crate::config::AuditSettings;
use crate::context::{self, ContextInfo};
use crate::dimension::Dimension;
use crate::engine::{JudgeRef, Judging, Render, Unit, judge_units};
use crate::error::{AuditError, Result};
use crate::human::{self, HumanItem, HumanLabels};
use crate::materials;
use crate::output;
use crate::plan::{self, SkipReason};
use crate::pool::{PositionBalancer, permutations};
use crate::prompts::{AuditPrompts, ContextBudget, Fitted, TurnView, passage_display};
use crate::record::Judgement;
use crate::report::excerpt;
use crate::stats::{self, Lengths};
use crate::summary::*;

/// Everything an audit needs besides the benchmark and the LLM client.
#[derive(Clone)]
pub struct AuditJob {
    pub settings: AuditSettings,
    pub out_dir: PathBuf,
    pub prompts: AuditPrompts,
    /// Retrievers for hard negatives (BM25, and dense when an embedder is configured).
    pub retrievers: Vec<Arc<dyn Retriever>>,
    /// Hash of the effective configuration (the binary's `Config::hash`).
    pub config_hash: String,
    pub tool_version: String,
    pub git_commit: Option<String>,
    pub human_labels: Option<PathBuf>,
    /// Judge a seeded sample of this many human-rated answers (MTRAG file).
    pub human_sample: Option<usize>,
    pub progress: SharedProgress,
}

/// What an audit run produced.
#[derive(Debug)]
pub enum Outcome {
    /// The folder was written (complete, or stopped by the budget: see `Summary::complete`).
    Audited(Box<Summary>),
    /// `--dry-run`: calls, tokens and cost that the audit would spend; nothing was written.
    DryRun {
        plan: mtr_llm::Plan,
        judgements: usize,
        reused: usize,
    },
}

struct BenchRender<'a> {
    bench: &'a Benchmark,
    passages: &'a HashMap<String, Passage>,
    prompts: &'a AuditPrompts,
    /// (dialogue index, turn index) per unit source.
    subjects: &'a [(usize, usize)],
    /// The judges' context: prompts are shortened to fit it.
    budget: Option<ContextBudget>,
}

impl BenchRender<'_> {
    fn text(&self, id: &str) -> Result<String> {
        self.passages
            .get(id)
            .map(passage_display)
            .ok_or_else(|| AuditError::Internal(format!("passage `{id}` was not loaded")))
    }
}

impl BenchRender<'_> {
    /// The unit's request, its history shortened to the judges' context (or too long).
    fn fitted(&self, u: &Unit) -> Result<Fitted> {
        let (d, t) = self.subjects[u.source];
        let dialogue = &self.bench.dialogues[d];
        let turn = &dialogue.turns[t];
        let view = TurnView::new(dialogue, t);
        let answer = turn.answer.as_deref().unwrap_or_default();
        let what: Vec<String> = match u.dimension {
            Dimension::Alignment => vec![self.text(u.passage_id.as_deref().unwrap_or_default())?],
            Dimension::Completeness => u
                .pool
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|id| self.text(id))
                .collect::<Result<Vec<_>>>()?,
            Dimension::Faithfulness => plan::relevant_gold(turn)
                .into_iter()
                .filter_map(|g| self.passages.get(g))
                .map(passage_display)
                .collect(),
            Dimension::Quality => Vec::new(),
        };
        let render = |v: &TurnView<'_>| match u.dimension {
            Dimension::Alignment => self
                .prompts
                .alignment(v, what.first().map(String::as_str).unwrap_or_default()),
            Dimension::Completeness => self.prompts.completeness(v, &what),
            Dimension::Faithfulness => self.prompts.faithfulness(v, &what, answer),
            Dimension::Quality => self.prompts.quality(v, answer),
        };
        match &self.budget {
            Some(b) => b.fit(&view, &render),
            None => Ok(Fitted::Fits {
                request: Box::new(render(&view)?),
                dropped: 0,
            }),
        }
    }
}

impl Render for BenchRender<'_> {
    fn render(&self, u: &Unit) -> Result<ChatRequest> {
        match self.fitted(u)? {
            Fitted::Fits { request, .. } => Ok(*request),
            Fitted::TooLong { tokens, limit } => Err(AuditError::Internal(format!(
                "a prompt of {} needs {tokens} tokens of {limit} (it was screened out)",
                u.turn_id
            ))),
        }
    }
    fn prompt_id(&self, dim: Dimension) -> String {
        self.prompts.get(dim).id()
    }
    fn relevance(&self, u: &Unit) -> Result<Option<crate::relevance::RelevanceInput>> {
        let (d, t) = self.subjects[u.source];
        let dialogue = &self.bench.dialogues[d];
        let turn = &dialogue.turns[t];
        let previous = t.checked_sub(1).map(|p| dialogue.turns[p].user.as_str());
        let ids: Vec<&str> = match u.dimension {
            Dimension::Completeness => u
                .pool
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(String::as_str)
                .collect(),
            _ => u.passage_id.as_deref().into_iter().collect(),
        };
        Ok(Some(crate::relevance::RelevanceInput {
            query: crate::relevance::query(previous, &turn.user, turn.rewrite.as_deref()),
            passages: ids
                .into_iter()
                .map(|id| self.text(id))
                .collect::<Result<_>>()?,
        }))
    }
}

fn judges_of(llm: &Llm) -> Result<(Vec<JudgeRef>, Vec<JudgeInfo>)> {
    let eps: BTreeMap<String, mtr_llm::EndpointInfo> = llm
        .endpoints()
        .into_iter()
        .map(|e| (e.name.clone(), e))
        .collect();
    let mut refs = Vec::new();
    let mut infos = Vec::new();
    for name in llm.judges() {
        let e = eps.get(name).ok_or_else(|| {
            AuditError::Config(format!("judge `{name}` is not a configured endpoint"))
        })?;
        refs.push(JudgeRef {
            name: name.clone(),
            model: e.model.clone(),
            rating_mode: e.rating_mode,
            relevance: e.rating_mode == mtr_llm::logprob::RatingMode::Relevance,
        });
        infos.push(JudgeInfo {
            name: name.clone(),
            model: e.model.clone(),
            family: crate::family::family(&e.model, e.family.as_deref()),
            rating_mode: e.rating_mode,
        });
    }
    if refs.is_empty() {
        return Err(AuditError::Config(
            "no judges: list endpoints under [llm.roles] judges".into(),
        ));
    }
    Ok((refs, infos))
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Runs an audit of `bench` and writes the folder (or, under `--dry-run`, only plans it).
pub async fn run(bench: &Benchmark, job: AuditJob, llm: &Llm) -> Result<Outcome> {
    let s = &job.settings;
    s.validate()?;
    let dims = s.dimensions();
    let (judges, judge_infos) = judges_of(llm)?;
    let samples = llm.sampling(mtr_llm::Role::Judges).n.max(1);
    let dry_run = llm.options().dry_run;
    let progress = job.progress.clone();
    let mut warnings = Vec::new();

    // passages of the golds, then the plan
    let selected = plan::sample_dialogues(bench.dialogues.len(), s.sample, s.seed);
    progress.stage("loading gold passages", 0);
    let mut passages = materials::load_passages(bench, &materials::gold_ids(bench, &selected))?;
    progress.finish_stage();
    let mut plan = plan::build_with_texts(
        &bench.dialogues,
        &dims,
        s.sample,
        s.seed,
        &|id| passages.contains_key(id),
        &|id| {
            passages
                .get(id)
                .is_some_and(|p| p.text.trim().is_empty() && p.title.trim().is_empty())
        },
    );

    // fingerprint, and whether an earlier run's judgements may be reused
    let data_fp = if bench.manifest.fingerprint.is_empty() {
        bench.dir.compute_fingerprint()?
    } else {
        bench.manifest.fingerprint.clone()
    };
    let config_fp = mtr_core::fingerprint::hash_json(&(
        &job.config_hash,
        s,
        judges
            .iter()
            .map(|j| (&j.name, &j.model))
            .collect::<Vec<_>>(),
        job.retrievers.iter().map(|r| r.name()).collect::<Vec<_>>(),
    ));
    let fingerprint = FingerprintInfo {
        data: data_fp.clone(),
        config: config_fp,
        prompts: job
            .prompts
            .hash_with_human(&dims, job.human_labels.is_some()),
        tool_version: job.tool_version.clone(),
        git_commit: job.git_commit.clone(),
    };
    let previous = output::read_summary(&job.out_dir.join(output::SUMMARY)).ok();
    let same_data = previous
        .as_ref()
        .is_none_or(|p| p.fingerprint.data == data_fp);
    if !same_data {
        warnings.push(
            "the output folder held an audit of other data; its judgements were not reused".into(),
        );
    }
    let existing = if same_data {
        output::read_existing(&job.out_dir, output::ITEMS)
    } else {
        HashMap::new()
    };

    // units of the rating dimensions: one per item
    let subjects: Vec<(usize, usize)> =
        plan.items.iter().map(|it| (it.dialogue, it.turn)).collect();
    let base_unit = |k: usize| {
        let it = &plan.items[k];
        let d = &bench.dialogues[it.dialogue];
        Unit {
            dimension: it.dimension,
            dialogue_id: d.id.clone(),
            turn_id: d.turns[it.turn].id.clone(),
            turn: it.turn + 1,
            passage_id: it.passage_id.clone(),
            trial: None,
            pool: None,
            gold_position: None,
            source: k,
            judge: None,
        }
    };
    let rating_units: Vec<Unit> = (0..plan.items.len())
        .filter(|&k| plan.items[k].dimension != Dimension::Completeness)
        .map(base_unit)
        .collect();
    let comp_items: Vec<usize> = (0..plan.items.len())
        .filter(|&k| plan.items[k].dimension == Dimension::Completeness)
        .collect();
    if !comp_items.is_empty() && job.retrievers.is_empty() {
        return Err(AuditError::Config(
            "the completeness dimension needs a retriever for hard negatives".into(),
        ));
    }
    let mut comp_turns: Vec<(usize, usize)> = comp_items
        .iter()
        .map(|&k| (plan.items[k].dialogue, plan.items[k].turn))
        .collect();
    comp_turns.dedup();

    let judging = Judging {
        llm,
        judges: &judges,
        samples,
        progress: &progress,
    };
    // every prompt fitted to the judges' context: shortened, or skipped as too long
    let budget = context::budget_for(llm, &judges);
    let mut context_info = ContextInfo::new(budget.as_ref());
    let mut rating_screen = {
        let render = BenchRender {
            bench,
            passages: &passages,
            prompts: &job.prompts,
            subjects: &subjects,
            budget,
        };
        context::screen(rating_units, &|u: &Unit| render.fitted(u))?
    };
    context_info.add(&rating_screen);
    let rating_units = std::mem::take(&mut rating_screen.kept);
    let mut prompt_tokens = std::mem::take(&mut rating_screen.prompt_tokens);
    let expected =
        (rating_units.len() + comp_items.len() * s.trials) * judges.len() * samples as usize;
    progress.stage("judging", expected.saturating_sub(existing.len()) as u64);

    // The rating dimensions are judged while the hard negatives are retrieved (off the async
    // workers); the discriminability test follows as soon as its pools exist.
    let rating = async {
        let render = BenchRender {
            bench,
            passages: &passages,
            prompts: &job.prompts,
            subjects: &subjects,
            budget,
        };
        judge_units(&judging, &rating_units, &render, &existing).await
    };
    let completeness = async {
        if comp_items.is_empty() {
            return Ok(None);
        }
        let queries = materials::negative_queries(bench, &comp_turns, &s.negatives_query)?;
        let have: HashSet<String> = passages.keys().cloned().collect();
        let (candidates, loaded) = materials::retrieve_candidates(
            job.retrievers.clone(),
            queries,
            materials::depth(s.negatives),
            bench.dir.clone(),
            have,
        )
        .await?;
        let negs = materials::select_pools(
            bench,
            &comp_turns,
            &candidates,
            &passages,
            loaded,
            s.negatives,
        );
        // units: T per judge and item, each judge with its own permutations and its own
        // balanced gold positions
        let mut balancers: Vec<PositionBalancer> = judges
            .iter()
            .map(|j| PositionBalancer::new(crate::seed::derive(s.seed, &["judge", &j.name])))
            .collect();
        let mut units = Vec::new();
        let mut no_negatives = 0;
        let mut short = 0;
        for &k in &comp_items {
            let base = base_unit(k);
            let gold = base.passage_id.clone().unwrap_or_default();
            let n = negs.by_turn.get(&base.turn_id).cloned().unwrap_or_default();
            if n.is_empty() {
                no_negatives += 1;
                continue;
            }
            short += usize::from(n.len() < s.negatives);
            for (ji, judge) in judges.iter().enumerate() {
                let positions = balancers[ji].assign(n.len() + 1, s.trials);
                let key = format!("{}\u{1f}{gold}\u{1f}{}", base.turn_id, judge.name);
                for trial in permutations(&gold, &n, &positions, s.seed, &key) {
                    units.push(Unit {
                        trial: Some(trial.index),
                        gold_position: Some(trial.gold_position + 1),
                        pool: Some(trial.order),
                        judge: Some(ji),
                        ..base.clone()
                    });
                }
            }
        }
        let mut all_passages = passages.clone();
        all_passages.extend(negs.passages);
        let render = BenchRender {
            bench,
            passages: &all_passages,
            prompts: &job.prompts,
            subjects: &subjects,
            budget,
        };
        let mut screened = context::screen(units, &|u: &Unit| render.fitted(u))?;
        let units = std::mem::take(&mut screened.kept);
        let judged = judge_units(&judging, &units, &render, &existing).await?;
        Ok::<_, AuditError>(Some((judged, no_negatives, short, all_passages, screened)))
    };
    let (rating, completeness) = futures::join!(rating, completeness);
    progress.finish_stage();
    let rating = rating?;
    let mut judged = rating;
    if let Some((comp, no_negatives, short, all_passages, screened)) = completeness? {
        for _ in 0..no_negatives {
            plan.skip(Dimension::Completeness, SkipReason::NoNegatives);
        }
        context_info.add(&screened);
        prompt_tokens.extend(screened.prompt_tokens);
        if short > 0 {
            warnings.push(format!("{short} discriminability pools have fewer than {} hard negatives (the corpus had too few distinct candidates)", s.negatives));
        }
        passages = all_passages;
        judged.records.extend(comp.records);
        judged.reused += comp.reused;
        judged.stopped = judged.stopped.or(comp.stopped);
    }
    // items.jsonl lists the dimensions in order, each in plan order
    judged
        .records
        .sort_by_key(|r| r.as_ref().map(|j| j.dimension));
    let no_neg = plan
        .skipped
        .get(&Dimension::Completeness)
        .and_then(|m| m.get(&SkipReason::NoNegatives))
        .copied()
        .unwrap_or(0);
    let comp_count = comp_items.len() - no_neg;
    for (d, n) in &context_info.too_long {
        for _ in 0..*n {
            plan.skip(*d, SkipReason::TooLong);
        }
    }

    // human calibration (its own units, same judges and prompts)
    let human_labels = match &job.human_labels {
        Some(p) => Some((p.clone(), human::load(p)?)),
        None => None,
    };
    let mut human_judged = None;
    if let Some((_, HumanLabels::Mtrag { items, .. })) = &human_labels
        && judged.stopped.is_none()
    {
        let human_items_sel: Vec<HumanItem> = calibrate::sample(items, job.human_sample, s.seed);
        let hexisting = if same_data {
            calibrate::reusable_existing(
                output::read_existing(&job.out_dir, output::HUMAN_ITEMS),
                &job.prompts,
            )
        } else {
            HashMap::new()
        };
        let hr = calibrate::HumanRender {
            items: &human_items_sel,
            prompts: &job.prompts,
            budget,
        };
        let screened =
            context::screen(calibrate::units(&human_items_sel), &|u: &Unit| hr.fitted(u))?;
        context_info.human_shortened = screened.shortened.values().sum();
        context_info.human_too_long = screened.too_long.values().sum();
        let hunits = screened.kept;
        progress.stage(
            "human calibration",
            (hunits.len() * judges.len() * samples as usize) as u64,
        );
        human_judged = Some(judge_units(&judging, &hunits, &hr, &hexisting).await?);
        progress.finish_stage();
    }
    let human_stopped = human_judged.as_ref().and_then(|h| h.stopped.clone());

    if dry_run {
        let pending = judged.records.len() - judged.reused;
        return Ok(Outcome::DryRun {
            plan: llm.plan(),
            judgements: pending,
            reused: judged.reused,
        });
    }

    let planned = judged.records.len();
    let judgements: Vec<Judgement> = judged.records.into_iter().flatten().collect();
    let done = judgements.len();
    let mut stopped = judged
        .stopped
        .clone()
        .or(human_stopped.map(|s| format!("human calibration: {s}")));
    if stopped.is_none() && done < planned {
        stopped = Some(format!("{} judgements were not made", planned - done));
    }
    // a judge that failed (nearly) everything leaves an audit that is not complete
    let failed_judges = crate::failures::from_judgements(&judgements, s.max_failed_share);
    if stopped.is_none()
        && let Some(f) = failed_judges.first()
    {
        stopped = Some(f.message());
    }
    let items = score_items(&judgements, judges.len(), s.trials * samples as usize);

    // missing-gold candidates: tagged, then rated pointwise by every judge (verify.rs)
    let mut suggested = merge_suggestions(&items);
    crate::verify::tag(&mut suggested, &passages);
    let mut verify_records = Vec::new();
    if !suggested.is_empty() && stopped.is_none() {
        let render = BenchRender {
            bench,
            passages: &passages,
            prompts: &job.prompts,
            subjects: &subjects,
            budget,
        };
        let source: HashMap<&str, usize> = comp_items
            .iter()
            .map(|&k| {
                (
                    bench.dialogues[plan.items[k].dialogue].turns[plan.items[k].turn]
                        .id
                        .as_str(),
                    k,
                )
            })
            .collect();
        let unit_of = |x: &crate::aggregate::Suggestion| {
            source.get(x.turn_id.as_str()).map(|&k| {
                let it = &plan.items[k];
                let d = &bench.dialogues[it.dialogue];
                Unit {
                    dimension: Dimension::Alignment,
                    dialogue_id: d.id.clone(),
                    turn_id: x.turn_id.clone(),
                    turn: it.turn + 1,
                    passage_id: Some(x.passage_id.clone()),
                    trial: None,
                    pool: None,
                    gold_position: None,
                    source: k,
                    judge: None,
                }
            })
        };
        let vexisting = if same_data {
            output::read_existing(&job.out_dir, output::VERIFY_ITEMS)
        } else {
            HashMap::new()
        };
        let v = crate::verify::judge(
            &judging,
            &suggested,
            &unit_of,
            &render,
            &|u: &Unit| render.fitted(u),
            &vexisting,
        )
        .await?;
        stopped = stopped.or(v.stopped.map(|st| format!("missing-gold check: {st}")));
        let names: Vec<String> = judges.iter().map(|j| j.name.clone()).collect();
        crate::verify::apply(&mut suggested, &v.records, &names, s.verify_rating_at_least);
        verify_records = v.records;
    }

    // human comparisons
    let human = match (&human_labels, human_judged) {
        (
            Some((
                path,
                HumanLabels::Mtrag {
                    scale,
                    items: file_items,
                },
            )),
            Some(hj),
        ) => {
            let mut hjs: Vec<Judgement> = hj.records.into_iter().flatten().collect();
            calibrate::name_prompts(&mut hjs, &job.prompts);
            output::write_judgements(&job.out_dir.join(output::HUMAN_ITEMS), &hjs)?;
            Some(calibrate::mtrag(
                path,
                *scale,
                file_items,
                &hjs,
                judges.len(),
                &dims,
                s,
                &job.prompts,
            ))
        }
        (Some((path, HumanLabels::Items(ratings))), _) => {
            Some(calibrate::items(path, ratings, &items, &dims, s))
        }
        _ => None,
    };

    // statistics
    let judge_names: Vec<String> = judges.iter().map(|j| j.name.clone()).collect();
    let mut lengths = Lengths::default();
    for (id, p) in &passages {
        lengths.passage_words.insert(id.clone(), words(&p.text));
    }
    for &d in &plan.selected {
        for t in &bench.dialogues[d].turns {
            if let Some(a) = &t.answer {
                lengths.answer_words.insert(t.id.clone(), words(a));
            }
        }
    }
    let mut dimensions = BTreeMap::new();
    let mut bias = BiasInfo {
        position: Vec::new(),
        length: Vec::new(),
        self_preference: Vec::new(),
        pool_length: Vec::new(),
    };
    let mut failures: BTreeMap<String, BTreeMap<Dimension, usize>> = BTreeMap::new();
    let mut worst = BTreeMap::new();
    let mut flagged_turns = BTreeSet::new();
    for &dim in &dims {
        let di: Vec<&ItemScore> = items.iter().filter(|i| i.dimension == dim).collect();
        let dj: Vec<&Judgement> = judgements.iter().filter(|j| j.dimension == dim).collect();
        for j in dj.iter().filter(|j| !j.ok()) {
            *failures
                .entry(j.judge.clone())
                .or_default()
                .entry(dim)
                .or_default() += 1;
        }
        for i in di.iter().filter(|i| stats::is_flagged(i, s)) {
            flagged_turns.insert(i.turn_id.clone());
        }
        dimensions.insert(
            dim,
            stats::dimension_summary(dim, &di, &dj, &judge_names, s),
        );
        bias.length
            .extend(stats::length_bias(dim, &di, &judge_names, &lengths));
        if dim == Dimension::Completeness {
            bias.position = stats::position_bias(&dj, &judge_names);
            bias.pool_length = stats::pool_length_bias(
                &dj,
                &judge_names,
                &lengths,
                &calibrate::resampling(s, "pool-length"),
            );
        }
        worst.insert(dim, worst_items(bench, &passages, &di, &dj, s.worst));
    }
    // self-preference and ensemble diversity
    let generator_families: BTreeSet<String> = bench
        .manifest
        .generator
        .values()
        .filter_map(|m| crate::family::family(m, None))
        .collect();
    for j in &judge_infos {
        if let Some(f) = &j.family
            && generator_families.contains(f)
        {
            bias.self_preference.push(format!(
                "judge `{}` ({}) is of the `{f}` family, like the benchmark's generator ({}): it may prefer its own family's output",
                j.name,
                j.model,
                bench.manifest.generator.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if let Some(h) = &human {
        bias.self_preference
            .extend(calibrate::self_preference(h, &judge_infos));
    }
    if judges.len() < 2 {
        warnings.push("only one judge: no inter-judge agreement; configure at least two judges of different model families".into());
    }
    let mut fams: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for j in &judge_infos {
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
    if let Some(st) = &stopped {
        warnings.push(format!("incomplete: {st}"));
    }

    let mut cost = CostInfo::default();
    let mut tokens_per: BTreeMap<Dimension, (u64, usize)> = BTreeMap::new();
    for j in &judgements {
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

    let discriminability = dims.contains(&Dimension::Completeness).then(|| {
        crate::verify::info(
            &items,
            &judgements,
            &suggested,
            &passages,
            s.verify_rating_at_least,
        )
    });
    let mut summary = Summary {
        summary_version: SUMMARY_VERSION,
        verdict: None,
        benchmark: BenchmarkInfo {
            name: bench.manifest.name.clone(),
            path: bench.dir.root().display().to_string(),
            source: bench.manifest.source.clone(),
            language: bench.manifest.language.clone(),
            fingerprint: data_fp,
            generator: bench.manifest.generator.clone(),
        },
        fingerprint,
        settings: s.clone(),
        judges: judge_infos,
        complete: stopped.is_none(),
        stopped,
        plan: PlanInfo {
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
            items: dims
                .iter()
                .map(|d| {
                    (
                        *d,
                        if *d == Dimension::Completeness {
                            comp_count.saturating_sub(
                                context_info
                                    .too_long
                                    .get(&Dimension::Completeness)
                                    .copied()
                                    .unwrap_or(0),
                            )
                        } else {
                            plan.count(*d)
                                .saturating_sub(context_info.too_long.get(d).copied().unwrap_or(0))
                        },
                    )
                })
                .collect(),
            skipped: plan.skipped.clone(),
            judgements_planned: planned,
            judgements_done: done,
        },
        dimensions,
        bias,
        failures,
        suggested_qrels: suggested.clone(),
        discriminability,
        flagged_turns: flagged_turns.len(),
        cost,
        human,
        failure_rates: stats::failure_rates(&judgements, &prompt_tokens),
        context: context_info,
        worst,
        warnings,
    };
    summary.verdict = Some(crate::verdict::of(&summary));
    std::fs::create_dir_all(&job.out_dir).map_err(|e| AuditError::Output {
        path: job.out_dir.clone(),
        message: e.to_string(),
    })?;
    output::write_judgements(&job.out_dir.join(output::ITEMS), &judgements)?;
    output::write_suggestions(&job.out_dir.join(output::SUGGESTED_QRELS), &suggested)?;
    output::write_judgements(&job.out_dir.join(output::VERIFY_ITEMS), &verify_records)?;
    output::write_summary(&job.out_dir.join(output::SUMMARY), &summary)?;
    output::write_reports(&job.out_dir, &summary)?;
    Ok(Outcome::Audited(Box::new(summary)))
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
        let hist = d.history(ti);
        let history: Vec<String> = hist
            .iter()
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
            .collect();
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
            .or_else(|| {
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
            });
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

/// Turn ids the audit flagged in any dimension (for the planted-defect evaluation).
pub fn flagged_turns(
    items_jsonl: &[Judgement],
    settings: &AuditSettings,
    judges: usize,
    samples: usize,
) -> BTreeSet<String> {
    let items = score_items(items_jsonl, judges, settings.trials * samples);
    let set: HashSet<Dimension> = settings.dimensions().into_iter().collect();
    items
        .iter()
        .filter(|i| set.contains(&i.dimension) && stats::is_flagged(i, settings))
        .map(|i| i.turn_id.clone())
        .collect()
}
