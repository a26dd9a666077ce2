//! Test support for the local servers and for the plan tests of `mtr-llm` (cargo feature
//! `testkit`): an installation as the setup script leaves it, with no server able to start
//! (the venv's python is an empty file), or with a stand-in server that answers the health
//! check and nothing else.

use std::io;
use std::path::Path;

use super::LocalPaths;

/// The SmolLM2-135M model's file name, as the setup script installs it.
pub const SMOLLM2_FILE: &str = "smollm2-135m-instruct-q4_1.gguf";
/// The Qwen2.5-Coder-0.5B model's file name, as the setup script installs it.
pub const QWEN05_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// An installation under `home` as the setup script leaves it: the venv's python and the
/// given model files (empty stand-ins; no test here starts a server).
pub fn installed(home: &Path, models: &[&str]) -> io::Result<LocalPaths> {
    let paths = LocalPaths::in_dir(home);
    std::fs::create_dir_all(home.join("venv/bin"))?;
    std::fs::write(paths.venv_python(), "")?;
    std::fs::create_dir_all(paths.models())?;
    for f in models {
        std::fs::write(paths.models().join(f), "x")?;
    }
    Ok(paths)
}

/// An installation whose "llama.cpp launcher" is python's http.server, which answers the
/// health check (`/v1/models`) and nothing else: starting it takes a moment, no model. Its
/// arguments stay those mtr gives the launcher (launcher, model, port, ...), as a real chat
/// server's do.
pub fn tiny_installation(home: &Path) -> io::Result<LocalPaths> {
    let paths = LocalPaths::in_dir(home);
    let www = home.join("www");
    std::fs::create_dir_all(www.join("v1"))?;
    std::fs::write(www.join("v1/models"), "{}")?;
    std::fs::create_dir_all(home.join("venv/bin"))?;
    let serve = format!(
        "import sys, functools, http.server as h; \
         h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[3])), \
         functools.partial(h.SimpleHTTPRequestHandler, directory='{}')).serve_forever()",
        www.display()
    );
    std::fs::write(
        paths.venv_python(),
        format!("#!/bin/sh\nexec python3 -c \"{serve}\" \"$@\"\n"),
    )?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(paths.venv_python(), std::fs::Permissions::from_mode(0o755))?;
    std::fs::create_dir_all(paths.models())?;
    for k in super::KNOWN_MODELS {
        std::fs::write(paths.models().join(k.file), "x")?;
    }
    Ok(paths)
}

/// Servers for this crate's own tests.
#[cfg(test)]
pub(crate) mod servers {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{KeepAlive, LocalPaths, LocalServer, ServerKind};

    /// The chat server of the known model `spec` under `paths`, as an empty `[llm.local]` plans it
    /// (one thread, two slots, named `local-<GGUF stem><suffix>`), stopping after `keep_alive`.
    pub(crate) fn chat_server(
        paths: &LocalPaths,
        spec: &str,
        suffix: &str,
        keep_alive: KeepAlive,
    ) -> Arc<LocalServer> {
        let (model, _family) = crate::resolve_model(paths, spec).unwrap();
        let stem = model.file_stem().unwrap().to_string_lossy().into_owned();
        Arc::new(LocalServer {
            name: format!("local-{stem}{suffix}"),
            alias: stem,
            kind: ServerKind::Chat { model },
            threads: 1,
            slots: 2,
            n_ctx: 4096,
            start_timeout: Duration::from_secs(120),
            paths: paths.clone(),
            keep_alive,
            assigned: Default::default(),
        })
    }

    /// A port on 127.0.0.1 where a stand-in answers the health check (`/v1/models`), as a running
    /// server does; it serves until the test's runtime ends.
    pub(crate) async fn healthy_port() -> u16 {
        let app = axum::Router::new().route("/v1/models", axum::routing::get(|| async { "{}" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        port
    }
}
