//! The Markdown report of a bench result: the table a reviewer reads first (systems ranked by
//! the main measure with 95% intervals; with `--fill-holes K`, Judged@K and each measure with
//! the holes filled beside it), then significance against the baseline,
//! discriminative power, strata, turn depth, the metric-combination diagnosis, failure
//! analysis with examples, fusion ablation, warnings, and the fingerprint and conventions that
//! make the numbers reproducible.

use std::fmt::Write;

use crate::result::{BenchResult, SystemResult};
use crate::stats::bootstrap::Estimate;

/// ▲/▼ when the system is significantly better/worse than the baseline (Holm), else nothing.
pub(crate) fn significance_mark(r: &BenchResult, system: &str) -> &'static str {
    r.tests
        .as_ref()
        .and_then(|t| t.comparisons.iter().find(|c| c.system == system))
        .map_or("", |c| match (c.significant, c.diff > 0.0) {
            (true, true) => " ▲",
            (true, false) => " ▼",
            _ => "",
        })
}

/// A measure's cell: its mean (with the interval for the main measure), or "n/a (depth N)"
/// when the measure is deeper than the run; the main measure then carries a dagger.
pub(crate) fn measure_cell(s: &SystemResult, id: &str, main: bool) -> String {
    match s.measures.get(id) {
        Some(e) if main => {
            let dagger = if s.beyond_depth.contains_key(id) {
                format!(" † (depth {})", s.depth)
            } else {
                String::new()
            };
            format!("{}{dagger}", est(e))
        }
        Some(e) => format!("{:.4}", e.mean),
        None if s.beyond_depth.contains_key(id) => crate::depth::not_available(s.depth),
        None => "–".into(),
    }
}

fn est(e: &Estimate) -> String {
    if e.mean.is_nan() {
        "–".into()
    } else {
        format!("{:.4} [{:.3}, {:.3}]", e.mean, e.ci_low, e.ci_high)
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// Systems ordered by the main measure, best first (ties by name).
pub(crate) fn ranked_systems(r: &BenchResult) -> Vec<&SystemResult> {
    let mut v: Vec<&SystemResult> = r.systems.iter().collect();
    let main = |s: &SystemResult| {
        s.measures
            .get(&r.main_measure)
            .map_or(f64::NEG_INFINITY, |e| e.mean)
    };
    v.sort_by(|a, b| main(b).total_cmp(&main(a)).then(a.name.cmp(&b.name)));
    v
}

/// Renders the whole report.
pub fn markdown(r: &BenchResult) -> String {
    let mut o = String::new();
    let systems = ranked_systems(r);
    title(&mut o, r);
    leaderboard(&mut o, r, &systems);
    tests(&mut o, r);
    pairwise(&mut o, r, &systems);
    discriminative_power(&mut o, r);
    strata(&mut o, r, &systems);
    by_position(&mut o, r, &systems);
    diagnosis(&mut o, &systems);
    failures(&mut o, r, &systems);
    ablation(&mut o, r);
    label_sensitivity(&mut o, r);
    reproducibility(&mut o, r);
    o
}

/// The label of measure `id` (`nDCG@10`), or the id itself.
fn label_of(r: &BenchResult, id: &str) -> String {
    r.measures
        .iter()
        .find(|m| m.id == id)
        .map_or(id.to_string(), |m| m.label.clone())
}

/// The title, what was scored, the split and the warnings.
fn title(o: &mut String, r: &BenchResult) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    let b = &r.benchmark;
    let _ = writeln!(o, "# Bench: {} ({})\n", b.name, r.date);
    let _ = writeln!(
        o,
        "{} scored turns in {} dialogues (of {} turns, {} dialogues; {} turns without relevant passages not scored). Main measure: **{main_label}**. Intervals: {:.0}% cluster bootstrap over dialogues, {} resamples.\n",
        b.scored_queries,
        b.scored_dialogues,
        b.turns,
        b.dialogues,
        b.skipped_without_relevant,
        r.conventions.bootstrap.level * 100.0,
        r.conventions.bootstrap.resamples
    );
    if let Some(s) = &r.split {
        let _ = writeln!(
            o,
            "Split: `{}` part of a seeded {:.0}/{:.0} dev/test split by dialogue (seed {}, {} dev / {} test dialogues).\n",
            s.part,
            s.ratio * 100.0,
            (1.0 - s.ratio) * 100.0,
            s.seed,
            s.dev_dialogues,
            s.test_dialogues
        );
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(o, "## Warnings\n");
        for w in &r.warnings {
            let _ = writeln!(o, "- {w}");
        }
        o.push('\n');
    }
}

/// Systems ranked by the main measure, every reported measure with its interval.
fn leaderboard(o: &mut String, r: &BenchResult, systems: &[&SystemResult]) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    let _ = writeln!(o, "## Leaderboard\n");
    let _ = writeln!(
        o,
        "▲/▼: significantly better/worse than the baseline (paired randomization, Holm, α = {}). n/a (depth N): the measure is deeper than the run's N documents per turn (not comparable with deeper runs); †: the main measure is deeper than the run.\n",
        r.conventions.tests.alpha
    );
    let others: Vec<_> = r
        .measures
        .iter()
        .filter(|m| m.id != r.main_measure)
        .collect();
    let holes = r.holes.as_ref();
    leaderboard_head(o, r, &main_label, &others);
    for (i, s) in systems.iter().enumerate() {
        let kind = match (&s.retriever, &s.formulation) {
            (Some(ret), Some(f)) => format!("{ret} / {f}"),
            _ => "external".into(),
        };
        let _ = write!(
            o,
            "| {} | {} | {} | {} |{} {}{} |{}",
            i + 1,
            cell(&s.name),
            cell(&kind),
            if s.depth == 0 {
                "–".to_string()
            } else {
                s.depth.to_string()
            },
            holes.map_or(String::new(), |_| format!(
                " {} |",
                crate::holes::report_cells::judged_cell(s.holes.as_ref())
            )),
            measure_cell(s, &r.main_measure, true),
            significance_mark(r, &s.name),
            holes.map_or(String::new(), |_| format!(
                " {} |",
                crate::holes::report_cells::filled_cell(s.holes.as_ref(), &r.main_measure, true)
            )),
        );
        for m in &others {
            let _ = write!(o, " {} |", measure_cell(s, &m.id, false));
            if holes.is_some() {
                let _ = write!(
                    o,
                    " {} |",
                    crate::holes::report_cells::filled_cell(s.holes.as_ref(), &m.id, false)
                );
            }
        }
        let _ = writeln!(
            o,
            " {} |",
            if s.out_of_corpus == 0 {
                "0".to_string()
            } else {
                format!("{} ({} ids)", s.out_of_corpus, s.out_of_corpus_distinct)
            }
        );
    }
    o.push('\n');
}

