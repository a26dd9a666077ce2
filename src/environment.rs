//! Every environment variable mtr reads, in one table. Each command's `--help` (and man page)
//! ends with an "Environment:" section listing the variables that affect it, generated from
//! this table; a test scans the sources and fails when the code reads a variable the table
//! does not list.

use clap::builder::StyledStr;

/// One environment variable (or a family of them) and the commands it affects.
pub struct EnvVar {
    /// The name as a user sets it; a family is written with its placeholder
    /// (`MTR_<SECTION>__<KEY>`, `<api_key_env>`).
    pub name: &'static str,
    /// What it does, in one line.
    pub meaning: &'static str,
    pub affects: Affects,
}

/// Which commands read a variable (a command's subcommands read what it reads).
pub enum Affects {
    Every,
    /// Every command that loads the configuration: all but [`NO_CONFIG`].
    Configured,
    Commands(&'static [&'static str]),
}

/// The commands that read no configuration: they write the shell's files from the command
/// line's definitions alone.
const NO_CONFIG: &[&str] = &["completions", "man"];

/// The commands that call an LLM or embedding endpoint.
const CALLS_LLM: &[&str] = &["audit", "synth", "bench", "index", "retrieve", "local"];
/// The commands that start, use or manage the embedded local servers, their models and the
/// LLM cache.
const LOCAL: &[&str] = &[
    "audit", "synth", "bench", "index", "retrieve", "local", "cache",
];
/// The commands with files under mtr's own folders: the import and index caches, the models,
/// the LLM cache, the servers' state.
const FILES: &[&str] = &[
    "audit", "synth", "bench", "index", "retrieve", "local", "cache", "export", "validate",
    "stats", "qrels", "review",
];

/// The table. `mtr --help` lists the [`Affects::Every`] and [`Affects::Configured`] ones; each
/// command lists those that affect it.
pub const VARIABLES: &[EnvVar] = &[
    EnvVar {
        name: "MTR_CONFIG",
        meaning: "the configuration file, as --config",
        affects: Affects::Configured,
    },
    EnvVar {
        name: "MTR_<SECTION>__<KEY>",
        meaning: "one configuration key: MTR_AUDIT__SAMPLE=20 is [audit] sample = 20 (over mtr.toml, under the flags)",
        affects: Affects::Configured,
    },
    EnvVar {
        name: "XDG_CONFIG_HOME",
        meaning: "where mtr.toml is looked for when ./mtr.toml is absent: $XDG_CONFIG_HOME/mtr/ [default: ~/.config]",
        affects: Affects::Configured,
    },
    EnvVar {
        name: "HOME",
        meaning: "the default of the XDG_* folders",
        affects: Affects::Configured,
    },
    EnvVar {
        name: "MTR_LOG",
        meaning: "log filter in tracing's syntax (e.g. mtr_llm=debug), in place of the level -v/--quiet set",
        affects: Affects::Every,
    },
    EnvVar {
        name: "MTR_LOG_FORMAT",
        meaning: "log line format, as --log-format",
        affects: Affects::Every,
    },
    EnvVar {
        name: "COLUMNS",
        meaning: "the width --help wraps to, where the terminal does not tell",
        affects: Affects::Every,
    },
    EnvVar {
        name: "NO_COLOR",
        meaning: "set and not empty: no colours in log lines",
        affects: Affects::Every,
    },
    EnvVar {
        name: "MTR_HOME",
        meaning: "one folder for all of mtr's files: $MTR_HOME/{cache,data,state,config}, over the XDG_* folders",
        affects: Affects::Commands(FILES),
    },
    EnvVar {
        name: "XDG_CACHE_HOME",
        meaning: "what is safe to delete (import and index caches) goes under $XDG_CACHE_HOME/mtr [default: ~/.cache]",
        affects: Affects::Commands(FILES),
    },
    EnvVar {
        name: "XDG_DATA_HOME",
        meaning: "what costs work or money to rebuild (models, venv, LLM cache, spend ledger) goes under $XDG_DATA_HOME/mtr [default: ~/.local/share]",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "XDG_STATE_HOME",
        meaning: "the local servers' state goes under $XDG_STATE_HOME/mtr [default: ~/.local/state]",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "<api_key_env>",
        meaning: "an endpoint's API key, in the variable its `api_key_env` names (e.g. OPENAI_API_KEY)",
        affects: Affects::Commands(CALLS_LLM),
    },
    EnvVar {
        name: "MTR_LOCAL_MODEL",
        meaning: "the embedded model to run (a GGUF path or a known name): the generator and the only judge (sets [llm.local] model)",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "MTR_LOCAL_USE_SERVER",
        meaning: "both, judge or generator: which of a model's two local servers this command uses (sets [llm.local] use_server)",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "MTR_KEEP_ALIVE",
        meaning: "how long a local server stays up once unused: 5m, 30s, 0 or -1 (sets [llm.local] keep_alive)",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "MTR_LOCAL_CORES",
        meaning: "the cores the local servers may use side by side (sets [llm.local] cores) [default: the machine's]",
        affects: Affects::Commands(LOCAL),
    },
    EnvVar {
        name: "HF_ENDPOINT",
        meaning: "the Hugging Face Hub models are downloaded from [default: https://huggingface.co]",
        affects: Affects::Commands(&["local"]),
    },
    EnvVar {
        name: "HF_TOKEN",
        meaning: "the Hub token, when set and not empty",
        affects: Affects::Commands(&["local"]),
    },
    EnvVar {
        name: "MTR_GIT_COMMIT",
        meaning: "the commit recorded in the results' provenance, when the build recorded none",
        affects: Affects::Commands(&["bench"]),
    },
    EnvVar {
        name: "SOURCE_DATE_EPOCH",
        meaning: "the date recorded in the results, for byte-identical reruns",
        affects: Affects::Commands(&["bench"]),
    },
    EnvVar {
        name: "USER, LOGNAME, USERNAME",
        meaning: "the reviewer's name recorded with each label (the first one set)",
        affects: Affects::Commands(&["review"]),
    },
    EnvVar {
        name: "DISPLAY, WAYLAND_DISPLAY",
        meaning: "a desktop to open the browser on (else the page's address is only printed)",
        affects: Affects::Commands(&["review"]),
    },
];

