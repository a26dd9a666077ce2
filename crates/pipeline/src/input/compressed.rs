//! Compressed corpus files read as they are: `.gz` (every gzip member), `.bz2`, `.zst` and
//! `.xz` are decompressed while they are read, never to disk, so a dump of several gigabytes
//! costs no more room than its compressed file. The decoders are pure Rust (flate2's
//! miniz_oxide, libbz2-rs-sys, lzma-rust2) or already built for the index (zstd).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use mtr_core::Error as CoreError;

use crate::error::Result;

/// How a file is compressed, from its name's last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Zstd,
    Xz,
}

impl Compression {
    /// The compression of `name` and the name without its compression extension.
    pub fn of(name: &str) -> (Self, &str) {
        let lower = name.to_ascii_lowercase();
        for (ext, c) in [
            (".gz", Self::Gzip),
            (".bz2", Self::Bzip2),
            (".zst", Self::Zstd),
            (".zstd", Self::Zstd),
            (".xz", Self::Xz),
        ] {
            if lower.ends_with(ext) {
                return (c, &name[..name.len() - ext.len()]);
            }
        }
        (Self::None, name)
    }
}

/// Buffer size of every corpus reader: large reads keep the decoders and the parsers busy.
const BUFFER: usize = 1 << 18;

/// Opens `path` for reading, decompressing it as its name says.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = File::open(path).map_err(|e| CoreError::io(path, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let raw = BufReader::with_capacity(BUFFER, file);
    let reader: Box<dyn Read> = match Compression::of(&name).0 {
        Compression::None => return Ok(Box::new(raw)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| CoreError::io(path, e))?,
        ),
        Compression::Xz => Box::new(lzma_rust2::XzReader::new(raw, true)),
    };
    Ok(Box::new(BufReader::with_capacity(BUFFER, reader)))
}

/// Reads the whole (decompressed) file as UTF-8 text, without a leading BOM.
pub fn read_text(path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    open(path)?
        .read_to_end(&mut bytes)
        .map_err(|e| CoreError::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        CoreError::from(
            mtr_core::InputError::new(
                path,
                format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
            )
            .hint("re-encode the file as UTF-8"),
        )
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(t) => t.to_string(),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fixtures::write_compressed;

    #[test]
    fn every_compression_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let text = "line one\nline two ü\n".repeat(1000);
        for name in ["a.txt", "a.txt.gz", "a.txt.bz2", "a.txt.zst", "a.txt.xz"] {
            let p = dir.path().join(name);
            write_compressed(&p, text.as_bytes()).unwrap();
            assert_eq!(read_text(&p).unwrap(), text, "{name}");
        }
        assert_eq!(
            Compression::of("wiki_00.BZ2"),
            (Compression::Bzip2, "wiki_00")
        );
        assert_eq!(Compression::of("c.jsonl"), (Compression::None, "c.jsonl"));
    }
}
