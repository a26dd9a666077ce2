//! The command line: global flags and one subcommand per job. Each subcommand's arguments are
//! defined next to its implementation in `cmd/`.

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(name = "mtr", version, about = "Audit, synthesize and benchmark conversational retrieval benchmarks", long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The whole command line as clap sees it: the derived definitions plus what is generated
/// for every help (the "Environment:" sections). Parsing, completions and man pages all use it.
pub fn command() -> clap::Command {
    crate::environment::with_sections(Cli::command())
}

/// The flags every command takes. They sit under their own heading, after the command's own
/// options, in every `--help` (a heading set here applies to every field below it).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// More log output on stderr (-v info, -vv debug, -vvv trace) [default: warnings and errors
    /// only; the result goes to stdout].
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors, no progress display (no short form: `-q` is `mtr eval`'s per-query flag,
    /// as in trec_eval).
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Log line format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "MTR_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Configuration file [default: ./mtr.toml, then $XDG_CONFIG_HOME/mtr/mtr.toml].
    #[arg(long, global = true, env = "MTR_CONFIG")]
    pub config: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert a benchmark from another format (mtrag, beir, trec, topiocqa, qrecc, inscit, cast, chatrag, coral, doc2dial, quac) into mtr's native format.
    Import(cmd::import::Args),
    /// Export a native benchmark to BEIR or TREC files, a Hugging Face dataset folder, or
    /// retriever training triplets.
    Export(cmd::export::Args),
    /// Check a benchmark for errors (ids, references, empty texts, qrels consistency).
    Validate(cmd::validate::Args),
    /// Describe a benchmark: dialogues, turns, gold per turn, query lengths, languages, tags.
    Stats(cmd::stats::Args),
    /// Evaluate TREC runs against qrels, exactly as trec_eval does.
    Eval(cmd::eval::Args),
    /// Build a BM25 (and optionally dense) index of a benchmark's corpus.
    Index(cmd::index::Args),
    /// Retrieve for every turn of a benchmark and write a TREC run.
    Retrieve(cmd::retrieve::Args),
    /// Audit a benchmark with an ensemble of LLM judges (MTR-Eval).
    Audit(cmd::audit::Args),
    /// Judge the passages runs rank in their top K that the qrels do not judge (the holes).
    Judge(cmd::judge::Args),
    /// Synthesize a multi-turn benchmark from a corpus (MTR-Pipeline).
    Synth(cmd::synth::Args),
    /// Read a corpus as `mtr synth` does and write what was read (documents or passages) as JSON lines.
    Corpus(cmd::corpus::Args),
    /// Score retrievers and external runs on a benchmark.
    Bench(cmd::bench::Args),
    /// Merge bench results into a leaderboard (Markdown, CSV, JSON, HTML).
    Leaderboard(cmd::leaderboard::Args),
    /// Write the qrels an audit supports (noise-removed, sparsity-filled, corrected) as a TREC file.
    Qrels(cmd::qrels::Args),
    /// Review an audit by hand in the browser: a random sample for estimates, flagged items for corrections.
    Review(cmd::review::Args),
    /// Re-render the reports of an audit or bench output folder.
    Report(cmd::report::Args),
    /// Manage the embedded local LLM and embedding servers.
    Local(cmd::local::Args),
    /// Inspect or prune the LLM response cache.
    Cache(cmd::cache::Args),
    /// Show the effective configuration.
    Config(cmd::config_show::Args),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    ///
    /// Install it where the shell looks when it starts, e.g. `mtr completions bash >
    /// ~/.local/share/bash-completion/completions/mtr`, `mtr completions zsh > ~/.zfunc/_mtr`
    /// (with `fpath+=(~/.zfunc)` before `compinit`), `mtr completions fish >
    /// ~/.config/fish/completions/mtr.fish`.
    Completions(cmd::completions::Args),
    /// Write the man pages: mtr.1 and one page per subcommand (mtr-audit.1, mtr-local-start.1, ...).
    ///
    /// Install them into a folder of MANPATH, e.g. `mtr man --out ~/.local/share/man/man1`;
    /// without --out, mtr.1 goes to stdout (`mtr man | man -l -`).
    Man(cmd::man::Args),
}

impl Command {
    /// What an interrupted command kept, said on stderr after Ctrl-C or SIGTERM.
    pub fn interrupt_note(&self) -> &'static str {
        match self {
            // every label the page acknowledged was flushed to the labels file before its answer
            Command::Review(_) => {
                "every label acknowledged is in the audit's review/labels.jsonl: run the same command again to go on"
            }
            _ => {
                "answers received so far are kept in the LLM cache: run the same command again to resume"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    /// Checks `cmd` and every command under it: the global flags, and only they, sit under
    /// "Global options", and that heading comes after the command's own options.
    fn check_headings(cmd: &mut clap::Command, path: &str, seen: &mut usize) {
        *seen += 1;
        for arg in cmd.get_arguments() {
            let global =
                ["verbose", "quiet", "log_format", "config"].contains(&arg.get_id().as_str());
            assert_eq!(
                arg.get_help_heading() == Some("Global options"),
                global,
                "{path}: {}",
                arg.get_id()
            );
        }
        let help = cmd.render_long_help().to_string();
        let heading = help
            .find("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{path}: {help}"));
        let own = help
            .find("\nOptions:\n")
            .unwrap_or_else(|| panic!("{path}: {help}"));
        assert!(own < heading, "{path}: {help}");
        // clap's own `help` subcommands take no options
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .filter(|n| n != "help")
            .collect();
        for name in names {
            if let Some(sub) = cmd.find_subcommand_mut(&name) {
                check_headings(sub, &format!("{path} {name}"), seen);
            }
        }
    }

    #[test]
    fn every_command_shows_its_own_options_before_the_global_ones() {
        let mut cmd = super::command();
        cmd.build();
        let mut seen = 0;
        check_headings(&mut cmd, "mtr", &mut seen);
        assert!(seen > 25, "{seen} commands");
    }

    #[test]
    fn an_interrupted_review_speaks_of_its_labels_and_an_audit_of_its_cache() {
        let review = Cli::try_parse_from(["mtr", "review", "audit-x", "--no-browser"]).unwrap();
        assert!(
            review
                .command
                .interrupt_note()
                .contains("review/labels.jsonl")
        );
        let audit = Cli::try_parse_from(["mtr", "audit", "bench-x", "--dry-run"]).unwrap();
        assert!(audit.command.interrupt_note().contains("LLM cache"));
    }
}
