//! Test only: a small JSON Schema checker, and the tests that every line the benchmark writer
//! produces (from a hand-made benchmark and from a real MTRAG import) validates against the
//! documented schemas of `docs/schema/`.

use crate::benchmark::{BenchmarkDir, CORPUS, DIALOGUES, MANIFEST, Manifest, write_benchmark};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};

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
                    Some(J::Bool(false)) => errs.push(format!("{path}: unexpected property `{k}`")),
                    Some(ap @ J::Object(_)) => check(ap, root, val, &format!("{path}.{k}"), errs),
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
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
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
