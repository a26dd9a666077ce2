//! Slot affinity: the calls of one conversation go to one server and one slot, so a llama.cpp
//! server reuses the conversation's growing prompt prefix (`cache_prompt`) instead of
//! processing it again on whatever slot is free. On a small CPU machine prompt processing
//! was about 70% of a synthesis run, and each dialogue's turn repeats its history.
//!
//! A call says which conversation it belongs to with [`ChatRequest::affinity`]
//! (crate::ChatRequest), or by running inside [`scope`] (the pipeline wraps each dialogue's
//! turn; the request's label is appended, so a dialogue's user agent and answer agent keep
//! slots of their own instead of evicting each other's prefix). The key maps to a replica and
//! a slot deterministically ([`pin`]); the slot goes out as llama.cpp's `id_slot` only to
//! endpoints that say they are llama.cpp servers (`slot_affinity`, set on the embedded
//! local servers), the way a string `pattern` is only sent where it is enforced. The field is
//! added after the cache key is computed: pinning never changes what is cached.

tokio::task_local! {
    static CONVERSATION: String;
}

/// Runs `fut` with `key` as the conversation of every call it makes that names none itself.
pub async fn scope<F: Future>(key: String, fut: F) -> F::Output {
    CONVERSATION.scope(key, fut).await
}

/// The conversation of the current [`scope`], if any.
pub fn current() -> Option<String> {
    CONVERSATION.try_with(Clone::clone).ok()
}

/// The conversation key of `req`: its own, else the current [`scope`]'s followed by the
/// request's label (a dialogue's agents keep apart).
pub(crate) fn key_of(req: &crate::ChatRequest) -> Option<String> {
    req.affinity.clone().or_else(|| {
        current().map(|c| match &req.label {
            Some(l) => format!("{c}/{l}"),
            None => c,
        })
    })
}

/// A stable 64-bit number for a conversation key (the same on every machine and run).
pub(crate) fn key_hash(key: &str) -> u64 {
    let h = blake3::hash(key.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(b)
}

/// Where a conversation runs on an endpoint of `replicas` servers with `slots` slots each:
/// (replica index, slot id).
pub fn pin(hash: u64, replicas: usize, slots: usize) -> (usize, u32) {
    let replicas = replicas.max(1) as u64;
    let slots = slots.max(1) as u64;
    let global = hash % (replicas * slots);
    ((global % replicas) as usize, (global / replicas) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_pins_to_the_same_place_and_keys_spread() {
        let a = pin(key_hash("d0001/synth/user"), 2, 2);
        assert_eq!(a, pin(key_hash("d0001/synth/user"), 2, 2));
        let mut seen = std::collections::BTreeSet::new();
        for d in 0..64 {
            let (r, s) = pin(key_hash(&format!("d{d:04}/synth/user")), 2, 2);
            assert!(r < 2 && s < 2);
            seen.insert((r, s));
        }
        assert_eq!(seen.len(), 4, "64 keys use every slot of 2 x 2");
        assert_eq!(pin(7, 0, 0), (0, 0));
    }

    use crate::config::{LlmConfig, LlmOptions};
    use crate::fake::FakeServer;
    use crate::{ChatMessage, ChatRequest, Llm, Role, Target};

    fn req(dialogue: &str, turn: usize) -> ChatRequest {
        ChatRequest::new(vec![
            ChatMessage::system("You are the user."),
            ChatMessage::user(format!("{dialogue} turn {turn}")),
        ])
        .with_label("synth/user")
    }

    /// A dialogue's calls carry one `id_slot` and reach one of the endpoint's two llama.cpp
    /// servers; an endpoint that is not one (a remote API) never sees the field; the cache key
    /// does not change with the pin.
    #[tokio::test]
    async fn a_dialogues_calls_stay_on_one_server_and_slot_and_remote_endpoints_get_no_slot() {
        let (a, b, remote) = (
            FakeServer::builder().record(true).start().await.unwrap(),
            FakeServer::builder().record(true).start().await.unwrap(),
            FakeServer::builder().record(true).start().await.unwrap(),
        );
        let mut local = a.endpoint("local", "m");
        local.base_urls = vec![b.base_url().to_string()];
        local.max_concurrency = 2;
        local.slot_affinity = true;
        let mut config = LlmConfig {
            endpoints: vec![local, remote.endpoint("remote", "m")],
            ..Default::default()
        };
        config.roles.generator = vec!["local".into()];
        config.roles.judges = vec!["remote".into()];
        let options = LlmOptions {
            no_cache: true,
            ..Default::default()
        };
        let llm = Llm::new(config, options).await.unwrap();
        let dialogues = ["d0000", "d0001", "d0002", "d0003", "d0004", "d0005"];
        let mut keys = Vec::new();
        for d in dialogues {
            let llm = llm.clone();
            let keys = &mut keys;
            scope(d.to_string(), async move {
                for t in 0..3 {
                    let g = llm.spawn_chat(Target::Role(Role::Generator), req(d, t));
                    keys.push(g.await.unwrap().key);
                    llm.spawn_chat(Target::Role(Role::Judges), req(d, t))
                        .await
                        .unwrap();
                }
            })
            .await;
        }
        // every call to the llama.cpp servers is pinned; the remote endpoint saw 18 plain calls
        let (ra, rb) = (a.requests(), b.requests());
        assert_eq!(ra.len() + rb.len(), 18);
        for r in ra.iter().chain(&rb) {
            assert!(r["id_slot"].as_u64().is_some_and(|s| s < 2), "{r}");
            assert_eq!(r["cache_prompt"], serde_json::json!(true));
        }
        let rr = remote.requests();
        assert_eq!(rr.len(), 18);
        assert!(
            rr.iter()
                .all(|r| r.get("id_slot").is_none() && r.get("cache_prompt").is_none())
        );
        // each dialogue's three turns went to its pinned server and slot
        let mut used = std::collections::BTreeSet::new();
        for d in dialogues {
            let (server, slot) = pin(key_hash(&format!("{d}/synth/user")), 2, 2);
            used.insert((server, slot));
            let of = |rs: &[serde_json::Value]| -> Vec<Option<u64>> {
                rs.iter()
                    .filter(|r| {
                        r["messages"][1]["content"]
                            .as_str()
                            .is_some_and(|c| c.starts_with(d))
                    })
                    .map(|r| r["id_slot"].as_u64())
                    .collect()
            };
            let (on_a, on_b) = (of(&ra), of(&rb));
            let (here, elsewhere) = if server == 0 {
                (on_a, on_b)
            } else {
                (on_b, on_a)
            };
            assert_eq!(here, vec![Some(u64::from(slot)); 3], "{d}");
            assert!(elsewhere.is_empty(), "{d}");
        }
        assert!(used.len() > 1, "six dialogues spread over slots: {used:?}");
        // the pin is not part of what is cached: the same request outside a dialogue
        let plain = llm
            .chat_role(Role::Generator, &req("d0000", 0))
            .await
            .unwrap();
        assert_eq!(plain.key, keys[0]);
    }

    #[tokio::test]
    async fn a_scope_names_the_conversation_of_what_runs_inside_it() {
        assert_eq!(current(), None);
        let inside = scope("d7".into(), async { current() }).await;
        assert_eq!(inside.as_deref(), Some("d7"));
    }
}
