//! Embedding the texts a sync needs, in bounded batches committed as they are made.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use rag_store::Snapshot;

use super::SyncProgress;
use super::plan::SyncPlan;
use crate::{Error, RagIndex, Result, embedding_key};

/// Texts embedded between two progress reports (and cancel checks).
const PROGRESS_EVERY: usize = 32;

/// Texts of the plan never embedded with this model, each once: (text hash, text).
pub(crate) fn texts_to_embed<'p>(
    plan: &'p SyncPlan,
    snapshot: &Snapshot,
    model_id: &str,
) -> Result<Vec<(&'p str, &'p str)>> {
    let mut out = Vec::new();
    let mut planned: HashSet<&str> = HashSet::new();
    for file in &plan.changed {
        for chunk in &file.chunks {
            if !planned.insert(&chunk.hash) {
                continue;
            }
            if !snapshot.has_embedding(&embedding_key(model_id, &chunk.hash))? {
                out.push((chunk.hash.as_str(), chunk.text.as_str()));
            }
        }
    }
    Ok(out)
}

impl RagIndex {
    /// Embeds `texts` in bounded batches, committing each batch's vectors to the store: they
    /// are a cache keyed by text hash, not visible state, so a crash loses at most one batch.
    pub(crate) fn embed_and_cache(
        &self,
        model_id: &str,
        texts: &[(&str, &str)],
        progress: &dyn Fn(SyncProgress),
        cancel: &AtomicBool,
    ) -> Result<()> {
        // Similar lengths side by side: batches carry little padding and progress is steady.
        let mut texts = texts.to_vec();
        texts.sort_by_key(|(_, text)| text.len());
        let total = texts.len();
        let mut done = 0;
        progress(SyncProgress::Embedding { done, total });
        for batch in texts.chunks(self.config.embed_commit_every.max(1)) {
            let mut write = self.store.write()?;
            for group in batch.chunks(PROGRESS_EVERY) {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                let bodies: Vec<&str> = group.iter().map(|(_, text)| *text).collect();
                let vectors = self.embedder.embed_documents(&bodies)?;
                for ((hash, _), vector) in group.iter().zip(&vectors) {
                    write.put_embedding(&embedding_key(model_id, hash), vector)?;
                }
                done += group.len();
                progress(SyncProgress::Embedding { done, total });
            }
            write.commit()?;
        }
        Ok(())
    }
}
