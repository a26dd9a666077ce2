//! Prompt token counting before a call, for `--dry-run` estimates, budget reservations and
//! token-per-minute limits. OpenAI models get their own encoding (`o200k_base` for gpt-4o,
//! gpt-4.1, gpt-5, o1/o3/o4; `cl100k_base` for gpt-4 and gpt-3.5). Every other model (Qwen,
//! Llama, DeepSeek, SmolLM...) is counted with `o200k_base` as a documented approximation:
//! on English and Chinese text it lands within about 10-20% of those models' own tokenizers.
//!
//! Counting is a BPE pass over every prompt: about a millisecond for a judge's prompt, a quarter
//! of an hour for the million prompts of a very large audit. Many prompts are therefore counted
//! through a [`SampleRule`]: up to [`EXACT_PROMPTS`] every prompt is counted exactly; above it a
//! seeded share of about [`SAMPLED_PROMPTS`] is, picked by a hash of each prompt's key (the same
//! prompts give the same figure in any order), and a [`TokenTally`] estimates the others from
//! their length in bytes at the counted prompts' tokens per byte.

use crate::chat::ChatMessage;

/// Which BPE a model is counted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o and later OpenAI models; the default for other models).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5, `text-embedding-*`).
    Cl100k,
}

/// The encoding used for `model` (see the module docs for the fallback).
pub(crate) fn encoding_for(model: &str) -> Encoding {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    if m.starts_with("gpt-4o")
        || m.starts_with("gpt-4.1")
        || m.starts_with("gpt-5")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
    {
        Encoding::O200k
    } else if m.starts_with("gpt-4") || m.starts_with("gpt-3.5") || m.starts_with("text-embedding")
    {
        Encoding::Cl100k
    } else {
        Encoding::O200k
    }
}

/// Tokens in `text` under `model`'s encoding.
pub fn count_text(model: &str, text: &str) -> u64 {
    let n = match encoding_for(model) {
        Encoding::O200k => tiktoken_rs::o200k_base_singleton()
            .encode_with_special_tokens(text)
            .len(),
        Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton()
            .encode_with_special_tokens(text)
            .len(),
    };
    n as u64
}

/// Tokens the chat format adds to a prompt: 4 per message (3 for the header, 1 closing) and 3
/// for the reply priming, as OpenAI documents.
pub(crate) fn chat_overhead(messages: u64) -> u64 {
    4 * messages + 3
}

/// Prompt tokens of a chat: content tokens plus the chat format's overhead
/// ([`chat_overhead`]).
pub fn count_messages(model: &str, messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| count_text(model, &m.content))
        .sum::<u64>()
        + chat_overhead(messages.len() as u64)
}

/// Up to this many prompts every prompt is counted exactly.
pub const EXACT_PROMPTS: u64 = 20_000;
/// About how many prompts a sampled count counts exactly.
pub const SAMPLED_PROMPTS: u64 = 4_000;
/// Tokens per byte of content assumed while no prompt of a tally was counted exactly (about 4
/// bytes a token in English).
pub(crate) const FALLBACK_TOKENS_PER_BYTE: f64 = 0.25;

/// Which prompts are counted exactly: all of them, or those whose key hashes below a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRule {
    /// A prompt is counted when the first 8 bytes of its key's blake3 hash (little endian) are
    /// below it; `u64::MAX`: every prompt.
    threshold: u64,
}

impl SampleRule {
    /// Every prompt counted exactly.
    pub const EXACT: SampleRule = SampleRule {
        threshold: u64::MAX,
    };

    /// The rule for about `total` prompts: exact up to [`EXACT_PROMPTS`], else a share of
    /// [`SAMPLED_PROMPTS`] / `total`.
    pub fn for_prompts(total: u64) -> Self {
        if total <= EXACT_PROMPTS {
            return Self::EXACT;
        }
        let share = SAMPLED_PROMPTS as f64 / total as f64;
        SampleRule {
            threshold: (share * u64::MAX as f64) as u64,
        }
    }

    /// Whether every prompt is counted exactly.
    pub fn is_exact(self) -> bool {
        self.threshold == u64::MAX
    }

