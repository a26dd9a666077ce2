//! The page, inside the binary (no CDN: the review works offline): one HTML file with its
//! style and script put inline, so that the one URL with the token is all the browser loads
//! (the API calls send the token in a header). The script builds every text node with
//! `textContent`, never HTML from data, so the inline policy below is all it needs.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// The page with its style and script inline.
pub fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        INDEX
            .replace("/*STYLE*/", STYLE)
            .replace("/*SCRIPT*/", SCRIPT)
    })
}

pub async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
        ],
        page(),
    )
}
