//! Recursive, token-aware chunking with stable ids `<doc_id>#<chunk_index>`.
//!
//! A document is cut into pieces only as finely as needed: lines first (each line's boundary
//! is a heading, a paragraph break or a plain line break), and a piece longer than the maximum
//! is split again at sentences (`.!?` followed by space, and `。！？` with any closing quotes),
//! then clauses (`,;:` followed by space, `，；：、`), then words, then characters. Pieces are
//! counted with tiktoken (o200k_base) once each. The chunks are then chosen by dynamic
//! programming over the piece boundaries: every chunk fits the maximum; breaking at a weaker
//! boundary costs more (heading 0 < paragraph 1 < line 2 < sentence 3 << clause 20 < word 40
//! < character 80), a chunk below the minimum pays up to 6, and each chunk costs 0.5. So a
//! chunk never ends at a comma when a sentence end would do, even if that leaves a chunk
//! below the minimum, while short sections are merged up towards the size range. A document
//! shorter than the maximum stays one chunk; one slightly longer splits into balanced halves
//! rather than a full chunk and a crumb.
//!
//! With `keep` (`--chunks as-is`, `[synth.chunking] keep = true`) nothing is cut: every
//! document (a team's LangChain or LlamaIndex chunk, a JSON-lines passage, a page, a section)
//! is one chunk whose id is the document's own, so a run of the team's retriever over its own
//! index scores against the benchmark's qrels as it is.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::curate::heading;
use crate::input::Document;
use crate::lang::is_cjk_char;

/// Chunk size parameters (the `[synth.chunking]` config section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkOptions {
    /// Chunks below this many tokens are avoided where the text allows.
    pub min_tokens: usize,
    /// No chunk exceeds this many tokens.
    pub max_tokens: usize,
    /// tiktoken encoding: `o200k_base` (default) or `cl100k_base`.
    pub encoding: String,
    /// Keep every document as one passage with its own id (`--chunks as-is`): a team's own
    /// chunks, not cut again. Left out of the canonical JSON when false, so configs from
    /// before it keep their fingerprint.
    #[serde(skip_serializing_if = "is_false")]
    pub keep: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            min_tokens: 256,
            max_tokens: 512,
            encoding: "o200k_base".into(),
            keep: false,
        }
    }
}

impl ChunkOptions {
    /// Checks the range and the encoding name; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_tokens < 8 {
            return Err(format!("max_tokens {} is below 8", self.max_tokens));
        }
        if self.min_tokens > self.max_tokens {
            return Err(format!(
                "min_tokens {} is above max_tokens {}",
                self.min_tokens, self.max_tokens
            ));
        }
        bpe(&self.encoding).map(|_| ())
    }
}

/// Parses `MIN-MAX` (e.g. `256-512`) into a size range.
pub fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("`{s}` is not MIN-MAX"))?;
    let a = a
        .trim()
        .parse::<usize>()
        .map_err(|e| format!("`{a}`: {e}"))?;
    let b = b
        .trim()
        .parse::<usize>()
        .map_err(|e| format!("`{b}`: {e}"))?;
    Ok((a, b))
}

/// The tokenizer of an encoding name.
pub fn bpe(encoding: &str) -> Result<&'static CoreBPE, String> {
    match encoding {
        "o200k_base" => Ok(tiktoken_rs::o200k_base_singleton()),
        "cl100k_base" => Ok(tiktoken_rs::cl100k_base_singleton()),
        other => Err(format!(
            "unknown tiktoken encoding `{other}` (use o200k_base or cl100k_base)"
        )),
    }
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// `<doc_id>#<index>`.
    pub id: String,
    pub doc_id: String,
    pub index: usize,
    pub title: String,
    /// The nearest heading above the chunk's start, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    pub text: String,
    /// Exact token count of `text`.
    pub tokens: usize,
}

impl Chunk {
    pub(crate) fn to_passage(&self) -> mtr_core::Passage {
        let mut meta = serde_json::Map::new();
        meta.insert("tokens".into(), self.tokens.into());
        if let Some(s) = &self.section {
            meta.insert("section".into(), s.clone().into());
        }
        mtr_core::Passage {
            id: self.id.clone(),
            title: self.title.clone(),
            text: self.text.clone(),
            doc_id: Some(self.doc_id.clone()),
            meta,
        }
    }
}

