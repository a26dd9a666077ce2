//! Whole audits on real data against the fake server, sharing [`kit`].

mod budget;
mod context;
pub(crate) mod fake;
pub(crate) mod kit;
mod letters;
mod relevance;
