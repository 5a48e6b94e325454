//! Checking every invariant between manifest, chunks, vectors and graph, and repairing what is
//! derived.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use rag_vector_index::VectorIndex;

use crate::{Error, RagIndex, Result, embedding_key};

/// How many chunks are looked up in the graph by their own vector.
const GRAPH_PROBES: usize = 64;

/// The outcome of [`RagIndex::verify`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Files in the manifest.
    pub files: u64,
    /// Live chunks.
    pub chunks: u64,
    /// Stored vectors.
    pub vectors: u64,
    /// Invariants that do not hold.
    pub problems: Vec<String>,
    /// What was repaired (with `repair`).
    pub repaired: Vec<String>,
}

impl VerifyReport {
    /// True when no problem remains.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl RagIndex {
    /// Checks that every file's chunks exist and belong to it, every chunk's hash matches its
    /// text and has a vector of the right size, points map one-to-one to chunks, the model
    /// fingerprint matches this build's model, the saved graph loads, holds every live chunk and finds
    /// chunks by their own vectors, and the lexical index is at the store's generation, holds
    /// exactly the live chunks and finds sampled chunks by their own terms. With `repair`,
    /// rebuilds the graph from stored vectors and the lexical index from stored chunks, and drops the
    /// manifest entries of files whose stored data is inconsistent, so the next sync re-indexes
    /// them.
    pub fn verify(&self, repair: bool) -> Result<VerifyReport> {
        if repair && !self.writable {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        }
        let _guard = repair.then(|| self.sync_guard.lock().expect("sync guard"));
        if let Some(store) = self.pg() {
            return self.verify_pg(store, repair);
        }
        match self.verify_unlocked(repair) {
            // A damaged store is a finding, not a failure to verify.
            Err(e @ Error::Damaged { .. }) => Ok(VerifyReport {
                problems: vec![e.to_string()],
                ..VerifyReport::default()
            }),
            other => other,
        }
    }

    fn verify_unlocked(&self, repair: bool) -> Result<VerifyReport> {
        let snapshot = self.store()?.read()?;
        let counts = snapshot.counts()?;
        let mut report = VerifyReport {
            files: counts.files,
            chunks: counts.chunks,
            vectors: counts.embeddings,
            ..VerifyReport::default()
        };
        let Some(meta) = snapshot.meta()? else {
            if counts.chunks > 0 || counts.files > 0 {
                report
                    .problems
                    .push("index has data but no meta record".into());
            }
            return Ok(report);
        };
        let model_id = self.embedder.fingerprint().id();
        if meta.model_fingerprint != model_id {
            report.problems.push(format!(
                "model fingerprint differs: index {} vs this build {model_id}",
                meta.model_fingerprint
            ));
        }

        let files = snapshot.files()?;
        let chunks: HashMap<String, rag_store::ChunkRecord> =
            snapshot.chunks()?.into_iter().collect();
        let mut bad_files: HashSet<String> = HashSet::new();
        let mut owner: HashMap<&str, &str> = HashMap::new();
        for (path, record) in &files {
            for id in &record.chunk_ids {
                match chunks.get(id) {
                    None => {
                        report
                            .problems
                            .push(format!("{path}: chunk {id} is missing"));
                        bad_files.insert(path.clone());
                    }
                    Some(chunk) if chunk.path != *path => {
                        report.problems.push(format!(
                            "{path}: chunk {id} belongs to {} instead",
                            chunk.path
                        ));
                        bad_files.insert(path.clone());
                    }
                    Some(_) => {
                        if owner.insert(id, path).is_some() {
                            report.problems.push(format!("chunk {id} is listed twice"));
                            bad_files.insert(path.clone());
                        }
                    }
                }
            }
        }
        let mut points = HashSet::new();
        for (id, chunk) in &chunks {
            if !owner.contains_key(id.as_str()) {
                report.problems.push(format!(
                    "chunk {id} of {} is in no file's manifest",
                    chunk.path
                ));
                bad_files.insert(chunk.path.clone());
            }
            if blake3::hash(chunk.text.as_bytes()).to_hex().as_str() != chunk.hash {
                report.problems.push(format!(
                    "chunk {id} of {}: hash does not match text",
                    chunk.path
                ));
                bad_files.insert(chunk.path.clone());
            }
            match snapshot.embedding(&embedding_key(&meta.model_fingerprint, &chunk.hash))? {
                None => {
                    report
                        .problems
                        .push(format!("chunk {id} of {}: no stored vector", chunk.path));
                    bad_files.insert(chunk.path.clone());
                }
                Some(v) if v.len() != meta.dim => {
                    report.problems.push(format!(
                        "chunk {id} of {}: vector has {} dimensions, expected {}",
                        chunk.path,
                        v.len(),
                        meta.dim
                    ));
                    bad_files.insert(chunk.path.clone());
                }
                Some(_) => {}
            }
            if snapshot.chunk_id_for_point(chunk.point)?.as_deref() != Some(id.as_str()) {
                report.problems.push(format!(
                    "chunk {id}: point {} does not map back",
                    chunk.point
                ));
                bad_files.insert(chunk.path.clone());
            }
            if !points.insert(chunk.point) {
                report
                    .problems
                    .push(format!("point {} is used twice", chunk.point));
            }
            if chunk.point >= meta.next_point {
                report.problems.push(format!(
                    "chunk {id}: point {} not yet allocated",
                    chunk.point
                ));
            }
        }
        if counts.points != counts.chunks {
            report.problems.push(format!(
                "{} point entries for {} chunks",
                counts.points, counts.chunks
            ));
        }

        // Reads every stored vector, so damaged pages anywhere in the table are found.
        match snapshot.check_embeddings(meta.dim) {
            Ok(wrong) if wrong.is_empty() => {}
            Ok(wrong) => report.problems.push(format!(
                "{} stored vectors do not have {} dimensions",
                wrong.len(),
                meta.dim
            )),
            Err(e) => report.problems.push(e.to_string()),
        }
        let graph_problem = self.check_graph(&meta, &chunks);
        if let Some(problem) = &graph_problem {
            report.problems.push(problem.clone());
        }
        report.problems.extend(self.check_lexical(&meta, &chunks));

        if repair && !report.problems.is_empty() {
            self.repair(&mut report, &bad_files)?;
            // Report what still holds after the repair, e.g. a fingerprint only --reindex fixes.
            let mut after = self.verify_unlocked(false)?;
            after.repaired = report.repaired;
            return Ok(after);
        }
        Ok(report)
    }

