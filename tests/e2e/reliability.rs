//! Real files as other tools write them, and broken ones (issue 53): copies of the real MTRAG
//! clapnq domain from `../shared` (made in a temporary folder, then edited the way Windows, old
//! Mac editors, Excel, gzip or a cut-short download would) go through `mtr import`. What real
//! tools write imports with every record (the same fingerprint as the clean copy); what is
//! broken exits 2 naming the file, the line and, where there is one, the field, and leaves no
//! output folder. The same classes of damage go through `mtr eval` (copies of the real clapnq
//! qrels and BM25 run, `eval_*` tests) and `mtr synth --corpus` (a compressed copy of a real
//! synthesis corpus cut short). Skipped without `../shared`.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

fn shared_mtrag() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    if p.join("conversations_clapnq.jsonl").is_file() {
        Some(p)
    } else {
        eprintln!("skipping: {} absent", p.display());
        None
    }
}

fn mtr(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("mtr").unwrap();
    c.current_dir(dir)
        .env("MTR_HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_CACHE_HOME", dir.join("cache"));
    c
}

/// A writable copy of the clapnq domain (conversations, corpus, tasks) in `dir/src`.
fn copy_clapnq(from: &Path, dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("tasks_clapnq/qrels")).unwrap();
    for f in [
        "conversations_clapnq.jsonl",
        "corpus_clapnq.jsonl",
        "tasks_clapnq/clapnq_questions.jsonl",
        "tasks_clapnq/clapnq_lastturn.jsonl",
        "tasks_clapnq/clapnq_rewrite.jsonl",
        "tasks_clapnq/qrels/dev.tsv",
    ] {
        std::fs::write(src.join(f), std::fs::read(from.join(f)).unwrap()).unwrap();
    }
    src
}

fn import(dir: &Path, src: &Path, out: &str) -> Output {
    mtr(dir)
        .args(["import", "mtrag"])
        .arg(src)
        .arg("-o")
        .arg(dir.join(out))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The summary line and fingerprint of a successful import.
fn imported(o: &Output) -> (String, String) {
    let t = text(o);
    assert!(o.status.success(), "{t}");
    let counts = t
        .lines()
        .find(|l| l.starts_with("imported "))
        .and_then(|l| l.split_once(": "))
        .map(|(_, c)| c.to_string())
        .unwrap();
    let fp = t
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint "))
        .unwrap()
        .to_string();
    (counts, fp)
}

/// Edits one file of the copy.
fn edit(src: &Path, file: &str, f: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    let p = src.join(file);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, f(bytes)).unwrap();
}

/// Replaces line `no` (1-based) of a text file.
fn replace_line(bytes: Vec<u8>, no: usize, with: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    lines[no - 1] = with;
    lines.join(&b'\n')
}

/// Runs the clean import and the broken one; returns the clean counts, the broken output and
/// the temporary folder (removed when dropped).
fn clean_then(
    edit_copy: impl FnOnce(&Path),
) -> Option<((String, String), Output, tempfile::TempDir)> {
    let from = shared_mtrag()?;
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_clapnq(&from, tmp.path());
    let clean = imported(&import(tmp.path(), &src, "clean"));
    edit_copy(&src);
    let o = import(tmp.path(), &src, "edited");
    Some((clean, o, tmp))
}

/// Exit 2, the message names every part of `wants`, and no output folder is left.
fn refused(o: &Output, dir: &Path, wants: &[&str]) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for w in wants {
        assert!(t.contains(w), "`{w}` not named: {t}");
    }
    assert!(
        !dir.join("edited").exists(),
        "a failed import leaves no folder"
    );
    let stray: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".mtr-"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn crlf_files_import_every_record() {
    let Some((clean, o, _)) = clean_then(|src| {
        for f in [
            "tasks_clapnq/qrels/dev.tsv",
            "corpus_clapnq.jsonl",
            "conversations_clapnq.jsonl",
            "tasks_clapnq/clapnq_rewrite.jsonl",
        ] {
            edit(src, f, |b| {
                String::from_utf8(b)
                    .unwrap()
                    .replace('\n', "\r\n")
                    .into_bytes()
            });
        }
    }) else {
        return;
    };
    assert!(clean.0.contains("578 qrels judgements"), "{}", clean.0);
    assert_eq!(imported(&o), clean);
}

