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
//!    written and fsynced before the commit, as is the lexical index's commit of the same
//!    changes). Readers see the old state or the new one, never a mix.

mod classify;
mod embed;
pub(crate) mod plan;
pub(crate) mod set_aside;

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path};
use std::sync::Arc;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde::Serialize;

use rag_store::FileRecord;
use rag_vector_index::VectorIndex;

use crate::access::AccessRules;
use crate::commit::CommitContext;
use crate::walk::{WalkOptions, walk_with};
use crate::{Error, RagIndex, Result};
use classify::{Outcome, Scan};
use plan::SyncPlan;
use set_aside::SetAside;

/// Options of one sync.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SyncOptions {
    /// Compute and report the plan, write nothing.
    pub dry_run: bool,
    /// Rebuild everything when the model or chunker configuration changed.
    pub reindex: bool,
    /// Follow symbolic links that lead out of the folder (by default only links whose target
    /// is inside it are followed).
    pub follow_links: bool,
    /// Extensions to index (lower-case, no dot); `None`: every known format
    /// ([`default_extensions`](crate::walk::default_extensions)). Files of other extensions
    /// are not part of the index: narrowing the set removes them.
    pub extensions: Option<Vec<String>>,
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

/// A file that could not be indexed, or (in [`SyncReport::warnings`]) one indexed with a
/// problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileError {
    /// Path relative to the synced folder.
    pub path: String,
    /// Why.
    pub error: String,
}

/// Longest reason a report keeps. A parser may quote the input it failed on, and a hostile
/// file's one line can be megabytes: the report, `last-sync.json` and stderr stay readable.
const MAX_REASON_BYTES: usize = 2_000;

impl FileError {
    /// A problem of the file at `path`, its reason cut to [`MAX_REASON_BYTES`].
    pub fn new(path: String, error: String) -> FileError {
        FileError {
            path,
            error: bounded_reason(error),
        }
    }
}

fn bounded_reason(mut reason: String) -> String {
    if reason.len() > MAX_REASON_BYTES {
        let mut cut = MAX_REASON_BYTES;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        let left_out = reason.len() - cut;
        reason.truncate(cut);
        reason.push_str(&format!("… ({left_out} more bytes)"));
    }
    reason
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
    /// Files indexed with a problem (malformed front matter kept as text, blobs left out).
    pub warnings: Vec<FileError>,
    /// Wall time.
    pub elapsed_ms: u64,
}

impl RagIndex {
    /// Makes the index equal to a fresh index of `root`. See the module docs for the order of
    /// work. `progress` is called from the calling thread; `cancel` is checked between steps and
    /// right before the commit point, and a cancelled sync leaves the visible index untouched.
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
        self.refuse_index_inside(root)?;

        let walk_options = WalkOptions {
            follow_links: options.follow_links,
            extensions: options.extensions.clone(),
        };
        // The manifest read (a database round trip on PostgreSQL) and the folder walk (stat
        // calls) wait on different things: run them side by side.
        let (state, (found, problems)) = std::thread::scope(|scope| {
            let walk = scope.spawn(|| walk_with(root, Some(&self.dir), walk_options));
            let state = self.committed_state();
            let walked = walk.join().expect("the folder walk panicked");
            (state, walked)
        });
        let state = state?;
        log::debug!(
            "sync: committed state read and {} files walked at {:?}",
            found.len(),
            started.elapsed()
        );
        let old_meta = state.meta;
        let model_id = self.embedder.fingerprint().id();
        let chunker_id = self.chunker_fingerprint.clone();
        if let Some(meta) = &old_meta
            && !options.reindex
        {
            self.check_fingerprints(meta, &model_id, &chunker_id)?;
        }
        // A reindex treats every file as new and every stored chunk as stale.
        let reindex = options.reindex;
        let mut manifest: HashMap<String, FileRecord> = state.manifest;

