//! mtr-core: the one native representation of a conversational retrieval benchmark.
//!
//! Every other crate speaks these types: a [`Passage`] corpus streamed from JSONL, [`Dialogue`]s
//! of [`Turn`]s with graded gold evidence, [`Qrels`] and [`Run`]s, and the on-disk
//! [`benchmark`] folder with its manifest and content [`fingerprint`]. Errors separate bad user
//! input (file, line, field, hint) from I/O and internal failures, see [`error`].
//!
//! The public surface is the modules below, each a namespace with its own curated items, and
//! the re-exports at the root; everything else is private to the crate.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod atomic;
pub mod benchmark;
pub mod dirs;
pub mod error;
pub mod fingerprint;
pub mod formats;
pub mod jsonl;
pub mod language;
pub mod markdown;
pub mod model;
pub mod progress;
pub mod rng;
pub mod stats;
pub mod trec;
pub mod validate;

pub use benchmark::{Benchmark, BenchmarkDir, Manifest};
pub use error::{Error, InputError, Result};
pub use formats::read_run_any;
pub use formats::{Format, ImportOptions, open_any};
pub use model::{Dialogue, Gold, Passage, Qrels, Run, Tags, Turn};
