//! The "Probable missing gold" section: the passages the judges rate as relevant though the
//! benchmark does not mark them.

use super::doc::Block;
use super::format::{JUDGES_FAILURE, f};
use crate::dimension::Dimension;
use crate::items::aggregate::SuggestionVerdict;
use crate::statistics::verdict::Verdict;
use crate::summary::Summary;

pub(super) fn missing_gold(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
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
    counts_table(b, s);
    candidates_table(b, s);
}

/// The candidates by verdict, from the gold's own document or not.
fn counts_table(b: &mut Vec<Block>, s: &Summary) {
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
}

/// The first 50 candidates, each with its votes and pointwise ratings.
fn candidates_table(b: &mut Vec<Block>, s: &Summary) {
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

fn verdict_name(v: SuggestionVerdict) -> &'static str {
    match v {
        SuggestionVerdict::ProbableMissingGold => "probable missing gold",
        SuggestionVerdict::NotConfirmed => "not confirmed",
        SuggestionVerdict::Unverified => "unverified",
    }
}
