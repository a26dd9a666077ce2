//! IBM MTRAG: human multi-turn RAG conversations with BEIR-style retrieval tasks.
//!
//! Two layouts are accepted and may be mixed:
//! - per domain: `conversations_<domain>.jsonl`, `corpus_<domain>.jsonl`,
//!   `tasks_<domain>/<domain>_{questions,lastturn,rewrite}.jsonl` + `tasks_<domain>/qrels/dev.tsv`;
//! - upstream: `conversations/conversations.json` (one JSON array, all domains),
//!   `.../retrieval_tasks/<domain>/<domain>_*.jsonl` + `qrels/dev.tsv`, and
//!   `corpora/[passage_level/]<domain>.jsonl.zip` (read streaming).
//!
//! Mapping (checked against the real data): the task id `<conversation_id><::><N>` is the N-th
//! *user* message of the conversation (1-based; agent messages are not counted), so every user
//! message becomes a turn with that id, and the agent message that follows is its `answer`.
//! Tasks exist only for answerable and partially answerable turns; unanswerable and
//! conversational turns are kept, tagged, and have no gold. Gold comes from the qrels file,
//! the human rewrite from `*_rewrite.jsonl`, and the enrichments become tags: `Question Type`
//! -> `question_type` (several values joined with `,`), `Multi-Turn` -> `multi_turn_type`,
//! `Answerability` -> `answerability` (lower case), others -> snake_case extra tags; every turn
//! also gets a `domain` tag.
//!
//! The stages: [`layout`] finds the files, [`conversation`] reads the conversations into
//! dialogues, [`tasks`] puts each domain's rewrites and gold on them; the corpus of each domain
//! is read first, so that gold ids are checked against it.

mod conversation;
mod importer;
mod source_files;
mod tasks;

pub use importer::passage_doc_id;
pub(crate) use importer::{import, sniff};

#[cfg(test)]
mod tests {
    use super::super::{ImportOptions, ImportReport};
    use super::*;
    use crate::formats::test_support::counts;
    use serde_json::Value;
    use std::path::Path;
    use std::path::PathBuf;

    #[test]
    fn doc_ids_of_real_passage_ids() {
        assert_eq!(
            passage_doc_id("822086267_6698-7277-0-579").as_deref(),
            Some("822086267")
        );
        assert_eq!(
            passage_doc_id("1aacb62724d27d6f-1676-3870").as_deref(),
            Some("1aacb62724d27d6f")
        );
        assert_eq!(passage_doc_id("plain"), None);
    }

