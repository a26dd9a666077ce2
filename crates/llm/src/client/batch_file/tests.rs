//! The tests of the Batch API file paths: export, import, resume.

use serde_json::json;

use super::*;
use crate::chat::{ChatMessage, JsonSchema};
use crate::config::{EndpointConfig, LlmConfig, LlmOptions};

/// A client in export mode on an endpoint nobody listens on, with its cache in `dir`.
async fn client(dir: &Path, cache: &str) -> Llm {
    let mut e = EndpointConfig::new("judge", "http://127.0.0.1:9/v1", "m");
    e.price_in_per_mtok = 2.0;
    e.price_out_per_mtok = 2.0;
    e.batch_discount = 0.5;
    let mut cfg = LlmConfig {
        endpoints: vec![e],
        ..Default::default()
    };
    cfg.roles.judges = vec!["judge".into()];
    let o = LlmOptions {
        cache_path: Some(dir.join(cache)),
        batch: true,
        ..Default::default()
    };
    Llm::new(cfg, o).await.unwrap()
}

fn req(i: usize) -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user(format!("item {i}"))]).with_schema(JsonSchema::new(
            "grade",
            json!({"type": "object", "properties": {"grade": {"type": "integer"}}, "required": ["grade"]}),
        ))
}

/// Asks calls `0..n` in export mode; returns the lines written to `file` (`expect`).
async fn export_some(llm: &Llm, file: &Path, n: usize, expect: u64) -> Vec<Value> {
    llm.start_export(file, Some("audit:t")).unwrap();
    for i in 0..n {
        let _ = llm.chat("judge", &req(i)).await;
    }
    // a call asked twice is written once
    let _ = llm.chat("judge", &req(0)).await;
    let rep = llm.finish_export().unwrap().unwrap();
    assert_eq!(rep.requests, expect);
    let mut lines: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // the file is in custom_id order, the same every run; the tests take them in call order
    let ids: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["custom_id"].as_str())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    lines.sort_by_key(item_of);
    lines
}

/// The `i` of the call `req(i)` an exported line asks.
fn item_of(line: &Value) -> usize {
    line["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str()?.strip_prefix("item ")?.parse().ok())
        .next()
        .unwrap_or(usize::MAX)
}

async fn export(llm: &Llm, file: &Path, n: usize) -> Vec<Value> {
    export_some(llm, file, n, n as u64).await
}

/// vLLM's output line answering one input line.
fn answer(input: &Value, grade: i64) -> String {
    json!({"id": "vllm-1", "custom_id": input["custom_id"], "response": {"status_code": 200, "request_id": "r", "body": {
            "object": "chat.completion", "model": input["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("{{\"grade\": {grade}}}")}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100_000, "completion_tokens": 50_000}}}, "error": null})
        .to_string()
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    p
}

#[test]
fn a_line_is_the_bytes_of_its_json_object() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "a \"q\"\n\u{e9}"}], "z": 1, "a": null});
    let mut out = b"earlier line\n".to_vec();
    write_line(&mut out, "k\"1", &body);
    let want =
        json!({"custom_id": "k\"1", "method": "POST", "url": "/v1/chat/completions", "body": body});
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        format!("earlier line\n{want}\n")
    );
    let mut of = b"earlier line\n".to_vec();
    write_line_of(&mut of, "k\"1", body.to_string().as_bytes());
    assert_eq!(of, out);
}

#[tokio::test]
async fn half_a_file_then_the_rest_twice_books_every_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 6).await;
    assert_eq!(inputs[0]["url"], "/v1/chat/completions");
    assert_eq!(inputs[0]["body"]["model"], "m");
    let answers: Vec<String> = inputs.iter().map(|i| answer(i, 2)).collect();
    let half = write(dir.path(), "half.jsonl", &answers[..3]);
    let r = llm.import_batch_output(&half).unwrap();
    assert_eq!((r.lines, r.answered, r.already, r.failed), (3, 3, 0, 0));
    // the export of a rerun holds the other half only
    let inputs2 = export_some(&llm, &dir.path().join("in2.jsonl"), 6, 3).await;
    let keys: Vec<&Value> = inputs2.iter().map(|i| &i["custom_id"]).collect();
    assert_eq!(
        keys,
        inputs[3..]
            .iter()
            .map(|i| &i["custom_id"])
            .collect::<Vec<_>>()
    );
    // the whole first file, twice: the second time changes nothing
    let all = write(dir.path(), "all.jsonl", &answers);
    let r = llm.import_batch_output(&all).unwrap();
    assert_eq!((r.answered, r.already), (3, 3));
    let r = llm.import_batch_output(&all).unwrap();
    assert_eq!((r.answered, r.already), (0, 6));
    // answers are cached as fetched: value, tokens and the discounted price
    let hit = llm.chat("judge", &req(1)).await.unwrap();
    assert!(hit.cached);
    assert_eq!(hit.value, Some(json!({"grade": 2})));
    assert!(
        (hit.answer_cost_usd - 0.15).abs() < 1e-9,
        "{}",
        hit.answer_cost_usd
    );
    // and booked once each in the spend ledger, under the exporting job
    let spent = llm.spent("audit:t").unwrap().unwrap();
    assert_eq!(spent.calls, 6);
    assert!((spent.cost_usd - 0.9).abs() < 1e-9, "{spent:?}");
}