/// Boundary strength before a piece: lower is stronger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Heading = 0,
    Paragraph = 1,
    Line = 2,
    Sentence = 3,
    Clause = 4,
    Word = 5,
    Char = 6,
}

impl Level {
    fn cost(self) -> f64 {
        match self {
            Level::Heading => 0.0,
            Level::Paragraph => 1.0,
            Level::Line => 2.0,
            Level::Sentence => 3.0,
            Level::Clause => 20.0,
            Level::Word => 40.0,
            Level::Char => 80.0,
        }
    }
    fn finer(self) -> Option<Level> {
        match self {
            Level::Heading | Level::Paragraph | Level::Line => Some(Level::Sentence),
            Level::Sentence => Some(Level::Clause),
            Level::Clause => Some(Level::Word),
            Level::Word => Some(Level::Char),
            Level::Char => None,
        }
    }
}

/// A piece of the text: `text[start..end]`, its token count and the boundary before it.
#[derive(Debug, Clone, Copy)]
struct Piece {
    start: usize,
    end: usize,
    tokens: usize,
    before: Level,
}

/// Chunks all documents in parallel (with `keep`, one chunk each); output in document order.
pub fn chunk_corpus(docs: &[Document], opts: &ChunkOptions) -> Result<Vec<Chunk>, String> {
    let bpe = bpe(&opts.encoding)?;
    if opts.keep {
        return Ok(docs.par_iter().map(|d| kept(d, bpe)).collect());
    }
    let per_doc: Vec<Vec<Chunk>> = docs
        .par_iter()
        .map(|d| chunk_document(d, opts, bpe))
        .collect();
    Ok(per_doc.into_iter().flatten().collect())
}

/// A document kept whole as one chunk with its own id (`--chunks as-is`).
fn kept(doc: &Document, bpe: &CoreBPE) -> Chunk {
    let text = doc.text.trim();
    Chunk {
        id: doc.id.clone(),
        doc_id: doc.id.clone(),
        index: 0,
        title: doc.title.clone(),
        section: None,
        text: text.to_string(),
        tokens: bpe.encode_ordinary(text).len(),
    }
}

/// Chunks one document.
pub(crate) fn chunk_document(doc: &Document, opts: &ChunkOptions, bpe: &CoreBPE) -> Vec<Chunk> {
    let text = doc.text.trim_end();
    let headings = heading_offsets(text);
    let mut pieces = Vec::new();
    for (start, end, before) in lines(text) {
        split_piece(text, start, end, before, opts.max_tokens, bpe, &mut pieces);
    }
    pieces.retain(|p| !text[p.start..p.end].trim().is_empty());
    if pieces.is_empty() {
        return Vec::new();
    }
    let mut ranges = Vec::new();
    let exact = ExactRanges {
        text,
        pieces: &pieces,
        min: opts.min_tokens,
        max: opts.max_tokens,
        bpe,
    };
    exact.push(0, pieces.len(), opts.max_tokens, &mut ranges);
    let mut out = Vec::with_capacity(ranges.len());
    for (i, j, tokens) in ranges {
        let chunk_text = text[pieces[i].start..pieces[j - 1].end].trim();
        let section = headings
            .iter()
            .rev()
            .find(|(off, _)| *off <= pieces[i].start)
            .map(|(_, h)| h.clone());
        let index = out.len();
        out.push(Chunk {
            id: format!("{}#{}", doc.id, index),
            doc_id: doc.id.clone(),
            index,
            title: doc.title.clone(),
            section,
            text: chunk_text.to_string(),
            tokens,
        });
    }
    out
}

/// What [`ExactRanges::push`] chooses chunks from: a document's pieces and the chunk sizes
/// in tokens.
struct ExactRanges<'a> {
    text: &'a str,
    pieces: &'a [Piece],
    min: usize,
    max: usize,
    bpe: &'a CoreBPE,
}

