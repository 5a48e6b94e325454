//! The lexical (BM25) index in the index's lifecycle.
//!
//! Like the graph it is derived data of the store: every commit that changes chunks applies the
//! same deletions and insertions to it and commits it, tagged with the store generation it
//! matches, *before* the store's own commit. So after any crash the lexical index is either at
//! the store's generation (whole) or one ahead of it (the store commit never happened); anything
//! other than equality with the store's generation — that, a missing or damaged directory, a
//! `--reindex` — is answered by rebuilding it from the stored chunks. Readers use it only when its
//! generation equals the snapshot's, and map every hit through the snapshot, so a chunk the
//! store no longer has never comes back through the lexical side.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rag_lexical::{LexicalDoc, LexicalError, LexicalIndex};
use rag_store::{ChunkRecord, IndexMeta};

use crate::{Error, LEXICAL_DIR, RagIndex, Result};

/// How many chunks `verify` looks up by one of their own terms.
const TERM_PROBES: usize = 16;
/// Problems of one kind that `verify` lists one by one before summarising the rest.
const LISTED: usize = 5;

/// What one commit changes in the lexical index, in the order the store applied it.
#[derive(Default)]
pub(crate) struct LexicalDelta<'a> {
    /// IDs of chunks deleted.
    pub deleted: Vec<String>,
    /// Chunks inserted (new IDs only: a kept ID has the same text, so its document stands).
    pub inserted: Vec<LexicalDoc<'a>>,
}

/// The lexical index as one searcher sees it.
#[derive(Clone)]
pub(crate) enum LexicalView {
    /// At exactly the searcher's generation.
    Ready(Arc<LexicalIndex>),
    /// Not usable for this generation, and why.
    Unavailable(String),
}

impl LexicalView {
    pub(crate) fn handle(&self) -> Option<&Arc<LexicalIndex>> {
        match self {
            LexicalView::Ready(index) => Some(index),
            LexicalView::Unavailable(_) => None,
        }
    }
}

impl RagIndex {
    pub(crate) fn lexical_dir(&self) -> PathBuf {
        self.dir.join(LEXICAL_DIR)
    }

    /// Whether the lexical index on disk is at the store's generation (`None`: nothing was ever
    /// committed, so there is nothing it should hold yet). Opens it read-only: a sync with nothing
    /// to do must not take tantivy's writer, which starts threads.
    pub(crate) fn lexical_is_current(&self, store_generation: Option<u64>) -> bool {
        let Some(generation) = store_generation else {
            return true;
        };
        match LexicalIndex::open_read_only(&self.lexical_dir()) {
            Ok(lexical) if lexical.generation() == Some(generation) => true,
            Ok(lexical) => {
                log::warn!(
                    "lexical index is at {}, the store at generation {generation}; this sync \
                     rebuilds it",
                    generation_text(lexical.generation())
                );
                false
            }
            Err(e) => {
                log::warn!("lexical index unusable ({e}); this sync rebuilds it");
                false
            }
        }
    }

