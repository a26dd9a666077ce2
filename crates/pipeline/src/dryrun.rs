//! `--dry-run`: run curation, chunking, paths and clustering (with local lexical vectors, so
//! nothing is embedded), then plan every first-attempt LLM call generation would make, with
//! prompt tokens counted on the real rendered prompts (real chunks of each dialogue's path,
//! placeholder history of typical length) and costs at the endpoints' prices. No model is
//! called.

use std::collections::{BTreeMap, HashMap};

use mtr_core::progress::Progress;
use mtr_llm::{ChatRequest, Llm, OutputSpec, PlannedEndpoint, Role};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agents::{PromptPassage, Utter};
use crate::config::VectorSource;
use crate::error::Result;
use crate::generate::{Material, initial_state};
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
    pub documents_in: usize,
    pub documents_kept: usize,
    pub removed: BTreeMap<String, usize>,
    pub chunks: usize,
    pub chunk_tokens: usize,
    pub paths: usize,
    pub topics: usize,
    pub dialogues: usize,
    pub turns: usize,
    pub planned_switches: usize,
    pub roles: BTreeMap<String, RolePlan>,
    /// `(texts, tokens)` the embedder would embed (chunks once, plus one query per turn).
    pub embedding_texts: u64,
    pub embedding_tokens: u64,
    pub embedding_cost_usd: f64,
    pub notes: Vec<String>,
}

impl DryRunPlan {
    pub fn total_expected_usd(&self) -> f64 {
        self.roles
            .values()
            .map(|r| r.plan.cost_expected_usd)
            .sum::<f64>()
            + self.embedding_cost_usd
    }
    pub fn total_max_usd(&self) -> f64 {
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
                "wall time: unknown (set output_tokens_per_s, prompt_tokens_per_s, requests_per_minute or tokens_per_minute on the endpoints)"
            ),
        };
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        o
    }
}

/// Runs the preparation stages and plans the calls.
pub async fn dry_run(job: &SynthJob, llm: &Llm, progress: &dyn Progress) -> Result<DryRunPlan> {
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
    plan_calls(job, llm, &prepared, &mut plan)?;
    for r in plan.roles.values_mut() {
        r.plan.seconds_expected = llm.estimate_seconds(&r.endpoint, &r.plan);
    }
    Ok(plan)
}

fn placeholder(lang_cjk: bool, n: usize) -> Vec<Utter> {
    let (q, a) = if lang_cjk {
        (
            "那这个规定适用于试用期的员工吗？",
            "适用。试用期员工同样适用这一规定，但需要提前三个工作日在系统中提交申请，并由直属主管审批。",
        )
    } else {
        (
            "And does that also apply to people who are still in their probation period?",
            "Yes. Employees in their probation period are covered as well, but they need to submit the request three working days in advance and have it approved by their line manager.",
        )
    };
    (0..n)
        .flat_map(|_| {
            [
                Utter {
                    speaker: "user".into(),
                    text: q.into(),
                },
                Utter {
                    speaker: "agent".into(),
                    text: a.into(),
                },
            ]
        })
        .collect()
}

