//! The seeded synthetic benchmark that the scale and sensitivity benchmarks share: graded
//! qrels (1-4 relevant passages per turn, grades 1-2), question-type, answerability and
//! topic-switch tags, and runs whose systems find each relevant passage with a probability that
//! grows with the system's index. Sized by the environment: SYSTEMS, TURNS,
//! TURNS_PER_DIALOGUE, DEPTH, RESAMPLES, PERMUTATIONS.

use std::time::Instant;

use mtr_bench::QuerySet;
use mtr_bench::SystemKind;
use mtr_bench::job::{Settings, SystemInput};
use mtr_core::{Dialogue, Gold, Qrels, Run, Tags, Turn};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system, all threads) of this process so far, from /proc/self/stat
/// (clock ticks of 1/100 s). On a machine shared with other jobs, wall time overstates what
/// the work costs; CPU time / 2 is what 2 idle cores would take for the parallel parts.
pub fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

const QUESTION_TYPES: [&str; 4] = ["Factoid", "Explanation", "Summarization", "Opinion"];

/// The generated benchmark, its systems' runs and the bench settings. Each benchmark reads
/// the fields it needs.
#[allow(dead_code)]
pub struct Synthetic {
    pub systems: usize,
    pub resamples: usize,
    pub permutations: usize,
    pub dialogues: Vec<Dialogue>,
    pub qrels: Qrels,
    pub set: QuerySet,
    pub inputs: Vec<SystemInput>,
    pub settings: Settings,
}

/// Generates the benchmark (seed 7) sized by the environment; prints `title` with the sizes.
pub fn from_env(title: &str) -> Synthetic {
    let systems = env("SYSTEMS", 20);
    let turns = env("TURNS", 10_000);
    let per_dialogue = env("TURNS_PER_DIALOGUE", 8);
    let depth = env("DEPTH", 100);
    let resamples = env("RESAMPLES", 1000);
    let permutations = env("PERMUTATIONS", 10_000);
    let threads = rayon::current_num_threads();
    println!(
        "{title}: {systems} systems x {turns} turns ({per_dialogue} per dialogue), depth {depth}, {resamples} bootstrap resamples, {permutations} permutations, {threads} threads"
    );

    // Seeded synthetic benchmark: graded qrels (1-4 relevant per turn, grades 1-2), tags.
    let t0 = Instant::now();
    let mut rng = StdRng::seed_from_u64(7);
    let mut dialogues = Vec::new();
    let mut qrels = Qrels::new();
    let n_dialogues = turns.div_ceil(per_dialogue);
    let mut made = 0;
    for d in 0..n_dialogues {
        let mut ts = Vec::new();
        for t in 0..per_dialogue {
            if made == turns {
                break;
            }
            made += 1;
            let qid = format!("conv{d:05}<::>{}", t + 1);
            let n_rel = rng.random_range(1..=4);
            let gold: Vec<Gold> = (0..n_rel)
                .map(|g| Gold {
                    passage_id: format!("p{d}-{t}-{g}"),
                    grade: rng.random_range(1..=2),
                })
                .collect();
            let e = qrels.entry(qid.clone()).or_default();
            for g in &gold {
                e.insert(g.passage_id.clone(), g.grade);
            }
            ts.push(Turn {
                id: qid,
                user: format!("question {t} of dialogue {d}"),
                rewrite: None,
                answer: None,
                gold,
                tags: Tags {
                    question_type: Some(
                        QUESTION_TYPES[rng.random_range(0..QUESTION_TYPES.len())].into(),
                    ),
                    answerability: Some(
                        if rng.random_bool(0.9) {
                            "answerable"
                        } else {
                            "partial"
                        }
                        .into(),
                    ),
                    topic_switch: Some(t > 0 && rng.random_bool(0.2)),
                    ..Tags::default()
                },
            });
        }
        dialogues.push(Dialogue {
            id: format!("conv{d:05}"),
            turns: ts,
            meta: Default::default(),
        });
    }
    let set = QuerySet::build(&dialogues, &qrels);

    // Runs: system s finds each relevant passage with probability q_s, at a rank that is
    // better the stronger the system; the rest of the ranking is unjudged passages.
    let mut inputs = Vec::with_capacity(systems);
    for s in 0..systems {
        let quality = 0.35 + 0.5 * s as f64 / systems.max(2) as f64;
        let mut run = Run::new();
        for q in &set.queries {
            let mut docs: Vec<String> = (0..depth).map(|j| format!("n{}-{j}", q.qid)).collect();
            for d in qrels[&q.qid].keys() {
                if rng.random_bool(quality) {
                    let max_rank = ((1.0 - quality) * depth as f64).max(2.0) as usize;
                    let r = rng.random_range(0..max_rank.min(depth));
                    docs[r] = d.clone();
                }
            }
            docs.sort();
            docs.dedup();
            docs.shuffle(&mut rng);
            let n = docs.len();
            run.insert(
                q.qid.clone(),
                docs.into_iter()
                    .enumerate()
                    .map(|(i, d)| (d, (n - i) as f64))
                    .collect(),
            );
        }
        inputs.push(SystemInput {
            name: format!("system-{s:02}"),
            kind: SystemKind::External,
            retriever: None,
            formulation: None,
            source: None,
            config_hash: String::new(),
            prompt_hash: None,
            run,
            queries: Default::default(),
        });
    }
    println!(
        "generated in {:.2} s ({} dialogues, {} scored turns)",
        t0.elapsed().as_secs_f64(),
        set.dialogues.len(),
        set.len()
    );

    let settings = Settings {
        resamples,
        permutations,
        ..Settings::default()
    };
    Synthetic {
        systems,
        resamples,
        permutations,
        dialogues,
        qrels,
        set,
        inputs,
        settings,
    }
}
