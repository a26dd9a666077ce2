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
    /// trec_eval `P.k`: relevant in the top k / k (ir_measures `P@k`).
    Precision(usize),
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
            | Measure::HitLenient(k)
            | Measure::Precision(k) => k,
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
            Measure::Precision(k) => format!("P.{k}"),
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
            Measure::Precision(k) => format!("P@{k}"),
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
            Measure::Precision(_) => {
                "trec_eval P: relevant (grade >= 1) in the top k / k, a short ranking counts as k"
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
            Measure::Precision(_) => "precision",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// A measure name that could not be parsed; the message is the metrics crate's (with its
/// "did you mean").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownMeasure(pub String);

impl FromStr for Measure {
    type Err = UnknownMeasure;

    /// bench's own ids and labels (`mrr.10`, `MRR@10`, `Recall@100`, `Hit@5`, `Hit-strict@5`,
    /// as `bench.json` files hold them), else any name `mtr eval -m` accepts (trec_eval's or
    /// ir_measures', parsed by the metrics crate) that is one measure at one cutoff.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(m) = own_name(s) {
            return Ok(m);
        }
        let spec = mtr_metrics::measure::to_trec_eval_spec(s)
            .map_err(|e| UnknownMeasure(e.to_string()))?;
        let not_here = |why: &str| {
            UnknownMeasure(format!(
                "measure `{s}` {why}: bench reports nDCG@k, R@k, RR@k, AP@k, P@k and Success@k \
                 (trec_eval ndcg_cut.k, recall.k, recip_rank_cut.k, map_cut.k, P.k, success.k; \
                 also success_strict.k)"
            ))
        };
        let (family, cut) = match spec.split_once('.') {
            Some((f, c)) => (f, Some(c)),
            None => (spec.as_str(), None),
        };
        let make: fn(usize) -> Measure = match family {
            "ndcg_cut" => Measure::Ndcg,
            "recall" => Measure::Recall,
            "recip_rank_cut" => Measure::Mrr,
            "map_cut" => Measure::MapCut,
            "P" => Measure::Precision,
            "success" | "success_lenient" => Measure::HitLenient,
            "success_strict" => Measure::HitStrict,
            f if mtr_metrics::Family::from_name(f).is_some() => {
                return Err(not_here(if cut.is_some() {
                    "is not one of bench's measures"
                } else {
                    "needs a cutoff"
                }));
            }
            _ => {
                // not a known name: the metrics crate's message, with its suggestion
                return Err(UnknownMeasure(
                    mtr_metrics::MeasureSet::parse([s])
                        .err()
                        .map_or_else(|| format!("unknown measure `{s}`"), |e| e.to_string()),
                ));
            }
        };
        let Some(cut) = cut else {
            return Err(not_here("needs a cutoff (one, e.g. `.10` or `@10`)"));
        };
        match cut.parse::<usize>() {
            Ok(k) if k > 0 => Ok(make(k)),
            _ => Err(not_here("needs one positive cutoff")),
        }
    }
}

/// bench's own ids and table labels, case as written by [`Measure::id`] and [`Measure::label`].
fn own_name(s: &str) -> Option<Measure> {
    let (name, k) = s.rsplit_once(['.', '@'])?;
    let k: usize = k.parse().ok().filter(|k| *k > 0)?;
    Some(match name {
        "ndcg_cut" | "nDCG" => Measure::Ndcg(k),
        "recall" | "Recall" => Measure::Recall(k),
        "mrr" | "MRR" => Measure::Mrr(k),
        "map_cut" | "MAP" => Measure::MapCut(k),
        "success_strict" | "Hit-strict" => Measure::HitStrict(k),
        "success_lenient" | "Hit" => Measure::HitLenient(k),
        _ => return None,
    })
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
        for (name, m) in [
            ("P@5", Measure::Precision(5)),
            ("P.5", Measure::Precision(5)),
            ("RR@10", Measure::Mrr(10)),
            ("recip_rank_cut.10", Measure::Mrr(10)),
            ("R@100", Measure::Recall(100)),
            ("AP@100", Measure::MapCut(100)),
            ("Success@10", Measure::HitLenient(10)),
        ] {
            assert_eq!(name.parse::<Measure>().unwrap(), m, "{name}");
        }
        let e = "ndcg@10".parse::<Measure>().unwrap_err().to_string();
        assert!(e.contains("did you mean `nDCG@10`"), "{e}");
        assert!("map".parse::<Measure>().is_err());
    }
}
