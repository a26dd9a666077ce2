//! What a review session holds: the two queues read from the audit folder, the benchmark's
//! texts for the cards, and the labels so far (read from `review/labels.jsonl` as it is now on
//! every request, incrementally, so other processes' labels show at once; every label is
//! appended to it before its answer goes back).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use mtr_audit::review_queue::card::{self, Card, Texts};
use mtr_audit::review_queue::flagged::{self, FlaggedItem};
use mtr_audit::review_queue::label_log::{self, EffectiveLabels, LabelLine, LabelsTail};
use mtr_audit::review_queue::random_sample::{self, Sample};
use mtr_audit::review_queue::{ItemKey, Queue, audit_fingerprint, units};

use crate::cmd::Ctx;

fn audit_error(e: mtr_audit::AuditError) -> anyhow::Error {
    match e {
        mtr_audit::AuditError::Core(c) => anyhow::Error::new(c),
        e => anyhow::Error::new(e),
    }
}

/// The queues of an audit folder, or of a judge folder's holes (no benchmark needed).
pub struct Queues {
    /// The audit folder: the one given, or a judge folder's `audit/` (where its labels go).
    pub audit_dir: PathBuf,
    /// The judge folder when the review is of its holes (`mtr judge -o DIR`).
    pub holes_dir: Option<PathBuf>,
    pub summary: mtr_audit::Summary,
    pub fingerprint: String,
    pub sample: Sample,
    pub flagged: Vec<FlaggedItem>,
}

impl Queues {
    /// Reads the audit, draws (first run) or reads the sample, and builds the flagged queue.
    /// A judge folder is reviewed through the audit of its holes (`DIR/audit/`): the sample
    /// is of its holes, the flagged queue the holes judged relevant that move the runs most.
    pub fn load(dir: &Path, per_dimension: usize, seed: Option<u64>) -> anyhow::Result<Self> {
        let holes_dir = mtr_audit::holes::is_judge_dir(dir).then(|| dir.to_path_buf());
        let audit_dir = &match &holes_dir {
            Some(d) => d.join(mtr_audit::holes::AUDIT_DIR),
            None => dir.to_path_buf(),
        };
        let summary =
            mtr_audit::review_queue::read_audit_summary(audit_dir).map_err(audit_error)?;
        let fingerprint = audit_fingerprint(&summary);
        let units = units::read(audit_dir).map_err(audit_error)?;
        let seed = seed.unwrap_or(summary.settings.seed);
        let sample = random_sample::load_or_draw(
            audit_dir,
            || Ok(units.clone()),
            per_dimension,
            seed,
            &fingerprint,
        )
        .map_err(audit_error)?;
        let flagged = match &holes_dir {
            Some(d) => {
                let pool = mtr_audit::holes::read_pool(d).map_err(audit_error)?;
                let verdicts = mtr_audit::holes::read_verdicts(d).map_err(audit_error)?;
                mtr_audit::holes::review_queue(&pool, &verdicts, &units)
            }
            None => flagged::queue(audit_dir, &summary, &units).map_err(audit_error)?,
        };
        // refuse another audit's labels before anything is served
        label_log::read_lines(&label_log::labels_path(audit_dir), &fingerprint)
            .map_err(audit_error)?;
        Ok(Self {
            audit_dir: audit_dir.to_path_buf(),
            holes_dir,
            summary,
            fingerprint,
            sample,
            flagged,
        })
    }

    /// The effective labels on disk now.
    pub fn labels(&self) -> anyhow::Result<EffectiveLabels> {
        let lines =
            label_log::read_lines(&label_log::labels_path(&self.audit_dir), &self.fingerprint)
                .map_err(audit_error)?;
        Ok(label_log::effective(&lines))
    }
}

/// Where the audited benchmark is: `--bench`, else the path summary.json records, relative
/// to the current folder, then to the audit folder's parent.
fn bench_path(audit_dir: &Path, given: Option<&Path>, recorded: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let recorded = Path::new(recorded);
    let parent = audit_dir.parent().unwrap_or(Path::new("."));
    [recorded.to_path_buf(), parent.join(recorded)]
        .into_iter()
        .find(|p| !recorded.as_os_str().is_empty() && p.exists())
        .ok_or_else(|| {
            anyhow::Error::new(mtr_core::Error::from(
                mtr_core::InputError::new(
                    audit_dir,
                    format!(
                        "cannot find the benchmark the audit was made on (summary.json records `{}`)",
                        recorded.display()
                    ),
                )
                .hint("give it with --bench PATH (the cards show its texts)"),
            ))
        })
}