        // Labels come from the rules as they are now; a file whose labels differ from those
        // its stored chunks got under the last commit's rules is chunked again.
        let rules = AccessRules::load(root)?;
        let old_rules = match old_meta.as_ref().and_then(|m| m.access_rules.as_deref()) {
            None => Some(AccessRules::default()),
            Some(text) if !reindex => AccessRules::parse(text).ok(),
            Some(_) => Some(AccessRules::default()),
        };
        let relabel = |rel: &str, labels: &[String]| match &old_rules {
            _ if reindex => false,
            Some(old) if old.text() == rules.text() => false,
            Some(old) => old.labels_for(rel) != labels,
            None => true,
        };
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let local_dir = self.pg().is_none().then_some(self.dir.as_path());
        let set_aside = SetAside::load(local_dir);
        let scan = Scan {
            now_ns,
            set_aside: &set_aside,
            // A dry run writes nothing: a runaway file is carried to the restart only.
            dir: local_dir.filter(|_| !options.dry_run),
        };
        let total = found.len();
        progress(SyncProgress::Scanning { done: 0, total });
        let warm_model = Once::new();
        let mut classified: Vec<(String, Outcome)> = found
            .par_iter()
            .map(|file| {
                if cancel.load(Ordering::Relaxed) {
                    return (file.rel.clone(), Outcome::Unchanged);
                }
                let previous = manifest.get(&file.rel).filter(|_| !reindex);
                let labels = rules.labels_for(&file.rel);
                let relabel = previous.is_some() && relabel(&file.rel, &labels);
                // New bytes will be chunked, and new chunks embedded: the model's load starts
                // then, beside the tokenizer's load and the chunking, not after them.
                let new_content = || {
                    if !options.dry_run {
                        warm_model.call_once(|| self.load_model_in_background());
                    }
                };
                let outcome = self.classify(file, previous, &scan, &labels, relabel, &new_content);
                (file.rel.clone(), outcome)
            })
            .collect();
        progress(SyncProgress::Scanning { done: total, total });
        log::debug!("sync: files classified at {:?}", started.elapsed());
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        if !options.dry_run {
            set_aside.prune();
        }
        if state.chunk_ids_pending && !reindex {
            self.load_changed_chunk_ids(&mut manifest, &mut classified)?;
        }
        let plan = SyncPlan::new(classified, &manifest, problems, reindex)?;
        log::debug!("sync: planned at {:?}", started.elapsed());
        let mut report = SyncReport {
            files: plan.files.clone(),
            errors: plan.errors.clone(),
            warnings: plan.warnings.clone(),
            ..SyncReport::default()
        };

        let to_embed = embed::texts_to_embed(self, &plan, &model_id)?;
        // Every chunk of a changed file costs no model call except the first of each new text
        // (duplicates within this sync included).
        report.chunks.embedded = to_embed.len();
        report.chunks.reused = plan.changed_chunks() - to_embed.len();

        let live = state.live;
        // PostgreSQL derives nothing outside its transaction: its "graph" and text index are
        // the database's own indexes.
        let postgres = self.pg().is_some();
        let graph_current = postgres || self.graph_is_current(old_meta.as_ref());
        let lexical_current =
            postgres || self.lexical_is_current(old_meta.as_ref().map(|m| m.generation));
        let nothing_to_write =
            !plan.changes_chunks() && plan.touched.is_empty() && graph_current && lexical_current;
        if options.dry_run || nothing_to_write {
            (report.chunks.deleted, report.chunks.total) = plan.chunk_delta(live);
            report.elapsed_ms = started.elapsed().as_millis() as u64;
            if !options.dry_run {
                self.record_last_sync(&report, &plan);
            }
            return Ok(report);
        }