#[test]
fn lone_cr_qrels_import_every_judgement() {
    let Some((clean, o, _)) = clean_then(|src| {
        edit(src, "tasks_clapnq/qrels/dev.tsv", |b| {
            b.into_iter()
                .map(|c| if c == b'\n' { b'\r' } else { c })
                .collect()
        });
    }) else {
        return;
    };
    assert_eq!(imported(&o), clean);
}

#[test]
fn a_bom_and_trailing_blanks_import_every_record() {
    let Some((clean, o, _)) = clean_then(|src| {
        edit(src, "corpus_clapnq.jsonl", |b| {
            [&b"\xEF\xBB\xBF"[..], &b].concat()
        });
        edit(src, "tasks_clapnq/qrels/dev.tsv", |b| {
            let t = String::from_utf8(b).unwrap();
            // trailing blanks, and spaces instead of the last tab, as a spreadsheet may write
            let mut out = String::from("\u{feff}");
            for (i, l) in t.lines().enumerate() {
                match l.rsplit_once('\t') {
                    Some((head, grade)) if i % 2 == 1 => {
                        out.push_str(&format!("{head}   {grade}"));
                    }
                    _ => out.push_str(l),
                }
                out.push_str("  \n");
            }
            out.trim_end_matches('\n').to_string().into_bytes()
        });
    }) else {
        return;
    };
    assert_eq!(imported(&o), clean);
}

#[test]
fn a_truncated_corpus_names_its_last_line() {
    let mut last = 0;
    let Some((_, o, dir)) = clean_then(|src| {
        edit(src, "corpus_clapnq.jsonl", |b| {
            let cut = b.len() - 40;
            last = b[..cut].iter().filter(|c| **c == b'\n').count() + 1;
            b[..cut].to_vec()
        });
    }) else {
        return;
    };
    refused(&o, dir.path(), &[&format!("corpus_clapnq.jsonl:{last}")]);
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let Some((_, o, dir)) = clean_then(|src| {
        edit(src, "corpus_clapnq.jsonl", |b| {
            let line10 = b.split(|c| *c == b'\n').nth(9).unwrap().to_vec();
            let mut bad = line10.clone();
            let at = bad.len() / 2;
            bad[at] = 0xFF;
            replace_line(b, 10, &bad)
        });
    }) else {
        return;
    };
    refused(&o, dir.path(), &["corpus_clapnq.jsonl:10", "UTF-8"]);
}

#[test]
fn binary_garbage_names_file_and_line() {
    let Some((_, o, dir)) = clean_then(|src| {
        edit(src, "conversations_clapnq.jsonl", |b| {
            let garbage: Vec<u8> = (0u8..=255).rev().filter(|c| *c != b'\n').collect();
            replace_line(b, 3, &garbage)
        });
    }) else {
        return;
    };
    refused(&o, dir.path(), &["conversations_clapnq.jsonl:3"]);
}

#[test]
fn nesting_deeper_than_the_format_names_file_and_line() {
    let Some((_, o, dir)) = clean_then(|src| {
        edit(src, "conversations_clapnq.jsonl", |b| {
            let deep = format!(
                "{{\"conversation_id\":\"x\",\"messages\":{}{}}}",
                "[".repeat(5000),
                "]".repeat(5000)
            );
            replace_line(b, 2, deep.as_bytes())
        });
    }) else {
        return;
    };
    refused(&o, dir.path(), &["conversations_clapnq.jsonl:2"]);
}

#[test]
fn a_grade_that_is_not_a_finite_number_names_file_line_and_field() {
    for grade in ["nan", "inf", "1.5"] {
        let Some((_, o, dir)) = clean_then(|src| {
            edit(src, "tasks_clapnq/qrels/dev.tsv", |b| {
                let line5 =
                    String::from_utf8(b.split(|c| *c == b'\n').nth(4).unwrap().to_vec()).unwrap();
                let (head, _) = line5.rsplit_once('\t').unwrap();
                replace_line(b, 5, format!("{head}\t{grade}").as_bytes())
            });
        }) else {
            return;
        };
        refused(&o, dir.path(), &["dev.tsv:5", "score", grade]);
    }
}

