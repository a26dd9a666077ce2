//! Configuration: one mechanism layers every setting, defaults < `mtr.toml` (looked up in the
//! current folder, then `$XDG_CONFIG_HOME/mtr/` or `~/.config/mtr/`) < `MTR_SECTION__KEY`
//! environment variables < command-line flags. A setting is declared once, as a field of the
//! section struct of the crate that owns it (its type, its default in `Default`, its doc);
//! the flags over it are declared with [`flags::section_flags!`]. A bad value names where it
//! came from: the file, line and key, or the environment variable, or the flag. Secrets are
//! never stored here: endpoints name the environment variable holding their key
//! (`api_key_env`).

pub mod flags;
mod layers;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use flags::{Flags, NoFlags};

/// A section of `mtr.toml` a command reads: its name; its defaults are its `Default` (every
/// section struct is `#[serde(default)]`, so a key the layers leave unset keeps it).
pub trait Section: Serialize + DeserializeOwned + Default {
    const NAME: &'static str;
}

impl Section for mtr_audit::AuditSettings {
    const NAME: &'static str = "audit";
}

impl Section for mtr_pipeline::SynthConfig {
    const NAME: &'static str = "synth";
}

impl Section for mtr_llm::LlmConfig {
    const NAME: &'static str = "llm";
}

impl Section for mtr_bench::job::BenchSettings {
    const NAME: &'static str = "bench";
}

impl Section for mtr_retrieve::IndexSettings {
    const NAME: &'static str = "index";
}

impl Section for mtr_retrieve::RetrieveSettings {
    const NAME: &'static str = "retrieve";
}

impl Section for mtr_retrieve::StatsSettings {
    const NAME: &'static str = "stats";
}

/// The effective configuration as a TOML table, plus where it came from.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub table: toml::Table,
    pub source: Option<PathBuf>,
    /// The dotted keys set by `MTR_SECTION__KEY` environment variables.
    pub env: Vec<String>,
    /// The environment variable that set each dotted key of `env`.
    env_vars: Vec<(String, String)>,
    /// The config file's text, to find the line of a bad key.
    text: String,
    /// The table [`Config::hash`] hashes where it is not `table`: every layer but the
    /// [`SHORT_VARS`].
    hashed: Option<toml::Table>,
}

/// Where a value of the effective configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    Default,
    File,
    /// The environment variable that set it.
    Env(&'a str),
}

impl Origin<'_> {
    fn name(self) -> String {
        match self {
            Origin::Default => "default".into(),
            Origin::File => "file".into(),
            Origin::Env(var) => format!("env {var}"),
        }
    }
}

