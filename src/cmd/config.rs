//! `mtr config show`: the effective configuration (file, then env overrides), secrets masked.

use std::process::ExitCode;

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Print the effective configuration with secrets masked.
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
            print!("{}", ctx.config.show());
        }
        Action::Path => match &ctx.config.source {
            Some(p) => println!("{}", p.display()),
            None => println!("(no config file found)"),
        },
    }
    Ok(ExitCode::SUCCESS)
}
