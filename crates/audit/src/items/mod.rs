//! What the judges judge: the plan of items ([`plan`]), the passages they read
//! ([`materials`]), the discriminability pools ([`pool`]), the item scores made of the
//! judgements ([`aggregate`]) and the missing-gold check ([`missing_gold`]).

pub mod aggregate;
pub mod materials;
pub(crate) mod missing_gold;
pub(crate) mod plan;
pub(crate) mod pool;
