//! `report.md` and `report.html` from a [`Summary`]: score tables with confidence intervals,
//! per-judge means, agreement, what was skipped and what failed, probable missing gold, bias
//! checks (position chart, length correlations, self-preference), human calibration, the
//! worst items with their text, score histograms, and the cost ledger.

pub mod doc;
mod human;
mod reviewed;
pub mod robust;
pub mod svg;

use doc::Block;

use crate::dimension::Dimension;
use crate::items::aggregate::SuggestionVerdict;
use crate::statistics::verdict::Verdict;
use crate::summary::{DimensionSummary, Summary};

fn f(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".into(),
    }
}

fn ci(d: &Option<crate::summary::Interval>, digits: usize) -> String {
    match d {
        Some(i) => format!("[{:.digits$}, {:.digits$}]", i.lower, i.upper),
        None => "-".into(),
    }
}

fn short(s: &str) -> &str {
    mtr_core::fingerprint::short(s)
}

/// Cuts long text at a character boundary, marking the cut.
pub fn excerpt(s: &str, max_chars: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let cut: String = s.chars().take(max_chars).collect();
    format!("{cut} [...]")
}

/// The verdict on the judges: the summary's, or computed for a summary written before it.
pub fn verdict(s: &Summary) -> Verdict {
    s.verdict
        .clone()
        .unwrap_or_else(|| crate::statistics::verdict::of(s))
}

/// The report as blocks (rendered to Markdown and HTML).
pub fn blocks(s: &Summary) -> Vec<Block> {
    let v = verdict(s);
    let mut b = Vec::new();
    b.push(Block::Heading(1, format!("Audit of {}", s.benchmark.name)));
    b.push(Block::Para(v.line.clone()));
    let judges: Vec<String> = s
        .judges
        .iter()
        .map(|j| match j.rating_mode {
            mtr_llm::logprob::RatingMode::Generated => format!("`{}` ({})", j.name, j.model),
            mtr_llm::logprob::RatingMode::Probability => format!(
                "`{}` ({}; ratings read from token probabilities)",
                j.name, j.model
            ),
            mtr_llm::logprob::RatingMode::Relevance => format!(
                "`{}` ({}; relevance scores, alignment and discriminability only)",
                j.name, j.model
            ),
        })
        .collect();
    let mut intro = format!(
        "{} of {} dialogues ({} of {} turns) audited by {} judge{}: {}.",
        s.plan.dialogues_audited,
        s.plan.dialogues_total,
        s.plan.turns_audited,
        s.plan.turns_total,
        s.judges.len(),
        if s.judges.len() == 1 { "" } else { "s" },
        judges.join(", ")
    );
    if s.plan.sampled {
        intro.push_str(&format!(" Seeded sample (seed {}); the confidence intervals include the sampling error over dialogues.", s.settings.seed));
    }
    b.push(Block::Para(intro));
    if !s.complete {
        b.push(Block::Para(format!(
            "**Incomplete audit**: {} ({} of {} judgements done). Run the same command again to resume; finished judgements are not paid again.",
            s.stopped.as_deref().unwrap_or("stopped early"),
            s.plan.judgements_done,
            s.plan.judgements_planned
        )));
    }
    if let Some(t) = &s.time_budget {
        b.push(Block::Para(t.line()));
    }
    b.push(Block::Para(format!(
        "Fingerprint: data `{}`, config `{}`, prompts `{}`, mtr {}{}.",
        short(&s.fingerprint.data),
        short(&s.fingerprint.config),
        short(&s.fingerprint.prompts),
        s.fingerprint.tool_version,
        s.fingerprint
            .git_commit
            .as_ref()
            .map(|c| format!(" ({})", short(c)))
            .unwrap_or_default()
    )));

    scores(&mut b, s, &v);
    if let Some(r) = &s.review {
        reviewed::section(&mut b, r, s.settings.confidence);
    }
    robust::means(&mut b, s);
    skipped(&mut b, s);
    robust::context(&mut b, s);
    missing_gold(&mut b, s, &v);
    bias(&mut b, s);
    if let Some(h) = &s.human {
        human::section(&mut b, h);
    }
    histograms(&mut b, s);
    worst(&mut b, s, &v);
    cost(&mut b, s);
    if !s.warnings.is_empty() {
        b.push(Block::Heading(2, "Warnings".into()));
        b.push(Block::List(s.warnings.clone()));
    }
    b
}

