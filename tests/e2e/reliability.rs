//! Real files as other tools write them, and broken ones (issue 53): copies of the real MTRAG
//! clapnq domain from `../shared` (made in a temporary folder, then edited the way Windows, old
//! Mac editors, Excel, gzip or a cut-short download would) go through `mtr import`. What real
//! tools write imports with every record (the same fingerprint as the clean copy); what is
//! broken exits 2 naming the file, the line and, where there is one, the field, and leaves no
//! output folder. Skipped without `../shared`.

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

/// Runs the clean import and the broken one; returns the clean counts and the broken output.
fn clean_then(edit_copy: impl FnOnce(&Path)) -> Option<((String, String), Output, PathBuf)> {
    let from = shared_mtrag()?;
    let tmp = tempfile::tempdir().unwrap().keep();
    let src = copy_clapnq(&from, &tmp);
    let clean = imported(&import(&tmp, &src, "clean"));
    edit_copy(&src);
    let o = import(&tmp, &src, "edited");
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
    refused(&o, &dir, &[&format!("corpus_clapnq.jsonl:{last}")]);
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
    refused(&o, &dir, &["corpus_clapnq.jsonl:10", "UTF-8"]);
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
    refused(&o, &dir, &["conversations_clapnq.jsonl:3"]);
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
    refused(&o, &dir, &["conversations_clapnq.jsonl:2"]);
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
        refused(&o, &dir, &["dev.tsv:5", "score", grade]);
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
        &dir,
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
    refused(&o, &dir, &["conversations_clapnq.jsonl:30", "duplicate"]);
    let o = mtr(&dir)
        .args(["import", "mtrag", "--lenient"])
        .arg(dir.join("src"))
        .arg("-o")
        .arg(dir.join("lenient"))
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
