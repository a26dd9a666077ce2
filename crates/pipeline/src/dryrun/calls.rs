//! The first-attempt LLM calls of every dialogue, turn by turn, estimated on the real rendered
//! prompts (real chunks of each dialogue's path, placeholder history of typical length): the
//! dry run adds them up per role, and the time budget per dialogue (`budget.rs`).

use std::collections::HashMap;

use mtr_llm::{ChatRequest, Llm, OutputSpec, PlannedEndpoint, Role};
use serde_json::json;

use crate::agents::{PromptPassage, UserAsk, Utter};
use crate::agents::{topic_passages, topic_persona_request};
use crate::error::Result;
use crate::generate::{DialogueState, GenState, Material};
use crate::job::SynthJob;
use crate::prepare::Prepared;
use crate::style::{Style, TurnStyle, profile_name};
use crate::voices::{Persona, PersonaSet, PersonaSource, Voices};

/// One planned call: the agent role, the endpoint it goes to and its estimate there.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedCall {
    pub role: &'static str,
    pub endpoint: String,
    pub plan: PlannedEndpoint,
}

/// The planned calls of one dialogue, one list per turn (layer).
pub(crate) type DialogueCalls = Vec<Vec<PlannedCall>>;

/// The planned calls of every dialogue of `state`, in its order (all of each dialogue's
/// turns, whatever it has done already), each expecting what the servers' prompt caches hold
/// of its prompt ([`expect_prompt_caches`]).
pub(crate) fn plan_dialogues(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    state: &GenState,
) -> Result<Vec<DialogueCalls>> {
    let planner = Planner::new(job, llm, prepared)?;
    let mut requests = state
        .dialogues
        .iter()
        .enumerate()
        .map(|(i, d)| planner.dialogue(i, d))
        .collect::<Result<Vec<_>>>()?;
    let done: Vec<usize> = state.dialogues.iter().map(|d| d.layers_done).collect();
    expect_prompt_caches(llm, &mut requests, &done);
    requests
        .into_iter()
        .map(|turns| {
            turns
                .into_iter()
                .map(|calls| calls.into_iter().map(|c| planner.estimate(c)).collect())
                .collect()
        })
        .collect()
}

/// A planned call before its estimate: the agent role, its endpoint and its request.
struct Request {
    role: &'static str,
    endpoint: String,
    req: ChatRequest,
}

/// Marks every planned call still to make (dialogue `d` from turn `done[d]` on) with the share
/// of its prompt the servers' prompt caches are expected to hold ([`mtr_llm::prompt_cache`]),
/// feeding the calls in the order the synthesis sends them: its dialogues run side by side,
/// each with one call in flight, so turn by turn, step by step, dialogue after dialogue. One
/// model per set of servers: the main job sends a synthesis's generator and judge calls to one
/// server. Retries are not planned, so the prompt they share with the attempt before is not
/// counted either.
fn expect_prompt_caches(llm: &Llm, dialogues: &mut [Vec<Vec<Request>>], done: &[usize]) {
    let mut models: HashMap<String, Option<mtr_llm::prompt_cache::PromptCacheModel>> =
        HashMap::new();
    let layers = dialogues.iter().map(Vec::len).max().unwrap_or(0);
    for layer in 0..layers {
        let steps = dialogues
            .iter()
            .filter_map(|d| d.get(layer))
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        for step in 0..steps {
            for (d, turns) in dialogues.iter_mut().enumerate() {
                if layer < done.get(d).copied().unwrap_or(0) {
                    continue;
                }
                let Some(call) = turns.get_mut(layer).and_then(|t| t.get_mut(step)) else {
                    continue;
                };
                let key = llm
                    .prompt_cache_key(&call.endpoint)
                    .unwrap_or_else(|| call.endpoint.clone());
                let model = models
                    .entry(key)
                    .or_insert_with(|| llm.prompt_cache_model(&call.endpoint));
                call.req.planned_cached_share = model.as_mut().map(|m| m.next_request(&call.req));
            }
        }
    }
}

