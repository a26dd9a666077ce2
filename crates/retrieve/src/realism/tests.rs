//! The realism measures on a small benchmark whose answers are known.

use mtr_core::progress::NoProgress;
use mtr_core::{Dialogue, Gold, Passage, Tags, Turn};

use super::*;
use crate::index::{IndexBuilder, IndexOptions};

fn passage(id: &str, title: &str, text: &str) -> mtr_core::Result<Passage> {
    Ok(Passage {
        id: id.into(),
        title: title.into(),
        text: text.into(),
        doc_id: None,
        meta: Default::default(),
    })
}

fn turn(id: &str, user: &str, rewrite: Option<&str>, gold: &str) -> Turn {
    Turn {
        id: id.into(),
        user: user.into(),
        rewrite: rewrite.map(Into::into),
        answer: None,
        gold: vec![Gold {
            passage_id: gold.into(),
            grade: 1,
        }],
        tags: Tags::default(),
    }
}

fn dialogue(id: &str, turns: Vec<Turn>) -> Dialogue {
    Dialogue {
        id: id.into(),
        turns,
        meta: Default::default(),
    }
}

/// Five passages the questions ask about and twelve on something else, so that recall@10 can
/// miss.
fn corpus() -> Vec<mtr_core::Result<Passage>> {
    let fillers = (0..12).map(|i| {
        passage(
            &format!("garden-{i}"),
            "Gardening",
            &format!("Tomatoes grow best in warm soil; bed {i} gets sun all day."),
        )
    });
    let mut v = vec![
        passage(
            "eiffel",
            "Eiffel Tower",
            "The Eiffel Tower in Paris is 330 metres tall and was finished in 1889.",
        ),
        passage(
            "eiffel-2",
            "Eiffel Tower",
            "Gustave Eiffel's company designed and constructed the tower for the World's Fair.",
        ),
        passage(
            "louvre",
            "Louvre",
            "The Louvre in Paris is the most visited museum in the world.",
        ),
        passage(
            "cats",
            "Cats",
            "Cats are small domesticated carnivorous mammals that sleep a lot.",
        ),
        passage(
            "dogs",
            "Dogs",
            "Dogs are domesticated descendants of wolves and are loyal companions.",
        ),
    ];
    v.extend(fillers);
    v
}

/// Two dialogues: each first question stands alone, each follow-up only makes sense with its
/// history (its rewrite names what "it" is), and one dialogue then moves to another document.
fn dialogues() -> Vec<Dialogue> {
    vec![
        dialogue(
            "d1",
            vec![
                turn(
                    "d1-1",
                    "How tall is the Eiffel Tower in Paris?",
                    None,
                    "eiffel",
                ),
                turn(
                    "d1-2",
                    "Who made it?",
                    Some("Who constructed the Eiffel Tower?"),
                    "eiffel-2",
                ),
                turn(
                    "d1-3",
                    "Which museum in Paris is the most visited in the world?",
                    None,
                    "louvre",
                ),
            ],
        ),
        dialogue(
            "d2",
            vec![
                turn(
                    "d2-1",
                    "Are cats domesticated carnivorous mammals?",
                    None,
                    "cats",
                ),
                turn(
                    "d2-2",
                    "And what about the other animal?",
                    Some("Are dogs domesticated descendants of wolves?"),
                    "dogs",
                ),
            ],
        ),
    ]
}

#[test]
fn the_history_gap_lengths_and_shares_of_a_known_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = IndexBuilder::new(
        tmp.path().join("idx"),
        IndexOptions {
            threads: 1,
            ..Default::default()
        },
    )
    .build_from_passages(corpus(), "test", &NoProgress)
    .unwrap();
    let bm25 = idx.bm25().unwrap();
    let input = RealismInput {
        name: "known".into(),
        bm25: Some(&bm25),
        intervals: IntervalOptions::default(),
    };
    let r = measure(&dialogues(), &input).unwrap();
    assert_eq!(r.languages.len(), 1);
    let en = &r.languages[0];
    assert_eq!(en.language, "en");
    assert_eq!((en.dialogues, en.turns), (2, 5));
    assert_eq!(en.length.unit, LengthUnit::Words);
    // 8, 3, 11, 5, 6 words
    assert_eq!(en.length.median.estimate, 6.0);
    assert_eq!(en.length.q1.estimate, 5.0);
    assert_eq!(en.length.q3.estimate, 8.0);
    let gap = en.history_gap.as_ref().unwrap();
    assert_eq!((gap.turns, gap.with_rewrite), (5, 2));
    // the two follow-ups find nothing alone and their gold when rewritten
    assert_eq!(gap.recall_alone.estimate, 3.0 / 5.0, "{gap:?}");
    assert_eq!(gap.recall_whole.estimate, 1.0, "{gap:?}");
    assert!((gap.gap.estimate - 0.4).abs() < 1e-12, "{gap:?}");
    // follow-ups: "Who made it?", the museum question and "And what about the other animal?"
    assert_eq!((en.referring_back.count, en.referring_back.of), (2, 3));
    // untagged: the museum question's gold is another document than the turn before's
    assert_eq!(en.topic_switch.source, "gold");
    assert_eq!(
        (en.topic_switch.share.count, en.topic_switch.share.of),
        (2, 3)
    );
    // the same inputs give the same numbers
    let again = measure(&dialogues(), &input).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
    let text = render::render(&[&r, &again]);
    assert!(text.contains("| measure | known | known |"), "{text}");
    assert!(text.contains("history gap"), "{text}");
}

#[test]
fn a_tagged_switch_is_read_from_its_tag_and_no_index_means_no_gap() {
    let mut ds = dialogues();
    ds[0].turns[2].tags.topic_switch = Some(true);
    let input = RealismInput {
        name: "tagged".into(),
        bm25: None,
        intervals: IntervalOptions::default(),
    };
    let r = measure(&ds, &input).unwrap();
    let en = &r.languages[0];
    assert!(en.history_gap.is_none());
    assert_eq!(en.topic_switch.source, "tag");
    assert_eq!(
        (en.topic_switch.share.count, en.topic_switch.share.of),
        (1, 3)
    );
    // a switching turn is no follow-up
    assert_eq!(en.referring_back.of, 2);
}