        self.embed_and_cache(&model_id, &to_embed, progress, cancel)?;
        log::debug!(
            "sync: {} texts embedded at {:?}",
            to_embed.len(),
            started.elapsed()
        );
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        progress(SyncProgress::Committing);
        let context = CommitContext {
            old_meta,
            model_id: &model_id,
            chunker_id: &chunker_id,
            access_rules: rules.text(),
            graph_current,
            lexical_current,
            live,
            cancel,
            // Vectors are committed a batch at a time; after many batches the store's file
            // holds as much freed space as data (SQLite's docs: 135 MB for 57 MiB of tables).
            // A reindex rewrites every chunk row even when all vectors are reused (a format
            // bump): the Traefik demo's store went from 27 to 54 MiB of file.
            compact: reindex || to_embed.len() >= 2 * self.config.embed_commit_every(),
        };
        (report.chunks.deleted, report.chunks.total) = match postgres {
            true => self.commit_plan_pg(&plan, context)?,
            false => self.commit_plan(&plan, context)?,
        };
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        self.record_last_sync(&report, &plan);
        Ok(report)
    }

    /// Starts loading the model's weights on a thread of its own, so the load (~0.2 s) overlaps
    /// the rest of the scan, the tokenizer's load and the chunking instead of following them.
    /// Called at the first file whose bytes are new: a sync that chunks nothing never loads
    /// the model. Errors are left to the embedding call, which
    /// loads again and reports them.
    fn load_model_in_background(&self) {
        let embedder = Arc::clone(&self.embedder);
        let spawned = std::thread::Builder::new()
            .name("rag-model-load".into())
            .spawn(move || {
                if let Err(e) = embedder.preload() {
                    log::debug!("background model load failed ({e}); the embedding retries it");
                }
            });
        if let Err(e) = spawned {
            log::debug!("cannot start the background model load ({e})");
        }
    }

    /// Completes a manifest read without chunk IDs for the plan: the IDs of every file that is
    /// not unchanged (touched, changed, gone, withheld), including those a touch keeps.
    fn load_changed_chunk_ids(
        &self,
        manifest: &mut HashMap<String, FileRecord>,
        classified: &mut [(String, Outcome)],
    ) -> Result<()> {
        // Every listed file that is not unchanged or failed, and every listed file not found.
        // Unchanged files are listed ones, so when the listed files found are all of the
        // manifest no set of every path is needed to see that none is missing.
        let mut needed: Vec<String> = Vec::new();
        let mut listed_found = 0;
        for (path, outcome) in classified.iter() {
            if matches!(outcome, Outcome::Unchanged) {
                listed_found += 1;
            } else if manifest.contains_key(path) {
                listed_found += 1;
                if !matches!(outcome, Outcome::Failed(_)) {
                    needed.push(path.clone());
                }
            }
        }
        if listed_found < manifest.len() {
            let found: HashSet<&str> = classified.iter().map(|(path, _)| path.as_str()).collect();
            needed.extend(
                manifest
                    .keys()
                    .filter(|path| !found.contains(path.as_str()))
                    .cloned(),
            );
        }
        self.load_chunk_ids(manifest, needed)?;
        for (path, outcome) in classified.iter_mut() {
            if let (Outcome::Touched(touch), Some(stored)) = (outcome, manifest.get(path)) {
                touch.record.chunk_ids = stored.chunk_ids.clone();
            }
        }
        Ok(())
    }

    fn record_last_sync(&self, report: &SyncReport, plan: &SyncPlan) {
        if self.pg().is_some() {
            return;
        }
        let previous = match plan.reindex {
            true => None,
            false => crate::health::load_last_sync(&self.dir),
        };
        let reread: HashSet<&str> = plan
            .changed
            .iter()
            .map(|c| c.path.as_str())
            .chain(plan.removed.iter().map(|(path, _)| path.as_str()))
            .collect();
        let last = crate::health::LastSync::after(
            previous,
            report.errors.clone(),
            report.warnings.clone(),
            |path| reread.contains(path),
        );
        crate::health::save_last_sync(&self.dir, &last);
    }

    fn check_fingerprints(
        &self,
        meta: &rag_store::IndexMeta,
        model_id: &str,
        chunker_id: &str,
    ) -> Result<()> {
        let (what, stored, current) = if meta.model_fingerprint != model_id {
            ("embedding model", &meta.model_fingerprint, model_id)
        } else if meta.chunker_fingerprint != chunker_id {
            (
                "chunker configuration",
                &meta.chunker_fingerprint,
                chunker_id,
            )
        } else {
            return Ok(());
        };
        Err(Error::ConfigChanged {
            path: self.dir.clone(),
            what,
            stored: stored.clone(),
            current: current.to_owned(),
        })
    }

    /// An index inside the folder is skipped by the walk, and so is everything under it: allowed
    /// only where the walk skips anyway (a hidden folder such as the default `.rag-index`).
    fn refuse_index_inside(&self, root: &Path) -> Result<()> {
        let (Ok(root), Ok(index)) = (root.canonicalize(), self.dir.canonicalize()) else {
            return Ok(());
        };
        let Ok(inside) = index.strip_prefix(&root) else {
            return Ok(());
        };
        let hidden = inside.components().any(|c| match c {
            Component::Normal(name) => name.to_str().is_some_and(|n| n.starts_with('.')),
            _ => false,
        });
        if inside.as_os_str().is_empty() || !hidden {
            return Err(Error::IndexInsideFolder { index, root });
        }
        Ok(())
    }

    /// Whether the saved graph is the one of the stored generation and its files check out (a
    /// damaged graph is rebuilt by the next sync, not only by `verify --repair`).
    fn graph_is_current(&self, meta: Option<&rag_store::IndexMeta>) -> bool {
        let Some(meta) = meta else {
            return true;
        };
        let Some(graph) = meta
            .graph
            .as_ref()
            .filter(|g| g.generation == meta.generation)
        else {
            return false;
        };
        match VectorIndex::check_saved(&self.dir.join(&graph.dir)) {
            Ok(()) => true,
            Err(e) => {
                log::warn!(
                    "graph {} is damaged ({e}); this sync rebuilds it",
                    graph.dir
                );
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_error_keeps_a_reason_and_says_how_much_it_left_out() {
        let short = FileError::new("a.toml".into(), "line 2, column 5: expected `=`".into());
        assert_eq!(short.error, "line 2, column 5: expected `=`");

        // Multi-byte characters across the cut: the reason stays valid UTF-8.
        let quoted = format!("at `{}`", "é".repeat(MAX_REASON_BYTES));
        let long = FileError::new("a.toml".into(), quoted.clone());
        assert!(
            long.error.len() < MAX_REASON_BYTES + 40,
            "{}",
            long.error.len()
        );
        assert!(quoted.starts_with(long.error.split('…').next().unwrap()));
        let left_out = quoted.len() - long.error.split('…').next().unwrap().len();
        assert!(
            long.error.ends_with(&format!("… ({left_out} more bytes)")),
            "{}",
            long.error
        );
    }
}
