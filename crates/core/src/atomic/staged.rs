//! Atomic folder output: an import or an export is written into a temporary sibling of its
//! destination and moved into place only when every file is complete, so a failure (a bad
//! record half-way through a corpus, a full disk) leaves the destination as it was, never a
//! half-written benchmark that a later command would read.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Prefix of staging folders, beside the destination.
const STAGE_PREFIX: &str = ".mtr-stage-";

/// A folder that is written at [`StagedDir::path`] and appears at its destination on commit;
/// dropped without a commit, it is removed with everything in it.
#[derive(Debug)]
pub struct StagedDir {
    target: PathBuf,
    stage: tempfile::TempDir,
}

impl StagedDir {
    /// A staging folder beside `target` (whose parent is created).
    pub fn create(target: impl AsRef<Path>) -> Result<Self> {
        let target = target.as_ref().to_path_buf();
        let parent = super::created_parent(&target)?;
        clean_dead_stages(&parent);
        let stage = tempfile::Builder::new()
            .prefix(&format!("{STAGE_PREFIX}{}-", std::process::id()))
            .tempdir_in(&parent)
            .map_err(|e| Error::io(&parent, e))?;
        Ok(Self { target, stage })
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        self.stage.path()
    }

    /// The destination.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Replaces the destination folder (absent, or one the caller may replace whole) with the
    /// staged one: the old folder is moved aside, the new one renamed into place, the old one
    /// removed.
    pub fn commit_replacing(self) -> Result<()> {
        let staged = self.stage.keep();
        if !self.target.exists() {
            return rename(&staged, &self.target);
        }
        let aside = aside_name(&self.target);
        if let Err(e) = std::fs::rename(&self.target, &aside) {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(Error::io(&self.target, e));
        }
        if let Err(e) = rename(&staged, &self.target) {
            // put the old folder back: the destination stays as it was
            let _ = std::fs::rename(&aside, &self.target);
            let _ = std::fs::remove_dir_all(&staged);
            return Err(e);
        }
        std::fs::remove_dir_all(&aside).map_err(|e| Error::io(&aside, e))
    }

    /// Moves every staged file into the destination folder (created when absent), each one
    /// renamed over the file of the same name; other files there are left alone.
    pub fn commit_merging(self) -> Result<()> {
        if !self.target.exists() {
            let staged = self.stage.keep();
            return rename(&staged, &self.target);
        }
        merge(self.stage.path(), &self.target)
    }
}

/// Removes the staging folders in `dir` of processes that no longer run (killed mid-write);
/// errors are ignored, cleaning is a courtesy.
fn clean_dead_stages(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(STAGE_PREFIX))
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if super::pid_alive(pid) == Some(false) && entry.path().is_dir() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        let _ = std::fs::remove_dir_all(from);
        Error::io(to, e)
    })
}

/// A free name beside `target` for the folder it replaces.
fn aside_name(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = target.parent().unwrap_or(Path::new("."));
    let mut n = 0u32;
    loop {
        let p = parent.join(format!(".{name}.old-{}-{n}", std::process::id()));
        if !p.exists() {
            return p;
        }
        n += 1;
    }
}

fn merge(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| Error::io(from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(from, e))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if src.is_dir() {
            merge(&src, &dst)?;
        } else {
            std::fs::rename(&src, &dst).map_err(|e| Error::io(&dst, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_dropped_stage_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let s = StagedDir::create(tmp.path().join("out")).unwrap();
        std::fs::write(s.path().join("corpus.jsonl"), "{}").unwrap();
        drop(s);
        assert!(names(tmp.path()).is_empty());
    }

    #[test]
    fn the_stage_of_a_dead_process_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{STAGE_PREFIX}4000000000-x"));
        let mine = tmp
            .path()
            .join(format!("{STAGE_PREFIX}{}-y", std::process::id()));
        std::fs::create_dir_all(dead.join("sub")).unwrap();
        std::fs::create_dir(&mine).unwrap();
        let s = StagedDir::create(tmp.path().join("out")).unwrap();
        assert!(!dead.exists() && mine.exists());
        drop(s);
    }

    #[test]
    fn replacing_swaps_the_whole_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("old.txt"), "old").unwrap();
        let s = StagedDir::create(&out).unwrap();
        std::fs::write(s.path().join("new.txt"), "new").unwrap();
        s.commit_replacing().unwrap();
        assert_eq!(names(&out), vec!["new.txt"]);
        assert_eq!(names(tmp.path()), vec!["out"]);
    }

    #[test]
    fn merging_keeps_other_files_and_replaces_same_names() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir_all(out.join("qrels")).unwrap();
        std::fs::write(out.join("mine.txt"), "keep").unwrap();
        std::fs::write(out.join("qrels/test.tsv"), "old").unwrap();
        let s = StagedDir::create(&out).unwrap();
        std::fs::create_dir(s.path().join("qrels")).unwrap();
        std::fs::write(s.path().join("qrels/test.tsv"), "new").unwrap();
        s.commit_merging().unwrap();
        assert_eq!(names(&out), vec!["mine.txt", "qrels"]);
        assert_eq!(
            std::fs::read_to_string(out.join("qrels/test.tsv")).unwrap(),
            "new"
        );
        assert_eq!(names(tmp.path()), vec!["out"]);
        // a fresh destination is the staged folder renamed
        let fresh = tmp.path().join("fresh");
        let s = StagedDir::create(&fresh).unwrap();
        std::fs::write(s.path().join("a"), "a").unwrap();
        s.commit_merging().unwrap();
        assert_eq!(names(&fresh), vec!["a"]);
    }
}
