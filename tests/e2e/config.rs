//! mtr.toml sections that do not parse: the user's error in every command, exit 2, naming the
//! file and the field (a bad `[audit]` table used to exit 1, as an internal error).

use std::path::Path;

use assert_cmd::Command;

fn mtr(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("mtr").unwrap();
    c.current_dir(dir)
        .env("MTR_HOME", dir.join("home"))
        .env_remove("OPENAI_API_KEY");
    c
}

/// Writes `toml` as the folder's mtr.toml, runs `args`, and checks: exit 2, and stderr names
/// the file and `field`.
fn refused(toml: &str, args: &[&str], field: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mtr.toml"), toml).unwrap();
    std::fs::write(dir.path().join("corpus.jsonl"), "").unwrap();
    let out = mtr(dir.path()).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("mtr.toml"), "{args:?} names no file: {err}");
    assert!(
        err.contains(&format!("field `{field}`")),
        "{args:?} names no field `{field}`: {err}"
    );
}

#[test]
fn a_bad_audit_table_is_a_user_error() {
    refused(
        "[audit]\nresamples = \"many\"\n",
        &["audit", "no-such-benchmark"],
        "audit.resamples",
    );
}

#[test]
fn a_bad_synth_table_is_a_user_error() {
    refused(
        "[synth]\nturns = \"eight\"\n",
        &["synth", "--corpus", "corpus.jsonl", "-o", "out"],
        "synth.turns",
    );
}

#[test]
fn a_bad_llm_table_is_a_user_error() {
    refused("[llm]\ncache = 5\n", &["cache", "stats"], "llm.cache");
}

#[test]
fn a_bad_nested_llm_table_is_a_user_error() {
    refused(
        "[llm.retry]\nmax_attempts = \"often\"\n",
        &["cache", "stats"],
        "llm.retry.max_attempts",
    );
}

