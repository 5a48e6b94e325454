//! [`LexicalWriter`]: one batch of adds and deletes, published atomically by its commit.

use std::sync::MutexGuard;

use tantivy::indexer::IndexWriterOptions;
use tantivy::{Index, IndexWriter, TantivyDocument, Term};

use crate::dir::payload;
use crate::error::LexicalError;
use crate::index::{LexicalIndex, guarded};

/// Memory for the indexing thread before it flushes a segment (not a commit) to disk.
const MEMORY_BUDGET: usize = 64 << 20;

/// One chunk to index.
#[derive(Clone, Copy, Debug)]
pub struct LexicalDoc<'a> {
    /// The chunk's ID, its unique key: deletes go by it.
    pub chunk_id: &'a str,
    /// The chunk's numeric id, what searches return and filter on.
    pub point: u64,
    /// The exact embedded text (heading breadcrumb line included).
    pub text: &'a str,
    /// The relative path of the chunk's file, whose words are searchable too.
    pub path: &'a str,
}

/// Opens the tantivy writer, which takes the directory's writer lock.
pub(crate) fn new_writer(
    dir: &std::path::Path,
    index: &Index,
) -> Result<IndexWriter, LexicalError> {
    // One indexing and one merge thread: the index is small next to embedding, and the machines
    // this runs on are shared; tantivy's default log merge policy bounds the segment count.
    let options = IndexWriterOptions::builder()
        .memory_budget_per_thread(MEMORY_BUDGET)
        .num_worker_threads(1)
        .num_merge_threads(1)
        .build();
    guarded(dir, "opening the writer", || {
        index
            .writer_with_options(options)
            .map_err(|e| LexicalError::tantivy(dir, e))
    })
}

/// A batch of changes to the index, from [`LexicalIndex::writer`] (one at a time: asking for a
/// second one on the same thread while the first lives deadlocks). Nothing it does is visible,
/// nor survives a crash, until [`LexicalWriter::commit`]; dropping it discards everything.
/// Operations apply in order, so `delete(id)` then `add(doc with id)` replaces a chunk.
pub struct LexicalWriter<'a> {
    index: &'a LexicalIndex,
    guard: MutexGuard<'a, Option<IndexWriter>>,
    /// Whether an operation was sent since the last commit (so a drop must roll back).
    pending: bool,
}

impl LexicalIndex {
    /// Starts a batch. Only one batch exists at a time: a second call waits for the first to end.
    /// Fails with [`LexicalError::ReadOnly`] on a read-only handle.
    pub fn writer(&self) -> Result<LexicalWriter<'_>, LexicalError> {
        let Some(slot) = &self.writer else {
            return Err(LexicalError::ReadOnly {
                path: self.dir.clone(),
            });
        };
        let mut guard = slot.lock().unwrap_or_else(|poisoned| {
            // A panic escaped while a batch was open: its writer's state is unknown, drop it.
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        });
        slot.clear_poison();
        if guard.is_none() {
            *guard = Some(new_writer(&self.dir, &self.index)?);
        }
        Ok(LexicalWriter {
            index: self,
            guard,
            pending: false,
        })
    }
}

impl LexicalWriter<'_> {
    fn writer(&self) -> &IndexWriter {
        // Set by `LexicalIndex::writer` and only taken by `Drop`.
        self.guard
            .as_ref()
            .expect("a LexicalWriter always holds a writer")
    }

    /// Adds one chunk. It does not replace an indexed chunk of the same ID: delete that first.
    pub fn add(&mut self, doc: LexicalDoc<'_>) -> Result<(), LexicalError> {
        let fields = self.index.fields;
        let mut document = TantivyDocument::new();
        document.add_text(fields.chunk_id, doc.chunk_id);
        document.add_u64(fields.point, doc.point);
        document.add_text(fields.text, doc.text);
        document.add_text(fields.path, doc.path);
        self.pending = true;
        self.writer()
            .add_document(document)
            .map_err(|e| LexicalError::tantivy(&self.index.dir, e))?;
        Ok(())
    }

    /// Deletes the chunk of this ID (and any earlier add of it in this batch); no-op if absent.
    pub fn delete(&mut self, chunk_id: &str) {
        self.pending = true;
        self.writer()
            .delete_term(Term::from_field_text(self.index.fields.chunk_id, chunk_id));
    }

    /// Deletes every chunk (those added earlier in this batch too): the start of a rebuild that
    /// keeps the old index searchable until it commits.
    pub fn clear(&mut self) -> Result<(), LexicalError> {
        self.pending = true;
        self.writer()
            .delete_all_documents()
            .map_err(|e| LexicalError::tantivy(&self.index.dir, e))?;
        Ok(())
    }

    /// Publishes the batch atomically and durably (segment files and `meta.json` are fsynced when
    /// this returns), tagged with `generation`, the store generation it matches, which
    /// [`LexicalIndex::generation`] then returns. On error nothing of the batch is published.
    pub fn commit(mut self, generation: u64) -> Result<(), LexicalError> {
        let dir = self.index.dir.clone();
        let Some(writer) = self.guard.as_mut() else {
            unreachable!("a LexicalWriter always holds a writer")
        };
        guarded(&dir, "committing", || {
            let mut prepared = writer
                .prepare_commit()
                .map_err(|e| LexicalError::tantivy(&dir, e))?;
            prepared.set_payload(&payload(generation));
            prepared
                .commit()
                .map_err(|e| LexicalError::tantivy(&dir, e))?;
            Ok(())
        })?;
        self.pending = false;
        self.index.after_commit()
    }
}

impl Drop for LexicalWriter<'_> {
    fn drop(&mut self) {
        if !self.pending {
            return;
        }
        let rolled_back = match self.guard.as_mut() {
            Some(writer) => guarded(&self.index.dir, "rolling back", || {
                writer
                    .rollback()
                    .map_err(|e| LexicalError::tantivy(&self.index.dir, e))
            }),
            None => return,
        };
        if let Err(e) = rolled_back {
            // The writer is unusable now; dropping it releases the lock and the next batch opens a
            // fresh one, which starts from the last commit anyway.
            log::warn!("{e}; reopening the writer for the next batch");
            *self.guard = None;
        }
    }
}
