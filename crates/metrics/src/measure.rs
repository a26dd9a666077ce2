//! Measure names and parameters, parsed from trec_eval's `-m name[.p1,p2,...]` syntax.
//!
//! trec_eval prints measures in one fixed order (its `te_trec_measures` table), whatever order
//! they were asked for, and sorts each measure's cutoffs ascending; output that must be
//! byte-identical has to follow the same order, so [`Family`] is declared in that order and
//! the mtr extensions come last. Each family expands into one or more output columns
//! (`P.5,10` into `P_5` and `P_10`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{MetricsError, Result};

/// A measure family, in trec_eval's print order (extensions after trec_eval's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Family {
    /// `runid`: the run's tag.
    RunId,
    /// `num_q`: queries evaluated.
    NumQ,
    /// `num_ret`: documents retrieved.
    NumRet,
    /// `num_rel`: relevant documents judged.
    NumRel,
    /// `num_rel_ret`: relevant documents retrieved.
    NumRelRet,
    /// `map`: mean average precision.
    Map,
    /// `gm_map`: geometric mean of AP.
    GmMap,
    /// `Rprec`: precision at R.
    Rprec,
    /// `bpref`.
    Bpref,
    /// `recip_rank`: reciprocal rank of the first relevant document.
    RecipRank,
    /// `iprec_at_recall`: interpolated precision at recall levels.
    IprecAtRecall,
    /// `P`: precision at cutoffs.
    P,
    /// `recall`: recall at cutoffs.
    Recall,
    /// `ndcg`: nDCG over the whole ranking.
    Ndcg,
    /// `ndcg_cut`: nDCG at cutoffs.
    NdcgCut,
    /// `map_cut`: AP at cutoffs.
    MapCut,
    /// `success`: a relevant document in the top k.
    Success,
    // mtr extensions (not trec_eval measures; names chosen so nobody mistakes them).
    /// `ndcg_exp_cut`: nDCG@k with gain 2^grade - 1.
    NdcgExpCut,
    /// `map_capped_cut`: AP@k over min(R, k).
    MapCappedCut,
    /// `success_strict`: a document of grade >= 2 in the top k.
    SuccessStrict,
    /// `success_lenient`: a document of grade >= 1 in the top k.
    SuccessLenient,
    /// `recip_rank_cut`: reciprocal rank within the top k.
    RecipRankCut,
    /// `judged`: the share of the top k that the qrels judge, whatever the grade (ir_measures'
    /// `Judged@k`).
    Judged,
}

const DEFAULT_CUTOFFS: &[usize] = &[5, 10, 15, 20, 30, 100, 200, 500, 1000];
const DEFAULT_SUCCESS: &[usize] = &[1, 5, 10];
const DEFAULT_RR_CUT: &[usize] = &[10];
const DEFAULT_JUDGED: &[usize] = &[10];
const DEFAULT_IPREC: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

impl Family {
    /// Every family, in print order.
    pub const ALL: [Family; 23] = [
        Family::RunId,
        Family::NumQ,
        Family::NumRet,
        Family::NumRel,
        Family::NumRelRet,
        Family::Map,
        Family::GmMap,
        Family::Rprec,
        Family::Bpref,
        Family::RecipRank,
        Family::IprecAtRecall,
        Family::P,
        Family::Recall,
        Family::Ndcg,
        Family::NdcgCut,
        Family::MapCut,
        Family::Success,
        Family::NdcgExpCut,
        Family::MapCappedCut,
        Family::SuccessStrict,
        Family::SuccessLenient,
        Family::RecipRankCut,
        Family::Judged,
    ];

