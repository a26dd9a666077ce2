//! How a reader treats what trec_eval versions disagree on or refuse: duplicate documents and
//! the precision scores are read at.

/// What to do with a document listed twice for one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dedup {
    /// An error naming the line (trec_eval's behaviour).
    #[default]
    Error,
    /// Keep the first occurrence in file order, drop the rest.
    First,
}

/// Score precision: trec_eval 10.0 reads scores as double, 9.x (and pytrec_eval, hence BEIR
/// and MTEB) as float, which merges scores that differ only beyond float precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum Compat {
    /// Scores read as double (trec_eval 10.0).
    #[default]
    #[serde(rename = "trec_eval_10")]
    TrecEval10,
    /// Scores read as float (trec_eval 9.x, pytrec_eval).
    #[serde(rename = "trec_eval_9")]
    TrecEval9,
}

impl Compat {
    /// A score as this precision reads it.
    #[inline]
    pub fn score(self, s: f64) -> f64 {
        match self {
            Compat::TrecEval10 => s,
            Compat::TrecEval9 => s as f32 as f64,
        }
    }
    /// The name written into outputs.
    pub fn name(self) -> &'static str {
        match self {
            Compat::TrecEval10 => "trec_eval_10",
            Compat::TrecEval9 => "trec_eval_9",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_compat_rounds_scores() {
        assert_eq!(
            Compat::TrecEval9.score(97.859726),
            Compat::TrecEval9.score(97.859724)
        );
        assert_ne!(
            Compat::TrecEval10.score(97.859726),
            Compat::TrecEval10.score(97.859724)
        );
    }
}
