//! Stage 3, judge: the plan's items become units (one per rating item; for completeness T
//! seeded permutations per judge of the gold and its hard negatives), every unit is fitted to
//! the judges' context, and the ensemble judges them ([`crate::judges::engine::judge_units`]).
//! The rating dimensions are judged while the hard negatives are retrieved (off the async
//! workers); the discriminability test follows as soon as its pools exist. The stage hands on
//! the records ([`Judged`]) and what judging found ([`Judgements`]: the pools' passages, the
//! items skipped, the context fitting, the time budget's plan).

use std::collections::{BTreeMap, HashMap, HashSet};

use mtr_core::{Benchmark, Passage};
use mtr_llm::Llm;
use rayon::prelude::*;

use crate::budget::{self, BudgetPlan, DialogueWork, TimeBudget};
use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::items::materials;
use crate::items::pool::{PositionBalancer, permutations};
use crate::items::selection::{AuditPlan, SkipReason};
use crate::job::{AuditJob, Outcome};
use crate::judges::context::{self, ContextInfo, Deferred, ItemKey, Recording, Screened};
use crate::judges::engine::{Judged, Judging, Unit, judge_units};
use crate::judges::record::Judgement;
use crate::judges::render::BenchRender;
use crate::stages::plan::Planned;
use crate::stages::reuse::Reuse;

/// What judging the benchmark's units found, beside the records ([`Judged`]) that [`score`]
/// turns into item scores.
pub(crate) struct Judgements {
    /// (dialogue index, turn index) per plan item: what `Unit::source` indexes.
    pub subjects: Vec<(usize, usize)>,
    /// Plan items of the completeness dimension.
    pub comp_items: Vec<usize>,
    /// Completeness items judged (those with hard negatives whose prompts fit).
    pub comp_count: usize,
    pub context: ContextInfo,
    /// Counted prompt tokens per item.
    pub prompt_tokens: HashMap<ItemKey, u64>,
    /// The plan's skipped would-be items, with those judging skipped (no hard negatives, too
    /// long for the judges' context).
    pub skipped: Skipped,
    /// The plan's gold passages with the hard negatives of the discriminability pools (`None`
    /// without pools: the plan's golds are all).
    pool_passages: Option<HashMap<String, Passage>>,
    /// `--time-budget`: the plan of the dialogues started, and what this run finished.
    pub time_budget: Option<BudgetPlan>,
    pub warnings: Vec<String>,
}

impl Judgements {
    /// Every passage shown: the plan's golds and the hard negatives.
    pub(crate) fn passages<'a>(&'a self, planned: &'a Planned) -> &'a HashMap<String, Passage> {
        self.pool_passages.as_ref().unwrap_or(&planned.passages)
    }
}

/// The discriminability test's judgements and what building its pools found.
struct Pools {
    judged: Judged,
    /// Items left without any hard negative.
    no_negatives: usize,
    /// Pools with fewer negatives than asked for.
    short: usize,
    /// The gold passages and the negatives shown.
    passages: HashMap<String, Passage>,
    screened: Screened,
}

/// The discriminability test's units, built and screened, before they are judged.
struct PoolWork {
    units: Vec<Unit>,
    no_negatives: usize,
    short: usize,
    passages: HashMap<String, Passage>,
    screened: Screened,
    /// The prompt lengths, recorded while judging (no context to fit: nothing screened out).
    deferred: Option<Deferred>,
}

/// What the judging of the benchmark's units returns.
struct BenchJudged {
    rating: Judged,
    pools: Option<Pools>,
    prompt_tokens: HashMap<ItemKey, u64>,
    budget: Option<BudgetPlan>,
}

/// What the judging of the benchmark's units needs.
struct Bench<'a> {
    bench: &'a Benchmark,
    job: &'a AuditJob,
    planned: &'a Planned,
    subjects: &'a [(usize, usize)],
    judging: &'a Judging<'a>,
    existing: &'a HashMap<String, Judgement>,
    /// Judges whose picks are read from label probabilities ([`crate::judges::letters`]).
    letter_judges: Vec<usize>,
}