    /// The name used on the command line and as the column prefix.
    pub fn name(self) -> &'static str {
        match self {
            Family::RunId => "runid",
            Family::NumQ => "num_q",
            Family::NumRet => "num_ret",
            Family::NumRel => "num_rel",
            Family::NumRelRet => "num_rel_ret",
            Family::Map => "map",
            Family::GmMap => "gm_map",
            Family::Rprec => "Rprec",
            Family::Bpref => "bpref",
            Family::RecipRank => "recip_rank",
            Family::IprecAtRecall => "iprec_at_recall",
            Family::P => "P",
            Family::Recall => "recall",
            Family::Ndcg => "ndcg",
            Family::NdcgCut => "ndcg_cut",
            Family::MapCut => "map_cut",
            Family::Success => "success",
            Family::NdcgExpCut => "ndcg_exp_cut",
            Family::MapCappedCut => "map_capped_cut",
            Family::SuccessStrict => "success_strict",
            Family::SuccessLenient => "success_lenient",
            Family::RecipRankCut => "recip_rank_cut",
            Family::Judged => "judged",
        }
    }

    /// The family of a command-line name.
    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// True for the measures mtr adds beyond trec_eval.
    #[cfg(test)]
    pub(crate) fn is_extension(self) -> bool {
        self >= Family::NdcgExpCut
    }

    fn param_kind(self) -> ParamKind {
        match self {
            Family::P
            | Family::Recall
            | Family::NdcgCut
            | Family::MapCut
            | Family::Success
            | Family::NdcgExpCut
            | Family::MapCappedCut
            | Family::SuccessStrict
            | Family::SuccessLenient
            | Family::RecipRankCut
            | Family::Judged => ParamKind::Cutoffs,
            Family::IprecAtRecall => ParamKind::Levels,
            Family::Ndcg => ParamKind::Gains,
            _ => ParamKind::None,
        }
    }

    fn default_params(self) -> Params {
        match self {
            Family::Success | Family::SuccessStrict | Family::SuccessLenient => {
                Params::Cutoffs(DEFAULT_SUCCESS.to_vec())
            }
            Family::RecipRankCut => Params::Cutoffs(DEFAULT_RR_CUT.to_vec()),
            Family::Judged => Params::Cutoffs(DEFAULT_JUDGED.to_vec()),
            Family::IprecAtRecall => Params::Levels(DEFAULT_IPREC.to_vec()),
            f if f.param_kind() == ParamKind::Cutoffs => Params::Cutoffs(DEFAULT_CUTOFFS.to_vec()),
            _ => Params::None,
        }
    }

    /// How a summary value is formed from per-query values.
    pub(crate) fn aggregation(self) -> Aggregation {
        match self {
            Family::NumRet | Family::NumRel | Family::NumRelRet => Aggregation::Sum,
            Family::NumQ => Aggregation::Count,
            Family::GmMap => Aggregation::GeometricMean,
            Family::RunId => Aggregation::Text,
            _ => Aggregation::Mean,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParamKind {
    None,
    Cutoffs,
    Levels,
    Gains,
}

/// Parameters of one family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) enum Params {
    /// No parameter.
    None,
    /// Rank cutoffs, ascending, positive, unique.
    Cutoffs(Vec<usize>),
    /// Recall levels for iprec_at_recall, ascending, unique.
    Levels(Vec<f64>),
    /// nDCG gains per relevance level (`level=gain`), as given, plus the text for the name.
    Gains {
        /// (relevance level, gain) pairs.
        pairs: Vec<(i64, f64)>,
        /// The parameters as written, for the column name.
        printable: String,
    },
}

/// How a column's summary (`all`) value is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Aggregation {
    /// Arithmetic mean over the evaluated queries.
    Mean,
    /// Sum over the evaluated queries (printed as an integer).
    Sum,
    /// Number of evaluated queries.
    Count,
    /// exp(mean(ln(max(AP, 1e-5)))), trec_eval's gm_map.
    GeometricMean,
    /// A text value (runid).
    Text,
}

/// A set of requested measures with their parameters, iterated in trec_eval's print order.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureSet {
    families: BTreeMap<Family, Params>,
}

/// trec_eval's `official` set (what it prints without `-m`).
const OFFICIAL: &[Family] = &[
    Family::RunId,
    Family::NumQ,
    Family::NumRet,
    Family::NumRel,
    Family::NumRelRet,
    Family::Map,
    Family::GmMap,
    Family::Rprec,
    Family::Bpref,
    Family::RecipRank,
    Family::IprecAtRecall,
    Family::P,
];

