//! `mtr cache`: inspect or prune the LLM response cache (stats per model and prompt, removal
//! by age, model or prompt).

use std::path::PathBuf;
use std::process::ExitCode;

use mtr_llm::cache::PruneFilter;
use mtr_llm::{Cache, config::default_cache_path};

use super::Ctx;
use super::common::FormatArgs;
use super::open::{llm_config, llm_error};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Cache file [default: [llm] cache, else llm-cache.sqlite in mtr's data folder
    /// (`mtr local paths`)].
    #[arg(long, global = true, value_name = "PATH")]
    pub llm_cache: Option<PathBuf>,
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CacheCommand {
    /// Rows, size, tokens and the cost the cached answers saved, per model and prompt.
    Stats {
        #[command(flatten)]
        format: FormatArgs,
    },
    /// Remove cached answers (all given conditions must hold).
    Prune {
        /// Rows older than this many days.
        #[arg(long, value_name = "DAYS")]
        older_than_days: Option<f64>,
        /// Rows of this model.
        #[arg(long)]
        model: Option<String>,
        /// Rows of this prompt id (`name@version`) or id prefix (`audit/`).
        #[arg(long)]
        prompt: Option<String>,
        /// Everything.
        #[arg(long)]
        all: bool,
    },
    /// Store the answers of OpenAI Batch output files (OpenAI's, `vllm run-batch`'s, Ray's)
    /// to requests exported with `--export-batch`; rerun the exporting command afterwards.
    Import {
        /// Batch output files (JSONL: `custom_id`, `response.status_code`, `response.body`,
        /// `error`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let cfg = llm_config(ctx)?;
    let path = args
        .llm_cache
        .or(cfg.cache)
        .unwrap_or_else(default_cache_path);
    let cache = Cache::open(&path).map_err(|e| llm_error(ctx, e))?;
    match args.command {
        CacheCommand::Import { files } => {
            // the client holds its own handle, with the endpoints' prices and the ledger
            drop(cache);
            super::batch_file::import(ctx, path, &files).await
        }
        CacheCommand::Stats { format } => {
            let s = cache.stats().map_err(|e| llm_error(ctx, e))?;
            if format.json() {
                println!("{}", serde_json::to_string_pretty(&s)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("cache\t{}\t{} bytes", s.path.display(), s.file_bytes);
            // where the rest is: what costs work to rebuild, and what is safe to delete
            let dirs = mtr_core::dirs::Dirs::from_env();
            println!("dir\tdata\t{}", dirs.data.display());
            println!(
                "dir\tcache\t{}\t(import and index caches: safe to delete)",
                dirs.cache.display()
            );
            println!(
                "rows\tchat={}\tembeddings={}",
                s.chat_rows, s.embedding_rows
            );
            println!(
                "model\tchat_rows\tembedding_rows\tprompt_tokens\tcompletion_tokens\tcost_usd_saved_per_rerun"
            );
            for m in &s.models {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{:.4}",
                    m.model,
                    m.chat_rows,
                    m.embedding_rows,
                    m.prompt_tokens,
                    m.completion_tokens,
                    m.cost_usd
                );
            }
            for (p, n) in &s.prompts {
                println!("prompt\t{p}\t{n}");
            }
            Ok(ExitCode::SUCCESS)
        }
        CacheCommand::Prune {
            older_than_days,
            model,
            prompt,
            all,
        } => {
            if !all && older_than_days.is_none() && model.is_none() && prompt.is_none() {
                anyhow::bail!(mtr_core::Error::from(
                    mtr_core::InputError::new(&path, "nothing to prune")
                        .hint("give --older-than-days, --model, --prompt or --all"),
                ));
            }
            let filter = PruneFilter {
                older_than_s: older_than_days.map(|d| (d * 86_400.0) as u64),
                model,
                prompt,
                all,
            };
            let n = cache.prune(&filter).map_err(|e| llm_error(ctx, e))?;
            println!("removed\t{n}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
