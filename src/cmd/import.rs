//! `mtr import`: not built yet.

use std::process::ExitCode;

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Arguments (this command is not built yet).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

pub async fn run(_ctx: &Ctx, _args: Args) -> anyhow::Result<ExitCode> {
    super::not_built("import")
}