/// trec_eval nicknames naming measures mtr does not compute.
const UNSUPPORTED: &[&str] = &[
    "all_trec",
    "set",
    "all_prefs",
    "prefs",
    "qrels_jg",
    "relstring",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "dcg",
    "ideal_dcg",
    "ndcg_rel",
    "Rndcg",
    "relative_P",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj",
    "yaap",
    "ndcg_p",
    "map_avgjg",
    "P_avgjg",
    "Rprec_mult_avgjg",
];

impl Default for MeasureSet {
    fn default() -> Self {
        MeasureSet::official()
    }
}

impl MeasureSet {
    /// No measure.
    pub fn empty() -> Self {
        MeasureSet {
            families: BTreeMap::new(),
        }
    }

    /// trec_eval's default (`official`) measures.
    pub fn official() -> Self {
        let mut s = MeasureSet::empty();
        for f in OFFICIAL {
            s.families.insert(*f, f.default_params());
        }
        s
    }

    /// Parses `-m` arguments: `map`, `P.5,10`, `ndcg.1=3,2=9`, nicknames `official` and `all`
    /// (every measure mtr computes). As in trec_eval, the first parameter list given for a
    /// measure wins; a bare name adds the measure with its default parameters.
    pub fn parse<I, S>(specs: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut set = MeasureSet::empty();
        let mut explicit: Vec<Family> = Vec::new();
        for spec in specs {
            set.add_spec(spec.as_ref(), &mut explicit)?;
        }
        if set.families.is_empty() {
            return Err(MetricsError::invalid("no measures requested"));
        }
        Ok(set)
    }

    fn add_spec(&mut self, spec: &str, explicit: &mut Vec<Family>) -> Result<()> {
        let translated = to_trec_eval_spec(spec.trim())?;
        let spec = translated.as_str();
        let (name, params) = match spec.split_once('.') {
            Some((n, p)) => (n, Some(p)),
            None => (spec, None),
        };
        match name {
            "official" | "all" if params.is_some() => {
                return Err(MetricsError::invalid(format!(
                    "nickname `{name}` takes no parameters"
                )));
            }
            "official" => {
                for f in OFFICIAL {
                    self.families
                        .entry(*f)
                        .or_insert_with(|| f.default_params());
                }
                return Ok(());
            }
            "all" => {
                for f in Family::ALL {
                    self.families.entry(f).or_insert_with(|| f.default_params());
                }
                return Ok(());
            }
            _ => {}
        }
        let Some(family) = Family::from_name(name) else {
            if UNSUPPORTED.contains(&name) {
                return Err(MetricsError::invalid(format!(
                    "trec_eval measure `{name}` is not computed by mtr; supported: {}",
                    supported_names()
                )));
            }
            return Err(unknown_measure(spec));
        };
        match params {
            None => {
                self.families
                    .entry(family)
                    .or_insert_with(|| family.default_params());
            }
            Some(p) => {
                let parsed = parse_params(family, p)?;
                if !explicit.contains(&family) {
                    explicit.push(family);
                    self.families.insert(family, parsed);
                }
            }
        }
        Ok(())
    }

    /// True when the family is requested.
    pub fn contains(&self, family: Family) -> bool {
        self.families.contains_key(&family)
    }

