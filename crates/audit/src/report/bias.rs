//! The "Bias checks" section (position, length, pool length, self-preference) and the score
//! histograms.

use super::doc::Block;
use super::format::f;
use super::{robust, svg};
use crate::dimension::Dimension;
use crate::summary::{DimensionSummary, Summary};

pub(super) fn bias(b: &mut Vec<Block>, s: &Summary) {
    b.push(Block::Heading(2, "Bias checks".into()));
    if !s.bias.self_preference.is_empty() {
        b.push(Block::Heading(3, "Self-preference".into()));
        b.push(Block::List(s.bias.self_preference.clone()));
    }
    if !s.bias.position.is_empty() {
        position(b, s);
    }
    robust::pool_length(b, s);
    if !s.bias.length.is_empty() {
        length(b, s);
    }
}

/// The gold's pick-rate by its position in the pool, per judge: a table and a chart.
fn position(b: &mut Vec<Block>, s: &Summary) {
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

/// Score against length, per dimension and judge.
fn length(b: &mut Vec<Block>, s: &Summary) {
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

pub(super) fn histograms(b: &mut Vec<Block>, s: &Summary) {
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

pub(super) fn histogram_svg(dim: Dimension, d: &DimensionSummary) -> String {
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
