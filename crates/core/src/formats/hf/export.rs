//! `mtr export --to hf`: a native benchmark as a folder `huggingface-cli upload` takes as it
//! is: the four configs of [`super::layout`] as Parquet and a dataset card ([`super::card`]).
//! The corpus is streamed a row group at a time; every file is written atomically.

use std::path::Path;

use serde_json::Value as Json;

use super::card::{self, CardFacts, CardSection};
use super::layout::{self, Config};
use super::parquet::{Cell, TableWriter};
use crate::benchmark::BenchmarkDir;
use crate::error::{Error, Result};
use crate::formats::beir_trec_export::{ExportReport, QueryField, queries, staged};
use crate::model::{Dialogue, Qrels, Speaker};

/// What the dataset folder holds beyond the benchmark itself.
#[derive(Debug, Clone, Default)]
pub struct HfOptions {
    /// The text the `queries` config's `text` column holds.
    pub query: QueryField,
    /// Sections the card adds after how the benchmark was made (the audit's verdict, realism
    /// figures), in order; the caller renders them, this crate knows neither.
    pub sections: Vec<CardSection>,
}

/// Writes the dataset folder `out` of the benchmark `dir`: every file or, when the export
/// fails, none (they are staged beside `out` and moved in at the end).
pub fn export_hf(dir: &BenchmarkDir, out: &Path, opts: &HfOptions) -> Result<ExportReport> {
    let mut files: Vec<String> = layout::CONFIGS.iter().map(|c| c.file()).collect();
    files.extend([layout::MANIFEST.to_string(), layout::CARD.to_string()]);
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    staged(out, &names, |stage| write_folder(dir, stage, opts))
}

fn write_folder(dir: &BenchmarkDir, out: &Path, opts: &HfOptions) -> Result<ExportReport> {
    let manifest = dir.manifest()?;
    let dialogues = dir.dialogues()?;
    let qrels = dir.qrels()?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let report = ExportReport {
        passages: write_corpus(dir, out)?,
        queries: write_queries(&dialogues, out, opts.query)?,
        qrels_pairs: write_qrels(&qrels, out)?,
        ..Default::default()
    };
    write_dialogues(&dialogues, out)?;
    let text =
        toml::to_string_pretty(&manifest).map_err(|e| Error::Internal(format!("manifest: {e}")))?;
    crate::atomic::write_atomic(out.join(layout::MANIFEST), text.as_bytes())?;
    let facts = CardFacts {
        manifest: &manifest,
        dialogues: dialogues.len(),
        turns: report.queries,
        judged_turns: qrels.len(),
        passages: report.passages,
        qrels_pairs: report.qrels_pairs,
        query: opts.query,
    };
    let card = card::render(&facts, &opts.sections);
    crate::atomic::write_atomic(out.join(layout::CARD), card.as_bytes())?;
    Ok(report)
}

fn table(out: &Path, config: &Config) -> Result<TableWriter> {
    TableWriter::create(&out.join(config.file()), config.columns)
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

fn opt_text(s: Option<&str>) -> Cell {
    s.map_or(Cell::Null, text)
}

fn json(value: &impl serde::Serialize) -> Result<Cell> {
    serde_json::to_string(value)
        .map(Cell::Text)
        .map_err(|e| Error::Internal(format!("JSON of a dataset cell: {e}")))
}

fn turn_number(i: usize) -> Result<Cell> {
    i32::try_from(i + 1)
        .map(Cell::Int)
        .map_err(|_| Error::Internal(format!("turn {i} does not fit a 32-bit integer")))
}

fn write_corpus(dir: &BenchmarkDir, out: &Path) -> Result<u64> {
    let mut w = table(out, &layout::CORPUS)?;
    dir.for_each_passage(|_, p| {
        let metadata = if p.meta.is_empty() {
            Cell::Null
        } else {
            json(&p.meta)?
        };
        w.push(vec![
            text(&p.id),
            text(&p.title),
            text(&p.text),
            opt_text(p.doc_id.as_deref()),
            metadata,
        ])
    })?;
    w.finish()
}

fn write_queries(dialogues: &[Dialogue], out: &Path, field: QueryField) -> Result<usize> {
    let mut w = table(out, &layout::QUERIES)?;
    let texts = queries(dialogues, field, "\n");
    let mut texts = texts.into_iter();
    let mut n = 0;
    for d in dialogues {
        for (i, t) in d.turns.iter().enumerate() {
            let (_, query) = texts
                .next()
                .ok_or_else(|| Error::Internal("fewer query texts than turns".into()))?;
            let history = d.history(i);
            let speakers = history
                .iter()
                .map(|u| match u.speaker {
                    Speaker::User => "user".to_string(),
                    Speaker::Agent => "agent".to_string(),
                })
                .collect();
            w.push(vec![
                text(&t.id),
                Cell::Text(query),
                text(&d.id),
                turn_number(i)?,
                text(&t.user),
                opt_text(t.rewrite.as_deref()),
                Cell::List(history.iter().map(|u| u.text.to_string()).collect()),
                Cell::List(speakers),
            ])?;
            n += 1;
        }
    }
    w.finish()?;
    Ok(n)
}

fn write_qrels(qrels: &Qrels, out: &Path) -> Result<usize> {
    let mut w = table(out, &layout::QRELS)?;
    for (q, docs) in qrels {
        for (d, grade) in docs {
            w.push(vec![text(q), text(d), Cell::Int(*grade)])?;
        }
    }
    Ok(w.finish()? as usize)
}

fn write_dialogues(dialogues: &[Dialogue], out: &Path) -> Result<()> {
    let mut w = table(out, &layout::DIALOGUES)?;
    for d in dialogues {
        let meta = json(&Json::Object(d.meta.clone()))?;
        for (i, t) in d.turns.iter().enumerate() {
            w.push(vec![
                text(&d.id),
                turn_number(i)?,
                text(&t.id),
                text(&t.user),
                opt_text(t.rewrite.as_deref()),
                opt_text(t.answer.as_deref()),
                json(&t.gold)?,
                json(&t.tags)?,
                meta.clone(),
            ])?;
        }
    }
    w.finish()?;
    Ok(())
}