#[test]
fn a_duplicate_passage_id_names_file_line_and_field() {
    let mut last = 0;
    let Some((_, o, dir)) = clean_then(|src| {
        edit(src, "corpus_clapnq.jsonl", |mut b| {
            let first = b.split(|c| *c == b'\n').next().unwrap().to_vec();
            if !b.ends_with(b"\n") {
                b.push(b'\n');
            }
            last = b.iter().filter(|c| **c == b'\n').count() + 1;
            b.extend_from_slice(&first);
            b.push(b'\n');
            b
        });
    }) else {
        return;
    };
    refused(
        &o,
        dir.path(),
        &[
            &format!("corpus_clapnq.jsonl:{last}"),
            "duplicate passage id",
            "`id`",
        ],
    );
}

#[test]
fn a_duplicate_conversation_is_refused_and_lenient_counts_it() {
    let Some((clean, o, dir)) = clean_then(|src| {
        edit(src, "conversations_clapnq.jsonl", |mut b| {
            let first = b.split(|c| *c == b'\n').next().unwrap().to_vec();
            if !b.ends_with(b"\n") {
                b.push(b'\n');
            }
            b.extend_from_slice(&first);
            b.push(b'\n');
            b
        });
    }) else {
        return;
    };
    refused(
        &o,
        dir.path(),
        &["conversations_clapnq.jsonl:30", "duplicate"],
    );
    let o = mtr(dir.path())
        .args(["import", "mtrag", "--lenient"])
        .arg(dir.path().join("src"))
        .arg("-o")
        .arg(dir.path().join("lenient"))
        .output()
        .unwrap();
    let (counts, _) = imported(&o);
    assert_eq!(counts, clean.0);
    assert!(
        text(&o).contains("skipped records (--lenient)"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_failed_reimport_leaves_the_benchmark_as_it_was() {
    let Some(from) = shared_mtrag() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_clapnq(&from, tmp.path());
    imported(&import(tmp.path(), &src, "bench"));
    let before = std::fs::read(tmp.path().join("bench/corpus.jsonl")).unwrap();
    edit(&src, "corpus_clapnq.jsonl", |b| {
        let cut = b.len() - 40;
        b[..cut].to_vec()
    });
    let o = import(tmp.path(), &src, "bench");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read(tmp.path().join("bench/corpus.jsonl")).unwrap(),
        before
    );
}

/// Exit 2 and a message that names every part of `wants` (no panic, no internal error).
fn stopped(o: &Output, wants: &[&str]) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    for w in wants {
        assert!(t.contains(w), "`{w}` not named: {t}");
    }
    assert!(
        !t.contains("panicked") && !t.contains("internal error"),
        "{t}"
    );
}

/// MTRAG's upstream layout keeps each corpus as `corpora/<domain>.jsonl.zip`: a copy of the
/// clapnq domain with its corpus zipped, then the archive cut short (a download that stopped)
/// or its compressed data damaged (its central directory intact).
#[test]
fn a_zipped_corpus_cut_short_or_damaged_names_the_archive() {
    use std::io::Write;
    let Some(from) = shared_mtrag() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = copy_clapnq(&from, tmp.path());
    let corpus = std::fs::read(src.join("corpus_clapnq.jsonl")).unwrap();
    std::fs::remove_file(src.join("corpus_clapnq.jsonl")).unwrap();
    std::fs::create_dir_all(src.join("corpora")).unwrap();
    let zip_path = src.join("corpora/clapnq.jsonl.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    z.start_file("clapnq.jsonl", opts).unwrap();
    z.write_all(&corpus).unwrap();
    z.finish().unwrap();
    let whole = std::fs::read(&zip_path).unwrap();
    let (clean, _) = imported(&import(tmp.path(), &src, "clean"));
    assert!(clean.contains("578 qrels judgements"), "{clean}");
    std::fs::write(&zip_path, &whole[..whole.len() / 2]).unwrap();
    let o = import(tmp.path(), &src, "edited");
    refused(
        &o,
        tmp.path(),
        &["clapnq.jsonl.zip", "not a readable zip archive"],
    );
    // the deflate stream damaged a third of the way in: the entry and the line being read
    let mut damaged = whole.clone();
    let at = damaged.len() / 3;
    for b in &mut damaged[at..at + 64] {
        *b = !*b;
    }
    std::fs::write(&zip_path, &damaged).unwrap();
    let o = import(tmp.path(), &src, "edited");
    refused(&o, tmp.path(), &["clapnq.jsonl.zip/clapnq.jsonl:"]);
}

/// The case: a compressed corpus for `mtr synth --corpus` cut short (before: exit 1,
/// "internal error", "incomplete deflate stream" and no file name). A copy of the first 300
/// lines of a real synthesis corpus, in each codec, cut in half.
#[test]
fn a_compressed_corpus_cut_short_stops_synth_naming_it() {
    let corpora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora");
    let Ok(text) = std::fs::read_to_string(corpora.join("en_wiki_vital_summaries.jsonl")) else {
        eprintln!("skipping: {} absent", corpora.display());
        return;
    };
    let head: String = text.lines().take(300).map(|l| format!("{l}\n")).collect();
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "wiki.jsonl.gz",
        "wiki.jsonl.bz2",
        "wiki.jsonl.zst",
        "wiki.jsonl.xz",
    ] {
        let p = tmp.path().join(name);
        mtr_pipeline::input::fixtures::write_compressed(&p, head.as_bytes()).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        let o = mtr(tmp.path())
            .args(["synth", "--dry-run", "--corpus"])
            .arg(&p)
            .arg("-o")
            .arg(tmp.path().join("out"))
            .output()
            .unwrap();
        stopped(&o, &[name, "truncated or corrupt"]);
    }
}

/// Copies of the real clapnq qrels and BM25 last-turn run: the run as MTRAG ships it (JSON
/// lines) and as trec_eval reads it (TREC lines: rank = position, the given score).
struct EvalFiles {
    qrels: PathBuf,
    trec: PathBuf,
    jsonl: PathBuf,
    dir: tempfile::TempDir,
}

fn eval_files() -> Option<EvalFiles> {
    let from = shared_mtrag()?;
    let dir = tempfile::tempdir().unwrap();
    let qrels = dir.path().join("dev.tsv");
    std::fs::copy(from.join("tasks_clapnq/qrels/dev.tsv"), &qrels).unwrap();
    let jsonl = dir.path().join("bm25.jsonl");
    std::fs::copy(
        from.join("runs_clapnq/bm25__bm25_clapnq_lastturn.jsonl"),
        &jsonl,
    )
    .unwrap();
    let mut lines = String::new();
    for l in std::fs::read_to_string(&jsonl).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for (i, c) in v["contexts"].as_array().unwrap().iter().enumerate() {
            lines.push_str(&format!(
                "{} Q0 {} {} {} bm25\n",
                v["task_id"].as_str().unwrap(),
                c["document_id"].as_str().unwrap(),
                i + 1,
                c["score"]
            ));
        }
    }
    let trec = dir.path().join("run.trec");
    std::fs::write(&trec, lines).unwrap();
    Some(EvalFiles {
        qrels,
        trec,
        jsonl,
        dir,
    })
}

