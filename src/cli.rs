//! The command line: global flags and one subcommand per job. Each subcommand's arguments are
//! defined next to its implementation in `cmd/`.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(name = "mtr", version, about = "Audit, synthesize and benchmark conversational retrieval benchmarks", long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
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
    /// Export a native benchmark to BEIR or TREC files.
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
    /// Synthesize a multi-turn benchmark from a corpus (MTR-Pipeline).
    Synth(cmd::synth::Args),
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
    Config(cmd::config::Args),
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
