//! The per-dimension part of `summary.json`, computed in one pass over the audited dimensions:
//! each dimension's statistics ([`crate::statistics::dimension_statistics`]), the judges' failed
//! judgements, the position, length and pool-length biases, the turns flagged by any
//! dimension, and the failure rates by turn depth and prompt length.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::items::aggregate::ItemScore;
use crate::judges::context::ItemKey;
use crate::judges::record::Judgement;
use crate::statistics::dimension_statistics::{self, Lengths};
use crate::statistics::resample;
use crate::summary::{BiasInfo, DimensionSummary, FailureRates};

/// What the judgements and item scores say, per dimension.
pub(crate) struct Statistics {
    pub dimensions: BTreeMap<Dimension, DimensionSummary>,
    /// Position, length and pool-length biases (self-preference is added apart).
    pub bias: BiasInfo,
    /// Failed judgements per judge and dimension.
    pub failures: BTreeMap<String, BTreeMap<Dimension, usize>>,
    /// Turns flagged by any dimension.
    pub flagged_turns: usize,
    pub failure_rates: BTreeMap<String, FailureRates>,
}

/// The judgements and item scores of an audit, and what it needs besides.
pub(crate) struct Scores<'a> {
    pub dims: &'a [Dimension],
    pub judge_names: &'a [String],
    pub items: &'a [ItemScore],
    pub judgements: &'a [Judgement],
    /// Words of the passages and answers.
    pub lengths: &'a Lengths,
    /// Counted prompt tokens per item.
    pub prompt_tokens: &'a HashMap<ItemKey, u64>,
}

/// Each dimension's statistics, failures and biases.
pub(crate) fn of(s: &AuditSettings, x: &Scores<'_>) -> Statistics {
    let judge_names = x.judge_names;
    let mut out = Statistics {
        dimensions: BTreeMap::new(),
        bias: BiasInfo {
            position: Vec::new(),
            length: Vec::new(),
            self_preference: Vec::new(),
            pool_length: Vec::new(),
        },
        failures: BTreeMap::new(),
        flagged_turns: 0,
        failure_rates: dimension_statistics::failure_rates(x.judgements, x.prompt_tokens),
    };
    let mut flagged_turns = BTreeSet::new();
    for &dim in x.dims {
        let di: Vec<&ItemScore> = x.items.iter().filter(|i| i.dimension == dim).collect();
        let dj: Vec<&Judgement> = x.judgements.iter().filter(|j| j.dimension == dim).collect();
        for j in dj.iter().filter(|j| !j.ok()) {
            *out.failures
                .entry(j.judge.clone())
                .or_default()
                .entry(dim)
                .or_default() += 1;
        }
        for i in di.iter().filter(|i| dimension_statistics::is_flagged(i, s)) {
            flagged_turns.insert(i.turn_id.clone());
        }
        out.dimensions.insert(
            dim,
            dimension_statistics::dimension_summary(dim, &di, &dj, judge_names, s),
        );
        out.bias.length.extend(dimension_statistics::length_bias(
            dim,
            &di,
            judge_names,
            x.lengths,
        ));
        if dim == Dimension::Completeness {
            out.bias.position = dimension_statistics::position_bias(&dj, judge_names);
            out.bias.pool_length = dimension_statistics::pool_length_bias(
                &dj,
                judge_names,
                x.lengths,
                &resample::bootstrap(s, "pool-length"),
            );
        }
    }
    out.flagged_turns = flagged_turns.len();
    out
}
