//! Strata: the groups of turns a bench reports separately, because an average over all turns
//! hides where multi-turn retrieval breaks. Turn position (1, 2, 3-4, 5+), topic-switch turns
//! versus the others, and one family per tag found in the benchmark (question type,
//! answerability, multi-turn type, anything an importer carried). A comma-separated tag value
//! (MTRAG question types such as `Factoid,Summarization`) puts the turn into each listed group,
//! so groups of such a family overlap. Groups with fewer than [`MIN_GROUP`] turns are flagged:
//! their numbers are too noisy to read alone.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::query_set::QuerySet;

/// Below this many turns a stratum's numbers carry a warning.
pub(crate) const MIN_GROUP: usize = 30;
/// A tag with more distinct values than this (ids, free text) is not used as a stratum; nor is
/// one whose every value belongs to a single turn.
pub(crate) const MAX_GROUPS: usize = 20;

/// One group of turns within a family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    /// Indices into the query set's queries.
    pub members: Vec<usize>,
}

/// One way of splitting the turns (a tag, turn position, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Family {
    pub name: String,
    pub groups: Vec<Group>,
}

/// All strata families of a query set, plus the tags that were left out and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strata {
    /// The families, in display order.
    pub families: Vec<Family>,
    /// Tags left out (too many values, or one per turn), each with why.
    pub skipped_tags: Vec<String>,
}

/// The turn-position group of a 1-based position.
pub(crate) fn position_group(position: usize) -> &'static str {
    match position {
        0 => "unknown",
        1 => "1",
        2 => "2",
        3 | 4 => "3-4",
        _ => "5+",
    }
}

const POSITION_ORDER: [&str; 5] = ["1", "2", "3-4", "5+", "unknown"];
/// Tags reported right after turn position and topic switch, in this order.
const PREFERRED_TAGS: [&str; 3] = ["question_type", "answerability", "multi_turn_type"];
const NONE: &str = "(none)";

impl Strata {
    /// The strata of `set`: turn position, topic switch and the turns' tags.
    pub fn build(set: &QuerySet) -> Strata {
        let mut out = Strata::default();
        let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, q) in set.queries.iter().enumerate() {
            positions
                .entry(position_group(q.position))
                .or_default()
                .push(i);
        }
        out.families.push(Family {
            name: "turn_position".into(),
            groups: POSITION_ORDER
                .iter()
                .filter_map(|g| {
                    positions.remove(g).map(|members| Group {
                        name: (*g).into(),
                        members,
                    })
                })
                .collect(),
        });

        if set.queries.iter().any(|q| q.tags.topic_switch.is_some()) {
            let (switch, other): (Vec<usize>, Vec<usize>) = (0..set.queries.len())
                .partition(|&i| set.queries[i].tags.topic_switch == Some(true));
            out.families.push(Family {
                name: "topic_switch".into(),
                groups: [("switch", switch), ("no switch", other)]
                    .into_iter()
                    .filter(|(_, m)| !m.is_empty())
                    .map(|(n, members)| Group {
                        name: n.into(),
                        members,
                    })
                    .collect(),
            });
        }

