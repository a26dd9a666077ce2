//! One module per subcommand: each defines its `Args` and an async `run`. This file builds the
//! shared context (configuration, progress) and dispatches.

use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{Cli, Command};
use crate::config::Config;
use crate::progress::TermProgress;

pub mod audit;
pub mod batch_file;
pub mod bench;
pub mod cache;
pub mod common;
pub mod completions;
pub mod config_show;
pub mod corpus;
pub mod eval;
pub mod export;
pub mod export_publish;
pub mod import;
pub mod index;
pub mod judge;
pub mod leaderboard;
pub mod local;
pub mod local_hub;
pub mod man;
pub mod open;
pub mod preflight;
pub mod qrels;
pub mod report;
pub mod retrieve;
pub mod review;
pub mod spend;
pub mod stats;
pub mod synth;
pub mod validate;

/// What every command gets: the effective configuration and a progress sink (the global flags
/// act before dispatch: logging, progress display, configuration file).
pub struct Ctx {
    pub config: Config,
    pub progress: Arc<TermProgress>,
}

pub async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    // the shell's files come from the command line's definitions alone, whatever mtr.toml holds
    match &cli.command {
        Command::Completions(a) => return completions::run(a),
        Command::Man(a) => return man::run(a),
        _ => {}
    }
    let config = Config::load(cli.global.config.as_deref())?;
    let ctx = Ctx {
        config,
        progress: Arc::new(TermProgress::new(cli.global.quiet)),
    };
    match cli.command {
        Command::Import(a) => import::run(&ctx, a).await,
        Command::Export(a) => export::run(&ctx, a).await,
        Command::Validate(a) => validate::run(&ctx, a).await,
        Command::Stats(a) => stats::run(&ctx, a).await,
        Command::Eval(a) => eval::run(&ctx, a).await,
        Command::Index(a) => index::run(&ctx, a).await,
        Command::Retrieve(a) => retrieve::run(&ctx, a).await,
        Command::Audit(a) => audit::run(&ctx, a).await,
        Command::Judge(a) => judge::run(&ctx, a).await,
        Command::Synth(a) => synth::run(&ctx, a).await,
        Command::Corpus(a) => corpus::run(&ctx, a).await,
        Command::Bench(a) => bench::run(&ctx, a).await,
        Command::Leaderboard(a) => leaderboard::run(&ctx, a).await,
        Command::Qrels(a) => qrels::run(&ctx, a).await,
        Command::Report(a) => report::run(&ctx, a).await,
        Command::Review(a) => review::run(&ctx, a).await,
        Command::Local(a) => local::run(&ctx, a).await,
        Command::Cache(a) => cache::run(&ctx, a).await,
        Command::Config(a) => config_show::run(&ctx, a).await,
        Command::Completions(a) => completions::run(&a),
        Command::Man(a) => man::run(&a),
    }
}
