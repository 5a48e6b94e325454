//! Fusing the dense and lexical rankings into one.

use std::collections::HashMap;
use std::str::FromStr;

use serde::Serialize;

use crate::chunk::{SignalRank, Signals};
use crate::{Error, Result};

/// How hybrid search combines the two ranked lists. Both rules are fixed and parameter-light
/// on purpose: weights fitted to a small question set would fit its questions, not the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "rule")]
pub enum Fusion {
    /// Reciprocal rank fusion: a chunk scores `Σ 1 / (k + rank)` over the lists holding it. Uses
    /// ranks only, so the incomparable scales of cosine and BM25 never matter.
    Rrf {
        /// The damping constant (60 in the original paper and in most systems).
        k: u32,
    },
    /// `dense_weight · d + (1 − dense_weight) · l`, each list's scores min-max normalised to
    /// [0, 1] and a missing signal counting 0.
    Convex {
        /// Weight of the dense signal, in [0, 1].
        dense_weight: f32,
    },
}

impl Fusion {
    /// RRF with k = 60.
    pub const RRF: Fusion = Fusion::Rrf { k: 60 };
    /// Equal weights of min-max normalised scores.
    pub const CONVEX: Fusion = Fusion::Convex { dense_weight: 0.5 };
}

impl Default for Fusion {
    /// The convex 0.5 / 0.5 rule: on the Traefik dev set it beat RRF at rank 1 (R@1 0.750 vs
    /// 0.675, MRR@10 0.823 vs 0.773, equal R@5/R@10). RRF's k = 60 flattens the top of each list
    /// (rank 1 alone scores 1/61, rank 3 in both lists 2/63), so a chunk BM25 ranks far ahead for
    /// an exact term loses to ones both signals rate middling; normalised scores keep that margin.
    fn default() -> Self {
        Fusion::CONVEX
    }
}

impl FromStr for Fusion {
    type Err = Error;

    /// `rrf` (k = 60) or `convex` (0.5 / 0.5).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "rrf" => Ok(Fusion::RRF),
            "convex" => Ok(Fusion::CONVEX),
            other => Err(Error::InvalidRequest {
                reason: format!("unknown fusion rule {other:?} (rrf or convex)"),
            }),
        }
    }
}

/// Fuses two ranked lists into one, best first, each point once (a point listed twice in one list
/// counts at its best rank). Ties break by the better of the two ranks, then by point, so equal
/// inputs always give the same order.
pub(crate) fn fuse(
    dense: &[(u64, f32)],
    lexical: &[(u64, f32)],
    fusion: Fusion,
) -> Vec<(u64, f32, Signals)> {
    let mut signals: HashMap<u64, Signals> = HashMap::new();
    for (i, &(point, score)) in dense.iter().enumerate() {
        let entry = signals.entry(point).or_default();
        entry.dense.get_or_insert(SignalRank { rank: i + 1, score });
    }
    for (i, &(point, score)) in lexical.iter().enumerate() {
        let entry = signals.entry(point).or_default();
        entry
            .lexical
            .get_or_insert(SignalRank { rank: i + 1, score });
    }
    let range = |list: &[(u64, f32)]| {
        list.iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &(_, s)| {
                (lo.min(s), hi.max(s))
            })
    };
    let (dense_range, lexical_range) = (range(dense), range(lexical));
    let normalised = |signal: Option<SignalRank>, (lo, hi): (f32, f32)| {
        signal.map_or(0.0, |s| {
            if hi > lo {
                (s.score - lo) / (hi - lo)
            } else {
                1.0
            }
        })
    };
    let mut fused: Vec<(u64, f32, Signals)> = signals
        .into_iter()
        .map(|(point, s)| {
            let score = match fusion {
                Fusion::Rrf { k } => [s.dense, s.lexical]
                    .iter()
                    .flatten()
                    .map(|r| 1.0 / (k as f32 + r.rank as f32))
                    .sum(),
                Fusion::Convex { dense_weight } => {
                    dense_weight * normalised(s.dense, dense_range)
                        + (1.0 - dense_weight) * normalised(s.lexical, lexical_range)
                }
            };
            (point, score, s)
        })
        .collect();
    let best_rank = |s: &Signals| {
        [s.dense, s.lexical]
            .iter()
            .flatten()
            .map(|r| r.rank)
            .min()
            .unwrap_or(usize::MAX)
    };
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| best_rank(&a.2).cmp(&best_rank(&b.2)))
            .then_with(|| a.0.cmp(&b.0))
    });
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_rewards_agreement_and_lists_each_point_once() {
        let dense = [(1, 0.9), (2, 0.8), (3, 0.7)];
        let lexical = [(3, 12.0), (4, 9.0), (3, 8.0)];
        let fused = fuse(&dense, &lexical, Fusion::RRF);
        let points: Vec<u64> = fused.iter().map(|f| f.0).collect();
        assert_eq!(points, [3, 1, 2, 4]);
        let three = fused[0].2;
        assert_eq!(three.dense.unwrap().rank, 3);
        assert_eq!(three.lexical.unwrap().rank, 1);
        assert!((fused[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-6);
        // Dense rank 2 and lexical rank 2 tie on score and best rank: the point decides.
        assert_eq!(fused[2].1, fused[3].1);
    }

    #[test]
    fn convex_normalises_each_list() {
        let dense = [(1, 0.9), (2, 0.5)];
        let lexical = [(2, 30.0), (3, 10.0)];
        let fused = fuse(&dense, &lexical, Fusion::CONVEX);
        let by_point: HashMap<u64, f32> = fused.iter().map(|f| (f.0, f.1)).collect();
        assert_eq!(by_point[&1], 0.5);
        assert_eq!(by_point[&2], 0.5);
        assert_eq!(by_point[&3], 0.0);
        assert!(fuse(&[], &[], Fusion::CONVEX).is_empty());
        let alone = fuse(&[(7, 0.3)], &[], Fusion::CONVEX);
        assert_eq!(alone[0].1, 0.5);
    }
}