/// The plan's completeness items; without a retriever for hard negatives they cannot be
/// judged (a configuration error).
fn completeness_items(job: &AuditJob, planned: &Planned) -> Result<Vec<usize>> {
    let comp_items: Vec<usize> = (0..planned.plan.items.len())
        .filter(|&k| planned.plan.items[k].dimension == Dimension::Completeness)
        .collect();
    if !comp_items.is_empty() && job.retrievers.is_empty() {
        return Err(AuditError::Config(
            "the completeness dimension needs a retriever for hard negatives".into(),
        ));
    }
    Ok(comp_items)
}

/// Judges the benchmark's units: the records (the dimensions in order, each in plan order),
/// and what judging them found.
pub(crate) async fn judge(
    bench: &Benchmark,
    job: &AuditJob,
    judging: &Judging<'_>,
    planned: &Planned,
    reuse: &Reuse,
    time: Option<&TimeBudget>,
) -> Result<(Judged, Judgements)> {
    let subjects: Vec<(usize, usize)> = planned
        .plan
        .items
        .iter()
        .map(|it| (it.dialogue, it.turn))
        .collect();
    let comp_items = completeness_items(job, planned)?;
    let letter_judges = letter_judges(job, &planned.judges)?;
    let mut context = ContextInfo::new(planned.budget.as_ref());
    let existing =
        crate::judges::letters::reusable(&reuse.existing, job.settings.letter_picks.as_ref());
    let BenchJudged {
        rating: mut judged,
        pools,
        mut prompt_tokens,
        budget: mut time_budget,
    } = Bench {
        bench,
        job,
        planned,
        subjects: &subjects,
        judging,
        existing: &existing,
        letter_judges,
    }
    .judge(&comp_items, &mut context, time)
    .await?;
    let mut skipped = planned.plan.skipped.clone();
    let mut warnings = Vec::new();
    let pool_passages = pools.map(|pools| {
        merge_pools(
            pools,
            &mut judged,
            &mut Merged {
                skipped: &mut skipped,
                context: &mut context,
                prompt_tokens: &mut prompt_tokens,
                warnings: &mut warnings,
            },
            job.settings.negatives,
        )
    });
    if let Some(b) = time_budget.as_mut() {
        finish_budget(b, &mut judged, planned.dry_run);
    }
    // items.jsonl lists the dimensions in order, each in plan order
    judged
        .records
        .sort_by_key(|r| r.as_ref().map(|j| j.dimension));
    let comp_count = comp_items.len() - skipped_count(&skipped, SkipReason::NoNegatives);
    for (d, n) in &context.too_long {
        skip(&mut skipped, *d, SkipReason::TooLong, *n);
    }
    let judgements = Judgements {
        subjects,
        comp_items,
        comp_count,
        context,
        prompt_tokens,
        skipped,
        pool_passages,
        time_budget,
        warnings,
    };
    Ok((judged, judgements))
}

/// What the discriminability pools add to the judge stage's bookkeeping.
struct Merged<'a> {
    skipped: &'a mut BTreeMap<Dimension, BTreeMap<SkipReason, usize>>,
    context: &'a mut ContextInfo,
    prompt_tokens: &'a mut HashMap<ItemKey, u64>,
    warnings: &'a mut Vec<String>,
}

/// Adds the pools' judgements, skips, screening and warnings to the rating units' and
/// returns the pools' passages.
fn merge_pools(
    pools: Pools,
    judged: &mut Judged,
    into: &mut Merged<'_>,
    negatives: usize,
) -> HashMap<String, Passage> {
    skip(
        into.skipped,
        Dimension::Completeness,
        SkipReason::NoNegatives,
        pools.no_negatives,
    );
    into.context.add(&pools.screened);
    into.prompt_tokens.extend(pools.screened.prompt_tokens);
    if pools.short > 0 {
        into.warnings.push(format!("{} discriminability pools have fewer than {} hard negatives (the corpus had too few distinct candidates)", pools.short, negatives));
    }
    judged.records.extend(pools.judged.records);
    judged.reused += pools.judged.reused;
    judged.stopped = judged.stopped.take().or(pools.judged.stopped);
    pools.passages
}

