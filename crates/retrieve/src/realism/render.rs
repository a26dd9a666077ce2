//! The realism tables in Markdown: one column per benchmark (`--compare` puts a second one
//! beside the first), one table per language, then the length histogram. Every value carries
//! its interval over dialogues.

use std::fmt::Write as _;

use mtr_metrics::stats::ConfidenceInterval;

use super::{LanguageRealism, Realism, Share};

fn num(x: f64, digits: usize) -> String {
    if x.is_nan() {
        "n/a".into()
    } else {
        format!("{x:.digits$}")
    }
}

fn ci(c: &ConfidenceInterval, digits: usize) -> String {
    if c.estimate.is_nan() {
        return "n/a".into();
    }
    format!(
        "{} [{}, {}]",
        num(c.estimate, digits),
        num(c.lower, digits),
        num(c.upper, digits)
    )
}

fn signed(c: &ConfidenceInterval) -> String {
    if c.estimate.is_nan() {
        return "n/a".into();
    }
    format!("{:+.3} [{:+.3}, {:+.3}]", c.estimate, c.lower, c.upper)
}

fn pct(c: &ConfidenceInterval) -> String {
    if c.estimate.is_nan() {
        return "n/a".into();
    }
    format!(
        "{:.1}% [{:.1}, {:.1}]",
        100.0 * c.estimate,
        100.0 * c.lower,
        100.0 * c.upper
    )
}

fn share(s: &Share) -> String {
    format!("{} ({} of {})", pct(&s.share), s.count, s.of)
}

type Row = (String, Box<dyn Fn(&LanguageRealism) -> String>);

fn rows(unit: &str) -> Vec<Row> {
    let gap = |f: fn(&super::HistoryGap) -> String| -> Box<dyn Fn(&LanguageRealism) -> String> {
        Box::new(move |l: &LanguageRealism| l.history_gap.as_ref().map_or("n/a".into(), f))
    };
    vec![
        (
            "dialogues / turns".into(),
            Box::new(|l| format!("{} / {}", l.dialogues, l.turns)),
        ),
        (
            format!("question length ({unit}): median"),
            Box::new(|l| ci(&l.length.median, 1)),
        ),
        (
            "question length: quartiles".into(),
            Box::new(|l| {
                format!(
                    "{} - {}",
                    num(l.length.q1.estimate, 1),
                    num(l.length.q3.estimate, 1)
                )
            }),
        ),
        (
            "question length: mean".into(),
            Box::new(|l| ci(&l.length.mean, 1)),
        ),
        (
            "history gap (recall@10 whole - alone)".into(),
            gap(|g| signed(&g.gap)),
        ),
        (
            "recall@10, question alone".into(),
            gap(|g| ci(&g.recall_alone, 3)),
        ),
        (
            "recall@10, made whole".into(),
            gap(|g| ci(&g.recall_whole, 3)),
        ),
        (
            "judged turns (made whole by rewrite)".into(),
            gap(|g| format!("{} ({})", g.turns, g.with_rewrite)),
        ),
        (
            "follow-ups referring back".into(),
            Box::new(|l| share(&l.referring_back)),
        ),
        (
            "turns switching topic".into(),
            Box::new(|l| {
                format!(
                    "{} ({})",
                    share(&l.topic_switch.share),
                    l.topic_switch.source
                )
            }),
        ),
    ]
}

/// The tables of one or more benchmarks, side by side, language by language.
pub fn render(benchmarks: &[&Realism]) -> String {
    let mut o = String::new();
    let mut languages: Vec<&str> = Vec::new();
    for b in benchmarks {
        for l in &b.languages {
            if !languages.contains(&l.language.as_str()) {
                languages.push(&l.language);
            }
        }
    }
    let head = |o: &mut String, first: &str| {
        let _ = write!(o, "| {first} |");
        for b in benchmarks {
            let _ = write!(o, " {} |", b.name);
        }
        let _ = write!(o, "\n|---|");
        for _ in benchmarks {
            let _ = write!(o, "---|");
        }
        o.push('\n');
    };
    for lang in languages {
        let of: Vec<Option<&LanguageRealism>> = benchmarks
            .iter()
            .map(|b| b.languages.iter().find(|l| l.language == lang))
            .collect();
        let Some(unit) = of.iter().flatten().next().map(|l| l.length.unit) else {
            continue;
        };
        let _ = writeln!(o, "### Language `{lang}`\n");
        head(&mut o, "measure");
        for (label, cell) in rows(unit.name()) {
            let _ = write!(o, "| {label} |");
            for l in &of {
                let _ = write!(o, " {} |", l.map_or("-".into(), &cell));
            }
            o.push('\n');
        }
        let _ = writeln!(
            o,
            "\nQuestion length histogram ({}, share of questions):\n",
            unit.name()
        );
        head(&mut o, unit.name());
        for (i, &(lo, hi)) in unit.bins().iter().enumerate() {
            let label = if hi == usize::MAX {
                format!("{lo}+")
            } else {
                format!("{lo}-{hi}")
            };
            let _ = write!(o, "| {label} |");
            for l in &of {
                let cell = l
                    .and_then(|l| l.length.histogram.get(i))
                    .map_or("-".into(), |b| format!("{:.1}%", 100.0 * b.share));
                let _ = write!(o, " {cell} |");
            }
            o.push('\n');
        }
        o.push('\n');
    }
    if let Some(b) = benchmarks.first() {
        let _ = writeln!(
            o,
            "Intervals: {:.0}% cluster bootstrap over dialogues, {} resamples, seed {}.",
            100.0 * b.level,
            b.resamples,
            b.seed
        );
    }
    o
}