impl EnvVar {
    fn affects(&self, command: Option<&str>) -> bool {
        match (&self.affects, command) {
            (Affects::Every, _) | (Affects::Configured, None) => true,
            (Affects::Configured, Some(c)) => !NO_CONFIG.contains(&c),
            (Affects::Commands(_), None) => false,
            (Affects::Commands(list), Some(c)) => list.contains(&c),
        }
    }
}

/// The variables that affect `command` (a top-level subcommand's name), or, for `None`, the
/// ones (nearly) every command reads.
pub fn affecting(command: Option<&str>) -> impl Iterator<Item = &'static EnvVar> {
    VARIABLES.iter().filter(move |v| v.affects(command))
}

/// The width clap wraps help to: the terminal's (else `COLUMNS`), at most 100. The sections
/// are wrapped to it beforehand, their meanings in a column of their own, as clap's rewrapping
/// would put continuation lines at the left edge.
fn help_width() -> usize {
    let terminal = terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok());
    terminal.unwrap_or(MAX_HELP_WIDTH).min(MAX_HELP_WIDTH)
}

/// clap's default widest help.
const MAX_HELP_WIDTH: usize = 100;

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().map_or(0, |l| l.chars().count());
        if line > 0 && line + 1 + word.chars().count() > width {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            if !l.is_empty() {
                l.push(' ');
            }
            l.push_str(word);
        }
    }
    lines
}

/// The "Environment:" section of a command's help, its heading styled like clap's own.
fn section(command: Option<&str>, heading: &clap::builder::styling::Style) -> StyledStr {
    let vars: Vec<&EnvVar> = affecting(command).collect();
    let width = vars.iter().map(|v| v.name.len()).max().unwrap_or(0);
    let mut text = format!("{heading}Environment:{heading:#}\n");
    for v in &vars {
        let lines = wrap(v.meaning, help_width().saturating_sub(width + 4).max(30));
        for (i, line) in lines.iter().enumerate() {
            let name = if i == 0 { v.name } else { "" };
            text.push_str(&format!("  {name:width$}  {line}\n"));
        }
    }
    if command.is_none() {
        text.push_str("  (each command's --help lists the others it reads)\n");
    }
    StyledStr::from(text.trim_end().to_string())
}

/// `cmd` (mtr's whole command line) with an "Environment:" section at the end of every help.
pub fn with_sections(cmd: clap::Command) -> clap::Command {
    let heading = *cmd.get_styles().get_header();
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let mut cmd = cmd.after_help(section(None, &heading));
    for name in names {
        let text = section(Some(&name), &heading);
        cmd = cmd.mut_subcommand(&name, |sub| with_text(sub, &text));
    }
    cmd
}

