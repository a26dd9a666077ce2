//! The Batch output import (`mtr cache import`, `Llm::import_batch_output`): a cache that
//! exported three calls is made once (a template file); each input is imported as the output
//! file into a fresh copy of it, so that no input sees what an earlier one stored. The seeds
//! are output lines answering those calls, with the custom ids only the export knows.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mtr_llm::{ChatMessage, ChatRequest, EndpointConfig, JsonSchema, Llm, LlmConfig, LlmOptions};
use serde_json::{Value, json};

/// The calls the template cache exported.
const CALLS: usize = 3;

/// The runtime the client runs on (one per process).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// A client in export mode on an endpoint nobody listens on, its cache at `cache`.
fn client(cache: &Path) -> Llm {
    let mut e = EndpointConfig::new("judge", "http://127.0.0.1:9/v1", "m");
    e.price_in_per_mtok = 2.0;
    e.price_out_per_mtok = 2.0;
    let mut cfg = LlmConfig {
        endpoints: vec![e],
        ..Default::default()
    };
    cfg.roles.judges = vec!["judge".into()];
    let opts = LlmOptions {
        cache_path: Some(cache.to_path_buf()),
        batch: true,
        ..Default::default()
    };
    runtime()
        .block_on(Llm::new(cfg, opts))
        .expect("the client opens")
}

fn request(i: usize) -> ChatRequest {
    let schema = json!({"type": "object", "properties": {"grade": {"type": "integer"}}, "required": ["grade"]});
    ChatRequest::new(vec![ChatMessage::user(format!("item {i}"))])
        .with_schema(JsonSchema::new("grade", schema))
}

/// The template cache and the export file it wrote (made once per process).
fn template() -> &'static (PathBuf, PathBuf) {
    static T: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    T.get_or_init(|| {
        let dir = crate::scratch().join("llm-template");
        std::fs::create_dir_all(&dir).expect("template folder");
        let (cache, export) = (dir.join("cache.sqlite"), dir.join("in.jsonl"));
        let llm = client(&cache);
        llm.start_export(&export, Some("audit:fuzz"))
            .expect("export");
        for i in 0..CALLS {
            let _ = runtime().block_on(llm.chat("judge", &request(i)));
        }
        llm.finish_export()
            .expect("export")
            .expect("an export report");
        drop(llm);
        (cache, export)
    })
}

/// Imports `data` as a Batch output file into a fresh copy of the template cache.
pub fn import(data: &[u8]) {
    let (cache, _) = template();
    let dir = crate::fresh_dir("llm");
    let work = dir.join("cache.sqlite");
    std::fs::copy(cache, &work).expect("cache copy");
    let out = dir.join("out.jsonl");
    std::fs::write(&out, data).expect("output file");
    let llm = client(&work);
    let _ = llm.import_batch_output(&out);
    drop(llm);
    let _ = std::fs::remove_dir_all(&dir);
}

/// vLLM's output line answering the exported line `input`: a chat completion, or the
/// engine's error.
fn answer(input: &Value, ok: bool) -> String {
    let body = json!({"object": "chat.completion", "model": input["body"]["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"grade\": 2}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
    let line = if ok {
        json!({"id": "vllm-1", "custom_id": input["custom_id"], "response": {"status_code": 200, "request_id": "r", "body": body}, "error": null})
    } else {
        json!({"id": "vllm-1", "custom_id": input["custom_id"], "response": {"status_code": 500, "request_id": "r", "body": {"error": {"message": "engine died"}}}, "error": null})
    };
    line.to_string()
}

/// The seeds: output files answering the template's export (all answered; one failed; CRLF
/// line ends and a byte-order mark; a last line cut short).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let (_, export) = template();
    let inputs: Vec<Value> = std::fs::read_to_string(export)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let all: Vec<String> = inputs.iter().map(|i| answer(i, true)).collect();
    let mixed: Vec<String> = inputs
        .iter()
        .enumerate()
        .map(|(k, i)| answer(i, k != 1))
        .collect();
    let joined = all.join("\n") + "\n";
    vec![
        ("answered".into(), joined.clone().into_bytes()),
        ("mixed".into(), (mixed.join("\n") + "\n").into_bytes()),
        (
            "bom-crlf".into(),
            format!("\u{feff}{}\r\n", all.join("\r\n")).into_bytes(),
        ),
        (
            "cut".into(),
            joined.as_bytes()[..joined.len().saturating_sub(30)].to_vec(),
        ),
    ]
}
