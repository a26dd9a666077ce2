//! Leaderboards: merge bench results (`bench.json` files) into one board per benchmark
//! version (and split part), keeping the latest result of each system as its row and every
//! dated result as its trend, then render Markdown and CSV tables, `leaderboard.json` and one
//! self-contained HTML page ([`html`]). A result made with `mtr bench --fill-holes K` adds
//! Judged@K and each measure with the holes filled beside the measure.
//!
//! Results of the same benchmark name with different data fingerprints are different
//! benchmarks (their numbers are not comparable) and get separate boards, with a warning.

pub mod html;
pub mod robust;
pub mod tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mtr_core::InputError;
use mtr_core::atomic::write_atomic;
use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::result::{BenchResult, MeasureInfo, PositionPoint, SCHEMA, StratumFamily, SystemResult};
use crate::stats::bootstrap::Estimate;

pub(crate) const LEADERBOARD_SCHEMA: &str = "mtr.leaderboard/1";

/// The leaderboard (`leaderboard.json`): one board per benchmark version and split part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    /// Its schema id, `mtr.leaderboard/1`.
    pub schema: String,
    /// The result files it was merged from, in the order given.
    pub sources: Vec<Source>,
    /// One board per benchmark, data fingerprint and split part.
    pub boards: Vec<Board>,
    /// Warnings about the merge (a benchmark with several fingerprints or parts).
    pub warnings: Vec<String>,
}

/// A result file that went into the leaderboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The file's path.
    pub file: String,
    /// BLAKE3 of the file.
    pub hash: String,
    /// The result's date, `YYYY-MM-DD`.
    pub date: String,
    /// The benchmark's name.
    pub benchmark: String,
}

/// One benchmark version (and split part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    /// Stable id used by the HTML page.
    pub id: String,
    /// The benchmark's name.
    pub benchmark: String,
    /// The benchmark's version.
    pub version: String,
    /// The benchmark's data fingerprint.
    pub fingerprint: String,
    /// The split part scored (`dev`, `test`), if split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// Scored turns (of the latest result).
    pub scored_queries: usize,
    /// Dialogues with a scored turn (of the latest result).
    pub scored_dialogues: usize,
    /// The measure rows are ranked by.
    pub main_measure: String,
    /// The measures shown, in display order.
    pub measures: Vec<MeasureInfo>,
    /// Strata families and group sizes (from the latest result).
    pub strata: Vec<StratumFamily>,
    /// Rows, best first by the main measure.
    pub rows: Vec<Row>,
    /// Systems with results on two or more dates.
    pub trends: Vec<Trend>,
    /// Every pair of the latest result's systems on the main measure (Holm over all its
    /// pairs; wins/ties/losses per turn), from that result file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<crate::result::Pairwise>,
    /// Strata with fewer turns than this are greyed out, not plotted (the latest result's).
    #[serde(default = "default_min_stratum")]
    pub min_stratum_turns: usize,
    /// Warnings about this board (measures, baselines, run depths).
    pub warnings: Vec<String>,
    /// Tau figures and the original -> corrected ranks, when the latest result carrying an
    /// audit (`mtr bench --audit`) has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<robust::BoardLabels>,
    /// The holes of the latest result made with `mtr bench --fill-holes K`: the tables show
    /// Judged@K and each measure with the holes filled beside it (rows of results filled at
    /// another depth, or not at all, show "–").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<crate::holes::HolesInfo>,
}

fn default_min_stratum() -> usize {
    crate::strata::MIN_GROUP
}

/// One system on a board, from the latest result (by date) that has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// 1-based rank by the main measure.
    pub rank: usize,
    /// The system's name.
    pub system: String,
    /// The system's kind (`retriever`, `external`).
    pub kind: String,
    /// Retriever spec, for retriever systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<String>,
    /// Query formulation, for retriever systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formulation: Option<String>,
    /// The result's date, `YYYY-MM-DD`.
    pub date: String,
    /// The result file this row comes from.
    pub file: String,
    /// Rank depth of the run (documents per turn; 0: unknown).
    #[serde(default)]
    pub depth: usize,
    /// Measures comparable with the other rows. A measure deeper than the run is absent here
    /// and listed in `beyond_depth` (shown as "n/a (depth N)"); the main measure stays (the
    /// ranking needs it) and is listed there too when the run is shallower than its cutoff.
    pub measures: BTreeMap<String, Estimate>,
    /// Measures deeper than the run (see `measures`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beyond_depth: Vec<String>,
    /// Ranked documents not in the corpus (scored as non-relevant).
    #[serde(default)]
    pub out_of_corpus: usize,
    /// The comparison with its result's baseline, when the result tested one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versus: Option<Versus>,
    /// Main measure by turn position.
    pub by_position: Vec<PositionPoint>,
    /// family -> group -> main measure.
    pub strata: BTreeMap<String, BTreeMap<String, Estimate>>,
    /// Metric-combination findings.
    pub findings: Vec<String>,
    /// Hash of the system's configuration (or of its run file).
    pub config_hash: String,
    /// The mtr version that made the result.
    pub mtr_version: String,
    /// The git commit that mtr was built from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The row's ranks under the original and every audited variant (its result's audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_robust: Option<robust::RowRobustness>,
    /// Judged@K and the measures with the holes filled (`mtr bench --fill-holes K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<crate::holes::SystemHoles>,
}

