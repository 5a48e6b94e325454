//! The commit point: a plan's new chunk set, manifest and graph pointer in one transaction, and
//! the graph and lexical index saved for exactly that state before it. Used by sync and by
//! `verify --repair`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rag_store::{ChunkRecord, FileRecord, GraphPointer, IndexMeta, WriteBatch};
use rag_vector_index::VectorIndex;

use crate::lexical::LexicalDelta;
use crate::sync::plan::SyncPlan;
use crate::{Error, RagIndex, Result, Searcher, embedding_key, index_dir, provenance};

/// What a commit needs besides the plan.
pub(crate) struct CommitContext<'a> {
    pub old_meta: Option<IndexMeta>,
    pub model_id: &'a str,
    pub chunker_id: &'a str,
    /// The permission rules the plan's labels come from.
    pub access_rules: &'a str,
    /// The saved graph matches the stored generation and its files check out.
    pub graph_current: bool,
    /// The lexical index is at the stored generation.
    pub lexical_current: bool,
    /// Live chunks of the committed state the plan was made against.
    pub live: usize,
    pub cancel: &'a AtomicBool,
    /// Compact the store after the commit (the sync committed many batches of vectors).
    pub compact: bool,
}

impl RagIndex {
    /// Applies `plan` in one write transaction. Returns (chunks deleted, live chunks after).
    pub(crate) fn commit_plan(
        &self,
        plan: &SyncPlan,
        cx: CommitContext<'_>,
    ) -> Result<(usize, usize)> {
        let phase = Instant::now();
        let mut write = self.store()?.write()?;
        let mut meta = self.meta_to_write(&cx, plan.reindex);
        let mut deleted_points: Vec<u64> = Vec::new();
        let mut inserted: Vec<(u64, String)> = Vec::new(); // (point, embedding key)
        let mut lexical = LexicalDelta::default();

        if plan.reindex {
            for (id, old) in write.chunks()? {
                write.remove_chunk(&id)?;
                deleted_points.push(old.point);
            }
            for (path, _) in self.store()?.read()?.files()? {
                write.remove_file(&path)?;
            }
        }
        for (path, ids) in &plan.removed {
            if plan.reindex {
                continue;
            }
            for id in ids {
                if let Some(old) = write.remove_chunk(id)? {
                    deleted_points.push(old.point);
                    lexical.deleted.push(id.clone());
                }
            }
            write.remove_file(path)?;
        }
        let snapshot = self.store()?.read()?;
        let now = provenance::rfc3339(provenance::now_ns());
        for file in &plan.changed {
            // The file's first indexing time survives edits (and reindexes: the snapshot still
            // holds the old chunks); a chunk keeps the time its text first appeared.
            let mut indexed_at: Option<String> = None;
            for id in &file.old_ids {
                if let Some(old) = snapshot.chunk(id)? {
                    let at = provenance::field(&provenance::metadata_of(&old), "indexed_at");
                    indexed_at = match (indexed_at, at) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
            }
            let indexed_at = indexed_at.unwrap_or_else(|| now.clone());
            let source = provenance::SourceFacts {
                size: file.stat.size,
                modified_ns: file.stat.modified_ns,
                content_hash: &file.content_hash,
            };
            let new_ids: HashSet<&str> = file.chunks.iter().map(|c| c.id.as_str()).collect();
            let mut kept_points: HashMap<&str, u64> = HashMap::new();
            for id in &file.old_ids {
                if new_ids.contains(id.as_str()) {
                    if let Some(old) = snapshot.chunk(id)? {
                        kept_points.insert(id, old.point);
                    }
                } else if let Some(old) = write.remove_chunk(id)? {
                    deleted_points.push(old.point);
                    lexical.deleted.push(id.clone());
                }
            }
            for chunk in &file.chunks {
                let point = match kept_points.get(chunk.id.as_str()) {
                    Some(&point) => point,
                    None => {
                        let point = meta.next_point;
                        meta.next_point += 1;
                        inserted.push((point, embedding_key(cx.model_id, &chunk.hash)));
                        lexical.inserted.push(rag_lexical::LexicalDoc {
                            chunk_id: &chunk.id,
                            point,
                            text: &chunk.text,
                            path: &chunk.path,
                        });
                        point
                    }
                };
                let changed_at = match snapshot.chunk(&chunk.id)? {
                    Some(old) => provenance::field(&provenance::metadata_of(&old), "changed_at"),
                    None => None,
                };
                let mut metadata = chunk.metadata.clone();
                provenance::stamp_source(&mut metadata, &source);
                provenance::stamp_times(
                    &mut metadata,
                    &indexed_at,
                    changed_at.as_deref().unwrap_or(&now),
                );
                write.put_chunk(&chunk.id, &chunk_record(chunk, metadata, point))?;
            }
            write.put_file(
                &file.path,
                &FileRecord {
                    size: file.stat.size,
                    mtime_ns: file.stat.mtime_ns,
                    content_hash: file.content_hash.clone(),
                    chunk_ids: file.chunks.iter().map(|c| c.id.clone()).collect(),
                    stamp: file.stat.stamp,
                },
            )?;
        }
        // A touch changes provenance only: the chunks' records are rewritten, their vectors,
        // points and texts stay, and searchers see it through the metadata epoch.
        let mut metadata_changed = false;
        for (path, touch) in &plan.touched {
            let (record, stat) = (&touch.record, &touch.stat);
            write.put_file(path, record)?;
            if touch.provenance_kept {
                continue;
            }
            let source = provenance::SourceFacts {
                size: stat.size,
                modified_ns: stat.modified_ns,
                content_hash: &record.content_hash,
            };
            for id in &record.chunk_ids {
                if let Some(mut chunk) = snapshot.chunk(id)? {
                    let mut metadata = provenance::metadata_of(&chunk);
                    let before = metadata.clone();
                    provenance::stamp_source(&mut metadata, &source);
                    // Only the stamp moved (a chmod, a copy back): the record stays as it is.
                    if metadata == before {
                        continue;
                    }
                    chunk.metadata_json = serde_json::Value::Object(metadata).to_string();
                    write.put_chunk(id, &chunk)?;
                    metadata_changed = true;
                }
            }
        }
        if metadata_changed || plan.changes_chunks() {
            meta.metadata_epoch += 1;
        }
        let labelled_now = plan
            .changed
            .iter()
            .flat_map(|f| &f.chunks)
            .any(|c| !crate::access::required_labels(&c.metadata).is_empty());
        meta.labels_seen = Some(
            match (plan.reindex, cx.old_meta.as_ref(), meta.labels_seen) {
                (true, _, _) | (_, None, _) => labelled_now,
                (false, Some(_), Some(seen)) => seen || labelled_now,
                // Written before the flag existed: look once.
                (false, Some(_), None) => {
                    labelled_now
                        || write.chunks()?.iter().any(|(_, c)| {
                            !crate::access::required_labels(&provenance::metadata_of(c)).is_empty()
                        })
                }
            },
        );
        log::debug!(
            "commit: chunks and manifest written in {:?}",
            phase.elapsed()
        );

        let deleted = deleted_points.len();
        let total = write.chunk_count()? as usize;
        let old_generation = cx.old_meta.as_ref().map(|m| m.generation);
        if plan.changes_chunks() {
            meta.generation += 1;
            meta.committed_at = Some(unix_millis_now());
            meta.unreferenced_vectors_bound += deleted as u64;
            self.sweep_vectors_if_due(&mut write, &mut meta, cx.model_id, plan.reindex, total)?;
        }
        // Written and fsynced before the store commit: a crash in between leaves it one
        // generation ahead, which the next sync sees and answers with a rebuild.
        self.update_lexical(
            (!plan.reindex).then_some(&lexical),
            old_generation,
            meta.generation,
            cx.lexical_current,
            || Ok(write.chunks()?),
            cx.cancel,
        )?;
        log::debug!("commit: lexical index updated at {:?}", phase.elapsed());
        if !plan.changes_chunks() && cx.graph_current {
            // Only manifest stats and provenance changed: the graph stays as it is.
            if cx.cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            write.put_meta(&meta)?;
            write.commit()?;
            return Ok((0, total));
        }

        let previous = cx
            .old_meta
            .as_ref()
            .and_then(|m| m.graph.as_ref().filter(|g| g.generation == m.generation))
            // Loaded deferred, the previous graph's vectors are not read again here: it is
            // reused only when this sync's check of its files passed.
            .filter(|_| !plan.reindex && cx.graph_current);
        let vectors = self.updated_graph(&write, previous, &deleted_points, &inserted, total)?;
        log::debug!("commit: graph updated at {:?}", phase.elapsed());
        // The state before this commit is read no more; its snapshot would keep a compaction
        // from running.
        drop(snapshot);
        self.commit_with_graph(write, meta, vectors, cx.cancel, cx.compact)?;
        log::debug!("commit: graph saved and committed at {:?}", phase.elapsed());
        Ok((deleted, total))
    }

    /// The meta record a commit starts from: the last one (a new one for a new index) under
    /// the rules applied now, and under this model and chunker after a reindex.
    pub(crate) fn meta_to_write(&self, cx: &CommitContext<'_>, reindex: bool) -> IndexMeta {
        let mut meta = cx.old_meta.clone().unwrap_or_else(|| IndexMeta {
            format_version: rag_store::FORMAT_VERSION,
            model_fingerprint: cx.model_id.to_owned(),
            chunker_fingerprint: cx.chunker_id.to_owned(),
            dim: self.embedder.dim(),
            generation: 0,
            next_point: 0,
            graph: None,
            unreferenced_vectors_bound: 0,
            access_rules: None,
            metadata_epoch: 0,
            committed_at: None,
            labels_seen: None,
        });
        meta.access_rules = Some(cx.access_rules.to_owned());
        if reindex {
            meta.model_fingerprint = cx.model_id.to_owned();
            meta.chunker_fingerprint = cx.chunker_id.to_owned();
            meta.dim = self.embedder.dim();
        }
        meta
    }

    /// Vectors no live chunk uses are only a cache (an edit that is undone re-uses them), but
    /// must not pile up. Finding them reads every chunk, so it runs only once they may be an
    /// eighth of the live chunks: amortised O(1) per removed chunk.
    fn sweep_vectors_if_due(
        &self,
        write: &mut WriteBatch,
        meta: &mut IndexMeta,
        model_id: &str,
        reindex: bool,
        live: usize,
    ) -> Result<()> {
        if reindex || meta.unreferenced_vectors_bound > (live as u64 / 8).max(256) {
            let keep: HashSet<String> = write
                .chunks()?
                .iter()
                .map(|(_, c)| embedding_key(model_id, &c.hash))
                .collect();
            let dropped = write.retain_embeddings(&keep)?;
            meta.unreferenced_vectors_bound = 0;
            log::debug!("commit: {dropped} unreferenced vectors dropped");
        }
        Ok(())
    }

    /// The graph for exactly the state in `write`: the previous one updated when it loads,
    /// rebuilt from stored vectors otherwise (it is derived data, never trusted blindly).
    ///
    /// The previous graph is loaded deferred: an edit deletes and inserts a few points and is
    /// saved as a delta beside its base, so the base's vectors and links are never read.
    fn updated_graph(
        &self,
        write: &WriteBatch,
        previous: Option<&GraphPointer>,
        deleted_points: &[u64],
        inserted: &[(u64, String)],
        live: usize,
    ) -> Result<VectorIndex> {
        let loaded = previous.and_then(|g| self.load_graph_deferred(g));
        let mut vectors = match loaded {
            Some(mut graph) => {
                for point in deleted_points {
                    graph.delete(*point);
                }
                for (point, key) in inserted {
                    let vector = write
                        .embedding(key)?
                        .ok_or_else(|| missing_vector(&self.dir, key))?;
                    graph.insert(*point, &vector)?;
                }
                graph
            }
            None => self.build_vectors(&write.chunks()?, |key| write.embedding(key))?,
        };
        if vectors.len() != live {
            log::warn!("graph out of step with the store; rebuilding it");
            vectors = self.build_vectors(&write.chunks()?, |key| write.embedding(key))?;
        }
        if vectors.needs_compaction()
            && let Err(e) = vectors.compact()
        {
            log::warn!("graph cannot be compacted ({e}); rebuilding it");
            vectors = self.build_vectors(&write.chunks()?, |key| write.embedding(key))?;
        }
        Ok(vectors)
    }

    /// Saves `vectors` as the graph of `meta.generation`, commits `write` pointing at it (unless
    /// `cancel` was set meanwhile: then nothing is committed), removes older graph directories,
    /// compacts the store when `compact` and no search of this process holds a snapshot, and
    /// makes the new state the one searches see.
    pub(crate) fn commit_with_graph(
        &self,
        mut write: WriteBatch,
        mut meta: IndexMeta,
        mut vectors: VectorIndex,
        cancel: &AtomicBool,
        compact: bool,
    ) -> Result<()> {
        let graph_dir = index_dir::new_graph_dir_name(meta.generation);
        let graph_path = self.dir.join(&graph_dir);
        vectors.save_incremental(&graph_path)?;
        // A delta needs its base: the one other graph directory the cleanup keeps.
        let base = VectorIndex::saved_base(&graph_path)?
            .and_then(|b| b.file_name().and_then(|n| n.to_str()).map(str::to_owned));
        meta.graph = Some(GraphPointer {
            dir: graph_dir.clone(),
            generation: meta.generation,
        });
        write.put_meta(&meta)?;
        // The last moment to stop: the saved graph is an unreferenced leftover the next commit
        // removes.
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        write.commit()?;
        let keep: Vec<&str> = std::iter::once(graph_dir.as_str())
            .chain(base.as_deref())
            .collect();
        index_dir::remove_unreferenced_graphs(&self.dir, &keep);
        let previous = self.searcher.read().expect("searcher lock").clone();
        // Before the new state's searcher takes its snapshot, which compaction would wait out.
        if compact && previous.is_none() {
            self.compact_store();
        }
        // A process that searches (watch, serve) reads the new state's vectors now, in the
        // writer, rather than in its next query; one that only syncs never needs them.
        if previous.is_some()
            && let Err(e) = vectors.preload()
        {
            log::warn!("graph {graph_dir} cannot be read back ({e}); the next search reloads it");
            *self.searcher.write().expect("searcher lock") = None;
            return Ok(());
        }
        let lexical = self.lexical_view(
            previous.as_deref().map(Searcher::lexical).as_ref(),
            Some(meta.generation),
        );
        *self.searcher.write().expect("searcher lock") = Some(Arc::new(Searcher {
            generation: meta.generation,
            epoch: meta.metadata_epoch,
            labels_seen: meta.labels_seen,
            snapshot: self.store()?.read()?,
            vectors: Arc::new(vectors),
            lexical: std::sync::RwLock::new(lexical),
            points: std::sync::OnceLock::new(),
        }));
        Ok(())
    }
}

fn missing_vector(dir: &std::path::Path, key: &str) -> Error {
    Error::Damaged {
        path: dir.join(crate::DB_FILE),
        reason: format!("vector {key} missing for a chunk being committed"),
    }
}

fn chunk_record(
    chunk: &rag_chunker::Chunk,
    metadata: serde_json::Map<String, serde_json::Value>,
    point: u64,
) -> ChunkRecord {
    ChunkRecord {
        path: chunk.path.clone(),
        title: chunk.title.clone(),
        heading_path: chunk.heading_path.clone(),
        ordinal: chunk.ordinal as u32,
        byte_range: (chunk.byte_range.start as u64, chunk.byte_range.end as u64),
        text: chunk.text.clone(),
        hash: chunk.hash.clone(),
        tokens: chunk.tokens as u32,
        metadata_json: serde_json::Value::Object(metadata).to_string(),
        point,
    }
}

/// Now, in milliseconds since the Unix epoch (0 if the clock is before it).
fn unix_millis_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
