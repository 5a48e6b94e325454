//! Making the index equal to a fresh index of a folder, with the least embedding work, switched
//! to in one commit.
//!
//! Order of work, and why:
//! 1. Walk and classify every file against the manifest (stat fast path, then blake3).
//! 2. Chunk changed files; embed only texts whose vector is not stored yet. Vectors are committed
//!    to the store in bounded batches as they are made: they are a cache keyed by text hash, not
//!    visible state, so a crash loses at most one batch of embedding work.
//! 3. In one write transaction, replace the chunks of every changed file, drop those of removed
//!    files, write the manifest, and point at a graph built for exactly that state (its files are
//!    written and fsynced before the commit). Readers see the old state or the new one, never a mix.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde::Serialize;

use rag_store::{ChunkRecord, FileRecord, GraphPointer, IndexMeta, Snapshot};
use rag_vector_index::VectorIndex;

use crate::walk::{FoundFile, walk};
use crate::{Error, GRAPH_DIR_PREFIX, RagIndex, Result, Searcher, embedding_key};

/// Options of one sync.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Compute and report the plan, write nothing.
    pub dry_run: bool,
    /// Rebuild everything when the model or chunker configuration changed.
    pub reindex: bool,
}

/// Progress of a running sync, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncProgress {
    /// Files examined so far, of the total found.
    Scanning {
        /// Done.
        done: usize,
        /// Total.
        total: usize,
    },
    /// Texts embedded so far, of the total to embed.
    Embedding {
        /// Done.
        done: usize,
        /// Total.
        total: usize,
    },
    /// Writing the new state and graph.
    Committing,
}

/// What happened to files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileCounts {
    /// New files indexed.
    pub added: usize,
    /// Changed files re-indexed.
    pub modified: usize,
    /// Files gone from the folder whose chunks were deleted.
    pub removed: usize,
    /// Files with the same content as last time.
    pub unchanged: usize,
    /// Files that could not be indexed (their previous chunks, if any, are kept).
    pub failed: usize,
}

/// What happened to chunks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChunkCounts {
    /// Texts run through the model in this sync.
    pub embedded: usize,
    /// Chunks of added or modified files whose vector was already stored.
    pub reused: usize,
    /// Chunk IDs deleted.
    pub deleted: usize,
    /// Live chunks after the sync.
    pub total: usize,
}

/// A file that could not be indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileError {
    /// Path relative to the synced folder.
    pub path: String,
    /// Why.
    pub error: String,
}

/// The outcome of a sync.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// File counts.
    pub files: FileCounts,
    /// Chunk counts.
    pub chunks: ChunkCounts,
    /// Files that failed, with reasons.
    pub errors: Vec<FileError>,
    /// Wall time.
    pub elapsed_ms: u64,
}

/// Stat facts that decide whether a file must be re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime_ns: i128,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Stat {
            size: meta.len(),
            mtime_ns,
        }
    }
}

/// Marks a stat as untrustworthy so the next sync re-hashes the file: a file written within the
/// filesystem's timestamp granularity of our read could change again without changing its mtime.
const RACY_MTIME: i128 = -1;
/// Texts embedded between two progress reports.
const PROGRESS_EVERY: usize = 32;
const RACY_WINDOW_NS: i128 = 2_000_000_000;

enum Outcome {
    Unchanged,
    /// Same content, new stat: only the manifest entry is rewritten.
    Touched(FileRecord),
    /// New or different content, chunked.
    Changed {
        stat: Stat,
        content_hash: String,
        chunks: Vec<rag_chunker::Chunk>,
    },
    /// Gone between the walk and the read: treated as removed.
    Vanished,
    Failed(String),
    /// The chunker (its tokenizer) cannot be loaded: nothing can be chunked, the sync stops.
    NoChunker(Error),
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!("permission denied ({e})"),
        _ => e.to_string(),
    }
}

