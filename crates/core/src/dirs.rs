//! Where mtr keeps its files on this machine: the one place the `MTR_HOME` / XDG rules live
//! (the scripts read them from `mtr local paths`, and `scripts/setup-local-llm.sh` restates
//! the data rule, kept equal by a test).
//!
//! | kind | what | default | set by | under `MTR_HOME` |
//! |---|---|---|---|---|
//! | cache | safe to delete: import and index caches | `~/.cache/mtr` | `XDG_CACHE_HOME` | `$MTR_HOME/cache` |
//! | data | costs money or work to rebuild: models, venv, the LLM answer cache and its spend ledger | `~/.local/share/mtr` | `XDG_DATA_HOME` | `$MTR_HOME/data` |
//! | state | the local servers' state, logs and measured speeds | `~/.local/state/mtr` | `XDG_STATE_HOME` | `$MTR_HOME/state` |
//! | config | `mtr.toml` when the current folder has none | `~/.config/mtr` | `XDG_CONFIG_HOME` | `$MTR_HOME/config` |
//!
//! `MTR_HOME` overrides every XDG variable. An empty variable counts as unset, everywhere;
//! with no `HOME` either, the system's temporary folder stands for it. The layout before
//! this one kept everything in `$MTR_HOME`, default `~/.cache/mtr`: [`previous`] moves it once.

use std::ffi::OsString;
use std::path::PathBuf;

pub mod previous;

/// mtr's four folders on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// Safe to delete (import and index caches).
    pub cache: PathBuf,
    /// Costs money or work to rebuild (models, venv, LLM answer cache, spend ledger).
    pub data: PathBuf,
    /// The local servers' state files, logs and `speed.json`.
    pub state: PathBuf,
    /// Where `mtr.toml` is looked for when the current folder has none.
    pub config: PathBuf,
}

impl Dirs {
    /// The folders from this process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// The folders from the variables `var` gives (an empty value counts as unset).
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(home) = set("MTR_HOME") {
            return Self {
                cache: home.join("cache"),
                data: home.join("data"),
                state: home.join("state"),
                config: home.join("config"),
            };
        }
        let home = set("HOME").unwrap_or_else(std::env::temp_dir);
        let xdg = |name: &str, default: &str| set(name).unwrap_or_else(|| home.join(default));
        Self {
            cache: xdg("XDG_CACHE_HOME", ".cache").join("mtr"),
            data: xdg("XDG_DATA_HOME", ".local/share").join("mtr"),
            state: xdg("XDG_STATE_HOME", ".local/state").join("mtr"),
            config: xdg("XDG_CONFIG_HOME", ".config").join("mtr"),
        }
    }

    /// Where an import of a read-only source is cached (`imports/<key>` under the cache).
    pub fn imports(&self) -> PathBuf {
        self.cache.join("imports")
    }

    /// Where the index of a read-only benchmark is kept (`indexes/<fingerprint>`).
    pub fn indexes(&self) -> PathBuf {
        self.cache.join("indexes")
    }

    /// The LLM answer cache and its spend ledger (one SQLite file).
    pub fn llm_cache(&self) -> PathBuf {
        self.data.join("llm-cache.sqlite")
    }

    /// The configuration file looked for when the current folder has no `mtr.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config.join("mtr.toml")
    }

    /// The folders as shell assignments (`mtr_cache_dir='...'`, one a line), for scripts to
    /// `eval` (`mtr local paths`).
    pub fn shell_lines(&self) -> String {
        [
            ("mtr_cache_dir", &self.cache),
            ("mtr_data_dir", &self.data),
            ("mtr_state_dir", &self.state),
            ("mtr_config_dir", &self.config),
        ]
        .iter()
        .map(|(k, p)| {
            let quoted = p.to_string_lossy().replace('\'', r"'\''");
            format!("{k}='{quoted}'\n")
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(vars: &[(&str, &str)]) -> Dirs {
        Dirs::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_default_layout_follows_xdg_under_home() {
        let d = dirs(&[("HOME", "/h")]);
        assert_eq!(d.cache, PathBuf::from("/h/.cache/mtr"));
        assert_eq!(d.data, PathBuf::from("/h/.local/share/mtr"));
        assert_eq!(d.state, PathBuf::from("/h/.local/state/mtr"));
        assert_eq!(d.config, PathBuf::from("/h/.config/mtr"));
        assert_eq!(
            d.llm_cache(),
            PathBuf::from("/h/.local/share/mtr/llm-cache.sqlite")
        );
        assert_eq!(d.imports(), PathBuf::from("/h/.cache/mtr/imports"));
        assert_eq!(d.config_file(), PathBuf::from("/h/.config/mtr/mtr.toml"));
    }

    #[test]
    fn each_xdg_variable_moves_its_folder() {
        let d = dirs(&[
            ("HOME", "/h"),
            ("XDG_CACHE_HOME", "/c"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_STATE_HOME", "/s"),
            ("XDG_CONFIG_HOME", "/k"),
        ]);
        assert_eq!(
            (d.cache, d.data, d.state, d.config),
            (
                "/c/mtr".into(),
                "/d/mtr".into(),
                "/s/mtr".into(),
                "/k/mtr".into()
            )
        );
    }

    #[test]
    fn mtr_home_overrides_every_xdg_variable() {
        let d = dirs(&[
            ("HOME", "/h"),
            ("MTR_HOME", "/m"),
            ("XDG_CACHE_HOME", "/c"),
            ("XDG_DATA_HOME", "/d"),
            ("XDG_STATE_HOME", "/s"),
            ("XDG_CONFIG_HOME", "/k"),
        ]);
        assert_eq!(
            (d.cache, d.data, d.state, d.config),
            (
                "/m/cache".into(),
                "/m/data".into(),
                "/m/state".into(),
                "/m/config".into()
            )
        );
    }

    #[test]
    fn an_empty_variable_counts_as_unset() {
        let d = dirs(&[
            ("HOME", "/h"),
            ("MTR_HOME", ""),
            ("XDG_CACHE_HOME", ""),
            ("XDG_DATA_HOME", ""),
            ("XDG_STATE_HOME", ""),
            ("XDG_CONFIG_HOME", ""),
        ]);
        assert_eq!(d, dirs(&[("HOME", "/h")]));
        let no_home = dirs(&[("HOME", "")]);
        assert_eq!(no_home.cache, std::env::temp_dir().join(".cache/mtr"));
    }

    #[test]
    fn the_shell_lines_quote_every_path() {
        let d = dirs(&[("MTR_HOME", "/it's here")]);
        assert_eq!(
            d.shell_lines(),
            "mtr_cache_dir='/it'\\''s here/cache'\nmtr_data_dir='/it'\\''s here/data'\n\
             mtr_state_dir='/it'\\''s here/state'\nmtr_config_dir='/it'\\''s here/config'\n"
        );
    }
}