/// The row's comparison with the baseline of its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versus {
    /// The baseline system.
    pub baseline: String,
    /// The row's main measure minus the baseline's.
    pub diff: f64,
    /// The randomization test's p-value, Holm-corrected.
    pub p_holm: f64,
    /// Whether the difference is significant (Holm).
    pub significant: bool,
}

/// A system's main measure over the results' dates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// The system's name.
    pub system: String,
    /// One point per result that has it, by date.
    pub points: Vec<TrendPoint>,
}

/// The main measure of one system in one result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    /// The result's date, `YYYY-MM-DD`.
    pub date: String,
    /// The result file.
    pub file: String,
    /// The main measure, with its interval.
    pub estimate: Estimate,
}

/// Reads bench results; a file that is not one is a user error naming it.
pub fn load(paths: &[PathBuf]) -> Result<Vec<(PathBuf, BenchResult)>> {
    if paths.is_empty() {
        return Err(BenchError::option(
            "RESULTS",
            "no result file given (pass results/*/bench.json)",
        ));
    }
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        let text = mtr_core::jsonl::read_text(p)?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            BenchError::input(
                InputError::new(p, format!("not JSON: {e}"))
                    .line(e.line() as u64)
                    .hint("pass the bench.json files `mtr bench` wrote"),
            )
        })?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != SCHEMA {
            return Err(BenchError::input(
                InputError::new(
                    p,
                    format!("not a bench result (schema `{schema}`, expected `{SCHEMA}`)"),
                )
                .field("schema")
                .hint("pass the bench.json files `mtr bench` wrote"),
            ));
        }
        let r: BenchResult = serde_json::from_value(value).map_err(|e| {
            BenchError::input(
                InputError::new(p, format!("malformed bench result: {e}"))
                    .hint("was it written by another mtr version?"),
            )
        })?;
        out.push((p.clone(), r));
    }
    Ok(out)
}

/// Merges results into boards.
pub fn merge(results: &[(PathBuf, BenchResult)]) -> Result<Leaderboard> {
    let mut sources = Vec::new();
    // (benchmark, fingerprint, part) -> indices of results, in argument order.
    let mut groups: BTreeMap<(String, String, Option<String>), Vec<usize>> = BTreeMap::new();
    for (i, (path, r)) in results.iter().enumerate() {
        sources.push(Source {
            file: path.display().to_string(),
            hash: mtr_core::fingerprint::hash_file(path)?,
            date: r.date.clone(),
            benchmark: r.benchmark.name.clone(),
        });
        groups
            .entry((
                r.benchmark.name.clone(),
                r.benchmark.fingerprint.clone(),
                r.split.as_ref().map(|s| s.part.as_str().to_string()),
            ))
            .or_default()
            .push(i);
    }
    let mut warnings = Vec::new();
    let mut versions: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, _, _) in groups.keys() {
        *versions.entry(name.as_str()).or_default() += 1;
    }
    for (name, n) in &versions {
        if *n > 1 {
            warnings.push(format!(
                "benchmark `{name}` appears with {n} different data fingerprints or split parts: they get separate boards (their numbers are not comparable)"
            ));
        }
    }
    let mut boards = Vec::new();
    for ((name, fingerprint, part), idx) in &groups {
        boards.push(board(results, name, fingerprint, part.clone(), idx));
    }
    Ok(Leaderboard {
        schema: LEADERBOARD_SCHEMA.into(),
        sources,
        boards,
        warnings,
    })
}