/// The leaderboard table's header and rule (with holes filled: Judged@K after the depth, and
/// each measure followed by its filled value).
fn leaderboard_head(
    o: &mut String,
    r: &BenchResult,
    main_label: &str,
    others: &[&crate::result::MeasureInfo],
) {
    let holes = r.holes.as_ref();
    if let Some(h) = holes {
        let _ = writeln!(
            o,
            "{}\n",
            crate::holes::report_cells::explanation(h, main_label)
        );
    }
    let filled = |l: &str| holes.map_or(String::new(), |_| format!(" {l} filled |"));
    let _ = write!(
        o,
        "| # | system | kind | depth |{} {main_label} |{}",
        holes.map_or(String::new(), |h| format!(" Judged@{} |", h.depth)),
        filled(main_label)
    );
    for m in others {
        let _ = write!(o, " {} |{}", m.label, filled(&m.label));
    }
    o.push_str(" not in corpus |\n");
    let per_measure = if holes.is_some() { 2 } else { 1 };
    let _ = write!(
        o,
        "|---|---|---|---|{}",
        "---|".repeat(per_measure + usize::from(holes.is_some()))
    );
    for _ in others {
        o.push_str(&"---|".repeat(per_measure));
    }
    o.push_str("---|\n");
}

/// Paired tests of every system against the baseline.
fn tests(o: &mut String, r: &BenchResult) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    if let Some(t) = &r.tests {
        let _ = writeln!(
            o,
            "## Significance against the baseline `{}` ({})\n",
            t.baseline,
            label(&t.measure)
        );
        let _ = writeln!(
            o,
            "Paired randomization test, {} sign-flip permutations, two-sided; Holm-corrected over {} comparisons; α = {}.\n",
            r.conventions.tests.permutations,
            t.comparisons.len(),
            r.conventions.tests.alpha
        );
        let _ = writeln!(
            o,
            "| system | {main_label} | Δ | Δ% | d_z | p | p (Holm) | significant |\n|---|---|---|---|---|---|---|---|"
        );
        for c in &t.comparisons {
            let _ = writeln!(
                o,
                "| {} | {:.4} | {:+.4} | {} | {:.2} | {} | {} | {} |",
                cell(&c.system),
                c.mean,
                c.diff,
                c.rel_diff
                    .map_or("–".into(), |x| format!("{:+.1}%", x * 100.0)),
                c.effect_size,
                p_value(c.p),
                p_value(c.p_holm),
                if c.significant { "yes" } else { "no" }
            );
        }
        o.push('\n');
    }
}

