//! Validation of a native benchmark folder. Every problem is reported (not just the first) as
//! an [`InputError`] naming the file, the line and the field: malformed lines, missing fields,
//! duplicate passage/dialogue/turn ids, empty questions, gold passages absent from
//! the corpus, and disagreements between `qrels.tsv` and the dialogues' gold. With `lenient`
//! the problems become warnings and are counted as skipped records by kind. Passages whose
//! text is only whitespace are always a warning (`empty-passage`), never an error.
//!
//! The corpus is streamed: only the set of passage ids is kept in memory.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::benchmark::{BenchmarkDir, CORPUS, DIALOGUES, MANIFEST, QRELS};
use crate::error::{Error, InputError, Result};
use crate::jsonl::{self, Lines};
use crate::model::{Dialogue, Passage};

/// How many problems are kept verbatim per list (all are counted).
const KEPT: usize = 1000;

#[derive(Debug, Clone, Copy, Default)]
pub struct ValidateOptions {
    /// Report problems as warnings and count them as skipped records.
    pub lenient: bool,
}

/// One problem with its kind (`duplicate-passage`, `missing-gold-passage`, ...).
#[derive(Debug, Clone)]
pub struct Issue {
    pub kind: String,
    pub error: InputError,
}

impl Serialize for Issue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Issue", 6)?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("file", &self.error.file.display().to_string())?;
        st.serialize_field("line", &self.error.line)?;
        st.serialize_field("field", &self.error.field)?;
        st.serialize_field("message", &self.error.message)?;
        st.serialize_field("hint", &self.error.hint)?;
        st.end()
    }
}

/// The outcome of a validation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ValidationReport {
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
    pub error_count: u64,
    pub warning_count: u64,
    /// Lenient mode: problems by kind (the records a lenient consumer would skip).
    pub skipped: BTreeMap<String, u64>,
    pub passages: u64,
    pub dialogues: usize,
    pub turns: usize,
    pub judged_turns: usize,
    pub qrels_pairs: usize,
    #[serde(skip)]
    lenient: bool,
}

impl ValidationReport {
    pub fn is_ok(&self) -> bool {
        self.error_count == 0
    }

    /// `Err(Error::Inputs)` with the errors when there are any.
    pub fn into_result(self) -> Result<Self> {
        if self.is_ok() {
            Ok(self)
        } else {
            Err(Error::Inputs(
                self.errors.into_iter().map(|i| i.error).collect(),
            ))
        }
    }

    fn problem(&mut self, kind: &str, error: InputError) {
        if self.lenient {
            *self.skipped.entry(kind.to_string()).or_default() += 1;
            self.warn(kind, error);
        } else {
            self.error_count += 1;
            if self.errors.len() < KEPT {
                self.errors.push(Issue {
                    kind: kind.into(),
                    error,
                });
            }
        }
    }

    fn warn(&mut self, kind: &str, error: InputError) {
        self.warning_count += 1;
        if self.warnings.len() < KEPT {
            self.warnings.push(Issue {
                kind: kind.into(),
                error,
            });
        }
    }
}

/// Validates a native benchmark folder.
pub fn validate(dir: &BenchmarkDir, opts: &ValidateOptions) -> Result<ValidationReport> {
    let mut r = ValidationReport {
        lenient: opts.lenient,
        ..Default::default()
    };
    for name in [MANIFEST, CORPUS, DIALOGUES] {
        if !dir.path(name).is_file() {
            r.problem(
                "missing-file",
                InputError::new(dir.path(name), "missing file of a native benchmark"),
            );
        }
    }
    if !r.is_ok() {
        return Ok(r);
    }
    let manifest = match dir.manifest() {
        Ok(m) => Some(m),
        Err(Error::Input(e)) => {
            r.problem("malformed-record", *e);
            None
        }
        Err(e) => return Err(e),
    };
    let ids = check_corpus(dir, &mut r)?;
    let gold = check_dialogues(dir, &ids, &mut r)?;
    check_qrels(dir, &ids, &gold, &mut r)?;
    if let Some(m) = manifest {
        let actual = dir.compute_fingerprint()?;
        if m.fingerprint != actual {
            r.warn(
                "stale-fingerprint",
                InputError::new(dir.path(MANIFEST), format!("fingerprint {} does not match the data files ({})", crate::fingerprint::short(&m.fingerprint), crate::fingerprint::short(&actual)))
                    .field("fingerprint")
                    .hint("the data changed after the manifest was written; reports will carry the manifest's value"),
            );
        }
    }
    Ok(r)
}

