//! Stage 1, plan: the settings checked, the judges of the ensemble, the gold passages of the
//! audited dialogues, the work list ([`crate::items::selection`]), the run's fingerprint and the judges'
//! context budget. Nothing is called yet.

use std::collections::{BTreeMap, HashMap};

use mtr_core::{Benchmark, Passage};
use mtr_llm::Llm;

use crate::budget::{Gate, TimeBudget};
use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::items::materials;
use crate::items::selection::{self, AuditPlan};
use crate::job::AuditJob;
use crate::judges::context;
use crate::judges::engine::JudgeRef;
use crate::judges::prompts::ContextBudget;
use crate::summary::{FingerprintInfo, JudgeInfo};

/// What the later stages know before anything is judged.
pub(crate) struct Planned {
    pub dims: Vec<Dimension>,
    pub judges: Vec<JudgeRef>,
    pub judge_infos: Vec<JudgeInfo>,
    /// Self-consistency samples per judge (at least 1).
    pub samples: u32,
    pub dry_run: bool,
    /// The gold passages by id (the judge stage adds the hard negatives:
    /// [`crate::stages::judge::Judgements::passages`]).
    pub passages: HashMap<String, Passage>,
    pub plan: AuditPlan,
    pub fingerprint: FingerprintInfo,
    /// The judges' context: prompts are shortened to fit it.
    pub budget: Option<ContextBudget>,
    /// `--time-budget`: what may be judged, and until when.
    pub gate: Gate,
}

impl Planned {
    pub(crate) fn judge_names(&self) -> Vec<String> {
        self.judges.iter().map(|j| j.name.clone()).collect()
    }
}

/// Checks the settings, finds the judges, loads the gold passages and builds the plan; with a
/// time budget (`time`, not on a dry run) no judgement call starts after its deadline.
pub(crate) fn plan(
    bench: &Benchmark,
    job: &AuditJob,
    llm: &Llm,
    time: Option<&TimeBudget>,
) -> Result<Planned> {
    let s = &job.settings;
    s.validate()?;
    let dims = s.dimensions();
    let (judges, judge_infos) = judges_of(llm)?;
    let samples = llm.sampling(mtr_llm::Role::Judges).n.max(1);
    let dry_run = llm.options().dry_run;
    let fingerprint = fingerprint(bench, job, &dims, &judges)?;
    // passages of the golds, then the plan
    let selected = selection::sample_dialogues(bench.dialogues.len(), s.sample, s.seed);
    job.progress.stage("loading gold passages", 0);
    let passages = materials::load_passages(bench, &materials::gold_ids(bench, &selected))?;
    job.progress.finish_stage();
    let plan = selection::build_with_texts(
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
    let budget = context::budget_for(llm, &judges);
    let gate = match time {
        Some(t) if !dry_run => Gate::until(t.deadline()),
        _ => Gate::default(),
    };
    Ok(Planned {
        dims,
        judges,
        judge_infos,
        samples,
        dry_run,
        passages,
        plan,
        fingerprint,
        budget,
        gate,
    })
}

/// The data's fingerprint, and hashes of the configuration and prompts.
fn fingerprint(
    bench: &Benchmark,
    job: &AuditJob,
    dims: &[Dimension],
    judges: &[JudgeRef],
) -> Result<FingerprintInfo> {
    let data = if bench.manifest.fingerprint.is_empty() {
        bench.dir.compute_fingerprint()?
    } else {
        bench.manifest.fingerprint.clone()
    };
    let config = mtr_core::fingerprint::config_hash(&(
        &job.config_hash,
        &job.settings,
        judges
            .iter()
            .map(|j| (&j.name, &j.model))
            .collect::<Vec<_>>(),
        job.retrievers.iter().map(|r| r.name()).collect::<Vec<_>>(),
    ));
    Ok(FingerprintInfo {
        data,
        config,
        prompts: job
            .prompts
            .hash_with_human(dims, job.human_labels.is_some()),
        tool_version: job.tool_version.clone(),
        git_commit: job.git_commit.clone(),
    })
}

/// The ensemble: `[llm.roles] judges`, each a configured endpoint.
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
            family: crate::judges::family::family(&e.model, e.family.as_deref()),
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
