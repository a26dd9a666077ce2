//! `mtr qrels apply BENCH AUDIT_DIR --variant corrected -o qrels.tsv`: write the qrels an
//! audit supports (`noise-removed`, `sparsity-filled` or `corrected`, see
//! `mtr_bench::sensitivity`) as a plain TREC qrels file, so trec_eval, ranx or any other tool
//! can score against them. The benchmark is never changed: the output may not lie inside the
//! benchmark folder. Also home of the glue that turns an audit folder into the bench's plain
//! label edits (shared with `mtr bench --audit`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mtr_bench::sensitivity::{LabelEdits, ReviewedEdits, Variant, apply};

use super::Ctx;
use super::common::ImportFlags;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: QrelsCommand,
}

/// What `mtr qrels -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "FILE";
    const HELP: &'static str =
        "The qrels file to write (TREC 4 columns); not inside the benchmark folder";
    const REQUIRED: bool = true;
}

#[derive(Debug, clap::Subcommand)]
pub enum QrelsCommand {
    /// Write the qrels an audit supports as a TREC qrels file (never in place).
    Apply(ApplyArgs),
}

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The benchmark the audit was made on: a native folder or any folder `mtr import` reads.
    pub bench: PathBuf,
    /// The audit's output folder (`mtr audit -o DIR`).
    pub audit: PathBuf,
    /// noise-removed (golds the judges rejected dropped), sparsity-filled (verified missing
    /// golds added), corrected (both) or reviewed (only the golds reviewers rejected dropped and
    /// the suggestions they accepted added, from `AUDIT/review/labels.jsonl`).
    #[arg(long, default_value = "corrected", value_parser = parse_variant)]
    pub variant: Variant,
    #[command(flatten)]
    pub output: super::common::Output<Written>,
    #[command(flatten)]
    pub import: ImportFlags,
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse()
}

fn user_error(path: &Path, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(mtr_core::Error::from(mtr_core::InputError::new(
        path, message,
    )))
}

fn audit_error(e: mtr_audit::AuditError) -> anyhow::Error {
    match e {
        mtr_audit::AuditError::Core(c) => anyhow::Error::new(c),
        e => anyhow::Error::new(e),
    }
}

/// The reviewers' decisions on the audit's flagged items (`review/labels.jsonl`), if any.
fn reviewed_edits(audit_dir: &Path) -> anyhow::Result<Option<ReviewedEdits>> {
    let Some(r) = mtr_audit::review_estimates::corrections::read(audit_dir).map_err(audit_error)? else {
        return Ok(None);
    };
    let mut edits = ReviewedEdits::default();
    for x in r.removed {
        edits
            .removed
            .entry(x.turn_id)
            .or_default()
            .insert(x.passage_id);
    }
    for x in r.added {
        edits
            .added
            .entry(x.turn_id)
            .or_default()
            .insert(x.passage_id, x.grade);
    }
    Ok(Some(edits))
}

/// Reads an audit folder's label findings (and the reviewers' decisions, when there are any)
/// and checks they were made on the benchmark with data fingerprint `fingerprint` (a mismatch
/// is a user error naming both).
pub fn load_edits(audit_dir: &Path, fingerprint: &str) -> anyhow::Result<LabelEdits> {
    let l = mtr_audit::label_edits::read(audit_dir).map_err(anyhow::Error::new)?;
    mtr_audit::label_edits::check_fingerprint(&l, audit_dir, fingerprint).map_err(anyhow::Error::new)?;
    let reviewed = reviewed_edits(audit_dir)?;
    let mut notes = l.notes;
    if let Some(r) = &reviewed {
        let removed: usize = r.removed.values().map(|p| p.len()).sum();
        let added: usize = r.added.values().map(|p| p.len()).sum();
        notes.push(format!(
            "reviewed: reviewers rejected {removed} golds and accepted {added} suggested golds; the `reviewed` variant applies only those"
        ));
    }
    let mut edits = LabelEdits {
        fingerprint: l.fingerprint,
        flag_rating_below: l.flag_rating_below,
        sampled: l.sampled,
        dialogues_audited: l.dialogues_audited,
        dialogues_total: l.dialogues_total,
        audited_turns: l.audited_turns,
        complete: l.complete,
        notes,
        reviewed,
        ..LabelEdits::default()
    };
    for r in l.removed {
        edits
            .removed
            .entry(r.turn_id)
            .or_default()
            .insert(r.passage_id);
    }
    for a in l.added {
        edits
            .added
            .entry(a.turn_id)
            .or_default()
            .insert(a.passage_id, a.grade);
    }
    Ok(edits)
}

/// `path` resolved as far as it exists (the file itself may not exist yet).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match (parent.canonicalize(), path.file_name()) {
        (Ok(p), Some(name)) => p.join(name),
        _ => path.to_path_buf(),
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        QrelsCommand::Apply(a) => apply_cmd(ctx, a).await,
    }
}

async fn apply_cmd(ctx: &Ctx, args: ApplyArgs) -> anyhow::Result<ExitCode> {
    let dir = super::open::open_benchmark(ctx, &args.bench, &args.import.options())?;
    let root = resolved(dir.root());
    let out = resolved(args.output.path());
    if out.starts_with(&root) || out.starts_with(resolved(&args.bench)) {
        return Err(user_error(
            args.output.path(),
            "the output lies inside the benchmark folder: `mtr qrels apply` never changes a benchmark in place; write the qrels elsewhere",
        ));
    }
    let fingerprint = dir.compute_fingerprint().map_err(anyhow::Error::new)?;
    let edits = load_edits(&args.audit, &fingerprint)?;
    if args.variant == Variant::Reviewed && edits.reviewed.is_none() {
        return Err(user_error(
            &mtr_audit::review_estimates::labels_path(&args.audit),
            "no reviewers' labels: the reviewed variant applies only what reviewers decided",
        ));
    }
    let qrels = dir.qrels().map_err(anyhow::Error::new)?;
    let (variant, applied, _) = apply(&qrels, &edits, args.variant);
    mtr_core::trec::write_qrels(args.output.path(), &variant).map_err(anyhow::Error::new)?;
    let mut text = format!(
        "{}: {} gold passages removed, {} added, {} turns changed ({} left without a relevant passage); wrote {} ({} queries)\n",
        args.variant,
        applied.golds_removed,
        applied.golds_added,
        applied.turns_changed,
        applied.turns_left_without_gold,
        args.output.path().display(),
        variant.len()
    );
    if edits.sampled {
        text.push_str(&format!(
            "the audit covered {} of {} dialogues ({} turns): the other turns keep their original labels\n",
            edits.dialogues_audited,
            edits.dialogues_total,
            edits.audited_turns.len()
        ));
    }
    if args.variant == Variant::Reviewed {
        text.push_str("reviewed: golds a majority of their reviewers rejected (no) removed; suggestions a majority accepted (yes or partly) added, with their grade when a majority said yes, else grade 1\n");
    } else {
        text.push_str(&format!(
            "thresholds: golds with an ensemble alignment score below {} removed; verified probable missing golds added with their grade\n",
            edits.flag_rating_below
        ));
    }
    super::open::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