/// Sets `text` as the after-help of `cmd` and of all its subcommands.
fn with_text(cmd: clap::Command, text: &StyledStr) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let mut cmd = cmd.after_help(text.clone());
    for name in names {
        cmd = cmd.mut_subcommand(&name, |sub| with_text(sub, text));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use super::*;

    /// Whether the table lists `name`.
    fn listed(name: &str) -> bool {
        VARIABLES
            .iter()
            .any(|v| v.name.split(", ").any(|n| n == name))
            || (name.starts_with("MTR_") && name[4..].contains("__"))
    }

    /// Every `.rs` file under the sources of the binary and of the crates (not their tests,
    /// benches or examples).
    fn sources() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![root.join("src")];
        for c in std::fs::read_dir(root.join("crates")).unwrap() {
            dirs.push(c.unwrap().path().join("src"));
        }
        let mut files = Vec::new();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if name == "tests" || name == "tests.rs" {
                    continue;
                }
                if p.is_dir() {
                    dirs.push(p);
                } else if name.ends_with(".rs") {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
    }

    /// `text` up to its `#[cfg(test)] mod tests {` block, which runs only under `cargo test`.
    fn without_tests(text: &str) -> &str {
        let mut offset = 0;
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim() == "#[cfg(test)]" {
                let next = lines
                    .clone()
                    .find(|l| !l.trim_start().starts_with("#["))
                    .unwrap_or("");
                if next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{') {
                    return &text[..offset];
                }
            }
            offset += line.len() + 1;
        }
        text
    }

    /// The variable names `code` reads: every `MTR_*` word, and the literal argument of
    /// `var(..)`, `var_os(..)`, `try_from_env(..)` and clap's `env = ".."`.
    fn names_read(code: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        let word = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect()
        };
        for (i, _) in code.match_indices("MTR_") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let w = word(&code[i..]);
            if w.len() > 4 {
                names.insert(w.trim_end_matches('_').to_string());
            }
        }
        for call in ["var(\"", "var_os(\"", "try_from_env(\"", "env = \""] {
            for (i, _) in code.match_indices(call) {
                let w = word(&code[i + call.len()..]);
                if !w.is_empty() {
                    names.insert(w);
                }
            }
        }
        names
    }

    #[test]
    fn every_variable_the_code_reads_is_in_the_table() {
        let files = sources();
        assert!(
            files.len() > 50,
            "the scan found only {} files",
            files.len()
        );
        let mut missing = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for name in names_read(without_tests(&text)) {
                if !listed(&name) {
                    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                    let file = f.strip_prefix(root).unwrap_or(&f);
                    missing.push(format!("{name} ({})", file.display()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "read by the code but not in src/environment.rs VARIABLES: {missing:?}"
        );
    }

    #[test]
    fn the_scan_finds_reads_and_skips_unit_tests() {
        let code = "fn a() { std::env::var(\"HF_TOKEN\"); env::var_os(\"XDG_X_HOME\") }\n\
                    /// `MTR_KEEP_ALIVE` overrides it\n#[arg(env = \"MTR_CONFIG\")]\n\
                    const P: &str = \"MTR_\";\n\
                    #[cfg(test)]\n#[allow(x)]\nmod tests {\n  fn b() { var(\"MTR_TEST_ONLY\") }\n}\n";
        let names = names_read(without_tests(code));
        let want = ["HF_TOKEN", "MTR_CONFIG", "MTR_KEEP_ALIVE", "XDG_X_HOME"];
        assert_eq!(names, want.iter().map(|s| s.to_string()).collect());
        assert!(!listed("XDG_X_HOME") && !listed("MTR_TEST_ONLY"));
        assert!(listed("MTR_AUDIT__SAMPLE") && listed("LOGNAME"));
    }

    #[test]
    fn meanings_wrap_between_words_within_the_width() {
        assert_eq!(wrap("a bb ccc dd", 6), ["a bb", "ccc dd"]);
        assert_eq!(wrap("unbreakable-word x", 4), ["unbreakable-word", "x"]);
        let help = crate::cli::command()
            .find_subcommand_mut("audit")
            .unwrap()
            .render_long_help()
            .to_string();
        let env = &help[help.find("Environment:").unwrap()..];
        assert!(
            env.lines().all(|l| l.chars().count() <= help_width()),
            "{env}"
        );
        // continuation lines stay in the meanings' column
        assert!(env.lines().skip(1).all(|l| l.starts_with("  ")), "{env}");
    }

    #[test]
    fn every_command_named_in_the_table_exists() {
        let cmd = crate::cli::command();
        let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
        for v in VARIABLES {
            if let Affects::Commands(list) = v.affects {
                for c in list {
                    assert!(names.contains(c), "{}: no command `{c}`", v.name);
                }
            }
        }
    }

    #[test]
    fn a_command_lists_what_affects_it_and_nothing_else() {
        let mut cmd = crate::cli::command();
        let audit = cmd.find_subcommand_mut("audit").unwrap().render_long_help();
        let audit = audit.to_string();
        let env = &audit[audit.find("Environment:").unwrap()..];
        for name in [
            "MTR_LOCAL_USE_SERVER",
            "MTR_HOME",
            "MTR_CONFIG",
            "<api_key_env>",
        ] {
            assert!(env.contains(name), "{env}");
        }
        assert!(!env.contains("HF_TOKEN"), "{env}");
        let start = cmd
            .find_subcommand_mut("local")
            .unwrap()
            .find_subcommand_mut("start")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(start.contains("HF_TOKEN"), "{start}");
        // defaults are written as everywhere in the help: [default: ...]
        assert!(!audit.contains("(default"), "{audit}");
        let man = cmd.find_subcommand_mut("man").unwrap().render_long_help();
        let man = man.to_string();
        assert!(
            man.contains("NO_COLOR") && !man.contains("MTR_CONFIG"),
            "{man}"
        );
        let top = cmd.render_long_help().to_string();
        assert!(
            top.contains("NO_COLOR") && !top.contains("MTR_KEEP_ALIVE"),
            "{top}"
        );
    }
}
