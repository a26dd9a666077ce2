//! The dialogues' state between turns and its checkpoint: which path each dialogue draws
//! from and when it switches topic (seeded once by [`initial_state`]), what it has used and
//! asked, and the events and calls counted so far. Saved after finished turns and read back
//! on resume, so a killed run goes on where it stopped.

use std::collections::BTreeMap;
use std::path::Path;

use mtr_core::rng;
use rand::RngExt;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::record::TurnRecord;
use crate::agents::CallLog;
use crate::chunk::Chunk;
use crate::error::Result;

/// The state of one dialogue between layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DialogueState {
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

impl DialogueState {
    /// Counts one `stage/reason` event.
    pub(super) fn count(&mut self, event: &str) {
        *self.events.entry(event.to_string()).or_default() += 1;
    }
}

/// The checkpoint: every dialogue's state after its last finished turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GenState {
    pub fingerprint: String,
    /// Layers every dialogue has finished (the smallest of the dialogues' counts).
    pub layers_done: usize,
    pub dialogues: Vec<DialogueState>,
}

/// What dialogues are generated from.
pub(crate) struct Material<'a> {
    pub chunks: &'a [Chunk],
    /// Chunk id -> index into `chunks`.
    pub by_id: &'a std::collections::HashMap<String, u32>,
    pub paths: &'a [Vec<u32>],
    pub path_topics: &'a [usize],
}

/// Path assignment and topic-switch schedule for `n` dialogues of `turns` turns.
pub(crate) fn initial_state(
    fingerprint: String,
    m: &Material<'_>,
    n: usize,
    turns: usize,
    switch_share: f64,
    seed: u64,
) -> GenState {
    let p = m.paths.len();
    let mut order: Vec<usize> = (0..p).collect();
    order.shuffle(&mut rng::stream(seed, rng::purpose::PATH_ORDER));
    let mut who: Vec<usize> = (0..n).collect();
    who.shuffle(&mut rng::stream(seed, rng::purpose::SWITCHERS));
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
            let mut rng = rng::stream(seed, rng::purpose::dialogue(i as u64));
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

/// Writes the checkpoint atomically.
pub(crate) fn save_state(path: &Path, state: &GenState) -> Result<()> {
    let bytes =
        serde_json::to_vec(state).map_err(|e| crate::Error::Internal(format!("state: {e}")))?;
    mtr_core::atomic::write_atomic(path, &bytes)?;
    Ok(())
}

/// Reads a checkpoint if it exists and belongs to `fingerprint`.
pub(crate) fn load_state(path: &Path, fingerprint: &str) -> Result<Option<GenState>> {
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

    /// The first draws of this use of the seeded generator ([`mtr_core::rng`]): a dependency
    /// update that changes them fails here, not silently in a report.
    #[test]
    fn golden_first_draws() {
        let chunks = Vec::new();
        let by_id = std::collections::HashMap::new();
        let paths: Vec<Vec<u32>> = (0..6u32).map(|p| vec![p]).collect();
        let m = Material {
            chunks: &chunks,
            by_id: &by_id,
            paths: &paths,
            path_topics: &[0, 0, 1, 1, 2, 2],
        };
        let state = initial_state("fp".into(), &m, 8, 5, 0.5, 7);
        let drawn: Vec<_> = state
            .dialogues
            .iter()
            .map(|d| (d.path, d.switch_at, d.switch_path))
            .collect();
        assert_eq!(
            format!("{drawn:?}"),
            "[(5, None, None), (2, None, None), (0, Some(3), Some(3)), (1, Some(1), Some(5)), \
             (4, Some(2), Some(1)), (3, None, None), (5, Some(2), Some(2)), (2, None, None)]"
        );
    }

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
