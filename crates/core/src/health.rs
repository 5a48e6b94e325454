//! The index health report (`stats --health`): what quietly degrades retrieval — the same text
//! indexed in several places, sources nobody has touched in a long time, files the last sync
//! could not index, chunks at the token cap (their ends may be cut), and the fingerprint the
//! query side must match.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sync::FileError;
use crate::{RagIndex, Result, provenance};

/// The last sync's problems, kept beside the store (a sync that changes nothing commits
/// nothing, yet its failures are news).
pub const LAST_SYNC_FILE: &str = "last-sync.json";
/// A running `rag-index watch` keeps its status here, for `stats --json` in other processes.
pub const WATCH_STATUS_FILE: &str = "watch-status.json";
/// Paragraphs shorter than this many words are not reported as duplicates (a "See also" line is
/// not a problem).
const MIN_DUPLICATE_WORDS: usize = 8;
/// A chunk within this share of the cap is reported as near it.
const NEAR_CAP: f64 = 0.95;

/// What the last sync could not index, and which indexed files have a problem.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LastSync {
    /// When it finished (RFC 3339 UTC).
    pub finished_at: String,
    /// Files not indexed, and why.
    pub errors: Vec<FileError>,
    /// Indexed files with a problem (front matter left out, blobs left out, tables without
    /// row records, ...), as found by the sync that last read each file: a warning is only
    /// found when a file is chunked, so those of files the last sync did not read again are
    /// carried over from the syncs before it.
    pub warnings: Vec<FileError>,
}

impl LastSync {
    /// This sync's problems, plus the earlier warnings of files it did not read again.
    /// `reread` says whether this sync chunked or removed a path (so its old warnings are void).
    pub(crate) fn after(
        previous: Option<LastSync>,
        errors: Vec<FileError>,
        mut warnings: Vec<FileError>,
        reread: impl Fn(&str) -> bool,
    ) -> LastSync {
        if let Some(previous) = previous {
            let kept = previous.warnings.into_iter().filter(|w| !reread(&w.path));
            warnings.extend(kept);
            warnings.sort_by(|a, b| a.path.cmp(&b.path));
        }
        LastSync {
            finished_at: crate::provenance::rfc3339(crate::provenance::now_ns()),
            errors,
            warnings,
        }
    }
}

/// Whether a chunk's metadata marks it as a table row record.
fn is_row_record(metadata_json: &str) -> bool {
    // Only the one field is decoded: the report reads every chunk.
    #[derive(Deserialize)]
    struct Tag {
        /// `rag_chunker::RECORD_KEY`.
        record: Option<String>,
    }
    serde_json::from_str::<Tag>(metadata_json)
        .is_ok_and(|tag| tag.record.as_deref() == Some(rag_chunker::ROW_RECORD))
}

