//! Ratings read from token probabilities (G-Eval style). A small judge asked for a 1-5 rating
//! puts most of its probability on two or three grades; the sampled grade throws that away and
//! makes ties everywhere. Where the endpoint returns `logprobs` (llama.cpp and OpenAI do, in
//! the OpenAI format `choices[0].logprobs.content[i] = {token, logprob, top_logprobs}`), the
//! rating can instead be the probability-weighted mean over the rating tokens at the position
//! where the rating is written: sum over g of P(g) * g, with P renormalised over the grades of
//! the scale. One forward pass, and with the verdict first (see [`crate::schema_caps`]) no long
//! generation is needed before it. Cheapest of all: prefill the assistant's answer with
//! [`prefill`] (`{"rating": `) and ask for one token; llama.cpp continues a trailing
//! assistant message. (Under a JSON-schema grammar, llama.cpp reports the logprobs of the
//! unconstrained model, not of the grammar's tokens: read ratings from a prefilled answer.)

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Which way a judgement's score was obtained (recorded per judgement).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RatingMode {
    /// The grade the model wrote.
    #[default]
    Generated,
    /// The probability-weighted mean over the grade tokens.
    Probability,
    /// A relevance judge's score (reranker or embedding cosine) mapped onto the scale (see
    /// [`crate::rerank`]).
    Relevance,
}

/// The grade distribution at the rating position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RatingDistribution {
    /// `(grade, probability)` over the scale, renormalised to sum to 1.
    pub probs: Vec<(i64, f64)>,
    /// Sum of P(g) * g.
    pub mean: f64,
    /// Probability mass the model put on the scale's grades before renormalising (how sure it
    /// was to write a grade at all there); low values mean the reading is unreliable.
    pub mass: f64,
    /// The grade actually written at that position.
    pub written: Option<i64>,
}

