//! What a plan expects llama.cpp's prompt caches to save. A llama.cpp server with
//! `cache_prompt` keeps the last prompt of each slot and evaluates only the part of a new
//! prompt past the longest prefix it shares with the slot's: an audit's judgements of one turn
//! share the instructions, the conversation and the question, so on the embedded servers most
//! of a judgement's prompt is not processed again (an audit's plan that counted every prompt
//! token ran at 0.56-0.83 of its estimate). A plan that knows the order of its calls feeds each
//! prompt to a [`PromptCacheModel`] of the endpoint's servers and marks the request with the
//! share it expects cached ([`crate::ChatRequest::planned_cached_share`]); the plan then times
//! only the rest at the prompt speed.
//!
//! The model follows llama.cpp's slot choice: calls go round robin over the replicas (the
//! embedded default sends each call to the server with the fewest calls so far); within a
//! server, the slot whose cached prompt shares the largest part of the new one (at least
//! [`MIN_SIMILARITY`] of it, llama.cpp's `slot_prompt_similarity`), else the least recently
//! used. Prefixes are compared on the prompt's bytes (the messages' roles and contents), which
//! stand in for its tokens.

use crate::chat::ChatRequest;

/// llama.cpp's default `slot_prompt_similarity`: a slot is chosen for its cached prompt only
/// when the common prefix is at least this share of the new prompt.
pub(crate) const MIN_SIMILARITY: f64 = 0.1;

/// The cached prompts of one endpoint's servers.
#[derive(Debug, Clone)]
pub struct PromptCacheModel {
    replicas: Vec<Vec<Slot>>,
    next_replica: usize,
    tick: u64,
}

#[derive(Debug, Clone, Default)]
struct Slot {
    prompt: Vec<u8>,
    used: u64,
}

impl PromptCacheModel {
    /// `replicas` servers of `slots` slots each (at least one of each).
    pub fn new(replicas: usize, slots: usize) -> Self {
        Self {
            replicas: vec![vec![Slot::default(); slots.max(1)]; replicas.max(1)],
            next_replica: 0,
            tick: 0,
        }
    }

    /// Sends the next prompt through the model: the share of it (0 to 1) a slot held already.
    pub fn next(&mut self, prompt: &[u8]) -> f64 {
        if prompt.is_empty() {
            return 0.0;
        }
        let replica = self.next_replica;
        self.next_replica = (replica + 1) % self.replicas.len();
        self.tick += 1;
        let slots = &mut self.replicas[replica];
        let (best, common) = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (i, common_prefix(&s.prompt, prompt)))
            .max_by_key(|&(i, c)| (c, std::cmp::Reverse(i)))
            .unwrap_or((0, 0));
        let similar = common as f64 / prompt.len() as f64 >= MIN_SIMILARITY;
        let chosen = if similar {
            best
        } else {
            slots
                .iter()
                .enumerate()
                .min_by_key(|&(i, s)| (s.used, i))
                .map_or(0, |(i, _)| i)
        };
        let reused = if similar { common } else { 0 };
        let slot = &mut slots[chosen];
        slot.prompt.clear();
        slot.prompt.extend_from_slice(prompt);
        slot.used = self.tick;
        reused as f64 / prompt.len() as f64
    }

    /// [`PromptCacheModel::next`] for a request's messages ([`prompt_bytes`]).
    pub fn next_request(&mut self, req: &ChatRequest) -> f64 {
        self.next(&prompt_bytes(req))
    }
}

/// The bytes a request's prompt is compared on: each message's role and content in order.
pub(crate) fn prompt_bytes(req: &ChatRequest) -> Vec<u8> {
    let mut out = Vec::new();
    for m in &req.messages {
        out.extend_from_slice(format!("{:?}", m.role).as_bytes());
        out.push(b'\n');
        out.extend_from_slice(m.content.as_bytes());
        out.push(0);
    }
    out
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(turn: &str, passage: &str) -> Vec<u8> {
        format!("instructions ... conversation {turn} ... passage {passage}").into_bytes()
    }

    #[test]
    fn a_turns_judgements_reuse_their_shared_prefix_and_a_new_turn_starts_again() {
        let mut m = PromptCacheModel::new(1, 2);
        assert_eq!(m.next(&prompt("t1", "p1")), 0.0, "nothing cached yet");
        let second = m.next(&prompt("t1", "p2"));
        let shared = "instructions ... conversation t1 ... passage p".len() as f64;
        assert!((second - shared / prompt("t1", "p2").len() as f64).abs() < 1e-12);
        // another turn shares the instructions (above the similarity floor)
        let other = m.next(&prompt("t2", "p1"));
        assert!(other > 0.3 && other < second, "{other}");
        assert_eq!(m.next(b"unrelated"), 0.0);
        assert_eq!(m.next(b""), 0.0);
    }

    #[test]
    fn replicas_take_turns_and_each_keeps_its_own_slots() {
        let mut m = PromptCacheModel::new(2, 1);
        let a = prompt("t1", "p1");
        assert_eq!(m.next(&a), 0.0, "replica 0");
        assert_eq!(m.next(&a), 0.0, "replica 1 has not seen it");
        assert_eq!(m.next(&a), 1.0, "replica 0 again: all of it cached");
    }

    #[test]
    fn a_dissimilar_prompt_evicts_the_least_recently_used_slot() {
        let mut m = PromptCacheModel::new(1, 2);
        let (a, b) = (b"aaaaaaaaaa".to_vec(), b"bbbbbbbbbb".to_vec());
        m.next(&a);
        m.next(&b);
        assert_eq!(m.next(&a), 1.0, "both kept in two slots");
        m.next(b"cccccccccc"); // evicts b, the least recently used
        assert_eq!(m.next(&a), 1.0);
        assert_eq!(m.next(&b), 0.0);
    }
}
