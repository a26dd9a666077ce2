//! The JSON API the page calls (every route behind the token, see [`super::server`]):
//! - `GET /api/state`: the reviewer, and per queue its size, labels done (by this reviewer),
//!   the first unlabelled card, and per dimension or kind the same counts;
//! - `GET /api/card?queue=sample|flagged&index=N`: one card with this reviewer's label;
//! - `POST /api/label` `{queue, index, item, label, seconds, note}`: records a label
//!   (`label: null` undoes), synced to disk before the answer;
//! - `GET /api/summary`: label counts per queue, dimension and label, and every reviewer's
//!   count, and the figures of `mtr report`'s "Reviewed" section (`estimates`: per dimension the
//!   share failing by the judges, the reviewers and prediction-powered; null without labels).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mtr_audit::review_queue::Queue;
use mtr_audit::review_queue::label_log::EffectiveLabels;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::session::{Rejected, Session};

pub type Shared = Arc<Session>;

#[derive(Debug, Default, Serialize)]
pub struct Progress {
    pub total: usize,
    pub labelled: usize,
}

#[derive(Debug, Serialize)]
pub struct QueueState {
    pub total: usize,
    pub labelled: usize,
    /// The first card this reviewer has not labelled (`total` when all are).
    pub first_unlabelled: usize,
    /// By dimension (sample) or kind (flagged).
    pub by: BTreeMap<String, Progress>,
}

fn queue_state(s: &Session, queue: Queue) -> QueueState {
    s.with_labels(|labels, _| queue_state_of(s, queue, labels))
}

/// Which cards of `queue` this reviewer has labelled. Built from the labels (what has been
/// labelled, far fewer than a large flagged queue's cards), not by looking up every card.
fn labelled_mask(s: &Session, queue: Queue, labels: &EffectiveLabels) -> Vec<bool> {
    let mut mask = vec![false; s.len(queue)];
    for (item, by) in labels {
        if by.contains_key(&s.reviewer)
            && let Some((q, i)) = s.position(item)
            && q == queue
            && let Some(m) = mask.get_mut(i)
        {
            *m = true;
        }
    }
    mask
}

fn queue_state_of(s: &Session, queue: Queue, labels: &EffectiveLabels) -> QueueState {
    queue_state_from(s, queue, &labelled_mask(s, queue, labels))
}

fn queue_state_from(s: &Session, queue: Queue, mask: &[bool]) -> QueueState {
    let mut by: BTreeMap<String, Progress> = s
        .group_totals(queue)
        .iter()
        .map(|(g, &total)| (g.clone(), Progress { total, labelled: 0 }))
        .collect();
    let mut labelled = 0;
    for (i, _) in mask.iter().enumerate().filter(|(_, done)| **done) {
        labelled += 1;
        if let Some(g) = by.get_mut(s.group(queue, i)) {
            g.labelled += 1;
        }
    }
    QueueState {
        total: mask.len(),
        labelled,
        first_unlabelled: mask.iter().position(|done| !done).unwrap_or(mask.len()),
        by,
    }
}

/// The card to show after a label at `index`: the first this reviewer has not labelled after
/// it, else the first before it (a skipped one), else the end of the queue (`total`).
fn next_unlabelled(mask: &[bool], index: usize) -> usize {
    let after = index.saturating_add(1).min(mask.len());
    mask[after..]
        .iter()
        .position(|done| !done)
        .map(|i| after + i)
        .or_else(|| mask[..index.min(mask.len())].iter().position(|done| !done))
        .unwrap_or(mask.len())
}

pub async fn state(State(s): State<Shared>) -> Json<serde_json::Value> {
    Json(json!({
        "reviewer": s.reviewer,
        "benchmark": s.queues.summary.benchmark.name,
        "queues": {
            "sample": queue_state(&s, Queue::Sample),
            "flagged": queue_state(&s, Queue::Flagged),
        }
    }))
}

#[derive(Debug, Deserialize)]
pub struct CardQuery {
    pub queue: String,
    pub index: usize,
}

