//! The fake's Batch API: file upload and download, batch creation (answered at once through
//! the chat replies), polling and listing, each stage holdable ([`BatchStage`]) so a test can
//! stop the client exactly there.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::fake_chat::{completion_json, decide};
use super::{BatchStage, Shared, error_response};
use crate::fake::FakeReply;

/// POST /v1/files (multipart, the part named `file`).
pub(super) async fn upload_file(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Upload).await {
        return error_response(503, None, "held (fake)");
    }
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(boundary) = ct
        .split("boundary=")
        .nth(1)
        .map(|b| b.trim_matches('"').to_string())
    else {
        return error_response(400, None, "expected multipart/form-data");
    };
    let Some(content) = multipart_part(&body, &boundary, "file") else {
        return error_response(400, None, "no `file` part");
    };
    let Ok(mut files) = s.files.lock() else {
        return error_response(500, None, "lock");
    };
    let id = format!("file-{}", files.len() + 1);
    let bytes = content.len();
    files.insert(id.clone(), content);
    axum::Json(json!({"id": id, "object": "file", "bytes": bytes, "created_at": 0, "filename": "input.jsonl", "purpose": "batch"})).into_response()
}

/// The bytes of one named part of a multipart body.
fn multipart_part(body: &[u8], boundary: &str, name: &str) -> Option<Vec<u8>> {
    let delim = format!("--{boundary}");
    let text = body;
    let find = |hay: &[u8], needle: &[u8], from: usize| {
        hay.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let mut pos = find(text, delim.as_bytes(), 0)?;
    loop {
        let start = pos + delim.len();
        let next = find(text, delim.as_bytes(), start)?;
        let part = &text[start..next];
        let header_end = find(part, b"\r\n\r\n", 0)?;
        let headers = String::from_utf8_lossy(&part[..header_end]);
        if headers.contains(&format!("name=\"{name}\"")) {
            let mut content = &part[header_end + 4..];
            if content.ends_with(b"\r\n") {
                content = &content[..content.len() - 2];
            }
            return Some(content.to_vec());
        }
        pos = next;
    }
}

pub(super) async fn file_content(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Download).await {
        return error_response(503, None, "held (fake)");
    }
    match s.files.lock().ok().and_then(|f| f.get(&id).cloned()) {
        Some(b) => (
            StatusCode::OK,
            [("content-type", "application/octet-stream")],
            b,
        )
            .into_response(),
        None => error_response(404, None, "no such file"),
    }
}

/// POST /v1/batches: answers every line with the responder at once; the batch reports
/// `in_progress` on its first poll and `completed` afterwards.
pub(super) async fn create_batch(
    State(s): State<Arc<Shared>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::BeforeCreate).await {
        return error_response(503, None, "held (fake)");
    }
    let Some(input) = body.get("input_file_id").and_then(Value::as_str) else {
        return error_response(400, None, "`input_file_id` is required");
    };
    let Some(bytes) = s.files.lock().ok().and_then(|f| f.get(input).cloned()) else {
        return error_response(404, None, "no such input file");
    };
    let mut out = String::new();
    let (mut total, mut failed) = (0u64, 0u64);
    for line in String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        total += 1;
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            failed += 1;
            continue;
        };
        let n = s.chat_calls.fetch_add(1, Ordering::Relaxed);
        let (req, mut reply) = decide(&s, n, v.get("body").cloned().unwrap_or(Value::Null));
        while let FakeReply::Delay(_, inner) = reply {
            reply = *inner; // a batch has no latency to simulate
        }
        let response = match reply {
            FakeReply::Content(t) => {
                json!({"status_code": 200, "request_id": format!("r{n}"), "body": completion_json(&req, &t, "stop")})
            }
            FakeReply::Truncated(t) => {
                json!({"status_code": 200, "request_id": format!("r{n}"), "body": completion_json(&req, &t, "length")})
            }
            FakeReply::Status {
                status, message, ..
            } => {
                failed += 1;
                json!({"status_code": status, "request_id": format!("r{n}"), "body": {"error": {"message": message}}})
            }
            _ => {
                failed += 1;
                json!({"status_code": 500, "request_id": format!("r{n}"), "body": {"error": {"message": "fake failure"}}})
            }
        };
        out.push_str(&json!({"id": format!("batch_req_{n}"), "custom_id": v.get("custom_id"), "response": response, "error": null}).to_string());
        out.push('\n');
    }
    let b = {
        let (Ok(mut files), Ok(mut batches)) = (s.files.lock(), s.batches.lock()) else {
            return error_response(500, None, "lock");
        };
        let out_id = format!("file-{}", files.len() + 1);
        files.insert(out_id.clone(), out.into_bytes());
        let id = format!("batch_{}", batches.len() + 1);
        let b = json!({"id": id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": input, "completion_window": "24h",
            "status": "validating", "output_file_id": out_id, "error_file_id": null, "created_at": batches.len() + 1,
            "metadata": body.get("metadata").cloned().unwrap_or(Value::Null),
            "request_counts": {"total": total, "completed": total - failed, "failed": failed}});
        batches.insert(id, (b.clone(), 0));
        b
    };
    if s.held_at(BatchStage::AfterCreate).await {
        return error_response(503, None, "held (fake)");
    }
    axum::Json(b).into_response()
}

pub(super) async fn get_batch(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Poll).await {
        return error_response(503, None, "held (fake)");
    }
    let Ok(mut batches) = s.batches.lock() else {
        return error_response(500, None, "lock");
    };
    match batches.get_mut(&id) {
        Some((b, polls)) => {
            *polls += 1;
            b["status"] = json!(if *polls <= 1 {
                "in_progress"
            } else {
                "completed"
            });
            axum::Json(b.clone()).into_response()
        }
        None => error_response(404, None, "no such batch"),
    }
}

/// GET /v1/batches: every batch, newest first, in one page.
pub(super) async fn list_batches(State(s): State<Arc<Shared>>) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    let Ok(batches) = s.batches.lock() else {
        return error_response(500, None, "lock");
    };
    let mut data: Vec<Value> = batches.values().map(|(b, _)| b.clone()).collect();
    data.sort_by_key(|b| std::cmp::Reverse(b["created_at"].as_u64().unwrap_or(0)));
    axum::Json(json!({"object": "list", "data": data, "has_more": false})).into_response()
}
