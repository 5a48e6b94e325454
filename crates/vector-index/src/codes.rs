//! The walk table: every graph node's vector as one byte per dimension.
//!
//! A graph walk only has to rank neighbours well enough to find the right region; the exact
//! f32 scores are computed afterwards for the few candidates it returns. Codes are a quarter of
//! the f32 table, so an index loaded for searching reads and keeps 384 bytes per vector instead
//! of 1,536 (at a million vectors that is most of what a `query` process reads), and the walk
//! touches a quarter of the memory.
//!
//! Each vector is quantised symmetrically with its own scale (its largest magnitude maps to
//! 127), so the code dot product times both scales approximates the cosine to within about
//! 1e-3 on normalised 384-dimensional embeddings, well below the gaps the walk decides on.

use pulp::Simd;
use rayon::prelude::*;

/// The largest code magnitude: symmetric, so negation is exact.
const CODE_MAX: f32 = 127.0;

/// Slot-major codes and one scale per slot.
#[derive(Default)]
pub(crate) struct CodeTable {
    dim: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl CodeTable {
    /// Quantises every `dim`-float row of `vectors` (on all cores: a million rows take ~0.3 s
    /// on one).
    pub(crate) fn quantize(vectors: &[f32], dim: usize) -> CodeTable {
        let rows = vectors.len() / dim.max(1);
        let mut codes = vec![0i8; rows * dim];
        let scales = vectors
            .par_chunks_exact(dim.max(1))
            .zip(codes.par_chunks_exact_mut(dim.max(1)))
            .map(|(row, out)| quantize_row(row, out))
            .collect();
        CodeTable { dim, codes, scales }
    }

    /// A table read from disk; `None` unless `codes` holds exactly `dim` codes per scale.
    pub(crate) fn from_parts(dim: usize, codes: Vec<i8>, scales: Vec<f32>) -> Option<CodeTable> {
        (codes.len() == scales.len().checked_mul(dim)?).then_some(CodeTable { dim, codes, scales })
    }

    pub(crate) fn codes(&self) -> &[i8] {
        &self.codes
    }

    pub(crate) fn scales(&self) -> &[f32] {
        &self.scales
    }

    pub(crate) fn row(&self, slot: usize) -> &[i8] {
        &self.codes[slot * self.dim..(slot + 1) * self.dim]
    }

    /// Approximate dot product of `slot` with a query quantised by [`QueryCodes::new`]. Takes
    /// the caller's SIMD token only to be called from inside its dispatch, where the integer
    /// loop vectorises.
    #[inline(always)]
    pub(crate) fn score<S: Simd>(&self, _simd: S, query: &QueryCodes, slot: usize) -> f32 {
        self.scales[slot] * query.scale * code_dot(&query.codes, self.row(slot)) as f32
    }
}

/// A query in the walk table's code space.
pub(crate) struct QueryCodes {
    codes: Vec<i8>,
    scale: f32,
}

impl QueryCodes {
    pub(crate) fn new(query: &[f32]) -> QueryCodes {
        let mut codes = vec![0i8; query.len()];
        let scale = quantize_row(query, &mut codes);
        QueryCodes { codes, scale }
    }
}

/// Writes the codes of `row` into `out` and returns its scale (0 for an all-zero row).
fn quantize_row(row: &[f32], out: &mut [i8]) -> f32 {
    let max = row.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max > 0.0 && max.is_finite()) {
        out.fill(0);
        return 0.0;
    }
    let inverse = CODE_MAX / max;
    for (code, &x) in out.iter_mut().zip(row) {
        // Through i32: the rounded value is within ±127 already, and this cast vectorises
        // where a saturating `as i8` does not.
        *code = (x * inverse).round().clamp(-CODE_MAX, CODE_MAX) as i32 as i8;
    }
    max / CODE_MAX
}

/// Exact integer dot product of two code rows. Plain Rust: inlined into the walk's
/// target-feature context it compiles to the CPU's widening multiply-adds.
#[inline(always)]
fn code_dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    #[test]
    fn code_scores_track_cosines() {
        let dim = 384;
        let rows: Vec<f32> = (0..200).flat_map(|s| unit(s, dim)).collect();
        let table = CodeTable::quantize(&rows, dim);
        let q = unit(999, dim);
        let qc = QueryCodes::new(&q);
        let simd = pulp::Scalar::new();
        for slot in 0..table.scales().len() {
            let exact: f32 = q
                .iter()
                .zip(&rows[slot * dim..(slot + 1) * dim])
                .map(|(a, b)| a * b)
                .sum();
            let approx = table.score(simd, &qc, slot);
            assert!(
                (exact - approx).abs() < 2e-3,
                "slot {slot}: {exact} vs {approx}"
            );
        }
    }

    #[test]
    fn zero_rows_get_zero_codes_and_extremes_map_to_127() {
        let table = CodeTable::quantize(&[0.0, 0.0], 2);
        assert_eq!(table.codes(), &[0, 0]);
        assert_eq!(table.scales(), &[0.0]);
        let table = CodeTable::quantize(&[0.5, -0.25], 2);
        assert_eq!(table.codes(), &[127, -64]);
        assert!(CodeTable::from_parts(2, vec![0; 3], vec![1.0, 1.0]).is_none());
    }
}