        let mut names: BTreeSet<String> = BTreeSet::new();
        for q in &set.queries {
            for (name, _) in q.tags.pairs() {
                if name != "topic_switch" {
                    names.insert(name);
                }
            }
        }
        let mut ordered: Vec<String> = PREFERRED_TAGS
            .iter()
            .filter(|t| names.contains(**t))
            .map(|t| t.to_string())
            .collect();
        ordered.extend(
            names
                .iter()
                .filter(|n| !PREFERRED_TAGS.contains(&n.as_str()))
                .cloned(),
        );
        for name in ordered {
            let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (i, q) in set.queries.iter().enumerate() {
                let v = q.tags.get(&name).unwrap_or_else(|| NONE.to_string());
                let mut labels: Vec<&str> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                labels.dedup();
                if labels.is_empty() {
                    labels.push(NONE);
                }
                for l in labels {
                    groups.entry(l.to_string()).or_default().push(i);
                }
            }
            // ids and free text (a gold passage id, the question before humanizing): too
            // many values, or a value of its own for every turn that has the tag
            let valued: Vec<usize> = groups
                .iter()
                .filter(|(n, _)| n.as_str() != NONE)
                .map(|(_, m)| m.len())
                .collect();
            let one_per_turn = valued.len() >= 2 && valued.iter().all(|&n| n == 1);
            if groups.len() > MAX_GROUPS || one_per_turn {
                out.skipped_tags.push(format!(
                    "{name} ({} distinct values in {} turns)",
                    groups.len(),
                    set.queries.len()
                ));
                continue;
            }
            if groups.len() < 2 {
                // One value for every turn: nothing to compare.
                continue;
            }
            let mut groups: Vec<Group> = groups
                .into_iter()
                .map(|(name, members)| Group { name, members })
                .collect();
            // Largest groups first, "(none)" last; ties by name.
            groups.sort_by(|a, b| {
                (a.name == NONE)
                    .cmp(&(b.name == NONE))
                    .then(b.members.len().cmp(&a.members.len()))
                    .then(a.name.cmp(&b.name))
            });
            out.families.push(Family { name, groups });
        }
        out
    }

    /// `(family, group)` names of groups below [`MIN_GROUP`] turns.
    #[cfg(test)]
    pub(crate) fn small_groups(&self) -> Vec<(String, String, usize)> {
        let mut out = Vec::new();
        for f in &self.families {
            for g in &f.groups {
                if g.members.len() < MIN_GROUP {
                    out.push((f.name.clone(), g.name.clone(), g.members.len()));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query_set::QueryInfo;
    use mtr_core::Tags;

    fn q(pos: usize, qt: Option<&str>, switch: Option<bool>) -> QueryInfo {
        QueryInfo {
            qid: format!("q{pos}"),
            dialogue: 0,
            position: pos,
            tags: Tags {
                question_type: qt.map(Into::into),
                topic_switch: switch,
                ..Default::default()
            },
            num_rel: 1,
            question: String::new(),
            rewrite: None,
        }
    }

    #[test]
    fn positions_switches_and_tags() {
        let set = QuerySet {
            dialogues: vec!["d".into()],
            queries: vec![
                q(1, Some("Factoid"), None),
                q(2, Some("Factoid"), Some(false)),
                q(3, Some("Summary,Factoid"), Some(true)),
                q(4, None, None),
                q(7, Some("Factoid"), Some(true)),
            ],
            ..Default::default()
        };
        let s = Strata::build(&set);
        let names: Vec<_> = s.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["turn_position", "topic_switch", "question_type"]);
        let pos: Vec<_> = s.families[0]
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.members.len()))
            .collect();
        assert_eq!(pos, [("1", 1), ("2", 1), ("3-4", 2), ("5+", 1)]);
        let sw: Vec<_> = s.families[1]
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.members.clone()))
            .collect();
        assert_eq!(sw, [("switch", vec![2, 4]), ("no switch", vec![0, 1, 3])]);
        let qt: Vec<_> = s.families[2]
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.members.clone()))
            .collect();
        assert_eq!(
            qt,
            [
                ("Factoid", vec![0, 1, 2, 4]),
                ("Summary", vec![2]),
                ("(none)", vec![3])
            ]
        );
        assert_eq!(s.small_groups().len(), 4 + 2 + 3);
    }

    /// MTRAG's answerability kinds as a benchmark tags them: a partial turn has gold, so it is
    /// scored and its stratum shows beside the answerable turns'; an unanswerable or
    /// conversational turn has none and is counted, not scored.
    #[test]
    fn partial_turns_are_scored_and_have_their_answerability_stratum() {
        use crate::query_set::tests::turn;
        let kinds = [
            ("answerable", true),
            ("partial", true),
            ("answerable", true),
            ("unanswerable", false),
            ("partial", true),
            ("conversational", false),
        ];
        let turns: Vec<mtr_core::Turn> = kinds
            .iter()
            .enumerate()
            .map(|(i, (kind, gold))| {
                let golds: &[(&str, i32)] = if *gold { &[("p", 2)] } else { &[] };
                let mut t = turn(&format!("d::{}", i + 1), golds);
                t.tags.answerability = Some((*kind).to_string());
                t
            })
            .collect();
        let d = vec![mtr_core::Dialogue {
            id: "d".into(),
            turns,
            meta: Default::default(),
        }];
        let set = QuerySet::build(&d, &mtr_core::model::qrels_from_dialogues(&d));
        assert_eq!(set.len(), 4);
        assert_eq!(set.skipped_without_relevant, 2);
        let s = Strata::build(&set);
        let family = s
            .families
            .iter()
            .find(|f| f.name == "answerability")
            .unwrap();
        let groups: Vec<_> = family
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.members.clone()))
            .collect();
        assert_eq!(
            groups,
            [("answerable", vec![0, 2]), ("partial", vec![1, 3])]
        );
    }

    #[test]
    fn id_like_tags_are_not_strata() {
        let mut queries: Vec<QueryInfo> = (1..=4).map(|p| q(p, Some("Factoid"), None)).collect();
        for (i, q) in queries.iter_mut().enumerate() {
            q.tags
                .extra
                .insert("evidence".into(), format!("doc-{i}#0").into());
            q.tags.extra.insert("attempts".into(), (1 + i % 2).into());
        }
        queries[0]
            .tags
            .extra
            .insert("original".into(), "Was it?".into());
        queries[1]
            .tags
            .extra
            .insert("original".into(), "Is it?".into());
        let set = QuerySet {
            dialogues: vec!["d".into()],
            queries,
            ..Default::default()
        };
        let s = Strata::build(&set);
        let names: Vec<_> = s.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["turn_position", "attempts"]);
        assert_eq!(
            s.skipped_tags,
            [
                "evidence (4 distinct values in 4 turns)",
                "original (3 distinct values in 4 turns)"
            ]
        );
    }
}