    /// Whether the prompt with `key` is counted exactly.
    pub fn picks(self, key: &str) -> bool {
        if self.is_exact() {
            return true;
        }
        let h = blake3::hash(key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&h.as_bytes()[..8]);
        u64::from_le_bytes(first) < self.threshold
    }
}

/// Prompt tokens of many prompts: exact for those a [`SampleRule`] picks, estimated from
/// their length for the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenTally {
    /// Prompts counted exactly, and their tokens (chat overhead included).
    pub counted: u64,
    /// Tokens of the prompts counted exactly.
    pub counted_tokens: u64,
    counted_content_tokens: u64,
    counted_bytes: u64,
    /// Prompts left to the estimate, with their content bytes and messages.
    pub estimated: u64,
    estimated_bytes: u64,
    estimated_messages: u64,
}

/// Content bytes of a chat.
pub fn content_bytes(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(|m| m.content.len() as u64).sum()
}

impl TokenTally {
    /// Adds a prompt: counted exactly when `rule` picks `key` (the count is returned), else
    /// only its length is kept for [`TokenTally::estimated_tokens`].
    pub fn add(
        &mut self,
        rule: SampleRule,
        key: &str,
        model: &str,
        messages: &[ChatMessage],
    ) -> Option<u64> {
        let count = rule.picks(key).then(|| count_messages(model, messages));
        self.add_count(messages, count);
        count
    }

    /// [`TokenTally::add`] of a prompt whose count (`Some` when the rule picks it: its
    /// [`count_messages`]) the caller made beforehand, e.g. outside the lock around this tally.
    pub fn add_count(&mut self, messages: &[ChatMessage], count: Option<u64>) {
        let bytes = content_bytes(messages);
        let Some(n) = count else {
            self.estimated += 1;
            self.estimated_bytes += bytes;
            self.estimated_messages += messages.len() as u64;
            return;
        };
        self.counted += 1;
        self.counted_tokens += n;
        self.counted_content_tokens += n - chat_overhead(messages.len() as u64);
        self.counted_bytes += bytes;
    }

    /// Content tokens per byte of the prompts counted exactly.
    pub(crate) fn tokens_per_byte(&self) -> f64 {
        if self.counted_bytes == 0 {
            FALLBACK_TOKENS_PER_BYTE
        } else {
            self.counted_content_tokens as f64 / self.counted_bytes as f64
        }
    }

    /// Estimated tokens of one prompt of `bytes` content bytes in `messages` messages.
    pub fn estimate(&self, bytes: u64, messages: u64) -> u64 {
        (bytes as f64 * self.tokens_per_byte()).round() as u64 + chat_overhead(messages)
    }

    /// Estimated tokens of the prompts not counted exactly (0 when all were).
    pub(crate) fn estimated_tokens(&self) -> u64 {
        if self.estimated == 0 {
            return 0;
        }
        (self.estimated_bytes as f64 * self.tokens_per_byte()).round() as u64
            + 4 * self.estimated_messages
            + 3 * self.estimated
    }

    /// Counted and estimated tokens together.
    #[cfg(test)]
    pub(crate) fn total_tokens(&self) -> u64 {
        self.counted_tokens + self.estimated_tokens()
    }

