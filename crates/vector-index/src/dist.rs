//! Dot product and the clamped cosine distance handed to hnsw_rs.

use std::sync::OnceLock;

use anndists::dist::distances::Distance;
use pulp::{Arch, Simd, WithSimd};

/// The instruction set every score in the process is computed with, detected once. All paths
/// (graph walk, flat scan, hnsw_rs's distance, normalisation) run [`dot_with`] under this same
/// choice, so they compute bit-identical scores.
pub(crate) fn arch() -> Arch {
    static ARCH: OnceLock<Arch> = OnceLock::new();
    *ARCH.get_or_init(Arch::new)
}

/// Dot product of two equally long slices (extra elements of the longer one are ignored).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    struct Dot<'a>(&'a [f32], &'a [f32]);
    impl WithSimd for Dot<'_> {
        type Output = f32;
        #[inline(always)]
        fn with_simd<S: Simd>(self, simd: S) -> f32 {
            dot_with(simd, self.0, self.1)
        }
    }
    arch().dispatch(Dot(a, b))
}

/// Independent vector accumulators: enough to hide the FMA latency, and a fixed summation order.
const ACCS: usize = 4;

/// The one dot-product kernel. Callers already inside `arch().dispatch` (the graph walk, the
/// flat scan) call it directly so it inlines into their AVX2/AVX-512 code; [`dot`] is the
/// same kernel behind its own dispatch.
#[inline(always)]
pub(crate) fn dot_with<S: Simd>(simd: S, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    if S::F32_LANES < 4 {
        // No usable SIMD detected: the portable loop, which baseline SSE2 still vectorises.
        return dot_portable(a, b);
    }
    let (va, ta) = S::as_simd_f32s(a);
    let (vb, tb) = S::as_simd_f32s(b);
    let mut acc = [simd.splat_f32s(0.0); ACCS];
    let (ca, cb) = (va.chunks_exact(ACCS), vb.chunks_exact(ACCS));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..ACCS {
            acc[i] = simd.mul_add_e_f32s(x[i], y[i], acc[i]);
        }
    }
    for (i, (x, y)) in ra.iter().zip(rb).enumerate() {
        acc[i] = simd.mul_add_e_f32s(*x, *y, acc[i]);
    }
    if !ta.is_empty() {
        // Zero-filled partial vectors contribute nothing past the slice's end.
        let (x, y) = (simd.partial_load_f32s(ta), simd.partial_load_f32s(tb));
        acc[ACCS - 1] = simd.mul_add_e_f32s(x, y, acc[ACCS - 1]);
    }
    let sum = simd.add_f32s(simd.add_f32s(acc[0], acc[1]), simd.add_f32s(acc[2], acc[3]));
    simd.reduce_sum_f32s(sum)
}

/// Lanes of the portable fallback: several SIMD registers' worth for the optimiser.
const LANES: usize = 16;

#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let ca = a.chunks_exact(LANES);
    let cb = b.chunks_exact(LANES);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    // Pairwise reduction keeps the rounding error small and the order fixed.
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            acc[i] += acc[i + width];
        }
        width /= 2;
    }
    acc[0] + tail
}

/// Cosine distance for L2-normalised vectors, `max(0, 1 - dot)`.
///
/// hnsw_rs's scalar `DistDot` asserts `1 - dot >= 0`, which normalised duplicates violate by
/// rounding (dot slightly above 1); clamping removes that panic. Inputs are validated finite
/// before they reach the graph, so the result is never NaN (hnsw_rs panics on NaN distances).
#[derive(Debug, Default, Clone, Copy)]
pub struct DistUnitDot;

impl Distance<f32> for DistUnitDot {
    #[inline]
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        let d = 1.0 - dot(va, vb);
        if d > 0.0 { d } else { 0.0 }
    }
}

/// Checks that `v` is finite and non-zero and returns it L2-normalised.
///
/// Vectors already within 1e-5 of unit norm are kept bit for bit, so callers that normalise
/// (the embedder does) get back exactly the dot products of their own vectors.
pub(crate) fn normalized(v: &[f32]) -> Result<Vec<f32>, &'static str> {
    if v.iter().any(|x| !x.is_finite()) {
        return Err("vector contains NaN or infinity");
    }
    let norm2 = dot(v, v);
    if !norm2.is_finite() {
        return Err("vector norm overflows f32");
    }
    if norm2 <= f32::MIN_POSITIVE {
        return Err("vector is zero");
    }
    if (norm2 - 1.0).abs() <= 1e-5 {
        return Ok(v.to_vec());
    }
    let inv = 1.0 / norm2.sqrt();
    Ok(v.iter().map(|x| x * inv).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive() {
        for n in [0usize, 1, 5, 7, 8, 9, 16, 17, 31, 33, 384, 385, 1000] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot(&a, &b) as f64 - naive).abs() < 1e-4, "n={n}");
            assert!((dot_portable(&a, &b) as f64 - naive).abs() < 1e-4, "n={n}");
        }
    }

    #[test]
    fn distance_never_negative_on_duplicates() {
        let v = normalized(&[0.1; 384]).unwrap();
        assert!(DistUnitDot.eval(&v, &v) >= 0.0);
    }

    #[test]
    fn rejects_bad_vectors() {
        assert!(normalized(&[0.0; 4]).is_err());
        assert!(normalized(&[f32::NAN, 1.0]).is_err());
        assert!(normalized(&[f32::INFINITY, 1.0]).is_err());
        let v = normalized(&[3.0, 4.0]).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
    }
}
