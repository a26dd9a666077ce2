//! Rendering the judges' requests ahead of their calls: a chunk of jobs at a time on a pool of
//! threads ([`render_chunk`]), each unit's request rendered once and handed to every judge
//! that needs it ([`Shared`]), and the hashes that tell two identical requests apart from two
//! different ones ([`request_hash`], [`request_identity`]). Apart from the engine, which only
//! schedules calls and collects answers.

use std::collections::HashMap;

use mtr_llm::ChatRequest;
use rayon::prelude::*;

use super::{Job, Render, Unit};
use crate::error::{AuditError, Result};
use crate::judges::unit::JudgeRef;

/// Jobs of a judge whose requests are rendered together, in parallel ([`render_chunk`]): a
/// few hundred KB of requests rendered ahead of the calls.
pub(super) const RENDER_CHUNK: usize = 256;

/// Most threads that render a chunk.
const RENDER_THREADS: usize = 8;

/// Jobs a rendering thread takes at a time from a chunk.
const RENDER_STEP: usize = 8;

/// Threads that render a chunk: the machine's cores, at most [`RENDER_THREADS`].
pub(super) fn render_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(RENDER_THREADS)
}

/// The rendering threads, one pool per thread count (built when first used, kept for the
/// process): threads started once, not once per chunk, and apart from the retrieval's pool.
static RENDER_POOLS: [std::sync::OnceLock<Option<rayon::ThreadPool>>; RENDER_THREADS + 1] =
    [const { std::sync::OnceLock::new() }; RENDER_THREADS + 1];

/// The pool of `threads` rendering threads; `None` when it cannot be started.
fn render_pool(threads: usize) -> Option<&'static rayon::ThreadPool> {
    RENDER_POOLS
        .get(threads)?
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("mtr-render-{i}"))
                .build()
                .ok()
        })
        .as_ref()
}

/// The requests of the jobs `chunk` (and their [`request_hash`]), in the chunk's order,
/// rendered through `shared` by a pool of `threads` threads ([`render_pool`], each taking
/// [`RENDER_STEP`] jobs or more at a time) while the calling thread waits (it is the one that
/// polls every judge's stream: it renders nothing itself, and the cores go to the renderers
/// and the calls). A rendering is a function of its unit alone, so the requests are those of
/// rendering one job after the other; the engine's choices that depend on the order (which
/// of two identical requests calls) are made afterwards, in job order.
pub(super) fn render_chunk(
    shared: &Shared<'_>,
    units: &[Unit],
    jobs: &[Job],
    chunk: &[usize],
    threads: usize,
) -> Vec<Result<(ChatRequest, blake3::Hash)>> {
    let one = |k: &usize| {
        let ui = jobs[*k].unit;
        shared.request(ui, &units[ui])
    };
    let pool = (threads > 1 && chunk.len() > RENDER_STEP)
        .then(|| render_pool(threads))
        .flatten();
    let Some(pool) = pool else {
        return chunk.iter().map(one).collect();
    };
    let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.install(|| {
            chunk
                .par_iter()
                .with_min_len(RENDER_STEP)
                .map(one)
                .collect::<Vec<_>>()
        })
    }));
    // a rendering that panicked leaves the chunk unrendered: reported, not re-raised
    rendered.unwrap_or_else(|_| {
        chunk
            .iter()
            .map(|_| Err(AuditError::Internal("a rendering thread panicked".into())))
            .collect()
    })
}

