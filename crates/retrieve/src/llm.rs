//! Adapters from the LLM layer (`mtr_llm::Llm`) to this crate's [`Embedder`] and [`Rewriter`]
//! interfaces: the `embedder` role embeds passages and queries, the `generator` role rewrites
//! conversational turns for the `llm-rewrite` formulation. Both are cached by the LLM layer.

use std::sync::Arc;

use mtr_core::InputError;
use mtr_core::model::Utterance;
use mtr_core::progress::Progress;
use mtr_llm::{Llm, OutputSpec, Prompt, Role, Sampling};

use crate::corpus::CorpusSource;
use crate::dense::{DenseOptions, Embedder};
use crate::error::{Error, Result};
use crate::index::IndexDir;
use crate::query::Rewriter;
use crate::retriever::BoxFuture;

/// The `embedder` role of an [`Llm`] as an [`Embedder`].
pub struct LlmEmbedder {
    llm: Llm,
    model: String,
}

impl LlmEmbedder {
    /// `None` when the configuration has no embedder role.
    pub fn new(llm: Llm) -> Option<Self> {
        let model = llm.embedding_model()?;
        Some(Self { llm, model })
    }
}

impl Embedder for LlmEmbedder {
    fn model(&self) -> String {
        self.model.clone()
    }
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move {
            self.llm
                .embed(texts)
                .await
                .map_err(|e| embed_error(&self.model, e))
        })
    }
}

/// An embedding call's error: the LLM layer's own where the user can fix it (so it keeps its
/// kind up to the binary), else an embedder failure of `model`.
fn embed_error(model: &str, e: mtr_llm::LlmError) -> Error {
    if e.is_user_error() {
        Error::Llm(e)
    } else {
        Error::embed(model, e)
    }
}

/// The embedder of every command that runs a dense retriever (`mtr retrieve`, `mtr bench`): the
/// `embedder` role of `llm`, with the index's dense vectors built for its model when missing. A
/// configuration without that role is the user's error, naming the field to set.
pub async fn open_embedder(
    llm: &Llm,
    idx: &IndexDir,
    src: &CorpusSource,
    progress: &dyn Progress,
) -> Result<Arc<dyn Embedder>> {
    let e = LlmEmbedder::new(llm.clone()).ok_or_else(|| {
        Error::from(
            InputError::new(
                "mtr.toml [llm]",
                "a dense retriever needs an `embedder` role",
            )
            .field("llm.roles.embedder"),
        )
    })?;
    let e: Arc<dyn Embedder> = Arc::new(e);
    crate::ensure_dense(idx, src, e.as_ref(), &DenseOptions::default(), progress).await?;
    Ok(e)
}

/// The `generator` role of an [`Llm`] as a [`Rewriter`] (temperature 0, so a rerun gets the
/// cached rewrite).
pub struct LlmRewriter {
    llm: Llm,
    prompt: Prompt,
}

impl LlmRewriter {
    /// A rewriter on `llm`'s generator role with the embedded rewrite prompt.
    pub fn new(llm: Llm) -> Result<Self> {
        let prompt = Prompt::parse("retrieve/rewrite", include_str!("../prompts/rewrite.j2"))
            .map_err(|e| Error::Internal(format!("rewrite prompt: {e}")))?;
        Ok(Self { llm, prompt })
    }
}

impl Rewriter for LlmRewriter {
    fn name(&self) -> String {
        format!(
            "{}#{}",
            self.prompt.id(),
            mtr_core::fingerprint::short(self.prompt.hash())
        )
    }

    fn rewrite<'a>(
        &'a self,
        history: &'a [Utterance<'a>],
        question: &'a str,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let ctx = serde_json::json!({ "history": history, "question": question });
            let mut req = self
                .prompt
                .request(&ctx, OutputSpec::Text)
                .map_err(|e| Error::Internal(format!("rewrite prompt: {e}")))?
                .with_label("llm-rewrite");
            req.sampling = Some(Sampling {
                temperature: Some(0.0),
                max_tokens: Some(128),
                ..Sampling::default()
            });
            let res = self
                .llm
                .chat_role(Role::Generator, &req)
                .await
                .map_err(|e| Error::embed("generator", e))?;
            let text = res
                .text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string();
            // An empty answer falls back to the question itself rather than an empty query.
            Ok(if text.is_empty() {
                question.to_string()
            } else {
                text
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedder_error_the_user_can_fix_stays_the_users() {
        let e = embed_error("e5", mtr_llm::LlmError::Config("no embedder role".into()));
        assert!(e.is_user_error(), "{e}");
        assert!(e.to_string().contains("no embedder role"), "{e}");
        let lost = embed_error("e5", mtr_llm::LlmError::Unsupported("no embeddings".into()));
        assert!(!lost.is_user_error(), "{lost}");
    }
}
