//! `mtr.toml`, read as the binary reads it (`src/config.rs`, which no library reaches): the
//! file parsed as a TOML table, a parse error's span turned into a line, then each section a
//! command reads (`[llm]`, `[audit]`, `[synth]`, `[bench]`) deserialised into its settings
//! with the path of a bad key, and validated where its type says how.

use serde::de::DeserializeOwned;

/// Deserialises the section `name` of `table` as `Config::section` does.
fn section<T: DeserializeOwned + Default>(table: &toml::Table, name: &str) -> Option<T> {
    let value = table.get(name)?.clone();
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(v) => Some(v),
        Err(e) => {
            let _ = (e.path().to_string(), e.into_inner().message().to_string());
            None
        }
    }
}

/// Reads `data` as `mtr.toml`.
pub fn read(data: &[u8]) {
    // the binary reads the file with `read_to_string`: not UTF-8 is an I/O error there
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let table = match toml::from_str::<toml::Table>(text) {
        Ok(t) => t,
        Err(e) => {
            // the line of the error, as `Config::load` computes it
            if let Some(s) = e.span() {
                let _ = text[..s.start.min(text.len())].matches('\n').count();
            }
            return;
        }
    };
    if let Some(c) = section::<mtr_llm::LlmConfig>(&table, "llm") {
        let _ = c.validate();
    }
    if let Some(c) = section::<mtr_audit::AuditSettings>(&table, "audit") {
        let _ = c.validate();
    }
    if let Some(c) = section::<mtr_pipeline::SynthConfig>(&table, "synth") {
        let _ = c.validate();
    }
    let _ = section::<mtr_bench::job::BenchSettings>(&table, "bench");
}