/// Every pair of systems, Holm-corrected over all pairs.
fn pairwise(o: &mut String, r: &BenchResult, systems: &[&SystemResult]) {
    let label = |id: &str| label_of(r, id);
    if let Some(pw) = &r.pairwise {
        let _ = writeln!(o, "## Pairwise significance ({})\n", label(&pw.measure));
        let _ = writeln!(
            o,
            "Every pair, row minus column: difference of means, ▲/▼ when significant after Holm over all {} pairs (α = {}), and wins/ties/losses of the row over the column on scored turns.\n",
            pw.pairs.len(),
            pw.alpha
        );
        let _ = write!(o, "| |");
        for s in systems {
            let _ = write!(o, " {} |", cell(&s.name));
        }
        o.push('\n');
        o.push_str("|---|");
        for _ in systems {
            o.push_str("---|");
        }
        o.push('\n');
        for a in systems {
            let _ = write!(o, "| **{}** |", cell(&a.name));
            for b in systems {
                let c = if a.name == b.name {
                    "–".to_string()
                } else {
                    pair_cell(pw, &a.name, &b.name)
                };
                let _ = write!(o, " {c} |");
            }
            o.push('\n');
        }
        o.push('\n');
    }
}

/// How many pairs of systems the benchmark separates.
fn discriminative_power(o: &mut String, r: &BenchResult) {
    let label = |id: &str| label_of(r, id);
    if let Some(d) = &r.discriminative_power {
        let _ = writeln!(o, "## Discriminative power ({})\n", label(&d.measure));
        let _ = writeln!(
            o,
            "{} of {} system pairs ({:.1}%) are separated at p < {} ({} = {:.1}% after Holm over all pairs). Spread of {}: {:.4} – {:.4} (range {:.4}, sd {:.4}).\n",
            d.separated,
            d.pairs,
            d.share * 100.0,
            d.alpha,
            d.separated_holm,
            d.share_holm * 100.0,
            label(&d.measure),
            d.min,
            d.max,
            d.range,
            d.sd
        );
        let _ = writeln!(o, "{}\n", compared_systems(r));
    }
}

/// The systems a discriminative power was measured over: the share of separated pairs of a
/// synthesized set and of a real one compare only under the same systems (same retrievers and
/// query formulations), so the report and the summary name them.
pub(crate) fn compared_systems(r: &BenchResult) -> String {
    let mut names: Vec<&str> = r.systems.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    format!(
        "Over {} systems: {} (compare this share with another benchmark's only under the same systems).",
        names.len(),
        names.join(", ")
    )
}

/// The main measure per group of each stratification.
fn strata(o: &mut String, r: &BenchResult, systems: &[&SystemResult]) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    let _ = writeln!(o, "## Strata ({main_label})\n");
    for f in &r.strata {
        let _ = writeln!(o, "### {}\n", f.name);
        let _ = write!(o, "| system |");
        for g in &f.groups {
            let _ = write!(
                o,
                " {} (n={}{}) |",
                cell(&g.name),
                g.n,
                if g.small {
                    format!(", <{}: read with care", r.min_stratum_turns)
                } else {
                    String::new()
                }
            );
        }
        o.push('\n');
        o.push_str("|---|");
        for _ in &f.groups {
            o.push_str("---|");
        }
        o.push('\n');
        for s in systems {
            let _ = write!(o, "| {} |", cell(&s.name));
            for g in &f.groups {
                let v = s
                    .strata
                    .get(&f.name)
                    .and_then(|fam| fam.get(&g.name))
                    .and_then(|m| m.get(&r.main_measure));
                let _ = write!(o, " {} |", v.map_or("–".into(), est));
            }
            o.push('\n');
        }
        o.push('\n');
    }
}