    fn check_graph(
        &self,
        meta: &rag_store::IndexMeta,
        chunks: &HashMap<String, rag_store::ChunkRecord>,
    ) -> Option<String> {
        let Some(pointer) = &meta.graph else {
            return Some("no graph has been saved".into());
        };
        if pointer.generation != meta.generation {
            return Some(format!(
                "graph {} is for generation {}, the index is at {}",
                pointer.dir, pointer.generation, meta.generation
            ));
        }
        // Every file of the save, the f32 rows too (a search process reads only the rows it
        // rescores, so loading alone would not look at most of them).
        if let Err(e) = VectorIndex::check_saved(&self.dir.join(&pointer.dir)) {
            return Some(format!("graph {} is damaged: {e}", pointer.dir));
        }
        let graph =
            match VectorIndex::load(&self.dir.join(&pointer.dir), self.config.vectors.clone()) {
                Ok(graph) => graph,
                Err(e) => return Some(format!("graph {} cannot be loaded: {e}", pointer.dir)),
            };
        if graph.len() != chunks.len() {
            return Some(format!(
                "graph {} holds {} vectors for {} chunks",
                pointer.dir,
                graph.len(),
                chunks.len()
            ));
        }
        let step = (chunks.len() / GRAPH_PROBES).max(1);
        let mut sorted: Vec<&rag_store::ChunkRecord> = chunks.values().collect();
        sorted.sort_by_key(|c| c.point);
        let store = self.store().ok()?;
        for chunk in sorted.iter().step_by(step) {
            let key = embedding_key(&meta.model_fingerprint, &chunk.hash);
            let Ok(Some(vector)) = store.read().and_then(|s| s.embedding(&key)) else {
                continue;
            };
            match graph.search_exact(&vector, 10, None) {
                Ok(found) if found.iter().any(|(p, _)| *p == chunk.point) => {}
                Ok(_) => return Some(format!("graph {} lacks point {}", pointer.dir, chunk.point)),
                Err(e) => return Some(format!("graph {} cannot be searched: {e}", pointer.dir)),
            }
        }
        None
    }

    fn repair(&self, report: &mut VerifyReport, bad_files: &HashSet<String>) -> Result<()> {
        let mut write = self.store()?.write()?;
        let mut meta = write.meta()?.expect("meta checked above");
        for path in bad_files {
            write.remove_file(path)?;
            for (id, chunk) in write.chunks()? {
                if chunk.path == *path {
                    write.remove_chunk(&id)?;
                }
            }
            report
                .repaired
                .push(format!("{path}: dropped; the next sync re-indexes it"));
        }
        // Points whose chunk is gone cannot be searched; drop them via a fresh graph.
        meta.generation += u64::from(!bad_files.is_empty());
        let live = write.chunks()?;
        let vectors = self.build_vectors(&live, |key| write.embedding(key))?;
        let rebuilt = live.len();
        // Before the store commit, as in a sync: a crash in between leaves it a generation ahead,
        // which the next sync rebuilds.
        self.rebuild_lexical(&live, meta.generation)?;
        self.commit_with_graph(write, meta, vectors, &AtomicBool::new(false), false)?;
        report
            .repaired
            .push(format!("graph rebuilt from {rebuilt} stored vectors"));
        report.repaired.push(format!(
            "lexical index rebuilt from {rebuilt} stored chunks"
        ));
        Ok(())
    }
}
