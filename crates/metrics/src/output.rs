//! Rendering an [`Evaluation`]: trec_eval's exact text, full-precision JSON, per-query JSONL.
//!
//! The text format is trec_eval's `printf("%-22s\t%s\t%6.4f\n")` (integers `%ld`), per-query
//! lines first (with `-q`), queries in qid byte order, then the `all` lines, so scripts that
//! parse trec_eval output work unchanged. Rust's `{:.4}` rounds the exact binary value half to
//! even, like glibc's printf, so the digits agree. JSON carries every value at full precision
//! (shortest round-trip form), the conventions used and the input file hashes.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{MetricsError, Result};
use crate::eval::Evaluation;
use crate::measure::{Aggregation, Column};

/// One input file of an evaluation and its content hash (BLAKE3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputHash {
    /// What the file is (`qrels`, `run`).
    pub role: String,
    /// The path as given.
    pub path: String,
    /// The file's BLAKE3 hash.
    pub blake3: String,
}

impl InputHash {
    /// Hashes the file at `path`.
    pub fn of_file(role: &str, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let blake3 = mtr_core::fingerprint::hash_file(path).map_err(MetricsError::from)?;
        Ok(InputHash {
            role: role.to_string(),
            path: path.display().to_string(),
            blake3,
        })
    }
}

fn value_text(c: &Column, v: f64) -> String {
    if c.is_integer() {
        format!("{}", v as i64)
    } else {
        format!("{v:6.4}")
    }
}

/// Writes trec_eval's text output. `per_query` is trec_eval's `-q`.
pub fn write_trec_eval(w: &mut dyn Write, ev: &Evaluation, per_query: bool) -> io::Result<()> {
    if per_query {
        // trec_eval 9 averages -c's missing queries in but does not print them per query.
        let hide_missing = ev.conventions.compat == crate::Compat::TrecEval9.name();
        for q in ev.queries.iter().filter(|q| !(hide_missing && q.missing)) {
            for (c, v) in ev.columns.iter().zip(&q.values) {
                if c.per_query {
                    writeln!(w, "{:<22}\t{}\t{}", c.name, q.qid, value_text(c, *v))?;
                }
            }
        }
    }
    for (c, v) in ev.columns.iter().zip(&ev.summary) {
        if c.aggregation == Aggregation::Text {
            if let Some(id) = &ev.run_id {
                writeln!(w, "{:<22}\tall\t{id}", c.name)?;
            }
            continue;
        }
        writeln!(w, "{:<22}\tall\t{}", c.name, value_text(c, *v))?;
    }
    Ok(())
}