/// Streams the corpus; returns its passage ids.
fn check_corpus(dir: &BenchmarkDir, r: &mut ValidationReport) -> Result<HashSet<String>> {
    let path = dir.path(CORPUS);
    let mut ids: HashSet<String> = HashSet::new();
    for line in jsonl::records::<Passage>(&path)? {
        let (no, p) = match line? {
            jsonl::Line::Record(no, p) => (no, p),
            jsonl::Line::Malformed(e) => {
                r.problem("malformed-record", e);
                continue;
            }
        };
        r.passages += 1;
        if p.id.trim().is_empty() {
            r.problem(
                "empty-passage-id",
                InputError::new(&path, "passage id is empty")
                    .line(no)
                    .field("id"),
            );
            continue;
        }
        if p.id.chars().any(|c| c.is_whitespace() && c != ' ') {
            // a tab or a line break: `mtr index` refuses it and a TREC export would rewrite it
            r.problem(
                "passage-id-whitespace",
                InputError::new(
                    &path,
                    format!("passage id {:?} holds a tab or a line break", p.id),
                )
                .line(no)
                .field("id")
                .hint("TREC run and qrels files are whitespace-separated: rename the passage and its gold references"),
            );
        } else if p.id.contains(' ') {
            // real collections (INSCIT: Wikipedia titles) have such ids: kept, but said
            r.warn(
                "passage-id-space",
                InputError::new(&path, format!("passage id {:?} holds a space", p.id))
                    .line(no)
                    .field("id")
                    .hint("`mtr index` and TREC run/qrels files cannot hold it"),
            );
        }
        if p.text.trim().is_empty() && p.title.trim().is_empty() {
            // A warning, not an error: real corpora hold such passages and real runs rank
            // them (see `mtr import`); the audit skips them as `empty_passage`.
            r.warn(
                "empty-passage",
                InputError::new(
                    &path,
                    format!("passage `{}` has no text, only whitespace", p.id),
                )
                .line(no)
                .field("text")
                .hint("kept: runs may rank it; the audit skips it"),
            );
        }
        if !ids.insert(p.id.clone()) {
            r.problem(
                "duplicate-passage",
                InputError::new(&path, format!("duplicate passage id `{}`", p.id))
                    .line(no)
                    .field("id"),
            );
        }
    }
    Ok(ids)
}

/// Where a turn's gold label is: `qid -> docid -> (grade, line, field)`.
type GoldIndex = HashMap<String, HashMap<String, (i32, u64, String)>>;

