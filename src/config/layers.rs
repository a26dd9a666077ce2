//! Where a bad value came from: the layer that set a key (a flag, an environment variable,
//! the config file) is named in the error, with the file's line where it can be found.

use std::path::PathBuf;

use mtr_core::InputError;

use super::Config;

impl Config {
    /// The user's error for a value at `key` (dotted, section first) that does not parse:
    /// the flags (`given`, the section's keys) beat the environment, which beats the file.
    pub(super) fn blame(&self, key: &str, given: &toml::Table, message: String) -> InputError {
        let in_section = key.split_once('.').map_or("", |(_, rest)| rest);
        if !in_section.is_empty() && super::lookup_path(given, in_section).is_some() {
            return InputError::new("command line", message)
                .field(format!("--{}", in_section.replace(['.', '_'], "-")));
        }
        if let Some((_, var)) = self.env_var_of(key, &message) {
            return InputError::new(var, message)
                .field(key)
                .hint(format!("fix or unset the environment variable {var}"));
        }
        let file = self
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("mtr.toml"));
        let e = InputError::new(file, message).field(key);
        match line_of(&self.text, key) {
            Some(line) => e.line(line),
            None => e,
        }
    }

    /// The variable that set `key` or a table above it, or (an unknown key) a key right
    /// under it that the message names.
    fn env_var_of(&self, key: &str, message: &str) -> Option<&(String, String)> {
        self.env_vars.iter().find(|(k, _)| {
            k == key
                || key.starts_with(&format!("{k}."))
                || k.strip_prefix(&format!("{key}.")).is_some_and(|name| {
                    !name.contains('.') && message.contains(&format!("`{name}`"))
                })
        })
    }
}

/// The 1-based line of the deepest table or key of `key` (dotted) found in the TOML `text`.
fn line_of(text: &str, key: &str) -> Option<u64> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut at = None;
    for part in key.split('.') {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == part)?;
        at = Some(k.span().start);
        match v.get_ref() {
            toml::de::DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    at.map(|start| text[..start.min(text.len())].matches('\n').count() as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::line_of;

    #[test]
    fn finds_the_line_of_a_nested_key() {
        let text = "[llm]\nmax_cost = 1\n\n[audit]\nseed = 1\nresamples = \"many\"\n";
        assert_eq!(line_of(text, "audit.resamples"), Some(6));
        assert_eq!(line_of(text, "audit"), Some(4));
        assert_eq!(line_of("[a.b]\nc = 1\n", "a.b.c"), Some(2));
        assert_eq!(line_of(text, "synth.turns"), None);
    }
}