impl EvalFiles {
    /// `mtr eval` of the run (TREC or JSONL) against the qrels.
    fn eval(&self, run: &Path) -> Output {
        mtr(self.dir.path())
            .arg("eval")
            .arg(&self.qrels)
            .arg(run)
            .args(["-m", "ndcg_cut.10", "-c"])
            .output()
            .unwrap()
    }

    /// The score of a clean evaluation.
    fn score(&self, run: &Path) -> String {
        let o = self.eval(run);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    }

    /// Runs `f` on a fresh copy of the files (an edit per case, the clean files kept).
    fn with_copy(&self, f: impl FnOnce(&EvalFiles)) {
        let dir = tempfile::tempdir_in(self.dir.path()).unwrap();
        let copy = |p: &Path| {
            let to = dir.path().join(p.file_name().unwrap());
            std::fs::copy(p, &to).unwrap();
            to
        };
        let files = EvalFiles {
            qrels: copy(&self.qrels),
            trec: copy(&self.trec),
            jsonl: copy(&self.jsonl),
            dir,
        };
        f(&files);
    }
}

/// Line `no` (1-based) of a file.
fn line_of(path: &Path, no: usize) -> Vec<u8> {
    std::fs::read(path)
        .unwrap()
        .split(|c| *c == b'\n')
        .nth(no - 1)
        .unwrap()
        .to_vec()
}