/// The judges (indices into the ensemble) `[audit.letter_picks]` names; an error when it
/// names no judge of the ensemble, a relevance judge, or one whose endpoint does not read
/// token probabilities.
fn letter_judges(job: &AuditJob, judges: &[crate::judges::unit::JudgeRef]) -> Result<Vec<usize>> {
    let Some(l) = &job.settings.letter_picks else {
        return Ok(Vec::new());
    };
    for name in &l.judges {
        let Some(j) = judges.iter().find(|j| &j.name == name || &j.model == name) else {
            return Err(AuditError::Config(format!(
                "`[audit.letter_picks]` names `{name}`, which is no judge of the ensemble"
            )));
        };
        if j.rating_mode != mtr_llm::logprob::RatingMode::Probability {
            return Err(AuditError::Config(format!(
                "letter picks of judge `{}` need token probabilities: set `rating_mode = \"probability\"` on its endpoint",
                j.name
            )));
        }
    }
    Ok(judges
        .iter()
        .enumerate()
        .filter(|(_, j)| l.names(&j.name, &j.model))
        .map(|(i, _)| i)
        .collect())
}

/// What the time budget's plan left undone; dialogues it did not start stop the audit.
fn finish_budget(b: &mut BudgetPlan, judged: &mut Judged, dry_run: bool) {
    b.finish(&judged.records);
    if b.not_started() > 0 && !dry_run {
        judged.stopped = judged.stopped.take().or(Some(format!(
            "time budget {}: {} of {} planned dialogues were not started",
            budget::budget_text(b.info.budget_s),
            b.not_started(),
            b.info.dialogues_planned
        )));
    }
}

/// Skipped would-be items, by dimension and reason.
type Skipped = BTreeMap<Dimension, BTreeMap<SkipReason, usize>>;

/// Adds `n` would-be items of `d` skipped for `why` (none: no entry).
fn skip(skipped: &mut Skipped, d: Dimension, why: SkipReason, n: usize) {
    if n > 0 {
        *skipped.entry(d).or_default().entry(why).or_default() += n;
    }
}

/// Completeness would-be items skipped for `why`.
fn skipped_count(skipped: &Skipped, why: SkipReason) -> usize {
    skipped
        .get(&Dimension::Completeness)
        .and_then(|m| m.get(&why))
        .copied()
        .unwrap_or(0)
}

/// The unit of plan item `k`, the same for every judge (no trial, no pool).
pub(crate) fn base_unit(bench: &Benchmark, plan: &AuditPlan, k: usize) -> Unit {
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
}

