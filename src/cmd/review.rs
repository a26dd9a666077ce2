//! `mtr review AUDIT_DIR`: human review of an audit in the browser (or of a judge folder's
//! holes, through the audit of its holes, `DIR/audit/`). Serves a local page on
//! 127.0.0.1 (a random token in its URL, as Jupyter does) with two queues: the seeded random
//! sample (for estimates, answered blind) and the flagged items (for corrections, with the
//! judges' reasons). Labels go to `AUDIT_DIR/review/labels.jsonl` (see
//! `mtr_audit::review_queue::label_log`). `--print-sample`, `--import FILE.tsv` and `--export FILE.tsv`
//! carry the sample and labels in and out without a browser. The review logic lives in
//! `mtr_audit::review`; here are the flags ([`Args`]), the loading ([`session`]), the HTTP
//! server ([`server`], [`api`]) and the page ([`assets`]).

pub mod api;
pub mod assets;
pub mod server;
pub mod session;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use mtr_audit::review_queue::{label_log, tsv};

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The audit's output folder (`mtr audit -o DIR`), or a judge folder (`mtr judge -o DIR`):
    /// then its holes are reviewed (a random sample blind, and the holes judged relevant that
    /// move the runs most), and its summary and report get a Reviewed section.
    pub audit: PathBuf,
    /// The benchmark the audit was made on [default: the path its summary.json records,
    /// relative to the current folder or to the audit folder's parent]. Needed to show cards.
    #[arg(long, value_name = "PATH")]
    pub bench: Option<PathBuf>,
    /// Random-sample units per dimension (used when the sample is first drawn; a drawn sample
    /// never changes).
    #[arg(long, default_value_t = mtr_audit::review_queue::random_sample::DEFAULT_PER_DIMENSION, value_name = "N")]
    pub sample: usize,
    /// Seed of the random sample [default: the audit's seed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Who labels [default: the login name].
    #[arg(long)]
    pub reviewer: Option<String>,
    /// Port on 127.0.0.1 [default: a free one].
    #[arg(long)]
    pub port: Option<u16>,
    /// Do not open a browser; only print the URL.
    #[arg(long)]
    pub no_browser: bool,
    /// Print the random sample's units as TSV (item, dimension, turn_id, passage_id) and exit.
    #[arg(long, conflicts_with_all = ["import", "export"])]
    pub print_sample: bool,
    /// Import labels from a TSV file (`item<TAB>label[<TAB>reviewer]`) and exit; nothing is
    /// written if any line is bad.
    #[arg(long, value_name = "FILE.tsv", conflicts_with = "export")]
    pub import: Option<PathBuf>,
    /// Export the effective labels as TSV (`item<TAB>label<TAB>reviewer`; `-` for stdout) and
    /// exit.
    #[arg(long, value_name = "FILE.tsv")]
    pub export: Option<PathBuf>,
}

/// The login name, for `--reviewer`'s default.
fn login_name() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "reviewer".to_string())
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let reviewer = args.reviewer.clone().unwrap_or_else(login_name);
    let queues = session::Queues::load(&args.audit, args.sample, args.seed)?;
    if args.print_sample {
        super::open::emit(&tsv::print_sample(&queues.sample))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = &args.import {
        let reviewable = tsv::Reviewable::new(&queues.sample, &queues.flagged);
        let lines = tsv::import(file, &reviewable, &reviewer, &queues.fingerprint)
            .map_err(anyhow::Error::new)?;
        let path = label_log::labels_path(&queues.audit_dir);
        label_log::append(&path, &lines).map_err(anyhow::Error::new)?;
        super::open::emit(&format!(
            "imported {} labels into {}\n",
            lines.len(),
            path.display()
        ))?;
        if let Some(d) = &queues.holes_dir {
            // the judge folder's summary and report get their Reviewed section
            mtr_audit::holes::attach_review(d).map_err(anyhow::Error::new)?;
            super::open::emit(&format!(
                "wrote the Reviewed section into {}\n",
                d.join("report.md").display()
            ))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(file) = &args.export {
        let text = tsv::export(&queues.labels()?);
        if file.as_os_str() == "-" {
            super::open::emit(&text)?;
        } else {
            mtr_core::atomic::write_atomic(file, text.as_bytes())
                .with_context(|| format!("writing {}", file.display()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let texts = session::load_texts(ctx, &queues.audit_dir, args.bench.as_deref(), &queues)?;
    let holes_dir = queues.holes_dir.clone();
    let state = session::Session::new(queues.audit_dir.clone(), reviewer, queues, texts)?;
    let code = server::serve(state, args.port, !args.no_browser).await?;
    if let Some(d) = holes_dir {
        // the labels given in the browser go into the judge folder's Reviewed section
        mtr_audit::holes::attach_review(&d).map_err(anyhow::Error::new)?;
    }
    Ok(code)
}
