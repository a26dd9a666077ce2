//! Breadth-first dialogue generation: turns are started lowest layer first (turn t of every
//! dialogue before turn t+1 of any, whenever both are ready), so that all dialogues grow
//! together; there is no barrier between layers, so a dialogue whose turn t is done goes on to
//! t+1 while slower ones finish, and the generator endpoint always has work from many
//! conversations. The checkpoint holds every dialogue's state after its last finished turn.
//!
//! One turn of one dialogue: the user agent is offered the least-used chunks of the
//! dialogue's topic path and asks about one of them; later questions go through the
//! humanizer (kept only if its guards pass); the verifier checks (a) answerability of the
//! question from its evidence, (b) uniqueness against the whole corpus: the history-aware
//! query retrieves the best other chunks and a judge grades whether each answers the question
//! too: a few partial or full answers become extra graded golds, too many mean the question is
//! too generic and it is regenerated; then the answerer writes an answer from the evidence
//! alone and (c) its faithfulness is checked. A failed check regenerates (bounded attempts,
//! with the reason fed back to the user agent); a turn that never passes is dropped and its
//! reasons are counted, never written as a placeholder. Topic switches happen at a seeded turn
//! in a fixed share of dialogues: the dialogue moves to a path of another coarse topic and the
//! next accepted turn is tagged `topic_switch`.
//!
//! Every step is a pure function of the dialogue's state, the seed and the (cached) LLM
//! answers, so a killed run that restarts from the last checkpoint replays the interrupted
//! turns from the cache without paying for any call twice, and the output does not depend on
//! the order in which dialogues' turns finish.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::path::Path;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mtr_core::progress::Progress;
use mtr_core::{Gold, Tags, Turn};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::agents::{
    Agents, CallLog, PromptPassage, Utter, in_language, question_problem, quote_supported,
    says_not_found, standalone_problem,
};
use crate::chunk::Chunk;
use crate::config::GenerationOptions;
use crate::error::Result;
use crate::search::CorpusSearch;

/// An accepted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// The layer (0-based planned turn) that produced it.
    pub layer: usize,
    /// The question as it appears in the benchmark (humanized when that passed its guards).
    pub question: String,
    /// The user agent's question before humanizing, when it was humanized.
    pub original: Option<String>,
    /// The user agent's standalone version (becomes the turn's `rewrite`).
    pub standalone: String,
    pub answer: String,
    /// Evidence chunk id (grade 2).
    pub evidence: String,
    /// Other chunks the uniqueness judge found answering: `(id, grade)`.
    pub extra_golds: Vec<(String, i32)>,
    pub topic_switch: bool,
    pub topic: usize,
    pub path: usize,
    pub answerability: i64,
    pub faithfulness: i64,
    /// Question attempts used (1 = first try).
    pub attempts: u32,
}

/// The state of one dialogue between layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogueState {
    pub index: usize,
    pub id: String,
    /// The path the dialogue currently draws from.
    pub path: usize,
    pub start_path: usize,
    /// How many dialogues before this one draw from its current path (when there are more
    /// dialogues than paths): it rotates the chunks offered and the sample indices, so that
    /// dialogues sharing a path do not repeat each other.
    pub round: usize,
    /// Layer at which the topic switch happens, and the path it moves to.
    pub switch_at: Option<usize>,
    pub switch_path: Option<usize>,
    /// The `round` on the switch path: the dialogues before this one that start on it or
    /// switch to it. Without it, a dialogue that switched to another's start path (or whose
    /// first turns were dropped) was offered the same chunks with the same sample index as
    /// that one's first turn, and asked the identical question (two pairs of identical
    /// Chinese turns in a main-job run of 11 dialogues over 9 paths).
    #[serde(default)]
    pub switch_round: usize,
    /// The switch happened but no turn has been accepted since.
    pub pending_switch: bool,
    /// Chunk index -> times used (accepted evidence, or the last evidence of a dropped turn).
    pub used: BTreeMap<u32, u32>,
    pub turns: Vec<TurnRecord>,
    /// `stage/reason` -> count, e.g. `answerability/low_score`, `dropped/uniqueness`.
    pub events: BTreeMap<String, u64>,
    pub log: CallLog,
    /// Planned turns (layers) finished, accepted or dropped.
    #[serde(default)]
    pub layers_done: usize,
}