fn plan_calls(job: &SynthJob, llm: &Llm, prepared: &Prepared, plan: &mut DryRunPlan) -> Result<()> {
    let cfg = &job.config;
    let g = &cfg.generation;
    let p = &job.prompts;
    let by_id: HashMap<String, u32> = HashMap::new();
    let material = Material {
        chunks: &prepared.chunks,
        by_id: &by_id,
        paths: &prepared.topics.paths,
        path_topics: &prepared.topics.path_topics,
    };
    let state = initial_state(
        String::new(),
        &material,
        cfg.dialogues,
        cfg.turns,
        g.switch_share,
        cfg.seed,
    );
    plan.planned_switches = state
        .dialogues
        .iter()
        .filter(|d| d.switch_at.is_some())
        .count();
    let gen_ep = llm
        .role_endpoints(Role::Generator)
        .first()
        .cloned()
        .unwrap_or_default();
    let verifier = g
        .verifier
        .clone()
        .or_else(|| llm.judges().first().cloned())
        .unwrap_or_default();
    let mut gen_sampling = llm.sampling(Role::Generator).clone();
    gen_sampling.max_tokens = Some(
        gen_sampling
            .max_tokens
            .map_or(g.max_tokens, |m| m.min(g.max_tokens)),
    );
    let language = prepared.language.name();
    let cjk = prepared.language.is_cjk();
    let passage = |c: u32| PromptPassage::of(&prepared.chunks[c as usize]);
    let mut add = |role: &str, ep: &str, req: ChatRequest| -> Result<()> {
        let e: PlannedEndpoint = llm.estimate(ep, &req)?;
        let r = plan.roles.entry(role.to_string()).or_default();
        r.endpoint = ep.to_string();
        r.plan.add(&e);
        r.plan.model = e.model;
        Ok(())
    };
    let justify = crate::agents::judges_justify(llm, &verifier);
    for d in &state.dialogues {
        let mut path_idx = d.path;
        let mut pos = 0usize;
        for layer in 0..cfg.turns {
            if d.switch_at == Some(layer)
                && let Some(sp) = d.switch_path
            {
                path_idx = sp;
                pos = 0;
            }
            let path = &prepared.topics.paths[path_idx];
            let offered: Vec<u32> = (0..g.offer.min(path.len()))
                .map(|i| path[(pos + i) % path.len()])
                .collect();
            pos += 1;
            let passages: Vec<PromptPassage> = offered.iter().map(|&c| passage(c)).collect();
            let history = placeholder(cjk, layer.min(g.history_turns));
            let asked: Vec<String> = history
                .iter()
                .filter(|u| u.speaker == "user")
                .map(|u| u.text.clone())
                .collect();
            let question = history
                .first()
                .map(|u| u.text.clone())
                .unwrap_or_else(|| "How many days of annual leave do new employees get?".into());
            let ctx = json!({"language": language, "history": history, "asked": asked, "passages": passages, "first": layer == 0, "switch": false, "feedback": null});
            add(
                "user",
                &gen_ep,
                p.user_for(&prepared.language)
                    .request(&ctx, OutputSpec::Json)?
                    .with_sampling(gen_sampling.clone())
                    .with_sample(0),
            )?;
            if layer > 0 && g.humanizer.enabled {
                let ctx = json!({"language": language, "history": history, "question": question, "switch": false});
                add(
                    "humanizer",
                    &gen_ep,
                    p.humanize
                        .request(&ctx, OutputSpec::Text)?
                        .with_sampling(gen_sampling.clone()),
                )?;
            }
            let ev = &passages[0];
            let ctx = json!({"history": history, "question": question, "passage": ev, "justify": justify});
            add(
                "answerability",
                &verifier,
                p.answerability.request(
                    &ctx,
                    OutputSpec::Schema(crate::agents::answerability_schema(justify)),
                )?,
            )?;
            if g.uniqueness.enabled {
                let cands: Vec<PromptPassage> = (1..=g.uniqueness.judge_candidates)
                    .map(|i| passage(path[(pos + i) % path.len()]))
                    .collect();
                let ctx = json!({"history": history, "question": question, "reference": ev, "candidates": cands, "justify": justify});
                add(
                    "uniqueness",
                    &verifier,
                    p.uniqueness.request(
                        &ctx,
                        OutputSpec::Schema(crate::agents::uniqueness_schema(cands.len(), justify)),
                    )?,
                )?;
            }
            let answer = history.get(1).map(|u| u.text.clone()).unwrap_or_default();
            let ctx = json!({"language": language, "passage": ev, "history": history, "question": question});
            add(
                "answerer",
                &gen_ep,
                p.answer
                    .request(&ctx, OutputSpec::Text)?
                    .with_sampling(gen_sampling.clone())
                    .with_sample(0),
            )?;
            let ctx = json!({"history": history, "question": question, "passage": ev, "answer": answer, "justify": justify});
            add(
                "faithfulness",
                &verifier,
                p.faithfulness.request(
                    &ctx,
                    OutputSpec::Schema(crate::agents::score_schema("faithfulness", justify)),
                )?,
            )?;
        }
    }
    Ok(())
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
