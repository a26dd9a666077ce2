//! `mtr synth --corpus DIR` as a researcher types it: no `-o` (the output goes to
//! `synth-<corpus name>` and the command says so), on the corpus files researchers have
//! (WikiExtractor output in both forms, Parquet, folders of JSON lines, compressed files), each
//! run on the fake LLM server and ending in a benchmark `mtr validate` accepts; and a malformed
//! record of each format named by file, line (or row group and row) and field, exit 2.

use std::path::{Path, PathBuf};

use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;
use mtr_pipeline::input::Document;
use mtr_pipeline::input::fixtures::{
    rows, wikiextractor_docs, wikiextractor_json, write_compressed, write_parquet,
};

use crate::audit::{mtr, read};
use crate::synth::fake_config;

/// The fake server answering as the pipeline's scripted agents.
async fn fake_agents() -> FakeServer {
    let agents = FakeAgents::default();
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .start()
        .await
        .unwrap()
}

/// Runs `mtr synth --corpus CORPUS EXTRA..` without `-o` in `cwd`; returns its stderr.
fn synth_without_output(cfg: &Path, cwd: &Path, corpus: &Path, extra: &[&str]) -> String {
    let o = mtr()
        .current_dir(cwd)
        .arg("--config")
        .arg(cfg)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .args(["--dialogues", "2", "--turns", "2", "--seed", "1"])
        .args(["--vectors", "lexical", "--no-uniqueness"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    stderr
}

/// `out` is a benchmark `mtr validate` accepts, with `dialogues` dialogues.
fn assert_valid(out: &Path, dialogues: usize) {
    mtr()
        .args(["--quiet", "validate"])
        .arg(out)
        .assert()
        .success();
    let lines = String::from_utf8_lossy(&read(&out.join("dialogues.jsonl")))
        .lines()
        .count();
    assert_eq!(lines, dialogues, "{}", out.display());
}

fn shipped(lang: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join(lang)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_output_synth_writes_synth_and_the_corpus_name_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let stderr = synth_without_output(&cfg, tmp.path(), &shipped("en"), &[]);
    assert!(stderr.contains("writing to synth-en"), "{stderr}");
    assert_valid(&tmp.path().join("synth-en"), 2);
}

/// The shipped English handbook's documents, to write in each corpus form.
fn handbook() -> Vec<Document> {
    mtr_pipeline::input::load(&shipped("en")).unwrap()
}

/// Runs `mtr synth --corpus CORPUS` expecting a user error (exit 2); returns its stderr.
fn synth_fails(cfg: &Path, cwd: &Path, corpus: &Path) -> String {
    let o = mtr()
        .current_dir(cwd)
        .arg("--config")
        .arg(cfg)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .args(["--dialogues", "2", "--turns", "2", "--vectors", "lexical"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wikiextractor_output_in_both_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let docs = handbook();
    let (a, b) = docs.split_at(docs.len() / 2);
    // the default form: AA/wiki_00, AA/wiki_01 (.bz2 as with --compress)
    let wiki = tmp.path().join("wiki");
    std::fs::create_dir_all(wiki.join("AA")).unwrap();
    std::fs::write(wiki.join("AA/wiki_00"), wikiextractor_docs(a)).unwrap();
    write_compressed(
        &wiki.join("AA/wiki_01.bz2"),
        wikiextractor_docs(b).as_bytes(),
    )
    .unwrap();
    let stderr = synth_without_output(&cfg, tmp.path(), Path::new("wiki/"), &[]);
    assert!(stderr.contains("writing to synth-wiki"), "{stderr}");
    assert_valid(&tmp.path().join("synth-wiki"), 2);
    // the --json form, in another tree
    let json = tmp.path().join("wiki-json");
    std::fs::create_dir_all(json.join("AA")).unwrap();
    std::fs::create_dir_all(json.join("AB")).unwrap();
    std::fs::write(json.join("AA/wiki_00"), wikiextractor_json(a)).unwrap();
    std::fs::write(json.join("AB/wiki_00"), wikiextractor_json(b)).unwrap();
    synth_without_output(&cfg, tmp.path(), Path::new("wiki-json"), &[]);
    assert_valid(&tmp.path().join("synth-wiki-json"), 2);

    // a block without an id: file, line and field; the others counted; exit 2
    let bad = tmp.path().join("bad-wiki");
    std::fs::create_dir_all(bad.join("AA")).unwrap();
    let text = wikiextractor_docs(a).replacen("<doc id=\"", "<doc xid=\"", 2);
    std::fs::write(bad.join("AA/wiki_00"), &text).unwrap();
    let stderr = synth_fails(&cfg, tmp.path(), &bad);
    assert!(
        stderr.contains("AA/wiki_00:1: field `id`")
            && stderr.contains("and 1 more malformed record"),
        "{stderr}"
    );
    // --skip-bad goes on without them and says how many
    let stderr = synth_without_output(&cfg, tmp.path(), &bad, &["--skip-bad"]);
    assert!(stderr.contains("2 malformed records skipped"), "{stderr}");
    assert_valid(&tmp.path().join("synth-bad-wiki"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hugging_face_parquet_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let docs = handbook();
    let (a, b) = docs.split_at(docs.len() / 2);
    let dump = tmp.path().join("wikipedia");
    std::fs::create_dir_all(dump.join("data")).unwrap();
    std::fs::write(
        dump.join("README.md"),
        "# wikimedia/wikipedia\n\nA dataset card.\n",
    )
    .unwrap();
    write_parquet(&dump.join("data/train-00000-of-00002.parquet"), &rows(a), 3).unwrap();
    write_parquet(&dump.join("data/train-00001-of-00002.parquet"), &rows(b), 3).unwrap();
    // a seeded uniform sample, said in the log and the report
    let stderr = synth_without_output(&cfg, tmp.path(), &dump, &["--max-documents", "6"]);
    assert!(
        stderr.contains("--max-documents 6: a uniform sample over the whole input"),
        "{stderr}"
    );
    let out = tmp.path().join("synth-wikipedia");
    assert_valid(&out, 2);
    let report = String::from_utf8_lossy(&read(&out.join("synth_report.md"))).into_owned();
    assert!(
        report.contains(&format!(
            "| sampled (max_documents) | 6 of {} documents",
            docs.len()
        )),
        "{report}"
    );

    // a null text: file, row group, row and column; exit 2
    let bad = tmp.path().join("bad.parquet");
    let mut r = rows(a);
    r[4].2 = None;
    write_parquet(&bad, &r, 3).unwrap();
    let stderr = synth_fails(&cfg, tmp.path(), &bad);
    assert!(
        stderr.contains("bad.parquet: field `text`: row group 1, row 1: no document text"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_of_json_lines_and_compressed_files() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let docs = handbook();
    let line = |d: &Document| {
        serde_json::json!({"doc_id": d.id, "name": d.title, "body": d.text}).to_string() + "\n"
    };
    let (a, b) = docs.split_at(docs.len() / 2);
    // a folder of JSONL files with their own field names
    let folder = tmp.path().join("docs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("a.jsonl"),
        a.iter().map(line).collect::<String>(),
    )
    .unwrap();
    std::fs::write(
        folder.join("b.jsonl"),
        b.iter().map(line).collect::<String>(),
    )
    .unwrap();
    let fields = ["--corpus-fields", "id=doc_id,title=name,text=body"];
    synth_without_output(&cfg, tmp.path(), &folder, &fields);
    assert_valid(&tmp.path().join("synth-docs"), 2);
    // the same as one .gz and one .zst file, read as they are
    let all: String = docs.iter().map(line).collect();
    for name in ["dump.jsonl.gz", "dump2.jsonl.zst"] {
        write_compressed(&tmp.path().join(name), all.as_bytes()).unwrap();
        synth_without_output(&cfg, tmp.path(), Path::new(name), &fields);
    }
    assert_valid(&tmp.path().join("synth-dump"), 2);
    assert_valid(&tmp.path().join("synth-dump2"), 2);

    // a record without its text field: file, line and field; exit 2
    let bad = tmp.path().join("bad.jsonl.gz");
    let text = all.replacen("\"body\"", "\"bdy\"", 1);
    write_compressed(&bad, text.as_bytes()).unwrap();
    let o = mtr()
        .current_dir(tmp.path())
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "synth", "--corpus"])
        .arg(&bad)
        .args(fields)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.jsonl.gz:1: field `body`"), "{stderr}");
}
