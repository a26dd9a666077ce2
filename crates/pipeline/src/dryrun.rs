//! `--dry-run`: run curation, chunking, paths and clustering (with local lexical vectors, so
//! nothing is embedded), then plan every first-attempt LLM call generation would make, with
//! prompt tokens counted on the real rendered prompts (real chunks of each dialogue's path,
//! placeholder history of typical length) and costs at the endpoints' prices. No model is
//! called. `calls.rs` plans each dialogue's calls turn by turn; `budget.rs` times them for
//! `--time-budget` (the same plan a run uses to choose the dialogues it starts).

pub(crate) mod budget;
pub(crate) mod calls;

use std::collections::BTreeMap;

use mtr_core::progress::Progress;
use mtr_llm::{Llm, PlannedEndpoint, Role};
use serde::{Deserialize, Serialize};

pub use self::budget::BudgetPlan;
use crate::config::VectorSource;
use crate::error::Result;
use crate::job::SynthJob;
use crate::prepare::{Prepared, prepare};
use crate::vectors::chunk_text;

/// Planned calls of one agent role: the endpoint they go to and what they would cost there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolePlan {
    pub endpoint: String,
    /// Its fields are written next to `endpoint`, as one object.
    #[serde(flatten)]
    pub plan: PlannedEndpoint,
}

/// The dry-run result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DryRunPlan {
    /// Documents read.
    pub documents_in: usize,
    /// Documents kept by curation.
    pub documents_kept: usize,
    /// Documents removed, per reason.
    pub removed: BTreeMap<String, usize>,
    /// Chunks made.
    pub chunks: usize,
    /// Tokens in all chunks.
    pub chunk_tokens: usize,
    /// Topic paths.
    pub paths: usize,
    /// Coarse topics.
    pub topics: usize,
    /// Dialogues planned.
    pub dialogues: usize,
    /// Turns per dialogue.
    pub turns: usize,
    /// Dialogues planned to switch topic.
    pub planned_switches: usize,
    /// Planned calls per agent role.
    pub roles: BTreeMap<String, RolePlan>,
    /// `(texts, tokens)` the embedder would embed (chunks once, plus one query per turn).
    pub embedding_texts: u64,
    /// Tokens the embedder would embed.
    pub embedding_tokens: u64,
    /// What the embedding would cost.
    pub embedding_cost_usd: f64,
    /// What the plan assumes, in words.
    pub notes: Vec<String>,
    /// With `--time-budget`: how many dialogues a run would start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetPlan>,
}

impl DryRunPlan {
    /// The expected cost of every planned call and the embedding.
    pub(crate) fn total_expected_usd(&self) -> f64 {
        self.roles
            .values()
            .map(|r| r.plan.cost_expected_usd)
            .sum::<f64>()
            + self.embedding_cost_usd
    }
    /// The most every planned call and the embedding may cost.
    pub(crate) fn total_max_usd(&self) -> f64 {
        self.roles
            .values()
            .map(|r| r.plan.cost_max_usd)
            .sum::<f64>()
            + self.embedding_cost_usd
    }

    /// A terminal table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "documents: {} read, {} kept (removed: {:?})",
            self.documents_in, self.documents_kept, self.removed
        );
        let _ = writeln!(
            o,
            "chunks:    {} ({} tokens)",
            self.chunks, self.chunk_tokens
        );
        let _ = writeln!(
            o,
            "paths:     {} topic paths, {} coarse topics",
            self.paths, self.topics
        );
        let _ = writeln!(
            o,
            "plan:      {} dialogues x {} turns, {} with a topic switch",
            self.dialogues, self.turns, self.planned_switches
        );
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<14} {:<22} {:>8} {:>7} {:>12} {:>12} {:>12} {:>12}",
            "role",
            "endpoint (model)",
            "calls",
            "cached",
            "prompt tok",
            "compl. max",
            "USD expect",
            "USD max"
        );
        for (role, r) in &self.roles {
            let _ = writeln!(
                o,
                "{:<14} {:<22} {:>8} {:>7} {:>12} {:>12} {:>12.4} {:>12.4}",
                role,
                format!("{} ({})", r.endpoint, r.plan.model),
                r.plan.calls,
                r.plan.cached,
                r.plan.prompt_tokens,
                r.plan.completion_tokens_max,
                r.plan.cost_expected_usd,
                r.plan.cost_max_usd
            );
        }
        let _ = writeln!(
            o,
            "{:<14} {:<22} {:>8} {:>7} {:>12} {:>12} {:>12.4} {:>12.4}",
            "embedder",
            "",
            self.embedding_texts,
            "",
            self.embedding_tokens,
            "",
            self.embedding_cost_usd,
            self.embedding_cost_usd
        );
        let _ = writeln!(
            o,
            "total: ${:.4} expected, ${:.4} at most (first attempts only)",
            self.total_expected_usd(),
            self.total_max_usd()
        );
        let secs: Option<f64> = self.roles.values().map(|r| r.plan.seconds_expected).sum();
        let _ = match secs {
            Some(s) => writeln!(
                o,
                "wall time: about {} (the roles' calls one after another, each over its endpoint's concurrency)",
                mtr_llm::plan::human_duration(s)
            ),
            None => writeln!(
                o,
                "wall time: unknown (set output_tokens_per_s, prompt_tokens_per_s, requests_per_minute or tokens_per_minute on the endpoints; the embedded local models: run `mtr local speed`)"
            ),
        };
        if let Some(b) = &self.budget {
            let _ = writeln!(o, "{}", b.line(mtr_llm::budget::Run::Dry));
        }
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        o
    }
}