    fn shared() -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
        if p.is_dir() {
            Some(p)
        } else {
            eprintln!("skipping: {} absent", p.display());
            None
        }
    }

    /// The source qrels of a domain, exactly as written.
    fn source_qrels(src: &Path, dom: &str) -> crate::model::Qrels {
        crate::trec::read_qrels(src.join(format!("tasks_{dom}/qrels/dev.tsv"))).unwrap()
    }

    /// Imports `src` (only `domain` when given) into `out`.
    fn import_into(src: &Path, out: &Path, domain: Option<&str>) -> ImportReport {
        let opts = ImportOptions {
            domain: domain.map(String::from),
            ..Default::default()
        };
        import(src, out, &opts, &crate::progress::NoProgress).unwrap()
    }

    #[test]
    fn real_clapnq_import_matches_the_source() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let r = import_into(&src, &tmp.path().join("b"), Some("clapnq"));
        assert_eq!(counts(&r), (29, 224, 208, 6315, 578));
        assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        assert_eq!(dir.qrels().unwrap(), source_qrels(&src, "clapnq"));
        let b = dir.load().unwrap();
        assert_eq!(b.manifest.language, "en");
        // Turn 2 of the first conversation: the 2nd user message, its rewrite and its answer.
        let (d, i) = b
            .find_turn("dd6b6ffd177f2b311abe676261279d2f<::>2")
            .unwrap();
        let t = &d.turns[i];
        assert_eq!(t.user, "Do the Arizona Cardinals play outside the US?");
        assert_eq!(
            t.rewrite.as_deref(),
            Some("Where do the Arizona Cardinals play, regardless of location, this week?")
        );
        assert!(
            t.answer
                .as_deref()
                .unwrap()
                .starts_with("The Arizona Cardinals do play outside the United States.")
        );
        assert_eq!(t.tags.multi_turn_type.as_deref(), Some("Clarification"));
        assert_eq!(t.tags.get("domain").as_deref(), Some("clapnq"));
        // Turn 1 is unanswerable: kept, tagged, no gold, no task.
        let t1 = &d.turns[0];
        assert!(t1.is_unanswerable() && t1.gold.is_empty() && t1.rewrite.is_none());
        let unanswerable = b
            .dialogues
            .iter()
            .flat_map(|d| &d.turns)
            .filter(|t| t.is_unanswerable())
            .count();
        assert_eq!(unanswerable, 16);
        assert!(
            crate::validate::validate(&dir, &Default::default())
                .unwrap()
                .is_ok()
        );
    }

    #[test]
    fn real_all_domains_import() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let r = import_into(&src, &tmp.path().join("b"), None);
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (57, 438, 409, 6315 + 833)
        );
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        let mut want = source_qrels(&src, "clapnq");
        want.extend(source_qrels(&src, "govt"));
        assert_eq!(dir.qrels().unwrap(), want);
        let b = dir.load().unwrap();
        let govt = b
            .dialogues
            .iter()
            .flat_map(|d| &d.turns)
            .filter(|t| t.tags.get("domain").as_deref() == Some("govt"))
            .count();
        assert_eq!(govt, 214);
    }

    #[test]
    fn upstream_layout_with_zipped_corpus() {
        use std::io::Write;
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("mt-rag-benchmark");
        // conversations/conversations.json: one JSON array of all domains' conversations.
        let mut convs = Vec::new();
        for dom in ["clapnq", "govt"] {
            for l in std::fs::read_to_string(src.join(format!("conversations_{dom}.jsonl")))
                .unwrap()
                .lines()
            {
                convs.push(serde_json::from_str::<Value>(l).unwrap());
            }
        }
        std::fs::create_dir_all(up.join("conversations")).unwrap();
        std::fs::write(
            up.join("conversations/conversations.json"),
            serde_json::to_string_pretty(&convs).unwrap(),
        )
        .unwrap();
        for dom in ["clapnq", "govt"] {
            let tdir = up.join(format!("mtrag-human/retrieval_tasks/{dom}"));
            std::fs::create_dir_all(tdir.join("qrels")).unwrap();
            for v in ["questions", "lastturn", "rewrite"] {
                std::fs::copy(
                    src.join(format!("tasks_{dom}/{dom}_{v}.jsonl")),
                    tdir.join(format!("{dom}_{v}.jsonl")),
                )
                .unwrap();
            }
            std::fs::copy(
                src.join(format!("tasks_{dom}/qrels/dev.tsv")),
                tdir.join("qrels/dev.tsv"),
            )
            .unwrap();
            let cdir = up.join("corpora/passage_level");
            std::fs::create_dir_all(&cdir).unwrap();
            let f = std::fs::File::create(cdir.join(format!("{dom}.jsonl.zip"))).unwrap();
            let mut z = zip::ZipWriter::new(f);
            z.start_file(
                format!("{dom}.jsonl"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            z.write_all(&std::fs::read(src.join(format!("corpus_{dom}.jsonl"))).unwrap())
                .unwrap();
            z.finish().unwrap();
        }
        assert!(sniff(&up));
        let r = import_into(&up, &tmp.path().join("b"), Some("govt"));
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (28, 214, 201, 833)
        );
        assert_eq!(
            crate::BenchmarkDir::open(tmp.path().join("b"))
                .unwrap()
                .qrels()
                .unwrap(),
            source_qrels(&src, "govt")
        );
        let e = import(
            &up,
            &tmp.path().join("c"),
            &ImportOptions {
                domain: Some("fiqa".into()),
                ..Default::default()
            },
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("fiqa") && e.contains("clapnq"), "{e}");
    }

    #[test]
    fn beir_export_roundtrips_real_qrels() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        import_into(&src, &tmp.path().join("b"), Some("clapnq"));
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        crate::formats::beir_trec_export::export_beir(
            &dir,
            &tmp.path().join("beir"),
            Default::default(),
        )
        .unwrap();
        // The exported qrels file equals the source's judgements exactly.
        assert_eq!(
            crate::trec::read_qrels(tmp.path().join("beir/qrels/test.tsv")).unwrap(),
            source_qrels(&src, "clapnq")
        );
        // And importing the export gives back the same benchmark.
        let r = crate::formats::beir::import(
            &tmp.path().join("beir"),
            &tmp.path().join("b2"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (29, 224, 208, 6315)
        );
        let again = crate::BenchmarkDir::open(tmp.path().join("b2")).unwrap();
        assert_eq!(again.qrels().unwrap(), source_qrels(&src, "clapnq"));
        assert_eq!(
            std::fs::read(again.corpus_path()).unwrap(),
            std::fs::read(dir.corpus_path()).unwrap(),
            "corpus round-trips byte for byte"
        );
    }

    #[test]
    fn mini_fixture_maps_turn_numbers_to_user_messages() {
        let src = crate::formats::test_support::fixture("mtrag");
        let tmp = tempfile::tempdir().unwrap();
        let r = import_into(&src, &tmp.path().join("b"), None);
        assert_eq!(counts(&r), (2, 5, 3, 4, 4));
        let b = crate::BenchmarkDir::open(tmp.path().join("b"))
            .unwrap()
            .load()
            .unwrap();
        let t = &b.dialogues[0].turns[2];
        assert_eq!(t.id, "aaa111<::>3");
        assert_eq!(t.user, "How many teams are in the NFL?");
        assert_eq!(t.answer.as_deref(), Some("There are 32 teams in the NFL."));
        assert_eq!(t.tags.answerability.as_deref(), Some("partial"));
        assert_eq!(
            b.dialogues[1].turns[1].tags.answerability.as_deref(),
            Some("conversational")
        );
        assert_eq!(
            b.dialogues[0].turns[1].rewrite.as_deref(),
            Some("Do the Arizona Cardinals play games outside the United States?")
        );
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let dst = to.join(p.file_name().unwrap());
            if p.is_dir() {
                copy_dir(&p, &dst);
            } else {
                std::fs::copy(&p, &dst).unwrap();
            }
        }
    }

    #[test]
    fn duplicate_conversation_names_its_input_line_and_the_manifest_no_local_path() {
        let fixture = crate::formats::test_support::fixture("mtrag");
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("mtrag-src");
        copy_dir(&fixture, &src);
        // the manifest records the source's name, not where it sits on this machine
        let out = tmp.path().join("ok");
        import_into(&src, &out, None);
        let manifest = std::fs::read_to_string(out.join("benchmark.toml")).unwrap();
        let tmp_path = tmp.path().display().to_string();
        assert!(!manifest.contains(&tmp_path), "{manifest}");
        assert!(manifest.contains("source = \"mtrag-src\""), "{manifest}");

        let conv = src.join("conversations_mini.jsonl");
        let text = std::fs::read_to_string(&conv).unwrap();
        let first = text.lines().next().unwrap().to_string();
        std::fs::write(&conv, format!("{}\n{first}\n", text.trim_end())).unwrap();
        let out = tmp.path().join("dup");
        let e = import(
            &src,
            &out,
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("conversations_mini.jsonl:3") && e.contains("conversation_id"),
            "{e}"
        );
        assert!(e.contains("duplicate conversation `aaa111`"), "{e}");
        assert!(!out.join("dialogues.jsonl").exists());
    }

    #[test]
    fn real_runs_match_the_imported_turn_ids() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        import_into(&src, &tmp.path().join("b"), Some("clapnq"));
        let qrels = crate::BenchmarkDir::open(tmp.path().join("b"))
            .unwrap()
            .qrels()
            .unwrap();
        let mut runs = 0;
        for f in std::fs::read_dir(src.join("runs_clapnq")).unwrap() {
            let run = crate::formats::runs::read_run_any(&f.unwrap().path()).unwrap();
            assert!(run.len() >= 207);
            assert!(
                run.keys().all(|q| qrels.contains_key(q)),
                "every run task is a judged turn"
            );
            runs += 1;
        }
        assert_eq!(runs, 12);
    }
}
