//! The voices' draws, settings and report (how the user agent's prompts show them is tested
//! with the agents, `agents/persona.rs`).

use super::*;

fn personas(n: usize) -> Vec<Persona> {
    (0..n)
        .map(|i| Persona {
            name: format!("p{i}"),
            description: format!("persona number {i}"),
        })
        .collect()
}

fn voices(n_personas: usize, seeds: &[&str]) -> Voices {
    Voices {
        personas: PersonaSet::Drawn(personas(n_personas)),
        seeds: Some(SeedIndex::new(
            seeds.iter().map(|s| s.to_string()).collect(),
            2,
            0.5,
        )),
        shown: 3,
        ..Default::default()
    }
}

#[test]
fn the_seeded_draws_are_deterministic_and_spread() {
    let seeds: Vec<String> = (0..40).map(|i| format!("question number {i}?")).collect();
    let refs: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let v = voices(5, &refs);
    // the same seed draws the same persona and examples
    for d in 0..20 {
        assert_eq!(v.persona(7, d, 0), v.persona(7, d, 0));
        assert_eq!(v.examples(7, d, 2, 1), v.examples(7, d, 2, 1));
    }
    // every persona is drawn by some dialogue, and another seed draws otherwise
    let drawn: std::collections::BTreeSet<&str> = (0..100)
        .filter_map(|d| v.persona(7, d, 0))
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(drawn.len(), 5, "{drawn:?}");
    let a: Vec<_> = (0..30).map(|d| v.persona(7, d, 0)).collect();
    let b: Vec<_> = (0..30).map(|d| v.persona(8, d, 0)).collect();
    assert_ne!(a, b);
    // three distinct seeds per attempt, a new draw on the next attempt
    let e = v.examples(7, 3, 1, 0);
    assert_eq!(e.len(), 3);
    assert_eq!(e.iter().collect::<std::collections::BTreeSet<_>>().len(), 3);
    assert_ne!(e, v.examples(7, 3, 1, 1));
    // fewer seeds than `shown`: all of them
    let small = voices(1, &["only one?"]);
    assert_eq!(small.examples(1, 0, 0, 0), ["only one?"]);
    // no voices: no persona, no example, no near copy
    let none = Voices::default();
    assert!(none.persona(1, 0, 0).is_none() && none.examples(1, 0, 0, 0).is_empty());
    assert!(none.near_copy("anything?").is_none() && none.is_empty());
}

#[test]
fn topic_personas_follow_the_dialogue_s_topic() {
    let p = personas(2);
    let v = Voices {
        personas: PersonaSet::ByTopic(vec![Some(p[1].clone()), None, Some(p[0].clone())]),
        ..Default::default()
    };
    assert_eq!(v.persona(1, 9, 0), Some(&p[1]));
    assert_eq!(v.persona(1, 9, 1), None);
    assert_eq!(v.persona(1, 9, 2), Some(&p[0]));
    assert_eq!(v.persona(1, 9, 7), None);
}

#[test]
fn settings_are_checked_and_recorded_without_paths() {
    assert_eq!(PersonaSource::of(""), PersonaSource::None);
    assert_eq!(PersonaSource::of(" topics "), PersonaSource::Topics);
    assert_eq!(
        PersonaSource::of("/home/me/p.toml"),
        PersonaSource::File("/home/me/p.toml".into())
    );
    let mut s = SeedOptions::default();
    assert!(s.validate().is_ok());
    s.near_copy_threshold = 0.0;
    assert!(s.validate().is_err());
}

#[test]
fn the_report_counts_personas_and_near_copies() {
    let r = VoicesReport {
        personas_from: Some("p.toml (0123456789ab)".into()),
        personas: [("Nurse".to_string(), 2), ("Student".to_string(), 1)].into(),
        without_persona: 0,
        topic_persona_failures: 0,
        seeds_from: Some(("q.txt (ba9876543210)".into(), 40)),
        near_copies: 3,
    };
    let mut o = String::new();
    render(&mut o, &r);
    assert!(
        o.contains("| Nurse | 2 |") && o.contains("| Student | 1 |"),
        "{o}"
    );
    assert!(
        o.contains("attempts rejected as near copies of a seed question: 3")
            || o.contains("Attempts rejected as near copies of a seed question: 3"),
        "{o}"
    );
    let mut empty = String::new();
    render(&mut empty, &VoicesReport::default());
    assert!(empty.is_empty());
}
