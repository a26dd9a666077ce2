//! The measures a bench reports, named so that nobody confuses conventions: each has a stable
//! id (trec_eval's name where trec_eval has the measure), a short label for tables, and the
//! convention it follows. The defaults are the ones the issue asks for: nDCG@{5,10,20},
//! Recall@{5,10,20,100}, MRR@10, MAP@100, HitRate strict and lenient @{1,5,10}.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One measure at one cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// trec_eval `ndcg_cut.k`: linear gain (the raw grade), ideal ranking from the qrels.
    Ndcg(usize),
    /// trec_eval `recall.k`: relevant retrieved in the top k / all relevant.
    Recall(usize),
    /// trec_eval `recip_rank` computed on the top k only (`-M k`): MRR@k.
    Mrr(usize),
    /// trec_eval `map_cut.k`: AP over the top k with denominator R (all relevant).
    MapCut(usize),
    /// HitRate@k counting only grade >= 2 as a hit (`success_strict.k`).
    HitStrict(usize),
    /// HitRate@k counting grade >= 1 as a hit (`success_lenient.k`, trec_eval `success.k`).
    HitLenient(usize),
}

impl Measure {
    /// The measures reported when none are asked for.
    pub fn defaults() -> Vec<Measure> {
        use Measure::*;
        vec![
            Ndcg(5),
            Ndcg(10),
            Ndcg(20),
            Recall(5),
            Recall(10),
            Recall(20),
            Recall(100),
            Mrr(10),
            MapCut(100),
            HitStrict(1),
            HitStrict(5),
            HitStrict(10),
            HitLenient(1),
            HitLenient(5),
            HitLenient(10),
        ]
    }

    /// The cutoff of the measure.
    pub fn k(self) -> usize {
        match self {
            Measure::Ndcg(k)
            | Measure::Recall(k)
            | Measure::Mrr(k)
            | Measure::MapCut(k)
            | Measure::HitStrict(k)
            | Measure::HitLenient(k) => k,
        }
    }

    /// The stable id used in JSON, CSV and on the command line.
    pub fn id(self) -> String {
        match self {
            Measure::Ndcg(k) => format!("ndcg_cut.{k}"),
            Measure::Recall(k) => format!("recall.{k}"),
            Measure::Mrr(k) => format!("mrr.{k}"),
            Measure::MapCut(k) => format!("map_cut.{k}"),
            Measure::HitStrict(k) => format!("success_strict.{k}"),
            Measure::HitLenient(k) => format!("success_lenient.{k}"),
        }
    }

    /// A short label for tables and charts.
    pub fn label(self) -> String {
        match self {
            Measure::Ndcg(k) => format!("nDCG@{k}"),
            Measure::Recall(k) => format!("Recall@{k}"),
            Measure::Mrr(k) => format!("MRR@{k}"),
            Measure::MapCut(k) => format!("MAP@{k}"),
            Measure::HitStrict(k) => format!("Hit-strict@{k}"),
            Measure::HitLenient(k) => format!("Hit@{k}"),
        }
    }

    /// The convention the measure follows, written out for the report.
    pub fn convention(self) -> &'static str {
        match self {
            Measure::Ndcg(_) => {
                "trec_eval ndcg_cut: linear gain = grade, log2(rank+1) discount, ideal DCG from all judged relevant documents"
            }
            Measure::Recall(_) => "trec_eval recall: relevant in top k / all relevant (grade >= 1)",
            Measure::Mrr(_) => {
                "trec_eval recip_rank on the top k (-M k): 1/rank of the first relevant document, 0 if none in the top k"
            }
            Measure::MapCut(_) => {
                "trec_eval map_cut: average precision over the top k, denominator R = all relevant (not min(R, k))"
            }
            Measure::HitStrict(_) => {
                "HitRate strict: 1 if a document with grade >= 2 is in the top k"
            }
            Measure::HitLenient(_) => {
                "HitRate lenient: 1 if a document with grade >= 1 is in the top k (trec_eval success)"
            }
        }
    }

    /// The family name, used to group measures in charts.
    pub fn family(self) -> &'static str {
        match self {
            Measure::Ndcg(_) => "ndcg",
            Measure::Recall(_) => "recall",
            Measure::Mrr(_) => "mrr",
            Measure::MapCut(_) => "map",
            Measure::HitStrict(_) => "hit_strict",
            Measure::HitLenient(_) => "hit",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// A measure name that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown measure `{0}`: expected ndcg_cut.K, recall.K, mrr.K, map_cut.K, success_strict.K or success_lenient.K (also nDCG@K, Recall@K, MRR@K, MAP@K, Hit@K, Hit-strict@K)"
)]
pub struct UnknownMeasure(pub String);

impl FromStr for Measure {
    type Err = UnknownMeasure;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || UnknownMeasure(s.to_string());
        let (name, k) = s.rsplit_once(['.', '@', '_']).ok_or_else(bad)?;
        let k: usize = k.parse().map_err(|_| bad())?;
        if k == 0 {
            return Err(bad());
        }
        let name = name.to_ascii_lowercase();
        Ok(match name.as_str() {
            "ndcg_cut" | "ndcg" => Measure::Ndcg(k),
            "recall" => Measure::Recall(k),
            "mrr" | "recip_rank" => Measure::Mrr(k),
            "map_cut" | "map" => Measure::MapCut(k),
            "success_strict" | "hit-strict" | "hitrate-strict" | "hit_strict" => {
                Measure::HitStrict(k)
            }
            "success_lenient" | "success" | "hit" | "hitrate" | "hit-lenient" | "hit_lenient" => {
                Measure::HitLenient(k)
            }
            _ => return Err(bad()),
        })
    }
}

impl Serialize for Measure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.id())
    }
}

impl<'de> Deserialize<'de> for Measure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_back() {
        for m in Measure::defaults() {
            assert_eq!(m.id().parse::<Measure>().unwrap(), m);
            assert_eq!(m.label().parse::<Measure>().unwrap(), m, "{}", m.label());
        }
        assert_eq!("nDCG@10".parse::<Measure>().unwrap(), Measure::Ndcg(10));
        assert_eq!(
            "success.5".parse::<Measure>().unwrap(),
            Measure::HitLenient(5)
        );
        assert!("ndcg_cut.0".parse::<Measure>().is_err());
        assert!("bleu.4".parse::<Measure>().is_err());
    }
}
