//! The judges and their calls: what a judge is asked ([`unit`], [`render`], [`context`],
//! [`prompts`]), how the calls are made ([`engine`], [`relevance`] for rerankers and
//! embedders, [`letters`] for picks read from label probabilities), and what comes back
//! ([`answer`], [`record`]); [`family`] names a judge's model family.

pub(crate) mod answer;
pub(crate) mod context;
pub(crate) mod engine;
pub(crate) mod family;
pub(crate) mod letters;
pub mod prompts;
pub mod record;
pub(crate) mod relevance;
pub(crate) mod render;
pub(crate) mod unit;