impl Bench<'_> {
    fn render<'b>(&'b self, passages: &'b HashMap<String, Passage>) -> BenchRender<'b> {
        BenchRender {
            bench: self.bench,
            passages,
            prompts: &self.job.prompts,
            subjects: self.subjects,
            budget: self.planned.budget,
            letter_judges: &self.letter_judges,
        }
    }

    /// The rating dimensions' units screened and judged, beside the discriminability pools
    /// (whose hard negatives are retrieved meanwhile). With a time budget the pools are built
    /// first: the plan of the dialogues to start needs every unit.
    async fn judge(
        &self,
        comp_items: &[usize],
        context: &mut ContextInfo,
        time: Option<&TimeBudget>,
    ) -> Result<BenchJudged> {
        let plan = &self.planned.plan;
        let rating_units: Vec<Unit> = (0..plan.items.len())
            .filter(|&k| plan.items[k].dimension != Dimension::Completeness)
            .map(|k| base_unit(self.bench, plan, k))
            .collect();
        let render = self.render(&self.planned.passages);
        // without a context to fit there is nothing to screen out: the prompt lengths are
        // recorded as the judging renders the units, not by rendering each one more time (a
        // time budget's plan renders every unit before judging: screened as before)
        let defer = self.planned.budget.is_none() && time.is_none();
        let (rating_units, mut prompt_tokens, deferred) = if defer {
            let deferred = Deferred::new(&rating_units);
            (rating_units, HashMap::new(), Some(deferred))
        } else {
            let mut screened = context::screen(rating_units, &|u: &Unit| render.fitted(u))?;
            context.add(&screened);
            let kept = std::mem::take(&mut screened.kept);
            (kept, std::mem::take(&mut screened.prompt_tokens), None)
        };
        let recording = deferred.as_ref().map(|lengths| Recording {
            render: &render,
            lengths,
        });
        let rating_render: &dyn crate::judges::engine::Render = match &recording {
            Some(r) => r,
            None => &render,
        };
        let (judges, samples) = (self.planned.judges.len(), self.planned.samples as usize);
        let expected =
            (rating_units.len() + comp_items.len() * self.job.settings.trials) * judges * samples;
        // a dry run of very many calls counts their prompts from a sample
        self.judging.llm.expect_prompts(expected as u64);
        let stage = |n: usize| {
            self.judging
                .progress
                .stage("judging", n.saturating_sub(self.existing.len()) as u64)
        };
        let (rating, pools, budget) = match time {
            Some(time) => {
                let built = self.build_pools(comp_items, false).await?;
                let budget = self.plan_budget(time, &rating_units, &render, built.as_ref())?;
                stage(expected);
                let rating = judge_units(self.judging, &rating_units, rating_render, self.existing);
                let (rating, pools) = futures::join!(rating, self.judge_pools(built));
                (rating, pools, Some(budget))
            }
            None => {
                stage(expected);
                let rating = judge_units(self.judging, &rating_units, rating_render, self.existing);
                let pools = async {
                    let built = self.build_pools(comp_items, defer).await?;
                    self.judge_pools(built).await
                };
                let (rating, pools) = futures::join!(rating, pools);
                (rating, pools, None)
            }
        };
        self.judging.progress.finish_stage();
        let rating = rating?;
        if let Some(d) = deferred {
            prompt_tokens = d.finish(&rating_units, &|u: &Unit| render.fitted(u))?;
        }
        Ok(BenchJudged {
            rating,
            pools: pools?,
            prompt_tokens,
            budget,
        })
    }

    /// The time budget's plan over the rating units and the pools: the dialogues to start
    /// (the gate keeps the others from being judged), announced.
    fn plan_budget(
        &self,
        time: &TimeBudget,
        rating_units: &[Unit],
        render: &BenchRender<'_>,
        built: Option<&PoolWork>,
    ) -> Result<BudgetPlan> {
        let mut work = HashMap::new();
        budget::estimate(self.judging, rating_units, render, self.existing, &mut work)?;
        if let Some(b) = built {
            let render = self.render(&b.passages);
            budget::estimate(self.judging, &b.units, &render, self.existing, &mut work)?;
        }
        let ordered: Vec<(String, DialogueWork)> = self
            .planned
            .plan
            .selected
            .iter()
            .map(|&d| {
                let id = self.bench.dialogues[d].id.clone();
                let w = work.remove(&id).unwrap_or_default();
                (id, w)
            })
            .collect();
        let spent = time.started.elapsed().as_secs_f64();
        let plan = budget::select(&ordered, self.judging.llm, time.budget.as_secs_f64(), spent);
        if let Some(say) = &time.announce {
            say(&plan.line(if self.planned.dry_run {
                mtr_llm::budget::Run::Dry
            } else {
                mtr_llm::budget::Run::Real
            }));
        }
        if let Some(only) = plan.restriction() {
            self.judging.gate.restrict(only);
        }
        Ok(plan)
    }

    /// Hard negatives retrieved, pools permuted per judge and screened (`defer`: their prompt
    /// lengths left to the judging, [`Deferred`]).
    async fn build_pools(&self, comp_items: &[usize], defer: bool) -> Result<Option<PoolWork>> {
        if comp_items.is_empty() {
            return Ok(None);
        }
        let (s, bench, passages) = (&self.job.settings, self.bench, &self.planned.passages);
        let mut comp_turns: Vec<(usize, usize)> =
            comp_items.iter().map(|&k| self.subjects[k]).collect();
        comp_turns.dedup();
        let queries = materials::negative_queries(bench, &comp_turns, &s.negatives_query)?;
        let have: HashSet<String> = passages.keys().cloned().collect();
        let (candidates, loaded) = materials::retrieve_candidates(
            self.job.retrievers.clone(),
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
            passages,
            loaded,
            s.negatives,
        );
        let (units, no_negatives, short) = self.pool_units(comp_items, &negs.by_turn);
        let mut all_passages = passages.clone();
        all_passages.extend(negs.passages);
        if defer {
            return Ok(Some(PoolWork {
                deferred: Some(Deferred::new(&units)),
                units,
                no_negatives,
                short,
                passages: all_passages,
                screened: Screened::default(),
            }));
        }
        let render = self.render(&all_passages);
        let mut screened = context::screen(units, &|u: &Unit| render.fitted(u))?;
        let units = std::mem::take(&mut screened.kept);
        Ok(Some(PoolWork {
            units,
            no_negatives,
            short,
            passages: all_passages,
            screened,
            deferred: None,
        }))
    }

    /// The pools judged.
    async fn judge_pools(&self, built: Option<PoolWork>) -> Result<Option<Pools>> {
        let Some(b) = built else {
            return Ok(None);
        };
        let render = self.render(&b.passages);
        let mut screened = b.screened;
        let mut judged = match &b.deferred {
            Some(lengths) => {
                let recording = Recording {
                    render: &render,
                    lengths,
                };
                judge_units(self.judging, &b.units, &recording, self.existing).await?
            }
            None => judge_units(self.judging, &b.units, &render, self.existing).await?,
        };
        if let Some(d) = b.deferred {
            screened.prompt_tokens = d.finish(&b.units, &|u: &Unit| render.fitted(u))?;
        }
        if let Some(rule) = &self.job.settings.letter_picks {
            crate::judges::letters::reread(&mut judged.records, rule);
        }
        Ok(Some(Pools {
            judged,
            no_negatives: b.no_negatives,
            short: b.short,
            passages: b.passages,
            screened,
        }))
    }

    /// T units per judge and item, each judge with its own permutations and its own balanced
    /// gold positions; with the items left without negatives and the short pools. A judge's
    /// units depend on its own balancer alone: each judge's are made on a thread of its own,
    /// then put in the order of making them one by one (item by item, judge by judge).
    fn pool_units(
        &self,
        comp_items: &[usize],
        by_turn: &BTreeMap<String, Vec<String>>,
    ) -> (Vec<Unit>, usize, usize) {
        let s = &self.job.settings;
        let judges = &self.planned.judges;
        let mut items: Vec<(Unit, &[String])> = Vec::with_capacity(comp_items.len());
        let mut no_negatives = 0;
        let mut short = 0;
        for &k in comp_items {
            let base = base_unit(self.bench, &self.planned.plan, k);
            let n = by_turn.get(&base.turn_id).map_or(&[][..], Vec::as_slice);
            if n.is_empty() {
                no_negatives += 1;
                continue;
            }
            short += usize::from(n.len() < s.negatives);
            items.push((base, n));
        }
        let per_judge: Vec<Vec<Vec<Unit>>> = judges
            .par_iter()
            .enumerate()
            .map(|(ji, judge)| {
                let mut balancer =
                    PositionBalancer::new(crate::seed::derive(s.seed, &["judge", &judge.name]));
                items
                    .iter()
                    .map(|(base, n)| {
                        let gold = base.passage_id.clone().unwrap_or_default();
                        let positions = balancer.assign(n.len() + 1, s.trials);
                        let key = format!("{}\u{1f}{gold}\u{1f}{}", base.turn_id, judge.name);
                        permutations(&gold, n, &positions, s.seed, &key)
                            .into_iter()
                            .map(|trial| Unit {
                                trial: Some(trial.index),
                                gold_position: Some(trial.gold_position + 1),
                                pool: Some(trial.order),
                                judge: Some(ji),
                                ..base.clone()
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut units = Vec::with_capacity(items.len() * judges.len() * s.trials);
        let mut per_judge: Vec<_> = per_judge.into_iter().map(Vec::into_iter).collect();
        for _ in 0..items.len() {
            for judge_units in &mut per_judge {
                units.extend(judge_units.next().into_iter().flatten());
            }
        }
        (units, no_negatives, short)
    }
}

/// `--dry-run`: what the audit would call, nothing written.
pub(crate) fn dry_run(llm: &Llm, judged: &Judged, j: &Judgements) -> Outcome {
    Outcome::DryRun {
        plan: llm.plan(),
        judgements: judged.records.len() - judged.reused,
        reused: judged.reused,
        time_budget: j.time_budget.clone().map(Box::new),
    }
}