impl RagIndex {
    /// Makes the index equal to a fresh index of `root`. See the module docs for the order of work.
    /// `progress` is called from the calling thread; `cancel` is checked between steps, and a
    /// cancelled sync leaves the visible index untouched.
    pub fn sync(
        &self,
        root: &Path,
        options: &SyncOptions,
        progress: &dyn Fn(SyncProgress),
        cancel: &AtomicBool,
    ) -> Result<SyncReport> {
        let started = Instant::now();
        if !self.writable {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        }
        let _guard = self.sync_guard.lock().expect("sync guard");
        std::fs::read_dir(root).map_err(|source| Error::Root {
            path: root.to_owned(),
            source,
        })?;

        let snapshot = self.store.read()?;
        let old_meta = snapshot.meta()?;
        let model_id = self.embedder.fingerprint().id();
        let chunker_id = self.chunker_fingerprint.clone();
        if let Some(meta) = &old_meta {
            let mismatch = if meta.model_fingerprint != model_id {
                Some((
                    "embedding model",
                    meta.model_fingerprint.clone(),
                    model_id.clone(),
                ))
            } else if meta.chunker_fingerprint != chunker_id {
                Some((
                    "chunker configuration",
                    meta.chunker_fingerprint.clone(),
                    chunker_id.clone(),
                ))
            } else {
                None
            };
            if let Some((what, stored, current)) = mismatch
                && !options.reindex
            {
                return Err(Error::ConfigChanged {
                    path: self.dir.clone(),
                    what,
                    stored,
                    current,
                });
            }
        }
        // A reindex treats every file as new and every stored chunk as stale.
        let reindex = options.reindex;
        let manifest: HashMap<String, FileRecord> = snapshot.files()?.into_iter().collect();

        let (found, problems) = walk(root, Some(&self.dir));
        let mut report = SyncReport::default();
        for problem in problems {
            report.errors.push(FileError {
                path: problem.rel,
                error: problem.error,
            });
        }

        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let total = found.len();
        progress(SyncProgress::Scanning { done: 0, total });
        let outcomes: Vec<Outcome> = found
            .par_iter()
            .map(|file| {
                let previous = if reindex {
                    None
                } else {
                    manifest.get(&file.rel)
                };
                self.classify(file, previous, now_ns)
            })
            .collect();
        progress(SyncProgress::Scanning { done: total, total });
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }

        let mut seen: HashSet<&str> = HashSet::with_capacity(found.len());
        let mut changed: Vec<(&str, Stat, String, Vec<rag_chunker::Chunk>)> = Vec::new();
        let mut touched: Vec<(&str, FileRecord)> = Vec::new();
        for (file, outcome) in found.iter().zip(outcomes) {
            match outcome {
                Outcome::Vanished => continue,
                Outcome::Unchanged => report.files.unchanged += 1,
                Outcome::Touched(record) => {
                    report.files.unchanged += 1;
                    touched.push((&file.rel, record));
                }
                Outcome::Changed {
                    stat,
                    content_hash,
                    chunks,
                } => {
                    if !reindex && manifest.contains_key(&file.rel) {
                        report.files.modified += 1;
                    } else {
                        report.files.added += 1;
                    }
                    changed.push((&file.rel, stat, content_hash, chunks));
                }
                Outcome::Failed(error) => {
                    report.errors.push(FileError {
                        path: file.rel.clone(),
                        error,
                    });
                }
                Outcome::NoChunker(e) => return Err(e),
            }
            seen.insert(&file.rel);
        }
        let removed: Vec<&str> = manifest
            .keys()
            .map(String::as_str)
            .filter(|path| !seen.contains(path))
            .collect();
        report.files.removed = removed.len();
        report.errors.sort_by(|a, b| a.path.cmp(&b.path));
        report.files.failed = report.errors.len();

        // Texts never embedded with this model, each once.
        let mut to_embed: Vec<(&str, &str)> = Vec::new(); // (key-less hash, text)
        let mut planned: HashSet<&str> = HashSet::new();
        for (_, _, _, chunks) in &changed {
            for chunk in chunks {
                if planned.contains(chunk.hash.as_str()) {
                    continue;
                }
                planned.insert(&chunk.hash);
                let key = embedding_key(&model_id, &chunk.hash);
                if !snapshot.has_embedding(&key)? {
                    to_embed.push((&chunk.hash, &chunk.text));
                }
            }
        }
        // Every chunk of a changed file costs no model call except the first of each new text
        // (duplicates within this sync included).
        let changed_chunks: usize = changed.iter().map(|(_, _, _, c)| c.len()).sum();
        report.chunks.embedded = to_embed.len();
        report.chunks.reused = changed_chunks - to_embed.len();

        let nothing_changed = changed.is_empty() && removed.is_empty() && !reindex;
        let graph_current = self.graph_is_current(&snapshot)?;
        if options.dry_run || (nothing_changed && touched.is_empty() && graph_current) {
            report.chunks.deleted =
                self.planned_deletions(&snapshot, &manifest, &changed, &removed, reindex)?;
            let live = snapshot.counts()?.chunks as usize;
            report.chunks.total = if options.dry_run {
                live - report.chunks.deleted
                    + changed.iter().map(|(_, _, _, c)| c.len()).sum::<usize>()
                    - self.kept_chunks(&manifest, &changed, reindex)
            } else {
                live
            };
            report.elapsed_ms = started.elapsed().as_millis() as u64;
            return Ok(report);
        }

