//! Statistics of a synthesized benchmark and `synth_report.md`: how many dialogues and turns,
//! topics per dialogue, switch rate, question and answer lengths, golds per turn, what every
//! stage rejected and why, how realistic the dialogues are (`mtr_retrieve::realism`), and what
//! it cost (per role, in total and per dialogue).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use mtr_core::fingerprint::Fingerprint;
use mtr_llm::plan::human_duration;
use mtr_retrieve::realism::Realism;
use serde::{Deserialize, Serialize};

use crate::agents::CallLog;
use crate::config::SynthConfig;
use crate::dryrun::BudgetPlan;
use crate::dryrun::budget::budget_text;
use crate::generate::GenState;
use crate::prepare::Prepared;

/// Mean, minimum and maximum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(xs: impl IntoIterator<Item = f64>) -> Self {
        let v: Vec<f64> = xs.into_iter().collect();
        if v.is_empty() {
            return Self::default();
        }
        Self {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// The numbers of the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SynthStats {
    pub dialogues_requested: usize,
    /// Dialogues with at least one accepted turn.
    pub dialogues: usize,
    pub turns_planned: usize,
    pub turns: usize,
    pub turns_dropped: usize,
    pub turns_per_dialogue: Spread,
    /// Distinct coarse topics among a dialogue's turns.
    pub topics_per_dialogue: Spread,
    pub switches_planned: usize,
    /// Dialogues with an accepted `topic_switch` turn.
    pub switch_dialogues: usize,
    /// `switch_dialogues / dialogues`.
    pub switch_rate: f64,
    pub question_tokens: Spread,
    pub standalone_tokens: Spread,
    pub answer_tokens: Spread,
    pub golds_per_turn: Spread,
    /// Number of golds -> turns.
    pub golds_histogram: BTreeMap<usize, usize>,
    pub humanized_share: f64,
    /// Turns whose question (letters and digits, lower-cased) is one an earlier dialogue
    /// asked already: within a dialogue the repetition rule rejects a repeat, across
    /// dialogues this count says how many near-identical turns the benchmark holds.
    #[serde(default)]
    pub questions_seen_in_earlier_dialogues: usize,
    pub attempts_per_turn: Spread,
    /// Tag (`answerability`, `multi_turn_type`, `question_type`) -> value -> turns, as the
    /// benchmark's turns carry them.
    #[serde(default)]
    pub turn_types: BTreeMap<String, BTreeMap<String, usize>>,
    /// What `[synth.mix]` asked of the planned turns and what the benchmark holds.
    #[serde(default)]
    pub mix: crate::mix::MixCounts,
    /// `stage/reason` -> count, over all dialogues.
    pub events: BTreeMap<String, u64>,
    pub calls: CallLog,
    pub cost_total_usd: f64,
    pub cost_per_dialogue_usd: Spread,
    pub models: BTreeMap<String, Vec<String>>,
}