fn board(
    results: &[(PathBuf, BenchResult)],
    name: &str,
    fingerprint: &str,
    part: Option<String>,
    idx: &[usize],
) -> Board {
    // Latest result last: by date, then argument order.
    let mut order: Vec<usize> = idx.to_vec();
    order.sort_by(|a, b| results[*a].1.date.cmp(&results[*b].1.date).then(a.cmp(b)));
    let (latest_path, latest) = &results[*order.last().unwrap_or(&idx[0])];
    let main = latest.main_measure.clone();
    let mut warnings = Vec::new();
    let measures = merged_measures(results, &order, &main, &mut warnings);
    let (rows, history) = rows_and_history(results, &order, &main);
    warnings.extend(baseline_warning(results, &order));
    let trends = trends(history);
    warnings.extend(depth_warnings(&rows, &measures, &main));
    let latest_file = latest_path.display().to_string();
    let pairwise = latest
        .pairwise
        .as_ref()
        .map(|pw| latest_pairs(pw, &rows, &latest_file));
    Board {
        id: board_id(name, fingerprint, part.as_deref()),
        benchmark: name.to_string(),
        version: latest.benchmark.version.clone(),
        fingerprint: fingerprint.to_string(),
        part,
        scored_queries: latest.benchmark.scored_queries,
        scored_dialogues: latest.benchmark.scored_dialogues,
        main_measure: main,
        measures,
        strata: latest.strata.clone(),
        rows,
        trends,
        pairwise,
        min_stratum_turns: latest.min_stratum_turns,
        warnings,
        labels: order
            .iter()
            .rev()
            .find_map(|&i| robust::board(&results[i].1, &results[i].0.display().to_string())),
        holes: order.iter().rev().find_map(|&i| results[i].1.holes.clone()),
    }
}

/// The latest result's measures, then those only older results report; a warning for each
/// result that ranks by another main measure.
fn merged_measures(
    results: &[(PathBuf, BenchResult)],
    order: &[usize],
    main: &str,
    warnings: &mut Vec<String>,
) -> Vec<MeasureInfo> {
    let latest = order.last().map(|&i| &results[i].1);
    let mut measures: Vec<MeasureInfo> = latest.map(|r| r.measures.clone()).unwrap_or_default();
    for &i in order {
        let r = &results[i].1;
        if r.main_measure != main {
            warnings.push(format!(
                "{} ranks by {} but this board ranks by {main}",
                results[i].0.display(),
                r.main_measure
            ));
        }
        for m in &r.measures {
            if !measures.iter().any(|x| x.id == m.id) {
                measures.push(m.clone());
            }
        }
    }
    measures
}

/// Each system's latest result as its row, ranked by the main measure, and every result of
/// it as its history.
fn rows_and_history(
    results: &[(PathBuf, BenchResult)],
    order: &[usize],
    main: &str,
) -> (Vec<Row>, BTreeMap<String, Vec<TrendPoint>>) {
    let mut rows_by_system: BTreeMap<String, Row> = BTreeMap::new();
    let mut history: BTreeMap<String, Vec<TrendPoint>> = BTreeMap::new();
    for &i in order {
        let (path, r) = &results[i];
        for s in &r.systems {
            if let Some(e) = s.measures.get(main) {
                history.entry(s.name.clone()).or_default().push(TrendPoint {
                    date: r.date.clone(),
                    file: path.display().to_string(),
                    estimate: *e,
                });
            }
            rows_by_system.insert(s.name.clone(), row(path, r, s, main));
        }
    }
    let mut rows: Vec<Row> = rows_by_system.into_values().collect();
    let key = |r: &Row| r.measures.get(main).map_or(f64::NEG_INFINITY, |e| e.mean);
    rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.system.cmp(&b.system)));
    for (i, r) in rows.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    (rows, history)
}

/// The row of system `s` of the result `r` (read from `path`), unranked.
fn row(path: &Path, r: &BenchResult, s: &SystemResult, main: &str) -> Row {
    let versus = r.tests.as_ref().and_then(|t| {
        t.comparisons
            .iter()
            .find(|c| c.system == s.name)
            .map(|c| Versus {
                baseline: t.baseline.clone(),
                diff: c.diff,
                p_holm: c.p_holm,
                significant: c.significant,
            })
    });
    let strata = s
        .strata
        .iter()
        .map(|(f, groups)| {
            (
                f.clone(),
                groups
                    .iter()
                    .filter_map(|(g, m)| m.get(main).map(|e| (g.clone(), *e)))
                    .collect(),
            )
        })
        .collect();
    Row {
        rank: 0,
        system: s.name.clone(),
        kind: match s.kind {
            crate::result::SystemKind::Retriever => "retriever".into(),
            crate::result::SystemKind::External => "external".into(),
        },
        retriever: s.retriever.clone(),
        formulation: s.formulation.clone(),
        date: r.date.clone(),
        file: path.display().to_string(),
        depth: s.depth,
        measures: s.measures.clone(),
        beyond_depth: s.beyond_depth.keys().cloned().collect(),
        out_of_corpus: s.out_of_corpus,
        versus,
        by_position: s.by_position.clone(),
        strata,
        findings: s
            .diagnosis
            .findings
            .iter()
            .map(|f| f.message.clone())
            .collect(),
        config_hash: s.config_hash.clone(),
        mtr_version: r.mtr_version.clone(),
        git_commit: r.fingerprint.git_commit.clone(),
        label_robust: robust::row(r, &s.name),
        holes: s.holes.clone(),
    }
}

