//! A sync plan as one PostgreSQL transaction.

use std::collections::{HashMap, HashSet};

use rag_pg::{PgChunk, PgCommit, PgStore};
use serde_json::{Map, Value};

use super::pg_file;
use crate::access::required_labels;
use crate::commit::CommitContext;
use crate::sync::plan::SyncPlan;
use crate::{Error, RagIndex, Result, embedding_key, provenance};

impl RagIndex {
    /// Applies `plan` in one transaction of the collection. Returns (chunks deleted, live
    /// chunks after), as the embedded commit does.
    pub(crate) fn commit_plan_pg(
        &self,
        plan: &SyncPlan,
        cx: CommitContext<'_>,
    ) -> Result<(usize, usize)> {
        let store = self
            .pg()
            .ok_or_else(|| self.unsupported("a PostgreSQL commit"))?;
        let mut meta = self.meta_to_write(&cx, plan.reindex);
        let old = stored_chunks(store, plan)?;
        let mut commit = PgCommit {
            clear: plan.reindex,
            ..PgCommit::default()
        };
        let mut deleted = 0;
        if !plan.reindex {
            for (path, ids) in &plan.removed {
                deleted += ids
                    .iter()
                    .filter(|id| old.contains_key(id.as_str()))
                    .count();
                commit.remove_chunks.extend(ids.iter().cloned());
                commit.remove_files.push(path.clone());
            }
        } else {
            deleted = cx.live;
        }
        let now = provenance::rfc3339(provenance::now_ns());
        for file in &plan.changed {
            let indexed_at = file
                .old_ids
                .iter()
                .filter_map(|id| old.get(id.as_str()))
                .filter_map(|c| provenance::field(&c.metadata, "indexed_at"))
                .min()
                .unwrap_or_else(|| now.clone());
            let source = provenance::SourceFacts {
                size: file.stat.size,
                modified_ns: file.stat.modified_ns,
                content_hash: &file.content_hash,
            };
            for id in file.dropped_ids() {
                if old.contains_key(id) {
                    deleted += 1;
                }
                commit.remove_chunks.push(id.to_string());
            }
            for chunk in &file.chunks {
                let stored = old.get(chunk.id.as_str());
                let changed_at = stored.and_then(|c| provenance::field(&c.metadata, "changed_at"));
                let mut metadata = chunk.metadata.clone();
                provenance::stamp_source(&mut metadata, &source);
                provenance::stamp_times(
                    &mut metadata,
                    &indexed_at,
                    changed_at.as_deref().unwrap_or(&now),
                );
                let new = pg_chunk(chunk, metadata, cx.model_id);
                // A reindex writes a new collection: every row goes in.
                match stored.filter(|_| !plan.reindex) {
                    Some(stored) if same_row(stored, &new) => {}
                    Some(stored) if same_content(stored, &new) => {
                        commit.put_metadata.push((new.id, new.metadata, new.labels));
                    }
                    _ => commit.put_chunks.push(new),
                }
            }
            let record = rag_store::FileRecord {
                size: file.stat.size,
                mtime_ns: file.stat.mtime_ns,
                content_hash: file.content_hash.clone(),
                chunk_ids: file.chunks.iter().map(|c| c.id.clone()).collect(),
                stamp: file.stat.stamp,
            };
            commit.put_files.push((file.path.clone(), pg_file(&record)));
        }
        // A touch rewrites provenance only; the chunks keep their text and vector.
        let touched_ids: Vec<String> = plan
            .touched
            .iter()
            .filter(|(_, touch)| !touch.provenance_kept)
            .flat_map(|(_, touch)| touch.record.chunk_ids.iter().cloned())
            .collect();
        let mut touched_chunks: HashMap<String, PgChunk> = match touched_ids.is_empty() {
            true => HashMap::new(),
            false => store
                .read(|view| view.chunks_by_id(&touched_ids))?
                .into_iter()
                .map(|c| (c.id.clone(), c))
                .collect(),
        };
        for (path, touch) in &plan.touched {
            let (record, stat) = (&touch.record, &touch.stat);
            commit.put_files.push((path.clone(), pg_file(record)));
            if touch.provenance_kept {
                continue;
            }
            let source = provenance::SourceFacts {
                size: stat.size,
                modified_ns: stat.modified_ns,
                content_hash: &record.content_hash,
            };
            for id in &record.chunk_ids {
                if let Some(mut chunk) = touched_chunks.remove(id) {
                    let before = chunk.metadata.clone();
                    provenance::stamp_source(&mut chunk.metadata, &source);
                    // Only the stamp moved (a chmod, a copy back): the row stays as it is.
                    if chunk.metadata == before {
                        continue;
                    }
                    commit
                        .put_metadata
                        .push((chunk.id, chunk.metadata, chunk.labels));
                }
            }
        }
        if !commit.put_chunks.is_empty() || !commit.put_metadata.is_empty() || plan.changes_chunks()
        {
            meta.metadata_epoch += 1;
        }
        if plan.changes_chunks() {
            meta.generation += 1;
            meta.committed_at = Some(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
            );
        }
        commit.meta = serde_json::to_value(&meta).map_err(|e| Error::InvalidConfig {
            reason: format!("meta record does not encode: {e}"),
        })?;
        // The last moment to stop: nothing is written yet.
        if cx.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        store.commit(&commit, meta.dim)?;
        // The manifest's count after the plan, as `live_chunks` would sum it (the writer's lock
        // keeps anyone else from changing it).
        let (_, live) = plan.chunk_delta(cx.live);
        Ok((deleted, live))
    }
}

