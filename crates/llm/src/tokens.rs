//! Prompt token counting before a call, for `--dry-run` estimates, budget reservations and
//! token-per-minute limits. OpenAI models get their own encoding (`o200k_base` for gpt-4o,
//! gpt-4.1, gpt-5, o1/o3/o4; `cl100k_base` for gpt-4 and gpt-3.5). Every other model (Qwen,
//! Llama, DeepSeek, SmolLM...) is counted with `o200k_base` as a documented approximation:
//! on English and Chinese text it lands within about 10-20% of those models' own tokenizers.

use crate::chat::ChatMessage;

/// Which BPE a model is counted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    O200k,
    Cl100k,
}

/// The encoding used for `model` (see the module docs for the fallback).
pub fn encoding_for(model: &str) -> Encoding {
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

/// Prompt tokens of a chat: content tokens plus the chat format's overhead (3 per message and
/// 3 for the reply priming, as OpenAI documents).
pub fn count_messages(model: &str, messages: &[ChatMessage]) -> u64 {
    messages
        .iter()
        .map(|m| 3 + count_text(model, &m.content) + 1)
        .sum::<u64>()
        + 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_model_encoding() {
        assert_eq!(encoding_for("gpt-4o-mini"), Encoding::O200k);
        assert_eq!(encoding_for("gpt-4-turbo"), Encoding::Cl100k);
        assert_eq!(encoding_for("Qwen/Qwen2.5-7B-Instruct"), Encoding::O200k);
        assert_eq!(count_text("gpt-4o", "hello world"), 2);
        let n = count_messages("gpt-4o", &[ChatMessage::user("hello world")]);
        assert_eq!(n, 3 + 2 + 1 + 3);
    }
}
