//! The HTTP server of `mtr review`: axum on 127.0.0.1 (a free port unless `--port`), every
//! request checked for the session's random token (query `token=` or header `x-mtr-token`,
//! compared in constant time; 403 without it), request bodies limited to [`BODY_LIMIT`] (413
//! beyond), and nothing in a request names a file. The URL with the token is printed, and a
//! browser opened where there is a display.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use subtle::ConstantTimeEq;

use super::api::{self, Shared};
use super::assets;
use super::session::Session;

/// Largest request body accepted (a label with its note is well under it).
pub const BODY_LIMIT: usize = 16 * 1024;

/// A fresh random token (128 bits, hex).
fn new_token() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token of a request: `token=` in the query, or the `x-mtr-token` header.
fn token_of(req: &Request) -> Option<String> {
    if let Some(h) = req.headers().get("x-mtr-token") {
        return h.to_str().ok().map(str::to_string);
    }
    req.uri()
        .query()?
        .split('&')
        .find_map(|kv| kv.strip_prefix("token=").map(str::to_string))
}

async fn check_token(State(token): State<Arc<String>>, req: Request, next: Next) -> Response {
    let given = token_of(&req).unwrap_or_default();
    let ok: bool = given.as_bytes().ct_eq(token.as_bytes()).into();
    if !ok {
        return (
            StatusCode::FORBIDDEN,
            "forbidden: open the URL `mtr review` printed (with its token)\n",
        )
            .into_response();
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    resp
}

/// The routes, behind the token check and the body limit.
pub fn router(session: Shared, token: String) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/api/state", get(api::state))
        .route("/api/card", get(api::card))
        .route("/api/label", post(api::label))
        .route("/api/summary", get(api::summary))
        .with_state(session)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(Arc::new(token), check_token))
}

/// Opens `url` in the desktop's browser, where there is a display.
fn open_browser(url: &str) {
    let has_display = cfg!(target_os = "macos")
        || std::env::var_os("DISPLAY").is_some()
        || std::env::var_os("WAYLAND_DISPLAY").is_some();
    if !has_display {
        return;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        tracing::info!("could not open a browser ({opener}: {e}); open the URL by hand");
    }
}

/// Serves the review until interrupted (Ctrl-C ends the process with 130; every label
/// acknowledged is on disk already).
pub async fn serve(session: Session, port: Option<u16>, browser: bool) -> anyhow::Result<ExitCode> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port.unwrap_or(0)));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    let token = new_token();
    let url = format!("http://{local}/?token={token}");
    let sample = session.len(mtr_audit::review_queue::Queue::Sample);
    let flagged = session.len(mtr_audit::review_queue::Queue::Flagged);
    let labels = session.labels_path.display().to_string();
    let reviewer = session.reviewer.clone();
    crate::cmd::open::emit(&format!(
        "mtr review: {sample} sample cards, {flagged} flagged; reviewer {reviewer}; labels go to {labels}\nopen {url}\n(Ctrl-C stops)\n"
    ))?;
    if browser {
        open_browser(&url);
    }
    let app = router(Arc::new(session), token);
    axum::serve(listener, app)
        .await
        .context("serving the review page")?;
    Ok(ExitCode::SUCCESS)
}