impl SynthStats {
    pub(crate) fn compute(cfg: &SynthConfig, state: &GenState) -> Self {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let tok = |s: &str| bpe.encode_ordinary(s).len() as f64;
        let mut s = SynthStats {
            dialogues_requested: cfg.dialogues,
            turns_planned: state.dialogues.iter().map(|d| d.layers_done).sum(),
            ..Default::default()
        };
        let mut calls = CallLog::default();
        let all_turns: Vec<_> = state
            .dialogues
            .iter()
            .flat_map(|d| d.turns.iter())
            .collect();
        s.turns = all_turns.len();
        s.turns_dropped = s.turns_planned.saturating_sub(s.turns);
        let nonempty: Vec<_> = state
            .dialogues
            .iter()
            .filter(|d| !d.turns.is_empty())
            .collect();
        s.dialogues = nonempty.len();
        s.turns_per_dialogue = Spread::of(nonempty.iter().map(|d| d.turns.len() as f64));
        s.topics_per_dialogue = Spread::of(nonempty.iter().map(|d| {
            d.turns
                .iter()
                .map(|t| t.topic)
                .collect::<BTreeSet<_>>()
                .len() as f64
        }));
        s.switches_planned = state
            .dialogues
            .iter()
            .filter(|d| d.switch_at.is_some_and(|a| a < d.layers_done.max(1)))
            .count();
        s.switch_dialogues = nonempty
            .iter()
            .filter(|d| d.turns.iter().any(|t| t.topic_switch))
            .count();
        s.switch_rate = if s.dialogues > 0 {
            s.switch_dialogues as f64 / s.dialogues as f64
        } else {
            0.0
        };
        s.question_tokens = Spread::of(all_turns.iter().map(|t| tok(&t.question)));
        s.standalone_tokens = Spread::of(all_turns.iter().map(|t| tok(&t.standalone)));
        s.answer_tokens = Spread::of(all_turns.iter().map(|t| tok(&t.answer)));
        s.golds_per_turn = Spread::of(all_turns.iter().map(|t| (1 + t.extra_golds.len()) as f64));
        for t in &all_turns {
            *s.golds_histogram
                .entry(1 + t.extra_golds.len())
                .or_default() += 1;
        }
        s.humanized_share = if s.turns > 0 {
            all_turns.iter().filter(|t| t.original.is_some()).count() as f64 / s.turns as f64
        } else {
            0.0
        };
        // two questions that differ only in punctuation or case are the same question
        let letters = crate::text_rules::letters;
        let mut earlier: BTreeSet<Vec<char>> = BTreeSet::new();
        for d in &nonempty {
            let asked: BTreeSet<Vec<char>> = d.turns.iter().map(|t| letters(&t.question)).collect();
            s.questions_seen_in_earlier_dialogues += d
                .turns
                .iter()
                .filter(|t| earlier.contains(&letters(&t.question)))
                .count();
            earlier.extend(asked);
        }
        s.attempts_per_turn = Spread::of(all_turns.iter().map(|t| f64::from(t.attempts)));
        s.turn_types = turn_type_counts(&nonempty);
        s.mix = crate::mix::MixCounts::compute(&cfg.mix, cfg.seed, state);
        for d in &state.dialogues {
            for (k, v) in &d.events {
                *s.events.entry(k.clone()).or_default() += v;
            }
            calls.merge(&d.log);
        }
        s.cost_total_usd = calls.cost();
        s.cost_per_dialogue_usd = Spread::of(state.dialogues.iter().map(|d| d.log.cost()));
        s.models = calls.models.clone();
        s.calls = calls;
        s
    }
}

/// Tag -> value -> turns of MTRAG's three turn tags, as the benchmark's turns carry them.
fn turn_type_counts(
    dialogues: &[&crate::generate::DialogueState],
) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for d in dialogues {
        for (n, t) in d.turns.iter().enumerate() {
            let tags = crate::generate::to_core_turn(&d.id, n + 1, t).tags;
            for (tag, value) in [
                ("answerability", tags.answerability),
                ("multi_turn_type", tags.multi_turn_type),
                ("question_type", tags.question_type),
            ] {
                let by = counts.entry(tag.to_string()).or_default();
                *by.entry(value.unwrap_or_default()).or_default() += 1;
            }
        }
    }
    counts
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn spread(s: &Spread) -> String {
    format!("{:.1} (min {:.0}, max {:.0})", s.mean, s.min, s.max)
}

/// What `synth_report.md` is written from.
pub(crate) struct ReportInput<'a> {
    pub(crate) cfg: &'a SynthConfig,
    pub(crate) prepared: &'a Prepared,
    pub(crate) state: &'a GenState,
    pub(crate) stats: &'a SynthStats,
    /// Whether `--max-cost` stopped the generation.
    pub(crate) budget_stopped: bool,
    pub(crate) time_budget: Option<&'a BudgetPlan>,
    pub(crate) corpus: &'a Path,
    pub(crate) fingerprint: &'a Fingerprint,
    pub(crate) realism: &'a Realism,
    /// Personas and seed questions (`crate::voices`).
    pub(crate) voices: &'a crate::voices::VoicesReport,
}