/// Opens the audited benchmark (checking it is the one audited) and reads the cards' texts.
pub fn load_texts(
    ctx: &Ctx,
    audit_dir: &Path,
    given: Option<&Path>,
    q: &Queues,
) -> anyhow::Result<Texts> {
    let path = bench_path(audit_dir, given, &q.summary.benchmark.path)?;
    let dir = crate::cmd::open::open_benchmark(ctx, &path, &Default::default())?;
    let fp = dir.compute_fingerprint().map_err(anyhow::Error::new)?;
    if fp != q.summary.benchmark.fingerprint {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                &path,
                format!(
                    "this is not the benchmark the audit was made on (fingerprint {}, the audit's {})",
                    mtr_core::fingerprint::short(&fp),
                    mtr_core::fingerprint::short(&q.summary.benchmark.fingerprint)
                ),
            )
            .hint("give the audited benchmark with --bench PATH"),
        )));
    }
    let bench = dir
        .load()
        .with_context(|| format!("reading benchmark {}", path.display()))?;
    let texts = Texts::load(bench, &q.sample.units, &q.flagged).map_err(audit_error)?;
    Ok(if q.holes_dir.is_some() {
        texts.for_holes()
    } else {
        texts
    })
}

/// The index of a queue's per-queue tables.
fn slot(queue: Queue) -> usize {
    match queue {
        Queue::Sample => 0,
        Queue::Flagged => 1,
    }
}

/// Why a label was not recorded.
#[derive(Debug)]
pub enum Rejected {
    /// The request does not match the queue (stale page, wrong item, bad label).
    Invalid(String),
    /// The labels file could not be written.
    Failed(anyhow::Error),
}

/// A running review: queues, texts, this reviewer, and the labels so far.
pub struct Session {
    pub queues: Queues,
    pub texts: Texts,
    pub reviewer: String,
    pub labels_path: PathBuf,
    labels: Mutex<LabelsTail>,
    /// Item key -> (queue, index).
    index: HashMap<String, (Queue, usize)>,
    /// Per queue, the group (dimension or kind) of each card, and the cards per group,
    /// computed once.
    groups: [Vec<String>; 2],
    group_totals: [BTreeMap<String, usize>; 2],
    /// The Summary tab's estimates and the labels file's version they were computed at
    /// (computing them reads the audit's items: only again once a label was added).
    estimates: Mutex<Option<(u64, serde_json::Value)>>,
}

impl Session {
    pub fn new(
        audit_dir: PathBuf,
        reviewer: String,
        queues: Queues,
        texts: Texts,
    ) -> anyhow::Result<Self> {
        let labels_path = label_log::labels_path(&audit_dir);
        let mut labels = LabelsTail::new(&labels_path, &queues.fingerprint);
        labels.refresh().map_err(audit_error)?;
        let mut index = HashMap::new();
        for (i, u) in queues.sample.units.iter().enumerate() {
            index.insert(u.item.clone(), (Queue::Sample, i));
        }
        for (i, f) in queues.flagged.iter().enumerate() {
            index.insert(f.item.clone(), (Queue::Flagged, i));
        }
        let group = |item: &str| ItemKey::parse(item).map_or("", |k| k.group()).to_string();
        let groups = [
            queues.sample.units.iter().map(|u| group(&u.item)).collect(),
            queues.flagged.iter().map(|f| group(&f.item)).collect(),
        ];
        let totals = |gs: &Vec<String>| {
            let mut t: BTreeMap<String, usize> = BTreeMap::new();
            for g in gs {
                *t.entry(g.clone()).or_default() += 1;
            }
            t
        };
        let group_totals = [totals(&groups[0]), totals(&groups[1])];
        Ok(Self {
            labels_path,
            queues,
            texts,
            reviewer,
            labels: Mutex::new(labels),
            index,
            groups,
            group_totals,
            estimates: Mutex::new(None),
        })
    }

    /// The estimates at labels-file `version`: the ones computed before if the file has not
    /// changed since, else `compute()`'s.
    pub fn estimates(
        &self,
        version: u64,
        compute: impl FnOnce() -> serde_json::Value,
    ) -> serde_json::Value {
        let mut cached = match self.estimates.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        match &*cached {
            Some((v, value)) if *v == version => value.clone(),
            _ => {
                let value = compute();
                *cached = Some((version, value.clone()));
                value
            }
        }
    }

