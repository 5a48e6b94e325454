//! Index parameters and their validation.

use crate::IndexError;

/// Tuning knobs of a [`VectorIndex`](crate::VectorIndex). The defaults are measured on
/// all-MiniLM-L6-v2 embeddings; the crate docs' "Defaults" section gives the numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexParams {
    /// HNSW `M`: links per node on the upper layers (layer 0 keeps `2 * M`).
    pub max_connections: usize,
    /// Candidate list width while inserting; higher builds a better graph, slower.
    pub ef_construction: usize,
    /// Candidate list width while searching (raised to `k` when `k` is larger).
    pub ef_search: usize,
    /// Below this many live vectors `search` scans all vectors exactly instead of walking the graph.
    pub exact_below: usize,
    /// Fraction of tombstones among all graph nodes above which
    /// [`needs_compaction`](crate::VectorIndex::needs_compaction) says the graph should be rebuilt.
    pub compact_ratio: f32,
    /// Pending vectors a [`save_incremental`](crate::VectorIndex::save_incremental) may write
    /// as a delta, as a fraction of the graph's nodes (at least `exact_below`); beyond that
    /// they are folded into the graph and the whole index is saved.
    pub delta_ratio: f32,
    /// `Some(_)` makes builds deterministic: points are then inserted one at a time in a fixed
    /// order. hnsw_rs seeds its level generator with a constant of its own, so the value itself
    /// cannot change the graph; `None` inserts in parallel (faster, not reproducible).
    pub seed: Option<u64>,
}

impl Default for IndexParams {
    fn default() -> Self {
        IndexParams {
            max_connections: 16,
            ef_construction: 200,
            ef_search: 64,
            exact_below: 2_000,
            compact_ratio: 0.25,
            delta_ratio: 0.02,
            seed: None,
        }
    }
}

/// hnsw_rs stores `M` as a `u8` in its dump and calls `process::exit` above 256.
const MAX_CONNECTIONS: usize = 128;
/// Generous upper bounds that still catch unit mistakes (e.g. passing a byte count).
const MAX_EF: usize = 100_000;
/// Largest dimension accepted; far above any sentence embedding.
pub(crate) const MAX_DIM: usize = 65_536;

impl IndexParams {
    /// Returns an error naming the first parameter out of range.
    pub fn validate(&self) -> Result<(), IndexError> {
        let bad = |msg: String| Err(IndexError::InvalidParams(msg));
        if !(2..=MAX_CONNECTIONS).contains(&self.max_connections) {
            return bad(format!(
                "max_connections must be in 2..={MAX_CONNECTIONS}, got {}",
                self.max_connections
            ));
        }
        if !(1..=MAX_EF).contains(&self.ef_construction) {
            return bad(format!(
                "ef_construction must be in 1..={MAX_EF}, got {}",
                self.ef_construction
            ));
        }
        if !(1..=MAX_EF).contains(&self.ef_search) {
            return bad(format!(
                "ef_search must be in 1..={MAX_EF}, got {}",
                self.ef_search
            ));
        }
        if !(self.compact_ratio > 0.0 && self.compact_ratio <= 1.0) {
            return bad(format!(
                "compact_ratio must be in (0, 1], got {}",
                self.compact_ratio
            ));
        }
        if !(self.delta_ratio >= 0.0 && self.delta_ratio <= 1.0) {
            return bad(format!(
                "delta_ratio must be in [0, 1], got {}",
                self.delta_ratio
            ));
        }
        Ok(())
    }
}

pub(crate) fn validate_dim(dim: usize) -> Result<(), IndexError> {
    if (1..=MAX_DIM).contains(&dim) {
        Ok(())
    } else {
        Err(IndexError::InvalidParams(format!(
            "dim must be in 1..={MAX_DIM}, got {dim}"
        )))
    }
}