/// Renders `synth_report.md`, one section after another.
pub(crate) fn render(r: &ReportInput<'_>) -> String {
    let (cfg, prepared, s) = (r.cfg, r.prepared, r.stats);
    let mut o = String::new();
    header(&mut o, r);
    if let Some(b) = r.time_budget {
        time_budget_note(&mut o, b);
    }
    corpus_preparation(&mut o, cfg, prepared);
    dialogues(&mut o, cfg, s);
    turn_types(&mut o, s);
    crate::mix::render(&mut o, &cfg.mix, &s.mix);
    realism_section(&mut o, r.realism);
    crate::voices::render(&mut o, r.voices);
    rejections(&mut o, s);
    models_and_cost(&mut o, s);
    o
}

/// How realistic the dialogues are, measured as `mtr stats --realism` measures a real
/// benchmark, so the two can be put side by side (`--compare`).
fn realism_section(o: &mut String, realism: &Realism) {
    let _ = writeln!(o, "## Realism\n");
    let _ = writeln!(
        o,
        "Measured as `mtr stats --realism` measures any benchmark; `mtr stats --realism OUT --compare REAL` puts a real one beside it. The history gap needs the uniqueness check's BM25 index (n/a without it).\n"
    );
    let _ = writeln!(
        o,
        "{}",
        mtr_retrieve::realism::render::render(&[realism])
            .replace("### Language", "### Realism: language")
    );
}

/// The title, a warning when the budget stopped generation, and what the benchmark was made
/// from.
fn header(o: &mut String, r: &ReportInput<'_>) {
    let (cfg, prepared, state) = (r.cfg, r.prepared, r.state);
    let (budget_stopped, corpus, fp) = (r.budget_stopped, r.corpus, r.fingerprint);
    let _ = writeln!(o, "# Synthesis report\n");
    if budget_stopped {
        let _ = writeln!(
            o,
            "> **Incomplete:** the `--max-cost` budget stopped generation with at least {} of {} turns done in every dialogue. Run the same command again (with a higher budget) to resume; calls already made are served from the cache.\n",
            state.layers_done, cfg.turns
        );
    }
    let _ = writeln!(
        o,
        "- corpus: `{}` (fingerprint `{}`)",
        corpus.display(),
        mtr_core::fingerprint::short(&prepared.input_fingerprint)
    );
    let _ = writeln!(
        o,
        "- language: {} ({})",
        prepared.language.name(),
        prepared.language.code()
    );
    let _ = writeln!(
        o,
        "- fingerprint: data `{}`, config `{}`, prompts `{}`, mtr {}",
        mtr_core::fingerprint::short(&fp.data),
        mtr_core::fingerprint::short(&fp.config),
        mtr_core::fingerprint::short(&fp.prompts),
        fp.tool_version
    );
    let _ = writeln!(o, "- seed: {}", cfg.seed);
    let _ = writeln!(o);
}

/// What the time budget started and left for a rerun.
fn time_budget_note(o: &mut String, b: &BudgetPlan) {
    let expected = b.expected_s.map_or_else(
        || "unknown: no speed for an endpoint".into(),
        human_duration,
    );
    // " (N of them WHAT)", or nothing for none
    let of_them = |n: usize, what: &str| {
        if n > 0 {
            format!(" ({n} of them {what})")
        } else {
            String::new()
        }
    };
    let refused = of_them(
        b.refused_at_run_time,
        "kept from starting when the time ran out",
    );
    let ahead = of_them(
        b.started_ahead,
        "not in the plan: started as the finished turns ran ahead of it",
    );
    let stopped = of_them(
        b.stopped_at_turn_boundary,
        "stopped at a turn boundary, before a turn that would have ended past the budget; their verified turns are kept",
    );
    let cut = of_them(
        b.cut_at_deadline,
        "with a turn left unfinished when the budget was spent, since no call starts after it; their verified turns are kept and the unfinished turn's calls are cached",
    );
    if b.left > 0 {
        let _ = writeln!(
            o,
            "> **Partial:** the time budget of {} let this run start {} of {} planned dialogues{ahead} ({} done before); {} are left for a rerun with more time{refused}{stopped}{cut}. Calls already made are served from the cache.\n",
            budget_text(b.budget_s),
            b.start,
            b.planned,
            b.done_before,
            b.left
        );
    }
    let _ = writeln!(
        o,
        "- time budget: {}; planned {} dialogues, {} done before, {} started{ahead}, {} left; expected {expected} for those started, after {} of preparation\n",
        budget_text(b.budget_s),
        b.planned,
        b.done_before,
        b.start,
        b.left,
        human_duration(b.fixed_s)
    );
}

