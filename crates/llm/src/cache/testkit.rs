//! Test support for the cache modules: a stored answer as the client writes one.

use super::StoredChat;
use crate::chat::{ParseStatus, Usage};

pub(super) fn stored(model: &str) -> StoredChat {
    StoredChat {
        value: Some(serde_json::json!({"grade": 2})),
        text: "{\"grade\": 2}".into(),
        status: ParseStatus::Ok,
        usage: Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
        },
        cost_usd: 0.001,
        model: model.into(),
        finish_reason: Some("stop".into()),
        rating: None,
    }
}