/// A fresh state for the plan (the dialogues' paths and switches as a first run draws them).
pub(crate) fn planned_state(job: &SynthJob, prepared: &Prepared) -> GenState {
    let cfg = &job.config;
    let by_id: HashMap<String, u32> = HashMap::new();
    let material = Material {
        chunks: &prepared.chunks,
        by_id: &by_id,
        paths: &prepared.topics.paths,
        path_topics: &prepared.topics.path_topics,
    };
    crate::generate::initial_state(
        String::new(),
        &material,
        cfg.dialogues,
        cfg.turns,
        cfg.generation.switch_share,
        cfg.seed,
    )
}

/// `n` turns of placeholder history for dialogue `dialogue`: its questions name the dialogue,
/// so that the planned prompts of two dialogues part where their real histories would (the
/// plan's prompt caches would otherwise find one dialogue's history in another's).
fn placeholder(lang_cjk: bool, n: usize, dialogue: usize) -> Vec<Utter> {
    let (q, a) = if lang_cjk {
        (
            "那这个规定适用于试用期的员工吗？",
            "适用。试用期员工同样适用这一规定，但需要提前三个工作日在系统中提交申请，并由直属主管审批。",
        )
    } else {
        (
            "And does that also apply to people who are still in their probation period?",
            "Yes. Employees in their probation period are covered as well, but they need to submit the request three working days in advance and have it approved by their line manager.",
        )
    };
    (0..n)
        .flat_map(|_| {
            [
                Utter {
                    speaker: "user".into(),
                    text: format!("({}) {q}", dialogue + 1),
                },
                Utter {
                    speaker: "agent".into(),
                    text: a.into(),
                },
            ]
        })
        .collect()
}

