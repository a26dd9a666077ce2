//! Chunk vectors for topic paths, coarse topics and dense retrieval: either the LLM layer's
//! embedder role (cached per text, so a rerun embeds nothing twice) or local lexical vectors
//! (hashed TF-IDF over words, and character bigrams for CJK text), which need no model and
//! serve dry runs and embedder-less setups. Rows are L2-normalised: dot product = cosine.

use mtr_core::progress::Progress;
use mtr_llm::Llm;
use rayon::prelude::*;

use crate::chunk::Chunk;
use crate::error::{Error, Result};
use crate::lang::is_cjk_char;

/// Dimensions of lexical vectors.
pub(crate) const LEXICAL_DIM: usize = 512;

/// Texts embedded per `Llm::embed` call (the LLM layer batches them per request).
const EMBED_BATCH: usize = 256;

/// The text of a chunk as it is embedded and shown to agents: title, section, body.
pub(crate) fn chunk_text(c: &Chunk) -> String {
    match &c.section {
        Some(s) if !c.text.starts_with('#') => format!("{}\n{}\n{}", c.title, s, c.text),
        _ => format!("{}\n{}", c.title, c.text),
    }
}

/// Hashed TF-IDF vectors (`LEXICAL_DIM` wide, flat row-major, L2-normalised).
pub(crate) fn lexical_vectors(texts: &[String]) -> Vec<f32> {
    let terms: Vec<Vec<u64>> = texts.par_iter().map(|t| terms(t)).collect();
    let mut df = std::collections::HashMap::<u64, u32>::new();
    for ts in &terms {
        let mut uniq = ts.clone();
        uniq.sort_unstable();
        uniq.dedup();
        for t in uniq {
            *df.entry(t).or_default() += 1;
        }
    }
    let n = texts.len() as f32;
    let rows: Vec<Vec<f32>> = terms
        .par_iter()
        .map(|ts| {
            let mut tf = std::collections::HashMap::<u64, u32>::new();
            for &t in ts {
                *tf.entry(t).or_default() += 1;
            }
            let mut v = vec![0f32; LEXICAL_DIM];
            let mut entries: Vec<(u64, u32)> = tf.into_iter().collect();
            entries.sort_unstable();
            for (t, c) in entries {
                let idf = ((1.0 + n) / (1.0 + df.get(&t).copied().unwrap_or(0) as f32)).ln() + 1.0;
                let w = (1.0 + (c as f32).ln()) * idf;
                let slot = (t % LEXICAL_DIM as u64) as usize;
                let sign = if (t >> 32) & 1 == 0 { 1.0 } else { -1.0 };
                v[slot] += sign * w;
            }
            normalise(&mut v);
            v
        })
        .collect();
    rows.into_iter().flatten().collect()
}

fn terms(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    for c in text.chars() {
        if is_cjk_char(c) {
            flush(&mut word, &mut out);
            if let Some(p) = prev_cjk {
                out.push(fnv(&[p as u32, c as u32]));
            }
            prev_cjk = Some(c);
        } else {
            prev_cjk = None;
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else {
                flush(&mut word, &mut out);
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

fn flush(word: &mut String, out: &mut Vec<u64>) {
    if word.chars().count() >= 2 && !STOP.contains(&word.as_str()) {
        out.push(fnv(&word.chars().map(|c| c as u32).collect::<Vec<_>>()));
    }
    word.clear();
}

const STOP: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "for", "on", "at", "by", "or", "an", "be", "are", "as",
    "it", "with", "this", "that", "from", "was", "were", "has", "have", "its", "their", "not",
    "but", "which", "you", "your", "may",
];

fn fnv(cs: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in cs {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64 finaliser: FNV's low bits alone collide too often for slot selection
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x /= n;
        }
    }
}

/// Embeds texts with the embedder role in batches (progress per batch); returns flat,
/// L2-normalised rows and the dimension.
pub(crate) async fn embed_texts(
    llm: &Llm,
    texts: &[String],
    progress: &dyn Progress,
) -> Result<(Vec<f32>, usize)> {
    let mut out = Vec::new();
    let mut dim = 0;
    for batch in texts.chunks(EMBED_BATCH) {
        let vecs = llm.embed(batch).await?;
        for mut v in vecs {
            if dim == 0 {
                dim = v.len();
            }
            if v.len() != dim || dim == 0 {
                return Err(Error::Embedding(format!(
                    "embedder returned vectors of {} and {dim} dimensions",
                    v.len()
                )));
            }
            normalise(&mut v);
            out.extend(v);
        }
        progress.advance(batch.len() as u64);
    }
    Ok((out, dim))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn similar_texts_are_closer() {
        let texts = vec![
            "Annual leave: employees receive 25 days of paid annual leave per year.".to_string(),
            "Unused annual leave days may be carried over; paid leave is booked in LeaveTrack."
                .to_string(),
            "The VPN client Tunnelgate disconnects after 12 hours.".to_string(),
            "员工每年享有带薪年休假十天。".to_string(),
            "年休假未休完的部分最多结转五天。".to_string(),
        ];
        let v = lexical_vectors(&texts);
        let row = |i: usize| &v[i * LEXICAL_DIM..(i + 1) * LEXICAL_DIM];
        assert!((dot(row(0), row(0)) - 1.0).abs() < 1e-5);
        assert!(dot(row(0), row(1)) > dot(row(0), row(2)));
        assert!(dot(row(3), row(4)) > dot(row(3), row(2)));
        assert_eq!(v, lexical_vectors(&texts));
    }
}