/// The stored chunks the plan's changed and removed files had or will have, by ID (for the
/// provenance times that survive an edit, and to write only the rows that change).
fn stored_chunks(store: &PgStore, plan: &SyncPlan) -> Result<HashMap<String, PgChunk>> {
    let mut ids: HashSet<String> = HashSet::new();
    for file in &plan.changed {
        ids.extend(file.old_ids.iter().cloned());
        ids.extend(file.chunks.iter().map(|c| c.id.clone()));
    }
    for (_, removed) in &plan.removed {
        ids.extend(removed.iter().cloned());
    }
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<String> = ids.into_iter().collect();
    Ok(store
        .read(|view| view.chunks_by_id(&ids))?
        .into_iter()
        .map(|chunk| (chunk.id.clone(), chunk))
        .collect())
}

/// Whether a stored row already is `new` (the collection name aside, which a commit does not
/// carry).
fn same_row(stored: &PgChunk, new: &PgChunk) -> bool {
    same_content(stored, new) && stored.metadata == new.metadata && stored.labels == new.labels
}

/// Whether a stored row differs from `new` at most in its metadata and labels.
fn same_content(stored: &PgChunk, new: &PgChunk) -> bool {
    stored.id == new.id
        && stored.path == new.path
        && stored.title == new.title
        && stored.heading_path == new.heading_path
        && stored.ordinal == new.ordinal
        && stored.byte_range == new.byte_range
        && stored.text == new.text
        && stored.hash == new.hash
        && stored.tokens == new.tokens
        && stored.embedding_key == new.embedding_key
}

fn pg_chunk(chunk: &rag_chunker::Chunk, metadata: Map<String, Value>, model_id: &str) -> PgChunk {
    PgChunk {
        collection: String::new(),
        id: chunk.id.clone(),
        path: chunk.path.clone(),
        title: chunk.title.clone(),
        heading_path: chunk.heading_path.clone(),
        ordinal: chunk.ordinal as u32,
        byte_range: (chunk.byte_range.start as u64, chunk.byte_range.end as u64),
        text: chunk.text.clone(),
        hash: chunk.hash.clone(),
        tokens: chunk.tokens as u32,
        labels: required_labels(&metadata),
        metadata,
        embedding_key: embedding_key(model_id, &chunk.hash),
    }
}
