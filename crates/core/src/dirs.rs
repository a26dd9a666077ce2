//! Where mtr keeps its files on this machine: the one place the `MTR_HOME` / XDG rules live.

use std::path::PathBuf;

/// `$MTR_HOME`, default `${XDG_CACHE_HOME:-$HOME/.cache}/mtr` (same rule as the setup script).
pub fn mtr_home() -> PathBuf {
    if let Some(h) = std::env::var_os("MTR_HOME") {
        return PathBuf::from(h);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("mtr")
}
