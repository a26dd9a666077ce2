//! Whole audits on real data against the fake server, sharing [`kit`].

mod budget;
mod context;
mod ensemble;
pub(crate) mod fake;
pub(crate) mod kit;
mod letters;
mod planted;
mod relevance;