impl ExactRanges<'_> {
    /// Chooses chunks over `pieces[lo..hi]` and checks each one's exact token count: piece
    /// counts add up to within a token or two of the exact count (a trimmed leading space can
    /// cost a token), so a chunk that ends up over `max` is chosen again with a budget reduced
    /// by the overshoot. Pushes `(i, j, exact_tokens)`.
    fn push(&self, lo: usize, hi: usize, budget: usize, out: &mut Vec<(usize, usize, usize)>) {
        let (text, pieces, max) = (self.text, self.pieces, self.max);
        for (i, j) in choose_chunks(&pieces[lo..hi], self.min, budget) {
            let (i, j) = (lo + i, lo + j);
            let t = text[pieces[i].start..pieces[j - 1].end].trim();
            if t.is_empty() {
                continue;
            }
            let tokens = self.bpe.encode_ordinary(t).len();
            if tokens > max && j - i > 1 && budget > 1 {
                let tighter = budget.saturating_sub(tokens - max).max(1);
                self.push(i, j, tighter, out);
            } else {
                out.push((i, j, tokens));
            }
        }
    }
}

/// Lines with the boundary before each: a heading line is a `Heading` boundary, a line after a
/// blank line a `Paragraph` boundary, any other line a `Line` boundary. Blank lines and line
/// breaks are kept at the start of the following piece.
fn lines(text: &str) -> Vec<(usize, usize, Level)> {
    let mut out: Vec<(usize, usize, Level)> = Vec::new();
    let mut pos = 0;
    let mut pending_start: Option<usize> = None;
    let mut blank_before = true;
    for line in text.split_inclusive('\n') {
        let start = pending_start.take().unwrap_or(pos);
        let end = pos + line.len();
        pos = end;
        if line.trim().is_empty() {
            blank_before = true;
            pending_start = Some(start);
            continue;
        }
        let level = if heading(line).is_some() {
            Level::Heading
        } else if blank_before {
            Level::Paragraph
        } else {
            Level::Line
        };
        out.push((start, end, level));
        blank_before = false;
    }
    if let (Some(s), Some(last)) = (pending_start, out.last_mut()) {
        last.1 = last.1.max(s);
    }
    out
}

fn heading_offsets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if let Some((_, h)) = heading(line) {
            out.push((pos, h.to_string()));
        }
        pos += line.len();
    }
    out
}

/// Pushes `text[start..end]` as one piece if it fits `max`, else splits it at the next finer
/// level and recurses on the parts.
fn split_piece(
    text: &str,
    start: usize,
    end: usize,
    before: Level,
    max: usize,
    bpe: &CoreBPE,
    out: &mut Vec<Piece>,
) {
    let tokens = bpe.encode_ordinary(&text[start..end]).len();
    split_counted(
        text,
        Piece {
            start,
            end,
            tokens,
            before,
        },
        before,
        max,
        bpe,
        out,
    );
}

fn split_counted(
    text: &str,
    piece: Piece,
    level: Level,
    max: usize,
    bpe: &CoreBPE,
    out: &mut Vec<Piece>,
) {
    if piece.tokens <= max {
        out.push(piece);
        return;
    }
    let Some(finer) = level.finer() else {
        out.push(piece);
        return;
    };
    let cuts = boundaries(&text[piece.start..piece.end], finer);
    if cuts.is_empty() {
        split_counted(text, piece, finer, max, bpe, out);
        return;
    }
    let mut starts = vec![piece.start];
    starts.extend(cuts.iter().map(|c| piece.start + c));
    starts.push(piece.end);
    for (k, w) in starts.windows(2).enumerate() {
        let before = if k == 0 { piece.before } else { finer };
        let tokens = bpe.encode_ordinary(&text[w[0]..w[1]]).len();
        split_counted(
            text,
            Piece {
                start: w[0],
                end: w[1],
                tokens,
                before,
            },
            finer,
            max,
            bpe,
            out,
        );
    }
}

