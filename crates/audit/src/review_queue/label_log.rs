//! `review/labels.jsonl`: the reviewers' labels, append-only, one JSON object a line with keys
//! in this order: `item` (an [`ItemKey`]), `queue` (`sample` | `flagged`), `label` (`"1"`..`"5"`
//! for a rating; for a completeness pool the chosen passage id, `none` or `several`; `yes`,
//! `partly` or `no` for a flagged item; `null` is an undo: the item is unlabelled again for
//! that reviewer), `reviewer`, `time` (RFC 3339, UTC), `seconds` (time spent on the card),
//! `fingerprint` (the audit's, [`audit_fingerprint`]) and `note` (left out when empty).
//!
//! The effective label of (item, reviewer) is its last line. Each append is one write of whole
//! lines under an exclusive lock of the file, synced to disk before it returns, so two
//! processes (or two tabs) lose nothing and an acknowledged label survives a crash. A writer
//! killed mid-line leaves a partial last line: readers ignore it and the next writer cuts it
//! off before appending. A malformed complete line is refused with its file and line; a file
//! made on another audit (other fingerprint) is refused as a user error.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::summary::Summary;

use super::key::ItemKey;
use super::{Queue, io_error, review_dir};

pub(crate) const LABELS_FILE: &str = "labels.jsonl";

/// Labels of an audit: item -> reviewer -> label (the contract with the estimator).
pub type EffectiveLabels = BTreeMap<String, BTreeMap<String, String>>;

/// One line of `labels.jsonl` (field order is the file's key order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelLine {
    /// The item's key ([`crate::review_queue::ItemKey`]).
    pub item: String,
    /// The queue the label was given in.
    pub queue: Queue,
    /// `None`: an undo.
    pub label: Option<String>,
    /// Who labelled.
    pub reviewer: String,
    /// When (RFC 3339, UTC).
    pub time: String,
    /// Seconds spent on the card.
    pub seconds: f64,
    /// The audit's fingerprint ([`audit_fingerprint`]).
    pub fingerprint: String,
    /// The reviewer's note (left out when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The audit's fingerprint: its benchmark data, configuration and prompts (what makes two
/// audits judge the same things the same way).
pub fn audit_fingerprint(summary: &Summary) -> String {
    let f = &summary.fingerprint;
    let mut h = blake3::Hasher::new();
    for part in [&f.data, &f.config, &f.prompts] {
        h.update(part.as_bytes());
        h.update(b"\n");
    }
    h.finalize().to_hex().to_string()
}

/// `AUDIT_DIR/review/labels.jsonl`.
pub fn labels_path(audit_dir: &Path) -> PathBuf {
    review_dir(audit_dir).join(LABELS_FILE)
}

/// The current time as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Millisecond)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}

/// Why `label` is not a valid answer for `key` (`pool`: the completeness unit's pool).
pub fn check_label(
    key: &ItemKey,
    pool: Option<&[String]>,
    label: &str,
) -> std::result::Result<(), String> {
    match key {
        ItemKey::Unit {
            dimension: Dimension::Completeness,
            ..
        } => {
            let in_pool = pool.is_some_and(|p| p.iter().any(|x| x == label));
            if in_pool || label == "none" || label == "several" {
                Ok(())
            } else {
                Err(format!(
                    "`{label}` is not a passage of this pool, `none` or `several`"
                ))
            }
        }
        ItemKey::Unit { .. } => match label {
            "1" | "2" | "3" | "4" | "5" => Ok(()),
            _ => Err(format!("`{label}` is not a rating 1-5")),
        },
        ItemKey::Missing { .. } | ItemKey::Gold { .. } => match label {
            "yes" | "partly" | "no" => Ok(()),
            _ => Err(format!("`{label}` is not yes, partly or no")),
        },
    }
}

