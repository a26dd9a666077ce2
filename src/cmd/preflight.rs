//! Checks made before the first paid LLM call: every folder a command will write (its output,
//! its work folder) and the LLM cache must be writable now, so that a read-only disk is found
//! at once (exit 2) instead of after hundreds of paid calls.

use std::path::Path;

/// Creates `dir` if needed and proves it writable by creating and removing a probe file.
/// `what` names the flag or setting at fault in the error (`-o`, `--work-dir`).
pub fn writable_dir(dir: &Path, what: &str) -> anyhow::Result<()> {
    let fail = |e: std::io::Error| {
        anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                dir.display().to_string(),
                format!("the folder cannot be written: {e}"),
            )
            .field(what)
            .hint("choose a writable folder; nothing was called or paid"),
        ))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".mtr-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)?;
    Ok(())
}

/// The LLM cache of `llm` (when it has one) accepts writes.
pub fn writable_cache(llm: &mtr_llm::Llm) -> anyhow::Result<()> {
    llm.check_cache_writable().map_err(|e| {
        anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new("--llm-cache", e.to_string())
                .hint("point --llm-cache or [llm] cache at a writable file, or pass --no-cache"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_folder_is_a_user_error() {
        let tmp = tempfile::tempdir().unwrap();
        writable_dir(&tmp.path().join("new/out"), "-o").unwrap();
        let ro = tmp.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        let mut perm = std::fs::metadata(&ro).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o555);
        std::fs::set_permissions(&ro, perm).unwrap();
        // root writes anywhere: nothing to check there
        if std::fs::write(ro.join("x"), b"").is_ok() {
            return;
        }
        let e = writable_dir(&ro, "-o").unwrap_err();
        assert!(
            e.chain().any(|c| c
                .downcast_ref::<mtr_core::Error>()
                .is_some_and(mtr_core::Error::is_user_error)),
            "{e:#}"
        );
    }
}
