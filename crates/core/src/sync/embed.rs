//! Embedding the texts a sync needs, in bounded batches committed as they are made.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use super::SyncProgress;
use super::plan::SyncPlan;
use crate::{Error, RagIndex, Result, embedding_key};

/// Texts embedded between two progress reports (and cancel checks).
const PROGRESS_EVERY: usize = 32;

/// Texts of the plan never embedded with this model, each once: (text hash, text).
pub(crate) fn texts_to_embed<'p>(
    index: &RagIndex,
    plan: &'p SyncPlan,
    model_id: &str,
) -> Result<Vec<(&'p str, &'p str)>> {
    let mut planned: Vec<(&str, &str)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for file in &plan.changed {
        for chunk in &file.chunks {
            if seen.insert(&chunk.hash) {
                planned.push((chunk.hash.as_str(), chunk.text.as_str()));
            }
        }
    }
    let keys: Vec<String> = planned
        .iter()
        .map(|(hash, _)| embedding_key(model_id, hash))
        .collect();
    let stored = index.stored_vectors(&keys)?;
    Ok(planned
        .into_iter()
        .zip(&keys)
        .filter(|(_, key)| !stored.contains(*key))
        .map(|(text, _)| text)
        .collect())
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
            let mut vectors_made = Vec::with_capacity(batch.len());
            for group in batch.chunks(PROGRESS_EVERY) {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                let bodies: Vec<&str> = group.iter().map(|(_, text)| *text).collect();
                let vectors = self.embedder.embed_documents(&bodies)?;
                for ((hash, _), vector) in group.iter().zip(vectors) {
                    vectors_made.push((embedding_key(model_id, hash), vector));
                }
                done += group.len();
                progress(SyncProgress::Embedding { done, total });
            }
            self.save_vectors(&vectors_made)?;
        }
        Ok(())
    }
}
