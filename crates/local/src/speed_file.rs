//! `local/speed.json` of the state folder: the speeds `mtr local speed` measured, one entry per local
//! server, so that the embedded local endpoints carry them (`prompt_tokens_per_s`,
//! `output_tokens_per_s`) and a `--dry-run` can tell the wall time on this machine. An entry
//! counts only for a server with the threads it was measured at.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{LocalServer, ServerKind, SpeedReport};
use crate::error::{LocalError, Result};

/// The contents of `speed.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedFile {
    /// The latest figures per server name.
    #[serde(default)]
    pub servers: BTreeMap<String, SpeedReport>,
}

/// A speed that can be divided by: finite and positive.
fn usable(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then_some(x)
}

impl SpeedFile {
    /// Reads `path`: None when there is no such file.
    pub fn read(path: &Path) -> Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(speed_err("cannot read", path, e.to_string())),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| speed_err("cannot parse", path, e.to_string()))
    }

    /// Reads `path` for a plan: a missing or broken file is empty (a broken one with a
    /// warning), since the speeds only inform estimates.
    pub fn load(path: &Path) -> Self {
        Self::read(path)
            .unwrap_or_else(|e| {
                tracing::warn!("{e}; local speeds unknown until `mtr local speed` measures them");
                None
            })
            .unwrap_or_default()
    }

    /// Writes `path` atomically (a temporary file renamed into place).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| speed_err("cannot write", path, e.to_string()))?;
        mtr_core::atomic::write_atomic(path, format!("{text}\n").as_bytes())
            .map_err(|e| speed_err("cannot write", path, e.to_string()))
    }

    /// Records `report` under its server's name, replacing that server's older figures.
    pub fn insert(&mut self, report: SpeedReport) {
        self.servers.insert(report.server.clone(), report);
    }

    /// The figures for `server`, when some were measured at its threads (and say something:
    /// a chat server's both speeds, the embeddings server's prompt speed).
    pub fn speed_of(&self, server: &LocalServer) -> Option<&SpeedReport> {
        let r = self
            .servers
            .get(&server.name)
            .filter(|r| r.threads == server.threads)?;
        usable(r.prompt_tok_s)?;
        if matches!(server.kind, ServerKind::Chat { .. }) {
            usable(r.generation_tok_s)?;
        }
        Some(r)
    }

    /// `(prompt_tokens_per_s, output_tokens_per_s)` of `server`'s endpoints; None where
    /// unknown (the embeddings server generates nothing: no output speed).
    pub fn endpoint_speeds(&self, server: &LocalServer) -> (Option<f64>, Option<f64>) {
        match self.speed_of(server) {
            Some(r) => (usable(r.prompt_tok_s), usable(r.generation_tok_s)),
            None => (None, None),
        }
    }
}

fn speed_err(action: &'static str, path: &Path, message: String) -> LocalError {
    LocalError::SpeedFile {
        action,
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeepAlive;
    use crate::testkit::servers::chat_server;
    use crate::testkit::{QWEN05_FILE, installed};

    fn report(server: &str, threads: u32, prompt: f64, generation: f64) -> SpeedReport {
        SpeedReport {
            server: server.into(),
            alias: "qwen2.5-coder-0.5b-instruct-q4_k_m".into(),
            model_file: QWEN05_FILE.into(),
            threads,
            slots: 2,
            runs: 2,
            prompt_tokens: 400,
            prompt_tok_s: prompt,
            generated_tokens: 200,
            generation_tok_s: generation,
            measured_unix: 1_764_675_323,
        }
    }

    #[test]
    fn round_trips_through_an_atomic_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("local/speed.json");
        assert_eq!(SpeedFile::read(&path).unwrap(), None, "no file yet");
        assert_eq!(SpeedFile::load(&path), SpeedFile::default());
        let mut f = SpeedFile::default();
        f.insert(report("local-a", 1, 50.0, 15.0));
        f.insert(report("local-b", 1, 90.0, 50.0));
        f.save(&path).unwrap();
        assert_eq!(SpeedFile::read(&path).unwrap(), Some(f.clone()));
        // the file is keyed by server name, its fields as documented
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let a = &v["servers"]["local-a"];
        assert_eq!(a["threads"], 1);
        assert_eq!(a["slots"], 2);
        assert_eq!(a["runs"], 2);
        assert_eq!(a["prompt_tok_s"], 50.0);
        assert_eq!(a["generation_tok_s"], 15.0);
        assert_eq!(a["model_file"], QWEN05_FILE);
        // a new measurement replaces the server's figures; the temporary file is gone
        f.insert(report("local-a", 2, 80.0, 20.0));
        f.save(&path).unwrap();
        let back = SpeedFile::read(&path).unwrap().unwrap();
        assert_eq!(back.servers.len(), 2);
        assert_eq!(back.servers["local-a"].threads, 2);
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["speed.json"]);
    }

    #[test]
    fn the_file_beside_the_servers_state_files_is_no_server() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]).unwrap();
        let mut f = SpeedFile::default();
        f.insert(report("local-a", 1, 50.0, 15.0));
        f.save(&paths.speed_file()).unwrap();
        assert_eq!(paths.speed_file(), paths.state_dir().join("speed.json"));
        assert!(crate::known_servers(&paths).is_empty());
    }

    #[test]
    fn a_broken_file_is_an_error_to_read_and_empty_to_plan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("speed.json");
        std::fs::write(&path, "{\"servers\": 3}").unwrap();
        let e = SpeedFile::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("speed.json") && e.contains("mtr local speed"),
            "{e}"
        );
        assert_eq!(SpeedFile::load(&path), SpeedFile::default());
    }

    #[test]
    fn figures_count_only_for_the_same_server_and_threads() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]).unwrap();
        let server = chat_server(&paths, "qwen0.5b", "", KeepAlive::Default);
        let mut f = SpeedFile::default();
        assert_eq!(f.endpoint_speeds(&server), (None, None), "nothing measured");
        f.insert(report(&server.name, server.threads + 1, 50.0, 15.0));
        assert_eq!(f.endpoint_speeds(&server), (None, None), "other threads");
        f.insert(report(&server.name, server.threads, 50.0, 0.0));
        assert_eq!(
            f.endpoint_speeds(&server),
            (None, None),
            "no generation speed"
        );
        f.insert(report(&server.name, server.threads, 50.0, 15.0));
        assert_eq!(f.endpoint_speeds(&server), (Some(50.0), Some(15.0)));
        f.insert(report("local-other", server.threads, 50.0, 15.0));
        let mut renamed = (*server).clone();
        renamed.name = "local-third".into();
        assert_eq!(f.endpoint_speeds(&renamed), (None, None), "another server");
    }
}