/// trec_eval's text output as a string.
#[cfg(test)]
pub(crate) fn trec_eval_text(ev: &Evaluation, per_query: bool) -> String {
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_trec_eval(&mut buf, ev, per_query);
    String::from_utf8_lossy(&buf).into_owned()
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn summary_object(ev: &Evaluation) -> Map<String, Value> {
    let mut m = Map::new();
    for (c, v) in ev.columns.iter().zip(&ev.summary) {
        let val = match c.aggregation {
            Aggregation::Text => ev.run_id.clone().map_or(Value::Null, Value::String),
            Aggregation::Sum | Aggregation::Count => json!(*v as i64),
            _ => number(*v),
        };
        m.insert(c.name.clone(), val);
    }
    m
}

fn query_object(ev: &Evaluation, values: &[f64]) -> Map<String, Value> {
    let mut m = Map::new();
    for (c, v) in ev.columns.iter().zip(values) {
        if !c.per_query {
            continue;
        }
        let val = if c.is_integer() {
            json!(*v as i64)
        } else {
            number(*v)
        };
        m.insert(c.name.clone(), val);
    }
    m
}

/// The fingerprint of an evaluation: its inputs' hashes as data, its measures and conventions
/// as config (no prompts are involved), and the tool version.
pub fn fingerprint(ev: &Evaluation, inputs: &[InputHash]) -> mtr_core::fingerprint::Fingerprint {
    use mtr_core::fingerprint::hash_json;
    mtr_core::fingerprint::Fingerprint {
        data: hash_json(
            &inputs
                .iter()
                .map(|i| (&i.role, &i.blake3))
                .collect::<Vec<_>>(),
        ),
        config: hash_json(&(&ev.conventions, ev.column_names())),
        prompts: "none".to_string(),
        tool_version: format!("mtr-metrics {}", env!("CARGO_PKG_VERSION")),
        git_commit: None,
    }
}

/// The full-precision JSON document: conventions, inputs, summary and per-query values.
pub fn to_json(ev: &Evaluation, inputs: &[InputHash]) -> Value {
    let mut per_query = Map::new();
    for q in &ev.queries {
        per_query.insert(q.qid.clone(), Value::Object(query_object(ev, &q.values)));
    }
    let missing: Vec<&str> = ev
        .queries
        .iter()
        .filter(|q| q.missing)
        .map(|q| q.qid.as_str())
        .collect();
    json!({
        "tool": "mtr",
        "mtr_version": env!("CARGO_PKG_VERSION"),
        "conventions": ev.conventions,
        "inputs": inputs,
        "fingerprint": fingerprint(ev, inputs),
        "run_id": ev.run_id,
        "num_q": ev.num_q,
        "measures": ev.column_names(),
        "summary": summary_object(ev),
        "per_query": per_query,
        "missing_queries": missing,
        "ignored_run_queries": ev.ignored_run_queries,
    })
}

/// JSONL: a `header` line (conventions, inputs), one `query` line per query, a `summary` line.
pub fn write_jsonl(w: &mut dyn Write, ev: &Evaluation, inputs: &[InputHash]) -> io::Result<()> {
    let header = json!({
        "type": "header",
        "tool": "mtr",
        "mtr_version": env!("CARGO_PKG_VERSION"),
        "conventions": ev.conventions,
        "inputs": inputs,
        "fingerprint": fingerprint(ev, inputs),
        "run_id": ev.run_id,
        "measures": ev.column_names(),
    });
    writeln!(w, "{header}")?;
    for q in &ev.queries {
        let mut m = Map::new();
        m.insert("type".into(), json!("query"));
        m.insert("qid".into(), json!(q.qid));
        m.insert("missing".into(), json!(q.missing));
        m.extend(query_object(ev, &q.values));
        writeln!(w, "{}", Value::Object(m))?;
    }
    let mut m = Map::new();
    m.insert("type".into(), json!("summary"));
    m.insert("qid".into(), json!("all"));
    m.insert("num_q".into(), json!(ev.num_q));
    m.extend(summary_object(ev));
    writeln!(w, "{}", Value::Object(m))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EvalOptions, MeasureSet, evaluate};

    fn ev() -> Evaluation {
        let mut q = mtr_core::Qrels::new();
        q.entry("q1".into()).or_default().insert("a".into(), 1);
        let mut r = mtr_core::Run::new();
        r.insert(
            "q1".into(),
            vec![("x".into(), 2.0), ("y".into(), 1.5), ("a".into(), 1.0)],
        );
        evaluate(
            &q,
            &r,
            &EvalOptions::with_measures(
                MeasureSet::parse(["num_q", "num_ret", "map", "P.5"]).unwrap(),
            ),
        )
        .unwrap()
    }

    #[test]
    fn text_is_trec_eval_format() {
        let t = trec_eval_text(&ev(), true);
        assert_eq!(
            t,
            "num_ret               \tq1\t3\nmap                   \tq1\t0.3333\nP_5                   \tq1\t0.2000\n\
             num_q                 \tall\t1\nnum_ret               \tall\t3\nmap                   \tall\t0.3333\nP_5                   \tall\t0.2000\n"
        );
    }

    #[test]
    fn rounding_is_half_even_on_exact_ties_like_printf() {
        assert_eq!(format!("{:6.4}", 0.03125), "0.0312");
        assert_eq!(format!("{:6.4}", 0.03135), "0.0314");
        assert_eq!(format!("{:6.4}", -412.666666), "-412.6667");
    }

    #[test]
    fn json_has_full_precision_and_conventions() {
        let v = to_json(&ev(), &[]);
        assert_eq!(v["summary"]["map"], json!(1.0 / 3.0));
        assert_eq!(v["summary"]["num_ret"], json!(3));
        assert_eq!(v["conventions"]["relevance_level"], json!(1));
        assert_eq!(v["per_query"]["q1"]["P_5"], json!(0.2));
        assert_eq!(v["fingerprint"]["config"].as_str().unwrap().len(), 64);
        assert_eq!(
            v["fingerprint"],
            serde_json::to_value(fingerprint(&ev(), &[])).unwrap()
        );
        let mut buf = Vec::new();
        write_jsonl(&mut buf, &ev(), &[]).unwrap();
        let lines: Vec<Value> = String::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["qid"], json!("q1"));
        assert_eq!(lines[2]["type"], json!("summary"));
    }
}