/// Byte offsets (relative to `s`, strictly inside it) where a new part starts at `level`.
/// Separating whitespace goes to the start of the following part.
fn boundaries(s: &str, level: Level) -> Vec<usize> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut out = Vec::new();
    let n = chars.len();
    let mut i = 0;
    while i < n {
        let (_, c) = chars[i];
        let cut = match level {
            Level::Sentence => {
                if matches!(c, '。' | '！' | '？' | '!' | '?' | '.' | '…') {
                    let mut j = i + 1;
                    while j < n && is_closer(chars[j].1) {
                        j += 1;
                    }
                    let cjk_stop = matches!(c, '。' | '！' | '？')
                        || (c == '…' && j < n && is_cjk_char(chars[j].1));
                    if cjk_stop {
                        Some(j)
                    } else if j < n && chars[j].1.is_whitespace() {
                        let next = chars[j..]
                            .iter()
                            .find(|(_, c)| !c.is_whitespace())
                            .map(|x| x.1);
                        next.filter(|c| !c.is_lowercase()).map(|_| j)
                    } else {
                        None
                    }
                } else {
                    None
                }
            }
            Level::Clause => match c {
                '，' | '；' | '：' | '、' => Some(i + 1),
                ',' | ';' | ':' if i + 1 < n && chars[i + 1].1.is_whitespace() => Some(i + 1),
                _ => None,
            },
            Level::Word => {
                let prev = if i > 0 { Some(chars[i - 1].1) } else { None };
                let cut = match prev {
                    None => false,
                    // a space run starts a word part; every CJK character is its own word
                    Some(p) => {
                        (c.is_whitespace() && !p.is_whitespace())
                            || is_cjk_char(c)
                            || (is_cjk_char(p) && !c.is_whitespace())
                    }
                };
                cut.then_some(i)
            }
            Level::Char => (i > 0).then_some(i),
            _ => None,
        };
        if let Some(j) = cut {
            if j > 0 && j < n {
                let off = chars[j].0;
                if out.last() != Some(&off) {
                    out.push(off);
                }
            }
        }
        i += 1;
    }
    out
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '”' | '’' | '」' | '』' | '）' | '》' | '】'
    )
}