/// Runs the preparation stages and plans the calls.
pub async fn dry_run(job: &SynthJob, llm: &Llm, progress: &dyn Progress) -> Result<DryRunPlan> {
    let started = std::time::Instant::now();
    job.config.generation.relevance.judge.check(llm)?;
    let prepared = prepare(job, Some(llm), true, progress).await?;
    let cfg = &job.config;
    let mut plan = DryRunPlan {
        documents_in: prepared.curation.input,
        documents_kept: prepared.documents,
        removed: prepared.curation.removed.clone(),
        chunks: prepared.chunks.len(),
        chunk_tokens: prepared.chunks.iter().map(|c| c.tokens).sum(),
        paths: prepared.topics.paths.len(),
        topics: prepared.topics.topics,
        dialogues: cfg.dialogues,
        turns: cfg.turns,
        ..Default::default()
    };
    plan.notes.push("costs assume every first attempt passes verification; each rejected attempt adds 2-4 calls (bounded by max_attempts)".into());
    if cfg.vectors != VectorSource::Lexical && !llm.role_endpoints(Role::Embedder).is_empty() {
        plan.notes.push("topic paths above use lexical vectors; the real run embeds the chunks, so its paths differ".into());
        let model = llm.embedding_model().unwrap_or_default();
        let ep = llm
            .role_endpoints(Role::Embedder)
            .first()
            .cloned()
            .unwrap_or_default();
        let texts = prepared.chunks.len() as u64 + (cfg.dialogues * cfg.turns) as u64;
        let tokens: u64 = prepared
            .chunks
            .iter()
            .map(|c| mtr_llm::tokens::count_text(&model, &chunk_text(c)))
            .sum::<u64>()
            + (cfg.dialogues * cfg.turns * 60) as u64;
        plan.embedding_texts = texts;
        plan.embedding_tokens = tokens;
        plan.embedding_cost_usd = llm
            .config()
            .endpoint(&ep)
            .map(|e| e.cost(tokens, 0))
            .unwrap_or(0.0);
    }
    let dialogues = plan_calls(job, llm, &prepared, &mut plan)?;
    for r in plan.roles.values_mut() {
        r.plan.seconds_expected = llm.estimate_seconds(&r.endpoint, &r.plan);
    }
    if let Some(b) = job.time_budget {
        // the preparation as this dry run measured it, and the embedding a real run adds
        let embedding = embedding_seconds(llm, &plan).unwrap_or(0.0);
        let fixed = started.elapsed().as_secs_f64() + embedding;
        let state = calls::planned_state(job, &prepared);
        let work = budget::remaining_work(&dialogues, &state, cfg.turns);
        plan.budget = Some(budget::select(&work, llm, b.as_secs_f64(), fixed));
    }
    Ok(plan)
}

/// Expected seconds of the embedding the dry run counted, at the embedder's speed.
fn embedding_seconds(llm: &Llm, plan: &DryRunPlan) -> Option<f64> {
    if plan.embedding_texts == 0 {
        return Some(0.0);
    }
    let ep = llm.role_endpoints(Role::Embedder).first().cloned()?;
    let p = PlannedEndpoint {
        calls: plan.embedding_texts,
        prompt_tokens: plan.embedding_tokens,
        ..Default::default()
    };
    llm.estimate_seconds(&ep, &p)
}

/// Adds the planned calls of every dialogue to the plan's roles, and returns them.
fn plan_calls(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    plan: &mut DryRunPlan,
) -> Result<Vec<calls::DialogueCalls>> {
    let state = calls::planned_state(job, prepared);
    plan.planned_switches = state
        .dialogues
        .iter()
        .filter(|d| d.switch_at.is_some())
        .count();
    let dialogues = calls::plan_dialogues(job, llm, prepared, &state)?;
    let personas = calls::persona_calls(job, llm, prepared)?;
    for c in dialogues.iter().flatten().flatten().chain(&personas) {
        let r = plan.roles.entry(c.role.to_string()).or_default();
        r.endpoint = c.endpoint.clone();
        r.plan.add(&c.plan);
        r.plan.model = c.plan.model.clone();
    }
    Ok(dialogues)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_plan_is_one_object_with_its_endpoint_first() {
        let r = RolePlan {
            endpoint: "judge".into(),
            plan: PlannedEndpoint {
                model: "m".into(),
                calls: 2,
                prompt_tokens: 30,
                completion_tokens_max: 8,
                completion_tokens_expected: 4,
                cost_expected_usd: 0.25,
                cost_max_usd: 0.5,
                ..Default::default()
            },
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"endpoint":"judge","model":"m","calls":2,"cached":0,"prompt_tokens":30,"completion_tokens_max":8,"completion_tokens_expected":4,"cost_expected_usd":0.25,"cost_max_usd":0.5}"#
        );
        assert_eq!(serde_json::from_str::<RolePlan>(&json).unwrap(), r);
    }
}
