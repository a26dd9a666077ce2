//! Compressed corpus files read as they are: `.gz` (every gzip member), `.bz2`, `.zst` and
//! `.xz` are decompressed while they are read, never to disk, so a dump of several gigabytes
//! costs no more room than its compressed file. The decoders are pure Rust (flate2's
//! miniz_oxide, libbz2-rs-sys, lzma-rust2) or already built for the index (zstd).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use mtr_core::{Error as CoreError, InputError};

use crate::error::Result;

/// How a file is compressed, from its name's last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Bzip2,
    Zstd,
    Xz,
}

impl Compression {
    /// The compression of `name` and the name without its compression extension.
    pub(crate) fn of(name: &str) -> (Self, &str) {
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

impl Compression {
    /// The codec's name, for messages.
    fn name(self) -> &'static str {
        match self {
            Self::None => "plain",
            Self::Gzip => "gzip",
            Self::Bzip2 => "bzip2",
            Self::Zstd => "zstd",
            Self::Xz => "xz",
        }
    }
}

/// A decoder's failure: the compressed stream is cut short or damaged. Carried inside an
/// `io::Error` through the readers, and turned into an input error naming the file by
/// [`read_error`].
#[derive(Debug, thiserror::Error)]
#[error("the {codec} stream is truncated or corrupt after {offset} decompressed bytes ({source})")]
struct Corrupt {
    codec: &'static str,
    offset: u64,
    source: io::Error,
}

/// A decoder that tells a damaged stream from an I/O failure.
struct Checked<R> {
    inner: R,
    codec: Compression,
    offset: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.offset += n as u64;
                Ok(n)
            }
            Err(e) if is_decoding(&e) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                Corrupt {
                    codec: self.codec.name(),
                    offset: self.offset,
                    source: e,
                },
            )),
            Err(e) => Err(e),
        }
    }
}

/// True for the errors decoders return on bad or missing input, as opposed to the file
/// system's.
fn is_decoding(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::InvalidData
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::Other
    )
}

/// The error of a failed read of `path`: a truncated or corrupt compressed stream is the
/// user's input error naming the file; anything else an I/O error.
pub(crate) fn read_error(path: &Path, e: io::Error) -> CoreError {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<Corrupt>())
    {
        Some(c) => CoreError::from(
            InputError::new(path, c.to_string())
                .hint("the file is cut short or damaged: download or compress it again"),
        ),
        None => CoreError::io(path, e),
    }
}

/// An error from mtr-core's line readers, with a damaged compressed stream made an input error.
pub(crate) fn classify(e: CoreError) -> CoreError {
    match e {
        CoreError::Io { path, source } => read_error(&path, source),
        other => other,
    }
}

/// Opens `path` for reading, decompressing it as its name says.
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = File::open(path).map_err(|e| CoreError::io(path, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let raw = BufReader::with_capacity(BUFFER, file);
    let codec = Compression::of(&name).0;
    let reader: Box<dyn Read> = match codec {
        Compression::None => return Ok(Box::new(raw)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| CoreError::io(path, e))?,
        ),
        Compression::Xz => Box::new(lzma_rust2::XzReader::new(raw, true)),
    };
    let checked = Checked {
        inner: reader,
        codec,
        offset: 0,
    };
    Ok(Box::new(BufReader::with_capacity(BUFFER, checked)))
}

/// Reads the whole (decompressed) file as UTF-8 text, without a leading BOM.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    open(path)?
        .read_to_end(&mut bytes)
        .map_err(|e| read_error(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        CoreError::from(
            InputError::new(
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

    #[test]
    fn a_truncated_stream_of_every_codec_is_an_input_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"id\":\"a\",\"text\":\"some words to compress\"}\n".repeat(2000);
        for name in ["c.jsonl.gz", "c.jsonl.bz2", "c.jsonl.zst", "c.jsonl.xz"] {
            let p = dir.path().join(name);
            write_compressed(&p, text.as_bytes()).unwrap();
            let whole = std::fs::read(&p).unwrap();
            std::fs::write(&p, &whole[..whole.len() * 2 / 3]).unwrap();
            let e = read_text(&p).unwrap_err();
            let core = match e {
                crate::Error::Core(c) => c,
                other => panic!("{name}: {other}"),
            };
            assert!(core.is_user_error(), "{name}: {core}");
            let msg = core.to_string();
            assert!(
                msg.contains(name) && msg.contains("truncated or corrupt"),
                "{name}: {msg}"
            );
        }
    }
}