/// The checkpoint: every dialogue's state after its last finished turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenState {
    pub fingerprint: String,
    /// Layers every dialogue has finished (the smallest of the dialogues' counts).
    pub layers_done: usize,
    pub dialogues: Vec<DialogueState>,
}

/// What dialogues are generated from.
pub struct Material<'a> {
    pub chunks: &'a [Chunk],
    /// Chunk id -> index into `chunks`.
    pub by_id: &'a std::collections::HashMap<String, u32>,
    pub paths: &'a [Vec<u32>],
    pub path_topics: &'a [usize],
}

/// Path assignment and topic-switch schedule for `n` dialogues of `turns` turns.
pub fn initial_state(
    fingerprint: String,
    m: &Material<'_>,
    n: usize,
    turns: usize,
    switch_share: f64,
    seed: u64,
) -> GenState {
    let p = m.paths.len();
    let mut order: Vec<usize> = (0..p).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x7061_7468));
    let mut who: Vec<usize> = (0..n).collect();
    who.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x7377_6974));
    let n_switch = ((switch_share * n as f64).round() as usize).min(n);
    let mut switching = vec![false; n];
    for &i in &who[..n_switch] {
        switching[i] = true;
    }
    let start_paths: std::collections::BTreeSet<usize> = (0..n.min(p)).map(|i| order[i]).collect();
    // dialogues drawing from each path so far: all that start on it, then the ones that switch
    // to it, in index order
    let mut visitors = vec![0usize; p];
    for i in 0..n {
        if let Some(v) = order.get(i % p.max(1)).and_then(|&q| visitors.get_mut(q)) {
            *v += 1;
        }
    }
    let dialogues = (0..n)
        .map(|i| {
            let path = order[i % p.max(1)];
            let mut rng =
                StdRng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let (mut switch_at, mut switch_path) = (None, None);
            if switching[i] && turns >= 2 && p >= 2 {
                switch_at = Some(rng.random_range(1..turns));
                let topic = m.path_topics[path];
                let other_topic: Vec<usize> =
                    (0..p).filter(|&q| m.path_topics[q] != topic).collect();
                let pool: Vec<usize> = if other_topic.is_empty() {
                    (0..p).filter(|&q| q != path).collect()
                } else {
                    other_topic
                };
                let fresh: Vec<usize> = pool
                    .iter()
                    .copied()
                    .filter(|q| !start_paths.contains(q))
                    .collect();
                let pick_from = if fresh.is_empty() { &pool } else { &fresh };
                switch_path = Some(pick_from[rng.random_range(0..pick_from.len())]);
            }
            let switch_round = match switch_path.and_then(|q| visitors.get_mut(q)) {
                Some(v) => {
                    *v += 1;
                    *v - 1
                }
                None => 0,
            };
            DialogueState {
                index: i,
                id: format!("synth-{:05}", i + 1),
                path,
                start_path: path,
                round: i / p.max(1),
                switch_at,
                switch_path,
                switch_round,
                pending_switch: false,
                used: BTreeMap::new(),
                turns: Vec::new(),
                events: BTreeMap::new(),
                log: CallLog::default(),
                layers_done: 0,
            }
        })
        .collect();
    GenState {
        fingerprint,
        layers_done: 0,
        dialogues,
    }
}

/// Generates layers until `turns`, checkpointing into `state_path` after each.
pub struct Generator<'a> {
    pub agents: Agents<'a>,
    pub search: Option<&'a CorpusSearch>,
    pub material: Material<'a>,
    pub opts: &'a GenerationOptions,
    pub progress: &'a dyn Progress,
    pub concurrency: usize,
}

/// How generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Complete,
    /// The `--max-cost` budget stopped it after this many layers (state saved).
    BudgetStopped {
        layers_done: usize,
    },
}

