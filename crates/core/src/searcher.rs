//! What a search runs against, and how the index keeps one per committed state: loaded from
//! the saved graph when it matches, rebuilt from stored vectors when it does not.

use std::sync::{Arc, OnceLock, RwLock};

use rag_store::{GraphPointer, Snapshot};
use rag_vector_index::VectorIndex;

use crate::chunk::{Hit, IndexedChunk, Signals};
use crate::lexical::LexicalView;
use crate::points::PointTable;
use crate::{RagIndex, Result};

/// What a search runs against: one committed generation's vectors and the snapshot they came
/// from, so a search never mixes two commits.
pub(crate) struct Searcher {
    pub(crate) generation: u64,
    /// [`IndexMeta::metadata_epoch`](rag_store::IndexMeta) of the snapshot.
    pub(crate) epoch: u64,
    /// [`IndexMeta::labels_seen`](rag_store::IndexMeta) of the snapshot.
    pub(crate) labels_seen: Option<bool>,
    pub(crate) snapshot: Snapshot,
    /// Shared by searchers of one generation (a touch makes a new searcher, not a new graph).
    pub(crate) vectors: Arc<VectorIndex>,
    /// Replaced when an unavailable lexical index becomes usable at the same generation (a sync
    /// or repair that rebuilt only it).
    pub(crate) lexical: RwLock<LexicalView>,
    /// Labels and filter fields per point, built on first search.
    pub(crate) points: OnceLock<PointTable>,
}