    /// Brings the lexical index to `new_generation`, the state `chunks` lists: by applying
    /// `delta` when it is known to be at `old_generation` (`current`), by a rebuild otherwise.
    /// Does nothing — and opens no writer — when nothing changes and it is current.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update_lexical(
        &self,
        delta: Option<&LexicalDelta<'_>>,
        old_generation: Option<u64>,
        new_generation: u64,
        current: bool,
        chunks: impl FnOnce() -> Result<Vec<(String, ChunkRecord)>>,
        cancel: &AtomicBool,
    ) -> Result<()> {
        let unchanged = old_generation == Some(new_generation)
            && delta.is_some_and(|d| d.deleted.is_empty() && d.inserted.is_empty());
        if current && unchanged {
            return Ok(());
        }
        if let (true, Some(delta), Some(old)) = (current, delta, old_generation) {
            let applied = self.with_lexical_writer(|lexical| {
                if lexical.generation() != Some(old) {
                    return Ok(false);
                }
                let mut batch = lexical.writer()?;
                for id in &delta.deleted {
                    batch.delete(id);
                }
                for doc in &delta.inserted {
                    batch.add(*doc)?;
                }
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Cancelled);
                }
                batch.commit(new_generation)?;
                Ok(true)
            });
            match applied {
                Ok(true) => return Ok(()),
                Ok(false) => log::warn!("lexical index moved since this sync began; rebuilding"),
                Err(e @ Error::Cancelled) => return Err(e),
                Err(e) => log::warn!("lexical update failed ({e}); rebuilding"),
            }
        }
        let chunks = chunks()?;
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        self.rebuild_lexical(&chunks, new_generation)
    }

    /// Replaces the lexical index's content with `chunks`, committed as `generation`. A damaged
    /// index is deleted (it is ours: the lexical crate checks its marker) and created afresh.
    pub(crate) fn rebuild_lexical(
        &self,
        chunks: &[(String, ChunkRecord)],
        generation: u64,
    ) -> Result<()> {
        let fill = |lexical: &LexicalIndex| -> Result<()> {
            let mut batch = lexical.writer()?;
            batch.clear()?;
            for (id, chunk) in chunks {
                batch.add(LexicalDoc {
                    chunk_id: id,
                    point: chunk.point,
                    text: &chunk.text,
                    path: &chunk.path,
                })?;
            }
            batch.commit(generation)?;
            Ok(())
        };
        match self.with_lexical_writer(fill) {
            Ok(()) => return Ok(()),
            Err(Error::Lexical(LexicalError::NotOurs { path })) => {
                return Err(Error::Lexical(LexicalError::NotOurs { path }));
            }
            Err(e) => log::warn!("lexical index cannot be rebuilt in place ({e}); recreating it"),
        }
        let mut slot = self.lexical_writer.lock().expect("lexical writer lock");
        // The old handle holds tantivy's writer lock and maps files about to be deleted.
        *slot = None;
        let fresh = LexicalIndex::create_fresh(&self.lexical_dir())?;
        fill(&fresh)?;
        *slot = Some(fresh);
        Ok(())
    }

    /// Runs `f` with this process's lexical writer, opening it on first use. A handle that
    /// fails is dropped, so the next call opens the index again.
    fn with_lexical_writer<T>(&self, f: impl FnOnce(&LexicalIndex) -> Result<T>) -> Result<T> {
        if !self.writable {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        }
        let mut slot = self.lexical_writer.lock().expect("lexical writer lock");
        if slot.is_none() {
            *slot = Some(LexicalIndex::open_or_create(&self.lexical_dir())?);
        }
        let result = f(slot.as_ref().expect("opened above"));
        if matches!(result, Err(Error::Lexical(_))) {
            *slot = None;
        }
        result
    }

    /// The lexical index at exactly `generation` for a searcher, reusing `previous` (reloaded)
    /// when it can, since opening costs more than following a commit.
    pub(crate) fn lexical_view(
        &self,
        previous: Option<&LexicalView>,
        generation: Option<u64>,
    ) -> LexicalView {
        let Some(generation) = generation else {
            return LexicalView::Unavailable("nothing has been indexed yet".into());
        };
        if let Some(handle) = previous.and_then(LexicalView::handle)
            && handle.reload().is_ok()
            && handle.generation() == Some(generation)
        {
            return LexicalView::Ready(handle.clone());
        }
        match LexicalIndex::open_read_only(&self.lexical_dir()) {
            Ok(lexical) if lexical.generation() == Some(generation) => {
                LexicalView::Ready(Arc::new(lexical))
            }
            Ok(lexical) => LexicalView::Unavailable(format!(
                "it is at generation {:?}, the store at {generation}",
                lexical.generation()
            )),
            Err(e) => LexicalView::Unavailable(e.to_string()),
        }
    }

    /// What is wrong with the lexical index against the store's `chunks`: its generation, its set
    /// of (chunk ID, point), its document count, and whether sampled chunks are found by one of
    /// their own terms.
    pub(crate) fn check_lexical(
        &self,
        meta: &IndexMeta,
        chunks: &HashMap<String, ChunkRecord>,
    ) -> Vec<String> {
        let lexical = match LexicalIndex::open_read_only(&self.lexical_dir()) {
            Ok(lexical) => lexical,
            Err(e) => return vec![format!("lexical index cannot be opened: {e}")],
        };
        let mut problems = Vec::new();
        if lexical.generation() != Some(meta.generation) {
            // Readers do not search it and the next sync rebuilds it whole, so what it holds
            // chunk by chunk says nothing more.
            return vec![format!(
                "lexical index is at {}, the store at generation {} (a sync stopped between \
                 the two commits); searches use the vectors alone until the next sync \
                 rebuilds it",
                generation_text(lexical.generation()),
                meta.generation
            )];
        }
        if lexical.num_docs() != chunks.len() as u64 {
            problems.push(format!(
                "lexical index holds {} documents for {} chunks",
                lexical.num_docs(),
                chunks.len()
            ));
        }
        let indexed = match lexical.chunk_ids() {
            Ok(ids) => ids,
            Err(e) => {
                problems.push(format!("lexical index cannot be listed: {e}"));
                return problems;
            }
        };
        let mut seen: HashMap<&str, u64> = HashMap::with_capacity(indexed.len());
        let mut wrong = Vec::new();
        for (id, point) in &indexed {
            if seen.insert(id, *point).is_some() {
                wrong.push(format!("lexical index holds chunk {id} twice"));
            }
            match chunks.get(id) {
                None => wrong.push(format!("lexical index holds chunk {id}, which is not live")),
                Some(chunk) if chunk.point != *point => wrong.push(format!(
                    "lexical index has chunk {id} at point {point}, the store at {}",
                    chunk.point
                )),
                Some(_) => {}
            }
        }
        for (id, chunk) in chunks {
            if !seen.contains_key(id.as_str()) {
                wrong.push(format!("lexical index lacks chunk {id} of {}", chunk.path));
            }
        }
        summarise(&mut problems, wrong);

        let mut sorted: Vec<(&String, &ChunkRecord)> = chunks.iter().collect();
        sorted.sort_by_key(|(_, c)| c.point);
        let step = (sorted.len() / TERM_PROBES).max(1);
        let mut unfound = Vec::new();
        for (id, chunk) in sorted.into_iter().step_by(step) {
            // The longest word is the most likely to be rare; with an allow-filter of just this
            // point, any word of the chunk's own text must find it. A word of the text, not an
            // indexed term: queries are analyzed again, and stemming a stem can change it.
            let Some(term) = chunk
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !LexicalIndex::analyze(w).is_empty())
                .max_by_key(|w| w.len())
            else {
                continue;
            };
            let point = chunk.point;
            match lexical.search(term, 50, Some(&|p| p == point)) {
                Ok(hits) if hits.iter().any(|h| h.point == point) => {}
                Ok(_) => unfound.push(format!(
                    "lexical search for {term:?} does not find chunk {id} of {}",
                    chunk.path
                )),
                Err(e) => unfound.push(format!("lexical search for {term:?} failed: {e}")),
            }
        }
        summarise(&mut problems, unfound);
        problems
    }
}

/// Appends the first few of `found`, and how many more there are.
fn summarise(problems: &mut Vec<String>, found: Vec<String>) {
    let more = found.len().saturating_sub(LISTED);
    problems.extend(found.into_iter().take(LISTED));
    if more > 0 {
        problems.push(format!("... and {more} more like it"));
    }
}

/// "generation 7", or that it has none (an index never committed).
fn generation_text(generation: Option<u64>) -> String {
    generation.map_or_else(
        || "no generation".to_string(),
        |g| format!("generation {g}"),
    )
}