impl Config {
    /// Loads the config file (explicit path, or the lookup order) and applies env overrides.
    pub fn load(explicit: Option<&Path>) -> Result<Self> {
        let source = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => lookup(),
        };
        let text = match &source {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("reading config {}", p.display()))?,
            None => String::new(),
        };
        let mut table = match &source {
            Some(p) => toml::from_str::<toml::Table>(&text).map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                anyhow::Error::new(mtr_core::Error::from(
                    mtr_core::InputError::new(p, e.message().to_string())
                        .line(line.unwrap_or(0) as u64),
                ))
            })?,
            None => toml::Table::new(),
        };
        let vars: Vec<(String, String)> = std::env::vars().collect();
        // the fingerprint leaves out what only the short variables set (the local model, where
        // its servers run, how long they stay up), as it did before they went through this layer
        let mut hashed = table.clone();
        apply_env(
            &mut hashed,
            vars.iter()
                .filter(|(k, _)| !SHORT_VARS.iter().any(|(name, _, _)| name == k))
                .cloned(),
        );
        let env_vars = apply_env(&mut table, vars.into_iter());
        let mut config = Self::from_layers(table, source, text, env_vars);
        config.hashed = Some(hashed);
        Ok(config)
    }

    /// A configuration from the file's table (environment already applied), the file and its
    /// text, and the variables that were applied (dotted key, variable).
    fn from_layers(
        table: toml::Table,
        source: Option<PathBuf>,
        text: String,
        env_vars: Vec<(String, String)>,
    ) -> Self {
        Self {
            table,
            source,
            env: env_vars.iter().map(|(k, _)| k.clone()).collect(),
            env_vars,
            text,
            hashed: None,
        }
    }

    /// One section with every layer applied: its defaults, the file, the environment and the
    /// `flags` the user gave. A value that does not parse is the user's error, in every
    /// command, naming where it came from: the file, line and key (`mtr.toml:3: field
    /// `audit.resamples`: invalid type: ...`), the environment variable, or the flag.
    pub fn settings<T: Section>(&self, flags: &dyn Flags) -> Result<T> {
        self.layered(T::NAME, flags)
    }

    /// Deserialises one section (`[llm]`, `[audit]`, ...) without flags; a missing section
    /// gives the default.
    pub fn section<T: DeserializeOwned + Default>(&self, name: &str) -> Result<T> {
        self.layered(name, &NoFlags)
    }

    fn layered<T: DeserializeOwned + Default>(&self, name: &str, flags: &dyn Flags) -> Result<T> {
        // a value TOML cannot hold (an integer above i64::MAX) is the user's
        let given = flags.table().map_err(|e| {
            anyhow::Error::new(mtr_core::Error::from(
                mtr_core::InputError::new("command line", e.to_string())
                    .field(format!("a flag over [{name}]")),
            ))
        })?;
        let value = match self.table.get(name) {
            None if given.is_empty() => return Ok(T::default()),
            None => toml::Value::Table(given.clone()),
            Some(toml::Value::Table(t)) => {
                let mut t = t.clone();
                merge(&mut t, &given);
                toml::Value::Table(t)
            }
            Some(other) => other.clone(),
        };
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = match e.path().to_string().as_str() {
                "." => Vec::new(),
                p => vec![p.to_string()],
            };
            let key = std::iter::once(name.to_string())
                .chain(path)
                .collect::<Vec<_>>()
                .join(".");
            let message = e.into_inner().message().to_string();
            anyhow::Error::new(mtr_core::Error::from(self.blame(&key, &given, message)))
        })
    }

    /// The error for a setting (`section.key`) that a command finds wrong after loading: it
    /// names the environment variable or the file and line that set it.
    pub fn blame_setting(&self, key: &str, message: String) -> mtr_core::InputError {
        self.blame(key, &toml::Table::new(), message)
    }

    /// The effective configuration, secrets masked: every section of `defaults` (a section's
    /// name and its default value) overlaid by the file and the environment, and every value
    /// followed by where it came from (`# default`, `# file`, `# env MTR_...`, naming the
    /// variable). A key that is not set and has no default (an optional value) is not shown.
    pub fn show_effective(&self, defaults: &[(&str, toml::Value)]) -> String {
        let mut merged = toml::Table::new();
        for (name, value) in defaults {
            merged.insert((*name).to_string(), value.clone());
        }
        merge(&mut merged, &self.table);
        mask_secrets(&mut merged);
        let origin = |path: &str| {
            if let Some((_, var)) = self
                .env_vars
                .iter()
                .find(|(e, _)| e == path || path.starts_with(&format!("{e}.")))
            {
                Origin::Env(var)
            } else if lookup_path(&self.table, path).is_some() {
                Origin::File
            } else {
                Origin::Default
            }
        };
        let mut out = String::new();
        render(&mut out, "", &merged, &origin);
        out
    }

    /// A hash of the effective configuration (secrets masked), for report fingerprints.
    pub fn hash(&self) -> String {
        let shown = masked_toml(self.hashed.as_ref().unwrap_or(&self.table));
        mtr_core::fingerprint::hash_bytes(shown.as_bytes())
    }
}

/// `table` as TOML with secret-looking values masked.
fn masked_toml(table: &toml::Table) -> String {
    let mut t = table.clone();
    mask_secrets(&mut t);
    toml::to_string_pretty(&t).unwrap_or_default()
}

fn lookup() -> Option<PathBuf> {
    let local = PathBuf::from("mtr.toml");
    if local.is_file() {
        return Some(local);
    }
    let p = mtr_core::dirs::Dirs::from_env().config_file();
    p.is_file().then_some(p)
}

/// Overlays `from` onto `into`, table by table; any other value of `from` replaces.
fn merge(into: &mut toml::Table, from: &toml::Table) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

pub(crate) fn lookup_path<'a>(table: &'a toml::Table, dotted: &str) -> Option<&'a toml::Value> {
    let mut parts = dotted.split('.');
    let mut cur = table.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_table()?.get(p)?;
    }
    Some(cur)
}