/// The hash of a rendered request: each message's role and text (its length, then its bytes,
/// as they are: no JSON escaping, a few KB per request) and the JSON form of every other field,
/// serialised into a buffer this thread reuses. Two requests hash alike exactly when they are
/// equal (the fields are listed whole below, so a field added to `ChatRequest` is a compile
/// error here, never a field two different requests could differ in unseen).
pub(super) fn request_hash(req: &ChatRequest) -> Result<blake3::Hash> {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let ChatRequest {
        messages,
        output,
        prompt,
        sample,
        sampling,
        label,
        rating,
        affinity,
        // a planning hint, never sent (and set after this hash)
        planned_cached_share: _,
        // when the call may no longer start: not part of what is asked
        start_by: _,
    } = req;
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-audit request v2\0");
    h.update(&(messages.len() as u64).to_le_bytes());
    for m in messages {
        let role: &[u8] = match m.role {
            mtr_llm::MessageRole::System => b"s",
            mtr_llm::MessageRole::User => b"u",
            mtr_llm::MessageRole::Assistant => b"a",
        };
        h.update(role);
        h.update(&(m.content.len() as u64).to_le_bytes());
        h.update(m.content.as_bytes());
    }
    BUFFER.with(|b| {
        let mut b = b.borrow_mut();
        b.clear();
        serde_json::to_writer(
            &mut *b,
            &(output, prompt, sample, sampling, label, rating, affinity),
        )
        .map_err(|e| AuditError::Internal(e.to_string()))?;
        h.update(&b);
        if b.capacity() > 1 << 16 {
            *b = Vec::new();
        }
        Ok(h.finalize())
    })
}

/// The identity of a job's request: its unit's rendered request (hashed once per rendering,
/// [`request_hash`]) asked as sample `sample`. Jobs with equal renders and samples send
/// identical requests (the second copies the first's answer); renders that differ only in
/// their sample index (renderers give 0) would count as different, never the other way.
pub(super) fn request_identity(rendered: &blake3::Hash, sample: u32) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(rendered.as_bytes());
    h.update(&sample.to_le_bytes());
    h.finalize()
}

/// Most rendered requests [`Shared`] keeps waiting for the other judges (a few MB).
pub(super) const RENDERS_KEPT: usize = 4096;

/// The judges' streams' shared renderer: a unit's request is the same for every judge and
/// sample, so it is rendered once and handed to the others as a copy (a template rendering
/// costs far more than a copy). A request is kept until every job that needs it took it, and
/// at most [`RENDERS_KEPT`] at a time: beyond that (a judge far behind the others) the later
/// jobs render it again, which gives the same request.
pub(super) struct Shared<'a> {
    pub(super) render: &'a dyn Render,
    pub(super) memo: std::sync::Mutex<Memo>,
}

/// What [`Shared`] keeps.
pub(super) struct Memo {
    /// Rendered requests (and their [`request_hash`]) waiting for more jobs, by unit index.
    pub(super) kept: HashMap<usize, (ChatRequest, blake3::Hash)>,
    /// Jobs (of judges that are shown the request) still to take each unit's request.
    left: Vec<u32>,
}

impl<'a> Shared<'a> {
    pub(super) fn new(
        render: &'a dyn Render,
        n_units: usize,
        todo: &[Vec<usize>],
        jobs: &[Job],
        judges: &[JudgeRef],
    ) -> Self {
        let mut left = vec![0u32; n_units];
        for (ji, mine) in todo.iter().enumerate() {
            if judges[ji].relevance {
                continue;
            }
            for &k in mine {
                left[jobs[k].unit] += 1;
            }
        }
        Self {
            render,
            memo: std::sync::Mutex::new(Memo {
                kept: HashMap::new(),
                left,
            }),
        }
    }

    /// Unit `ui`'s request and its [`request_hash`]: a kept copy, or rendered now (and kept
    /// when more jobs need it).
    pub(super) fn request(&self, ui: usize, unit: &Unit) -> Result<(ChatRequest, blake3::Hash)> {
        let lock = || self.memo.lock().unwrap_or_else(|p| p.into_inner());
        let mut memo = lock();
        let left = match memo.left.get_mut(ui) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n
            }
            None => 0,
        };
        if left == 0 {
            if let Some(req) = memo.kept.remove(&ui) {
                return Ok(req);
            }
        } else if let Some(req) = memo.kept.get(&ui) {
            return Ok(req.clone());
        }
        drop(memo);
        let req = self.render.render(unit)?;
        self.render.rendered(ui, unit, &req);
        let hash = request_hash(&req)?;
        if left > 0 {
            let mut memo = lock();
            if memo.kept.len() < RENDERS_KEPT {
                memo.kept.insert(ui, (req.clone(), hash));
            }
        }
        Ok((req, hash))
    }
}
