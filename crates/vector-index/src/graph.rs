//! The only module that touches hnsw_rs: it builds, inserts into, dumps and reloads the graph;
//! searches walk a copy of its links (see `walk.rs`).
//!
//! A saved directory keeps hnsw_rs's graph file but not its data file, whose vectors are
//! already in `search.bin`: a reload writes the data file again, from that table and in the
//! order the dump listed the nodes (see [`write_dump_data`]), and removes it once parsed.
//!
//! hnsw_rs prints to stdout, exits the process on a bad `M`, panics when a dump file cannot be
//! created and trusts whatever bytes it reloads. Everything here is called with parameters the
//! caller validated, into directories the caller checked, on files whose checksums were
//! verified; panics that remain possible are caught and turned into errors.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;

use crate::IndexParams;
use crate::dist::DistUnitDot;
use crate::walk::FlatGraph;

/// hnsw_rs clamps the layer count to 16 anyway; with M=16 layer 16 is reached with
/// probability 16^-16, so this is "as many as needed".
const MAX_LAYERS: usize = 16;

/// Basename hnsw_rs writes `<basename>.hnsw.graph` / `.hnsw.data` under.
pub(crate) const DUMP_BASENAME: &str = "graph";

/// hnsw_rs 0.3's data file: this magic and the dimension (a native `usize`), then per node in
/// dump order the magic, the node's id (u64), the vector's byte length (u64) and its floats,
/// all native-endian.
const DATA_MAGIC: u32 = 0xa67f_0000;

/// HNSW graph over slot numbers: hnsw_rs's `DataId` is our slot index.
///
/// The lifetime is `'static` because a reloaded graph borrows its `HnswIo`; see [`Graph::load`].
pub(crate) struct Graph {
    hnsw: StaticHnsw,
}

type StaticHnsw = Hnsw<'static, f32, DistUnitDot>;

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic without message".to_string()
    }
}

impl Graph {
    /// `params` must have passed [`IndexParams::validate`].
    pub(crate) fn new(params: &IndexParams, capacity: usize) -> Graph {
        debug_assert!(params.validate().is_ok());
        let hnsw = Hnsw::new(
            params.max_connections,
            capacity.max(1),
            MAX_LAYERS,
            params.ef_construction,
            DistUnitDot,
        );
        Graph { hnsw }
    }

    /// Number of nodes, tombstoned ones included.
    pub(crate) fn len(&self) -> usize {
        self.hnsw.get_nb_point()
    }

    /// Bulk insert. Parallel unless `deterministic`: hnsw_rs's parallel insert races on
    /// neighbour lists, so only the serial order reproduces a graph exactly.
    pub(crate) fn insert_many(&mut self, items: &[(&[f32], usize)], deterministic: bool) {
        if deterministic || items.len() < 64 {
            for &(v, slot) in items {
                self.hnsw.insert_slice((v, slot));
            }
        } else {
            self.hnsw.set_searching_mode(false);
            self.hnsw.parallel_insert_slice(&items.to_vec());
            self.hnsw.set_searching_mode(true);
        }
    }

    /// Dumps into `dir`, which the caller created empty; returns the basename used.
    pub(crate) fn dump(&self, dir: &Path) -> Result<String, String> {
        match catch_unwind(AssertUnwindSafe(|| self.hnsw.file_dump(dir, DUMP_BASENAME))) {
            Ok(Ok(name)) => Ok(name),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(p) => Err(panic_message(p)),
        }
    }

    /// Reloads a dump whose files the caller has verified against their checksums.
    ///
    /// hnsw_rs ties the reloaded graph's lifetime to the `HnswIo` (it may hand out mmapped
    /// data). We never mmap, so the loader holds nothing the graph uses, but the borrow remains;
    /// the loader (a path and a name, ~100 bytes) is therefore leaked once per load.
    pub(crate) fn load(dir: &Path, basename: &str) -> Result<Graph, String> {
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
        fn load_static(io: &'static mut HnswIo) -> Result<StaticHnsw, String> {
            io.load_hnsw::<f32, DistUnitDot>()
                .map_err(|e| format!("{e:#}"))
        }
        // `let io = io` moves the reference in (a reborrow would make the closure FnMut).
        let loaded = catch_unwind(AssertUnwindSafe(move || {
            let io = io;
            load_static(io)
        }));
        let mut hnsw = match loaded {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => return Err(e),
            Err(p) => return Err(panic_message(p)),
        };
        // A reload turns on candidate extension; a fresh graph has it off. Keep inserts after a
        // reload identical to inserts into the graph that was saved.
        hnsw.set_extend_candidates(false);
        hnsw.set_searching_mode(true);
        Ok(Graph { hnsw })
    }

    /// The nodes' slots in the order hnsw_rs's dump writes them (layer by layer, by rank in
    /// the layer), which is the order its iterator visits them in: what
    /// [`write_dump_data`] needs to recreate the data file.
    pub(crate) fn dump_order(&self) -> Vec<u32> {
        let mut order = Vec::with_capacity(self.len());
        self.for_each_point(|slot, _| order.push(slot as u32));
        order
    }

    /// Every node as `(slot, vector)`.
    pub(crate) fn for_each_point(&self, mut f: impl FnMut(usize, &[f32])) {
        // hnsw_rs's point iterator unwraps the entry point, which an empty graph lacks.
        if self.len() == 0 {
            return;
        }
        for p in self.hnsw.get_point_indexation() {
            f(p.get_origin_id(), p.get_v());
        }
    }

    /// A compact copy of every node's links, for [`FlatGraph::search`].
    pub(crate) fn flatten(&self, slots: usize) -> FlatGraph {
        if self.len() == 0 {
            return FlatGraph::new(slots, std::iter::empty());
        }
        let nodes = self.hnsw.get_point_indexation().into_iter().map(|p| {
            let layers = p
                .get_neighborhood_id()
                .into_iter()
                .map(|l| l.into_iter().map(|n| n.d_id).collect())
                .collect();
            (p.get_origin_id(), p.get_point_id().0 as usize, layers)
        });
        FlatGraph::new(slots, nodes)
    }

    /// `(M, ef_construction)` the graph was built with.
    pub(crate) fn build_params(&self) -> (usize, usize) {
        (
            self.hnsw.get_max_nb_connection() as usize,
            self.hnsw.get_ef_construction(),
        )
    }
}

/// Writes the hnsw_rs data file `path` (which must not exist) for nodes listed in `order`,
/// taking slot `s`'s vector from `vectors[s * dim..]`. hnsw_rs reads it back in step with the
/// graph file and fails (caught by [`Graph::load`]) if an id is out of order; the caller then
/// compares every reloaded vector with the table anyway.
pub(crate) fn write_dump_data(
    path: &Path,
    dim: usize,
    order: &[u32],
    vectors: &[f32],
) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(&DATA_MAGIC.to_ne_bytes())?;
    out.write_all(&dim.to_ne_bytes())?;
    let row_bytes = (dim * 4) as u64;
    for &slot in order {
        let start = slot as usize * dim;
        let row = vectors.get(start..start + dim).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("dump order names slot {slot}, beyond the vector table"),
            )
        })?;
        out.write_all(&DATA_MAGIC.to_ne_bytes())?;
        out.write_all(&u64::from(slot).to_ne_bytes())?;
        out.write_all(&row_bytes.to_ne_bytes())?;
        out.write_all(bytemuck::cast_slice(row))?;
    }
    out.flush()
}