    /// The requested families and their parameters, in print order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Family, &Params)> {
        self.families.iter().map(|(f, p)| (*f, p))
    }

    /// The largest rank any requested measure looks at, if all are depth-limited.
    pub fn max_depth(&self) -> Option<usize> {
        let mut depth = 0usize;
        for (f, p) in self.iter() {
            match (f, p) {
                (Family::NumQ | Family::RunId, _) => {}
                (_, Params::Cutoffs(c)) => depth = depth.max(c.last().copied().unwrap_or(0)),
                _ => return None,
            }
        }
        Some(depth)
    }

    /// The output columns, in print order.
    pub fn columns(&self) -> Vec<Column> {
        let mut cols = Vec::new();
        for (family, params) in self.iter() {
            match params {
                Params::Cutoffs(cuts) => {
                    for (i, k) in cuts.iter().enumerate() {
                        cols.push(Column::new(family, i, format!("{}_{k}", family.name())));
                    }
                }
                Params::Levels(levels) => {
                    for (i, l) in levels.iter().enumerate() {
                        cols.push(Column::new(family, i, format!("{}_{l:3.2}", family.name())));
                    }
                }
                Params::Gains { printable, .. } => {
                    cols.push(Column::new(
                        family,
                        0,
                        format!("{}_{printable}", family.name()),
                    ));
                }
                Params::None => cols.push(Column::new(family, 0, family.name().to_string())),
            }
        }
        cols
    }
}

/// ir_measures names, spelled as ir_measures writes them, and the trec_eval families they
/// stand for: (name, the family without a cutoff, the family with `@k`). `RR@k` is MRR on the
/// top k (mtr's `recip_rank_cut.k`), `AP@k` is trec_eval's `map_cut.k` (denominator: every
/// relevant document), `R@k` is `recall.k`, `Success@k` is `success.k`.
const IR_MEASURES: &[(&str, Option<Family>, Option<Family>)] = &[
    ("nDCG", Some(Family::Ndcg), Some(Family::NdcgCut)),
    ("RR", Some(Family::RecipRank), Some(Family::RecipRankCut)),
    ("AP", Some(Family::Map), Some(Family::MapCut)),
    ("P", Some(Family::P), Some(Family::P)),
    ("R", None, Some(Family::Recall)),
    ("Success", None, Some(Family::Success)),
    ("Rprec", Some(Family::Rprec), None),
    ("Bpref", Some(Family::Bpref), None),
    ("IPrec", None, Some(Family::IprecAtRecall)),
    ("NumQ", Some(Family::NumQ), None),
    ("NumRet", Some(Family::NumRet), None),
    ("NumRel", Some(Family::NumRel), None),
    ("Judged", None, Some(Family::Judged)),
];

/// Names other tools use (ranx, pyserini, papers) and the ir_measures name mtr suggests for
/// them; they are not accepted as they are, because their conventions differ in details.
const OTHER_NAMES: &[(&str, &str)] = &[
    ("mrr", "RR"),
    ("map", "AP"),
    ("recall", "R"),
    ("precision", "P"),
    ("hit_rate", "Success"),
    ("hitrate", "Success"),
    ("hits", "Success"),
    ("hit", "Success"),
    ("r-precision", "Rprec"),
    ("ndcg", "nDCG"),
];

/// Translates a measure written the ir_measures way (`nDCG@10`, `RR@10`, `AP`, `P@5`, `R@100`,
/// `Success@10`) into trec_eval's syntax (`ndcg_cut.10`, `recip_rank_cut.10`, `map`, `P.5`,
/// `recall.100`, `success.10`); trec_eval specs come back as they are. The one place where the
/// two vocabularies meet: `mtr eval -m`, `mtr bench --measure` and the leaderboard all parse
/// through it.
pub fn to_trec_eval_spec(spec: &str) -> Result<String> {
    let (name, cut) = match spec.split_once('@') {
        Some((n, c)) => (n, Some(c)),
        None => (spec, None),
    };
    if let Some((base, _)) = name.split_once('(')
        && IR_MEASURES.iter().any(|e| e.0 == base)
    {
        return Err(MetricsError::invalid(format!(
            "measure `{spec}`: ir_measures parameters such as `(rel=2)` are not supported; \
             write `{base}{}` and set the relevance level with the command's option",
            cut.map(|c| format!("@{c}")).unwrap_or_default()
        )));
    }
    let Some((ir, bare, cutoff)) = IR_MEASURES.iter().find(|e| e.0 == name) else {
        if cut.is_some() {
            return Err(unknown_measure(spec));
        }
        return Ok(spec.to_string());
    };
    match (cut, bare, cutoff) {
        (None, Some(f), _) => Ok(f.name().to_string()),
        (None, None, _) => Err(MetricsError::invalid(format!(
            "measure `{ir}` needs a cutoff, e.g. `{ir}@10`"
        ))),
        (Some(k), _, Some(f)) => {
            let ok = if *f == Family::IprecAtRecall {
                k.parse::<f64>().is_ok()
            } else {
                k.parse::<usize>().is_ok_and(|k| k > 0)
            };
            if !ok {
                return Err(MetricsError::invalid(format!(
                    "measure `{spec}`: the cutoff `{k}` is not a positive whole number"
                )));
            }
            Ok(format!("{}.{k}", f.name()))
        }
        (Some(_), _, None) => Err(MetricsError::invalid(format!(
            "measure `{ir}` takes no cutoff: write `{ir}`"
        ))),
    }
}

