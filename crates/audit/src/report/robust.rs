//! Report sections that show how far the headline numbers depend on which judgements failed
//! and on the judges' context: today's ensemble mean beside the complete-case and
//! judge-adjusted means, failure rates by turn depth and prompt length, prompts shortened or
//! skipped to fit the context, and the picked passage's length against its pool.

use super::doc::Block;
use super::format::{ci, f};
use crate::summary::{RateBin, Summary};

/// Ensemble means three ways, each with its interval.
pub(super) fn means(b: &mut Vec<Block>, s: &Summary) {
    if s.dimensions.is_empty() {
        return;
    }
    b.push(Block::Heading(
        3,
        "Means robust to failed judgements".into(),
    ));
    b.push(Block::Para("The mean averages whichever judges succeeded on an item, so when one judge fails more on some items (late turns, long prompts) the mean moves toward the others. The complete-case mean uses only items every judge scored; the judge-adjusted mean subtracts each judge's offset (estimated on the items all judges scored) before averaging over every scored item. A large gap between them means the failures are not at random.".into()));
    let rows = s
        .dimensions
        .iter()
        .map(|(dim, d)| {
            let est = |e: &Option<crate::summary::Estimate>| match e {
                Some(e) => (
                    format!(
                        "{}{} (n={})",
                        f(e.mean, 3),
                        super::format::chance(s, *dim),
                        e.n
                    ),
                    ci(&e.ci, 3),
                ),
                None => ("-".into(), "-".into()),
            };
            let (cc, cc_ci) = est(&d.complete_case);
            let (adj, adj_ci) = est(&d.judge_adjusted);
            vec![
                dim.name().to_string(),
                format!(
                    "{}{} (n={})",
                    f(d.mean, 3),
                    super::format::chance(s, *dim),
                    d.scored
                ),
                ci(&d.ci, 3),
                cc,
                cc_ci,
                adj,
                adj_ci,
            ]
        })
        .collect();
    b.push(Block::Table {
        head: [
            "Dimension",
            "Mean",
            "CI",
            "Complete-case mean",
            "CI",
            "Judge-adjusted mean",
            "CI",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    failure_rates(b, s);
}

fn bin_label(b: &RateBin) -> String {
    match b.upper {
        Some(u) if u == b.lower + 1 => b.lower.to_string(),
        Some(u) => format!("{}-{}", b.lower, u - 1),
        None => format!("{}+", b.lower),
    }
}

fn rate_cell(b: &RateBin) -> String {
    match b.rate {
        Some(r) => format!("{:.1}% ({}/{})", r * 100.0, b.failed, b.judgements),
        None => "-".into(),
    }
}

fn failure_rates(b: &mut Vec<Block>, s: &Summary) {
    let Some(all) = s.failure_rates.get("all") else {
        return;
    };
    if all.failed == 0 {
        return;
    }
    b.push(Block::Heading(
        3,
        "Failure rate by turn and prompt length".into(),
    ));
    for (what, pick) in [
        (
            "Turn",
            (|r: &crate::summary::FailureRates| &r.by_turn)
                as fn(&crate::summary::FailureRates) -> &Vec<RateBin>,
        ),
        ("Prompt tokens", |r| &r.by_prompt_tokens),
    ] {
        let bins = pick(all);
        if bins.iter().all(|x| x.judgements == 0) {
            continue;
        }
        let names: Vec<&String> = s.failure_rates.keys().collect();
        let mut head = vec![what.to_string()];
        head.extend(names.iter().map(|n| n.to_string()));
        let rows = (0..bins.len())
            .filter(|&k| bins[k].judgements > 0)
            .map(|k| {
                let mut r = vec![bin_label(&bins[k])];
                for n in &names {
                    r.push(
                        pick(&s.failure_rates[*n])
                            .get(k)
                            .map(rate_cell)
                            .unwrap_or_else(|| "-".into()),
                    );
                }
                r
            })
            .collect();
        b.push(Block::Table { head, rows });
    }
}

/// Prompts fitted to the judges' context.
pub(super) fn context(b: &mut Vec<Block>, s: &Summary) {
    let c = &s.context;
    let Some(ctx) = c.context_tokens else {
        return;
    };
    let shortened: usize = c.shortened.values().sum();
    let too_long: usize = c.too_long.values().sum();
    b.push(Block::Heading(3, "Context".into()));
    let mut text = format!(
        "The smallest judge context is {ctx} tokens; a prompt may use {} (tiktoken count plus a {:.0}% margin, with room for the answer). {shortened} prompts were sent without their oldest turns; {too_long} items could not fit even without history and were skipped (`too_long`), never sent.",
        c.prompt_limit.unwrap_or(0),
        c.margin * 100.0
    );
    if c.human_shortened + c.human_too_long > 0 {
        text.push_str(&format!(
            " Human calibration: {} shortened, {} skipped.",
            c.human_shortened, c.human_too_long
        ));
    }
    b.push(Block::Para(text));
    if shortened + too_long > 0 {
        let mut dims: Vec<_> = c.shortened.keys().chain(c.too_long.keys()).collect();
        dims.sort();
        dims.dedup();
        let rows = dims
            .into_iter()
            .map(|d| {
                vec![
                    d.name().to_string(),
                    c.shortened.get(d).copied().unwrap_or(0).to_string(),
                    c.too_long.get(d).copied().unwrap_or(0).to_string(),
                ]
            })
            .collect();
        b.push(Block::Table {
            head: ["Dimension", "Shortened prompts", "Skipped items (too_long)"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
}

/// The picked passage's length against the rest of its pool.
pub(super) fn pool_length(b: &mut Vec<Block>, s: &Summary) {
    if s.bias.pool_length.iter().all(|p| p.picks == 0) {
        return;
    }
    b.push(Block::Heading(3, "Length of the picked passage".into()));
    b.push(Block::Para("Words of the picked passage minus the mean of the rest of its pool, against the same for the gold (what a judge that always picked the gold would show). The excess is the preference for length beyond the gold's; its interval resamples items (trials of one item together).".into()));
    let rows = s
        .bias
        .pool_length
        .iter()
        .map(|p| {
            vec![
                p.judge.clone(),
                p.picks.to_string(),
                f(p.picked_minus_rest, 1),
                f(p.gold_minus_rest, 1),
                f(p.excess, 1),
                ci(&p.excess_ci, 1),
                f(p.longest_picked, 3),
                f(p.longest_is_gold, 3),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: [
            "Judge",
            "Picks",
            "Picked - rest (words)",
            "Gold - rest",
            "Excess",
            "CI",
            "Longest picked",
            "Longest is gold",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
}