/// Curation, chunks, vectors, the neighbour graph, topic paths and coarse topics.
fn corpus_preparation(o: &mut String, cfg: &SynthConfig, prepared: &Prepared) {
    let _ = writeln!(o, "## Corpus preparation\n");
    let c = &prepared.curation;
    let _ = writeln!(o, "| stage | result |\n|---|---|");
    input_rows(o, c.input, &prepared.input);
    let _ = writeln!(
        o,
        "| boilerplate sections stripped | {} sections in {} documents |",
        c.stripped_sections, c.stripped_documents
    );
    for (f, n) in &c.removed {
        let ex = c.examples.get(f).map(|e| e.join("; ")).unwrap_or_default();
        let ex = if ex.is_empty() {
            String::new()
        } else {
            format!(" (e.g. {ex})")
        };
        let _ = writeln!(o, "| removed: {f} | {n}{} |", ex.replace('|', "/"));
    }
    let _ = writeln!(o, "| documents kept | {} |", prepared.documents);
    let toks: Vec<f64> = prepared.chunks.iter().map(|c| c.tokens as f64).collect();
    let mean = Spread::of(toks.iter().copied()).mean;
    if cfg.chunking.keep {
        let _ = writeln!(
            o,
            "| passages | {} kept as read with their own ids (chunks as-is), {mean:.0} tokens on average |",
            prepared.chunks.len()
        );
    } else {
        let _ = writeln!(
            o,
            "| chunks | {} of {mean:.0} tokens on average (range {}-{}, o200k_base) |",
            prepared.chunks.len(),
            cfg.chunking.min_tokens,
            cfg.chunking.max_tokens
        );
    }
    let sizes = Spread::of(prepared.topics.paths.iter().map(|p| p.len() as f64));
    let _ = writeln!(
        o,
        "| chunk vectors | {} ({} dimensions) |",
        prepared.vector_info.source, prepared.vector_info.dim
    );
    let recall = prepared
        .topics
        .graph_recall_at_10
        .map(|r| format!(", recall@10 {r:.3}"))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "| neighbour graph | {} top-{}{recall} |",
        prepared.topics.graph_method, prepared.topics.graph_k
    );
    let _ = writeln!(
        o,
        "| topic paths | {} paths of {} chunks |",
        prepared.topics.paths.len(),
        spread(&sizes)
    );
    let _ = writeln!(
        o,
        "| coarse topics (k-means) | {} |",
        prepared.topics.topics
    );
    let _ = writeln!(o);
    skipped_files(o, &prepared.input.skipped);
}

/// The table's rows on what was read: documents, the sample, skipped records, pages and
/// unreadable files.
fn input_rows(o: &mut String, documents: usize, input: &crate::input::InputReport) {
    let _ = writeln!(o, "| input documents | {} |", documents);
    if let Some(x) = &input.sample {
        let _ = writeln!(
            o,
            "| sampled (max_documents) | {} of {} documents, uniform over the whole input (reservoir sampling, seed {}) |",
            x.kept, input.documents, x.seed
        );
    }
    if input.malformed_skipped > 0 {
        let _ = writeln!(
            o,
            "| malformed records skipped (skip_bad) | {} |",
            input.malformed_skipped
        );
    }
    if input.pages > 0 {
        let _ = writeln!(o, "| PDF pages read | {} |", input.pages);
    }
    if !input.skipped.is_empty() {
        let _ = writeln!(
            o,
            "| unreadable files skipped | {} (listed below) |",
            input.skipped.len()
        );
    }
}