/// An export asks the cache for every call only when it may hold answers: a client opened
/// on a file that holds half of them exports the other half (and one on an empty file
/// exports every call, as above).
#[tokio::test]
async fn an_export_on_a_cache_that_holds_answers_leaves_them_out() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 6).await;
    let answers: Vec<String> = inputs.iter().map(|i| answer(i, 2)).collect();
    let half = write(dir.path(), "half.jsonl", &answers[..3]);
    llm.import_batch_output(&half).unwrap();
    drop(llm);
    let again = client(dir.path(), "c.sqlite").await;
    let inputs2 = export_some(&again, &dir.path().join("in2.jsonl"), 6, 3).await;
    assert_eq!(inputs2, inputs[3..].to_vec());
}

/// Every row an import may write (chat rows but their time of writing, spend rows but
/// theirs), in key order.
fn rows(dir: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(dir.join("c.sqlite")).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT key || model || COALESCE(prompt_id, '-') || prompt_tokens || completion_tokens || cost_usd || body FROM chat ORDER BY key",
        "SELECT id || COALESCE(job, '-') || endpoint || model || prompt_tokens || completion_tokens || cost_usd FROM spend ORDER BY id",
    ] {
        let mut st = c.prepare(sql).unwrap();
        let r = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        out.extend(r.map(Result::unwrap));
    }
    out
}

#[tokio::test]
async fn importing_a_file_twice_changes_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 40).await;
    let answers: Vec<String> = inputs
        .iter()
        .enumerate()
        .map(|(i, a)| answer(a, i as i64 % 5))
        .collect();
    let file = write(dir.path(), "out.jsonl", &answers);
    let r = llm.import_batch_output(&file).unwrap();
    assert_eq!((r.answered, r.already), (40, 0));
    let once = rows(dir.path());
    assert_eq!(once.len(), 80, "40 answers and 40 spend rows");
    let r = llm.import_batch_output(&file).unwrap();
    assert_eq!((r.answered, r.already), (0, 40));
    assert_eq!(rows(dir.path()), once);
}

/// A cache whose export was recorded by an earlier version (a `batch_item` row per
/// request, no `batch_export_item`/`batch_export_spec`) imports its answers as before.
#[tokio::test]
async fn an_export_recorded_by_an_earlier_version_still_imports() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 5).await;
    // rewrite the export's record as the earlier version kept it
    rusqlite::Connection::open(dir.path().join("c.sqlite"))
        .unwrap()
        .execute_batch(
            "INSERT INTO batch_item (key, batch_id, prompt_id, output, sample)
                   SELECT lower(hex(i.key)), s.batch_id, s.prompt_id, s.output, i.sample
                     FROM batch_export_item i JOIN batch_export_spec s ON s.id = i.spec;
                 DROP TABLE batch_export_item; DROP TABLE batch_export_spec;",
        )
        .unwrap();
    let answers: Vec<String> = inputs.iter().map(|i| answer(i, 4)).collect();
    let r = llm
        .import_batch_output(&write(dir.path(), "all.jsonl", &answers))
        .unwrap();
    assert_eq!((r.answered, r.already, r.failed), (5, 0, 0));
    let hit = llm.chat("judge", &req(3)).await.unwrap();
    assert!(hit.cached);
    assert_eq!(hit.value, Some(json!({"grade": 4})));
    let spent = llm.spent("audit:t").unwrap().unwrap();
    assert_eq!(spent.calls, 5);
}

