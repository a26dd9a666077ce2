//! `[synth.mix]`: the shares of turn kinds a synthesis asks for, declared once, checked when
//! the configuration loads, and drawn per planned turn from the seed, so that the same seed
//! asks for the same kind at the same place of the same dialogue whatever order the turns are
//! generated in. The report sets the shares asked beside those drawn and those obtained.
//!
//! The defaults are MTRAG's shares among the user turns of its clapnq and govt conversations
//! (`../shared/data/mtrag/conversations_{clapnq,govt}.jsonl`, 438 user turns; MTRAG, Katsis et
//! al. 2025, Apache-2.0; counted in [`crate::turn_types::MTRAG_MIX`]): partial 40, unanswerable
//! 28, conversational 1; a two-passage turn is one MTRAG labels Composite (32) or Comparative
//! (10). An answerable turn is whatever share the three answerability kinds leave.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use crate::generate::GenState;
use crate::turn_types::{Answerability, MTRAG_MIX, MTRAG_TURNS};

/// Salt of the mix's stream, xored into a dialogue's own ([`mtr_core::rng::purpose::dialogue`])
/// so the mix's draws do not move the dialogue's switch draws.
const MIX_SALT: u64 = 0x6d69_785f_6b69_6e64;

/// `[synth.mix]`: shares in [0, 1] of the planned turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MixOptions {
    /// Turns the corpus answers only in part.
    pub partial: f64,
    /// Turns on the topic path that the whole corpus cannot answer (gold empty).
    pub unanswerable: f64,
    /// Turns with no retrieval need (thanks, a clarification request; gold empty).
    pub conversational: f64,
    /// Answerable turns that need two passages of one topic path (composite or comparative),
    /// as a share of all planned turns.
    pub two_passage: f64,
}

/// MTRAG's count of `(tag, value)` over its user turns.
fn mtrag(tag: &str, value: &str) -> usize {
    MTRAG_MIX
        .iter()
        .find(|(t, v, _)| *t == tag && *v == value)
        .map_or(0, |m| m.2)
}

/// MTRAG's share of `(tag, value)`.
fn mtrag_share(tag: &str, value: &str) -> f64 {
    mtrag(tag, value) as f64 / MTRAG_TURNS as f64
}

impl Default for MixOptions {
    fn default() -> Self {
        let q = "question_type";
        Self {
            partial: mtrag_share("answerability", "partial"),
            unanswerable: mtrag_share("answerability", "unanswerable"),
            conversational: mtrag_share("answerability", "conversational"),
            two_passage: (mtrag(q, "Composite") + mtrag(q, "Comparative")) as f64
                / MTRAG_TURNS as f64,
        }
    }
}

/// What the mix asks of one planned turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asked {
    pub answerability: Answerability,
    /// An answerable turn that needs two passages.
    pub two_passage: bool,
}

impl MixOptions {
    /// The share asked of `kind` (answerable: what the other three leave).
    pub fn share(&self, kind: Answerability) -> f64 {
        match kind {
            Answerability::Answerable => {
                (1.0 - self.partial - self.unanswerable - self.conversational).max(0.0)
            }
            Answerability::Partial => self.partial,
            Answerability::Unanswerable => self.unanswerable,
            Answerability::Conversational => self.conversational,
        }
    }

