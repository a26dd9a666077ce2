//! The judges and their calls: what a judge is asked ([`unit`], [`render`], [`context`],
//! [`prompts`]), how the calls are made ([`engine`], [`relevance`] for rerankers and
//! embedders, [`letters`] for picks read from label probabilities), and what comes back
//! ([`answer`], [`record`]); [`family`] names a judge's model family.

pub mod answer;
pub mod context;
pub mod engine;
pub mod family;
pub mod letters;
pub mod prompts;
pub mod record;
pub mod relevance;
pub mod render;
pub mod unit;