/// The main measure by turn position.
fn by_position(o: &mut String, r: &BenchResult, systems: &[&SystemResult]) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    if let Some(first) = systems.first() {
        if !first.by_position.is_empty() {
            let _ = writeln!(o, "## By turn position ({main_label})\n");
            let _ = write!(o, "| system |");
            for p in &first.by_position {
                let _ = write!(
                    o,
                    " {}{} (n={}) |",
                    p.position,
                    if p.and_deeper { "+" } else { "" },
                    p.n
                );
            }
            o.push('\n');
            o.push_str("|---|");
            for _ in &first.by_position {
                o.push_str("---|");
            }
            o.push('\n');
            for s in systems {
                let _ = write!(o, "| {} |", cell(&s.name));
                for p in &s.by_position {
                    let _ = write!(o, " {:.4} |", p.estimate.mean);
                }
                o.push('\n');
            }
            o.push('\n');
        }
    }
}

/// Metric combinations per system.
fn diagnosis(o: &mut String, systems: &[&SystemResult]) {
    let _ = writeln!(o, "## Diagnosis: metric combinations\n");
    let k = systems.first().map_or(10, |s| s.diagnosis.k);
    let _ = writeln!(
        o,
        "| system | Hit@{k} | MRR@{k} | Recall@{k} | nDCG@{k} | findings |\n|---|---|---|---|---|---|"
    );
    for s in systems {
        let d = &s.diagnosis;
        let f: Vec<String> = d.findings.iter().map(|f| f.message.clone()).collect();
        let _ = writeln!(
            o,
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {} |",
            cell(&s.name),
            d.hit,
            d.mrr,
            d.recall,
            d.ndcg,
            if f.is_empty() {
                "–".into()
            } else {
                cell(&f.join("; "))
            }
        );
    }
    o.push('\n');
}

/// Recall and ranking failures with the worst turns.
fn failures(o: &mut String, r: &BenchResult, systems: &[&SystemResult]) {
    let label = |id: &str| label_of(r, id);
    let main_label = label(&r.main_measure);
    let _ = writeln!(o, "## Failure analysis\n");
    if let Some(f) = systems.first().map(|s| &s.failures) {
        let _ = writeln!(
            o,
            "Recall failure: no relevant passage in the top {}. Ranking failure: the first relevant passage is in the top {} but below rank {}.\n",
            f.k, f.k, f.r
        );
    }
    let _ = writeln!(
        o,
        "| system | recall failures | ranking failures | scored |\n|---|---|---|---|"
    );
    for s in systems {
        let f = &s.failures;
        let pct = |n: usize| {
            if f.scored == 0 {
                0.0
            } else {
                n as f64 * 100.0 / f.scored as f64
            }
        };
        let _ = writeln!(
            o,
            "| {} | {} ({:.1}%) | {} ({:.1}%) | {} |",
            cell(&s.name),
            f.recall_failures,
            pct(f.recall_failures),
            f.ranking_failures,
            pct(f.ranking_failures),
            f.scored
        );
    }
    o.push('\n');
    for s in systems {
        if s.failures.examples.is_empty() {
            continue;
        }
        let _ = writeln!(o, "<details><summary>Worst turns of {}</summary>\n", s.name);
        for e in &s.failures.examples {
            let _ = writeln!(
                o,
                "**{}** (dialogue {}, turn {}): {} failure, {main_label} {:.3}, first relevant at {}",
                e.qid,
                e.dialogue,
                e.position,
                e.kind,
                e.main_value,
                e.first_relevant
                    .map_or("none".into(), |r| format!("rank {r}"))
            );
            let _ = writeln!(o, "\n- question: {}", cell(&e.question));
            if let Some(rw) = &e.rewrite {
                let _ = writeln!(o, "- rewrite: {}", cell(rw));
            }
            if let Some(q) = &e.query {
                let _ = writeln!(o, "- query used: {}", cell(q));
            }
            for g in &e.gold {
                let _ = writeln!(
                    o,
                    "- gold `{}` (grade {}, {}): {} — {}",
                    g.id,
                    g.grade,
                    g.rank
                        .map_or("not retrieved".into(), |r| format!("rank {r}")),
                    cell(&g.title),
                    cell(&g.text)
                );
            }
            for t in &e.top {
                let _ = writeln!(
                    o,
                    "- #{} `{}` (score {:.4}{}): {} — {}",
                    t.rank.unwrap_or(0),
                    t.id,
                    t.score.unwrap_or(0.0),
                    if t.grade > 0 {
                        format!(", relevant grade {}", t.grade)
                    } else {
                        String::new()
                    },
                    cell(&t.title),
                    cell(&t.text)
                );
            }
            o.push('\n');
        }
        let _ = writeln!(o, "</details>\n");
    }
}

