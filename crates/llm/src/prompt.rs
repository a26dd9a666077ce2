//! Prompt templates: minijinja files with a name and a version, rendered into chat messages.
//!
//! A prompt file starts with a Jinja comment header and marks messages with blocks named after
//! their role (`system`, `user`, `assistant`, optionally suffixed `_1`, `_example`... for
//! few-shot turns); the blocks become messages in the order they appear:
//!
//! ```text
//! {#
//! name: audit/relevance
//! version: 3
//! #}
//! {% block system %}You judge passage relevance.{% endblock %}
//! {% block user %}Question: {{ question }}
//! Passage: {{ passage }}{% endblock %}
//! ```
//!
//! A template without blocks renders to one user message. Undefined variables are errors.
//! [`Prompt::hash`] covers name, version and source: it goes into cache keys (through the
//! rendered messages) and into every report's fingerprint (see [`prompts_hash`]).

use std::path::Path;

use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::chat::{ChatMessage, ChatRequest, MessageRole, OutputSpec, PromptRef};
use crate::error::{LlmError, Result};

const TEMPLATE: &str = "prompt";

/// A loaded, validated prompt template.
#[derive(Debug, Clone)]
pub struct Prompt {
    name: String,
    version: String,
    source: String,
    hash: String,
    /// Message blocks in source order: (block name, role).
    blocks: Vec<(String, MessageRole)>,
    env: Environment<'static>,
}

impl Prompt {
    /// Loads a prompt file; the name defaults to the file stem when the header has none.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let fallback = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = std::fs::read_to_string(path).map_err(|e| LlmError::Prompt {
            name: path.display().to_string(),
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(&fallback, &source).map_err(|e| match e {
            LlmError::Prompt { name, message } => LlmError::Prompt {
                name,
                message: format!("{message} (in {})", path.display()),
            },
            other => other,
        })
    }

    /// Parses a template from a string (use with `include_str!` for prompts built into a crate).
    /// `default_name` is used when the header has no `name:`.
    pub fn parse(default_name: &str, source: &str) -> Result<Self> {
        let header = parse_header(source);
        let name = header
            .iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| default_name.to_string());
        let err = |message: String| LlmError::Prompt {
            name: name.clone(),
            message,
        };
        let version = header
            .iter()
            .find(|(k, _)| k == "version")
            .map(|(_, v)| v.clone())
            .ok_or_else(|| err("the header comment has no `version:` line (start the file with `{# name: ... version: 1 #}`)".into()))?;
        if name.is_empty() {
            return Err(err("the prompt has no name".into()));
        }
        let mut blocks = Vec::new();
        for b in block_names(source) {
            let prefix = b.split('_').next().unwrap_or_default();
            let role = match prefix {
                "system" => MessageRole::System,
                "user" => MessageRole::User,
                "assistant" => MessageRole::Assistant,
                _ => continue, // helper blocks are allowed; they are not messages
            };
            if blocks.iter().any(|(n, _)| n == &b) {
                return Err(err(format!("block `{b}` appears twice")));
            }
            blocks.push((b, role));
        }
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| err(e.to_string()))?,
        );
        env.add_template_owned(TEMPLATE, source.to_string())
            .map_err(|e| err(template_error(&e)))?;
        let hash = blake3::hash(format!("{name}\0{version}\0{source}").as_bytes())
            .to_hex()
            .to_string();
        Ok(Self {
            name,
            version,
            source: source.to_string(),
            hash,
            blocks,
            env,
        })
    }

    /// The prompt's name, e.g. `audit/relevance`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The prompt's version.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// `name@version`.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
    /// BLAKE3 (hex) of name, version and template source.
    pub fn hash(&self) -> &str {
        &self.hash
    }
    /// The template source.
    pub fn source(&self) -> &str {
        &self.source
    }
    pub(crate) fn prompt_ref(&self) -> PromptRef {
        PromptRef {
            id: self.id(),
            hash: self.hash.clone(),
        }
    }

    /// Renders the messages with `ctx` (any `Serialize` value, usually a struct or
    /// `serde_json::json!`). Empty blocks are dropped; text is trimmed.
    pub fn render<C: Serialize>(&self, ctx: &C) -> Result<Vec<ChatMessage>> {
        let err = |e: minijinja::Error| LlmError::Prompt {
            name: self.id(),
            message: template_error(&e),
        };
        let tmpl = self.env.get_template(TEMPLATE).map_err(err)?;
        let mut captured = tmpl
            .render_captured(minijinja::Value::from(Serde(ctx)))
            .map_err(err)?;
        if self.blocks.is_empty() {
            let text = captured.output().trim().to_string();
            return Ok(vec![ChatMessage::user(text)]);
        }
        let mut out = Vec::with_capacity(self.blocks.len());
        for (block, role) in &self.blocks {
            let text = captured
                .with_state_mut(|s| s.render_block(block))
                .map_err(err)?;
            let text = text.trim();
            if !text.is_empty() {
                out.push(ChatMessage {
                    role: *role,
                    content: text.to_string(),
                });
            }
        }
        Ok(out)
    }

    /// Renders a request carrying this prompt's reference.
    pub fn request<C: Serialize>(&self, ctx: &C, output: OutputSpec) -> Result<ChatRequest> {
        let mut r = ChatRequest::new(self.render(ctx)?).with_prompt(self.prompt_ref());
        r.output = output;
        Ok(r)
    }
}