        self.embed_and_cache(&model_id, &to_embed, progress, cancel)?;
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        progress(SyncProgress::Committing);
        let (deleted, total_chunks) = self.commit_state(CommitPlan {
            old_meta,
            model_id,
            chunker_id,
            manifest: &manifest,
            changed: &changed,
            touched: &touched,
            removed: &removed,
            reindex,
            graph_current,
            cancel,
        })?;
        report.chunks.deleted = deleted;
        report.chunks.total = total_chunks;
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    /// Decides what to do with one file. Never fails: problems become [`Outcome::Failed`].
    fn classify(&self, file: &FoundFile, previous: Option<&FileRecord>, now_ns: i128) -> Outcome {
        let before = match std::fs::metadata(&file.abs) {
            Ok(meta) => Stat::of(&meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(io_reason(&e)),
        };
        if let Some(prev) = previous
            && prev.size == before.size
            && prev.mtime_ns == before.mtime_ns
        {
            return Outcome::Unchanged;
        }
        if before.size > self.config.max_file_bytes {
            return Outcome::Failed(format!(
                "file is too large ({} bytes; the limit is {} bytes)",
                before.size, self.config.max_file_bytes
            ));
        }
        let bytes = match std::fs::read(&file.abs) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(io_reason(&e)),
        };
        // A file rewritten while we read it may be half old, half new: leave it for next time.
        match std::fs::metadata(&file.abs) {
            Ok(meta) if Stat::of(&meta) == before && bytes.len() as u64 == before.size => {}
            Ok(_) => {
                return Outcome::Failed(
                    "file changed while it was being read; it will be retried on the next sync"
                        .into(),
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(io_reason(&e)),
        }
        let stat = Stat {
            size: before.size,
            mtime_ns: if now_ns - before.mtime_ns < RACY_WINDOW_NS {
                RACY_MTIME
            } else {
                before.mtime_ns
            },
        };
        let content_hash = blake3::hash(&bytes).to_hex().to_string();
        if let Some(prev) = previous
            && prev.content_hash == content_hash
        {
            return Outcome::Touched(FileRecord {
                size: stat.size,
                mtime_ns: stat.mtime_ns,
                content_hash,
                chunk_ids: prev.chunk_ids.clone(),
            });
        }
        if bytes[..bytes.len().min(8192)].contains(&0) {
            return Outcome::Failed("binary file (contains NUL bytes); not indexed".into());
        }
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text,
            Err(e) => {
                return Outcome::Failed(format!(
                    "invalid UTF-8 at byte {}; not indexed",
                    e.valid_up_to()
                ));
            }
        };
        // Built here, not at open: a sync with nothing to chunk never loads the tokenizer.
        let chunker = match self.chunker() {
            Ok(chunker) => chunker,
            Err(e) => return Outcome::NoChunker(e),
        };
        match chunker.chunk(&file.rel, text) {
            Ok(document) => {
                for warning in &document.warnings {
                    log::warn!("{}: {warning}", file.rel);
                }
                Outcome::Changed {
                    stat,
                    content_hash,
                    chunks: document.chunks,
                }
            }
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    fn graph_is_current(&self, snapshot: &Snapshot) -> Result<bool> {
        let Some(meta) = snapshot.meta()? else {
            return Ok(true);
        };
        Ok(meta
            .graph
            .as_ref()
            .is_some_and(|g| g.generation == meta.generation && self.dir.join(&g.dir).is_dir()))
    }

    fn planned_deletions(
        &self,
        snapshot: &Snapshot,
        manifest: &HashMap<String, FileRecord>,
        changed: &[(&str, Stat, String, Vec<rag_chunker::Chunk>)],
        removed: &[&str],
        reindex: bool,
    ) -> Result<usize> {
        if reindex {
            return Ok(snapshot.counts()?.chunks as usize);
        }
        let mut deleted = 0;
        for path in removed {
            deleted += manifest[*path].chunk_ids.len();
        }
        for (path, _, _, chunks) in changed {
            if let Some(old) = manifest.get(*path) {
                let new: HashSet<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
                deleted += old
                    .chunk_ids
                    .iter()
                    .filter(|id| !new.contains(id.as_str()))
                    .count();
            }
        }
        Ok(deleted)
    }

    fn kept_chunks(
        &self,
        manifest: &HashMap<String, FileRecord>,
        changed: &[(&str, Stat, String, Vec<rag_chunker::Chunk>)],
        reindex: bool,
    ) -> usize {
        if reindex {
            return 0;
        }
        changed
            .iter()
            .filter_map(|(path, _, _, chunks)| {
                let old: HashSet<&str> = manifest
                    .get(*path)?
                    .chunk_ids
                    .iter()
                    .map(String::as_str)
                    .collect();
                Some(
                    chunks
                        .iter()
                        .filter(|c| old.contains(c.id.as_str()))
                        .count(),
                )
            })
            .sum()
    }

    /// Embeds `texts` in bounded batches, committing each batch's vectors to the store.
    fn embed_and_cache(
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

    /// The commit point: the new chunk set, manifest and graph pointer in one transaction.
    /// Returns (chunks deleted, live chunks after).
    fn commit_state(&self, plan: CommitPlan<'_>) -> Result<(usize, usize)> {
        let CommitPlan {
            old_meta,
            model_id,
            chunker_id,
            manifest,
            changed,
            touched,
            removed,
            reindex,
            graph_current,
            cancel,
        } = plan;
        let phase = Instant::now();
        let mut write = self.store.write()?;
        let mut meta = old_meta.clone().unwrap_or(IndexMeta {
            format_version: rag_store::FORMAT_VERSION,
            model_fingerprint: model_id.clone(),
            chunker_fingerprint: chunker_id.clone(),
            dim: self.embedder.dim(),
            generation: 0,
            next_point: 0,
            graph: None,
            unreferenced_vectors_bound: 0,
        });
        let mut deleted_points: Vec<u64> = Vec::new();
        let mut inserted: Vec<(u64, String)> = Vec::new(); // (point, embedding key)
        let mut deleted = 0usize;

        if reindex {
            let old = write.chunks()?;
            deleted += old.len();
            deleted_points.extend(old.iter().map(|(_, c)| c.point));
            for (id, _) in &old {
                write.remove_chunk(id)?;
            }
            for path in manifest.keys() {
                write.remove_file(path)?;
            }
            meta.model_fingerprint = model_id.clone();
            meta.chunker_fingerprint = chunker_id.clone();
            meta.dim = self.embedder.dim();
        }
        for path in removed {
            if reindex {
                continue;
            }
            for id in &manifest[*path].chunk_ids {
                if let Some(old) = write.remove_chunk(id)? {
                    deleted_points.push(old.point);
                    deleted += 1;
                }
            }
            write.remove_file(path)?;
        }
        let snapshot = self.store.read()?;
        for (path, stat, content_hash, chunks) in changed {
            let old_ids: Vec<String> = match manifest.get(*path) {
                Some(record) if !reindex => record.chunk_ids.clone(),
                _ => Vec::new(),
            };
            let new_ids: HashSet<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
            let mut kept_points: HashMap<String, u64> = HashMap::new();
            for id in &old_ids {
                if new_ids.contains(id.as_str()) {
                    if let Some(old) = snapshot.chunk(id)? {
                        kept_points.insert(id.clone(), old.point);
                    }
                } else if let Some(old) = write.remove_chunk(id)? {
                    deleted_points.push(old.point);
                    deleted += 1;
                }
            }
            for chunk in chunks {
                let point = match kept_points.get(&chunk.id) {
                    Some(&point) => point,
                    None => {
                        let point = meta.next_point;
                        meta.next_point += 1;
                        inserted.push((point, embedding_key(&model_id, &chunk.hash)));
                        point
                    }
                };
                write.put_chunk(&chunk.id, &chunk_record(chunk, point))?;
            }
            write.put_file(
                path,
                &FileRecord {
                    size: stat.size,
                    mtime_ns: stat.mtime_ns,
                    content_hash: content_hash.clone(),
                    chunk_ids: chunks.iter().map(|c| c.id.clone()).collect(),
                },
            )?;
        }
        for (path, record) in touched {
            write.put_file(path, record)?;
        }

        log::debug!(
            "commit: chunks and manifest written in {:?}",
            phase.elapsed()
        );
        let total = write.chunk_count()? as usize;
        let state_changed = reindex || !changed.is_empty() || !removed.is_empty();
        if state_changed {
            meta.generation += 1;
            meta.unreferenced_vectors_bound += deleted as u64;
            // Vectors no live chunk uses are only a cache (an edit that is undone re-uses them),
            // but must not pile up. Finding them reads every chunk, so it runs only once they
            // may be an eighth of the live chunks: amortised O(1) per removed chunk.
            if reindex || meta.unreferenced_vectors_bound > (total as u64 / 8).max(256) {
                let keep: HashSet<String> = write
                    .chunks()?
                    .iter()
                    .map(|(_, c)| embedding_key(&model_id, &c.hash))
                    .collect();
                let dropped = write.retain_embeddings(&keep)?;
                meta.unreferenced_vectors_bound = 0;
                log::debug!(
                    "commit: {dropped} unreferenced vectors dropped at {:?}",
                    phase.elapsed()
                );
            }
        } else if graph_current {
            // Only manifest stats changed: the graph stays as it is.
            write.commit()?;
            return Ok((0, total));
        }

        // The graph for exactly this state: updated from the previous one when it is usable,
        // rebuilt from stored vectors otherwise.
        let previous_graph = old_meta
            .as_ref()
            .and_then(|m| m.graph.as_ref().filter(|g| g.generation == m.generation))
            .filter(|_| !reindex)
            .and_then(|g| {
                VectorIndex::load(&self.dir.join(&g.dir), self.config.vectors.clone())
                    .map_err(|e| log::warn!("graph {} unusable ({e}); rebuilding", g.dir))
                    .ok()
            });
        let mut vectors = match previous_graph {
            Some(mut graph) => {
                for point in &deleted_points {
                    graph.delete(*point);
                }
                for (point, key) in &inserted {
                    let vector = write.embedding(key)?.ok_or_else(|| missing_vector(key))?;
                    graph.insert(*point, &vector)?;
                }
                graph
            }
            None => self.build_vectors(&write.chunks()?, |key| write.embedding(key))?,
        };
        if vectors.len() != total {
            log::warn!("graph out of step with the store; rebuilding it");
            vectors = self.build_vectors(&write.chunks()?, |key| write.embedding(key))?;
        }
        log::debug!("commit: graph updated at {:?}", phase.elapsed());
        if vectors.needs_compaction() {
            vectors.compact()?;
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        self.commit_with_graph(write, meta, vectors)?;
        log::debug!("commit: graph saved and committed at {:?}", phase.elapsed());
        Ok((deleted, total))
    }

    /// Saves `vectors` as the graph of `meta.generation`, commits `write` pointing at it, removes
    /// older graph directories and makes the new state the one searches see.
    pub(crate) fn commit_with_graph(
        &self,
        mut write: rag_store::WriteBatch,
        mut meta: IndexMeta,
        vectors: VectorIndex,
    ) -> Result<()> {
        // A fresh name every time: the directory the last commit points at is never touched, and
        // leftovers of a crashed sync can never be mistaken for the new graph.
        let nonce = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let graph_dir = format!("{GRAPH_DIR_PREFIX}{}-{nonce:x}", meta.generation);
        vectors.save(&self.dir.join(&graph_dir))?;
        meta.graph = Some(GraphPointer {
            dir: graph_dir.clone(),
            generation: meta.generation,
        });
        write.put_meta(&meta)?;
        write.commit()?;
        self.remove_unreferenced_graphs(&graph_dir);
        *self.searcher.write().expect("searcher lock") = Some(std::sync::Arc::new(Searcher {
            generation: meta.generation,
            snapshot: self.store.read()?,
            vectors,
        }));
        Ok(())
    }

    /// Deletes graph directories other than `current` (old generations, crash leftovers).
    pub(crate) fn remove_unreferenced_graphs(&self, current: &str) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(GRAPH_DIR_PREFIX)
                && name != current
                && let Err(e) = std::fs::remove_dir_all(entry.path())
            {
                log::warn!("cannot remove old graph {name}: {e}");
            }
        }
    }
}

struct CommitPlan<'a> {
    old_meta: Option<IndexMeta>,
    model_id: String,
    chunker_id: String,
    manifest: &'a HashMap<String, FileRecord>,
    changed: &'a [(&'a str, Stat, String, Vec<rag_chunker::Chunk>)],
    touched: &'a [(&'a str, FileRecord)],
    removed: &'a [&'a str],
    reindex: bool,
    graph_current: bool,
    cancel: &'a AtomicBool,
}

fn missing_vector(key: &str) -> Error {
    Error::Store(rag_store::StoreError::Corrupt {
        table: "embeddings",
        key: key.to_owned(),
        reason: "vector missing for a chunk being committed".into(),
    })
}

fn chunk_record(chunk: &rag_chunker::Chunk, point: u64) -> ChunkRecord {
    ChunkRecord {
        path: chunk.path.clone(),
        title: chunk.title.clone(),
        heading_path: chunk.heading_path.clone(),
        ordinal: chunk.ordinal as u32,
        byte_range: (chunk.byte_range.start as u64, chunk.byte_range.end as u64),
        text: chunk.text.clone(),
        hash: chunk.hash.clone(),
        tokens: chunk.tokens as u32,
        metadata_json: serde_json::Value::Object(chunk.metadata.clone()).to_string(),
        point,
    }
}