/// What each component of a fusion adds.
fn ablation(o: &mut String, r: &BenchResult) {
    let label = |id: &str| label_of(r, id);
    if !r.ablation.is_empty() {
        let _ = writeln!(o, "## Fusion ablation\n");
        for a in &r.ablation {
            let _ = writeln!(
                o,
                "`{}`: {} {:.4} with every component.\n",
                a.system,
                label(&a.measure),
                a.full
            );
            let _ = writeln!(
                o,
                "| without | {} | contribution | p |\n|---|---|---|---|",
                label(&a.measure)
            );
            for c in &a.components {
                let _ = writeln!(
                    o,
                    "| {} | {:.4} | {:+.4} | {} |",
                    cell(&c.component),
                    c.without,
                    c.contribution,
                    p_value(c.p)
                );
            }
            o.push('\n');
        }
    }
}

/// The leaderboard under the qrels an audit supports.
fn label_sensitivity(o: &mut String, r: &BenchResult) {
    if let Some(ls) = &r.label_sensitivity {
        o.push_str(&crate::sensitivity_report::markdown(ls));
    }
}

/// Fingerprints and the conventions behind every number.
fn reproducibility(o: &mut String, r: &BenchResult) {
    let _ = writeln!(o, "## Reproducibility\n");
    let fp = &r.fingerprint;
    let _ = writeln!(o, "- benchmark data: `{}`", fp.data);
    let _ = writeln!(o, "- bench configuration: `{}`", fp.config);
    let _ = writeln!(o, "- prompts: `{}`", fp.prompts);
    let _ = writeln!(
        o,
        "- mtr {}{}",
        fp.tool_version,
        fp.git_commit
            .as_ref()
            .map_or(String::new(), |c| format!(" (commit {c})"))
    );
    for s in &r.systems {
        let _ = writeln!(
            o,
            "- system `{}`: config `{}`{}",
            s.name,
            s.config_hash,
            s.source
                .as_ref()
                .map_or(String::new(), |p| format!(", file `{p}`"))
        );
    }
    let _ = writeln!(o, "\n### Conventions\n");
    for c in &r.conventions.scoring {
        let _ = writeln!(o, "- {c}");
    }
    for (id, c) in &r.conventions.measures {
        let _ = writeln!(o, "- `{id}`: {c}");
    }
    let _ = writeln!(
        o,
        "- bootstrap: {} (unit: {}, seed {})",
        r.conventions.bootstrap.method, r.conventions.bootstrap.unit, r.conventions.bootstrap.seed
    );
    let _ = writeln!(
        o,
        "- tests: {} (seed {}); correction: {}",
        r.conventions.tests.method, r.conventions.tests.seed, r.conventions.tests.correction
    );
}

/// One cell of the pairwise matrix, row `a` against column `b`.
fn pair_cell(pw: &crate::result::Pairwise, a: &str, b: &str) -> String {
    let found = pw.pairs.iter().find_map(|p| {
        if p.a == a && p.b == b {
            Some((p.diff, p.p_holm, p.significant, p.wins, p.ties, p.losses))
        } else if p.a == b && p.b == a {
            Some((-p.diff, p.p_holm, p.significant, p.losses, p.ties, p.wins))
        } else {
            None
        }
    });
    match found {
        Some((diff, p_holm, sig, w, t, l)) => format!(
            "{diff:+.4}{} (p {}; {w}/{t}/{l})",
            match (sig, diff > 0.0) {
                (true, true) => " ▲",
                (true, false) => " ▼",
                _ => "",
            },
            p_value(p_holm)
        ),
        None => "–".into(),
    }
}
