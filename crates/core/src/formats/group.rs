//! Grouping flat query ids into dialogues. BEIR and TREC files list queries one by one; when
//! their ids are conversational (`conv<::>3`, `conv::3`, `conv_3`, `conv-3`) the queries of one
//! conversation become the turns of one dialogue, in turn order. Turn ids stay the original
//! query ids so that qrels and runs keep matching.

use std::collections::HashMap;

use super::options::Grouping;

/// Separators tried in order: the first one every id splits on wins.
const SEPARATORS: [&str; 4] = ["<::>", "::", "_", "-"];

/// Splits `conv<sep>N` into `(conv, N)`.
pub(super) fn split_id<'a>(id: &'a str, sep: &str) -> Option<(&'a str, u32)> {
    let i = id.rfind(sep)?;
    let (conv, turn) = (&id[..i], &id[i + sep.len()..]);
    if conv.is_empty()
        || turn.is_empty()
        || !turn.bytes().all(|b| b.is_ascii_digit())
        || turn.len() > 6
    {
        return None;
    }
    Some((conv, turn.parse().ok()?))
}

/// A dialogue made from query ids: its id and the indices (into the input) of its turns, in
/// turn order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    pub dialogue_id: String,
    pub members: Vec<usize>,
}

/// Groups `ids` into dialogues following `mode`. `Err` carries the first id that does not fit
/// the conversational pattern when `mode` is [`Grouping::Conversational`].
pub(super) fn group_ids(ids: &[String], mode: Grouping) -> std::result::Result<Vec<Group>, String> {
    let single = || {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Group {
                dialogue_id: id.clone(),
                members: vec![i],
            })
            .collect()
    };
    if mode == Grouping::Single || ids.is_empty() {
        return Ok(single());
    }
    let sep = SEPARATORS
        .iter()
        .find(|s| ids.iter().all(|id| split_id(id, s).is_some()));
    let Some(sep) = sep else {
        if mode == Grouping::Conversational {
            let bad = ids
                .iter()
                .find(|id| SEPARATORS.iter().all(|s| split_id(id, s).is_none()))
                .or(ids.first())
                .cloned()
                .unwrap_or_default();
            return Err(bad);
        }
        return Ok(single());
    };
    let mut order: Vec<String> = Vec::new();
    let mut members: HashMap<String, Vec<(u32, usize)>> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        if let Some((conv, turn)) = split_id(id, sep) {
            let e = members.entry(conv.to_string()).or_insert_with(|| {
                order.push(conv.to_string());
                Vec::new()
            });
            e.push((turn, i));
        }
    }
    let groups = order.len();
    let multi = members.values().filter(|m| m.len() > 1).count();
    if mode == Grouping::Auto
        && (groups < 2 || multi == 0 || (ids.len() as f64) / (groups as f64) < 1.5)
    {
        return Ok(single());
    }
    Ok(order
        .into_iter()
        .map(|conv| {
            let mut m = members.remove(&conv).unwrap_or_default();
            m.sort();
            Group {
                dialogue_id: conv,
                members: m.into_iter().map(|(_, i)| i).collect(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn groups_conversational_ids_in_turn_order() {
        let g = group_ids(
            &ids(&["a<::>2", "a<::>1", "b<::>1", "b<::>10", "b<::>3"]),
            Grouping::Auto,
        )
        .unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[0],
            Group {
                dialogue_id: "a".into(),
                members: vec![1, 0]
            }
        );
        assert_eq!(g[1].members, vec![2, 4, 3]);
        let g = group_ids(&ids(&["31_1", "31_2", "32_1", "32_2"]), Grouping::Auto).unwrap();
        assert_eq!(g[0].dialogue_id, "31");
    }

    #[test]
    fn plain_ids_stay_single() {
        let g = group_ids(&ids(&["q1", "q2", "q3"]), Grouping::Auto).unwrap();
        assert_eq!(g.len(), 3);
        // one conversation only: not enough evidence that ids are conversational
        let g = group_ids(&ids(&["q_1", "q_2", "q_3"]), Grouping::Auto).unwrap();
        assert_eq!(g.len(), 3);
        let g = group_ids(&ids(&["q_1", "q_2", "q_3"]), Grouping::Conversational).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(
            group_ids(&ids(&["x", "y_1"]), Grouping::Conversational).unwrap_err(),
            "x"
        );
    }
}
