//! Approximate nearest-neighbour search over L2-normalised embeddings, for rag-index.
//!
//! [`VectorIndex`] wraps an HNSW graph built and persisted by `hnsw_rs` and adds what a
//! long-lived, incrementally updated index needs and `hnsw_rs` lacks: deletes (tombstones
//! applied inside the graph walk, dropped by [`compact`](VectorIndex::compact)), filtered
//! search that still returns `k` hits and stops as early as an unfiltered one (the walk runs
//! over a compact copy of the graph's links, as `hnsw_rs`'s own filtered search expands every
//! queued candidate and was measured 2–6x slower),
//! exact brute force for small indexes and for `--exact`, parameter validation (no
//! `process::exit`, no panic from the public API), nothing printed to stdout, and crash-safe
//! persistence: [`save`](VectorIndex::save) writes a new, fsynced file set closed by a
//! checksummed manifest, and [`load`](VectorIndex::load) refuses a missing, truncated or
//! corrupt one so the owner rebuilds from the vectors it stores. Loading for search reads only
//! the search structures: the links and a one-byte code per dimension of every vector, which is
//! what the graph walk scores with; the walk's candidates are then rescored exactly from their
//! f32 vectors, read row by row (each row checked against its checksum), so a process that only
//! searches never reads the whole f32 table. The hnsw_rs graph, which only inserts need, is read
//! when first needed. A save holds each f32 vector once.
//!
//! Updates cost their size: an index loaded from a save keeps new vectors pending (searched
//! exactly, merged with the graph's hits), and
//! [`save_incremental`](VectorIndex::save_incremental) writes only a delta beside that base —
//! the deletions and the pending vectors — until they pass
//! [`delta_limit`](VectorIndex::delta_limit) and are folded into a new full save.
//! [`load_deferred`](VectorIndex::load_deferred) reads just the slot table, for an update that
//! never searches.
//!
//! Ids are caller-chosen `u64`s. Scores are cosine similarities (dot products of the
//! normalised vectors), best first.
//!
//! # Example
//!
//! ```
//! use rag_vector_index::{IndexParams, VectorIndex};
//!
//! let mut index = VectorIndex::new(3, IndexParams::default())?;
//! index.insert(1, &[1.0, 0.0, 0.0])?;
//! index.insert(2, &[0.0, 1.0, 0.0])?;
//! index.insert(3, &[0.6, 0.8, 0.0])?;
//! index.delete(2);
//!
//! let hits = index.search(&[0.0, 1.0, 0.0], 2, None)?;
//! assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [3, 1]);
//!
//! let odd_only = |id: u64| id % 2 == 1;
//! let hits = index.search(&[0.0, 1.0, 0.0], 1, Some(&odd_only))?;
//! assert_eq!(hits[0].0, 3);
//!
//! let dir = tempfile::tempdir()?;
//! index.save(&dir.path().join("gen-1"))?;
//! let reloaded = VectorIndex::load(&dir.path().join("gen-1"), IndexParams::default())?;
//! assert_eq!(reloaded.search(&[0.0, 1.0, 0.0], 2, None)?, index.search(&[0.0, 1.0, 0.0], 2, None)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Defaults
//!
//! Measured with `benches/hnsw_vs_hnswlib.rs` on 20,000 real all-MiniLM-L6-v2 embeddings
//! (500 held-out queries, recall@10 against the exact scan, CPU time per query on one thread):
//!
//! - `M = 16`, `ef_construction = 200`: recall@10 0.980 already at ef 16; ef_construction 100
//!   builds 2.5x cheaper but gives 0.971 at ef 16 and 0.9956 at ef 64. Building stays a small
//!   fraction of ingestion, which embedding dominates.
//! - `ef_search = 64`: recall@10 0.998 (0.995 at 32, 0.999 at 128) for ~0.15 ms per query
//!   (6,900 queries/s, against hnswlib's 5,000 at recall 0.995 with the same M and
//!   ef_construction).
//! - `exact_below = 2_000`: the graph walk and the exact scan cost the same at ~1,000 vectors
//!   (60 µs); at 2,000 the scan costs 0.16 ms against 0.09 ms, both negligible, so exactness
//!   is kept up to there. (On random vectors the crossover is ~5,000.)
//! - `compact_ratio = 0.25`: 10% tombstones cost nothing measurable, 25% made queries 1.4x
//!   slower than with none, 50% 1.5x (2.4x and 4x slower than the compacted graph); recall
//!   does not suffer. 0.25 rebuilds at most every third of the live set deleted.
//! - Filters: a flat scan over the allowed ids replaces the walk when fewer than ~3,000 live
//!   vectors pass (the two cost the same at 15-20% of 20k allowed).
//! - `delta_ratio = 0.02`: pending vectors are scanned by every search, so 2% of a 111k graph
//!   (2,200 vectors) costs what the exact scan below `exact_below` does (~0.2 ms), and a delta
//!   of that many is ~3.5 MB to rewrite per commit against ~200 MB for a full save.
//! - The walk scores with int8 codes and rescores its best `k + 16` candidates from f32.
//!   Against the same walk over f32 (two alternating runs each): recall@10 0.980-0.982 /
//!   0.993-0.996 / 0.998 / 0.999 at ef 16 / 32 / 64 / 128 for both, and 1.3-1.6x the queries
//!   per second at ef 64 (16,462-19,570 against 11,862-12,455). Rescoring from rows read on
//!   demand (a loaded index) costs ~0.03 ms per query over rows in memory (12,555 against
//!   17,088 queries/s, `RVI_BENCH_ONLY=loaded`).
//!
//! # Crate features
//!
//! None.

mod codes;
mod delta;
mod dist;
mod error;
mod graph;
mod index;
mod params;
mod persist;
mod scan;
mod search_file;
mod table;
mod vector_file;
mod walk;

pub use error::IndexError;
pub use index::{IdFilter, VectorIndex};
pub use params::IndexParams;