/// Writes `table` as TOML with each value's origin as a trailing comment: values first, then
/// sub-tables (`[a.b]`) and arrays of tables (`[[a.b]]`, one origin for the whole array).
fn render<'a>(
    out: &mut String,
    prefix: &str,
    table: &toml::Table,
    origin: &dyn Fn(&str) -> Origin<'a>,
) {
    use std::fmt::Write as _;
    let path = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    let is_table_array = |v: &toml::Value| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(toml::Value::is_table))
    };
    for (k, v) in table {
        if v.is_table() || is_table_array(v) {
            continue;
        }
        let _ = writeln!(out, "{k} = {v}  # {}", origin(&path(k)).name());
    }
    for (k, v) in table {
        match v {
            toml::Value::Table(t) => {
                let p = path(k);
                let _ = writeln!(out, "\n[{p}]");
                render(out, &p, t, origin);
            }
            toml::Value::Array(items) if is_table_array(v) => {
                let p = path(k);
                let from = origin(&p).name();
                for item in items.iter().filter_map(toml::Value::as_table) {
                    let _ = writeln!(out, "\n[[{p}]]  # {from}");
                    render(out, &p, item, &|_: &str| origin(&p));
                }
            }
            _ => {}
        }
    }
}

/// The short variables that set one key of `[llm.local]` each, read by the same layer as
/// `MTR_SECTION__KEY` (so they beat the file, lose to a flag, and a bad value names the
/// variable): (variable, dotted key, whether its value is a string as written). A value of
/// these is the user's string (`0` is a keep-alive, not a number) except the cores'. An empty
/// value is no value.
pub(crate) const SHORT_VARS: &[(&str, &str, bool)] = &[
    ("MTR_KEEP_ALIVE", "llm.local.keep_alive", true),
    ("MTR_LOCAL_MODEL", "llm.local.model", true),
    ("MTR_LOCAL_USE_SERVER", "llm.local.use_server", true),
    ("MTR_LOCAL_CORES", "llm.local.cores", false),
];

/// `MTR_AUDIT__SAMPLE=20` sets `audit.sample = 20`; values parse as TOML where possible; the
/// [`SHORT_VARS`] set their keys. Returns the dotted keys it set, each with its variable.
fn apply_env(
    table: &mut toml::Table,
    vars: impl Iterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut set = Vec::new();
    for (k, v) in vars {
        if let Some((_, key, string)) = SHORT_VARS.iter().find(|(name, _, _)| *name == k) {
            if v.trim().is_empty() {
                continue;
            }
            let value = if *string {
                toml::Value::String(v)
            } else {
                toml_value(v)
            };
            let path: Vec<String> = key.split('.').map(str::to_string).collect();
            set_path(table, &path, value);
            set.push(((*key).to_string(), k));
            continue;
        }
        let Some(rest) = k.strip_prefix("MTR_") else {
            continue;
        };
        if !rest.contains("__") {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
        set_path(table, &path, toml_value(v));
        set.push((path.join("."), k));
    }
    set
}

/// A variable's value as TOML where it parses as a value, else as the string written.
fn toml_value(v: String) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or(toml::Value::String(v))
}