fn check_dialogues(
    dir: &BenchmarkDir,
    ids: &HashSet<String>,
    r: &mut ValidationReport,
) -> Result<GoldIndex> {
    let path = dir.path(DIALOGUES);
    let check_refs = !ids.is_empty();
    if r.passages == 0 {
        // a benchmark with no passages can rank nothing: an error unless --lenient
        r.problem(
            "empty-corpus",
            InputError::new(
                dir.path(CORPUS),
                "the corpus holds no passage: nothing can be retrieved and gold passage ids are not checked",
            )
            .hint("import or write the passages into corpus.jsonl (--lenient accepts it)"),
        );
    } else if !check_refs {
        r.warn(
            "empty-corpus",
            InputError::new(
                dir.path(CORPUS),
                "no passage of the corpus could be read: gold passage ids are not checked",
            ),
        );
    }
    let mut gold: GoldIndex = HashMap::new();
    let mut dialogue_ids: HashSet<String> = HashSet::new();
    let mut turn_lines: HashMap<String, u64> = HashMap::new();
    for line in jsonl::records::<Dialogue>(&path)? {
        let (no, d) = match line? {
            jsonl::Line::Record(no, d) => (no, d),
            jsonl::Line::Malformed(e) => {
                r.problem("malformed-record", e);
                continue;
            }
        };
        r.dialogues += 1;
        if d.id.trim().is_empty() {
            r.problem(
                "empty-dialogue-id",
                InputError::new(&path, "dialogue id is empty")
                    .line(no)
                    .field("id"),
            );
        } else if !dialogue_ids.insert(d.id.clone()) {
            r.problem(
                "duplicate-dialogue",
                InputError::new(&path, format!("duplicate dialogue id `{}`", d.id))
                    .line(no)
                    .field("id"),
            );
        }
        if d.turns.is_empty() {
            r.problem(
                "empty-dialogue",
                InputError::new(&path, format!("dialogue `{}` has no turns", d.id))
                    .line(no)
                    .field("turns"),
            );
        }
        for (ti, t) in d.turns.iter().enumerate() {
            r.turns += 1;
            if t.id.trim().is_empty() {
                r.problem(
                    "empty-turn-id",
                    InputError::new(
                        &path,
                        format!("turn {ti} of dialogue `{}` has an empty id", d.id),
                    )
                    .line(no)
                    .field(format!("turns[{ti}].id")),
                );
                continue;
            }
            if let Some(first) = turn_lines.insert(t.id.clone(), no) {
                r.problem(
                    "duplicate-turn",
                    InputError::new(
                        &path,
                        format!("duplicate turn id `{}` (first on line {first})", t.id),
                    )
                    .line(no)
                    .field(format!("turns[{ti}].id"))
                    .hint("turn ids are the query ids of qrels and runs and must be unique"),
                );
                continue;
            }
            if t.user.trim().is_empty() {
                r.problem(
                    "empty-query",
                    InputError::new(&path, format!("turn `{}` has an empty question", t.id))
                        .line(no)
                        .field(format!("turns[{ti}].user")),
                );
            }
            let entry = gold.entry(t.id.clone()).or_default();
            for (gi, g) in t.gold.iter().enumerate() {
                let field = format!("turns[{ti}].gold[{gi}].passage_id");
                if entry
                    .insert(g.passage_id.clone(), (g.grade, no, field.clone()))
                    .is_some()
                {
                    r.problem(
                        "duplicate-gold",
                        InputError::new(
                            &path,
                            format!("turn `{}` lists passage `{}` twice", t.id, g.passage_id),
                        )
                        .line(no)
                        .field(field.clone()),
                    );
                }
                if check_refs && !ids.contains(&g.passage_id) {
                    r.problem(
                        "missing-gold-passage",
                        InputError::new(
                            &path,
                            format!(
                                "gold passage `{}` of turn `{}` is not in the corpus",
                                g.passage_id, t.id
                            ),
                        )
                        .line(no)
                        .field(field)
                        .hint("the corpus must contain every judged passage"),
                    );
                }
            }
            if t.relevant().next().is_some() {
                r.judged_turns += 1;
            }
        }
    }
    Ok(gold)
}