/// The error for a measure name nobody knows, with the nearest known name when one is close.
fn unknown_measure(spec: &str) -> MetricsError {
    let hint = match suggest(spec) {
        Some(s) => format!("did you mean `{s}`? "),
        None => String::new(),
    };
    MetricsError::invalid(format!(
        "unknown measure `{spec}`: {hint}measures are written as trec_eval does \
         (ndcg_cut.10, recip_rank, P.5, recall.100, map_cut.100, success.10) or as ir_measures \
         does (nDCG@10, RR@10, P@5, R@100, AP@100, Success@10); all trec_eval names: {}",
        supported_names()
    ))
}

/// The known spelling nearest to a misspelt measure (`ndgc_cut.10` -> `ndcg_cut.10`,
/// `ndcg@10` -> `nDCG@10`, `mrr@10` -> `RR@10`, `ndcg_cut@10` -> `ndcg_cut.10`).
pub(crate) fn suggest(spec: &str) -> Option<String> {
    let (name, rest) = match spec.split_once('@') {
        Some((n, c)) => (n, Some(c)),
        None => match spec.split_once('.') {
            Some((n, c)) => (n, Some(c)),
            None => (spec, None),
        },
    };
    let ir = |n: &str| format!("{n}{}", rest.map(|r| format!("@{r}")).unwrap_or_default());
    let trec = |n: &str| format!("{n}{}", rest.map(|r| format!(".{r}")).unwrap_or_default());
    // another tool's name, or a known name in the wrong case or with the other separator
    let lower = name.to_ascii_lowercase();
    if let Some((_, to)) = OTHER_NAMES.iter().find(|(from, _)| *from == lower) {
        return Some(ir(to));
    }
    if let Some(f) = Family::ALL
        .iter()
        .find(|f| f.name().eq_ignore_ascii_case(name))
    {
        return Some(trec(f.name()));
    }
    if let Some((n, _, _)) = IR_MEASURES.iter().find(|e| e.0.eq_ignore_ascii_case(name)) {
        return Some(ir(n));
    }
    // a typo: the closest name within two edits
    // (ties go to the vocabulary the spec is written in: `@` is ir_measures')
    let written_ir = spec.contains('@');
    let mut best: Option<(usize, String)> = None;
    let candidates = Family::ALL
        .iter()
        .map(|f| (f.name(), true))
        .chain(IR_MEASURES.iter().map(|e| (e.0, false)));
    for (cand, is_trec) in candidates {
        let d = edit_distance(&lower, &cand.to_ascii_lowercase());
        let score = 2 * d + usize::from(is_trec == written_ir);
        if d <= 2 && d < cand.len() && best.as_ref().is_none_or(|(b, _)| score < *b) {
            best = Some((score, if is_trec { trec(cand) } else { ir(cand) }));
        }
    }
    best.map(|(_, s)| s)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn supported_names() -> String {
    let mut names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
    names.extend(["official", "all"]);
    names.join(", ")
}

/// One output value: a family, the index of its parameter, and its printed name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// The printed name (`P_10`).
    pub name: String,
    /// The family it belongs to.
    pub family: Family,
    /// Index of its parameter in the family's list.
    pub param_index: usize,
    /// How its summary is formed.
    pub(crate) aggregation: Aggregation,
    /// trec_eval prints it per query (`num_q`, `gm_map` and `runid` are summary-only).
    pub per_query: bool,
}