/// Line `no` with its whitespace-separated column `col` (0-based) replaced by `with`.
fn with_column(line: &[u8], col: usize, with: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(line.to_vec()).unwrap();
    let sep = if text.contains('\t') { b'\t' } else { b' ' };
    let mut cols: Vec<Vec<u8>> = text
        .split(sep as char)
        .map(|c| c.as_bytes().to_vec())
        .collect();
    cols[col] = with.to_vec();
    cols.join(&sep)
}

#[test]
fn eval_reads_crlf_lone_cr_and_bom_files_as_the_clean_ones() {
    let Some(f) = eval_files() else {
        return;
    };
    let clean = f.score(&f.trec);
    assert!(clean.contains("ndcg_cut_10"), "{clean}");
    f.with_copy(|c| {
        edit(c.dir.path(), "dev.tsv", |b| {
            let t = String::from_utf8(b).unwrap().replace('\n', "\r\n");
            format!("\u{feff}{t}").into_bytes()
        });
        edit(c.dir.path(), "run.trec", |b| {
            b.into_iter()
                .map(|x| if x == b'\n' { b'\r' } else { x })
                .collect()
        });
        assert_eq!(c.score(&c.trec), clean);
        assert_eq!(c.score(&c.jsonl), f.score(&f.jsonl));
    });
}

#[test]
fn eval_a_run_cut_short_names_its_last_line() {
    let Some(f) = eval_files() else {
        return;
    };
    f.with_copy(|c| {
        // cut inside the last line's document id: a line of too few columns
        let mut lines = 0;
        edit(c.dir.path(), "run.trec", |b| {
            lines = b.iter().filter(|x| **x == b'\n').count();
            let last = b[..b.len() - 1].iter().rposition(|x| *x == b'\n').unwrap() + 1;
            let docno = last + b[last..].windows(4).position(|w| w == b" Q0 ").unwrap() + 6;
            b[..docno].to_vec()
        });
        stopped(
            &c.eval(&c.trec),
            &[&format!("run.trec:{lines}"), "6 columns"],
        );
        let mut last = 0;
        edit(c.dir.path(), "bm25.jsonl", |b| {
            let cut = b.len() - 40;
            last = b[..cut].iter().filter(|x| **x == b'\n').count() + 1;
            b[..cut].to_vec()
        });
        stopped(&c.eval(&c.jsonl), &[&format!("bm25.jsonl:{last}")]);
    });
}

#[test]
fn eval_invalid_utf8_names_file_line_and_field() {
    let Some(f) = eval_files() else {
        return;
    };
    f.with_copy(|c| {
        // a Latin-1 byte in the query id of line 5 (before: another query of it, the document
        // lost, exit 0)
        let mut qid = line_of(&c.trec, 5)
            .split(|x| *x == b' ')
            .next()
            .unwrap()
            .to_vec();
        qid[4] = 0xE9;
        let bad = with_column(&line_of(&c.trec, 5), 0, &qid);
        edit(c.dir.path(), "run.trec", |b| replace_line(b, 5, &bad));
        stopped(
            &c.eval(&c.trec),
            &["run.trec:5: field `qid`", "invalid UTF-8"],
        );
    });
    f.with_copy(|c| {
        // in the document id of a judgement (before: a judgement no run could match, exit 0)
        let line = line_of(&c.qrels, 5);
        let doc = String::from_utf8(line.clone()).unwrap();
        let doc = doc.split('\t').nth(1).unwrap().as_bytes().to_vec();
        let bad_doc = [&doc[..3], b"\xff", &doc[4..]].concat();
        let bad = with_column(&line, 1, &bad_doc);
        edit(c.dir.path(), "dev.tsv", |b| replace_line(b, 5, &bad));
        stopped(
            &c.eval(&c.trec),
            &["dev.tsv:5: field `docno`", "invalid UTF-8"],
        );
    });
    f.with_copy(|c| {
        edit(c.dir.path(), "bm25.jsonl", |b| {
            let mut l4 = line_of(&c.jsonl, 4);
            l4[20] = 0xFF;
            replace_line(b, 4, &l4)
        });
        stopped(&c.eval(&c.jsonl), &["bm25.jsonl:4"]);
    });
}

