//! [`VectorIndex`]: slots, tombstones, exact scan and the graph path.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::codes::{CodeTable, QueryCodes};
use crate::dist::{dot, normalized};
use crate::graph::Graph;
use crate::params::validate_dim;
use crate::persist::{GraphSource, SavedBase, SearchSource};
use crate::scan::sort_hits;
use crate::search_file::SearchTable;
use crate::table::VectorTable;
use crate::vector_file::VectorFile;
use crate::walk::FlatGraph;
use crate::{IndexError, IndexParams};

/// A filter over caller ids, shared by searching threads.
pub type IdFilter<'a> = &'a (dyn Fn(u64) -> bool + Sync);

/// Below this estimated number of live vectors passing a filter, a flat scan over the allowed
/// ids beats the filtered graph walk. The walk must visit about `ef / fraction` nodes to collect
/// `ef` allowed ones, while the scan computes one dot product per allowed vector. On 20k real
/// embeddings the two cost the same at about 15-20% allowed (3-4k vectors); the scan was 4x
/// faster at 10% and 18x at 5% (`benches/hnsw_vs_hnswlib.rs`, "filter crossover").
const FLAT_FILTER_ALLOWED: f64 = 3_000.0;
/// Slots sampled to estimate a filter's selectivity; the estimate costs this many calls.
const FILTER_SAMPLE: usize = 512;

/// An approximate nearest-neighbour index over L2-normalised vectors with caller-chosen `u64`
/// ids, tombstone deletes, filtered search and crash-safe persistence. See the crate docs.
pub struct VectorIndex {
    pub(crate) dim: usize,
    pub(crate) params: IndexParams,
    /// Caller id of each slot (a slot below `nodes` is the hnsw_rs `DataId` of a graph node).
    pub(crate) ids: Vec<u64>,
    /// Tombstone flags by slot: `false` once deleted.
    pub(crate) live: Vec<bool>,
    /// Live ids only; a deleted id may come back under a new slot.
    pub(crate) slot_of: HashMap<u64, usize>,
    /// Slots `0..nodes` are graph nodes. Slots from `nodes` on are pending: inserted into an
    /// index backed by a saved base, searched by exact scan, and saved as a delta beside that
    /// base until there are enough of them to fold into the graph. An edit then writes what it
    /// changed, not the whole graph.
    pub(crate) nodes: usize,
    /// Slot-major copy of every graph node's vector: the walk, the flat scan and compaction
    /// read it contiguously instead of chasing hnsw_rs's per-point allocations. An index
    /// loaded deferred reads it (and the links) from `search_source` when first needed.
    pub(crate) node_vectors: OnceLock<VectorTable>,
    /// Where `node_vectors`, `codes` and `flat` come from when not yet read.
    pub(crate) search_source: Option<SearchSource>,
    /// Set once `search_source` has been read, so a table reset by an update is recomputed
    /// from memory, never read again from the old save.
    pub(crate) search_read: OnceLock<()>,
    /// One byte per dimension of every graph node's vector: what the walk scores with. Read
    /// from a save, or quantised from `node_vectors` after the graph changed.
    pub(crate) codes: OnceLock<CodeTable>,
    /// The saved f32 vectors, read row by row to rescore a walk's candidates while
    /// `node_vectors` is not in memory (a process that only searches never loads it).
    pub(crate) vector_file: OnceLock<VectorFile>,
    /// Slot-major vectors of the pending slots.
    pub(crate) pending: VectorTable,
    /// The saved full directory whose graph nodes these are, while they are unchanged: what a
    /// delta refers to.
    pub(crate) base: Option<SavedBase>,
    /// The hnsw_rs graph, which only inserts and `save` need. An index loaded for searching
    /// leaves it unset until then and reads it from `graph_source`.
    pub(crate) graph: OnceLock<Graph>,
    /// Where to load `graph` from when it is first needed.
    pub(crate) graph_source: Option<GraphSource>,
    /// The graph's links copied out for fast searching; rebuilt on first search after the
    /// graph changes (bulk changes then cost one O(n) copy, not one per insert).
    pub(crate) flat: OnceLock<FlatGraph>,
}

