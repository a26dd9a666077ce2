//! Flags over a configuration section, declared once: each flag names the section key it
//! sets, and its help states the default read from the section's own `Default` (the setting's
//! one declaration), so no default is written twice and no command copies a flag into its
//! settings. [`section_flags!`] declares a command's flags; [`crate::config::Config::settings`]
//! layers them over the defaults, the file and the environment.

use serde::Serialize;

use super::Section;

/// Flags given on the command line, as a table of their section's keys (dotted keys become
/// nested tables). Only the flags the user gave are in it.
pub trait Flags {
    fn table(&self) -> Result<toml::Table, toml::ser::Error>;
}

/// No flags: a section as the file and the environment leave it.
pub struct NoFlags;

impl Flags for NoFlags {
    fn table(&self) -> Result<toml::Table, toml::ser::Error> {
        Ok(toml::Table::new())
    }
}

/// Sets `key` (dotted) of `table` to `value`, creating the tables on the way.
pub fn put<V: Serialize + ?Sized>(
    table: &mut toml::Table,
    key: &str,
    value: &V,
) -> Result<(), toml::ser::Error> {
    let path: Vec<String> = key.split('.').map(str::to_string).collect();
    super::set_path(table, &path, toml::Value::try_from(value)?);
    Ok(())
}

/// A flag's help: its doc lines, then where its default comes from and what that default is,
/// read from `S::default()` (`[default: [audit] seed, else 42]`). A switch's setting that the
/// section leaves out of its serialised form when it has its default (`skip_serializing_if`)
/// has the opposite of the value the switch sets (`switch`, the default the switch turns).
pub fn help<S: Section>(doc: &[&str], key: &str, switch: Option<bool>) -> String {
    let text = doc
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let text = text.strip_suffix('.').unwrap_or(&text);
    let (table, name) = match key.rsplit_once('.') {
        Some((parent, name)) => (format!("{}.{parent}", S::NAME), name),
        None => (S::NAME.to_string(), key),
    };
    let default = toml::Value::try_from(S::default())
        .ok()
        .and_then(|v| super::lookup_path(v.as_table()?, key).cloned());
    let value = match (default, switch) {
        // an empty string is how a section says "none" (`[synth.personas] file = ""`)
        (Some(v), _) if v.as_str() == Some("") => "unset".to_string(),
        (Some(v), _) => plain(&v),
        (None, Some(b)) => b.to_string(),
        (None, None) => "unset".to_string(),
    };
    format!("{text} [default: [{table}] {name}, else {value}]")
}

/// A value as a user types it on the command line: strings unquoted, lists comma-separated,
/// tables as `key=value` pairs.
fn plain(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(","),
        toml::Value::Table(t) => t
            .iter()
            .map(|(k, v)| format!("{k}={}", plain(v)))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// Declares a command's flags over a section of `mtr.toml`:
///
/// ```ignore
/// section_flags! {
///     pub struct AuditFlags for mtr_audit::AuditSettings {
///         /// Seed of every random choice.
///         seed: Option<u64> => "seed",
///         /// Keep the user agent's questions as they are.
///         no_humanizer: bool => "generation.humanizer.enabled" = false,
///     }
/// }
/// ```
///
/// A flag `name: Option<T> => "key"` is `--name <T>`, which sets `key` when given; a switch
/// `name: bool => "key" = VALUE` is `--name`, which sets `key` to the bool `VALUE`. Extra
/// `#[arg(...)]` attributes go on to clap. The help is the doc lines and the default.
macro_rules! section_flags {
    (
        $(#[$meta:meta])*
        pub struct $name:ident for $section:ty {
            $(
                $(#[doc = $doc:literal])*
                $(#[arg($($arg:tt)*)])*
                $field:ident : $ty:ty => $key:literal $(= $set:expr)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, clap::Args)]
        pub struct $name {
            $(
                #[arg(long, help = $crate::config::flags::help::<$section>(
                    &[$($doc),*],
                    $key,
                    [$(!$set),*].first().copied(),
                ))]
                $(#[arg($($arg)*)])*
                pub $field: $ty,
            )*
        }

        impl $crate::config::flags::Flags for $name {
            fn table(&self) -> Result<toml::Table, toml::ser::Error> {
                let mut table = toml::Table::new();
                $( $crate::config::flags::section_flags!(@put table, self.$field, $key $(= $set)?); )*
                Ok(table)
            }
        }
    };
    (@put $table:ident, $value:expr, $key:literal = $set:expr) => {
        if $value {
            $crate::config::flags::put(&mut $table, $key, &$set)?;
        }
    };
    (@put $table:ident, $value:expr, $key:literal) => {
        if let Some(v) = &$value {
            $crate::config::flags::put(&mut $table, $key, v)?;
        }
    };
}

pub(crate) use section_flags;