#[test]
fn eval_binary_garbage_names_file_and_line() {
    let Some(f) = eval_files() else {
        return;
    };
    let garbage: Vec<u8> = (0u8..=255).rev().filter(|c| *c != b'\n').collect();
    f.with_copy(|c| {
        edit(c.dir.path(), "run.trec", |b| replace_line(b, 7, &garbage));
        stopped(&c.eval(&c.trec), &["run.trec:7"]);
        edit(c.dir.path(), "dev.tsv", |b| replace_line(b, 3, &garbage));
        stopped(&c.eval(&c.jsonl), &["dev.tsv:3"]);
    });
    f.with_copy(|c| {
        edit(c.dir.path(), "bm25.jsonl", |b| replace_line(b, 2, &garbage));
        stopped(&c.eval(&c.jsonl), &["bm25.jsonl:2"]);
    });
}

#[test]
fn eval_nesting_deeper_than_the_format_names_file_and_line() {
    let Some(f) = eval_files() else {
        return;
    };
    f.with_copy(|c| {
        let deep = format!(
            "{{\"task_id\":\"x\",\"contexts\":{}{}}}",
            "[".repeat(5000),
            "]".repeat(5000)
        );
        edit(c.dir.path(), "bm25.jsonl", |b| {
            replace_line(b, 2, deep.as_bytes())
        });
        stopped(&c.eval(&c.jsonl), &["bm25.jsonl:2"]);
    });
}

#[test]
fn eval_numbers_that_do_not_parse_or_are_not_finite_name_file_line_and_field() {
    let Some(f) = eval_files() else {
        return;
    };
    for score in ["abc", "NaN", "inf", "-inf", "1e999", "12,5"] {
        f.with_copy(|c| {
            let bad = with_column(&line_of(&c.trec, 5), 4, score.as_bytes());
            edit(c.dir.path(), "run.trec", |b| replace_line(b, 5, &bad));
            stopped(&c.eval(&c.trec), &["run.trec:5", "score", score]);
        });
    }
    for grade in ["x", "nan", "inf", "1.5"] {
        f.with_copy(|c| {
            let bad = with_column(&line_of(&c.qrels, 5), 2, grade.as_bytes());
            edit(c.dir.path(), "dev.tsv", |b| replace_line(b, 5, &bad));
            stopped(&c.eval(&c.trec), &["dev.tsv:5", "grade", grade]);
        });
    }
    f.with_copy(|c| {
        edit(c.dir.path(), "bm25.jsonl", |b| {
            let l3 = String::from_utf8(line_of(&c.jsonl, 3)).unwrap();
            let mut v: serde_json::Value = serde_json::from_str(&l3).unwrap();
            v["contexts"][0]["score"] = serde_json::json!("NaN");
            replace_line(b, 3, v.to_string().as_bytes())
        });
        stopped(&c.eval(&c.jsonl), &["bm25.jsonl:3"]);
    });
}

#[test]
fn eval_duplicate_ids_name_file_and_line() {
    let Some(f) = eval_files() else {
        return;
    };
    f.with_copy(|c| {
        // line 3's document ranked again at line 4 for the same query
        let l3 = line_of(&c.trec, 3);
        let doc = String::from_utf8(l3).unwrap();
        let doc = doc.split(' ').nth(2).unwrap().as_bytes().to_vec();
        let bad = with_column(&line_of(&c.trec, 4), 2, &doc);
        edit(c.dir.path(), "run.trec", |b| replace_line(b, 4, &bad));
        stopped(&c.eval(&c.trec), &["run.trec:4", "duplicate"]);
    });
    f.with_copy(|c| {
        // a judgement given twice
        let l5 = line_of(&c.qrels, 5);
        edit(c.dir.path(), "dev.tsv", |b| {
            let six = line_of(&c.qrels, 6);
            replace_line(b, 6, &[&l5[..], b"\n", &six[..]].concat())
        });
        stopped(&c.eval(&c.trec), &["dev.tsv:6", "duplicate"]);
    });
    f.with_copy(|c| {
        // a task ranked twice
        let l2 = line_of(&c.jsonl, 2);
        edit(c.dir.path(), "bm25.jsonl", |mut b| {
            if !b.ends_with(b"\n") {
                b.push(b'\n');
            }
            b.extend_from_slice(&l2);
            b.push(b'\n');
            b
        });
        let n = std::fs::read(&c.jsonl)
            .unwrap()
            .iter()
            .filter(|x| **x == b'\n')
            .count();
        stopped(
            &c.eval(&c.jsonl),
            &[&format!("bm25.jsonl:{n}"), "duplicate"],
        );
    });
}