// Searches run from several threads through `&self`.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<VectorIndex>();
};

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim)
            .field("len", &self.len())
            .field("tombstones", &self.tombstones())
            .field("params", &self.params)
            .finish()
    }
}

impl VectorIndex {
    /// An empty index for `dim`-dimensional vectors.
    pub fn new(dim: usize, params: IndexParams) -> Result<VectorIndex, IndexError> {
        VectorIndex::with_capacity(dim, params, 0)
    }

    fn with_capacity(
        dim: usize,
        params: IndexParams,
        capacity: usize,
    ) -> Result<VectorIndex, IndexError> {
        validate_dim(dim)?;
        params.validate()?;
        Ok(VectorIndex {
            graph: OnceLock::from(Graph::new(&params, capacity.max(1024))),
            graph_source: None,
            dim,
            params,
            ids: Vec::with_capacity(capacity),
            live: Vec::with_capacity(capacity),
            slot_of: HashMap::with_capacity(capacity),
            nodes: 0,
            node_vectors: OnceLock::from(VectorTable::with_capacity(capacity * dim)),
            search_source: None,
            search_read: OnceLock::new(),
            codes: OnceLock::new(),
            vector_file: OnceLock::new(),
            pending: VectorTable::new(),
            base: None,
            flat: OnceLock::new(),
        })
    }

    /// Builds an index from `items` in one go, inserting into the graph in parallel (serially
    /// when `params.seed` is set, for reproducible graphs). Fails without building anything if
    /// any item is invalid or an id repeats.
    pub fn build(
        dim: usize,
        params: IndexParams,
        items: Vec<(u64, Vec<f32>)>,
    ) -> Result<VectorIndex, IndexError> {
        let mut index = VectorIndex::with_capacity(dim, params, items.len())?;
        index.insert_many(items)?;
        Ok(index)
    }

    /// Adds `vector` under `id`. The vector is normalised if it is not already (within 1e-5).
    ///
    /// In an index that was loaded or saved, the vector is pending: searched exactly and saved
    /// by [`save_incremental`](Self::save_incremental) as a delta, until enough are pending to
    /// fold them into the graph. Otherwise it goes straight into the graph.
    pub fn insert(&mut self, id: u64, vector: &[f32]) -> Result<(), IndexError> {
        self.insert_many(vec![(id, vector.to_vec())])
    }

    /// Inserts many items at once (into the graph in parallel, like [`build`](Self::build),
    /// or as pending vectors, like [`insert`](Self::insert)). All-or-nothing: every item is
    /// validated before any is inserted.
    pub fn insert_many(&mut self, items: Vec<(u64, Vec<f32>)>) -> Result<(), IndexError> {
        let mut prepared = Vec::with_capacity(items.len());
        let mut seen = std::collections::HashSet::with_capacity(items.len());
        for (id, v) in &items {
            let v = self.prepare(Some(*id), v)?;
            if self.slot_of.contains_key(id) || !seen.insert(*id) {
                return Err(IndexError::DuplicateId(*id));
            }
            prepared.push((*id, v));
        }
        drop(items);
        if self.base.is_some() {
            self.pending.reserve(prepared.len() * self.dim);
            for (id, v) in &prepared {
                self.pending.extend_from_slice(v);
                self.push_slot(*id);
            }
            return Ok(());
        }
        debug_assert_eq!(self.nodes, self.ids.len(), "pending slots without a base");
        let mut graph = self.take_graph()?;
        let first = self.nodes;
        let floats = prepared.len() * self.dim;
        let table = self.node_table_mut()?;
        table.reserve(floats);
        for (_, v) in &prepared {
            table.extend_from_slice(v);
        }
        for (id, _) in &prepared {
            self.push_slot(*id);
        }
        drop(prepared);
        self.nodes = self.ids.len();
        insert_slots(
            &mut graph,
            self.node_table()?,
            self.dim,
            first..self.nodes,
            &self.params,
        );
        self.graph = OnceLock::from(graph);
        self.flat = OnceLock::new();
        self.codes = OnceLock::new();
        Ok(())
    }

