//! The shell's conventions, driven through the binary: every command's help shows its own
//! options before the global ones and ends with the environment variables it reads; the
//! completion scripts and man pages cover every command. The command tree is read from the
//! binary's own help (its "Commands:" sections), so a new command is checked without a list.

use std::collections::BTreeSet;
use std::path::Path;

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

const GLOBAL: [&str; 4] = ["--verbose", "--quiet", "--log-format", "--config"];

/// `mtr <path> --help`.
fn help(path: &[String]) -> String {
    let o = mtr().args(path).arg("--help").output().unwrap();
    assert!(o.status.success(), "{path:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// The names under a help's "Commands:" heading (without clap's own `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|n| n != "help")
        .collect()
}

/// Every command path of the binary, depth first: `[]`, `["import"]`, ..., `["local", "start"]`.
fn command_tree() -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut todo = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        for sub in subcommands(&help(&path)).into_iter().rev() {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        paths.push(path);
    }
    paths
}

/// The long option names of the option lines in a piece of help (`  -o, --output <DIR>`,
/// `      --quiet`; descriptions are indented further).
fn options(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(',').trim_end_matches("...").to_string())
        })
        .collect()
}

#[test]
fn every_help_shows_its_own_options_first_and_the_global_ones_under_their_heading() {
    let tree = command_tree();
    assert!(tree.len() > 25, "found only {tree:?}");
    let global: BTreeSet<String> = GLOBAL.iter().map(|s| s.to_string()).collect();
    for path in &tree {
        let text = help(path);
        let (own, rest) = text
            .split_once("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{path:?} has no Global options heading:\n{text}"));
        let (globals, env) = rest
            .split_once("\nEnvironment:\n")
            .unwrap_or_else(|| panic!("{path:?} has no Environment section:\n{text}"));
        assert_eq!(options(globals), global, "{path:?}:\n{text}");
        // no other heading between the global options and the environment
        assert!(
            globals.lines().all(|l| l.is_empty() || l.starts_with(' ')),
            "{path:?}:\n{text}"
        );
        let own_options = options(own);
        assert!(own_options.contains("--help"), "{path:?}:\n{text}");
        assert!(
            own_options.is_disjoint(&global),
            "{path:?} lists a global flag among its own options:\n{text}"
        );
        assert!(options(env).is_empty(), "{path:?}:\n{text}");
    }
}

#[test]
fn each_help_lists_the_environment_variables_that_affect_that_command() {
    let audit = help(&["audit".to_string()]);
    let env = &audit[audit.find("\nEnvironment:\n").unwrap()..];
    for v in [
        "MTR_CONFIG",
        "MTR_HOME",
        "MTR_LOCAL_USE_SERVER",
        "MTR_KEEP_ALIVE",
    ] {
        assert!(env.contains(v), "{v}:\n{env}");
    }
    let eval = help(&["eval".to_string()]);
    let env = &eval[eval.find("\nEnvironment:\n").unwrap()..];
    assert!(
        env.contains("MTR_LOG") && !env.contains("MTR_LOCAL_USE_SERVER"),
        "{env}"
    );
    // a subcommand's subcommands read what it reads
    let status = help(&["local".to_string(), "status".to_string()]);
    assert!(status.contains("HF_ENDPOINT"), "{status}");
}

/// `mtr completions SHELL` (stdout).
fn completions(shell: &str) -> String {
    let o = mtr().args(["completions", shell]).output().unwrap();
    assert!(
        o.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn completion_scripts_name_every_subcommand_and_bash_parses_its_own() {
    let tree = command_tree();
    for shell in ["bash", "zsh", "fish"] {
        let script = completions(shell);
        assert!(script.len() > 1000, "{shell}: {script}");
        for path in &tree {
            for name in path {
                assert!(script.contains(name.as_str()), "{shell} lacks {name}");
            }
        }
        assert!(script.contains("log-format"), "{shell}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mtr.bash");
    std::fs::write(&file, completions("bash")).unwrap();
    let Ok(o) = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
    else {
        eprintln!("no bash here: syntax not checked");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // a shell that loads it completes the subcommands
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(mtr au); COMP_CWORD=1; COMP_LINE='mtr au'; COMP_POINT=6; _mtr mtr au mtr; echo \"${{COMPREPLY[@]}}\"",
            file.display()
        ))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("audit"),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The page of `path` in `dir`: `mtr.1`, `mtr-audit.1`, `mtr-local-start.1`.
fn page(dir: &Path, path: &[String]) -> String {
    let name = std::iter::once("mtr".to_string())
        .chain(path.iter().cloned())
        .collect::<Vec<_>>()
        .join("-");
    std::fs::read_to_string(dir.join(format!("{name}.1")))
        .unwrap_or_else(|e| panic!("{name}.1: {e}"))
}

#[test]
fn man_pages_cover_every_command_and_option() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = mtr().args(["man", "--out"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tree = command_tree();
    let written = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(written, tree.len(), "one page per command");
    for path in &tree {
        let text = page(&out, path);
        for sub in subcommands(&help(path)) {
            assert!(text.contains(&sub), "{path:?} page lacks {sub}");
        }
        for option in options(&help(path)) {
            // roff writes a hyphen as `\-`
            let roff = option.replace('-', "\\-");
            assert!(text.contains(&roff), "{path:?} page lacks {option}");
        }
        assert!(text.contains(".SH ENVIRONMENT"), "{path:?}");
    }
    // without --out the top page goes to stdout
    let o = mtr().arg("man").output().unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), page(&out, &[]));
    // and groff renders it, where installed
    let Ok(r) = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-P-c", "-P-b", "-P-u"])
        .arg(out.join("mtr-audit.1"))
        .output()
    else {
        eprintln!("no groff here: rendering not checked");
        return;
    };
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let shown = String::from_utf8_lossy(&r.stdout);
    assert!(shown.contains("ENVIRONMENT") && shown.contains("MTR_LOCAL_USE_SERVER"));
}