/// Appends whole lines under an exclusive lock, cutting off a partial line a killed writer
/// left, and syncs the file before returning.
pub fn append(path: &Path, lines: &[LabelLine]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    for l in lines {
        bytes.extend_from_slice(super::random_sample::json_line(path, l)?.as_bytes());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    FileExt::lock_exclusive(&f).map_err(|e| io_error(path, e))?;
    let written = cut_partial_line(&mut f)
        .and_then(|()| f.write_all(&bytes))
        .and_then(|()| f.sync_data());
    let unlocked = FileExt::unlock(&f);
    written.map_err(|e| io_error(path, e))?;
    unlocked.map_err(|e| io_error(path, e))
}

/// Truncates the file after its last newline (a killed writer's partial line is no label).
fn cut_partial_line(f: &mut File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    let mut end = len;
    let mut buf = [0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            end = start + i as u64 + 1;
            break;
        }
        end = start;
    }
    if end != len {
        tracing::warn!(
            "cutting off a partial label line ({} bytes) a stopped writer left",
            len - end
        );
        f.set_len(end)?;
    }
    Ok(())
}

/// Every complete line of a labels file (none when it does not exist), checked against the
/// audit's fingerprint. A trailing partial line is ignored.
pub fn read_lines(path: &Path, fingerprint: &str) -> Result<Vec<LabelLine>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(path, e)),
    };
    let complete = complete_lines(path, &bytes);
    parse_lines(path, fingerprint, complete, 1)
}

/// The bytes up to and with the last newline (a killed writer's partial line is no label).
fn complete_lines<'a>(path: &Path, bytes: &'a [u8]) -> &'a [u8] {
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[][..],
    };
    if complete.len() < bytes.len() {
        tracing::warn!("{}: ignoring a partial last line", path.display());
    }
    complete
}

/// Parses complete lines (`first_line` is the file's line number of the first), checked
/// against the audit's fingerprint.
fn parse_lines(
    path: &Path,
    fingerprint: &str,
    complete: &[u8],
    first_line: u64,
) -> Result<Vec<LabelLine>> {
    let mut out = Vec::new();
    if complete.is_empty() {
        return Ok(out);
    }
    let body = complete.strip_suffix(b"\n").unwrap_or(complete);
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        let no = first_line + i as u64;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|_| {
            AuditError::Core(mtr_core::InputError::new(path, "not UTF-8").line(no).into())
        })?;
        let l: LabelLine = mtr_core::jsonl::parse_line(path, no, text)?;
        if l.fingerprint != fingerprint {
            return Err(AuditError::Core(
                mtr_core::InputError::new(
                    path,
                    format!(
                        "these labels were made on another audit (fingerprint {}, this audit {})",
                        mtr_core::fingerprint::short(&l.fingerprint),
                        mtr_core::fingerprint::short(fingerprint)
                    ),
                )
                .line(no)
                .field("fingerprint")
                .hint("move the review/ folder away, or review the audit the labels were made on")
                .into(),
            ));
        }
        if ItemKey::parse(&l.item).is_none() {
            return Err(AuditError::Core(
                mtr_core::InputError::new(path, format!("`{}` is not an item key", l.item))
                    .line(no)
                    .field("item")
                    .into(),
            ));
        }
        out.push(l);
    }
    Ok(out)
}

/// The effective labels of a labels file as it is now, kept up to date cheaply: each
/// [`LabelsTail::refresh`] reads only the complete lines appended since the last one (one
/// `stat` when nothing changed), so a running review sees other processes' labels (a second
/// reviewer, `--import`) at once without reading the whole file again.
#[derive(Debug)]
pub struct LabelsTail {
    path: PathBuf,
    fingerprint: String,
    /// Bytes of complete lines read so far.
    offset: u64,
    /// Lines read so far (for the line numbers of errors).
    lines: u64,
    labels: EffectiveLabels,
}

impl LabelsTail {
    /// A tail that has read nothing yet (call [`LabelsTail::refresh`]).
    pub fn new(path: &Path, fingerprint: &str) -> Self {
        Self {
            path: path.to_path_buf(),
            fingerprint: fingerprint.to_string(),
            offset: 0,
            lines: 0,
            labels: EffectiveLabels::new(),
        }
    }

