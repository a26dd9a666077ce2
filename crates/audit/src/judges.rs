//! The judges and their calls: what a judge is asked ([`unit`], [`render`], [`context`],
//! [`prompts`]), how the calls are made ([`engine`], [`relevance`] for rerankers and
//! embedders, [`letters`] for picks read from label probabilities), and what comes back
//! ([`answer`], [`record`]); [`family`] names a judge's model family.

pub(crate) mod answer;
pub(crate) mod context;
pub(crate) mod engine;
pub(crate) mod family;
pub(crate) mod letters;
pub(crate) mod prompts;
pub(crate) mod record;
pub(crate) mod relevance;
pub(crate) mod render;
pub(crate) mod unit;

pub use prompts::{TurnView, passage_display};
pub use record::{judgement_id, pick_max, rating_schema};
