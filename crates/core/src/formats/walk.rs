//! Listing the files of a source folder: sorted, to a bounded depth, skipping hidden entries
//! (`.git`, mtr's own `.mtr` cache), so that detection and source fingerprints are stable.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// All regular files under `root` (or `root` itself when it is a file), sorted by path.
pub fn files(root: &Path, max_depth: usize) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if root.is_file() {
        out.push(root.to_path_buf());
        return Ok(out);
    }
    visit(root, max_depth, &mut out)?;
    out.sort();
    Ok(out)
}

fn visit(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let ft = match entry.file_type() {
            Ok(t) => t,
            Err(_) => continue,
        };
        if ft.is_dir() || (ft.is_symlink() && path.is_dir()) {
            if depth > 0 {
                visit(&path, depth - 1, out)?;
            }
        } else if path.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// The file name of `p` as text ("" when it has none).
pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_hidden_and_sorts() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("b/.mtr")).unwrap();
        std::fs::write(d.path().join("b/z.txt"), "").unwrap();
        std::fs::write(d.path().join("b/.mtr/x"), "").unwrap();
        std::fs::write(d.path().join("a.txt"), "").unwrap();
        let f = files(d.path(), 4).unwrap();
        let names: Vec<String> = f
            .iter()
            .map(|p| {
                p.strip_prefix(d.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, vec!["a.txt", "b/z.txt"]);
    }
}