/// Every corpus file that could not be read, with its reason.
fn skipped_files(o: &mut String, skipped: &[crate::input::SkippedFile]) {
    if skipped.is_empty() {
        return;
    }
    let _ = writeln!(o, "Corpus files skipped as unreadable:\n");
    for s in skipped {
        let _ = writeln!(o, "- `{}`: {}", s.file, s.reason);
    }
    let _ = writeln!(o);
}

/// The dialogues' and turns' statistics.
fn dialogues(o: &mut String, cfg: &SynthConfig, s: &SynthStats) {
    let _ = writeln!(o, "## Dialogues\n");
    let _ = writeln!(o, "| statistic | value |\n|---|---|");
    let _ = writeln!(
        o,
        "| dialogues (with at least one turn) | {} of {} requested |",
        s.dialogues, s.dialogues_requested
    );
    let _ = writeln!(
        o,
        "| turns | {} of {} planned ({} dropped after verification) |",
        s.turns, s.turns_planned, s.turns_dropped
    );
    let _ = writeln!(
        o,
        "| turns per dialogue | {} |",
        spread(&s.turns_per_dialogue)
    );
    let _ = writeln!(
        o,
        "| coarse topics per dialogue | {} |",
        spread(&s.topics_per_dialogue)
    );
    let _ = writeln!(
        o,
        "| topic switches | {} dialogues ({} of dialogues; {} planned, share {}) |",
        s.switch_dialogues,
        pct(s.switch_rate),
        s.switches_planned,
        cfg.generation.switch_share
    );
    let _ = writeln!(o, "| question tokens | {} |", spread(&s.question_tokens));
    let _ = writeln!(
        o,
        "| standalone rewrite tokens | {} |",
        spread(&s.standalone_tokens)
    );
    let _ = writeln!(o, "| answer tokens | {} |", spread(&s.answer_tokens));
    let hist: Vec<String> = s
        .golds_histogram
        .iter()
        .map(|(g, n)| format!("{g}: {n}"))
        .collect();
    let _ = writeln!(
        o,
        "| golds per turn | {} [{}] |",
        spread(&s.golds_per_turn),
        hist.join(", ")
    );
    let _ = writeln!(o, "| humanized questions | {} |", pct(s.humanized_share));
    let _ = writeln!(
        o,
        "| questions an earlier dialogue asked already | {} |",
        s.questions_seen_in_earlier_dialogues
    );
    let _ = writeln!(
        o,
        "| question attempts per accepted turn | {} |",
        spread(&s.attempts_per_turn)
    );
    let _ = writeln!(o);
}

/// What every stage rejected and why.
fn rejections(o: &mut String, s: &SynthStats) {
    let _ = writeln!(o, "## Verification and rejections\n");
    let _ = writeln!(
        o,
        "Counts over all attempts. `dropped/<stage>` counts turns that failed every attempt (the stage of the last failure); they are left out of the benchmark, never written as placeholders.\n"
    );
    let _ = writeln!(o, "| stage | event | count |\n|---|---|---:|");
    for (k, v) in &s.events {
        let (stage, ev) = k.split_once('/').unwrap_or((k.as_str(), ""));
        let _ = writeln!(o, "| {stage} | {ev} | {v} |");
    }
    let _ = writeln!(o);
}

