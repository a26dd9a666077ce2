//! Test support for the local modules: an installation as the setup script leaves it, with no
//! server able to start (the venv's python is an empty file), or with a stand-in server that
//! answers the health check and nothing else.

use std::path::Path;

use super::LocalPaths;

pub(super) const SMOLLM2_FILE: &str = "smollm2-135m-instruct-q4_1.gguf";
pub(super) const QWEN05_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// An installation under `home` as the setup script leaves it: the venv's python and the
/// given model files (empty stand-ins; no test here starts a server).
pub(super) fn installed(home: &Path, models: &[&str]) -> LocalPaths {
    let paths = LocalPaths {
        home: home.to_path_buf(),
    };
    std::fs::create_dir_all(home.join("venv/bin")).unwrap();
    std::fs::write(paths.venv_python(), "").unwrap();
    std::fs::create_dir_all(paths.models()).unwrap();
    for f in models {
        std::fs::write(paths.models().join(f), "x").unwrap();
    }
    paths
}

/// An installation whose "llama.cpp launcher" is python's http.server, which answers the
/// health check (`/v1/models`) and nothing else: starting it takes a moment, no model. Its
/// arguments stay those mtr gives the launcher (launcher, model, port, ...), as a real chat
/// server's do.
pub(super) fn tiny_installation(home: &Path) -> LocalPaths {
    let paths = LocalPaths {
        home: home.to_path_buf(),
    };
    let www = home.join("www");
    std::fs::create_dir_all(www.join("v1")).unwrap();
    std::fs::write(www.join("v1/models"), "{}").unwrap();
    std::fs::create_dir_all(home.join("venv/bin")).unwrap();
    let serve = format!(
        "import sys, functools, http.server as h; \
         h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[3])), \
         functools.partial(h.SimpleHTTPRequestHandler, directory='{}')).serve_forever()",
        www.display()
    );
    std::fs::write(
        paths.venv_python(),
        format!("#!/bin/sh\nexec python3 -c \"{serve}\" \"$@\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(paths.venv_python(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(paths.models()).unwrap();
    for k in super::KNOWN_MODELS {
        std::fs::write(paths.models().join(k.file), "x").unwrap();
    }
    paths
}
