//! Stamps the git commit into the binary (`MTR_GIT_COMMIT`) so every report's fingerprint can
//! name the exact source it came from. Outside a git checkout the stamp is simply absent.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-env-changed=MTR_GIT_COMMIT");
    if std::env::var_os("MTR_GIT_COMMIT").is_some() {
        return;
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(c) = commit {
        println!("cargo:rustc-env=MTR_GIT_COMMIT={c}");
    }
}