    /// Adds another tally's prompts to this one's.
    pub fn merge(&mut self, o: &TokenTally) {
        self.counted += o.counted;
        self.counted_tokens += o.counted_tokens;
        self.counted_content_tokens += o.counted_content_tokens;
        self.counted_bytes += o.counted_bytes;
        self.estimated += o.estimated;
        self.estimated_bytes += o.estimated_bytes;
        self.estimated_messages += o.estimated_messages;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_made_beforehand_adds_what_add_does() {
        let rule = SampleRule::for_prompts(3 * EXACT_PROMPTS);
        let (mut by_add, mut by_count) = (TokenTally::default(), TokenTally::default());
        for i in 0..400 {
            let msgs = [ChatMessage::user(format!(
                "prompt {i} {}",
                "word ".repeat(i % 7)
            ))];
            let key = format!("key {i}");
            let added = by_add.add(rule, &key, "gpt-4o", &msgs);
            let count = rule.picks(&key).then(|| count_messages("gpt-4o", &msgs));
            assert_eq!(added, count);
            by_count.add_count(&msgs, count);
        }
        assert_eq!(by_add, by_count);
        assert!(by_add.counted > 0 && by_add.estimated > 0);
    }

    #[test]
    fn counts_with_model_encoding() {
        assert_eq!(encoding_for("gpt-4o-mini"), Encoding::O200k);
        assert_eq!(encoding_for("gpt-4-turbo"), Encoding::Cl100k);
        assert_eq!(encoding_for("Qwen/Qwen2.5-7B-Instruct"), Encoding::O200k);
        assert_eq!(count_text("gpt-4o", "hello world"), 2);
        let n = count_messages("gpt-4o", &[ChatMessage::user("hello world")]);
        assert_eq!(n, 3 + 2 + 1 + 3);
    }

    /// Prompts of a seeded synthetic set: a fixed system prompt and a user message of 50-150
    /// words drawn from a small vocabulary.
    fn prompts(n: usize, seed: u64) -> Vec<(String, Vec<ChatMessage>)> {
        let words = [
            "passage", "the", "user", "asks", "about", "rivers", "in", "2024,", "and",
        ];
        let mut x = seed.max(1);
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|i| {
                let len = 50 + (next() % 100) as usize;
                let text: Vec<&str> = (0..len)
                    .map(|_| words[(next() % words.len() as u64) as usize])
                    .collect();
                let msgs = vec![
                    ChatMessage::system("You rate passages. Answer in JSON."),
                    ChatMessage::user(text.join(" ")),
                ];
                (format!("key-{i}"), msgs)
            })
            .collect()
    }

    fn tally(rule: SampleRule, set: &[(String, Vec<ChatMessage>)]) -> TokenTally {
        let mut t = TokenTally::default();
        for (k, m) in set {
            t.add(rule, k, "gpt-4o", m);
        }
        t
    }

    #[test]
    fn exact_up_to_the_threshold() {
        assert!(SampleRule::for_prompts(EXACT_PROMPTS).is_exact());
        assert!(!SampleRule::for_prompts(EXACT_PROMPTS + 1).is_exact());
        let set = prompts(300, 7);
        let t = tally(SampleRule::for_prompts(300), &set);
        let exact: u64 = set.iter().map(|(_, m)| count_messages("gpt-4o", m)).sum();
        assert_eq!((t.counted, t.estimated), (300, 0));
        assert_eq!(t.total_tokens(), exact);
    }

    #[test]
    fn sampled_count_is_deterministic_and_close() {
        let set = prompts(4000, 11);
        let exact: u64 = set.iter().map(|(_, m)| count_messages("gpt-4o", m)).sum();
        // a rule that counts about a tenth of them
        let rule = SampleRule::for_prompts(SAMPLED_PROMPTS * 10);
        let t = tally(rule, &set);
        assert!(t.counted > 250 && t.counted < 550, "{}", t.counted);
        assert_eq!(t.counted + t.estimated, 4000);
        let err = (t.total_tokens() as f64 - exact as f64).abs() / exact as f64;
        assert!(err < 0.01, "{err}");
        // the same prompts in another order: the same figure
        let mut rev = set.clone();
        rev.reverse();
        assert_eq!(tally(rule, &rev), t);
        // merging two halves gives the tally of the whole
        let mut a = tally(rule, &set[..1500]);
        a.merge(&tally(rule, &set[1500..]));
        assert_eq!(a, t);
    }

    #[test]
    fn nothing_counted_falls_back_to_bytes() {
        let rule = SampleRule { threshold: 0 };
        let mut t = TokenTally::default();
        assert_eq!(
            t.add(rule, "k", "gpt-4o", &[ChatMessage::user("abcdefgh")]),
            None
        );
        assert_eq!(t.estimated_tokens(), 2 + chat_overhead(1));
        assert_eq!(t.estimate(8, 1), t.estimated_tokens());
    }
}