    /// Checks the shares: each in [0, 1], the answerability kinds' and the two-passage share
    /// together at most 1 (a two-passage turn is an answerable one). Errors name the key under
    /// `[synth]`.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        for (key, v) in [
            ("partial", self.partial),
            ("unanswerable", self.unanswerable),
            ("conversational", self.conversational),
            ("two_passage", self.two_passage),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err((format!("mix.{key}"), format!("{v} is not in [0, 1]")));
            }
        }
        let sum = self.partial + self.unanswerable + self.conversational + self.two_passage;
        if sum > 1.0 + 1e-9 {
            return Err((
                "mix".to_string(),
                format!("partial + unanswerable + conversational + two_passage is {sum}, above 1"),
            ));
        }
        Ok(())
    }

    /// The kind asked of planned turn `layer` (0-based) of dialogue `dialogue` (0-based): one
    /// uniform draw on the seed's stream for that turn, cut at the cumulative shares.
    pub(crate) fn draw(&self, seed: u64, dialogue: usize, layer: usize) -> Asked {
        let salt = mtr_core::rng::purpose::dialogue(dialogue as u64) ^ MIX_SALT;
        let mut rng = mtr_core::rng::stream(seed, salt);
        // each turn its own draw, independent of how many turns come before
        let mut u: f64 = 0.0;
        for _ in 0..=layer {
            u = rng.random();
        }
        let mut edge = 0.0;
        for (kind, share) in [
            (Answerability::Partial, self.partial),
            (Answerability::Unanswerable, self.unanswerable),
            (Answerability::Conversational, self.conversational),
        ] {
            edge += share;
            if u < edge {
                return Asked {
                    answerability: kind,
                    two_passage: false,
                };
            }
        }
        Asked {
            answerability: Answerability::Answerable,
            two_passage: u < edge + self.two_passage,
        }
    }

    /// Left out of the canonical JSON at the defaults, so a synthesis's fingerprint moves only
    /// when its mix does.
    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// What the mix asked of a synthesis's planned turns and what its benchmark holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MixCounts {
    /// Answerability kind -> planned turns drawn for it (dropped turns included).
    pub drawn: BTreeMap<String, usize>,
    /// Answerability kind -> benchmark turns tagged with it.
    pub obtained: BTreeMap<String, usize>,
    /// Planned turns drawn as two-passage turns.
    pub two_passage_drawn: usize,
    /// Benchmark turns made from two passages that each hold part of the answer.
    pub two_passage_obtained: usize,
}

impl MixCounts {
    /// Counts the draws over every planned turn and the tags over every kept one.
    pub(crate) fn compute(mix: &MixOptions, seed: u64, state: &GenState) -> Self {
        let mut c = MixCounts::default();
        for d in &state.dialogues {
            for layer in 0..d.layers_done {
                let a = mix.draw(seed, d.index, layer);
                *c.drawn.entry(a.answerability.as_str().into()).or_default() += 1;
                c.two_passage_drawn += usize::from(a.two_passage);
            }
            for (n, t) in d.turns.iter().enumerate() {
                let turn = crate::generate::to_core_turn(&d.id, n + 1, t);
                let kind = turn.tags.answerability.unwrap_or_default();
                *c.obtained.entry(kind).or_default() += 1;
                c.two_passage_obtained += usize::from(t.second_evidence.is_some());
            }
        }
        c
    }
}