fn check_qrels(
    dir: &BenchmarkDir,
    ids: &HashSet<String>,
    gold: &GoldIndex,
    r: &mut ValidationReport,
) -> Result<()> {
    let path = dir.path(QRELS);
    let dpath = dir.path(DIALOGUES);
    if !path.is_file() {
        r.warn(
            "missing-qrels",
            InputError::new(
                &path,
                "no qrels.tsv: qrels are derived from the dialogues' gold",
            ),
        );
        return Ok(());
    }
    let mut seen: HashMap<String, HashSet<String>> = HashMap::new();
    let mut lines = Lines::open(&path)?;
    while let Some(next) = lines.next_line() {
        let (no, line) = match next {
            Ok(x) => x,
            Err(Error::Input(e)) => {
                r.problem("malformed-record", *e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let cols: Vec<&str> = crate::trec::columns(line, &[4]);
        let [q, _iter, d, g] = cols.as_slice() else {
            r.problem(
                "malformed-record",
                InputError::new(
                    &path,
                    format!(
                        "expected 4 columns (qid iter docid grade), found {}",
                        cols.len()
                    ),
                )
                .line(no),
            );
            continue;
        };
        let Ok(grade) = g.parse::<i32>() else {
            r.problem(
                "malformed-record",
                InputError::new(&path, format!("grade `{g}` is not an integer"))
                    .line(no)
                    .field("grade"),
            );
            continue;
        };
        r.qrels_pairs += 1;
        if !seen.entry(q.to_string()).or_default().insert(d.to_string()) {
            r.problem(
                "duplicate-judgement",
                InputError::new(
                    &path,
                    format!("duplicate judgement for query `{q}`, document `{d}`"),
                )
                .line(no)
                .field("docid"),
            );
            continue;
        }
        match gold.get(*q) {
            None => r.problem(
                "qrels-mismatch",
                InputError::new(
                    &path,
                    format!("query `{q}` is not a turn of dialogues.jsonl"),
                )
                .line(no)
                .field("qid"),
            ),
            Some(turn) => match turn.get(*d) {
                None => {
                    r.problem(
                        "qrels-mismatch",
                        InputError::new(&path, format!("judgement ({q}, {d}) = {grade} is not in the turn's gold in dialogues.jsonl")).line(no).field("docid"),
                    );
                    if !ids.is_empty() && !ids.contains(*d) {
                        r.problem(
                            "missing-gold-passage",
                            InputError::new(
                                &path,
                                format!("judged passage `{d}` is not in the corpus"),
                            )
                            .line(no)
                            .field("docid"),
                        );
                    }
                }
                Some((dg, _, _)) if *dg != grade => r.problem(
                    "qrels-mismatch",
                    InputError::new(
                        &path,
                        format!("grade of ({q}, {d}) is {grade} here but {dg} in dialogues.jsonl"),
                    )
                    .line(no)
                    .field("grade"),
                ),
                Some(_) => {}
            },
        }
    }
    if r.qrels_pairs == 0 && seen.is_empty() {
        // a qrels file with no judgement judges nothing: an error unless --lenient
        r.problem(
            "empty-qrels",
            InputError::new(&path, "qrels.tsv holds no judgement")
                .hint("write the judgements (qid iter docid grade) or remove the file to derive them from the dialogues (--lenient accepts it)"),
        );
    }
    let mut missing: Vec<(u64, String, String, String)> = Vec::new();
    for (q, docs) in gold {
        for (d, (_, line, field)) in docs {
            if !seen.get(q).is_some_and(|s| s.contains(d)) {
                missing.push((*line, field.clone(), q.clone(), d.clone()));
            }
        }
    }
    missing.sort();
    for (line, field, q, d) in missing {
        r.problem(
            "qrels-mismatch",
            InputError::new(&dpath, format!("gold ({q}, {d}) is missing from qrels.tsv"))
                .line(line)
                .field(field)
                .hint("rewrite qrels.tsv from the dialogues or fix the gold"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmark::{Manifest, write_benchmark};
    use crate::model::{Gold, Tags, Turn};

    fn bench(tmp: &std::path::Path) -> BenchmarkDir {
        let d = Dialogue {
            id: "d1".into(),
            turns: vec![Turn {
                id: "d1::1".into(),
                user: "年假有几天？".into(),
                rewrite: None,
                answer: None,
                gold: vec![Gold {
                    passage_id: "p1".into(),
                    grade: 1,
                }],
                tags: Tags::default(),
            }],
            meta: Default::default(),
        };
        let p = Passage {
            id: "p1".into(),
            title: String::new(),
            text: "员工每年有15天年假。".into(),
            doc_id: None,
            meta: Default::default(),
        };
        write_benchmark(
            tmp.join("b"),
            Manifest {
                name: "t".into(),
                ..Default::default()
            },
            &[d],
            [Ok(p)],
        )
        .unwrap()
    }

    fn kinds(r: &ValidationReport) -> Vec<String> {
        r.errors.iter().map(|i| i.kind.clone()).collect()
    }

    #[test]
    fn clean_benchmark_validates() {
        let tmp = tempfile::tempdir().unwrap();
        let r = validate(&bench(tmp.path()), &ValidateOptions::default()).unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        assert_eq!(
            (
                r.passages,
                r.dialogues,
                r.turns,
                r.judged_turns,
                r.qrels_pairs
            ),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    }

    #[test]
    fn whitespace_in_passage_ids_and_empty_files_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        std::fs::write(
            b.path(CORPUS),
            "{\"id\":\"p1\",\"text\":\"a\"}\n{\"id\":\"p\\t2\",\"text\":\"b\"}\n{\"id\":\"p\\n3\",\"text\":\"c\"}\n",
        )
        .unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let text: Vec<String> = r
            .errors
            .iter()
            .filter(|i| i.kind == "passage-id-whitespace")
            .map(|i| i.error.to_string())
            .collect();
        assert_eq!(text.len(), 2, "{:?}", r.errors);
        assert!(text[0].contains("corpus.jsonl:2: field `id`"), "{text:?}");
        assert!(text[1].contains("corpus.jsonl:3: field `id`"), "{text:?}");
        // a space (INSCIT's Wikipedia titles) is a warning
        std::fs::write(
            b.path(CORPUS),
            "{\"id\":\"p1\",\"text\":\"a\"}\n{\"id\":\"Types of cheese:19\",\"text\":\"b\"}\n",
        )
        .unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        assert!(r.warnings.iter().any(|w| w.kind == "passage-id-space"));

        // an empty corpus and an empty qrels file: errors, warnings with --lenient
        std::fs::write(b.path(CORPUS), "").unwrap();
        std::fs::write(b.path(QRELS), "").unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let k = kinds(&r);
        assert!(k.iter().any(|x| x == "empty-corpus"), "{k:?}");
        assert!(k.iter().any(|x| x == "empty-qrels"), "{k:?}");
        assert!(!r.is_ok());
        let lenient = validate(&b, &ValidateOptions { lenient: true }).unwrap();
        assert!(lenient.is_ok(), "{:?}", lenient.errors);
        assert_eq!(lenient.skipped.get("empty-corpus"), Some(&1));
        assert_eq!(lenient.skipped.get("empty-qrels"), Some(&1));
    }

    #[test]
    fn each_bad_input_class_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        let corpus = "{\"id\":\"p1\",\"text\":\"a\"}\r\n{\"id\":\"p1\",\"text\":\"b\"}\n{\"id\":\"p2\",\"text\":\"  \"}\n{\"text\":\"no id\"}\nnot json\n";
        std::fs::write(b.path(CORPUS), corpus).unwrap();
        let dialogues = concat!(
            "{\"id\":\"d1\",\"turns\":[{\"id\":\"t1\",\"user\":\"q\",\"gold\":[{\"passage_id\":\"p9\",\"grade\":1}]}]}\n",
            "{\"id\":\"d1\",\"turns\":[{\"id\":\"t1\",\"user\":\"q\"},{\"id\":\"t2\",\"user\":\"\"}]}\n",
            "{\"id\":\"d3\",\"turns\":[{\"id\":\"t3\"}]}\n",
        );
        std::fs::write(b.path(DIALOGUES), dialogues).unwrap();
        std::fs::write(b.path(QRELS), "t1\t0\tp9\t1\nt2\t0\tp1\t1\n").unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let k = kinds(&r);
        for want in [
            "duplicate-passage",
            "malformed-record",
            "missing-gold-passage",
            "duplicate-dialogue",
            "duplicate-turn",
            "empty-query",
            "qrels-mismatch",
        ] {
            assert!(k.iter().any(|x| x == want), "{want} missing from {k:?}");
        }
        let text: Vec<String> = r.errors.iter().map(|i| i.error.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("corpus.jsonl:2: field `id`") && t.contains("duplicate")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("corpus.jsonl:4: field `id`") && t.contains("missing field")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("dialogues.jsonl:1: field `turns[0].gold[0].passage_id`")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("dialogues.jsonl:3: field `turns[0].user`")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("qrels.tsv:2") && t.contains("not in the turn's gold")),
            "{text:?}"
        );
        assert!(r.clone().into_result().is_err());
        // A whitespace-only passage is real data: a warning with its line, not an error.
        assert!(!k.iter().any(|x| x == "empty-passage"), "{k:?}");
        assert!(
            r.warnings.iter().any(|w| w.kind == "empty-passage"
                && w.error.to_string().contains("corpus.jsonl:3: field `text`")),
            "{:?}",
            r.warnings
        );

        let lenient = validate(&b, &ValidateOptions { lenient: true }).unwrap();
        assert!(lenient.is_ok());
        assert_eq!(lenient.skipped.values().sum::<u64>(), r.error_count);
        assert!(lenient.skipped["duplicate-passage"] >= 1);
    }

    #[test]
    fn stale_fingerprint_is_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        let mut text = std::fs::read_to_string(b.path(CORPUS)).unwrap();
        text.push_str("{\"id\":\"p2\",\"text\":\"more\"}\n");
        std::fs::write(b.path(CORPUS), text).unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        assert!(r.is_ok());
        assert!(r.warnings.iter().any(|w| w.kind == "stale-fingerprint"));
    }

    /// A small JSON Schema checker for the keywords docs/schema uses: type, required,
    /// properties, additionalProperties, items, minLength, $ref to #/$defs.
    fn check(
        schema: &serde_json::Value,
        root: &serde_json::Value,
        v: &serde_json::Value,
        path: &str,
        errs: &mut Vec<String>,
    ) {
        use serde_json::Value as J;
        if let Some(r) = schema.get("$ref").and_then(J::as_str) {
            let name = r.trim_start_matches("#/$defs/");
            return check(&root["$defs"][name], root, v, path, errs);
        }
        if let Some(t) = schema.get("type") {
            let types: Vec<&str> = match t {
                J::String(s) => vec![s.as_str()],
                J::Array(a) => a.iter().filter_map(J::as_str).collect(),
                _ => vec![],
            };
            let ok = types.iter().any(|t| match *t {
                "object" => v.is_object(),
                "array" => v.is_array(),
                "string" => v.is_string(),
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                _ => false,
            });
            if !ok {
                errs.push(format!("{path}: expected {types:?}, got {v}"));
                return;
            }
        }
        if let (Some(min), Some(s)) = (schema.get("minLength").and_then(J::as_u64), v.as_str())
            && (s.chars().count() as u64) < min
        {
            errs.push(format!("{path}: shorter than {min}"));
        }
        if let Some(obj) = v.as_object() {
            for req in schema
                .get("required")
                .and_then(J::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(k) = req.as_str()
                    && !obj.contains_key(k)
                {
                    errs.push(format!("{path}: missing required `{k}`"));
                }
            }
            let props = schema.get("properties").and_then(J::as_object);
            for (k, val) in obj {
                match props.and_then(|p| p.get(k)) {
                    Some(ps) => check(ps, root, val, &format!("{path}.{k}"), errs),
                    None => match schema.get("additionalProperties") {
                        Some(J::Bool(false)) => {
                            errs.push(format!("{path}: unexpected property `{k}`"))
                        }
                        Some(ap @ J::Object(_)) => {
                            check(ap, root, val, &format!("{path}.{k}"), errs)
                        }
                        _ => {}
                    },
                }
            }
        }
        if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
            for (i, x) in arr.iter().enumerate() {
                check(items, root, x, &format!("{path}[{i}]"), errs);
            }
        }
    }

    fn schema(name: &str) -> serde_json::Value {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../docs/schema/{name}.schema.json"));
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn errors_of(name: &str, v: &serde_json::Value) -> Vec<String> {
        let s = schema(name);
        let mut errs = Vec::new();
        check(&s, &s, v, name, &mut errs);
        errs
    }

    /// Every line the writer produces validates against the documented schemas.
    fn assert_folder_matches_schemas(dir: &BenchmarkDir) -> usize {
        let mut n = 0;
        for (file, schema) in [(CORPUS, "passage"), (DIALOGUES, "dialogue")] {
            for line in std::fs::read_to_string(dir.path(file)).unwrap().lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let errs = errors_of(schema, &v);
                assert!(errs.is_empty(), "{file}: {errs:?}");
                n += 1;
            }
        }
        let m: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.path(MANIFEST)).unwrap()).unwrap();
        let errs = errors_of("manifest", &serde_json::to_value(m).unwrap());
        assert!(errs.is_empty(), "manifest: {errs:?}");
        n
    }

    #[test]
    fn writer_output_matches_the_json_schemas() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tags = Tags {
            question_type: Some("Factoid,Summarization".into()),
            multi_turn_type: Some("Follow-up".into()),
            answerability: Some("partial".into()),
            topic_switch: Some(true),
            topic: Some("Cheese".into()),
            ..Default::default()
        };
        tags.extra
            .insert("domain".into(), serde_json::json!("clapnq"));
        tags.extra
            .insert("response_provenance".into(), serde_json::json!(["a", "b"]));
        let mut meta = serde_json::Map::new();
        meta.insert("url".into(), serde_json::json!("https://example.org"));
        let d = Dialogue {
            id: "d1".into(),
            turns: vec![Turn {
                id: "d1::1".into(),
                user: "q".into(),
                rewrite: Some("r".into()),
                answer: Some("a".into()),
                gold: vec![
                    Gold {
                        passage_id: "p1".into(),
                        grade: 2,
                    },
                    Gold {
                        passage_id: "p2".into(),
                        grade: -1,
                    },
                ],
                tags,
            }],
            meta: meta.clone(),
        };
        let ps = ["p1", "p2"].map(|id| {
            Ok(Passage {
                id: id.into(),
                title: "t".into(),
                text: "x".into(),
                doc_id: Some("doc".into()),
                meta: meta.clone(),
            })
        });
        let mut m = Manifest {
            name: "full".into(),
            description: "d".into(),
            ..Default::default()
        };
        m.generator.insert("generator".into(), "qwen2.5".into());
        m.extra
            .insert("import".into(), toml::Value::Table(toml::Table::new()));
        let dir = write_benchmark(tmp.path().join("b"), m, &[d], ps).unwrap();
        assert_eq!(assert_folder_matches_schemas(&dir), 3);
        // The checker is not vacuous.
        assert!(!errors_of("dialogue", &serde_json::json!({"id": "x"})).is_empty());
        assert!(!errors_of("dialogue", &serde_json::json!({"id": "x", "turns": [{"id": "t", "user": "q", "gold": [{"grade": 1}]}]})).is_empty());
        assert!(
            !errors_of(
                "passage",
                &serde_json::json!({"id": "p", "text": "t", "extra": 1})
            )
            .is_empty()
        );
        assert!(!errors_of("manifest", &serde_json::json!({"version": "1"})).is_empty());
    }

    #[test]
    fn real_import_matches_the_json_schemas() {
        let src =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
        if !src.is_dir() {
            eprintln!("skipping: {} absent", src.display());
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let opts = crate::ImportOptions {
            domain: Some("govt".into()),
            ..Default::default()
        };
        crate::formats::import(
            crate::Format::Mtrag,
            &src,
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            assert_folder_matches_schemas(&BenchmarkDir::open(tmp.path().join("b")).unwrap()),
            833 + 28
        );
    }
}