    /// Reads the complete lines appended since the last call; a file that shrank (replaced or
    /// removed) is read again from its start. A bad line is an error and is not skipped: the
    /// next call meets it again.
    pub fn refresh(&mut self) -> Result<()> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.reset();
                return Ok(());
            }
            Err(e) => return Err(io_error(&self.path, e)),
        };
        let len = f.metadata().map_err(|e| io_error(&self.path, e))?.len();
        if len < self.offset {
            self.reset();
        }
        if len == self.offset {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity((len - self.offset) as usize);
        f.seek(SeekFrom::Start(self.offset))
            .and_then(|_| f.read_to_end(&mut bytes))
            .map_err(|e| io_error(&self.path, e))?;
        let complete = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => &bytes[..=i],
            None => return Ok(()),
        };
        let lines = parse_lines(&self.path, &self.fingerprint, complete, self.lines + 1)?;
        for l in &lines {
            apply(&mut self.labels, l);
        }
        self.offset += complete.len() as u64;
        self.lines += complete.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(())
    }

    fn reset(&mut self) {
        self.offset = 0;
        self.lines = 0;
        self.labels.clear();
    }

    /// The effective labels as of the last refresh.
    pub fn labels(&self) -> &EffectiveLabels {
        &self.labels
    }

    /// How far the file has been read: changes whenever a label line was added.
    pub fn version(&self) -> u64 {
        self.offset
    }
}

/// The effective labels of `lines`: per item and reviewer, the last line (an undo removes it).
pub fn effective(lines: &[LabelLine]) -> EffectiveLabels {
    let mut m: EffectiveLabels = BTreeMap::new();
    for l in lines {
        apply(&mut m, l);
    }
    m
}

/// Applies one line to effective labels.
pub fn apply(m: &mut EffectiveLabels, l: &LabelLine) {
    match &l.label {
        Some(v) => {
            m.entry(l.item.clone())
                .or_default()
                .insert(l.reviewer.clone(), v.clone());
        }
        None => {
            if let Some(r) = m.get_mut(&l.item) {
                r.remove(&l.reviewer);
                if r.is_empty() {
                    m.remove(&l.item);
                }
            }
        }
    }
}

