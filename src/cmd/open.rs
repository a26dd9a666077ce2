//! What commands share beyond their flags: opening a benchmark in any format, opening the LLM
//! client from `[llm]` and the flags, and writing a result to stdout: one place, so that no
//! command reaches into another's module for them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use mtr_core::BenchmarkDir;
use mtr_core::formats::{self, ImportOptions};
use mtr_llm::{LlmConfig, LlmError, LlmOptions};

use super::Ctx;
use super::common::LlmArgs;

/// Opens any supported benchmark file or folder as a native benchmark, importing it into the
/// cache when needed (see `mtr_core::formats::open_any`).
pub fn open_benchmark(
    ctx: &Ctx,
    path: &Path,
    opts: &ImportOptions,
) -> anyhow::Result<BenchmarkDir> {
    formats::open_any_with(path, None, opts, &*ctx.progress)
        .with_context(|| format!("opening benchmark {}", path.display()))
}

/// Writes a command's result to stdout. A closed pipe (`mtr stats B | head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Converts an LLM error into anyhow. An error of the `[llm]` section names the config file
/// (or `mtr.toml [llm]` where there is none); every other error goes on as it is, and
/// `crate::exit` asks it whose it is: a local model that is not installed, or an environment
/// variable such as `MTR_LOCAL_USE_SERVER` that names itself, is no error of the file.
pub fn llm_error(ctx: &Ctx, e: LlmError) -> anyhow::Error {
    if matches!(e, LlmError::Config(_)) {
        let file = ctx
            .config
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("mtr.toml [llm]"));
        anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(file, e.to_string()).field("llm"),
        ))
    } else {
        anyhow::Error::new(e)
    }
}

/// The `[llm]` section of the effective configuration.
pub fn llm_config(ctx: &Ctx) -> anyhow::Result<LlmConfig> {
    ctx.config.section::<LlmConfig>("llm")
}

/// Builds the LLM client from `[llm]` and the flags, wired to the progress display, for a
/// command that cannot use the Batch API (its calls depend on each other's answers, or are
/// embeddings).
pub async fn open_llm(ctx: &Ctx, args: &LlmArgs) -> anyhow::Result<mtr_llm::Llm> {
    let mut args = args.clone();
    args.options.batch = false;
    open_llm_batching(ctx, &args).await
}

/// [`open_llm`] for the commands that run a second pass over Batch API answers (`--batch`).
pub async fn open_llm_batching(ctx: &Ctx, args: &LlmArgs) -> anyhow::Result<mtr_llm::Llm> {
    let config = llm_config(ctx)?;
    let progress: mtr_core::progress::SharedProgress = ctx.progress.clone();
    let options = LlmOptions {
        progress: Some(progress),
        ..args.options.clone()
    };
    mtr_llm::Llm::new(config, options)
        .await
        .map_err(|e| llm_error(ctx, e))
}