pub(crate) fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
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
        let c = Config::from_layers(t, None, String::new(), Vec::new());
        let shown = masked_toml(&c.table);
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("OPENAI_API_KEY"));
    }

    #[test]
    fn the_short_variables_set_their_keys_through_the_layer_and_leave_the_hash_alone() {
        let vars = |extra: &[(&str, &str)]| {
            let mut v = vec![("MTR_AUDIT__SEED".to_string(), "3".to_string())];
            v.extend(extra.iter().map(|(k, x)| (k.to_string(), x.to_string())));
            v
        };
        let file: toml::Table = toml::from_str("[llm.local]\nkeep_alive = \"10m\"\n").unwrap();
        let mut t = file.clone();
        let set = apply_env(
            &mut t,
            vars(&[
                ("MTR_KEEP_ALIVE", "0"),
                ("MTR_LOCAL_CORES", "1"),
                ("MTR_LOCAL_USE_SERVER", "generator"),
                ("MTR_LOCAL_MODEL", " "),
            ])
            .into_iter(),
        );
        let local = &t["llm"]["local"];
        // `0` is a keep-alive as written, not a number; the cores are a number; empty is unset
        assert_eq!(local["keep_alive"].as_str(), Some("0"));
        assert_eq!(local["cores"].as_integer(), Some(1));
        assert_eq!(local["use_server"].as_str(), Some("generator"));
        assert!(local.get("model").is_none());
        assert!(set.contains(&("llm.local.cores".into(), "MTR_LOCAL_CORES".into())));
        let parsed: mtr_llm::LlmConfig = t["llm"].clone().try_into().unwrap();
        assert_eq!(parsed.local.cores, Some(1));
        assert_eq!(parsed.local.keep_alive.as_deref(), Some("0"));
        // the fingerprint is the one without them, the file's keep-alive included
        let mut hashed = file.clone();
        apply_env(&mut hashed, vars(&[]).into_iter());
        let mut with = Config::from_layers(t, None, String::new(), set);
        with.hashed = Some(hashed.clone());
        let without = Config::from_layers(hashed, None, String::new(), Vec::new());
        assert_eq!(with.hash(), without.hash());
        assert!(masked_toml(&without.table).contains("keep_alive = \"10m\""));
    }

    #[test]
    fn effective_configuration_says_where_each_value_came_from() {
        let mut t: toml::Table =
            toml::from_str("[audit]\nresamples = 200\n[llm]\napi_key = \"sk-x\"\n").unwrap();
        let env = apply_env(
            &mut t,
            vec![("MTR_AUDIT__SAMPLE".to_string(), "7".to_string())].into_iter(),
        );
        let c = Config::from_layers(t, None, String::new(), env);
        let defaults: toml::Table = toml::from_str(
            "[audit]\nresamples = 1000\nsample = 50\nlevel = 0.95\n[audit.judges]\nn = 2\n",
        )
        .unwrap();
        let defaults: Vec<(&str, toml::Value)> = defaults
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let shown = c.show_effective(&defaults);
        assert!(shown.contains("resamples = 200  # file\n"), "{shown}");
        assert!(
            shown.contains("sample = 7  # env MTR_AUDIT__SAMPLE\n"),
            "{shown}"
        );
        assert!(shown.contains("level = 0.95  # default\n"), "{shown}");
        assert!(
            shown.contains("[audit.judges]\nn = 2  # default\n"),
            "{shown}"
        );
        assert!(shown.contains("api_key = \"***\"  # file\n"), "{shown}");
        assert!(!shown.contains("sk-x"), "{shown}");
    }

    #[test]
    fn url_credentials_are_masked() {
        let t: toml::Table = toml::from_str(
            "[[llm.endpoints]]\nname = \"a\"\nbase_url = \"http://user:pa55-in-url@10.0.0.5:8000/v1\"\nbase_urls = [\"https://u2:other-pw-9@h2/v1\"]\n",
        )
        .unwrap();
        let shown = masked_toml(&Config::from_layers(t, None, String::new(), Vec::new()).table);
        assert!(
            !shown.contains("pa55-in-url") && !shown.contains("other-pw-9"),
            "{shown}"
        );
        assert!(
            shown.contains("http://user:***@10.0.0.5:8000/v1"),
            "{shown}"
        );
    }

    /// A config file `text` under the environment `vars`, as `Config::load` builds it.
    fn layers(text: &str, vars: &[(&str, &str)]) -> Config {
        let mut t: toml::Table = toml::from_str(text).unwrap();
        let env = apply_env(
            &mut t,
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        );
        Config::from_layers(t, Some(PathBuf::from("mtr.toml")), text.into(), env)
    }

    flags::section_flags! {
        /// Flags over `[audit]`, as a command declares them.
        pub struct TestFlags for mtr_audit::AuditSettings {
            /// Worst items shown.
            worst: Option<usize> => "worst",
            /// Pool size.
            negatives: Option<usize> => "negatives",
            /// Negatives' queries.
            negatives_query: Option<mtr_audit::NegativesQuery> => "negatives_query",
            /// Judges of the letter picks.
            #[arg(value_delimiter = ',')]
            pick_judges: Option<Vec<String>> => "letter_picks.judges",
            /// No dense negatives.
            bm25_only: bool => "dense_negatives" = false,
        }
    }

    #[derive(clap::Parser)]
    struct TestCli {
        #[command(flatten)]
        flags: TestFlags,
    }

    fn flags(args: &[&str]) -> TestFlags {
        use clap::Parser as _;
        TestCli::try_parse_from(std::iter::once("mtr").chain(args.iter().copied()))
            .unwrap()
            .flags
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
        let c = layers(
            "[audit]\nseed = 1\nnegatives = 5\nworst = 20\n",
            &[("MTR_AUDIT__NEGATIVES", "6"), ("MTR_AUDIT__WORST", "30")],
        );
        let s: mtr_audit::AuditSettings = c.settings(&flags(&["--worst", "40"])).unwrap();
        assert_eq!((s.seed, s.negatives, s.worst), (1, 6, 40));
        assert_eq!(s.resamples, 2000, "the default where no layer sets it");
        let s: mtr_audit::AuditSettings = c.settings(&NoFlags).unwrap();
        assert_eq!(s.worst, 30);
        // a flag with a dotted key sets a nested table; a switch sets its fixed value
        let s: mtr_audit::AuditSettings = c
            .settings(&flags(&["--pick-judges", "a,b", "--bm25-only"]))
            .unwrap();
        assert_eq!(
            s.letter_picks.map(|l| l.judges),
            Some(vec!["a".into(), "b".into()])
        );
        assert!(!s.dense_negatives);
    }

    #[test]
    fn a_bad_environment_value_names_the_variable() {
        let c = layers("[audit]\nseed = 1\n", &[("MTR_AUDIT__RESAMPLES", "many")]);
        let e = c
            .settings::<mtr_audit::AuditSettings>(&NoFlags)
            .unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with("MTR_AUDIT__RESAMPLES: field `audit.resamples`"),
            "{text}"
        );
        assert!(!text.contains("mtr.toml"), "{text}");
        // an unknown key set by a variable names it too
        let c = layers("", &[("MTR_AUDIT__NEGATIVS", "3")]);
        let e = c
            .settings::<mtr_audit::AuditSettings>(&NoFlags)
            .unwrap_err();
        assert!(format!("{e:#}").starts_with("MTR_AUDIT__NEGATIVS"), "{e:#}");
        // a flag beats the bad variable: nothing of it is read
        let c = layers("", &[("MTR_AUDIT__WORST", "many")]);
        let s: mtr_audit::AuditSettings = c.settings(&flags(&["--worst", "4"])).unwrap();
        assert_eq!(s.worst, 4);
    }

    #[test]
    fn a_bad_file_value_names_the_file_line_and_key() {
        let c = layers(
            "[llm]\nmax_cost = 1.0\n\n[audit]\nresamples = \"many\"\n",
            &[],
        );
        let e = c
            .settings::<mtr_audit::AuditSettings>(&NoFlags)
            .unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with("mtr.toml:5: field `audit.resamples`: invalid type"),
            "{text}"
        );
        let c = layers("[audit]\nnegatives_query = \"sideways\"\n", &[]);
        let e = c
            .settings::<mtr_audit::AuditSettings>(&NoFlags)
            .unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with("mtr.toml:2: field `audit.negatives_query`"),
            "{text}"
        );
    }

    #[test]
    fn typed_flags_are_parsed_once_by_clap() {
        let f = flags(&["--negatives-query", "window:2"]);
        assert_eq!(
            f.negatives_query,
            Some(mtr_audit::NegativesQuery::Formulation(
                mtr_retrieve::QueryFormulation::Window(2)
            ))
        );
        let e = <TestCli as clap::Parser>::try_parse_from(["mtr", "--negatives-query", "sideways"]);
        assert!(e.is_err());
        // a value TOML cannot hold is the user's error too (exit 2), not an internal one
        let huge = (u64::MAX).to_string();
        let big = flags(&["--worst", &huge]);
        let e = layers("", &[])
            .settings::<mtr_audit::AuditSettings>(&big)
            .unwrap_err();
        assert_eq!(crate::exit::status_of(&e).code(), 2, "{e:#}");
        assert!(format!("{e:#}").starts_with("command line"), "{e:#}");
        let s: mtr_audit::AuditSettings = layers("", &[]).settings(&f).unwrap();
        assert_eq!(s.negatives_query.to_string(), "window:2");
    }

    #[test]
    fn help_states_the_default_of_the_declaration() {
        let h = flags::help::<mtr_audit::AuditSettings>(&[" Worst items shown."], "worst", None);
        assert_eq!(h, "Worst items shown [default: [audit] worst, else 10]");
        let h =
            flags::help::<mtr_pipeline::SynthConfig>(&[" Share."], "generation.switch_share", None);
        assert_eq!(
            h,
            "Share [default: [synth.generation] switch_share, else 0.5]"
        );
        let h = flags::help::<mtr_audit::AuditSettings>(&[" Sample."], "sample", None);
        assert!(h.ends_with("[default: [audit] sample, else unset]"), "{h}");
        // a default of "" (no persona file) is unset too, never an empty `else ]`
        let h = flags::help::<mtr_pipeline::SynthConfig>(&[" Who."], "personas.file", None);
        assert!(
            h.ends_with("[default: [synth.personas] file, else unset]"),
            "{h}"
        );
        // a default left out of the serialised section: the opposite of what the switch sets
        let h = flags::help::<mtr_pipeline::SynthConfig>(&[" Skip."], "skip_bad", Some(false));
        assert!(
            h.ends_with("[default: [synth] skip_bad, else false]"),
            "{h}"
        );
    }
}