impl Searcher {
    /// Turns `(point, score, signals)` in rank order into hits, skipping points whose chunk
    /// is not in this snapshot (so nothing deleted comes back through any signal) and points
    /// `allow` rejects.
    pub(crate) fn hits(
        &self,
        found: impl IntoIterator<Item = (u64, f32, Option<Signals>)>,
        allow: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<Hit>> {
        let mut hits = Vec::new();
        for (point, score, signals) in found {
            if !allow(point) {
                continue;
            }
            let Some(chunk_id) = self.snapshot.chunk_id_for_point(point)? else {
                continue;
            };
            let Some(chunk) = self.snapshot.chunk(&chunk_id)? else {
                continue;
            };
            let mut hit = Hit::new(score, IndexedChunk::from_record(chunk_id, chunk), signals);
            hit.rank = hits.len() + 1;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// The point table, when a search with `filter` needs one: not when there is no filter and
    /// no committed chunk ever needed a label (then every live point passes, and building the
    /// table would read every chunk record).
    pub(crate) fn points_for(&self, filter: &crate::Filter) -> Result<Option<&PointTable>> {
        match filter.is_empty() && self.labels_seen == Some(false) {
            true => Ok(None),
            false => self.points().map(Some),
        }
    }

    /// The point table of this generation (built once: it reads every chunk record).
    pub(crate) fn points(&self) -> Result<&PointTable> {
        if let Some(table) = self.points.get() {
            return Ok(table);
        }
        let table = PointTable::build(self.snapshot.chunks()?);
        Ok(self.points.get_or_init(|| table))
    }

    pub(crate) fn is_empty(&self) -> Result<bool> {
        Ok(self.snapshot.counts()?.chunks == 0)
    }

    pub(crate) fn lexical(&self) -> LexicalView {
        self.lexical.read().expect("lexical view lock").clone()
    }
}

impl RagIndex {
    /// The searcher for the latest commit, loading or rebuilding it when a newer commit exists.
    pub(crate) fn searcher(&self) -> Result<Arc<Searcher>> {
        let snapshot = self.store()?.read()?;
        let meta = snapshot.meta()?;
        let stored = meta.as_ref().map(|m| m.generation);
        let generation = stored.unwrap_or(0);
        let epoch = meta.as_ref().map_or(0, |m| m.metadata_epoch);
        let cached = self.searcher.read().expect("searcher lock").clone();
        if let Some(current) = &cached
            && current.generation == generation
            && current.epoch != epoch
        {
            // Same live chunks, rewritten records (a touch): keep the graph and the lexical
            // index, take the new snapshot and rebuild what is cached about chunks.
            let searcher = Arc::new(Searcher {
                generation,
                epoch,
                labels_seen: meta.as_ref().and_then(|m| m.labels_seen),
                snapshot,
                vectors: current.vectors.clone(),
                lexical: RwLock::new(current.lexical()),
                points: OnceLock::new(),
            });
            *self.searcher.write().expect("searcher lock") = Some(searcher.clone());
            return Ok(searcher);
        }
        if let Some(current) = &cached
            && current.generation == generation
        {
            // Opening a missing or damaged index fails in well under a millisecond, so retrying
            // costs little while it is unusable and nothing once it is fine.
            if stored.is_some() && current.lexical().handle().is_none() {
                let view = self.lexical_view(None, stored);
                if view.handle().is_some() {
                    *current.lexical.write().expect("lexical view lock") = view;
                }
            }
            return Ok(current.clone());
        }
        let previous = self.searcher.read().expect("searcher lock").clone();
        let searcher = Arc::new(self.load_searcher(snapshot, previous.as_deref())?);
        *self.searcher.write().expect("searcher lock") = Some(searcher.clone());
        Ok(searcher)
    }

    /// Loads the saved graph of the snapshot's generation, or rebuilds it from stored vectors
    /// when it is missing, stale or damaged: the graph is derived data and never trusted blindly.
    fn load_searcher(&self, snapshot: Snapshot, previous: Option<&Searcher>) -> Result<Searcher> {
        let meta = snapshot.meta()?;
        let generation = meta.as_ref().map_or(0, |m| m.generation);
        let epoch = meta.as_ref().map_or(0, |m| m.metadata_epoch);
        let lexical = RwLock::new(self.lexical_view(
            previous.map(Searcher::lexical).as_ref(),
            meta.as_ref().map(|m| m.generation),
        ));
        let live = snapshot.counts()?.chunks as usize;
        if let Some(pointer) = meta.as_ref().and_then(|m| m.graph.clone())
            && pointer.generation == generation
            && let Some(vectors) = self.load_graph(&pointer, Some(live))
        {
            return Ok(Searcher {
                generation,
                epoch,
                labels_seen: meta.as_ref().and_then(|m| m.labels_seen),
                snapshot,
                vectors: Arc::new(vectors),
                lexical,
                points: OnceLock::new(),
            });
        }
        let vectors = self.build_vectors(&snapshot.chunks()?, |key| snapshot.embedding(key))?;
        Ok(Searcher {
            generation,
            epoch,
            labels_seen: meta.as_ref().and_then(|m| m.labels_seen),
            snapshot,
            vectors: Arc::new(vectors),
            lexical,
            points: OnceLock::new(),
        })
    }

    /// Builds a vector index over `chunks`, fetching each vector through `embedding`.
    pub(crate) fn build_vectors(
        &self,
        chunks: &[(String, rag_store::ChunkRecord)],
        embedding: impl Fn(&str) -> rag_store::Result<Option<Vec<f32>>>,
    ) -> Result<VectorIndex> {
        let mut items = Vec::with_capacity(chunks.len());
        for (id, chunk) in chunks {
            let key = self.embedding_key(&chunk.hash);
            match embedding(&key)? {
                Some(v) => items.push((chunk.point, v)),
                None => log::warn!("chunk {id} of {} has no stored vector", chunk.path),
            }
        }
        Ok(VectorIndex::build(
            self.embedder.dim(),
            self.config.vectors.clone(),
            items,
        )?)
    }

    /// The saved graph `pointer` names, or `None` (with a warning saying why) when it cannot be
    /// loaded or does not hold `expected` vectors: every caller then rebuilds it, since the
    /// graph is derived data and never trusted blindly.
    pub(crate) fn load_graph(
        &self,
        pointer: &GraphPointer,
        expected: Option<usize>,
    ) -> Option<VectorIndex> {
        let loaded = VectorIndex::load(&self.dir.join(&pointer.dir), self.config.vectors.clone());
        self.checked_graph(pointer, loaded, expected)
    }

    /// Like [`load_graph`](Self::load_graph), leaving the vectors on disk until needed: what a
    /// commit that updates the graph starts from.
    pub(crate) fn load_graph_deferred(&self, pointer: &GraphPointer) -> Option<VectorIndex> {
        let dir = self.dir.join(&pointer.dir);
        let loaded = VectorIndex::load_deferred(&dir, self.config.vectors.clone());
        self.checked_graph(pointer, loaded, None)
    }

    fn checked_graph(
        &self,
        pointer: &GraphPointer,
        loaded: std::result::Result<VectorIndex, rag_vector_index::IndexError>,
        expected: Option<usize>,
    ) -> Option<VectorIndex> {
        match loaded {
            Ok(vectors) if expected.is_none_or(|n| vectors.len() == n) => Some(vectors),
            Ok(vectors) => {
                log::warn!(
                    "graph {} holds {} vectors but the store has {} chunks; rebuilding",
                    pointer.dir,
                    vectors.len(),
                    expected.unwrap_or_default()
                );
                None
            }
            Err(e) => {
                log::warn!("graph {} unusable ({e}); rebuilding", pointer.dir);
                None
            }
        }
    }
}
