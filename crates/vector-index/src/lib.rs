//! Approximate nearest-neighbour search over L2-normalised embeddings, for rag-index.
//!
//! [`VectorIndex`] wraps an HNSW graph from `hnsw_rs` and adds what a long-lived, incrementally
//! updated index needs and `hnsw_rs` lacks: deletes (tombstones applied inside the graph walk,
//! dropped by [`compact`](VectorIndex::compact)), filtered search that still returns `k` hits,
//! exact brute force for small indexes and for `--exact`, parameter validation (no
//! `process::exit`, no panic from the public API), nothing printed to stdout, and crash-safe
//! persistence: [`save`](VectorIndex::save) writes a new, fsynced file set closed by a
//! checksummed manifest, and [`load`](VectorIndex::load) refuses a missing, truncated or
//! corrupt one so the owner rebuilds from the vectors it stores.
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
//! `M = 16`, `ef_construction = 200`, `ef_search = 64`, exact search below 10,000 live vectors,
//! compaction past 25% tombstones; see [`IndexParams`] and the benchmark
//! `benches/hnsw_vs_hnswlib.rs` for the measurements behind them.
//!
//! # Crate features
//!
//! None.

mod dist;
mod error;
mod graph;
mod index;
mod params;
mod persist;

pub use dist::DistUnitDot;
pub use error::IndexError;
pub use index::{IdFilter, VectorIndex};
pub use params::IndexParams;
