//! The scans. The exact one: top `k` by dot product over a range of slots, graph nodes and
//! pending vectors each read from their own table, ties broken by id so results do not depend
//! on slot order. The code scan, for searches that skip or complete the walk: graph nodes
//! ranked by their codes and the best few rescored exactly, so it never needs the whole f32
//! table in memory.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use pulp::{Simd, WithSimd};

use crate::codes::{CodeTable, QueryCodes};
use crate::dist::{arch, dot_with};
use crate::index::rescored;
use crate::table::VectorTable;
use crate::{IdFilter, IndexError, VectorIndex};

/// A scored candidate ordered so that a max-heap's top is the worst one kept.
#[derive(Clone, Copy)]
struct Worst {
    score: f32,
    id: u64,
}

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        // Lower score is worse; among equal scores the larger id is worse, which makes
        // results independent of slot order (and so of insertion history).
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.id.cmp(&other.id))
    }
}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}

/// The best `k` candidates offered so far, in a heap whose top is the worst kept.
struct TopK(BinaryHeap<Worst>, usize);

impl TopK {
    fn new(k: usize) -> TopK {
        TopK(BinaryHeap::with_capacity(k + 1), k)
    }

    #[inline(always)]
    fn offer(&mut self, cand: Worst) {
        if self.0.len() < self.1 {
            self.0.push(cand);
        } else if let Some(mut worst) = self.0.peek_mut()
            && cand < *worst
        {
            *worst = cand;
        }
    }
}

/// Best first; equal scores by ascending id.
pub(crate) fn sort_hits(hits: &mut [(u64, f32)]) {
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

impl VectorIndex {
    /// Exact top `k` among every live slot.
    pub(crate) fn scan(
        &self,
        q: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.scan_slots(q, k, filter, 0..self.ids.len())
    }

    /// Exact top `k` among `slots`.
    pub(crate) fn scan_slots(
        &self,
        q: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
        slots: std::ops::Range<usize>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        struct Scan<'a> {
            index: &'a VectorIndex,
            nodes: &'a VectorTable,
            q: &'a [f32],
            k: usize,
            filter: Option<IdFilter<'a>>,
            slots: std::ops::Range<usize>,
        }
        impl WithSimd for Scan<'_> {
            type Output = Vec<(u64, f32)>;
            // Inlined into pulp's target-feature function, so `dot_with` compiles to AVX2/AVX-512.
            #[inline(always)]
            fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
                self.index
                    .scan_with(simd, self.nodes, self.q, self.k, self.filter, self.slots)
            }
        }
        let nodes = if slots.start < self.nodes {
            self.node_table()?
        } else {
            &VectorTable::new()
        };
        Ok(arch().dispatch(Scan {
            index: self,
            nodes,
            q,
            k,
            filter,
            slots,
        }))
    }

    /// Top `k` among every live slot passing `filter`: graph nodes by their codes, the best
    /// [`rescored`]`(k)` of them rescored exactly, and pending slots scored exactly.
    pub(crate) fn scan_codes(
        &self,
        q: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        struct CodeScan<'a> {
            index: &'a VectorIndex,
            codes: &'a CodeTable,
            query: &'a QueryCodes,
            keep: usize,
            filter: Option<IdFilter<'a>>,
        }
        impl WithSimd for CodeScan<'_> {
            type Output = Vec<(usize, f32)>;
            #[inline(always)]
            fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
                let CodeScan {
                    index,
                    codes,
                    query,
                    keep,
                    filter,
                } = self;
                let mut best = TopK::new(keep);
                for slot in 0..index.nodes {
                    if !index.live[slot] || !filter.is_none_or(|f| f(index.ids[slot])) {
                        continue;
                    }
                    let cand = Worst {
                        score: codes.score(simd, query, slot),
                        id: slot as u64,
                    };
                    best.offer(cand);
                }
                best.0
                    .into_iter()
                    .map(|c| (c.id as usize, c.score))
                    .collect()
            }
        }
        let candidates = if self.nodes > 0 {
            arch().dispatch(CodeScan {
                index: self,
                codes: self.codes()?,
                query: &QueryCodes::new(q),
                keep: rescored(k),
                filter,
            })
        } else {
            Vec::new()
        };
        self.top_hits(q, k, filter, &candidates)
    }

    #[inline(always)]
    fn scan_with<S: Simd>(
        &self,
        simd: S,
        nodes: &VectorTable,
        q: &[f32],
        k: usize,
        filter: Option<IdFilter<'_>>,
        slots: std::ops::Range<usize>,
    ) -> Vec<(u64, f32)> {
        let mut best = TopK::new(k);
        let dim = self.dim;
        let mut consider = |id: u64, v: &[f32]| {
            if !filter.is_none_or(|f| f(id)) {
                return;
            }
            let cand = Worst {
                score: dot_with(simd, q, v),
                id,
            };
            best.offer(cand);
        };
        // Node slots come first, then pending ones, each from its own table.
        let split = slots.end.min(self.nodes).max(slots.start);
        if slots.start < split {
            let rows = nodes[slots.start * dim..split * dim].chunks_exact(dim);
            for (slot, v) in (slots.start..split).zip(rows) {
                if self.live[slot] {
                    consider(self.ids[slot], v);
                }
            }
        }
        if split < slots.end {
            let rows = self.pending[(split - self.nodes) * dim..(slots.end - self.nodes) * dim]
                .chunks_exact(dim);
            for (slot, v) in (split..slots.end).zip(rows) {
                if self.live[slot] {
                    consider(self.ids[slot], v);
                }
            }
        }
        let mut hits: Vec<(u64, f32)> = best.0.into_iter().map(|c| (c.id, c.score)).collect();
        sort_hits(&mut hits);
        hits
    }
}