/// Dynamic programming over piece boundaries; returns `[i, j)` piece ranges of the chunks.
fn choose_chunks(pieces: &[Piece], min_tokens: usize, max_tokens: usize) -> Vec<(usize, usize)> {
    let n = pieces.len();
    let total: usize = pieces.iter().map(|p| p.tokens).sum();
    let min = min_tokens.min(total) as f64;
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in 1..=n {
        let end = if j == n {
            Level::Heading
        } else {
            pieces[j].before
        };
        let mut sum = 0usize;
        let mut inside = Level::Char;
        for i in (0..j).rev() {
            sum += pieces[i].tokens;
            if sum > max_tokens && i + 1 < j {
                break;
            }
            if i + 1 < j {
                inside = inside.min(pieces[i + 1].before);
            }
            if !best[i].is_finite() {
                continue;
            }
            let start = if i == 0 {
                Level::Heading
            } else {
                pieces[i].before
            };
            // a chunk that straddles a boundary stronger than its own ends (the tail of one
            // section plus the head of the next) pays the difference
            let straddle = (start.max(end).cost() - inside.cost()).max(0.0);
            let under = if (sum as f64) < min {
                6.0 * (min - sum as f64) / min.max(1.0)
            } else {
                0.0
            };
            let c = best[i] + end.cost() * f64::from(u8::from(j < n)) + straddle + under + 0.5;
            if c < best[j] - 1e-9 {
                best[j] = c;
                from[j] = i;
            }
        }
    }
    let mut out = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = from[j];
        out.push((i, j));
        j = i;
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            title: "T".into(),
            text: text.into(),
        }
    }

    fn opts(min: usize, max: usize) -> ChunkOptions {
        ChunkOptions {
            min_tokens: min,
            max_tokens: max,
            ..Default::default()
        }
    }

    #[test]
    fn kept_documents_are_one_chunk_each_with_their_own_id() {
        let long = "A sentence that goes on. ".repeat(100);
        let docs = [doc("vpn-003", &long), doc("6f1c-uuid", "  short  ")];
        let keep = ChunkOptions {
            keep: true,
            ..opts(16, 40)
        };
        let chunks = chunk_corpus(&docs, &keep).unwrap();
        let ids: Vec<_> = chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["vpn-003", "6f1c-uuid"]);
        assert_eq!(chunks[0].text, long.trim());
        assert!(chunks[0].tokens > 40, "not cut: {}", chunks[0].tokens);
        assert_eq!((chunks[1].text.as_str(), chunks[1].tokens), ("short", 1));
        // the default still chunks; keep=false is left out of the canonical JSON
        assert!(chunk_corpus(&docs, &opts(16, 40)).unwrap().len() > 2);
        assert!(
            !serde_json::to_string(&ChunkOptions::default())
                .unwrap()
                .contains("keep")
        );
    }

    #[test]
    fn short_document_is_one_chunk_with_stable_id() {
        let bpe = bpe("o200k_base").unwrap();
        let c = chunk_document(
            &doc("doc-1", "## Intro\nA short text.\n"),
            &opts(256, 512),
            bpe,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].id, "doc-1#0");
        assert_eq!(c[0].section.as_deref(), Some("Intro"));
        assert_eq!(c[0].text, "## Intro\nA short text.");
    }

    #[test]
    fn sizes_respect_the_range_on_the_shipped_handbooks() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora");
        let bpe = bpe("o200k_base").unwrap();
        for lang in ["en", "zh"] {
            // the policies whole (the reader cuts Markdown into sections, most below 256
            // tokens): long documents with headings, paragraphs and lists
            let mut files: Vec<_> = std::fs::read_dir(root.join(lang))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            let docs: Vec<Document> = files
                .iter()
                .map(|p| Document {
                    id: p.file_stem().unwrap().to_string_lossy().into_owned(),
                    title: String::new(),
                    text: std::fs::read_to_string(p).unwrap(),
                })
                .collect();
            for (min, max) in [(256, 512), (64, 128), (16, 40)] {
                let chunks = chunk_corpus(&docs, &opts(min, max)).unwrap();
                for c in &chunks {
                    assert!(c.tokens <= max, "{lang} {}: {} > {max}", c.id, c.tokens);
                    assert_eq!(c.tokens, bpe.encode_ordinary(&c.text).len());
                }
                let small = chunks.iter().filter(|c| c.tokens < min).count();
                assert!(
                    small * 4 <= chunks.len(),
                    "{lang} {min}-{max}: {small} of {} below min",
                    chunks.len()
                );
                // ids are `<doc>#<index>`, dense per document, and stable across runs
                for d in &docs {
                    let ids: Vec<_> = chunks
                        .iter()
                        .filter(|c| c.doc_id == d.id)
                        .map(|c| c.id.clone())
                        .collect();
                    let want: Vec<_> = (0..ids.len()).map(|i| format!("{}#{i}", d.id)).collect();
                    assert_eq!(ids, want);
                }
                assert_eq!(chunks, chunk_corpus(&docs, &opts(min, max)).unwrap());
            }
        }
    }

    #[test]
    fn chinese_splits_at_full_stops_never_at_commas() {
        let bpe = bpe("o200k_base").unwrap();
        let sentence = "员工每年享有带薪年休假，未休完的年假最多可以结转五天，结转的天数须在次年三月三十一日前休完，逾期作废。";
        let text = sentence.repeat(12);
        let chunks = chunk_document(&doc("zh", &text), &opts(60, 120), bpe);
        assert!(chunks.len() > 2, "{}", chunks.len());
        for c in &chunks {
            assert!(
                c.text.ends_with('。'),
                "chunk ends mid-sentence: {}",
                c.text
            );
            assert!(c.tokens <= 120);
        }
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            text
        );
    }

    #[test]
    fn overlong_sentences_fall_back_to_clauses_then_words() {
        let bpe = bpe("o200k_base").unwrap();
        let clause = "这是一个没有句号的很长的从句";
        let text = vec![clause; 30].join("，");
        let chunks = chunk_document(&doc("zh", &text), &opts(20, 40), bpe);
        assert!(chunks.iter().all(|c| c.tokens <= 40));
        assert!(
            chunks[..chunks.len() - 1]
                .iter()
                .all(|c| c.text.ends_with('，')),
            "{chunks:?}"
        );
        let words = "lorem ".repeat(200);
        let chunks = chunk_document(&doc("en", &words), &opts(20, 40), bpe);
        assert!(
            chunks
                .iter()
                .all(|c| c.tokens <= 40 && !c.text.contains("lorem lor "))
        );
    }

    #[test]
    fn english_sentences_and_headings() {
        let bpe = bpe("o200k_base").unwrap();
        let para = "Leave is requested in LeaveTrack. Managers answer within 3 working days, e.g. on Monday. ".repeat(6);
        let text = format!("## Booking\n{para}\n\n## Carry over\n{para}\n");
        let chunks = chunk_document(&doc("en", &text), &opts(40, 120), bpe);
        assert!(chunks.len() >= 2);
        for c in &chunks {
            assert!(c.text.ends_with('.'), "{}", c.text);
        }
        assert!(
            chunks.iter().any(|c| c.text.starts_with("## Carry over")),
            "heading boundary preferred"
        );
        assert!(
            !chunks.iter().any(|c| c.text.starts_with("on Monday")),
            "no split after e.g."
        );
    }
}