#[test]
fn config_show_prints_defaults_and_where_each_value_came_from() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mtr.toml"),
        "[synth]\nturns = 3\n[llm]\napi_key = \"sk-never-shown\"\n",
    )
    .unwrap();
    let out = mtr(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("MTR_AUDIT__RESAMPLES", "300")
        .args(["config", "show"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("turns = 3  # file\n"), "{text}");
    assert!(
        text.contains("resamples = 300  # env MTR_AUDIT__RESAMPLES\n"),
        "{text}"
    );
    // a default nobody set, from each section a command reads
    assert!(text.contains("dialogues = 100  # default\n"), "{text}");
    for section in ["[llm]", "[audit]", "[synth]"] {
        assert!(text.contains(section), "{section} missing: {text}");
    }
    assert!(!text.contains("sk-never-shown"), "{text}");
}

/// Runs `args` in a folder with `toml` as its mtr.toml (none when empty) and the environment
/// `vars`; returns the exit code and stderr.
fn run_with(toml: &str, vars: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    if !toml.is_empty() {
        std::fs::write(dir.path().join("mtr.toml"), toml).unwrap();
    }
    let mut c = mtr(dir.path());
    c.env("XDG_CONFIG_HOME", dir.path().join("xdg"));
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_bad_environment_value_names_the_variable_not_the_file() {
    for toml in ["", "[audit]\nseed = 1\n"] {
        let (code, err) = run_with(
            toml,
            &[("MTR_AUDIT__RESAMPLES", "many")],
            &["audit", "no-such-benchmark"],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("MTR_AUDIT__RESAMPLES"), "{err}");
        assert!(!err.contains("mtr.toml"), "{err}");
    }
}

#[test]
fn a_bad_file_value_names_the_file_line_and_key() {
    let (code, err) = run_with(
        "[audit]\nseed = 1\nresamples = \"many\"\n",
        &[],
        &["audit", "no-such-benchmark"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mtr.toml:3: field `audit.resamples`"), "{err}");
}

#[test]
fn a_flag_beats_the_environment_which_beats_the_file() {
    // the flag replaces the bad variable, which replaces the bad file value: the command goes
    // on to the benchmark, which does not exist
    let (code, err) = run_with(
        "[audit]\nresamples = \"many\"\n",
        &[("MTR_AUDIT__RESAMPLES", "also-bad")],
        &["audit", "no-such-benchmark", "--resamples", "50"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no-such-benchmark"), "{err}");
    assert!(!err.contains("resamples"), "{err}");
    // without the flag the variable is what is wrong, not the file
    let (_, err) = run_with(
        "[audit]\nresamples = \"many\"\n",
        &[("MTR_AUDIT__RESAMPLES", "also-bad")],
        &["audit", "no-such-benchmark"],
    );
    assert!(err.contains("MTR_AUDIT__RESAMPLES"), "{err}");
}

#[test]
fn typed_settings_refuse_an_unknown_name_wherever_it_is_given() {
    let (code, err) = run_with(
        "",
        &[],
        &[
            "audit",
            "no-such-benchmark",
            "--negatives-query",
            "sideways",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("sideways"), "{err}");
    let (code, err) = run_with(
        "[audit]\nnegatives_query = \"sideways\"\n",
        &[],
        &["audit", "no-such-benchmark"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("mtr.toml:2: field `audit.negatives_query`") && err.contains("sideways"),
        "{err}"
    );
    let (code, err) = run_with(
        "",
        &[("MTR_SYNTH__VECTORS", "dense")],
        &["synth", "--corpus", "corpus.jsonl", "-o", "out"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("MTR_SYNTH__VECTORS"), "{err}");
    let (code, err) = run_with(
        "",
        &[],
        &["synth", "--corpus", "corpus.jsonl", "--vectors", "dense"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("dense"), "{err}");
}

#[test]
fn a_misspelt_bench_vocabulary_stops_before_any_work_naming_the_key_and_the_values() {
    refused(
        "[bench]\npart = \"tset\"\n",
        &[
            "bench",
            "no-such-benchmark",
            "--run",
            "run.trec",
            "-o",
            "out",
        ],
        "bench.part",
    );
    refused(
        "[bench]\nmain = \"ndcg_cut.1O\"\n",
        &[
            "bench",
            "no-such-benchmark",
            "--run",
            "run.trec",
            "-o",
            "out",
        ],
        "bench.main",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mtr.toml"), "[bench]\npart = \"tset\"\n").unwrap();
    let out = mtr(dir.path())
        .args(["bench", "b", "--run", "r", "-o", "out"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`dev`") && err.contains("`test`"), "{err}");
    assert!(!dir.path().join("out").exists());
}

#[test]
fn config_show_lists_the_bench_section_with_its_origins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mtr.toml"), "[bench]\nresamples = 200\n").unwrap();
    let out = mtr(dir.path())
        .args(["config", "show"])
        .env("MTR_BENCH__SEED", "7")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("\n[bench]\n"), "{shown}");
    assert!(shown.contains("resamples = 200  # file\n"), "{shown}");
    assert!(
        shown.contains("seed = 7  # env MTR_BENCH__SEED\n"),
        "{shown}"
    );
    assert!(
        shown.contains("confidence_level = 0.95  # default\n"),
        "{shown}"
    );
}

#[test]
fn index_retrieve_and_stats_read_their_sections_and_refuse_a_bad_value_naming_the_key() {
    refused(
        "[index]\nthreds = 2\n",
        &["index", "corpus.jsonl", "-o", "idx"],
        "index.threds",
    );
    refused(
        "[retrieve]\nretriever = \"rrf(bm25\"\n",
        &["retrieve", "b", "--index", "idx", "-o", "run.trec"],
        "retrieve.retriever",
    );
    refused(
        "[stats]\nresamples = \"many\"\n",
        &["stats", "b", "--realism"],
        "stats.resamples",
    );
    // each section is listed by `mtr config show` with where its values came from
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mtr.toml"), "[retrieve]\nk = 10\n").unwrap();
    let out = mtr(dir.path())
        .args(["config", "show"])
        .env("MTR_INDEX__MEMORY_MB", "256")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    for section in ["\n[index]\n", "\n[retrieve]\n", "\n[stats]\n"] {
        assert!(shown.contains(section), "{section}: {shown}");
    }
    assert!(shown.contains("k = 10  # file\n"), "{shown}");
    assert!(
        shown.contains("memory_mb = 256  # env MTR_INDEX__MEMORY_MB\n"),
        "{shown}"
    );
    assert!(
        shown.contains("retriever = \"bm25\"  # default\n"),
        "{shown}"
    );
    assert!(shown.contains("resamples = 1000  # default\n"), "{shown}");
}

#[test]
fn the_local_servers_variables_are_listed_by_config_show_and_a_bad_one_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mtr.toml"),
        "[llm.local]\nkeep_alive = \"10m\"\n",
    )
    .unwrap();
    let out = mtr(dir.path())
        .args(["config", "show"])
        .env("MTR_KEEP_ALIVE", "2m")
        .env("MTR_LOCAL_CORES", "1")
        .env("MTR_LOCAL_MODEL", "smollm2")
        .env("MTR_LOCAL_USE_SERVER", "judge")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    // the variable beats the file, and says so
    assert!(
        shown.contains("keep_alive = \"2m\"  # env MTR_KEEP_ALIVE\n"),
        "{shown}"
    );
    assert!(
        shown.contains("cores = 1  # env MTR_LOCAL_CORES\n"),
        "{shown}"
    );
    assert!(
        shown.contains("model = \"smollm2\"  # env MTR_LOCAL_MODEL\n"),
        "{shown}"
    );
    assert!(
        shown.contains("use_server = \"judge\"  # env MTR_LOCAL_USE_SERVER\n"),
        "{shown}"
    );
    // a bad value exits 2 naming the variable and the key, not the file, in a command that
    // reads `[llm]` (here a dry run, before any work)
    let out = mtr(dir.path())
        .args(["local", "ask", "--dry-run", "q"])
        .env("MTR_LOCAL_CORES", "many")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("MTR_LOCAL_CORES"), "{err}");
    assert!(err.contains("llm.local.cores"), "{err}");
    assert!(!err.contains("mtr.toml"), "{err}");
}