/// A warning when the merged results test against different baselines.
fn baseline_warning(results: &[(PathBuf, BenchResult)], order: &[usize]) -> Option<String> {
    let baselines: std::collections::BTreeSet<&str> = order
        .iter()
        .filter_map(|&i| results[i].1.tests.as_ref().map(|t| t.baseline.as_str()))
        .collect();
    (baselines.len() > 1).then(|| {
        format!(
            "the merged results test against different baselines ({}); each row's significance is against its own result's baseline",
            baselines.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

/// Systems with results on two or more dates, their points by date.
fn trends(history: BTreeMap<String, Vec<TrendPoint>>) -> Vec<Trend> {
    history
        .into_iter()
        .filter_map(|(system, mut points)| {
            points.sort_by(|a, b| a.date.cmp(&b.date).then(a.file.cmp(&b.file)));
            let dates: std::collections::BTreeSet<&str> =
                points.iter().map(|p| p.date.as_str()).collect();
            (dates.len() >= 2).then_some(Trend { system, points })
        })
        .collect()
}

/// One line per run depth whose runs miss measures deeper than them, and one per row whose
/// main measure is deeper than its run.
fn depth_warnings(rows: &[Row], measures: &[MeasureInfo], main: &str) -> Vec<String> {
    // (depth, the measures deeper than it) -> the systems, for one line per depth
    let mut shallow: BTreeMap<(usize, Vec<String>), Vec<&str>> = BTreeMap::new();
    for r in rows {
        let labels: Vec<String> = r
            .beyond_depth
            .iter()
            .filter(|m| **m != main)
            .map(|m| {
                measures
                    .iter()
                    .find(|x| &x.id == m)
                    .map_or(m.clone(), |x| x.label.clone())
            })
            .collect();
        if !labels.is_empty() {
            shallow
                .entry((r.depth, labels))
                .or_default()
                .push(r.system.as_str());
        }
    }
    let mixed = rows
        .iter()
        .map(|r| r.depth)
        .filter(|d| *d > 0)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let mut warnings = Vec::new();
    for ((depth, labels), systems) in &shallow {
        warnings.push(format!(
            "{}: {} of depth {depth} ({}): {} are n/a for them, not ranked against deeper runs",
            if mixed {
                "runs of different depths"
            } else {
                "measures deeper than the runs"
            },
            if systems.len() == 1 {
                "1 run".to_string()
            } else {
                format!("{} runs", systems.len())
            },
            systems.join(", "),
            labels.join(", ")
        ));
    }
    for r in rows
        .iter()
        .filter(|r| r.beyond_depth.iter().any(|m| m == main))
    {
        warnings.push(format!(
            "{}: the main measure is deeper than the run (depth {}): its value is a lower bound",
            r.system, r.depth
        ));
    }
    warnings
}

/// The latest result's pairs whose two systems both have their row from that result.
fn latest_pairs(
    pw: &crate::result::Pairwise,
    rows: &[Row],
    latest_file: &str,
) -> crate::result::Pairwise {
    crate::result::Pairwise {
        measure: pw.measure.clone(),
        alpha: pw.alpha,
        pairs: pw
            .pairs
            .iter()
            .filter(|p| {
                [&p.a, &p.b].iter().all(|s| {
                    rows.iter()
                        .any(|r| &&r.system == s && r.file == latest_file)
                })
            })
            .cloned()
            .collect(),
    }
}

/// The board's stable id for the HTML page.
fn board_id(name: &str, fingerprint: &str, part: Option<&str>) -> String {
    format!(
        "{}-{}{}",
        crate::output::file_safe(name),
        mtr_core::fingerprint::short(fingerprint)
            .get(..8)
            .unwrap_or(""),
        part.map_or(String::new(), |p| format!("-{p}"))
    )
}

pub(crate) const MARKDOWN_FILE: &str = "leaderboard.md";
pub(crate) const CSV_FILE: &str = "leaderboard.csv";
pub(crate) const JSON_FILE: &str = "leaderboard.json";
pub(crate) const HTML_FILE: &str = "index.html";

/// Writes the site: Markdown, CSV, JSON and the HTML page. Everything is rendered in memory
/// first, then each file is written atomically.
pub fn write_site(dir: &Path, lb: &Leaderboard) -> Result<Vec<PathBuf>> {
    let json = serde_json::to_string_pretty(lb).map_err(BenchError::json("leaderboard.json"))?;
    let files = [
        (MARKDOWN_FILE, tables::markdown(lb)),
        (CSV_FILE, tables::csv(lb)),
        (JSON_FILE, json + "\n"),
        (HTML_FILE, html::page(lb)?),
    ];
    std::fs::create_dir_all(dir).map_err(|e| mtr_core::Error::io(dir, e))?;
    let mut written = Vec::new();
    for (name, content) in files {
        let p = dir.join(name);
        write_atomic(&p, content.as_bytes())?;
        written.push(p);
    }
    Ok(written)
}
