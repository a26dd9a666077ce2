//! Configuration: `mtr.toml` looked up in the current folder, then `$XDG_CONFIG_HOME/mtr/`
//! (or `~/.config/mtr/`), overridden by `MTR_SECTION__KEY` environment variables and then by
//! command-line flags. Sections are deserialised by the crate that owns them. Secrets are never
//! stored here: endpoints name the environment variable holding their key (`api_key_env`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;

/// The effective configuration as a TOML table, plus where it came from.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub table: toml::Table,
    pub source: Option<PathBuf>,
}

impl Config {
    /// Loads the config file (explicit path, or the lookup order) and applies env overrides.
    pub fn load(explicit: Option<&Path>) -> Result<Self> {
        let source = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => lookup(),
        };
        let mut table = match &source {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading config {}", p.display()))?;
                toml::from_str::<toml::Table>(&text).map_err(|e| {
                    let line = e
                        .span()
                        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                    anyhow::Error::new(mtr_core::Error::from(
                        mtr_core::InputError::new(p, e.message().to_string())
                            .line(line.unwrap_or(0) as u64),
                    ))
                })?
            }
            None => toml::Table::new(),
        };
        apply_env(&mut table, std::env::vars());
        Ok(Self { table, source })
    }

    /// Deserialises one section (`[llm]`, `[audit]`, ...); a missing section gives the default.
    pub fn section<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T> {
        match self.table.get(name) {
            None => Ok(T::default()),
            Some(v) => v
                .clone()
                .try_into()
                .with_context(|| format!("config section [{name}]{}", self.source_suffix())),
        }
    }

    fn source_suffix(&self) -> String {
        self.source
            .as_ref()
            .map(|p| format!(" in {}", p.display()))
            .unwrap_or_default()
    }

    /// The configuration as TOML with secret-looking values masked.
    pub fn show(&self) -> String {
        let mut t = self.table.clone();
        mask_secrets(&mut t);
        toml::to_string_pretty(&t).unwrap_or_default()
    }

    /// A hash of the effective configuration (secrets masked), for report fingerprints.
    pub fn hash(&self) -> String {
        mtr_core::fingerprint::hash_bytes(self.show().as_bytes())
    }
}

fn lookup() -> Option<PathBuf> {
    let local = PathBuf::from("mtr.toml");
    if local.is_file() {
        return Some(local);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let p = base.join("mtr").join("mtr.toml");
    p.is_file().then_some(p)
}

/// `MTR_AUDIT__SAMPLE=20` sets `audit.sample = 20`; values parse as TOML where possible.
fn apply_env(table: &mut toml::Table, vars: impl Iterator<Item = (String, String)>) {
    for (k, v) in vars {
        let Some(rest) = k.strip_prefix("MTR_") else {
            continue;
        };
        if !rest.contains("__") {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
        let value = toml::from_str::<toml::Table>(&format!("v = {v}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(toml::Value::String(v));
        set_path(table, &path, value);
    }
}

fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = table;
    for p in parents {
        let entry = cur
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(t) = entry else { return };
        cur = t;
    }
    cur.insert(last.clone(), value);
}

fn mask_secrets(t: &mut toml::Table) {
    for (k, v) in t.iter_mut() {
        let lk = k.to_ascii_lowercase();
        let secret = (lk.contains("key")
            || lk.contains("token")
            || lk.contains("secret")
            || lk.contains("password"))
            && !lk.ends_with("_env")
            && !lk.contains("tokens_per");
        match v {
            toml::Value::Table(inner) => mask_secrets(inner),
            toml::Value::Array(items) => {
                for item in items {
                    match item {
                        toml::Value::Table(inner) => mask_secrets(inner),
                        // `base_urls = [...]`
                        toml::Value::String(s) => {
                            if let std::borrow::Cow::Owned(m) =
                                mtr_llm::redact::mask_url_credentials(s)
                            {
                                *s = m;
                            }
                        }
                        _ => {}
                    }
                }
            }
            toml::Value::String(s) if secret => *s = "***".into(),
            // `base_url = "http://user:pass@host/v1"` (and any other URL) shows no password
            toml::Value::String(s) => {
                if let std::borrow::Cow::Owned(m) = mtr_llm::redact::mask_url_credentials(s) {
                    *s = m;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_and_masking() {
        let mut t: toml::Table =
            toml::from_str("[llm]\napi_key = \"sk-secret\"\napi_key_env = \"OPENAI_API_KEY\"\n")
                .unwrap();
        apply_env(
            &mut t,
            vec![
                ("MTR_AUDIT__SAMPLE".to_string(), "20".to_string()),
                ("MTR_LLM__MODEL".into(), "qwen".into()),
            ]
            .into_iter(),
        );
        assert_eq!(t["audit"]["sample"].as_integer(), Some(20));
        assert_eq!(t["llm"]["model"].as_str(), Some("qwen"));
        let c = Config {
            table: t,
            source: None,
        };
        let shown = c.show();
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("OPENAI_API_KEY"));
    }

    #[test]
    fn url_credentials_are_masked() {
        let t: toml::Table = toml::from_str(
            "[[llm.endpoints]]\nname = \"a\"\nbase_url = \"http://user:pa55-in-url@10.0.0.5:8000/v1\"\nbase_urls = [\"https://u2:other-pw-9@h2/v1\"]\n",
        )
        .unwrap();
        let shown = Config {
            table: t,
            source: None,
        }
        .show();
        assert!(
            !shown.contains("pa55-in-url") && !shown.contains("other-pw-9"),
            "{shown}"
        );
        assert!(
            shown.contains("http://user:***@10.0.0.5:8000/v1"),
            "{shown}"
        );
    }
}
