//! Personas drawn from the corpus's topics (`[synth.personas] file = "topics"`): the generator
//! writes one persona per coarse topic (the `max_topics` with the most paths), each in one
//! structured call through the LLM cache (a rerun pays nothing), shown a few passages of the
//! topic. A failed or unparsable call leaves its topic without a persona, counted.

use super::{Persona, PersonaSet};
use crate::agents::{Agents, CallLog, PromptPassage};
use crate::error::Result;
use crate::prepare::Prepared;

pub(crate) use crate::agents::topic_persona_request;

/// Passages shown per topic, and the characters kept of each.
const PASSAGES_PER_TOPIC: usize = 4;
const PASSAGE_CHARS: usize = 500;

/// What writing the topics' personas did.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopicPersonas {
    /// The persona calls' usage (role `persona`), for the cost ledger.
    pub calls: CallLog,
    /// Topics with a persona.
    pub written: usize,
    /// Topics whose call failed or could not be parsed.
    pub failures: usize,
}

/// The topics that get a persona (at most `max_topics`, those with the most paths first, then
/// by number) and the passages each is shown: the first chunk of its first paths.
pub(crate) fn topic_passages(
    prepared: &Prepared,
    max_topics: usize,
) -> Vec<(usize, Vec<PromptPassage>)> {
    let t = &prepared.topics;
    let mut paths_of: Vec<Vec<usize>> = vec![Vec::new(); t.topics];
    for (p, &topic) in t.path_topics.iter().enumerate() {
        if let Some(v) = paths_of.get_mut(topic) {
            v.push(p);
        }
    }
    let mut order: Vec<usize> = (0..t.topics).filter(|&i| !paths_of[i].is_empty()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(paths_of[i].len()), i));
    order.truncate(max_topics);
    order
        .into_iter()
        .map(|topic| {
            let passages = paths_of[topic]
                .iter()
                .filter_map(|&p| t.paths.get(p).and_then(|path| path.first()))
                .take(PASSAGES_PER_TOPIC)
                .filter_map(|&c| prepared.chunks.get(c as usize))
                .map(|c| {
                    let mut p = PromptPassage::of(c);
                    if p.text.chars().count() > PASSAGE_CHARS {
                        p.text = p.text.chars().take(PASSAGE_CHARS).collect::<String>() + " ...";
                    }
                    p
                })
                .collect();
            (topic, passages)
        })
        .collect()
}

/// One persona per chosen topic, written by the generator.
pub(crate) async fn write_topic_personas(
    agents: &Agents<'_>,
    prepared: &Prepared,
    max_topics: usize,
) -> Result<(PersonaSet, TopicPersonas)> {
    let mut by_topic: Vec<Option<Persona>> = vec![None; prepared.topics.topics];
    let mut report = TopicPersonas::default();
    for (topic, passages) in topic_passages(prepared, max_topics) {
        match agents.topic_persona(&passages, &mut report.calls).await {
            Ok(Some(p)) => {
                report.written += 1;
                by_topic[topic] = Some(p);
            }
            Ok(None) => report.failures += 1,
            // the budget stop and a provider that is down stop the job as any call does
            Err(e) if e.is_budget_stop() => return Err(e),
            Err(e) => {
                tracing::warn!(topic, "persona call failed: {e}");
                report.failures += 1;
            }
        }
    }
    Ok((PersonaSet::ByTopic(by_topic), report))
}
