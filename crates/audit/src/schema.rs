//! JSON Schemas of the audit folder's files, generated from the types that write them and
//! kept in `docs/schema/` (a test fails when they drift): `audit-item.schema.json` (one line
//! of `items.jsonl` / `human_items.jsonl`), `audit-summary.schema.json` (`summary.json`),
//! and `audit-verdict-rating.schema.json` / `audit-verdict-pick.schema.json` (what a judge
//! must return).

use crate::judges::record::{Judgement, pick_schema, rating_schema};
use crate::summary::Summary;

pub(crate) const ITEM_SCHEMA_FILE: &str = "audit-item.schema.json";
pub(crate) const SUMMARY_SCHEMA_FILE: &str = "audit-summary.schema.json";
pub(crate) const RATING_SCHEMA_FILE: &str = "audit-verdict-rating.schema.json";
pub(crate) const PICK_SCHEMA_FILE: &str = "audit-verdict-pick.schema.json";

fn with_id(mut v: serde_json::Value, id: &str, title: &str) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "$id".into(),
            serde_json::Value::String(format!("https://mtr.dev/schema/{id}")),
        );
        o.insert("title".into(), serde_json::Value::String(title.into()));
    }
    v
}

/// `(file name, schema)` for every audit schema.
pub(crate) fn all() -> Vec<(&'static str, serde_json::Value)> {
    let item = serde_json::to_value(schemars::schema_for!(Judgement)).unwrap_or_default();
    let summary = serde_json::to_value(schemars::schema_for!(Summary)).unwrap_or_default();
    let mut rating = rating_schema();
    let mut pick = pick_schema(8);
    for (v, what) in [(&mut rating, "rating"), (&mut pick, "pick")] {
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "$schema".into(),
                "https://json-schema.org/draft/2020-12/schema".into(),
            );
            if what == "pick" {
                o.insert("description".into(), "A discriminability verdict; `choice` is 1-based, its maximum is the pool size (8 with the default 7 negatives).".into());
            }
        }
    }
    vec![
        (
            ITEM_SCHEMA_FILE,
            with_id(
                item,
                ITEM_SCHEMA_FILE,
                "One judgement of an mtr audit (a line of items.jsonl)",
            ),
        ),
        (
            SUMMARY_SCHEMA_FILE,
            with_id(summary, SUMMARY_SCHEMA_FILE, "summary.json of an mtr audit"),
        ),
        (
            RATING_SCHEMA_FILE,
            with_id(rating, RATING_SCHEMA_FILE, "A judge's 1-5 rating verdict"),
        ),
        (
            PICK_SCHEMA_FILE,
            with_id(pick, PICK_SCHEMA_FILE, "A judge's discriminability pick"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
    }

    /// `UPDATE_SCHEMAS=1 cargo test -p mtr-audit schema` rewrites the files.
    #[test]
    fn schemas_in_docs_are_current() {
        for (name, schema) in all() {
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            let path = docs().join(name);
            if std::env::var_os("UPDATE_SCHEMAS").is_some() {
                std::fs::create_dir_all(docs()).unwrap();
                std::fs::write(&path, &text).unwrap();
            }
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                on_disk == text,
                "{} is out of date: run UPDATE_SCHEMAS=1 cargo test -p mtr-audit schema",
                path.display()
            );
            jsonschema::validator_for(&schema).unwrap();
        }
    }
}