#[tokio::test]
async fn failed_lines_are_counted_and_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 3).await;
    let lines = vec![
            answer(&inputs[0], 1),
            json!({"id": "x", "custom_id": inputs[1]["custom_id"], "response": {"status_code": 500, "request_id": "r", "body": {"error": {"message": "engine died"}}}, "error": null}).to_string(),
            json!({"id": "x", "custom_id": inputs[2]["custom_id"], "response": null, "error": {"code": "timeout", "message": "too slow"}}).to_string(),
        ];
    let r = llm
        .import_batch_output(&write(dir.path(), "out.jsonl", &lines))
        .unwrap();
    assert_eq!((r.answered, r.failed), (1, 2));
    assert_eq!(
        r.errors,
        vec![(2, "engine died".to_string()), (3, "too slow".to_string())]
    );
    assert!(r.summary(Path::new("out.jsonl")).contains("2 failed"));
    assert!(matches!(
        llm.chat("judge", &req(1)).await,
        Err(LlmError::Batched)
    ));
}

#[tokio::test]
async fn a_file_of_another_job_or_no_chat_completion_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let other = client(dir.path(), "other.sqlite").await;
    let theirs = export(&other, &dir.path().join("theirs.jsonl"), 2).await;
    let llm = client(dir.path(), "c.sqlite").await;
    let ours = export(&llm, &dir.path().join("in.jsonl"), 1).await;
    // (the same request has the same key in any cache: theirs[0] is ours[0])
    let lines = vec![answer(&theirs[1], 1)];
    let bad = write(dir.path(), "theirs-out.jsonl", &lines);
    match llm.import_batch_output(&bad) {
        Err(ImportError::Line { line, message, .. }) => {
            assert_eq!(line, 1);
            assert!(message.contains("no call of this cache"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let embedding = json!({"custom_id": ours[0]["custom_id"], "response": {"status_code": 200, "body": {"object": "list", "data": []}}, "error": null});
    let bad = write(dir.path(), "emb.jsonl", &["".into(), embedding.to_string()]);
    match llm.import_batch_output(&bad) {
        Err(ImportError::Line { line, message, .. }) => {
            assert_eq!(line, 2);
            assert!(message.contains("no chat completion"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_truncated_last_line_is_skipped_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 3).await;
    let mut text: String = inputs.iter().map(|i| answer(i, 3) + "\n").collect();
    text.truncate(text.len() - 40);
    let p = dir.path().join("cut.jsonl");
    std::fs::write(&p, &text).unwrap();
    let r = llm.import_batch_output(&p).unwrap();
    assert!(r.truncated);
    assert_eq!((r.lines, r.answered), (2, 2));
    assert!(r.summary(&p).contains("cut short"));
    // a broken line that is not the last one is an error with its number
    let p = dir.path().join("broken.jsonl");
    std::fs::write(
        &p,
        format!("{{\"custom_id\": \n{}\n", answer(&inputs[2], 1)),
    )
    .unwrap();
    assert!(matches!(
        llm.import_batch_output(&p),
        Err(ImportError::Line { line: 1, .. })
    ));
}

/// An output file that went through Windows, an old-Mac editor or a spreadsheet: a byte-order
/// mark, CRLF and lone CR line ends, a blank line, a last line without a line end. Every
/// answer is imported (before: the byte-order mark made line 1 "not a JSON line", and lone CRs
/// made the rest one line).
#[tokio::test]
async fn a_bom_crlf_and_lone_cr_lines_import_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let llm = client(dir.path(), "c.sqlite").await;
    let inputs = export(&llm, &dir.path().join("in.jsonl"), 4).await;
    let a: Vec<String> = inputs.iter().map(|i| answer(i, 2)).collect();
    let p = dir.path().join("out.jsonl");
    std::fs::write(
        &p,
        format!("\u{feff}{}\r\n{}\r\r{}\r{}", a[0], a[1], a[2], a[3]),
    )
    .unwrap();
    let r = llm.import_batch_output(&p).unwrap();
    assert_eq!((r.lines, r.answered, r.truncated), (4, 4, false));
    // a line numbered as an editor numbers it: the blank line 3 counts
    std::fs::write(&p, format!("{}\r\r{{\"custom_id\": \r{}", a[0], a[1])).unwrap();
    assert!(matches!(
        llm.import_batch_output(&p),
        Err(ImportError::Line { line: 3, .. })
    ));
    // invalid UTF-8 is the file's fault, at its line
    std::fs::write(
        &p,
        [a[0].as_bytes(), b"\n{\"custom_id\": \"\xff\"}\n"].concat(),
    )
    .unwrap();
    match llm.import_batch_output(&p) {
        Err(ImportError::Line { line, message, .. }) => {
            assert_eq!(line, 2);
            assert!(message.contains("UTF-8"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