/// `question` repeated (words, or CJK characters) to `n` units: the placeholder of a styled
/// question of the drawn length.
fn lengthened(question: &str, n: usize, cjk: bool) -> String {
    if cjk {
        question.chars().cycle().take(n.max(1)).collect()
    } else {
        let words: Vec<&str> = question.split_whitespace().collect();
        if words.is_empty() {
            return question.to_string();
        }
        words
            .iter()
            .cycle()
            .take(n.max(1))
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A persona of typical length, for the plan of `topics` personas.
fn planned_persona() -> Persona {
    Persona {
        name: "planned persona".into(),
        description: "A person who uses these documents at work, knows the basics of the subject and writes short, practical questions in everyday words, sometimes with a detail of their own situation.".into(),
    }
}

/// The persona calls of `[synth.personas] file = "topics"`: one per topic that gets one.
pub(crate) fn persona_calls(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
) -> Result<Vec<PlannedCall>> {
    if PersonaSource::of(&job.config.personas.file) != PersonaSource::Topics {
        return Ok(Vec::new());
    }
    let ep = llm
        .role_endpoints(Role::Generator)
        .first()
        .cloned()
        .unwrap_or_default();
    topic_passages(prepared, job.config.personas.max_topics)
        .into_iter()
        .map(|(_, passages)| {
            let req = topic_persona_request(&job.prompts, &prepared.language, &passages)?;
            Ok(PlannedCall {
                role: "persona",
                plan: llm.estimate(&ep, &req)?,
                endpoint: ep.clone(),
            })
        })
        .collect()
}

/// What every planned call needs: the job, the endpoints and the generator's sampling.
struct Planner<'a> {
    job: &'a SynthJob,
    llm: &'a Llm,
    prepared: &'a Prepared,
    gen_ep: String,
    verifier: String,
    gen_sampling: mtr_llm::Sampling,
    justify: bool,
    /// The styled profile the synthesis will use (None: `concise`).
    style: Option<Style>,
    /// The personas and seed questions the synthesis will show (`topics`: a placeholder of
    /// a persona's typical length, since none is written yet).
    voices: Voices,
}

impl<'a> Planner<'a> {
    fn new(job: &'a SynthJob, llm: &'a Llm, prepared: &'a Prepared) -> Result<Self> {
        let g = &job.config.generation;
        let gen_ep = llm
            .role_endpoints(Role::Generator)
            .first()
            .cloned()
            .unwrap_or_default();
        let verifier = g
            .verifier
            .clone()
            .or_else(|| llm.judges().first().cloned())
            .unwrap_or_default();
        let mut gen_sampling = llm.sampling(Role::Generator).clone();
        gen_sampling.max_tokens = Some(
            gen_sampling
                .max_tokens
                .map_or(g.max_tokens, |m| m.min(g.max_tokens)),
        );
        let justify = crate::agents::judges_justify(llm, &verifier);
        let profile = profile_name(&job.config.style, llm.config().is_local_default())?;
        let style = Style::resolve(&profile, &prepared.language)?;
        let mut voices = Voices::load(&job.config.personas, &job.config.seed_questions)?;
        if PersonaSource::of(&job.config.personas.file) == PersonaSource::Topics {
            voices.personas = PersonaSet::Drawn(vec![planned_persona()]);
        }
        Ok(Self {
            job,
            llm,
            prepared,
            gen_ep,
            verifier,
            gen_sampling,
            justify,
            style,
            voices,
        })
    }

    fn call(&self, role: &'static str, ep: &str, req: ChatRequest) -> Result<Request> {
        Ok(Request {
            role,
            endpoint: ep.to_string(),
            req,
        })
    }

    fn estimate(&self, c: Request) -> Result<PlannedCall> {
        Ok(PlannedCall {
            role: c.role,
            plan: self.llm.estimate(&c.endpoint, &c.req)?,
            endpoint: c.endpoint,
        })
    }

    /// Every turn of dialogue `index` (`d`), from its start path (switching where it is
    /// planned to).
    fn dialogue(&self, index: usize, d: &DialogueState) -> Result<Vec<Vec<Request>>> {
        let paths = &self.prepared.topics.paths;
        let mut path_idx = d.start_path;
        let mut pos = 0usize;
        let mut turns = Vec::with_capacity(self.job.config.turns);
        for layer in 0..self.job.config.turns {
            if d.switch_at == Some(layer)
                && let Some(sp) = d.switch_path
            {
                path_idx = sp;
                pos = 0;
            }
            turns.push(self.turn(&paths[path_idx], pos, layer, index)?);
            pos += 1;
        }
        Ok(turns)
    }

    /// The first-attempt calls of one turn, in the order the synthesis makes them: user,
    /// humanizer, answerability (unless `answerability_judge = false`), answerer, faithfulness,
    /// uniqueness. The relevance gate's rerank call is not planned: an embedding of a few
    /// passages, it is small beside a chat call.
    fn turn(
        &self,
        path: &[u32],
        pos: usize,
        layer: usize,
        dialogue: usize,
    ) -> Result<Vec<Request>> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let prepared = self.prepared;
        let language = prepared.language.name();
        let passage = |c: u32| PromptPassage::of(&prepared.chunks[c as usize]);
        let gen_ep = self.gen_ep.as_str();
        let mut calls = Vec::with_capacity(6);
        let passages: Vec<PromptPassage> = (0..g.offer.min(path.len()))
            .map(|i| passage(path[(pos + i) % path.len()]))
            .collect();
        let pos = pos + 1;
        let cjk = prepared.language.is_cjk();
        let history = placeholder(cjk, layer.min(g.history_turns), dialogue);
        // the user prompt lists only the questions its history no longer shows
        let asked: Vec<String> = placeholder(cjk, layer, dialogue)
            .into_iter()
            .filter(|u| u.speaker == "user")
            .map(|u| u.text)
            .take(layer.saturating_sub(g.history_turns))
            .collect();
        let question = history
            .first()
            .map(|u| u.text.clone())
            .unwrap_or_else(|| "How many days of annual leave do new employees get?".into());
        // a styled profile's draw for this turn, as the synthesis makes it; the question the
        // later calls read is then as long as the draw
        let styled = self
            .style
            .as_ref()
            .map(|s| s.turn(self.job.config.seed, dialogue, layer, layer > 0));
        let question = styled.map_or(question.clone(), |t| lengthened(&question, t.length, cjk));
        let ask = UserAsk {
            history: &history,
            asked: &asked,
            passages: &passages,
            first: layer == 0,
            switch: false,
            feedback: None,
            rewrite: g.rewrites,
            persona: self.voices.persona(self.job.config.seed, dialogue, 0),
            examples: self
                .voices
                .examples(self.job.config.seed, dialogue, layer, 0),
        };
        if let Some(calls) = self.kind_turn(&ask, &question, (path, pos), (dialogue, layer))? {
            return Ok(calls);
        }
        let req = self.user_request(&ask, styled)?;
        let req = req.with_sample(0);
        calls.push(self.call("user", gen_ep, req)?);
        if layer > 0 && g.humanizer.enabled {
            let ctx = json!({"language": language, "history": history, "question": question, "switch": false, "style": styled});
            let prompt = if styled.is_some() {
                &p.humanize_styled
            } else {
                &p.humanize
            };
            let req = prompt.request(&ctx, OutputSpec::Text)?;
            calls.push(self.call(
                "humanizer",
                gen_ep,
                req.with_sampling(self.gen_sampling.clone()),
            )?);
        }
        let ev = &passages[0];
        calls.extend(self.checked_answer_calls(&history, &question, ev)?);
        if g.uniqueness.enabled {
            let cands: Vec<PromptPassage> = (1..=g.uniqueness.judge_candidates)
                .map(|i| passage(path[(pos + i) % path.len()]))
                .collect();
            calls.push(self.uniqueness_call(&history, &question, ev, &cands)?);
        }
        Ok(calls)
    }

    /// The answerability judge's call (unless `answerability_judge = false`), the answerer's
    /// and the faithfulness judge's of a question on evidence `ev`.
    fn checked_answer_calls(
        &self,
        history: &[Utter],
        question: &str,
        ev: &PromptPassage,
    ) -> Result<Vec<Request>> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let justify = self.justify;
        let (gen_ep, verifier) = (self.gen_ep.as_str(), self.verifier.as_str());
        let mut calls = Vec::with_capacity(3);
        let ctx =
            json!({"history": history, "question": question, "passage": ev, "justify": justify});
        if g.answerability_judge {
            let schema = OutputSpec::Schema(crate::agents::answerability_schema(justify));
            let req = p.answerability.request(&ctx, schema)?;
            calls.push(self.call("answerability", verifier, req)?);
        }
        let answer = history.get(1).map(|u| u.text.clone()).unwrap_or_default();
        let language = self.prepared.language.name();
        let ctx =
            json!({"language": language, "passage": ev, "history": history, "question": question});
        let req = p.answer.request(&ctx, OutputSpec::Text)?;
        let req = req.with_sampling(self.gen_sampling.clone()).with_sample(0);
        calls.push(self.call("answerer", gen_ep, req)?);
        let ctx = json!({"history": history, "question": question, "passage": ev, "answer": answer, "justify": justify});
        let schema = OutputSpec::Schema(crate::agents::score_schema("faithfulness", justify));
        let req = p.faithfulness.request(&ctx, schema)?;
        calls.push(self.call("faithfulness", verifier, req)?);
        Ok(calls)
    }

    /// The uniqueness judge's call on candidates `cands` of a question on evidence `ev`.
    fn uniqueness_call(
        &self,
        history: &[Utter],
        question: &str,
        ev: &PromptPassage,
        cands: &[PromptPassage],
    ) -> Result<Request> {
        let justify = self.justify;
        let schema = crate::agents::uniqueness_schema(cands.len(), justify);
        let ctx = json!({"history": history, "question": question, "reference": ev, "candidates": cands, "justify": justify});
        let req = self
            .job
            .prompts
            .uniqueness
            .request(&ctx, OutputSpec::Schema(schema))?;
        self.call("uniqueness", &self.verifier, req)
    }

    /// Whether turn `layer` of dialogue `dialogue` is drawn `unanswerable` and made so (the
    /// corpus-wide search is on), as the synthesis decides it.
    fn unanswerable(&self, dialogue: usize, layer: usize) -> bool {
        let cfg = &self.job.config;
        cfg.generation.uniqueness.enabled
            && cfg.mix.draw(cfg.seed, dialogue, layer).answerability
                == crate::turn_types::Answerability::Unanswerable
    }

    /// Whether turn `layer` of dialogue `dialogue` is drawn `partial` and made so (the
    /// corpus-wide search is on), as the synthesis decides it.
    fn partial(&self, dialogue: usize, layer: usize) -> bool {
        let cfg = &self.job.config;
        cfg.generation.uniqueness.enabled
            && cfg.mix.draw(cfg.seed, dialogue, layer).answerability
                == crate::turn_types::Answerability::Partial
    }

    /// The first-attempt calls of a turn drawn `partial`: the user agent's question in two
    /// parts; for the answered part (the question stands in for it) the answerable turn's
    /// answerability judge, answerer and faithfulness judge on the first passage; for the
    /// missing part the unanswerable turn's verifier (the path's next passages stand in for
    /// those found); then the uniqueness judge of the answered part.
    fn partial_turn(
        &self,
        ask: &UserAsk<'_>,
        question: &str,
        path: &[u32],
        pos: usize,
    ) -> Result<Vec<Request>> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let lang = &self.prepared.language;
        let ctx = crate::agents::user_context(lang, ask);
        let schema = crate::agents::partial_question_schema(ask.passages.len(), lang, g.rewrites);
        let req = p
            .user_partial
            .request(&ctx, OutputSpec::Schema(schema))?
            .with_sampling(crate::agents::partial_proposal_room(
                self.gen_sampling.clone(),
                lang,
                g.rewrites,
            ))
            .with_sample(0);
        let mut calls = vec![self.call("user", &self.gen_ep, req)?];
        let ev = &ask.passages[0];
        let mut answered = self.checked_answer_calls(ask.history, question, ev)?;
        // the missing part is verified before the answer is written
        let answer_calls = answered.split_off(usize::from(g.answerability_judge));
        calls.extend(answered);
        calls.push(self.unanswerable_call(ask.history, question, path, pos)?);
        calls.extend(answer_calls);
        if g.uniqueness.enabled {
            let passage = |c: u32| PromptPassage::of(&self.prepared.chunks[c as usize]);
            let cands: Vec<PromptPassage> = (1..=g.uniqueness.judge_candidates)
                .map(|i| passage(path[(pos + i) % path.len()]))
                .collect();
            calls.push(self.uniqueness_call(ask.history, question, ev, &cands)?);
        }
        Ok(calls)
    }

    /// The first-attempt calls of a turn `[synth.mix]` draws as a kind with its own calls
    /// (unanswerable, partial, two-passage, conversational); None for an answerable
    /// one-passage turn.
    fn kind_turn(
        &self,
        ask: &UserAsk<'_>,
        question: &str,
        (path, pos): (&[u32], usize),
        (dialogue, layer): (usize, usize),
    ) -> Result<Option<Vec<Request>>> {
        Ok(if self.unanswerable(dialogue, layer) {
            Some(self.unanswerable_turn(ask, question, path, pos)?)
        } else if self.partial(dialogue, layer) {
            Some(self.partial_turn(ask, question, path, pos)?)
        } else if self.two_passage(dialogue, layer, ask.passages.len()) {
            Some(self.two_passage_turn(ask, question, ask.history)?)
        } else if self.conversational(dialogue, layer) {
            Some(self.conversational_turn(ask.history, question)?)
        } else {
            None
        })
    }

    /// Whether turn `layer` of dialogue `dialogue` is drawn `conversational` and made so (not
    /// a first turn), as the synthesis decides it (where the turn before was kept).
    fn conversational(&self, dialogue: usize, layer: usize) -> bool {
        let cfg = &self.job.config;
        layer > 0
            && cfg.mix.draw(cfg.seed, dialogue, layer).answerability
                == crate::turn_types::Answerability::Conversational
    }

    /// The first-attempt calls of a turn drawn `conversational`: the user agent's message and
    /// reply, and the verifier's score of its need of a search.
    fn conversational_turn(&self, history: &[Utter], question: &str) -> Result<Vec<Request>> {
        let p = &self.job.prompts;
        let lang = &self.prepared.language;
        let ctx = json!({"language": lang.name(), "history": history, "feedback": null});
        let schema = OutputSpec::Schema(crate::agents::conversational_schema());
        let req = p
            .user_conversational
            .request(&ctx, schema)?
            .with_sampling(crate::agents::with_proposal_room(
                self.gen_sampling.clone(),
                lang,
                self.job.config.generation.rewrites,
            ))
            .with_sample(0);
        let user = self.call("user", &self.gen_ep, req)?;
        let justify = self.justify;
        let ctx = json!({"history": history, "question": question, "justify": justify});
        let schema = OutputSpec::Schema(crate::agents::score_schema("conversational", justify));
        let req = p.conversational.request(&ctx, schema)?;
        let judge = self.call("conversational", &self.verifier, req)?;
        Ok(vec![user, judge])
    }

    /// Whether turn `layer` of dialogue `dialogue` is drawn `two_passage` and made so (two
    /// passages offered at least), as the synthesis decides it.
    fn two_passage(&self, dialogue: usize, layer: usize, offered: usize) -> bool {
        let cfg = &self.job.config;
        let a = cfg.mix.draw(cfg.seed, dialogue, layer);
        a.two_passage
            && a.answerability == crate::turn_types::Answerability::Answerable
            && offered >= 2
    }

    /// The first-attempt calls of a turn drawn `two_passage`: the user agent's question on two
    /// passages, the verifier's verdict, the answerer on both and the faithfulness judge.
    fn two_passage_turn(
        &self,
        ask: &UserAsk<'_>,
        question: &str,
        history: &[Utter],
    ) -> Result<Vec<Request>> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let lang = &self.prepared.language;
        let (gen_ep, verifier) = (self.gen_ep.as_str(), self.verifier.as_str());
        let ctx = crate::agents::user_context(lang, ask);
        let schema =
            crate::agents::two_passage_question_schema(ask.passages.len(), lang, g.rewrites);
        let req = p
            .user_two_passage
            .request(&ctx, OutputSpec::Schema(schema))?
            .with_sampling(crate::agents::with_proposal_room(
                self.gen_sampling.clone(),
                lang,
                g.rewrites,
            ))
            .with_sample(0);
        let mut calls = vec![self.call("user", gen_ep, req)?];
        let (a, b) = (&ask.passages[0], &ask.passages[1]);
        let justify = self.justify;
        let ctx =
            json!({"history": history, "question": question, "a": a, "b": b, "justify": justify});
        let schema = OutputSpec::Schema(crate::agents::two_passage_schema(justify));
        calls.push(self.call(
            "two_passage",
            verifier,
            p.two_passage.request(&ctx, schema)?,
        )?);
        let both = crate::generate::joined(a, b);
        let ctx = json!({"language": lang.name(), "passage": both, "history": history, "question": question});
        let req = p.answer.request(&ctx, OutputSpec::Text)?;
        let req = req.with_sampling(self.gen_sampling.clone()).with_sample(0);
        calls.push(self.call("answerer", gen_ep, req)?);
        let answer = history.get(1).map(|u| u.text.clone()).unwrap_or_default();
        let ctx = json!({"history": history, "question": question, "passage": both, "answer": answer, "justify": justify});
        let schema = OutputSpec::Schema(crate::agents::score_schema("faithfulness", justify));
        calls.push(self.call(
            "faithfulness",
            verifier,
            p.faithfulness.request(&ctx, schema)?,
        )?);
        Ok(calls)
    }

    /// The first-attempt calls of a turn drawn `unanswerable`: the user agent's question and
    /// the verifier's grades of the passages found (the path's next ones stand in for them).
    fn unanswerable_turn(
        &self,
        ask: &UserAsk<'_>,
        question: &str,
        path: &[u32],
        pos: usize,
    ) -> Result<Vec<Request>> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let lang = &self.prepared.language;
        let ctx = crate::agents::user_context(lang, ask);
        let schema = crate::agents::unanswerable_question_schema(lang, g.rewrites);
        let req = p
            .user_unanswerable
            .request(&ctx, OutputSpec::Schema(schema))?
            .with_sampling(crate::agents::with_proposal_room(
                self.gen_sampling.clone(),
                lang,
                g.rewrites,
            ))
            .with_sample(0);
        let user = self.call("user", &self.gen_ep, req)?;
        let judge = self.unanswerable_call(ask.history, question, path, pos)?;
        Ok(vec![user, judge])
    }

    /// The unanswerable verifier's call on `question` (an unanswerable question, a partial
    /// one's missing part): the path's next passages stand in for those the search finds.
    fn unanswerable_call(
        &self,
        history: &[Utter],
        question: &str,
        path: &[u32],
        pos: usize,
    ) -> Result<Request> {
        let g = &self.job.config.generation;
        let n = g
            .uniqueness
            .judge_candidates
            .max(crate::generate::UNANSWERABLE_CANDIDATES);
        let cands: Vec<PromptPassage> = (0..n)
            .map(|i| {
                PromptPassage::of(&self.prepared.chunks[path[(pos + i) % path.len()] as usize])
            })
            .collect();
        let schema = crate::agents::unanswerable_schema(n, self.justify);
        let ctx = json!({"history": history, "question": question, "candidates": cands, "justify": self.justify});
        let req = self
            .job
            .prompts
            .unanswerable
            .request(&ctx, OutputSpec::Schema(schema))?;
        self.call("unanswerable", &self.verifier, req)
    }

    /// The user agent's request for one turn, with the prompt, schema and room the synthesis
    /// asks with (`Agents::user`): the concise prompt, or the styled one with this turn's draw.
    fn user_request(&self, ask: &UserAsk<'_>, styled: Option<TurnStyle>) -> Result<ChatRequest> {
        let g = &self.job.config.generation;
        let p = &self.job.prompts;
        let prepared = self.prepared;
        let passages = ask.passages;
        let mut ctx = crate::agents::user_context(&prepared.language, ask);
        let req = match styled {
            None => p
                .user_for(&prepared.language)
                .request(
                    &ctx,
                    OutputSpec::Schema(crate::agents::proposal_schema(
                        passages.len(),
                        &prepared.language,
                        g.rewrites,
                    )),
                )?
                .with_sampling(crate::agents::with_proposal_room(
                    self.gen_sampling.clone(),
                    &prepared.language,
                    g.rewrites,
                )),
            Some(t) => {
                ctx["style"] = json!(t);
                p.user_styled
                    .request(
                        &ctx,
                        OutputSpec::Schema(crate::agents::styled_proposal_schema(
                            passages.len(),
                            g.rewrites,
                        )),
                    )?
                    .with_sampling(crate::agents::styled_proposal_room(
                        self.gen_sampling.clone(),
                        &prepared.language,
                        g.rewrites,
                        &t,
                    ))
            }
        };
        Ok(req)
    }
}