    /// Tombstones `id`; returns whether it was live. The node stays in the graph (hnsw_rs has
    /// no deletion) and is skipped by every search until [`compact`](Self::compact) drops it.
    pub fn delete(&mut self, id: u64) -> bool {
        match self.slot_of.remove(&id) {
            Some(slot) => {
                self.live[slot] = false;
                true
            }
            None => false,
        }
    }

    /// Whether `id` is live.
    pub fn contains(&self, id: u64) -> bool {
        self.slot_of.contains_key(&id)
    }

    /// Number of live vectors.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Whether there are no live vectors.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Number of deleted vectors still in the graph (or among the pending ones).
    pub fn tombstones(&self) -> usize {
        self.ids.len() - self.slot_of.len()
    }

    /// Number of live vectors not yet in the graph: searched exactly, saved as a delta.
    pub fn pending(&self) -> usize {
        (self.nodes..self.ids.len())
            .filter(|&slot| self.live[slot])
            .count()
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The parameters in force.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// Top `k` live vectors by cosine similarity (= dot product), best first, as
    /// `(id, score)`. Brute force below `exact_below` live vectors or when `filter` passes
    /// fewer than ~3,000 of them (estimated from a sample); otherwise the HNSW graph, with deletions and `filter` applied
    /// inside the walk (rejected nodes are traversed, never returned), merged with an exact scan
    /// of the pending vectors. Returns `k` results
    /// whenever `k` allowed live vectors exist: a walk that comes back short (a graph region
    /// cut off by the filter) is completed by an exact scan.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let q = self.prepare(None, query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        if self.len() < self.params.exact_below {
            return self.scan(&q, k, filter);
        }
        if let Some(f) = filter
            && self.estimate_pass_fraction(f) * (self.len() as f64) < FLAT_FILTER_ALLOWED
        {
            return self.scan_codes(&q, k, filter);
        }
        let hits = self.graph_search(&q, k, self.params.ef_search.max(k), filter)?;
        let complete = match filter {
            None => hits.len() == k.min(self.len()),
            Some(_) => hits.len() == k,
        };
        if complete {
            Ok(hits)
        } else {
            log::debug!(
                "graph walk returned {} of {k}; completing by a scan",
                hits.len()
            );
            self.scan_codes(&q, k, filter)
        }
    }

    /// Exact top `k` by brute force at any size (the `--exact` path; also ground truth for
    /// recall measurements).
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let q = self.prepare(None, query)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        self.scan(&q, k, filter)
    }

    /// Graph search only, at an explicit `ef`, no exact fallback: for benchmarks and recall
    /// measurements. Deletions and `filter` still apply inside the walk; pending vectors are
    /// still scanned.
    pub fn search_graph(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let q = self.prepare(None, query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        self.graph_search(&q, k, ef.max(k), filter)
    }

    /// Whether tombstones exceed `compact_ratio` of the graph's nodes.
    pub fn needs_compaction(&self) -> bool {
        let total = self.ids.len();
        total > 0 && self.tombstones() as f64 > self.params.compact_ratio as f64 * total as f64
    }

    /// Rebuilds the graph from the live vectors, dropping every tombstone.
    pub fn compact(&mut self) -> Result<(), IndexError> {
        let dim = self.dim;
        let n = self.len();
        let mut vectors = VectorTable::with_capacity(n * dim);
        let mut ids = Vec::with_capacity(n);
        let nodes = self.node_table()?;
        for (slot, &id) in self.ids.iter().enumerate() {
            if self.live[slot] {
                ids.push(id);
                vectors.extend_from_slice(self.vector_in(nodes, slot));
            }
        }
        let mut graph = Graph::new(&self.params, n);
        insert_slots(&mut graph, &vectors, dim, 0..n, &self.params);
        self.slot_of = ids
            .iter()
            .enumerate()
            .map(|(slot, &id)| (id, slot))
            .collect();
        self.live = vec![true; n];
        self.ids = ids;
        self.nodes = n;
        self.node_vectors = OnceLock::from(vectors);
        self.search_source = None;
        self.vector_file = OnceLock::new();
        self.pending = VectorTable::new();
        self.base = None;
        self.graph = OnceLock::from(graph);
        self.graph_source = None;
        self.flat = OnceLock::new();
        self.codes = OnceLock::new();
        Ok(())
    }

    /// Compacts if [`needs_compaction`](Self::needs_compaction); returns whether it did. The
    /// owner calls this after a batch of deletes (e.g. before saving), so compaction is on by
    /// default without making a single `delete` pay for a rebuild.
    pub fn maybe_compact(&mut self) -> Result<bool, IndexError> {
        if self.needs_compaction() {
            self.compact()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Inserts the pending vectors into the graph (dropping deleted ones), so the index no
    /// longer depends on the base it was loaded from.
    pub fn fold(&mut self) -> Result<(), IndexError> {
        if self.nodes == self.ids.len() {
            self.base = None;
            return Ok(());
        }
        let mut graph = self.take_graph()?;
        let first = self.nodes;
        let pending = std::mem::replace(&mut self.pending, VectorTable::new());
        let pending_ids = self.ids.split_off(first);
        let pending_live = self.live.split_off(first);
        let dim = self.dim;
        let table = self.node_table_mut()?;
        let mut kept = Vec::new();
        for ((id, live), v) in pending_ids
            .into_iter()
            .zip(pending_live)
            .zip(pending.chunks_exact(dim))
        {
            if live {
                table.extend_from_slice(v);
                kept.push(id);
            }
        }
        for id in kept {
            self.push_slot(id);
        }
        self.nodes = self.ids.len();
        insert_slots(
            &mut graph,
            self.node_table()?,
            dim,
            first..self.nodes,
            &self.params,
        );
        self.graph = OnceLock::from(graph);
        self.flat = OnceLock::new();
        self.codes = OnceLock::new();
        self.base = None;
        Ok(())
    }

    /// Most pending vectors [`save_incremental`](Self::save_incremental) writes as a delta
    /// before it folds them into the graph: `delta_ratio` of the graph's nodes, and never
    /// fewer than `exact_below` (scanning that many costs what a small exact index does).
    pub fn delta_limit(&self) -> usize {
        ((self.nodes as f64 * self.params.delta_ratio as f64) as usize).max(self.params.exact_below)
    }

    /// Writes the whole index into `dir` (created if missing; must be empty): the hnsw_rs
    /// graph dump, the slot table, the search structures (links and vectors), and last a
    /// checksummed manifest. Pending vectors are folded into the graph first. Files and
    /// directory are fsynced before this returns. Nothing is ever overwritten: the caller
    /// switches to `dir` atomically.
    pub fn save(&mut self, dir: &Path) -> Result<(), IndexError> {
        self.fold()?;
        let base = crate::persist::save(self, dir)?;
        self.base = Some(base);
        Ok(())
    }

    /// Like [`save`](Self::save), but when the index was loaded from (or last saved to) a full
    /// directory beside `dir`, and at most [`delta_limit`](Self::delta_limit) vectors are
    /// pending, writes only a delta: the deletions since that base and the pending vectors.
    /// The cost is then that of the change, not of the index; `dir` needs its base directory
    /// ([`saved_base`](Self::saved_base)) to stay in place.
    pub fn save_incremental(&mut self, dir: &Path) -> Result<(), IndexError> {
        if let Some(base) = &self.base
            && base.is_sibling_of(dir)
            && self.pending() <= self.delta_limit()
            && crate::delta::save(self, base, dir)?
        {
            return Ok(());
        }
        self.save(dir)
    }

    /// The full directory a saved `dir` depends on: `Some` for a delta, `None` for a full save.
    pub fn saved_base(dir: &Path) -> Result<Option<std::path::PathBuf>, IndexError> {
        crate::delta::saved_base(dir)
    }

    /// Checks, without loading, that `dir` holds a complete save whose search files match
    /// their manifest (sizes and BLAKE3 hashes): what [`load`](Self::load) needs to succeed.
    /// A delta is checked together with its base.
    pub fn check_saved(dir: &Path) -> Result<(), IndexError> {
        crate::delta::check_saved(dir)
    }

    /// Removes a directory written by [`save`](Self::save) (also an interrupted one), file by
    /// file; a directory holding anything else is left untouched and `Ok(false)` returned.
    pub fn remove_saved(dir: &Path) -> Result<bool, IndexError> {
        crate::persist::remove_saved(dir)
    }

    /// Loads what [`save`](Self::save) or [`save_incremental`](Self::save_incremental) wrote,
    /// verifying the files it reads against the manifest's sizes and BLAKE3 hashes first; a
    /// missing, truncated or corrupt file set is an error (rebuild from the stored vectors
    /// then). `params` supplies the search settings; the graph keeps the `M`/`ef_construction`
    /// it was built with until the next compaction.
    ///
    /// Only the slot table, the delta and the search structures are read, so the index is
    /// ready to search in about the time it takes to read its vectors. The hnsw_rs graph is
    /// verified and parsed when an insert or `save` first needs it, so the directories must
    /// stay in place until then; if it is gone or damaged by then, the graph is rebuilt from
    /// the vectors (logged as a warning). Directories saved before the search structures
    /// existed load as before, from the hnsw_rs dump.
    pub fn load(dir: &Path, params: IndexParams) -> Result<VectorIndex, IndexError> {
        let index = crate::delta::load(dir, params)?;
        index.preload()?;
        Ok(index)
    }

    /// Like [`load`](Self::load), but leaves the graph nodes' vectors and links on disk until
    /// a search, fold, compaction or full save needs them (a failing check is then that call's
    /// error). What an update that deletes and inserts a few vectors and saves a delta needs:
    /// the slot table, not the vectors.
    pub fn load_deferred(dir: &Path, params: IndexParams) -> Result<VectorIndex, IndexError> {
        crate::delta::load(dir, params)
    }

    /// Reads what searches need and a deferred load left on disk (links and codes), so later
    /// searches do not pay for it. The f32 vectors of a large save stay on disk: searches read
    /// the rows they rescore.
    pub fn preload(&self) -> Result<(), IndexError> {
        self.flat()?;
        self.codes()?;
        // An index this small is searched by exact scan over the f32 table: read (and verify)
        // it now, so a damaged one fails the load, whose owner rebuilds, not a later search.
        if self.len() < self.params.exact_below {
            self.node_table()?;
        }
        Ok(())
    }

    /// Reads `search.bin` of the saved directory, once: the links, the dump order, and the
    /// codes (with the row checksums of `vectors.bin`), or, in saves before codes existed,
    /// the f32 vectors.
    fn read_search_once(&self) -> Result<(), IndexError> {
        let Some(source) = &self.search_source else {
            return Ok(());
        };
        if self.search_read.get().is_some() {
            return Ok(());
        }
        let file = source.read(self.dim, self.nodes)?;
        let _ = self.flat.set(file.flat);
        if let (Some(graph), Some(order)) = (&self.graph_source, file.dump_order) {
            let _ = graph.dump_order.set(order);
        }
        match file.table {
            SearchTable::Vectors(vectors) => {
                let _ = self.node_vectors.set(vectors);
            }
            SearchTable::Codes(codes, vectors) => {
                let _ = self.codes.set(codes);
                let _ = self.vector_file.set(vectors);
            }
        }
        let _ = self.search_read.set(());
        Ok(())
    }

    /// The graph nodes' vectors, read from the saved directory on first use.
    pub(crate) fn node_table(&self) -> Result<&VectorTable, IndexError> {
        if let Some(table) = self.node_vectors.get() {
            return Ok(table);
        }
        self.read_search_once()?;
        if let Some(table) = self.node_vectors.get() {
            return Ok(table);
        }
        let Some(source) = &self.search_source else {
            return Ok(self.node_vectors.get_or_init(VectorTable::new));
        };
        let table = source.read_vectors(self.dim, self.nodes)?;
        Ok(self.node_vectors.get_or_init(|| table))
    }

    /// The graph nodes' codes: read from the save, or quantised from the node table.
    pub(crate) fn codes(&self) -> Result<&CodeTable, IndexError> {
        if let Some(codes) = self.codes.get() {
            return Ok(codes);
        }
        self.read_search_once()?;
        if let Some(codes) = self.codes.get() {
            return Ok(codes);
        }
        let table = self.node_table()?;
        let codes = CodeTable::quantize(&table[..self.nodes * self.dim], self.dim);
        Ok(self.codes.get_or_init(|| codes))
    }

    /// Exact scores of graph-node `candidates` (scored from their codes), as `(id, score)`:
    /// from the node table when it is in memory, else row by row from the saved vectors. A
    /// row that fails its checksum keeps its code score, with a warning: the search is still
    /// served, the next sync finds the damaged file and rebuilds the graph, and `verify`
    /// reports it.
    fn rescore(&self, q: &[f32], candidates: &[(usize, f32)]) -> Vec<(u64, f32)> {
        let dim = self.dim;
        let table = self.node_vectors.get();
        let file = self.vector_file.get();
        let mut row = vec![0.0f32; if table.is_none() { dim } else { 0 }];
        candidates
            .iter()
            .map(|&(slot, approx)| {
                let score = match (table, file) {
                    (Some(table), _) => dot(q, &table[slot * dim..(slot + 1) * dim]),
                    (None, Some(file)) => match file.read_row(slot, &mut row) {
                        Ok(()) => dot(q, &row),
                        Err(e) => {
                            log::warn!("{e}; scoring slot {slot} by its codes");
                            approx
                        }
                    },
                    (None, None) => approx,
                };
                (self.ids[slot], score)
            })
            .collect()
    }

    fn node_table_mut(&mut self) -> Result<&mut VectorTable, IndexError> {
        self.node_table()?;
        Ok(self
            .node_vectors
            .get_mut()
            .expect("node table read just above"))
    }

    /// The vector of `slot`, from the node table or the pending ones.
    fn vector_in<'a>(&'a self, nodes: &'a VectorTable, slot: usize) -> &'a [f32] {
        let dim = self.dim;
        match slot.checked_sub(self.nodes) {
            None => &nodes[slot * dim..(slot + 1) * dim],
            Some(p) => &self.pending[p * dim..(p + 1) * dim],
        }
    }

    /// The hnsw_rs graph, loaded (and verified) from the saved directory on first use.
    ///
    /// A dump that is missing, damaged or disagrees with the verified vector table is derived
    /// data like any graph: it is logged and the graph is rebuilt from the table, so an index
    /// that loaded for searching can always be updated and saved.
    pub(crate) fn graph(&self) -> Result<&Graph, IndexError> {
        if let Some(graph) = self.graph.get() {
            return Ok(graph);
        }
        let graph = self.restore_graph()?;
        Ok(self.graph.get_or_init(|| graph))
    }

    /// The graph, moved out for mutation; the caller puts it back.
    fn take_graph(&mut self) -> Result<Graph, IndexError> {
        match self.graph.take() {
            Some(graph) => Ok(graph),
            None => self.restore_graph(),
        }
    }

    fn restore_graph(&self) -> Result<Graph, IndexError> {
        let n = self.nodes;
        let table = self.node_table()?;
        if let Some(source) = &self.graph_source {
            match source.load(self.dim, table, n) {
                Ok(graph) => return Ok(graph),
                Err(e) => log::warn!("{e}; rebuilding the graph from the saved vectors"),
            }
        }
        let mut graph = Graph::new(&self.params, n);
        insert_slots(&mut graph, table, self.dim, 0..n, &self.params);
        Ok(graph)
    }

    /// The links searches walk, copied out of the graph after it changed.
    pub(crate) fn flat(&self) -> Result<&FlatGraph, IndexError> {
        self.read_search_once()?;
        if let Some(flat) = self.flat.get() {
            return Ok(flat);
        }
        let flat = self.graph()?.flatten(self.nodes);
        Ok(self.flat.get_or_init(|| flat))
    }

    /// Appends a live slot for `id`; its vector is already in the node or pending table.
    pub(crate) fn push_slot(&mut self, id: u64) -> usize {
        let slot = self.ids.len();
        self.ids.push(id);
        self.live.push(true);
        self.slot_of.insert(id, slot);
        slot
    }

    fn prepare(&self, id: Option<u64>, v: &[f32]) -> Result<Vec<f32>, IndexError> {
        if v.len() != self.dim {
            return Err(IndexError::DimensionMismatch {
                expected: self.dim,
                got: v.len(),
            });
        }
        normalized(v).map_err(|reason| IndexError::InvalidVector {
            id,
            reason: reason.to_string(),
        })
    }

    fn graph_search(
        &self,
        q: &[f32],
        k: usize,
        ef: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let allowed = |slot: usize| {
            slot < self.nodes && self.live[slot] && filter.is_none_or(|f| f(self.ids[slot]))
        };
        let flat = self.flat()?;
        let mut candidates = flat.search(self.codes()?, &QueryCodes::new(q), ef, &allowed);
        candidates.truncate(rescored(k));
        self.top_hits(q, k, filter, &candidates)
    }

    /// The best `k` of code-ranked node `candidates`, rescored exactly, and the pending slots
    /// passing `filter`, scored exactly: what the walk and the code scan both end with.
    pub(crate) fn top_hits(
        &self,
        q: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
        candidates: &[(usize, f32)],
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let mut hits = self.rescore(q, candidates);
        if self.nodes < self.ids.len() {
            hits.extend(self.scan_slots(q, k, filter, self.nodes..self.ids.len())?);
        }
        // Slot order broke ties among candidates; break them by id like the exact scan does.
        sort_hits(&mut hits);
        hits.truncate(k);
        Ok(hits)
    }

    /// Fraction of live vectors passing `filter`, from an evenly spaced sample of slots.
    fn estimate_pass_fraction(&self, filter: IdFilter<'_>) -> f64 {
        let n = self.ids.len();
        let step = (n / FILTER_SAMPLE).max(1);
        let (mut live, mut pass) = (0usize, 0usize);
        for slot in (0..n).step_by(step) {
            if self.live[slot] {
                live += 1;
                pass += usize::from(filter(self.ids[slot]));
            }
        }
        if live == 0 {
            0.0
        } else {
            pass as f64 / live as f64
        }
    }
}

/// How many of the best code-scored candidates a search for `k` rescores exactly: code scores
/// are within ~1e-3 of the cosine, far less than the gap between the k-th hit and the one
/// `RESCORE_MARGIN` places below it on real embeddings, and every rescored row is a read.
pub(crate) fn rescored(k: usize) -> usize {
    k.saturating_add(RESCORE_MARGIN)
}

/// Candidates rescored beyond `k`.
const RESCORE_MARGIN: usize = 16;

/// Inserts the vectors of `slots` (slot-major rows of `vectors`) into `graph`, in parallel
/// unless a seed asks for a deterministic build.
fn insert_slots(
    graph: &mut Graph,
    vectors: &[f32],
    dim: usize,
    slots: std::ops::Range<usize>,
    params: &IndexParams,
) {
    let batch: Vec<(&[f32], usize)> = slots
        .map(|slot| (&vectors[slot * dim..(slot + 1) * dim], slot))
        .collect();
    graph.insert_many(&batch, params.seed.is_some());
}