/// ` (chance 0.125)` after a completeness share: what a judge picking at random would get
/// (the mean of 1/P over the judged trials); empty for the other dimensions.
pub(crate) fn chance(s: &Summary, dim: Dimension) -> String {
    match (dim, s.discriminability.as_ref().and_then(|d| d.chance_rate)) {
        (Dimension::Completeness, Some(c)) => format!(" (chance {c:.3})"),
        _ => String::new(),
    }
}

/// What a dimension's flags are when its judges cannot separate anything.
const JUDGES_FAILURE: &str = "the judges' failure, not the benchmark's";

fn scores(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
    b.push(Block::Heading(2, "Scores".into()));
    b.push(Block::Para(format!(
        "Item score = mean over judges. Ratings are 1-5; completeness is the share of (judge x trial) picks that chose the gold out of a pool of the gold and {} hard negatives ({} seeded permutations per judge). Intervals: {:.0}% cluster bootstrap over dialogues ({} resamples).",
        s.settings.negatives,
        s.settings.trials,
        s.settings.confidence * 100.0,
        s.settings.resamples
    )));
    let mut rows = Vec::new();
    for (dim, d) in &s.dimensions {
        rows.push(vec![
            d.title.clone(),
            d.items.to_string(),
            d.scored.to_string(),
            format!("{}{}", f(d.mean, 3), chance(s, *dim)),
            ci(&d.ci, 3),
            if v.fails(*dim) {
                format!("{} (< {}; {JUDGES_FAILURE})", d.flagged, d.flag_threshold)
            } else {
                format!("{} (< {})", d.flagged, d.flag_threshold)
            },
            f(d.agreement.krippendorff_alpha_ordinal, 3),
            if *dim == Dimension::Completeness {
                f(d.agreement.fleiss_kappa, 3)
            } else {
                "-".into()
            },
            v.dimensions
                .get(dim)
                .map_or("-", |x| x.separation.name())
                .to_string(),
        ]);
    }
    b.push(Block::Table {
        head: [
            "Dimension",
            "Items",
            "Scored",
            "Mean",
            "CI",
            "Flagged",
            "Krippendorff α (ordinal)",
            "Fleiss κ (passages picked)",
            "Judges separate",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let judges: Vec<&str> = s.judges.iter().map(|j| j.name.as_str()).collect();
    if !judges.is_empty() {
        let mut head = vec!["Dimension".to_string()];
        head.extend(judges.iter().map(|j| format!("{j} mean (n, failed)")));
        let rows = s
            .dimensions
            .iter()
            .map(|(dim, d)| {
                let mut r = vec![dim.name().to_string()];
                for j in &judges {
                    r.push(match d.per_judge.get(*j) {
                        Some(x) => format!(
                            "{}{} ({}, {})",
                            f(x.mean, 3),
                            chance(s, *dim),
                            x.n,
                            x.failed
                        ),
                        None => "-".into(),
                    });
                }
                r
            })
            .collect();
        b.push(Block::Heading(3, "Per judge".into()));
        b.push(Block::Table { head, rows });
    }
    let notes: Vec<String> = s
        .dimensions
        .iter()
        .filter_map(|(dim, d)| d.agreement.note.as_ref().map(|n| format!("{dim}: {n}")))
        .collect();
    if !notes.is_empty() {
        b.push(Block::List(notes));
    }
    if !s.failures.is_empty() {
        b.push(Block::Heading(3, "Failed judgements".into()));
        b.push(Block::Para("Judgements that stayed unparsable after the LLM layer's retries (or whose call failed) are excluded from every mean, never scored.".into()));
        let rows = s
            .failures
            .iter()
            .flat_map(|(judge, by)| {
                by.iter()
                    .map(move |(dim, n)| vec![judge.clone(), dim.name().to_string(), n.to_string()])
            })
            .collect();
        b.push(Block::Table {
            head: vec!["Judge".into(), "Dimension".into(), "Failed".into()],
            rows,
        });
    }
}

fn skipped(b: &mut Vec<Block>, s: &Summary) {
    let rows: Vec<Vec<String>> = s
        .plan
        .skipped
        .iter()
        .flat_map(|(dim, by)| {
            by.iter().map(move |(why, n)| {
                vec![
                    dim.name().to_string(),
                    why.name().to_string(),
                    n.to_string(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    b.push(Block::Heading(2, "Not audited".into()));
    b.push(Block::Para("Turns without a relevant gold passage or without a reference answer skip the dimensions that need them; `no_gold`, `no_answer` and `unanswerable` count turns, `gold_not_in_corpus` and `no_negatives` count gold passages.".into()));
    b.push(Block::Table {
        head: vec!["Dimension".into(), "Reason".into(), "Count".into()],
        rows,
    });
}

fn verdict_name(v: SuggestionVerdict) -> &'static str {
    match v {
        SuggestionVerdict::ProbableMissingGold => "probable missing gold",
        SuggestionVerdict::NotConfirmed => "not confirmed",
        SuggestionVerdict::Unverified => "unverified",
    }
}

fn missing_gold(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
    b.push(Block::Heading(
        2,
        if v.fails(Dimension::Completeness) {
            format!("Probable missing gold ({JUDGES_FAILURE}: the judges cannot separate)")
        } else {
            "Probable missing gold".into()
        },
    ));
    if let Some(d) = &s.discriminability {
        let abst = |k: &str| d.abstentions.get(k).copied().unwrap_or(0);
        b.push(Block::Para(format!(
            "Discriminability answers: {} valid, {} picks, {} abstentions (\"none answers it\": {}, \"several answer it equally\": {}). Abstentions are counted apart, never as a miss nor as a pick; {} items had a strict majority of \"none\" (flagged), {} items only abstentions (no share). Chance rate of a share: {}. Of {} distinct pool negatives, {} come from the gold's own document.",
            d.answers,
            d.picks,
            abst("none") + abst("several"),
            abst("none"),
            abst("several"),
            d.none_majority_items,
            d.abstained_items,
            f(d.chance_rate, 3),
            d.pool_negatives,
            d.pool_negatives_same_document
        )));
    }
    if s.suggested_qrels.is_empty() {
        b.push(Block::Para(
            "No non-gold passage was picked by a majority of all judge x trial picks.".into(),
        ));
        return;
    }
    let at_least = s.settings.verify_rating_at_least;
    b.push(Block::Para(format!(
        "{} candidates: non-gold passages picked over the gold by a strict majority of all (judge x trial) picks. A forced choice says only that a passage was the best of its pool, so each candidate was rated pointwise by every judge with the alignment prompt; it is a probable missing gold when a strict majority of the judges rate it at least {at_least} of 5. `same_document`: the candidate comes from the gold's own document (overlapping chunks); overlap: Jaccard of word 5-shingles with the gold. All candidates are in `suggested_qrels.tsv` (score > 0 only for probable missing gold), for human review; nothing is added to any qrels.",
        s.suggested_qrels.len()
    )));
    let verdicts = [
        SuggestionVerdict::ProbableMissingGold,
        SuggestionVerdict::NotConfirmed,
        SuggestionVerdict::Unverified,
    ];
    let count = |same: Option<bool>, v: SuggestionVerdict| {
        s.suggested_qrels
            .iter()
            .filter(|x| x.verdict == v && same.is_none_or(|t| x.same_document == t))
            .count()
            .to_string()
    };
    let rows = [
        ("same document as the gold", Some(true)),
        ("other", Some(false)),
        ("all", None),
    ]
    .iter()
    .map(|(name, same)| {
        let mut r = vec![name.to_string()];
        r.extend(verdicts.iter().map(|v| count(*same, *v)));
        r
    })
    .collect();
    let mut head = vec!["Candidates".to_string()];
    head.extend(verdicts.iter().map(|v| verdict_name(*v).to_string()));
    b.push(Block::Table { head, rows });
    let rows = s
        .suggested_qrels
        .iter()
        .take(50)
        .map(|x| {
            vec![
                x.turn_id.clone(),
                x.passage_id.clone(),
                x.gold_passage_id.clone(),
                format!("{}/{}", x.votes, x.picks),
                x.alignment_ratings
                    .iter()
                    .map(|(j, r)| format!("{j} {r}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                verdict_name(x.verdict).to_string(),
                if x.same_document { "yes" } else { "no" }.to_string(),
                format!("{:.2}", x.shingle_overlap),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: [
            "Turn",
            "Candidate passage",
            "Instead of gold",
            "Votes",
            "Pointwise ratings",
            "Verdict",
            "Same document",
            "Overlap",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
}

fn bias(b: &mut Vec<Block>, s: &Summary) {
    b.push(Block::Heading(2, "Bias checks".into()));
    if !s.bias.self_preference.is_empty() {
        b.push(Block::Heading(3, "Self-preference".into()));
        b.push(Block::List(s.bias.self_preference.clone()));
    }
    if !s.bias.position.is_empty() {
        b.push(Block::Heading(3, "Position".into()));
        b.push(Block::Para("Gold positions are balanced over the audit, so an unbiased judge picks every position about equally often; the chi-square tests the judge's chosen positions against uniform. Trials of one item are not independent: the test is corrected by the design effect of that clustering (Rao-Scott); the uncorrected p-value is shown beside it.".into()));
        let size = s.bias.position[0].pool_size;
        let mut head = vec!["Judge".to_string()];
        head.extend((1..=size).map(|p| format!("pos {p}")));
        head.extend(
            [
                "χ² (clustered)",
                "df",
                "p",
                "design effect",
                "items",
                "p (independent trials)",
            ]
            .map(String::from),
        );
        let rows = s
            .bias
            .position
            .iter()
            .map(|p| {
                let mut r = vec![p.judge.clone()];
                for i in 0..p.pool_size {
                    let g = p.gold_at.get(i).copied().unwrap_or(0);
                    let k = p.gold_picked.get(i).copied().unwrap_or(0);
                    r.push(if g == 0 {
                        "-".into()
                    } else {
                        format!("{:.2} ({k}/{g})", k as f64 / g as f64)
                    });
                }
                r.push(f(p.chi_square, 2));
                r.push(p.df.map(|d| d.to_string()).unwrap_or_else(|| "-".into()));
                r.push(f(p.p_value, 4));
                r.push(f(p.design_effect, 2));
                r.push(p.items.to_string());
                r.push(f(p.p_value_independent, 4));
                r
            })
            .collect();
        b.push(Block::Table { head, rows });
        let series = s
            .bias
            .position
            .iter()
            .map(|p| {
                let rates = (0..p.pool_size)
                    .map(|i| {
                        let g = p.gold_at.get(i).copied().unwrap_or(0);
                        if g == 0 {
                            f64::NAN
                        } else {
                            p.gold_picked.get(i).copied().unwrap_or(0) as f64 / g as f64
                        }
                    })
                    .collect();
                (p.judge.clone(), rates)
            })
            .collect();
        let chart = svg::BarChart {
            title: "Gold pick-rate by gold position",
            labels: (1..=size).map(|p| p.to_string()).collect(),
            series,
            y_max: Some(1.0),
            y_label: "pick-rate",
            reference: Some((1.0 / size as f64, "chance".into())),
        };
        b.push(Block::Chart { caption: format!("Share of trials in which each judge picked the gold, by the gold's position in a pool of {size}."), svg: chart.render() });
    }
    robust::pool_length(b, s);
    if !s.bias.length.is_empty() {
        b.push(Block::Heading(3, "Length".into()));
        let rows = s
            .bias
            .length
            .iter()
            .map(|l| {
                vec![
                    l.dimension.name().to_string(),
                    l.judge.clone(),
                    l.length_of.clone(),
                    f(l.pearson, 3),
                    f(l.p_value, 4),
                    l.n.to_string(),
                ]
            })
            .collect();
        b.push(Block::Table {
            head: ["Dimension", "Judge", "Length of", "Pearson r", "p", "n"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
}

fn histograms(b: &mut Vec<Block>, s: &Summary) {
    b.push(Block::Heading(2, "Score distributions".into()));
    for (dim, d) in &s.dimensions {
        if d.scored == 0 {
            continue;
        }
        b.push(Block::Chart {
            caption: format!("{}: item scores ({} items).", d.title, d.scored),
            svg: histogram_svg(*dim, d),
        });
        let rows = d
            .histogram
            .iter()
            .map(|x| {
                vec![
                    format!("[{:.1}, {:.1})", x.lower, x.upper),
                    x.count.to_string(),
                ]
            })
            .collect();
        b.push(Block::Table {
            head: vec![format!("{} score", dim.name()), "Items".into()],
            rows,
        });
    }
}

fn histogram_svg(dim: Dimension, d: &DimensionSummary) -> String {
    let chart = svg::BarChart {
        title: d.title.as_str(),
        labels: d
            .histogram
            .iter()
            .map(|x| format!("{:.1}", x.lower))
            .collect(),
        series: vec![(
            dim.name().to_string(),
            d.histogram.iter().map(|x| x.count as f64).collect(),
        )],
        y_max: None,
        y_label: "items",
        reference: None,
    };
    chart.render()
}

fn worst(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
    if s.worst.values().all(Vec::is_empty) {
        return;
    }
    let failed = |d: &Dimension| v.fails(*d);
    b.push(Block::Heading(
        2,
        if s.worst
            .iter()
            .filter(|(_, x)| !x.is_empty())
            .all(|(d, _)| failed(d))
        {
            format!("Worst items: {JUDGES_FAILURE}")
        } else {
            "Worst items".into()
        },
    ));
    for (dim, items) in &s.worst {
        if items.is_empty() {
            continue;
        }
        b.push(Block::Heading(
            3,
            if failed(dim) {
                format!(
                    "{} (the judges cannot separate: {JUDGES_FAILURE})",
                    dim.title()
                )
            } else {
                dim.title().to_string()
            },
        ));
        for w in items {
            let per: Vec<String> = w
                .per_judge
                .iter()
                .map(|(j, v)| format!("{j} {v:.2}"))
                .collect();
            b.push(Block::Para(format!(
                "**{}** (turn {}{}) score {:.2} [{}]",
                w.turn_id,
                w.turn,
                w.passage_id
                    .as_ref()
                    .map(|p| format!(", passage `{p}`"))
                    .unwrap_or_default(),
                w.score,
                per.join(", ")
            )));
            if !w.history.is_empty() {
                b.push(Block::Quote {
                    label: "Conversation (latest)".into(),
                    text: w.history.join("\n"),
                });
            }
            b.push(Block::Quote {
                label: "Question".into(),
                text: w.question.clone(),
            });
            if let Some(p) = &w.passage {
                b.push(Block::Quote {
                    label: "Gold passage".into(),
                    text: p.clone(),
                });
            }
            if let (Some(id), Some(p)) = (&w.preferred_passage_id, &w.preferred_passage) {
                b.push(Block::Quote {
                    label: format!("Passage the judges preferred (`{id}`)"),
                    text: p.clone(),
                });
            }
            if let Some(a) = &w.answer {
                b.push(Block::Quote {
                    label: "Reference answer".into(),
                    text: a.clone(),
                });
            }
            if !w.justifications.is_empty() {
                b.push(Block::List(
                    w.justifications
                        .iter()
                        .map(|(j, t)| format!("{j}: {t}"))
                        .collect(),
                ));
            }
        }
    }
}

fn cost(b: &mut Vec<Block>, s: &Summary) {
    b.push(Block::Heading(2, "Cost".into()));
    let row = |name: &str, l: &crate::summary::Ledger| {
        vec![
            name.to_string(),
            l.calls.to_string(),
            l.cache_hits.to_string(),
            l.failed.to_string(),
            l.prompt_tokens.to_string(),
            l.completion_tokens.to_string(),
            format!("{:.4}", l.cost_usd),
        ]
    };
    let mut rows: Vec<Vec<String>> = s.cost.per_judge.iter().map(|(j, l)| row(j, l)).collect();
    rows.push(row("total", &s.cost.total));
    b.push(Block::Table {
        head: [
            "Judge",
            "Judgements",
            "Cache hits",
            "Failed",
            "Prompt tokens",
            "Completion tokens",
            "USD",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let per: Vec<String> = s
        .cost
        .prompt_tokens_per_judgement
        .iter()
        .map(|(d, t)| format!("{d}: {t:.0} prompt tokens per judgement"))
        .collect();
    if !per.is_empty() {
        b.push(Block::List(per));
    }
}

/// `report.md`.
pub fn markdown(s: &Summary) -> String {
    doc::to_markdown(&blocks(s))
}

/// `report.html` (self-contained).
pub fn html(s: &Summary) -> String {
    doc::to_html(&format!("Audit of {}", s.benchmark.name), &blocks(s))
}