/// The effective labels of an audit folder: item -> reviewer -> label. No labels file gives
/// none; a file of another audit is a user error.
pub fn effective_labels(audit_dir: &Path) -> Result<EffectiveLabels> {
    let summary = super::read_audit_summary(audit_dir)?;
    let lines = read_lines(&labels_path(audit_dir), &audit_fingerprint(&summary))?;
    Ok(effective(&lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn line(item: &str, label: Option<&str>, reviewer: &str) -> LabelLine {
        LabelLine {
            item: item.into(),
            queue: ItemKey::parse(item).map_or(Queue::Sample, |k| k.queue()),
            label: label.map(Into::into),
            reviewer: reviewer.into(),
            time: "2026-12-05T02:00:00.000Z".into(),
            seconds: 1.5,
            fingerprint: "fp".into(),
            note: String::new(),
        }
    }

    #[test]
    fn lines_keep_the_key_order_and_the_last_line_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("review").join(LABELS_FILE);
        let mut noted = line("missing|t|c", Some("yes"), "ann");
        noted.note = "same text".into();
        append(
            &p,
            &[
                line("alignment|t|g", Some("4"), "ann"),
                line("alignment|t|g", Some("2"), "bob"),
                line("alignment|t|g", Some("5"), "ann"),
                line("quality|t|", Some("3"), "ann"),
                line("quality|t|", None, "ann"),
                noted,
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            r#"{"item":"alignment|t|g","queue":"sample","label":"4","reviewer":"ann","time":"2026-12-05T02:00:00.000Z","seconds":1.5,"fingerprint":"fp"}"#
        );
        assert!(text.lines().nth(4).unwrap().contains(r#""label":null"#));
        assert!(
            text.lines()
                .nth(5)
                .unwrap()
                .ends_with(r#""note":"same text"}"#)
        );
        let eff = effective(&read_lines(&p, "fp").unwrap());
        assert_eq!(
            eff,
            BTreeMap::from([
                (
                    "alignment|t|g".to_string(),
                    BTreeMap::from([("ann".into(), "5".into()), ("bob".into(), "2".into())])
                ),
                (
                    "missing|t|c".to_string(),
                    BTreeMap::from([("ann".into(), "yes".into())])
                ),
            ])
        );
    }

    #[test]
    fn a_partial_last_line_is_ignored_then_cut_and_a_malformed_line_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(LABELS_FILE);
        append(&p, &[line("quality|t|", Some("3"), "ann")]).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(br#"{"item":"quality|t|","queue":"sam"#)
            .unwrap();
        drop(f);
        assert_eq!(read_lines(&p, "fp").unwrap().len(), 1);
        append(&p, &[line("quality|u|", Some("1"), "ann")]).unwrap();
        let ls = read_lines(&p, "fp").unwrap();
        assert_eq!(ls.len(), 2);
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 2);
        // a malformed complete line: file and line
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"item\": 3}\n").unwrap();
        drop(f);
        let e = read_lines(&p, "fp").unwrap_err();
        assert!(e.is_user_error());
        assert!(e.to_string().contains(&format!("{}:3", p.display())), "{e}");
        // another audit's labels
        let q = tmp.path().join("other.jsonl");
        append(&q, &[line("quality|t|", Some("3"), "ann")]).unwrap();
        let e = read_lines(&q, "fp2").unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("another audit"),
            "{e}"
        );
        assert!(
            read_lines(&tmp.path().join("none.jsonl"), "fp")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_tail_sees_appended_lines_only_once_complete() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(LABELS_FILE);
        let mut tail = LabelsTail::new(&p, "fp");
        tail.refresh().unwrap();
        assert!(tail.labels().is_empty() && tail.version() == 0);
        append(&p, &[line("quality|t|", Some("3"), "ann")]).unwrap();
        tail.refresh().unwrap();
        assert_eq!(tail.labels()["quality|t|"]["ann"], "3");
        // another writer's line, first half then the rest: seen once complete
        let other = serde_json::to_string(&line("quality|u|", Some("1"), "bob")).unwrap();
        let (head, rest) = other.split_at(20);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(head.as_bytes()).unwrap();
        tail.refresh().unwrap();
        assert!(!tail.labels().contains_key("quality|u|"));
        f.write_all(format!("{rest}\n").as_bytes()).unwrap();
        tail.refresh().unwrap();
        assert_eq!(tail.labels()["quality|u|"]["bob"], "1");
        // an undo, and the same labels as reading the whole file
        append(&p, &[line("quality|t|", None, "ann")]).unwrap();
        tail.refresh().unwrap();
        assert_eq!(tail.labels(), &effective(&read_lines(&p, "fp").unwrap()));
        assert_eq!(tail.labels().len(), 1);
        // a bad line: an error with its line number, met again on the next call
        f.write_all(b"{\"item\": 3}\n").unwrap();
        let e = tail.refresh().unwrap_err();
        assert!(e.to_string().contains(&format!("{}:4", p.display())), "{e}");
        assert!(tail.refresh().is_err());
        // a file replaced by a shorter one is read again from its start
        std::fs::remove_file(&p).unwrap();
        append(&p, &[line("alignment|t|g", Some("2"), "cy")]).unwrap();
        tail.refresh().unwrap();
        assert_eq!(tail.labels().len(), 1);
        assert_eq!(tail.labels()["alignment|t|g"]["cy"], "2");
    }

    #[test]
    fn labels_are_checked_against_their_item() {
        let pool = ["g".to_string(), "x".to_string()];
        let c = ItemKey::parse("completeness|t|g").unwrap();
        assert!(check_label(&c, Some(&pool), "x").is_ok());
        assert!(check_label(&c, Some(&pool), "several").is_ok());
        assert!(check_label(&c, Some(&pool), "y").is_err());
        let a = ItemKey::parse("alignment|t|g").unwrap();
        assert!(check_label(&a, None, "5").is_ok());
        assert!(check_label(&a, None, "6").is_err());
        assert!(check_label(&a, None, "yes").is_err());
        let m = ItemKey::parse("gold|t|g").unwrap();
        assert!(check_label(&m, None, "partly").is_ok());
        assert!(check_label(&m, None, "3").is_err());
    }
}