/// The report's "Turn mix" section: each kind's share asked, the planned turns drawn for it,
/// the benchmark turns obtained, beside MTRAG's share.
pub(crate) fn render(o: &mut String, mix: &MixOptions, c: &MixCounts) {
    let _ = writeln!(o, "## Turn mix\n");
    let _ = writeln!(
        o,
        "`[synth.mix]` asks each planned turn for a kind by a seeded draw; `drawn` counts the planned turns (dropped ones included), `obtained` the benchmark's turns. The synthesizer makes `unanswerable` turns (verified by the corpus-wide search, gold empty) and `partial` turns (one passage answers one part of the question, gold; the corpus-wide search finds none answering the other); without the uniqueness check's search it cannot verify either and makes them answerable. It makes `two-passage` turns (two passages of one topic path, both gold) and `conversational` turns after a dialogue's first (no retrieval need, gold empty); a turn drawn as a kind it cannot make (conversational as a first turn) is made answerable from one passage, so drawn and obtained then differ.\n"
    );
    let _ = writeln!(
        o,
        "| kind | asked | drawn | obtained | obtained share | MTRAG share |\n|---|---:|---:|---:|---:|---:|"
    );
    let kept: usize = c.obtained.values().sum();
    let share = |n: usize| {
        if kept > 0 {
            format!("{:.1}%", 100.0 * n as f64 / kept as f64)
        } else {
            "n/a".to_string()
        }
    };
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    for kind in Answerability::ALL {
        let k = kind.as_str();
        let got = c.obtained.get(k).copied().unwrap_or(0);
        let _ = writeln!(
            o,
            "| {k} | {} | {} | {got} | {} | {} |",
            pct(mix.share(kind)),
            c.drawn.get(k).copied().unwrap_or(0),
            share(got),
            pct(mtrag_share("answerability", k))
        );
    }
    let q = "question_type";
    let theirs = (mtrag(q, "Composite") + mtrag(q, "Comparative")) as f64 / MTRAG_TURNS as f64;
    let _ = writeln!(
        o,
        "| two-passage | {} | {} | {} | {} | {} |\n",
        pct(mix.two_passage),
        c.two_passage_drawn,
        c.two_passage_obtained,
        share(c.two_passage_obtained),
        pct(theirs)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_mtrag_s_shares_and_validate() {
        let m = MixOptions::default();
        m.validate().unwrap();
        assert!((m.partial - 40.0 / 438.0).abs() < 1e-12);
        assert!((m.unanswerable - 28.0 / 438.0).abs() < 1e-12);
        assert!((m.conversational - 1.0 / 438.0).abs() < 1e-12);
        assert!((m.two_passage - 42.0 / 438.0).abs() < 1e-12);
        assert!((m.share(Answerability::Answerable) - 369.0 / 438.0).abs() < 1e-12);
    }

    #[test]
    fn a_share_out_of_range_or_a_sum_above_one_names_its_key() {
        let mut m = MixOptions {
            unanswerable: 1.5,
            ..MixOptions::default()
        };
        assert_eq!(m.validate().unwrap_err().0, "mix.unanswerable");
        m.unanswerable = -0.1;
        assert_eq!(m.validate().unwrap_err().0, "mix.unanswerable");
        m = MixOptions {
            partial: 0.5,
            unanswerable: 0.3,
            conversational: 0.1,
            two_passage: 0.2,
        };
        assert_eq!(m.validate().unwrap_err().0, "mix");
        m.two_passage = 0.1;
        m.validate().unwrap();
    }

    #[test]
    fn a_typo_is_refused_naming_the_key() {
        let err = toml::from_str::<MixOptions>("unanswerabel = 0.1\n").unwrap_err();
        assert!(err.to_string().contains("unanswerabel"), "{err}");
    }

    #[test]
    fn the_draw_is_seeded_and_follows_the_shares() {
        let m = MixOptions {
            partial: 0.1,
            unanswerable: 0.2,
            conversational: 0.05,
            two_passage: 0.25,
        };
        let draws = |seed| -> Vec<Asked> {
            (0..100)
                .flat_map(|d| (0..40).map(move |l| (d, l)))
                .map(|(d, l)| m.draw(seed, d, l))
                .collect()
        };
        let a = draws(7);
        assert_eq!(a, draws(7));
        assert_ne!(a, draws(8));
        let n = a.len() as f64;
        let share = |f: &dyn Fn(&Asked) -> bool| a.iter().filter(|x| f(x)).count() as f64 / n;
        // 4,000 draws: a share's standard error is at most 0.008, so 0.03 is over 3.5 of them
        for (kind, want) in [
            (Answerability::Partial, 0.1),
            (Answerability::Unanswerable, 0.2),
            (Answerability::Conversational, 0.05),
            (Answerability::Answerable, 0.65),
        ] {
            let got = share(&|x| x.answerability == kind);
            assert!((got - want).abs() < 0.03, "{kind:?}: {got}");
        }
        let two = share(&|x| x.two_passage);
        assert!((two - 0.25).abs() < 0.03, "two-passage: {two}");
        assert!(
            a.iter()
                .all(|x| !x.two_passage || x.answerability == Answerability::Answerable)
        );
        // a turn's draw does not depend on which other turns were drawn
        assert_eq!(m.draw(7, 3, 5), a[3 * 40 + 5]);
    }

    #[test]
    fn zero_shares_ask_only_for_answerable_single_passage_turns() {
        let m = MixOptions {
            partial: 0.0,
            unanswerable: 0.0,
            conversational: 0.0,
            two_passage: 0.0,
        };
        for d in 0..20 {
            for l in 0..10 {
                let a = m.draw(1, d, l);
                assert_eq!(a.answerability, Answerability::Answerable);
                assert!(!a.two_passage);
            }
        }
    }
}
