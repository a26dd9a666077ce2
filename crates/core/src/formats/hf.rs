//! Hugging Face dataset folders: what `mtr export --to hf` writes (Parquet configs for
//! `datasets` and MTEB, and a dataset card the Hub accepts) and what `mtr import` reads back,
//! an mtr export losslessly and any folder in MTEB's retrieval layout as BEIR is read.
//!
//! [`layout`] names the configs, files and columns; [`parquet`] writes and reads the tables;
//! [`card`] renders `README.md`.

mod card;
mod export;
mod import;
mod layout;
mod parquet;

pub use card::CardSection;
pub use export::{HfOptions, export_hf};
pub(crate) use import::{import, sniff};
#[cfg(test)]
use layout::{CARD, CONFIGS};

#[cfg(test)]
mod tests;