/// Calls, tokens and cost per role.
/// The turns' types beside MTRAG's shares, tag by tag.
fn turn_types(o: &mut String, s: &SynthStats) {
    use crate::turn_types::{MTRAG_MIX, MTRAG_TURNS};
    let _ = writeln!(
        o,
        "## Turn types
"
    );
    let _ = writeln!(
        o,
        "MTRAG's vocabulary, so that `mtr bench` strata line up with MTRAG's; MTRAG's shares are those of its clapnq and govt conversations ({MTRAG_TURNS} user turns; a turn may carry several question types). A question type is read off the question's wording.\n"
    );
    let _ = writeln!(
        o,
        "| tag | value | turns | share | MTRAG share |\n|---|---|---:|---:|---:|"
    );
    for tag in ["answerability", "multi_turn_type", "question_type"] {
        let ours = s.turn_types.get(tag).cloned().unwrap_or_default();
        let mut values: Vec<&str> = MTRAG_MIX
            .iter()
            .filter(|(t, _, _)| *t == tag)
            .map(|(_, v, _)| *v)
            .collect();
        let extra: Vec<&str> = ours
            .keys()
            .map(String::as_str)
            .filter(|v| !values.contains(v))
            .collect();
        values.extend(extra);
        for v in values {
            let n = ours.get(v).copied().unwrap_or(0);
            let theirs = MTRAG_MIX
                .iter()
                .find(|(t, value, _)| *t == tag && *value == v)
                .map_or(0, |m| m.2);
            let share = if s.turns > 0 {
                n as f64 / s.turns as f64
            } else {
                0.0
            };
            let _ = writeln!(
                o,
                "| {tag} | {v} | {n} | {} | {} |",
                pct(share),
                pct(theirs as f64 / MTRAG_TURNS as f64)
            );
        }
    }
    let _ = writeln!(o);
}

/// Calls and tokens per verified turn: what the synthesis paid for each turn it kept,
/// rejected attempts and dropped turns included.
fn per_verified_turn(o: &mut String, s: &SynthStats) {
    let roles = s.calls.roles.values();
    let (calls, prompt, generated) = roles.fold((0u64, 0u64, 0u64), |(c, p, g), u| {
        (c + u.calls, p + u.prompt_tokens, g + u.completion_tokens)
    });
    if s.turns == 0 {
        return;
    }
    let per = |x: u64| x as f64 / s.turns as f64;
    let _ = writeln!(
        o,
        "- per verified turn (rejected attempts and dropped turns included): {:.1} calls, {:.0} prompt tokens, {:.0} generated tokens",
        per(calls),
        per(prompt),
        per(generated)
    );
}

fn models_and_cost(o: &mut String, s: &SynthStats) {
    let _ = writeln!(o, "## Models and cost\n");
    let _ = writeln!(
        o,
        "| role | models | calls | parse failed | prompt tok | completion tok | cost USD |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for (role, u) in &s.calls.roles {
        let models = s.models.get(role).map(|m| m.join(", ")).unwrap_or_default();
        let _ = writeln!(
            o,
            "| {role} | {models} | {} | {} | {} | {} | {:.6} |",
            u.calls,
            u.parse_failed,
            u.prompt_tokens,
            u.completion_tokens,
            u.cost_usd()
        );
    }
    let _ = writeln!(o);
    per_verified_turn(o, s);
    let cut: Vec<String> = s
        .calls
        .roles
        .iter()
        .filter(|(_, u)| u.truncated > 0)
        .map(|(r, u)| format!("{r} {}", u.truncated))
        .collect();
    if !cut.is_empty() {
        let _ = writeln!(
            o,
            "- answers cut at max_tokens even with twice the room, dropped as failed attempts: {}",
            cut.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "- cost of all calls at list price (including calls served from the cache): ${:.6} in total, per dialogue {}",
        s.cost_total_usd,
        format_args!(
            "${:.6} (min ${:.6}, max ${:.6})",
            s.cost_per_dialogue_usd.mean, s.cost_per_dialogue_usd.min, s.cost_per_dialogue_usd.max
        )
    );
    // what this run or every attempt paid differs with the interruptions: `spend.json`, so
    // this report is the same bytes whatever they were
    let _ = writeln!(
        o,
        "- money spent on this folder over every attempt, and this run's ledger: `spend.json`"
    );
}