impl Generator<'_> {
    /// Generates every dialogue up to `turns` turns. Work is scheduled breadth-first (of the
    /// turns ready to start, the lowest layer goes first, then the lowest dialogue index), but
    /// without a barrier between layers: dialogue d's turn t+1 starts as soon as its turn t is
    /// done and a slot is free, so one slow dialogue never idles the generator endpoint. The
    /// checkpoint holds each dialogue's state after its last finished turn; it is written at
    /// most every [`CHECKPOINT_EVERY`] and when generation stops. Each dialogue's turns depend
    /// only on that dialogue's state, the seed and the (cached) LLM answers, so the result does
    /// not depend on the order in which turns finish.
    pub async fn run(
        &self,
        state: &mut GenState,
        turns: usize,
        state_path: &Path,
    ) -> Result<Finish> {
        let remaining: usize = state
            .dialogues
            .iter()
            .map(|d| turns.saturating_sub(d.layers_done))
            .sum();
        self.progress.stage(
            &format!("synth {} dialogues x {turns} turns", state.dialogues.len()),
            remaining as u64,
        );
        let mut ready: BinaryHeap<Reverse<(usize, usize)>> = state
            .dialogues
            .iter()
            .enumerate()
            .filter(|(_, d)| d.layers_done < turns)
            .map(|(i, d)| Reverse((d.layers_done, i)))
            .collect();
        let mut running = FuturesUnordered::new();
        let mut last_save = std::time::Instant::now();
        let mut stop: Option<crate::Error> = None;
        loop {
            while stop.is_none() && running.len() < self.concurrency.max(1) {
                let Some(Reverse((layer, i))) = ready.pop() else {
                    break;
                };
                let d = state.dialogues[i].clone();
                // a dialogue's calls stay on one server slot, which keeps its prefix cached
                let conversation = d.id.clone();
                running.push(async move {
                    let turn = self.advance(d, layer);
                    (i, mtr_llm::affinity::scope(conversation, turn).await)
                });
            }
            let Some((i, outcome)) = running.next().await else {
                break;
            };
            match outcome {
                Ok(mut d) => {
                    d.layers_done += 1;
                    if d.layers_done < turns {
                        ready.push(Reverse((d.layers_done, i)));
                    }
                    state.dialogues[i] = d;
                }
                Err(e) => {
                    // stop scheduling; turns in flight are abandoned (their calls are cached)
                    stop.get_or_insert(e);
                    break;
                }
            }
            if last_save.elapsed() >= CHECKPOINT_EVERY {
                state.layers_done = min_layers(state);
                save_state(state_path, state)?;
                last_save = std::time::Instant::now();
            }
        }
        drop(running);
        self.progress.finish_stage();
        state.layers_done = min_layers(state);
        save_state(state_path, state)?;
        match stop {
            None => Ok(Finish::Complete),
            Some(e) if e.is_budget_stop() => Ok(Finish::BudgetStopped {
                layers_done: state.layers_done,
            }),
            Some(e) => Err(e),
        }
    }

    fn passage(&self, c: u32) -> PromptPassage {
        PromptPassage::of(&self.material.chunks[c as usize])
    }

    /// The `offer` least-used chunks of the current path, in path order (rotated by the
    /// dialogue's round on a shared path).
    fn offered(&self, st: &DialogueState) -> Vec<u32> {
        let path = &self.material.paths[st.path];
        let shift = (st.round * self.opts.offer) % path.len().max(1);
        let mut ranked: Vec<(u32, usize, u32)> = path
            .iter()
            .enumerate()
            .map(|(pos, &c)| {
                (
                    st.used.get(&c).copied().unwrap_or(0),
                    (pos + path.len() - shift) % path.len(),
                    c,
                )
            })
            .collect();
        ranked.sort();
        let mut chosen: Vec<(usize, u32)> = ranked
            .into_iter()
            .take(self.opts.offer)
            .map(|(_, pos, c)| (pos, c))
            .collect();
        chosen.sort();
        chosen.into_iter().map(|(_, c)| c).collect()
    }

    /// Generates turn `layer` of one dialogue.
    async fn advance(&self, mut st: DialogueState, layer: usize) -> Result<DialogueState> {
        if st.switch_at == Some(layer)
            && let Some(p) = st.switch_path
        {
            st.path = p;
            st.round = st.switch_round;
            st.pending_switch = true;
        }
        let outcome = self.turn(&mut st, layer).await;
        self.progress.advance(1);
        outcome?;
        Ok(st)
    }

    async fn turn(&self, st: &mut DialogueState, layer: usize) -> Result<()> {
        let o = self.opts;
        let keep = o.history_turns.min(st.turns.len());
        let recent = &st.turns[st.turns.len() - keep..];
        let history: Vec<Utter> = recent
            .iter()
            .flat_map(|t| {
                [
                    Utter {
                        speaker: "user".into(),
                        text: t.question.clone(),
                    },
                    Utter {
                        speaker: "agent".into(),
                        text: t.answer.clone(),
                    },
                ]
            })
            .collect();
        let core_history: Vec<Turn> = st
            .turns
            .iter()
            .map(|t| to_core_turn(&st.id, 0, t))
            .collect();
        let asked: Vec<String> = st.turns.iter().map(|t| t.question.clone()).collect();
        let offered = self.offered(st);
        let passages: Vec<PromptPassage> = offered.iter().map(|&c| self.passage(c)).collect();
        let first = st.turns.is_empty();
        let switch = st.pending_switch && !first;
        let topic = self.material.path_topics[st.path];
        // why the last attempt was rejected, as a reason code the user prompt words
        let mut feedback: Option<&'static str> = None;
        let mut last_reason = "user";
        let mut last_evidence: Option<u32> = None;
        let mut log = std::mem::take(&mut st.log);
        let ev =
            |st: &mut DialogueState, k: &str| *st.events.entry(k.to_string()).or_default() += 1;

        for attempt in 0..o.max_attempts {
            let sample = (st.round * o.max_attempts + attempt) as u32;
            let Some(p) = self
                .agents
                .user(
                    &history, &asked, &passages, first, switch, feedback, sample, &mut log,
                )
                .await?
            else {
                ev(st, "user/parse_failed");
                last_reason = "user";
                continue;
            };
            let evidence = offered[p.passage];
            last_evidence = Some(evidence);
            if !in_language(&p.question, self.agents.language) {
                ev(st, "user/wrong_language");
                last_reason = "user";
                feedback = Some("wrong_language");
                continue;
            }
            let norm = |s: &str| {
                s.to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
            };
            if asked.iter().any(|q| norm(q) == norm(&p.question)) {
                ev(st, "user/repeated_question");
                last_reason = "user";
                feedback = Some("repeated_question");
                continue;
            }
            // a reworded repeat: the question or its rewrite nearly duplicates an earlier
            // turn's question, original question or rewrite
            if [&p.question, &p.standalone].iter().any(|t| {
                o.repetition
                    .repeats(t, earlier_questions(&st.turns))
                    .is_some()
            }) || o
                .repetition
                .restates(&p.standalone, earlier_questions(&st.turns))
                .is_some()
            {
                ev(st, "user/near_duplicate");
                last_reason = "near_duplicate";
                feedback = Some("near_duplicate");
                continue;
            }
            if let Some(problem) = question_problem(
                &p.question,
                &p.standalone,
                &passages[p.passage].text,
                self.agents.language,
                &o.humanizer.meta_phrases,
            ) {
                ev(st, &format!("user/{problem}"));
                last_reason = "user";
                feedback = Some(problem);
                continue;
            }
            // the standalone version becomes the turn's rewrite only if it passes the same
            // guards, except the copy check (a pasted passage sentence still fails: it asks
            // nothing)
            let standalone = match standalone_problem(
                &p.standalone,
                self.agents.language,
                &o.humanizer.meta_phrases,
            ) {
                None => p.standalone.clone(),
                Some(problem) => {
                    ev(st, "user/standalone_dropped");
                    ev(st, &format!("user/standalone_{problem}"));
                    String::new()
                }
            };
            let mut question = p.question.clone();
            let mut original = None;
            if o.humanizer.enabled && !first {
                match self
                    .agents
                    .humanize(&history, &p.question, switch, &mut log)
                    .await?
                {
                    Some(Ok(h))
                        if o.repetition
                            .repeats(&h, earlier_questions(&st.turns))
                            .is_some() =>
                    {
                        ev(st, "humanizer/kept_original_near_duplicate")
                    }
                    Some(Ok(h)) => {
                        ev(st, "humanizer/rewritten");
                        original = Some(std::mem::replace(&mut question, h));
                    }
                    Some(Err(guard)) => {
                        ev(st, &format!("humanizer/kept_original_{}", guard.name()))
                    }
                    None => ev(st, "humanizer/parse_failed"),
                }
            }
            let evidence_passage = &passages[p.passage];
            let answerability = match self
                .agents
                .answerability(&history, &question, evidence_passage, &mut log)
                .await?
            {
                None => {
                    ev(st, "answerability/judge_failed");
                    last_reason = "answerability";
                    continue;
                }
                Some((s, _)) if s < o.min_answerability => {
                    ev(st, "answerability/low_score");
                    last_reason = "answerability";
                    feedback = Some("not_answerable");
                    continue;
                }
                // a high score must point at the sentence that answers: a judge that cannot
                // quote it from the passage has not found the answer there
                Some((_, quote)) if !quote_supported(&quote, &evidence_passage.text) => {
                    ev(st, "answerability/unsupported_quote");
                    last_reason = "answerability";
                    feedback = Some("not_answerable");
                    continue;
                }
                Some((s, _)) => s,
            };
            let evidence_id = self.material.chunks[evidence as usize].id.clone();
            let mut extra_golds = Vec::new();
            if let (true, Some(search)) = (o.uniqueness.enabled, self.search) {
                let query = search.query_text(&core_history, &question)?;
                let hits = search
                    .search(
                        &query,
                        o.uniqueness.retrieve_k,
                        std::slice::from_ref(&evidence_id),
                    )
                    .await?;
                let cands: Vec<(String, PromptPassage)> = hits
                    .into_iter()
                    .filter_map(|h| {
                        self.material
                            .by_id
                            .get(&h.id)
                            .map(|&c| (h.id, self.passage(c)))
                    })
                    .take(o.uniqueness.judge_candidates)
                    .collect();
                if !cands.is_empty() {
                    let shown: Vec<PromptPassage> = cands.iter().map(|(_, p)| p.clone()).collect();
                    let Some(grades) = self
                        .agents
                        .uniqueness(&history, &question, evidence_passage, &shown, &mut log)
                        .await?
                    else {
                        ev(st, "uniqueness/judge_failed");
                        last_reason = "uniqueness";
                        continue;
                    };
                    // a grade counts only with a quote found in that candidate
                    let grades: Vec<i64> = grades
                        .into_iter()
                        .zip(&shown)
                        .map(|((g, quote), cand)| {
                            if g >= 1 && !quote_supported(&quote, &cand.text) {
                                ev(st, "uniqueness/unsupported_grade");
                                0
                            } else {
                                g
                            }
                        })
                        .collect();
                    let full = grades.iter().filter(|&&g| g == 2).count();
                    let any = grades.iter().filter(|&&g| g >= 1).count();
                    if full > o.uniqueness.max_full || any > o.uniqueness.max_extra_golds {
                        ev(st, "uniqueness/not_unique");
                        last_reason = "uniqueness";
                        feedback = Some("not_unique");
                        continue;
                    }
                    for ((id, _), g) in cands.iter().zip(&grades) {
                        if *g >= 1 {
                            extra_golds.push((id.clone(), *g as i32));
                            ev(st, "uniqueness/extra_gold_added");
                        }
                    }
                    if any == 0 {
                        ev(st, "uniqueness/unique");
                    }
                }
            }
            let mut accepted = None;
            let mut repeated_answer = false;
            let mut not_found = false;
            for a in 0..o.answer_attempts {
                let sample = (st.round * o.answer_attempts + a) as u32;
                let Some(answer) = self
                    .agents
                    .answer(evidence_passage, &history, &question, sample, &mut log)
                    .await?
                else {
                    ev(st, "answerer/parse_failed");
                    continue;
                };
                if !in_language(&answer, self.agents.language) {
                    ev(st, "answerer/wrong_language");
                    continue;
                }
                // the answerer found no answer in the evidence: the question does not fit it,
                // and another answer would not change that
                if says_not_found(&answer) {
                    ev(st, "answerer/not_found");
                    not_found = true;
                    break;
                }
                // an answer that asks the question back answers nothing (a main-job run kept
                // "节假日加班是否需要事先经部门负责人批准？" as the answer to itself, with a
                // faithfulness of 4); a yes/no answer may restate the question, so only an
                // answer that is itself a question counts
                if answer.trim_end().ends_with(['?', '？'])
                    && o.repetition
                        .repeats(&answer, [question.as_str(), p.standalone.as_str()])
                        .is_some()
                {
                    ev(st, "answerer/echoed_question");
                    continue;
                }
                if o.repetition
                    .repeats(&answer, st.turns.iter().map(|t| t.answer.as_str()))
                    .is_some()
                {
                    ev(st, "answerer/near_duplicate");
                    repeated_answer = true;
                    continue;
                }
                match self
                    .agents
                    .faithfulness(&history, &question, evidence_passage, &answer, &mut log)
                    .await?
                {
                    None => ev(st, "faithfulness/judge_failed"),
                    Some(s) if s < o.min_faithfulness => ev(st, "faithfulness/low_score"),
                    Some(s) => {
                        accepted = Some((answer, s));
                        break;
                    }
                }
            }
            let Some((answer, faithfulness)) = accepted else {
                last_reason = "faithfulness";
                if not_found {
                    last_reason = "answerability";
                    feedback = Some("not_answerable");
                }
                if repeated_answer {
                    // the evidence only yields an answer already given: ask about another fact
                    last_reason = "near_duplicate";
                    feedback = Some("repeated_answer");
                }
                continue;
            };
            *st.used.entry(evidence).or_default() += 1;
            let topic_switch = st.pending_switch && !first;
            st.pending_switch = false;
            st.turns.push(TurnRecord {
                layer,
                question,
                original,
                standalone,
                answer,
                evidence: evidence_id,
                extra_golds,
                topic_switch,
                topic,
                path: st.path,
                answerability,
                faithfulness,
                attempts: attempt as u32 + 1,
            });
            ev(st, "turn/accepted");
            st.log = log;
            return Ok(());
        }
        if let Some(c) = last_evidence {
            *st.used.entry(c).or_default() += 1;
        }
        ev(st, &format!("dropped/{last_reason}"));
        st.log = log;
        Ok(())
    }
}