    /// The group (dimension or kind) of the card at `index` of `queue`.
    pub fn group(&self, queue: Queue, index: usize) -> &str {
        self.groups[slot(queue)]
            .get(index)
            .map_or("", String::as_str)
    }

    /// The cards of `queue` per group.
    pub fn group_totals(&self, queue: Queue) -> &BTreeMap<String, usize> {
        &self.group_totals[slot(queue)]
    }

    /// Where an item is reviewed: (queue, index).
    pub fn position(&self, item: &str) -> Option<(Queue, usize)> {
        self.index.get(item).copied()
    }

    pub fn len(&self, queue: Queue) -> usize {
        match queue {
            Queue::Sample => self.queues.sample.units.len(),
            Queue::Flagged => self.queues.flagged.len(),
        }
    }

    /// The item key at `index` of `queue`.
    pub fn item(&self, queue: Queue, index: usize) -> Option<&str> {
        match queue {
            Queue::Sample => self.queues.sample.units.get(index).map(|u| u.item.as_str()),
            Queue::Flagged => self.queues.flagged.get(index).map(|f| f.item.as_str()),
        }
    }

    pub fn card(&self, queue: Queue, index: usize) -> Option<Card> {
        match queue {
            Queue::Sample => card::sample_card(&self.texts, self.queues.sample.units.get(index)?),
            Queue::Flagged => card::flagged_card(&self.texts, self.queues.flagged.get(index)?),
        }
    }

    /// Runs `f` on the labels as the file holds them now (every reviewer's, other processes'
    /// too) and the file's version (it changes with every line added). A file that cannot be
    /// read now is logged and the labels read before are used.
    pub fn with_labels<R>(&self, f: impl FnOnce(&EffectiveLabels, u64) -> R) -> R {
        let mut tail = match self.labels.lock() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Err(e) = tail.refresh() {
            tracing::warn!("reading the labels: {e}");
        }
        f(tail.labels(), tail.version())
    }

    /// This reviewer's label of `item`.
    pub fn label_of(&self, item: &str) -> Option<String> {
        self.with_labels(|l, _| l.get(item)?.get(&self.reviewer).cloned())
    }

    /// Checks and appends a label (or an undo: `label` none) of the item at `index` of
    /// `queue`; `item` must name it (a stale page never labels another item).
    pub fn record(
        &self,
        queue: Queue,
        index: usize,
        item: &str,
        label: Option<&str>,
        seconds: f64,
        note: &str,
    ) -> Result<(), Rejected> {
        let at = self.item(queue, index);
        if at != Some(item) {
            return Err(Rejected::Invalid(format!(
                "item `{item}` is not at {} #{index}",
                queue.name()
            )));
        }
        if let Some(l) = label {
            let key = mtr_audit::review_queue::ItemKey::parse(item)
                .ok_or_else(|| Rejected::Invalid(format!("`{item}` is not an item key")))?;
            let pool = match self.index.get(item) {
                Some((Queue::Sample, i)) => self.queues.sample.units[*i].pool.as_deref(),
                _ => None,
            };
            label_log::check_label(&key, pool, l).map_err(Rejected::Invalid)?;
        }
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(Rejected::Invalid("`seconds` must be a time >= 0".into()));
        }
        if note.len() > 4000 {
            return Err(Rejected::Invalid(
                "the note is longer than 4000 bytes".into(),
            ));
        }
        let line = LabelLine {
            item: item.to_string(),
            queue,
            label: label.map(str::to_string),
            reviewer: self.reviewer.clone(),
            time: label_log::now_rfc3339(),
            seconds: (seconds * 1000.0).round() / 1000.0,
            fingerprint: self.queues.fingerprint.clone(),
            note: note.trim().to_string(),
        };
        // one in-process writer at a time; the file lock orders the processes
        let mut held = self
            .labels
            .lock()
            .map_err(|_| Rejected::Failed(anyhow::anyhow!("labels lock poisoned")))?;
        label_log::append(&self.labels_path, std::slice::from_ref(&line))
            .map_err(|e| Rejected::Failed(audit_error(e)))?;
        // reads this line back with any other writer's before it (the label is saved already:
        // a file another process spoilt is logged, not reported as this label's failure)
        if let Err(e) = held.refresh() {
            tracing::warn!("reading the labels back: {e}");
        }
        Ok(())
    }
}