impl Column {
    fn new(family: Family, param_index: usize, name: String) -> Self {
        Column {
            name,
            family,
            param_index,
            aggregation: family.aggregation(),
            per_query: !matches!(family, Family::NumQ | Family::GmMap | Family::RunId),
        }
    }
    /// Printed as an integer (`%ld`) rather than `%6.4f`.
    pub(crate) fn is_integer(&self) -> bool {
        matches!(self.aggregation, Aggregation::Sum | Aggregation::Count)
    }
}

fn parse_params(family: Family, p: &str) -> Result<Params> {
    if p.is_empty() {
        return Err(MetricsError::invalid(format!(
            "improper measure parameters for `{}`",
            family.name()
        )));
    }
    match family.param_kind() {
        ParamKind::None => Err(MetricsError::invalid(format!(
            "measure `{}` takes no parameters",
            family.name()
        ))),
        ParamKind::Cutoffs => {
            let mut cuts = Vec::new();
            for tok in p.split(',') {
                let v = c_strtol(tok).ok_or_else(|| {
                    MetricsError::invalid(format!(
                        "cutoff `{tok}` of `{}` is not a number",
                        family.name()
                    ))
                })?;
                if v <= 0 {
                    return Err(MetricsError::invalid(format!(
                        "cutoffs of `{}` must be positive, got `{tok}`",
                        family.name()
                    )));
                }
                cuts.push(v as usize);
            }
            cuts.sort_unstable();
            check_cutoffs(family, &cuts)?;
            Ok(Params::Cutoffs(cuts))
        }
        ParamKind::Levels => {
            let mut levels = Vec::new();
            for tok in p.split(',') {
                let v: f64 = tok.trim().parse().map_err(|_| {
                    MetricsError::invalid(format!(
                        "recall level `{tok}` of `{}` is not a number",
                        family.name()
                    ))
                })?;
                levels.push(v);
            }
            levels.sort_by(f64::total_cmp);
            if levels.windows(2).any(|w| w[0] == w[1]) {
                return Err(MetricsError::invalid(format!(
                    "duplicate levels in `{}`",
                    family.name()
                )));
            }
            Ok(Params::Levels(levels))
        }
        ParamKind::Gains => {
            let mut pairs = Vec::new();
            for tok in p.split(',') {
                let (l, g) = tok.split_once('=').ok_or_else(|| {
                    MetricsError::invalid(format!(
                        "malformed pair parameters in `{p}` (want level=gain,...)"
                    ))
                })?;
                let level = c_strtol(l).ok_or_else(|| {
                    MetricsError::invalid(format!("gain level `{l}` in `{p}` is not an integer"))
                })?;
                let gain: f64 = g.trim().parse().map_err(|_| {
                    MetricsError::invalid(format!("gain `{g}` in `{p}` is not a number"))
                })?;
                pairs.push((level, gain));
            }
            Ok(Params::Gains {
                pairs,
                printable: p.to_string(),
            })
        }
    }
}

fn check_cutoffs(family: Family, cuts: &[usize]) -> Result<()> {
    if cuts.is_empty() || cuts[0] == 0 {
        return Err(MetricsError::invalid(format!(
            "cutoffs of `{}` must be positive",
            family.name()
        )));
    }
    if cuts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(MetricsError::invalid(format!(
            "cutoffs of `{}` must be ascending without duplicates",
            family.name()
        )));
    }
    Ok(())
}

/// The integer prefix of a string, as C's strtol reads it (`23.4` is 23); None without digits.
fn c_strtol(s: &str) -> Option<i64> {
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: &str = &rest[..rest.bytes().take_while(u8::is_ascii_digit).count()];
    if digits.is_empty() {
        return None;
    }
    let v: i64 = digits.parse().ok()?;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests;