/// Every earlier question of a dialogue as asked, before humanizing, and as rewritten.
fn earlier_questions(turns: &[TurnRecord]) -> impl Iterator<Item = &str> {
    turns.iter().flat_map(|t| {
        [Some(&t.question), t.original.as_ref(), Some(&t.standalone)]
            .into_iter()
            .flatten()
            .map(String::as_str)
    })
}

/// The benchmark turn of an accepted record.
pub fn to_core_turn(dialogue_id: &str, n: usize, t: &TurnRecord) -> Turn {
    let mut gold = vec![Gold {
        passage_id: t.evidence.clone(),
        grade: 2,
    }];
    gold.extend(t.extra_golds.iter().map(|(id, g)| Gold {
        passage_id: id.clone(),
        grade: *g,
    }));
    let mut extra = BTreeMap::new();
    extra.insert(
        "evidence".to_string(),
        serde_json::Value::from(t.evidence.clone()),
    );
    extra.insert(
        "humanized".to_string(),
        serde_json::Value::from(t.original.is_some()),
    );
    if let Some(o) = &t.original {
        extra.insert(
            "original_question".to_string(),
            serde_json::Value::from(o.clone()),
        );
    }
    extra.insert(
        "faithfulness_score".to_string(),
        serde_json::Value::from(t.faithfulness),
    );
    extra.insert("attempts".to_string(), serde_json::Value::from(t.attempts));
    Turn {
        id: format!("{dialogue_id}::{n}"),
        user: t.question.clone(),
        rewrite: (!t.standalone.is_empty()).then(|| t.standalone.clone()),
        answer: Some(t.answer.clone()),
        gold,
        tags: Tags {
            question_type: None,
            multi_turn_type: Some(
                if n <= 1 {
                    "first"
                } else if t.topic_switch {
                    "topic_switch"
                } else {
                    "follow_up"
                }
                .to_string(),
            ),
            answerability: Some("answerable".into()),
            topic_switch: Some(t.topic_switch),
            topic: Some(format!("topic-{}", t.topic)),
            extra,
        },
    }
}

