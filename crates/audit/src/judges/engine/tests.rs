//! Tests of [`super`] (engine.rs).

use std::sync::atomic::AtomicUsize;

use mtr_llm::ChatMessage;
use mtr_llm::logprob::RatingMode;

use super::*;

/// Renders `unit <source>` and counts its renderings.
struct Counting(AtomicUsize);

impl Render for Counting {
    fn render(&self, unit: &Unit) -> Result<ChatRequest> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(ChatRequest::new(vec![ChatMessage::user(format!(
            "unit {}",
            unit.source
        ))]))
    }
    fn prompt_id(&self, _: Dimension) -> String {
        "p@1".into()
    }
}

fn unit(source: usize) -> Unit {
    Unit {
        dimension: Dimension::Quality,
        dialogue_id: "d".into(),
        turn_id: format!("d::{source}"),
        turn: 1,
        passage_id: None,
        trial: None,
        pool: None,
        gold_position: None,
        source,
        judge: None,
    }
}

/// Every job of each judge (none reused), as `Collector::reuse` lists them.
fn todo_of(jobs: &[Job], n_judges: usize) -> Vec<Vec<usize>> {
    let mut todo = vec![Vec::new(); n_judges];
    for (k, job) in jobs.iter().enumerate() {
        todo[job.judge].push(k);
    }
    todo
}

fn judge(name: &str, relevance: bool) -> JudgeRef {
    JudgeRef {
        name: name.into(),
        model: "m".into(),
        rating_mode: RatingMode::default(),
        relevance,
    }
}

#[test]
fn each_unit_is_rendered_once_for_every_judge_and_sample() {
    let units: Vec<Unit> = (0..5).map(unit).collect();
    let judges = [judge("a", false), judge("b", false), judge("r", true)];
    let jobs = jobs_of(&units, &judges, 2);
    let todo = todo_of(&jobs, judges.len());
    let render = Counting(AtomicUsize::new(0));
    let shared = Shared::new(&render, units.len(), &todo, &jobs, &judges);
    // the judges' streams take turns, as they do under `select_all`
    for k in todo[0].iter().zip(&todo[1]).flat_map(|(a, b)| [*a, *b]) {
        let ui = jobs[k].unit;
        let (req, hash) = shared.request(ui, &units[ui]).unwrap();
        assert_eq!(req, render.render(&units[ui]).unwrap());
        assert_eq!(hash, request_hash(&req).unwrap());
        render.0.fetch_sub(1, Ordering::Relaxed);
    }
    assert_eq!(render.0.load(Ordering::Relaxed), units.len());
    // nothing is kept once every job took its copy
    assert!(shared.memo.lock().unwrap().kept.is_empty());
}

#[test]
fn a_chunk_rendered_on_several_threads_gives_the_requests_of_one() {
    let units: Vec<Unit> = (0..300).map(unit).collect();
    let judges = [judge("a", false), judge("b", false)];
    let jobs = jobs_of(&units, &judges, 2);
    let todo = todo_of(&jobs, judges.len());
    let render = Counting(AtomicUsize::new(0));
    let rendered = |threads: usize| {
        let shared = Shared::new(&render, units.len(), &todo, &jobs, &judges);
        let mut out = Vec::new();
        for mine in &todo {
            for chunk in mine.chunks(RENDER_CHUNK) {
                let part = render_chunk(&shared, &units, &jobs, chunk, threads);
                assert_eq!(part.len(), chunk.len());
                out.extend(part.into_iter().map(Result::unwrap));
            }
        }
        out
    };
    let one = rendered(1);
    assert_eq!(one.len(), jobs.len());
    for threads in [2, 3, 8] {
        assert_eq!(rendered(threads), one, "{threads} threads");
    }
    // each job got its own unit's request, in job order
    for (k, (req, hash)) in todo.concat().into_iter().zip(&one) {
        assert_eq!(req.messages[0].content, format!("unit {}", jobs[k].unit));
        assert_eq!(*hash, request_hash(req).unwrap());
    }
}

#[test]
fn requests_hash_alike_exactly_when_they_are_equal() {
    let base = || {
        let mut r = ChatRequest::new(vec![
            ChatMessage::system("judge \"this\"\n"),
            ChatMessage::user("passage: é ab"),
        ]);
        r.output = mtr_llm::OutputSpec::Json;
        r.prompt = Some(mtr_llm::chat::PromptRef {
            id: "audit/x@1".into(),
            hash: "h".into(),
        });
        r
    };
    let mut variants: Vec<ChatRequest> = vec![base()];
    let mut vary = |f: &dyn Fn(&mut ChatRequest)| {
        let mut r = base();
        f(&mut r);
        variants.push(r);
    };
    // the same text split at another message boundary, or under another role
    vary(&|r| {
        r.messages[0].content.push_str("passage:");
        r.messages[1].content = " é ab".into();
    });
    vary(&|r| r.messages[0].role = mtr_llm::MessageRole::User);
    vary(&|r| r.messages[1].content.push(' '));
    vary(&|r| r.messages.push(ChatMessage::assistant("")));
    vary(&|r| r.output = mtr_llm::OutputSpec::Text);
    vary(&|r| r.prompt = None);
    vary(&|r| r.sample = 1);
    vary(&|r| r.sampling = Some(mtr_llm::config::Sampling::default()));
    vary(&|r| r.label = Some("relevance".into()));
    vary(&|r| {
        r.rating = Some(mtr_llm::chat::RatingSpec {
            key: "rating".into(),
            lo: 1,
            hi: 5,
        })
    });
    vary(&|r| r.affinity = Some("d1".into()));
    let hashes: Vec<_> = variants.iter().map(|r| request_hash(r).unwrap()).collect();
    let distinct: std::collections::HashSet<_> = hashes.iter().collect();
    assert_eq!(distinct.len(), variants.len(), "{hashes:?}");
    // equal requests hash alike; the planning hint is no part of a request
    let mut hinted = base();
    hinted.planned_cached_share = Some(0.5);
    assert_eq!(request_hash(&hinted).unwrap(), hashes[0]);
    assert_eq!(request_hash(&base()).unwrap(), hashes[0]);
}

#[test]
fn a_full_memo_renders_again_and_gives_the_same_request() {
    let units: Vec<Unit> = (0..RENDERS_KEPT + 10).map(unit).collect();
    let judges = [judge("a", false), judge("b", false)];
    let jobs = jobs_of(&units, &judges, 1);
    let todo = todo_of(&jobs, judges.len());
    let render = Counting(AtomicUsize::new(0));
    let shared = Shared::new(&render, units.len(), &todo, &jobs, &judges);
    // the first judge runs far ahead of the second
    for &k in todo[0].iter().chain(&todo[1]) {
        let ui = jobs[k].unit;
        let (req, _) = shared.request(ui, &units[ui]).unwrap();
        assert_eq!(req.messages[0].content, format!("unit {ui}"));
    }
    assert_eq!(render.0.load(Ordering::Relaxed), units.len() + 10);
    assert!(shared.memo.lock().unwrap().kept.is_empty());
}