/// `x` to 6 decimals: a value that survives a JSON round trip bit for bit (a fresh answer and
/// its cached copy must write the same bytes), with precision to spare for a 1-5 rating.
fn stable(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The start of an assistant answer whose next token is the value of `key`.
pub fn prefill(key: &str) -> String {
    format!("{{\"{key}\": ")
}

/// The request fields that ask for `top` alternatives per generated token.
pub(crate) fn request_fields(top: u32) -> Value {
    json!({"logprobs": true, "top_logprobs": top})
}

fn grade_of(token: &str, lo: i64, hi: i64) -> Option<i64> {
    let t = token.trim().trim_matches('"');
    t.parse::<i64>().ok().filter(|g| (lo..=hi).contains(g))
}

/// The distribution at one token's position over the grades `lo..=hi` among its top
/// alternatives (and the written token, when the alternatives omit it); `None` when no grade
/// has any probability there.
fn distribution_at(
    item: &Value,
    written: Option<i64>,
    lo: i64,
    hi: i64,
) -> Option<RatingDistribution> {
    let mut mass = vec![0.0; (hi - lo + 1) as usize];
    let alternatives = item
        .get("top_logprobs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut seen_written = false;
    for alt in &alternatives {
        let (Some(t), Some(lp)) = (
            alt.get("token").and_then(Value::as_str),
            alt.get("logprob").and_then(Value::as_f64),
        ) else {
            continue;
        };
        if let Some(g) = grade_of(t, lo, hi) {
            mass[(g - lo) as usize] += lp.exp();
            seen_written |= Some(g) == written;
        }
    }
    if let Some(w) = written.filter(|_| !seen_written)
        && let Some(lp) = item.get("logprob").and_then(Value::as_f64)
    {
        mass[(w - lo) as usize] += lp.exp();
    }
    let total: f64 = mass.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let probs: Vec<(i64, f64)> = mass
        .iter()
        .enumerate()
        .map(|(i, m)| (lo + i as i64, m / total))
        .collect();
    let mean = probs.iter().map(|(g, p)| *g as f64 * p).sum();
    Some(RatingDistribution {
        probs: probs.into_iter().map(|(g, p)| (g, stable(p))).collect(),
        mean: stable(mean),
        mass: stable(total.min(1.0)),
        written,
    })
}

/// The rating distribution of the value of JSON key `key` (e.g. `rating`, `score`) in a chat
/// completion response with logprobs, whose answer continues `prefilled` (the assistant text
/// sent with the request, `""` for none); `None` when the response has no logprobs or the
/// key's value never appears as a grade token of `lo..=hi`. The first token after a prefilled
/// key is the value's position whatever it is: when the judge wrote no grade there (the `"`
/// of a string such as `"none"`, a space), the distribution is read from the grades among its
/// alternatives, with `written` null and `mass` saying how little they hold.
pub fn rating_distribution(
    response: &Value,
    prefilled: &str,
    key: &str,
    lo: i64,
    hi: i64,
) -> Option<RatingDistribution> {
    let content = response
        .pointer("/choices/0/logprobs/content")?
        .as_array()?;
    let marker = format!("\"{key}\"");
    let mut text = prefilled.to_string();
    for (i, item) in content.iter().enumerate() {
        let token = item
            .get("token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // the rating token: right after `"key":` (spaces allowed), a grade of the scale
        let after_key = text
            .rfind(&marker)
            .is_some_and(|at| text[at + marker.len()..].trim() == ":");
        if after_key && let Some(written) = grade_of(token, lo, hi) {
            return distribution_at(item, Some(written), lo, hi);
        }
        if after_key && i == 0 && !prefilled.is_empty() {
            return distribution_at(item, None, lo, hi);
        }
        text.push_str(token);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(token: &str, lp: f64, top: &[(&str, f64)]) -> Value {
        json!({"token": token, "logprob": lp, "top_logprobs": top.iter().map(|(t, l)| json!({"token": t, "logprob": l})).collect::<Vec<_>>()})
    }

    fn response(tokens: Vec<Value>) -> Value {
        json!({"choices": [{"message": {"content": ""}, "logprobs": {"content": tokens}}]})
    }

    #[test]
    fn the_mean_is_weighted_by_the_grade_probabilities() {
        let r = response(vec![
            tok("{\"", -0.01, &[]),
            tok("rating", -0.01, &[]),
            tok("\":", -0.01, &[]),
            tok(
                " 4",
                0.6f64.ln(),
                &[
                    (" 4", 0.6f64.ln()),
                    (" 3", 0.3f64.ln()),
                    (" 5", 0.05f64.ln()),
                    (" the", 0.05f64.ln()),
                ],
            ),
            tok(",", -0.01, &[]),
        ]);
        let d = rating_distribution(&r, "", "rating", 1, 5).unwrap();
        assert_eq!(d.written, Some(4));
        assert!((d.mass - 0.95).abs() < 1e-6, "{}", d.mass);
        let expected = (4.0 * 0.6 + 3.0 * 0.3 + 5.0 * 0.05) / 0.95;
        assert!((d.mean - expected).abs() < 1e-6, "{} vs {expected}", d.mean);
        assert!((d.probs.iter().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-5);
        // what is stored reads back bit for bit
        let back: RatingDistribution =
            serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn digits_elsewhere_are_not_the_rating() {
        // a digit in the justification before the key, and the key's own value later
        let r = response(vec![
            tok("{\"justification\": \"", -0.1, &[]),
            tok("2", -0.1, &[("2", -0.1)]),
            tok(" days\", \"", -0.1, &[]),
            tok("score", -0.1, &[]),
            tok("\": ", -0.1, &[]),
            tok("5", -0.2, &[("5", -0.2), ("4", -1.8)]),
            tok("}", -0.1, &[]),
        ]);
        let d = rating_distribution(&r, "", "score", 1, 5).unwrap();
        assert_eq!(d.written, Some(5));
        assert!(d.mean > 4.5 && d.mean < 5.0, "{}", d.mean);
        assert!(rating_distribution(&r, "", "rating", 1, 5).is_none());
        assert!(rating_distribution(&json!({"choices": [{}]}), "", "score", 1, 5).is_none());
    }

    #[test]
    fn the_written_grade_counts_when_the_alternatives_omit_it() {
        let r = response(vec![
            tok("\"rating\":", -0.1, &[]),
            tok("3", -0.5, &[("2", -2.0)]),
        ]);
        let d = rating_distribution(&r, "", "rating", 1, 5).unwrap();
        assert_eq!(d.written, Some(3));
        assert!(d.mean > 2.0 && d.mean < 3.0);
        assert_eq!(request_fields(5)["top_logprobs"], 5);
    }

    #[test]
    fn a_prefilled_answer_is_read_from_its_first_token() {
        // llama.cpp answering `{"rating": ` + one token (what the local server returned)
        let r = response(vec![tok(
            "4",
            -1.18,
            &[
                ("4", -1.18),
                ("5", -1.49),
                ("1", -1.78),
                ("3", -1.83),
                ("2", -2.6),
                ("9", -3.8),
            ],
        )]);
        let d = rating_distribution(&r, &prefill("rating"), "rating", 1, 5).unwrap();
        assert_eq!(d.written, Some(4));
        assert!(d.mean > 3.0 && d.mean < 3.6, "{}", d.mean);
        assert!(rating_distribution(&r, "", "rating", 1, 5).is_none());
    }

    #[test]
    fn a_prefilled_value_that_is_no_label_is_read_from_its_alternatives() {
        // `{"choice": ` continued by `"` (the start of "none"), the labels 1-4 among the
        // alternatives: the distribution over the labels, nothing written, little mass
        let r = response(vec![tok(
            "\"",
            0.6f64.ln(),
            &[
                ("\"", 0.6f64.ln()),
                ("2", 0.2f64.ln()),
                ("1", 0.1f64.ln()),
                (" ", 0.05f64.ln()),
                ("4", 0.05f64.ln()),
            ],
        )]);
        let d = rating_distribution(&r, &prefill("choice"), "choice", 1, 4).unwrap();
        assert_eq!(d.written, None);
        assert!((d.mass - 0.35).abs() < 1e-6, "{}", d.mass);
        let p: Vec<f64> = d.probs.iter().map(|(_, p)| *p).collect();
        assert!((p[1] - 0.2 / 0.35).abs() < 1e-5 && p[2] == 0.0, "{p:?}");
        // no label among the alternatives: nothing to read
        let r = response(vec![tok("\"", -0.1, &[("\"", -0.1), ("none", -3.0)])]);
        assert!(rating_distribution(&r, &prefill("choice"), "choice", 1, 4).is_none());
        // without a prefill the position is only known from a written grade
        let r = response(vec![
            tok("{\"choice\": ", -0.1, &[]),
            tok("\"", -0.1, &[("2", -2.0)]),
        ]);
        assert!(rating_distribution(&r, "", "choice", 1, 4).is_none());
    }
}