/// The problems the last sync recorded in `dir`, if any can be read.
pub(crate) fn load_last_sync(dir: &Path) -> Option<LastSync> {
    let bytes = std::fs::read(dir.join(LAST_SYNC_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// One paragraph found in several chunks.
#[derive(Debug, Clone, Serialize)]
pub struct DuplicateText {
    /// The first words of the text.
    pub preview: String,
    /// Where it is: (path, chunk ID), in path order.
    pub places: Vec<(String, String)>,
}

/// A source file not modified for a long time.
#[derive(Debug, Clone, Serialize)]
pub struct StaleSource {
    /// Path in the folder.
    pub path: String,
    /// Its modification time (RFC 3339 UTC).
    pub modified: String,
    /// Days since.
    pub days: u64,
}

/// A chunk at (or within 5% of) the token cap.
#[derive(Debug, Clone, Serialize)]
pub struct NearCap {
    /// Path in the folder.
    pub path: String,
    /// Chunk ID.
    pub chunk_id: String,
    /// Its tokens.
    pub tokens: u32,
}

/// The health report.
#[derive(Debug, Clone, Serialize)]
pub struct HealthReport {
    /// Commit generation.
    pub generation: u64,
    /// Model fingerprint the index was built with (queries must use the same).
    pub model_fingerprint: String,
    /// Chunker fingerprint (chunk sizes, formats).
    pub chunker_fingerprint: String,
    /// Live chunks.
    pub chunks: u64,
    /// Texts indexed more than once.
    pub duplicates: Vec<DuplicateText>,
    /// The age, in days, past which a source is reported as stale.
    pub stale_after_days: u64,
    /// Sources not modified for longer than that, oldest first.
    pub stale_sources: Vec<StaleSource>,
    /// Indexed files that gave no chunk (empty, or nothing but front matter).
    pub empty_files: Vec<String>,
    /// The token cap of a chunk.
    pub token_cap: usize,
    /// Chunks near it.
    pub near_token_cap: Vec<NearCap>,
    /// The last sync's failures and the indexed files' warnings, if a sync recorded them.
    pub last_sync: Option<LastSync>,
}

/// Writes the last sync's problems (a new file, then an atomic rename).
pub(crate) fn save_last_sync(dir: &Path, last: &LastSync) {
    let written = serde_json::to_vec_pretty(last)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::write_index_file(dir, LAST_SYNC_FILE, &bytes));
    if let Err(e) = written {
        log::warn!(
            "cannot record the sync's problems in {}: {e}",
            dir.display()
        );
    }
}

impl RagIndex {
    /// The health report, reporting sources older than `stale_after_days`.
    pub fn health(&self, stale_after_days: u64) -> Result<HealthReport> {
        let snapshot = self.store()?.read()?;
        let meta = snapshot.meta()?;
        let mut chunks = snapshot.chunks()?;
        chunks.sort_by(|a, b| (&a.1.path, a.1.ordinal).cmp(&(&b.1.path, b.1.ordinal)));

        let mut by_body: BTreeMap<[u8; 32], Vec<(String, String)>> = BTreeMap::new();
        let mut previews: BTreeMap<[u8; 32], String> = BTreeMap::new();
        let token_cap = self.chunker_config().max_tokens;
        let mut near_token_cap = Vec::new();
        let mut previous_last: Option<(&str, [u8; 32])> = None;
        for (id, record) in &chunks {
            if record.tokens as f64 >= NEAR_CAP * token_cap as f64 {
                near_token_cap.push(NearCap {
                    path: record.path.clone(),
                    chunk_id: id.clone(),
                    tokens: record.tokens,
                });
            }
            // A row record repeats its table's caption and row on purpose: a second view of
            // the table, not a duplicate in the folder.
            if is_row_record(&record.metadata_json) {
                continue;
            }
            let body = match record.heading_path.is_empty() {
                true => record.text.as_str(),
                false => record.text.split_once("\n\n").map_or("", |(_, b)| b),
            };
            // By paragraph, not by chunk: the same paragraph under two different headings (or
            // packed with different neighbours) is the duplicate a reader cares about. A chunk
            // that continues a section opens with the previous chunk's last paragraph on
            // purpose (the chunker's carry): one place in the folder, not a duplicate.
            let carried = previous_last
                .take()
                .filter(|(path, _)| *path == record.path)
                .map(|(_, hash)| hash);
            let mut first = true;
            for paragraph in body.split("\n\n") {
                let words: Vec<&str> = paragraph
                    .lines()
                    .filter(|l| !l.trim_start().starts_with('#'))
                    .flat_map(str::split_whitespace)
                    .collect();
                if words.len() < MIN_DUPLICATE_WORDS {
                    continue;
                }
                let hash = *blake3::hash(words.join(" ").as_bytes()).as_bytes();
                previous_last = Some((record.path.as_str(), hash));
                if std::mem::take(&mut first) && carried == Some(hash) {
                    continue;
                }
                let places = by_body.entry(hash).or_default();
                if !places.iter().any(|(_, chunk)| chunk == id) {
                    places.push((record.path.clone(), id.clone()));
                }
                previews
                    .entry(hash)
                    .or_insert_with(|| words[..words.len().min(12)].join(" "));
            }
        }
        let duplicates = by_body
            .into_iter()
            .filter(|(_, places)| places.len() > 1)
            .map(|(hash, places)| DuplicateText {
                preview: previews.remove(&hash).unwrap_or_default(),
                places,
            })
            .collect();

        let now = provenance::now_ns();
        let day_ns = 86_400 * 1_000_000_000i128;
        let mut stale_sources = Vec::new();
        let mut empty_files = Vec::new();
        for (path, file) in snapshot.files()? {
            if file.chunk_ids.is_empty() {
                empty_files.push(path.clone());
            }
            // A racy (too recent to trust) mtime is recorded as -1: recent, so not stale.
            if file.mtime_ns > 0 {
                let days = ((now - file.mtime_ns) / day_ns).max(0) as u64;
                if days > stale_after_days {
                    stale_sources.push(StaleSource {
                        path,
                        modified: provenance::rfc3339(file.mtime_ns),
                        days,
                    });
                }
            }
        }
        stale_sources.sort_by(|a, b| b.days.cmp(&a.days).then_with(|| a.path.cmp(&b.path)));

        let last_sync = load_last_sync(&self.dir);
        Ok(HealthReport {
            generation: meta.as_ref().map_or(0, |m| m.generation),
            model_fingerprint: meta.as_ref().map_or_else(
                || self.embedder.fingerprint().id(),
                |m| m.model_fingerprint.clone(),
            ),
            chunker_fingerprint: meta.as_ref().map_or_else(
                || self.chunker_fingerprint.clone(),
                |m| m.chunker_fingerprint.clone(),
            ),
            chunks: chunks.len() as u64,
            duplicates,
            stale_after_days,
            stale_sources,
            empty_files,
            token_cap,
            near_token_cap,
            last_sync,
        })
    }
}
