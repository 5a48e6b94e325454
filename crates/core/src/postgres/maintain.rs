//! `stats` and `verify` of a PostgreSQL collection.

use std::collections::{HashMap, HashSet};

use rag_pg::{PgCommit, PgStore};

use super::meta_from;
use crate::verify::VerifyReport;
use crate::{Error, RagIndex, Result, Stats};

impl RagIndex {
    pub(crate) fn stats_pg(&self, store: &PgStore) -> Result<Stats> {
        super::one_collection(store, "stats")?;
        let (meta, counts) = store
            .read(|view| Ok::<_, Error>((meta_from(view.meta()?, &self.dir)?, view.counts()?)))?;
        let shared = rag_store::Counts {
            files: counts.files,
            chunks: counts.chunks,
            points: counts.chunks,
            embeddings: counts.embeddings,
        };
        Ok(Stats {
            // The shared tables' sizes: chunks with their text and lexical indexes, and the
            // HNSW indexes.
            db_bytes: counts.chunk_bytes,
            graph_bytes: counts.vector_index_bytes,
            total_bytes: counts.chunk_bytes,
            ..self.base_stats(meta.as_ref(), shared, counts.tokens)
        })
    }

    /// Checks the collection: meta decodes and names this model, every manifest entry's chunks
    /// exist and belong to it, no chunk is outside the manifest, every chunk's hash matches its
    /// text and its vector has the collection's dimensions. With `repair`, drops the stray
    /// chunks and the manifest entries of files with inconsistent data (the next sync
    /// re-indexes them), in one transaction.
    pub(crate) fn verify_pg(&self, store: &PgStore, repair: bool) -> Result<VerifyReport> {
        super::one_collection(store, "verify")?;
        // Per chunk only its path and whether its text matches its hash, read in batches.
        let mut chunks: HashMap<String, StoredChunk> = HashMap::new();
        let (meta, files, dims, counts) = store.read(|view| {
            view.visit_chunk_texts(|id, path, text, hash| {
                let hash_ok = blake3::hash(text.as_bytes()).to_hex().as_str() == hash;
                let path = path.to_string();
                chunks.insert(id.to_string(), StoredChunk { path, hash_ok });
            })?;
            Ok::<_, Error>((
                meta_from(view.meta()?, &self.dir)?,
                view.files()?,
                view.dimensions()?,
                view.counts()?,
            ))
        })?;
        let mut report = VerifyReport {
            files: counts.files,
            chunks: counts.chunks,
            vectors: counts.embeddings,
            ..VerifyReport::default()
        };
        let Some(meta) = meta else {
            if !chunks.is_empty() || !files.is_empty() {
                report
                    .problems
                    .push("the collection has rows but no meta record".into());
            }
            return Ok(report);
        };
        if meta.model_fingerprint != self.embedder.fingerprint().id() {
            report.problems.push(format!(
                "vectors were made by model {}; this build uses {}",
                meta.model_fingerprint,
                self.embedder.fingerprint().id()
            ));
        }
        for (dim, count) in &dims {
            if *dim != meta.dim {
                report.problems.push(format!(
                    "{count} chunk vector(s) have {dim} dimensions, not {}",
                    meta.dim
                ));
            }
        }
        let mut listed: HashSet<&str> = HashSet::new();
        let mut bad_files: Vec<String> = Vec::new();
        for (path, file) in &files {
            let mut bad = false;
            for id in &file.chunk_ids {
                listed.insert(id);
                match chunks.get(id.as_str()) {
                    None => {
                        report
                            .problems
                            .push(format!("{path}: chunk {id} is missing"));
                        bad = true;
                    }
                    Some(chunk) if chunk.path != *path => {
                        report
                            .problems
                            .push(format!("{path}: chunk {id} belongs to {}", chunk.path));
                        bad = true;
                    }
                    Some(chunk) if !chunk.hash_ok => {
                        report
                            .problems
                            .push(format!("{path}: chunk {id} text does not match its hash"));
                        bad = true;
                    }
                    Some(_) => {}
                }
            }
            if bad {
                bad_files.push(path.clone());
            }
        }
        let mut strays: Vec<String> = chunks
            .keys()
            .filter(|id| !listed.contains(id.as_str()))
            .cloned()
            .collect();
        strays.sort();
        if !strays.is_empty() {
            report.problems.push(format!(
                "{} chunk(s) belong to no manifest entry (first: {})",
                strays.len(),
                strays[0]
            ));
        }
        if repair && (!strays.is_empty() || !bad_files.is_empty()) {
            let mut remove_chunks = strays.clone();
            for path in &bad_files {
                if let Some((_, file)) = files.iter().find(|(p, _)| p == path) {
                    remove_chunks.extend(file.chunk_ids.iter().cloned());
                }
            }
            let commit = PgCommit {
                remove_chunks,
                remove_files: bad_files.clone(),
                meta: serde_json::to_value(&meta).map_err(|e| Error::InvalidConfig {
                    reason: format!("meta record does not encode: {e}"),
                })?,
                ..PgCommit::default()
            };
            store.commit(&commit, meta.dim)?;
            // Report what still holds after the repair, as the embedded store does.
            let mut after = self.verify_pg(store, false)?;
            after.repaired = vec![format!(
                "dropped {} stray chunk(s) and the manifest entries of {} file(s), which the next sync re-indexes",
                strays.len(),
                bad_files.len()
            )];
            return Ok(after);
        }
        Ok(report)
    }
}

/// What `verify` keeps of one stored chunk.
struct StoredChunk {
    path: String,
    hash_ok: bool,
}
