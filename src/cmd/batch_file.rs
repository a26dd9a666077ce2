//! `--export-batch FILE` for the commands that take it (`mtr audit`, `mtr local ask`): start
//! the export before the first call, and after a pass, end the command with the file written
//! and a summary on stderr (exit 3) when the pass left calls in it. The mechanics live in
//! `mtr_llm::client::batch_file`; `mtr cache import` brings the answers back.

#![allow(clippy::print_stderr)] // export notes go to stderr beside the files written

use std::process::ExitCode;

use super::Ctx;
use super::common::LlmArgs;
use super::open::llm_error;

/// Starts writing cache misses to `--export-batch FILE`, if given.
pub fn start(
    ctx: &Ctx,
    llm: &mtr_llm::Llm,
    args: &LlmArgs,
    spend_job: Option<&str>,
) -> anyhow::Result<()> {
    match &args.export_batch {
        Some(file) => llm
            .start_export(file, spend_job)
            .map_err(|e| llm_error(ctx, e)),
        None => Ok(()),
    }
}

/// After a pass: with calls exported, writes the file, says what to run next, and gives the
/// command's exit status (3); without, says so and lets the command finish (`None`).
pub fn finish(ctx: &Ctx, llm: &mtr_llm::Llm, command: &str) -> anyhow::Result<Option<ExitCode>> {
    let exported = llm.exported();
    let Some(report) = llm.finish_export().map_err(|e| llm_error(ctx, e))? else {
        return Ok(None);
    };
    if exported == 0 {
        eprintln!(
            "nothing to export: the cache holds every call; {} is left as it was",
            report.file.display()
        );
        return Ok(None);
    }
    eprintln!(
        "{}",
        report.summary(&format!("then run the same `{command}` command again"))
    );
    Ok(Some(crate::exit::Status::Exported.into()))
}

/// `mtr cache import FILE...`: each file's answers into the cache at `cache`, one summary
/// line per file on stdout. A line the import cannot take is a user error naming its file and
/// line (exit 2); the files before it stay imported (importing again changes nothing).
pub async fn import(
    ctx: &Ctx,
    cache: std::path::PathBuf,
    files: &[std::path::PathBuf],
) -> anyhow::Result<ExitCode> {
    let args = LlmArgs {
        options: mtr_llm::LlmOptions {
            cache_path: Some(cache),
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = super::open::open_llm(ctx, &args).await?;
    super::preflight::writable_cache(&llm)?;
    let mut total = mtr_llm::ImportReport::default();
    for file in files {
        let report = match llm.import_batch_output(file) {
            Ok(r) => r,
            Err(mtr_llm::ImportError::Line {
                file,
                line,
                message,
                hint,
            }) => {
                return Err(anyhow::Error::new(mtr_core::Error::from(
                    mtr_core::InputError::new(&file, message)
                        .line(line)
                        .hint(hint),
                )));
            }
            Err(mtr_llm::ImportError::Io { file, source }) => {
                return Err(anyhow::Error::new(mtr_core::Error::io(&file, source)));
            }
            Err(mtr_llm::ImportError::Llm(e)) => return Err(llm_error(ctx, e)),
        };
        println!("{}", report.summary(file));
        total.answered += report.answered;
        total.already += report.already;
        total.failed += report.failed;
        total.parse_failed += report.parse_failed;
    }
    if files.len() > 1 {
        println!(
            "total: {} answers stored, {} already in the cache, {} failed, {} unparsable",
            total.answered, total.already, total.failed, total.parse_failed
        );
    }
    println!("next: rerun the command that exported the calls; it makes none of these again");
    Ok(ExitCode::SUCCESS)
}
