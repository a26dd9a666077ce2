//! The dialogues check: dialogue and turn ids (present, unique), questions (not empty), gold
//! (listed once, in the corpus); it returns where each turn's gold is, for the qrels check.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use super::report::ValidationReport;
use crate::benchmark::{BenchmarkDir, CORPUS, DIALOGUES};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Turn};

/// Where a turn's gold label is: `qid -> docid -> (grade, line, field)`.
pub(super) type GoldIndex = HashMap<String, HashMap<String, (i32, u64, String)>>;

/// Streams the dialogues, checking ids and questions, and gold against the corpus `ids` (when
/// any passage could be read).
pub(super) fn check(
    dir: &BenchmarkDir,
    ids: &HashSet<String>,
    r: &mut ValidationReport,
) -> Result<GoldIndex> {
    let path = dir.path(DIALOGUES);
    let check_refs = !ids.is_empty();
    if r.passages == 0 {
        // a benchmark with no passages can rank nothing: an error unless --lenient
        r.problem(
            "empty-corpus",
            InputError::new(
                dir.path(CORPUS),
                "the corpus holds no passage: nothing can be retrieved and gold passage ids are not checked",
            )
            .hint("import or write the passages into corpus.jsonl (--lenient accepts it)"),
        );
    } else if !check_refs {
        r.warn(
            "empty-corpus",
            InputError::new(
                dir.path(CORPUS),
                "no passage of the corpus could be read: gold passage ids are not checked",
            ),
        );
    }
    let mut c = Checker {
        path: path.clone(),
        refs: check_refs.then_some(ids),
        gold: HashMap::new(),
        dialogue_ids: HashSet::new(),
        turn_lines: HashMap::new(),
    };
    r.for_each_record::<Dialogue>(&path, |r, no, d| c.dialogue(r, no, &d))?;
    Ok(c.gold)
}

/// What the dialogues seen so far hold.
struct Checker<'a> {
    path: PathBuf,
    /// The corpus ids gold is checked against (none: not checked).
    refs: Option<&'a HashSet<String>>,
    gold: GoldIndex,
    dialogue_ids: HashSet<String>,
    /// Turn id -> the line that first had it.
    turn_lines: HashMap<String, u64>,
}

impl Checker<'_> {
    fn dialogue(&mut self, r: &mut ValidationReport, no: u64, d: &Dialogue) {
        let path = &self.path;
        r.dialogues += 1;
        if d.id.trim().is_empty() {
            r.problem(
                "empty-dialogue-id",
                InputError::new(path, "dialogue id is empty")
                    .line(no)
                    .field("id"),
            );
        } else if !self.dialogue_ids.insert(d.id.clone()) {
            r.problem(
                "duplicate-dialogue",
                InputError::new(path, format!("duplicate dialogue id `{}`", d.id))
                    .line(no)
                    .field("id"),
            );
        }
        if d.turns.is_empty() {
            r.problem(
                "empty-dialogue",
                InputError::new(path, format!("dialogue `{}` has no turns", d.id))
                    .line(no)
                    .field("turns"),
            );
        }
        for (ti, t) in d.turns.iter().enumerate() {
            self.turn(r, no, &d.id, ti, t);
        }
    }

    fn turn(&mut self, r: &mut ValidationReport, no: u64, did: &str, ti: usize, t: &Turn) {
        let path = &self.path;
        r.turns += 1;
        if t.id.trim().is_empty() {
            r.problem(
                "empty-turn-id",
                InputError::new(
                    path,
                    format!("turn {ti} of dialogue `{did}` has an empty id"),
                )
                .line(no)
                .field(format!("turns[{ti}].id")),
            );
            return;
        }
        if let Some(first) = self.turn_lines.insert(t.id.clone(), no) {
            r.problem(
                "duplicate-turn",
                InputError::new(
                    path,
                    format!("duplicate turn id `{}` (first on line {first})", t.id),
                )
                .line(no)
                .field(format!("turns[{ti}].id"))
                .hint("turn ids are the query ids of qrels and runs and must be unique"),
            );
            return;
        }
        if t.user.trim().is_empty() {
            r.problem(
                "empty-query",
                InputError::new(path, format!("turn `{}` has an empty question", t.id))
                    .line(no)
                    .field(format!("turns[{ti}].user")),
            );
        }
        let entry = self.gold.entry(t.id.clone()).or_default();
        for (gi, g) in t.gold.iter().enumerate() {
            let field = format!("turns[{ti}].gold[{gi}].passage_id");
            if entry
                .insert(g.passage_id.clone(), (g.grade, no, field.clone()))
                .is_some()
            {
                r.problem(
                    "duplicate-gold",
                    InputError::new(
                        path,
                        format!("turn `{}` lists passage `{}` twice", t.id, g.passage_id),
                    )
                    .line(no)
                    .field(field.clone()),
                );
            }
            if self.refs.is_some_and(|ids| !ids.contains(&g.passage_id)) {
                r.problem(
                    "missing-gold-passage",
                    InputError::new(
                        path,
                        format!(
                            "gold passage `{}` of turn `{}` is not in the corpus",
                            g.passage_id, t.id
                        ),
                    )
                    .line(no)
                    .field(field)
                    .hint("the corpus must contain every judged passage"),
                );
            }
        }
        if t.relevant().next().is_some() {
            r.judged_turns += 1;
        }
    }
}