/// One hash over several prompts (sorted by id), for a report fingerprint's `prompts` field.
pub fn prompts_hash<'a>(prompts: impl IntoIterator<Item = &'a Prompt>) -> String {
    let mut items: Vec<(String, String)> = prompts
        .into_iter()
        .map(|p| (p.id(), p.hash.clone()))
        .collect();
    items.sort();
    mtr_core::fingerprint::hash_json(&items)
}

fn template_error(e: &minijinja::Error) -> String {
    let mut s = e.to_string();
    if let Some(line) = e.line() {
        s = format!("line {line}: {s}");
    }
    s
}

/// `key: value` lines of a leading `{# ... #}` comment.
fn parse_header(source: &str) -> Vec<(String, String)> {
    let s = source.trim_start_matches('\u{feff}').trim_start();
    let Some(rest) = s.strip_prefix("{#") else {
        return Vec::new();
    };
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let Some(end) = rest.find("#}") else {
        return Vec::new();
    };
    rest[..end]
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let k = k.trim().to_ascii_lowercase();
            let v = v
                .trim()
                .trim_end_matches('-')
                .trim()
                .trim_matches('"')
                .to_string();
            (!k.is_empty() && !k.contains(' ')).then_some((k, v))
        })
        .collect()
}

/// Names of `{% block NAME %}` tags in source order.
fn block_names(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(i) = rest.find("{%") {
        rest = &rest[i + 2..];
        let tag = rest.trim_start_matches(['-', '+']).trim_start();
        if let Some(after) = tag.strip_prefix("block")
            && after.starts_with(char::is_whitespace)
        {
            let name: String = after
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REL: &str = "{#\nname: audit/relevance\nversion: 3\n#}\n{% block system %}\nYou judge relevance.\n{% endblock %}\n{% block user_example %}Q: cats{% endblock %}\n{% block assistant_example %}{\"grade\": 1}{% endblock %}\n{% block user %}\nQuestion: {{ question }}\n{% for p in passages %}- {{ p }}\n{% endfor %}\n{% endblock %}\n";

    #[test]
    fn renders_blocks_in_order() {
        let p = Prompt::parse("x", REL).unwrap();
        assert_eq!(p.id(), "audit/relevance@3");
        let m = p
            .render(&json!({"question": "why?", "passages": ["a", "b"]}))
            .unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[0], ChatMessage::system("You judge relevance."));
        assert_eq!(m[1].role, MessageRole::User);
        assert_eq!(m[2].role, MessageRole::Assistant);
        assert_eq!(m[3].content, "Question: why?\n- a\n- b");
    }

    #[test]
    fn undefined_variable_is_an_error_naming_the_prompt() {
        let p = Prompt::parse("x", REL).unwrap();
        let e = p.render(&json!({"passages": []})).unwrap_err().to_string();
        assert!(e.contains("audit/relevance@3"), "{e}");
    }

    #[test]
    fn version_is_required_and_hash_changes_with_source() {
        assert!(
            Prompt::parse("x", "hello {{ a }}")
                .unwrap_err()
                .to_string()
                .contains("version")
        );
        let a = Prompt::parse("x", "{# version: 1 #}hello {{ a }}").unwrap();
        let b = Prompt::parse("x", "{# version: 1 #}hello  {{ a }}").unwrap();
        let c = Prompt::parse("x", "{# version: 2 #}hello {{ a }}").unwrap();
        assert_ne!(a.hash(), b.hash());
        assert_ne!(a.hash(), c.hash());
        assert_eq!(
            a.render(&json!({"a": 1})).unwrap(),
            vec![ChatMessage::user("hello 1")]
        );
        assert_eq!(prompts_hash([&a, &c]), prompts_hash([&c, &a]));
    }

    #[test]
    fn every_repo_prompt_parses() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let mut stack = vec![root];
        let mut n = 0;
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "j2" || x == "jinja") {
                    let prompt =
                        Prompt::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    assert!(!prompt.blocks.is_empty() || !prompt.source.is_empty());
                    n += 1;
                }
            }
        }
        eprintln!("{n} repository prompts parsed");
    }

    #[test]
    fn loads_from_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("judge.j2");
        std::fs::write(&f, "{# version: 7 #}{% block user %}{{ q }}{% endblock %}").unwrap();
        let p = Prompt::load(&f).unwrap();
        assert_eq!(p.id(), "judge@7");
        let r = p.request(&json!({"q": "hi"}), OutputSpec::Json).unwrap();
        assert_eq!(r.prompt.unwrap().hash, p.hash());
    }
}
