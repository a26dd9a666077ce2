//! `mtr config show` and `mtr config path`: the effective configuration (defaults, then the file, then env
//! overrides), every value followed by where it came from, secrets masked.

use std::process::ExitCode;

use super::Ctx;
use crate::config::Section;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Print the effective configuration, defaults included, each value followed by where it
    /// came from: default, file or env; secrets masked.
    Show,
    /// Print where the configuration was read from.
    Path,
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Show => {
            let src = ctx
                .config
                .source
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "(no file; defaults)".into());
            println!("# source: {src}");
            print!("{}", ctx.config.show_effective(&defaults()));
        }
        Action::Path => match &ctx.config.source {
            Some(p) => println!("{}", p.display()),
            None => println!("(no config file found)"),
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// The default of every section a command reads (`[llm]`, `[audit]`, `[synth]`, `[bench]`,
/// `[index]`, `[retrieve]`, `[stats]`), from the same declarations `Config::settings` layers.
fn defaults() -> Vec<(&'static str, toml::Value)> {
    [
        default_of::<mtr_llm::LlmConfig>(),
        default_of::<mtr_audit::AuditSettings>(),
        default_of::<mtr_pipeline::SynthConfig>(),
        default_of::<mtr_bench::job::BenchSettings>(),
        default_of::<mtr_retrieve::IndexSettings>(),
        default_of::<mtr_retrieve::RetrieveSettings>(),
        default_of::<mtr_retrieve::StatsSettings>(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn default_of<S: Section>() -> Option<(&'static str, toml::Value)> {
    match toml::Value::try_from(S::default()) {
        Ok(v) => Some((S::NAME, v)),
        Err(e) => {
            tracing::debug!("defaults of [{}] not shown: {e}", S::NAME);
            None
        }
    }
}
