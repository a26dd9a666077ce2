//! Logging and progress display. On a terminal, long jobs show an indicatif bar with done/total,
//! rate, tokens, cost and ETA (a counter with the elapsed time when the total is not known, never
//! `0/0`); elsewhere (CI, pipes) they log a plain line every few seconds at `-v`. By default a
//! command prints its result on stdout and only warnings and errors on stderr. Log lines
//! written while a bar shows go above it ([`AboveBars`]), never through it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use mtr_core::progress::Progress;
use tracing_subscriber::EnvFilter;

use crate::cli::{GlobalArgs, LogFormat};

pub fn init_logging(g: &GlobalArgs) -> anyhow::Result<()> {
    let level = if g.quiet {
        "error"
    } else {
        match g.verbose {
            0 => "warn",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }
    };
    // async-openai logs every unparsable response body whole at ERROR, before mtr's retry
    // loop has even seen it: a run that recovered would show raw bodies as errors. mtr logs
    // the attempt itself (debug, body cut to 200 characters) and the final failure (warn).
    let level = format!("{level},async_openai::error=off");
    let filter = EnvFilter::try_from_env("MTR_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // every log line passes the redactor (no configured key or URL password is logged),
        // then goes to stderr above the progress bar, if one shows
        .with_writer(|| mtr_llm::redact::RedactingWriter(AboveBars::stderr()))
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_target(false);
    let res = match g.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    res.map_err(|e| anyhow::anyhow!("{e}"))
}

/// The progress bars on stderr: [`TermProgress`] adds its bar here, and the log writer lifts
/// them out of the way of every line. Drawn only on a terminal.
static BARS: LazyLock<MultiProgress> = LazyLock::new(MultiProgress::new);

/// Writes to `out` with the progress bars cleared for the time of the write and drawn again
/// below it, so a log line lands above the bars instead of through them. Where the bars are
/// not drawn (no terminal, `--quiet`) the bytes pass through unchanged.
pub struct AboveBars<W> {
    bars: MultiProgress,
    out: W,
}

impl AboveBars<std::io::Stderr> {
    fn stderr() -> Self {
        Self {
            bars: BARS.clone(),
            out: std::io::stderr(),
        }
    }
}

impl<W: Write> Write for AboveBars<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let out = &mut self.out;
        self.bars.suspend(|| out.write(buf))
    }
    /// One suspension for the whole line (the fmt layer writes each event in one call).
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let out = &mut self.out;
        self.bars.suspend(|| out.write_all(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Whether stderr gets ANSI colours: on a terminal, unless `NO_COLOR` is set to a non-empty
/// value (no-color.org). The progress bar's templates use no colour at all.
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The bar's template: done/total and ETA when the total is known; else a spinner with the
/// count and the elapsed time (a bar at `0/0` would say nothing of a stage of unknown length).
fn bar_template(total: u64) -> &'static str {
    if total == 0 {
        "{prefix:>12} {spinner} {pos} done {per_sec} {msg} {elapsed}"
    } else {
        "{prefix:>12} [{bar:30}] {pos}/{len} {per_sec} {msg} ETA {eta}"
    }
}

fn bar_style(total: u64) -> ProgressStyle {
    ProgressStyle::with_template(bar_template(total))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// Progress shown as a bar on a terminal, as log lines otherwise.
pub struct TermProgress {
    bar: Option<ProgressBar>,
    state: Mutex<State>,
    done: AtomicU64,
    total: AtomicU64,
    quiet: bool,
}

struct State {
    stage: String,
    started: Instant,
    last_log: Instant,
    tokens: u64,
    cost: f64,
}

impl TermProgress {
    pub fn new(quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal() && !quiet;
        let bar = tty.then(|| {
            let b = BARS.add(ProgressBar::new(0));
            b.set_style(bar_style(0));
            b
        });
        Self {
            bar,
            state: Mutex::new(State {
                stage: String::new(),
                started: Instant::now(),
                last_log: Instant::now(),
                tokens: 0,
                cost: 0.0,
            }),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            quiet,
        }
    }

    fn log_line(&self, force: bool) {
        if self.bar.is_some() || self.quiet {
            return;
        }
        let Ok(mut s) = self.state.lock() else { return };
        if !force && s.last_log.elapsed() < Duration::from_secs(5) {
            return;
        }
        s.last_log = Instant::now();
        let done = self.done.load(Ordering::Relaxed);
        let total = self.total.load(Ordering::Relaxed);
        let secs = s.started.elapsed().as_secs_f64().max(1e-9);
        let rate = done as f64 / secs;
        let eta = if rate > 0.0 && total > done {
            format!("{:.0}s", (total - done) as f64 / rate)
        } else {
            "-".into()
        };
        if s.tokens > 0 || s.cost > 0.0 {
            tracing::info!(
                "{}: {done}/{total} ({rate:.1}/s, {} tokens, ${:.4}, ETA {eta})",
                s.stage,
                s.tokens,
                s.cost
            );
        } else {
            if total == 0 {
                tracing::info!("{}: {done} done ({rate:.1}/s)", s.stage);
            } else {
                tracing::info!("{}: {done}/{total} ({rate:.1}/s, ETA {eta})", s.stage);
            }
        }
    }
}

impl Progress for TermProgress {
    fn stage(&self, name: &str, total: u64) {
        if let Ok(mut s) = self.state.lock() {
            s.stage = name.to_string();
            s.started = Instant::now();
            s.last_log = Instant::now();
            s.tokens = 0;
            s.cost = 0.0;
        }
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        if let Some(b) = &self.bar {
            b.reset();
            b.set_style(bar_style(total));
            b.set_length(total);
            b.set_position(0);
            b.set_prefix(name.to_string());
            b.set_message("");
        } else if !self.quiet && total > 0 {
            tracing::info!("{name}: {total} items");
        }
    }
    fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
        if let Some(b) = &self.bar {
            b.inc(n);
        }
        self.log_line(false);
    }
    fn usage(&self, tokens: u64, cost_usd: f64) {
        let (t, c) = match self.state.lock() {
            Ok(mut s) => {
                s.tokens += tokens;
                s.cost += cost_usd;
                (s.tokens, s.cost)
            }
            Err(_) => return,
        };
        if let Some(b) = &self.bar {
            b.set_message(format!("{t} tok ${c:.4}"));
        }
    }
    fn finish_stage(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        if self.done.load(Ordering::Relaxed) > 0 {
            self.log_line(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_turns_colours_off_unless_empty() {
        assert!(colour(true, None));
        assert!(!colour(true, Some("1".into())));
        assert!(
            colour(true, Some("".into())),
            "an empty NO_COLOR counts as unset"
        );
        assert!(!colour(false, None));
    }

    /// An in-memory terminal as a log sink.
    struct Screen(indicatif::InMemoryTerm);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            use indicatif::TermLike as _;
            let text = String::from_utf8_lossy(buf);
            self.0.write_line(text.trim_end_matches('\n'))?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_log_line_lands_above_the_bar() {
        let term = indicatif::InMemoryTerm::new(6, 100);
        let target = indicatif::ProgressDrawTarget::term_like(Box::new(term.clone()));
        let bars = MultiProgress::with_draw_target(target);
        let bar = bars.add(ProgressBar::new(10));
        bar.set_style(bar_style(10));
        bar.set_prefix("judging");
        bar.set_position(3);
        bar.tick();
        assert!(term.contents().contains("3/10"), "{}", term.contents());
        let mut log = AboveBars {
            bars: bars.clone(),
            out: Screen(term.clone()),
        };
        log.write_all(b" WARN endpoint slow, retrying\n").unwrap();
        let screen = term.contents();
        let lines: Vec<&str> = screen.lines().collect();
        assert_eq!(lines[0], " WARN endpoint slow, retrying", "{screen}");
        assert!(
            lines[1].contains("judging") && lines[1].contains("3/10"),
            "{screen}"
        );
    }

    #[test]
    fn without_a_terminal_log_lines_pass_unchanged() {
        let bars = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let _bar = bars.add(ProgressBar::new(10));
        let mut log = AboveBars {
            bars,
            out: Vec::new(),
        };
        let line = b"2026-12-05T05:00:00Z  INFO judge: 3/10 (1.0/s, ETA 7s)\n";
        log.write_all(line).unwrap();
        assert_eq!(log.out, line);
    }

    #[test]
    fn a_stage_of_unknown_length_shows_no_total() {
        assert!(!bar_template(0).contains("{len}"));
        assert!(bar_template(9_503).contains("{pos}/{len}"));
        // both templates parse
        for t in [0, 1] {
            assert!(ProgressStyle::with_template(bar_template(t)).is_ok());
        }
    }
}