fn bad(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

fn parse_queue(q: &str) -> Result<Queue, Box<Response>> {
    Queue::parse(q)
        .ok_or_else(|| Box::new(bad(StatusCode::BAD_REQUEST, format!("unknown queue `{q}`"))))
}

pub async fn card(State(s): State<Shared>, Query(q): Query<CardQuery>) -> Response {
    let queue = match parse_queue(&q.queue) {
        Ok(q) => q,
        Err(r) => return *r,
    };
    let Some(card) = s.card(queue, q.index) else {
        return bad(
            StatusCode::NOT_FOUND,
            format!(
                "no card {} #{} (or its turn is not in the benchmark)",
                q.queue, q.index
            ),
        );
    };
    let label = s.label_of(&card.item);
    Json(json!({"index": q.index, "total": s.len(queue), "card": card, "label": label}))
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelRequest {
    pub queue: String,
    pub index: usize,
    pub item: String,
    /// `null`: undo.
    pub label: Option<String>,
    #[serde(default)]
    pub seconds: f64,
    #[serde(default)]
    pub note: String,
}

pub async fn label(State(s): State<Shared>, Json(r): Json<LabelRequest>) -> Response {
    let queue = match parse_queue(&r.queue) {
        Ok(q) => q,
        Err(resp) => return *resp,
    };
    match s.record(
        queue,
        r.index,
        &r.item,
        r.label.as_deref(),
        r.seconds,
        &r.note,
    ) {
        Ok(()) => {
            let (state, next) = s.with_labels(|labels, _| {
                let mask = labelled_mask(&s, queue, labels);
                (
                    queue_state_from(&s, queue, &mask),
                    next_unlabelled(&mask, r.index),
                )
            });
            Json(json!({"ok": true, "state": state, "next": next})).into_response()
        }
        Err(Rejected::Invalid(m)) => bad(StatusCode::UNPROCESSABLE_ENTITY, m),
        Err(Rejected::Failed(e)) => {
            tracing::error!("saving a label: {e:#}");
            bad(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the label was not saved: {e:#}"),
            )
        }
    }
}

/// Counts of labels per queue, dimension (or kind) and label, over every reviewer.
pub async fn summary(State(s): State<Shared>) -> Json<serde_json::Value> {
    let (body, version) = s.with_labels(|labels, version| {
        // every group listed (an `items` entry of 0 keeps the empty ones), then the labels
        let mut counts: BTreeMap<&str, BTreeMap<String, BTreeMap<String, usize>>> = BTreeMap::new();
        for queue in [Queue::Sample, Queue::Flagged] {
            let per = counts.entry(queue.name()).or_default();
            for g in s.group_totals(queue).keys() {
                per.entry(g.clone()).or_default().insert("items".into(), 0);
            }
        }
        let mut reviewers: BTreeMap<String, usize> = BTreeMap::new();
        for (item, by) in labels {
            let Some((queue, i)) = s.position(item) else {
                continue;
            };
            let g = counts
                .entry(queue.name())
                .or_default()
                .entry(s.group(queue, i).to_string())
                .or_default();
            for (who, l) in by {
                *g.entry(l.clone()).or_default() += 1;
                *reviewers.entry(who.clone()).or_default() += 1;
            }
        }
        let body = json!({
            "queues": {
                "sample": queue_state_of(&s, Queue::Sample, labels),
                "flagged": queue_state_of(&s, Queue::Flagged, labels),
            },
            "labels": counts,
            "reviewers": reviewers,
        });
        (body, version)
    });
    // computing the estimates reads the audit's items (a second or more on a large audit): on
    // the blocking pool, so the other requests go on meanwhile
    let shared = s.clone();
    let computed = tokio::task::spawn_blocking(move || {
        shared.estimates(version, || match &shared.queues.holes_dir {
            Some(d) => hole_estimates(d),
            None => estimates(&shared.queues.audit_dir, &shared.queues.summary),
        })
    })
    .await;
    let mut body = body;
    body["estimates"] = computed.unwrap_or_else(|e| {
        tracing::warn!("review estimates: {e}");
        serde_json::Value::Null
    });
    Json(body)
}

/// The "Reviewed" figures of `mtr report` for the Summary tab, computed from the labels on disk
/// (every reviewer's, other processes' too); null while no usable label exists. An error is
/// logged and shown as no figures, never as made-up ones.
fn estimates(audit_dir: &std::path::Path, summary: &mtr_audit::Summary) -> serde_json::Value {
    let mut summary = summary.clone();
    let computed =
        mtr_audit::review_estimates::attach(audit_dir, &mut summary).map(|_| summary.review);
    match computed {
        Ok(Some(review)) => serde_json::to_value(review).unwrap_or(serde_json::Value::Null),
        Ok(None) => serde_json::Value::Null,
        Err(e) => {
            tracing::warn!("review estimates: {e}");
            serde_json::Value::Null
        }
    }
}

/// The Reviewed figures of a judge folder's holes (per run: the share of its holes that are
/// relevant three ways, and its measures filled by the judges and with the reviewers' labels),
/// computed from the labels on disk; null while no usable label exists.
fn hole_estimates(dir: &std::path::Path) -> serde_json::Value {
    match mtr_audit::holes::review_of(dir) {
        Ok(Some(review)) => serde_json::to_value(review).unwrap_or(serde_json::Value::Null),
        Ok(None) => serde_json::Value::Null,
        Err(e) => {
            tracing::warn!("review estimates: {e}");
            serde_json::Value::Null
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_unlabelled;

    #[test]
    fn the_next_card_is_the_next_unlabelled_then_a_skipped_one_then_the_end() {
        let mask = [true, false, true, true, false, true];
        assert_eq!(next_unlabelled(&mask, 1), 4, "past the labelled ones");
        assert_eq!(next_unlabelled(&mask, 4), 1, "back to the skipped one");
        assert_eq!(next_unlabelled(&[true, true, true], 1), 3, "the end");
        assert_eq!(next_unlabelled(&[], 0), 0);
        assert_eq!(next_unlabelled(&mask, 9), 1, "an index past the end");
    }
}