/// How often, at most, the checkpoint is rewritten while turns finish.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The number of layers every dialogue has finished.
fn min_layers(state: &GenState) -> usize {
    state
        .dialogues
        .iter()
        .map(|d| d.layers_done)
        .min()
        .unwrap_or(0)
}

/// Writes the checkpoint atomically.
pub fn save_state(path: &Path, state: &GenState) -> Result<()> {
    let bytes =
        serde_json::to_vec(state).map_err(|e| crate::Error::Internal(format!("state: {e}")))?;
    mtr_core::atomic::write_atomic(path, &bytes)?;
    Ok(())
}

/// Reads a checkpoint if it exists and belongs to `fingerprint`.
pub fn load_state(path: &Path, fingerprint: &str) -> Result<Option<GenState>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = mtr_core::jsonl::read_text(path)?;
    match serde_json::from_str::<GenState>(&text) {
        Ok(mut s) if s.fingerprint == fingerprint => {
            // checkpoints written before turns were scheduled per dialogue carry one layer
            // count for all
            for d in &mut s.dialogues {
                d.layers_done = d.layers_done.max(s.layers_done);
            }
            Ok(Some(s))
        }
        Ok(_) => {
            tracing::info!(
                "{}: checkpoint of other settings; generation starts over (cached calls are replayed free)",
                path.display()
            );
            Ok(None)
        }
        Err(e) => {
            tracing::warn!(
                "{}: unreadable checkpoint ({e}); generation starts over",
                path.display()
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogues_that_share_a_path_draw_from_it_in_different_rounds() {
        let chunks = Vec::new();
        let by_id = std::collections::HashMap::new();
        let paths: Vec<Vec<u32>> = (0..3u32).map(|p| (4 * p..4 * p + 4).collect()).collect();
        let m = Material {
            chunks: &chunks,
            by_id: &by_id,
            paths: &paths,
            path_topics: &[0, 1, 2],
        };
        // more dialogues than paths, every one switching: every switch path is also some
        // dialogue's start path
        let state = initial_state("fp".into(), &m, 5, 2, 1.0, 7);
        let mut seen = std::collections::BTreeSet::new();
        for d in &state.dialogues {
            assert!(seen.insert((d.start_path, d.round)), "{d:?}");
        }
        for d in &state.dialogues {
            let q = d.switch_path.unwrap();
            assert!(
                seen.insert((q, d.switch_round)),
                "{} switches to path {q} in a round another dialogue draws from it: {:?}",
                d.id,
                state
                    .dialogues
                    .iter()
                    .map(|d| (d.start_path, d.round, d.switch_path, d.switch_round))
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_checkpoint_with_one_layer_count_gives_it_to_every_dialogue() {
        let chunks = Vec::new();
        let by_id = std::collections::HashMap::new();
        let paths = vec![vec![0u32], vec![1u32]];
        let m = Material {
            chunks: &chunks,
            by_id: &by_id,
            paths: &paths,
            path_topics: &[0, 1],
        };
        let mut state = initial_state("fp".into(), &m, 3, 4, 0.0, 7);
        // as written before turns were scheduled per dialogue: one count for all
        state.layers_done = 2;
        let mut json: serde_json::Value = serde_json::to_value(&state).unwrap();
        for d in json["dialogues"].as_array_mut().unwrap() {
            d.as_object_mut().unwrap().remove("layers_done");
        }
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        std::fs::write(&p, serde_json::to_vec(&json).unwrap()).unwrap();
        let loaded = load_state(&p, "fp").unwrap().unwrap();
        assert!(loaded.dialogues.iter().all(|d| d.layers_done == 2));
        assert!(load_state(&p, "other").unwrap().is_none());
    }
}
