//! The int8 kernels of the linear layers: symmetric per-channel weight quantisation (once, at
//! load), per-row (per-token) activation quantisation to u8 codes over the row's own
//! `[min, max]`, `acc[r][n] = Σ_k a[r][k] · w[n][k]` over the codes with i32 accumulation, and
//! `out = acc · (row_scale · col_scale) + (row_min · col_scale) · Σ_k w[n][k]`.
//!
//! Activations use their range rather than a symmetric one because a row is rarely centred on
//! zero (GELU outputs lie in [-0.17, ∞)): on the reference texts plus 300 Traefik paragraphs the
//! symmetric variant gave min cosine 0.978 / mean 0.9969 to f32, the range variant is what
//! `tests/int8.rs` bounds. It costs nothing in the kernel, whose unsigned operand is the
//! activation anyway; the offset moves to the epilogue.
//!
//! Two implementations give bit-identical results: quantisation is the same plain Rust code
//! (IEEE operations only, so compiling it for AVX2 changes nothing), the integer sums are exact
//! (no saturation can occur, see below; |acc| ≤ K · 255 · 127 stays inside i32 for any BERT
//! width), and the f32 epilogue is the same multiplications and addition in the same order.
//! - AVX2 (`vpmaddubsw` + `vpmaddwd`), chosen at run time through `pulp`, which checks the CPU
//!   features once and compiles the kernel body with them enabled (no `unsafe` here).
//! - A portable scalar loop for every other CPU.
//!
//! `vpmaddubsw` multiplies *unsigned* by signed bytes and adds adjacent pairs with i16
//! saturation. Activation codes are `u8` in [0, 255]. For the pair sums `a0·w0 + a1·w1` to stay
//! below 32,767, each channel's weight scale is chosen so that every adjacent pair of weight
//! codes has `|w0| + |w1| ≤ 128` (255 · 128 = 32,640). Weights are
//! typically far below their channel's maximum, so this costs little precision against
//! `max |w| = 127` — while the alternative that keeps both operands at full range (`vpsignb`
//! moving the activation's sign onto the weight) measured 1.6× slower on this Zen 3 CPU, where
//! `vpsignb` competes with the multiplies for execution ports.
//!
//! - AVX-512 VNNI (`vpdpbusd`, [`vnni`]) where the CPU has it, before AVX2: one instruction for
//!   what AVX2 does in three. Exact sums too, so the same bits.

use pulp::bytemuck::cast;
#[cfg(target_arch = "x86_64")]
use pulp::x86::V3;

#[cfg(target_arch = "x86_64")]
mod vnni;

/// Output channels per 256-bit vector of i32 accumulators.
const LANES: usize = 8;
/// Column vectors per panel; a panel is the unit of weight reuse across rows.
const VECS: usize = 2;
/// Output channels per packed panel.
const PANEL: usize = LANES * VECS;
/// Rows per micro-tile: 4 rows × 2 vectors = 8 accumulators, which with the weights, the
/// broadcast activations and the constant fits AVX2's 16 registers.
const TILE_ROWS: usize = 4;
/// The largest weight code magnitude (symmetric, so -128 is left out).
const QMAX: f32 = 127.0;
/// The largest activation code.
const AMAX: f32 = 255.0;
/// 2^23: added to a float in `[0, 2^23)`, leaves its value rounded to an integer (ties to even)
/// in the low bits of the mantissa.
const ROUNDING_BIAS: f32 = 8_388_608.0;
/// Bound on `|w0| + |w1|` for adjacent weight codes; see the module documentation.
const PAIR_MAX: f32 = 127.0;

/// A weight matrix (`n` outputs × `k` inputs) quantised and packed for the kernel.
///
/// Panel `p` holds outputs `p·16 .. p·16+16`; within it, group `g` (inputs `4g .. 4g+4`) is two
/// 32-byte vectors whose byte `4j + i` is `w[p·16 + 8v + j][4g + i]`. So one broadcast of four
/// activation bytes meets eight outputs' four matching weights. Missing outputs and inputs are
/// zero, which adds nothing to a sum.
#[derive(Debug, Clone)]
pub(crate) struct QuantWeights {
    /// Groups of four inputs (k rounded up, divided by 4).
    groups: usize,
    /// Real output channels.
    n: usize,
    vectors: Vec<[i8; 32]>,
    /// Per channel: `Σ_k code`, which the activation rows' minimum multiplies.
    code_sums: Vec<f32>,
    /// Per channel: `w ≈ code · scale`.
    scale: Vec<f32>,
}

impl QuantWeights {
    /// Quantises a `(n, k)` row-major f32 matrix (PyTorch's linear layout) per output channel.
    pub(crate) fn new(weight: &[f32], n: usize, k: usize) -> QuantWeights {
        let groups = k.div_ceil(4);
        let panels = n.div_ceil(PANEL);
        let mut vectors = vec![[0i8; 32]; panels * groups * VECS];
        let mut code_sums = Vec::with_capacity(n);
        let mut scale = Vec::with_capacity(n);
        let mut codes = vec![0i8; k];
        for (out, row) in weight.chunks_exact(k).take(n).enumerate() {
            scale.push(quantize_weights(row, &mut codes));
            // Exact: at most K · 127, far inside f32's 24-bit integers.
            code_sums.push(codes.iter().map(|&c| i32::from(c)).sum::<i32>() as f32);
            let (p, within) = (out / PANEL, out % PANEL);
            let (v, j) = (within / LANES, within % LANES);
            for (input, &c) in codes.iter().enumerate() {
                let (g, i) = (input / 4, input % 4);
                vectors[(p * groups + g) * VECS + v][4 * j + i] = c;
            }
        }
        QuantWeights {
            groups,
            n,
            vectors,
            code_sums,
            scale,
        }
    }

    /// Output channels.
    pub(crate) fn outputs(&self) -> usize {
        self.n
    }

    fn panel(&self, p: usize) -> &[[i8; 32]] {
        let len = self.groups * VECS;
        &self.vectors[p * len..(p + 1) * len]
    }

    fn code(&self, out: usize, input: usize) -> i32 {
        let (p, within) = (out / PANEL, out % PANEL);
        let (v, j) = (within / LANES, within % LANES);
        let (g, i) = (input / 4, input % 4);
        i32::from(self.vectors[(p * self.groups + g) * VECS + v][4 * j + i])
    }
}

/// One channel's codes into `codes`; returns the scale. The scale makes the largest
/// `|w0| + |w1|` over adjacent pairs (inputs 2m, 2m+1) map to 127, so after rounding (at most
/// +1 over a pair) every pair's code magnitudes sum to at most 128. An all-zero or non-finite
/// channel gets scale 0 and zero codes.
fn quantize_weights(row: &[f32], codes: &mut [i8]) -> f32 {
    let max_pair = row
        .chunks(2)
        .map(|p| p.iter().map(|w| w.abs()).sum::<f32>())
        .fold(0f32, f32::max);
    if !(max_pair > 0.0 && max_pair.is_finite()) {
        codes.fill(0);
        return 0.0;
    }
    let inv = PAIR_MAX / max_pair;
    for (w, c) in row.iter().zip(codes.iter_mut()) {
        *c = (w * inv).round_ties_even().clamp(-QMAX, QMAX) as i8;
    }
    max_pair / PAIR_MAX
}

/// Quantised activation rows, each padded with zero codes to `groups · 4`, in groups of four
/// (one 32-bit broadcast each). Padding codes meet zero weights, so they add nothing.
#[derive(Debug, Default)]
struct QuantRows {
    groups: usize,
    codes: Vec<[u8; 4]>,
    /// Per row: `x ≈ min + code · scale`.
    scale: Vec<f32>,
    min: Vec<f32>,
}

impl QuantRows {
    fn rows(&self) -> usize {
        self.scale.len()
    }

    /// Quantises each row of `x` (width `inputs`) for weights of `groups` groups of four.
    #[inline(always)]
    fn new(x: &[f32], inputs: usize, groups: usize) -> QuantRows {
        let rows = x.len() / inputs;
        let mut q = QuantRows {
            groups,
            codes: vec![[0; 4]; rows * groups],
            scale: Vec::with_capacity(rows),
            min: Vec::with_capacity(rows),
        };
        let codes = q.codes.as_flattened_mut().chunks_exact_mut(groups * 4);
        for (row, c) in x.chunks_exact(inputs).zip(codes) {
            let (min, scale) = quantize_row(row, &mut c[..inputs]);
            q.min.push(min);
            q.scale.push(scale);
        }
        q
    }
}

/// Quantises one activation row to codes over its `[min, max]`; returns `(min, scale)` with
/// `x ≈ min + code · scale`. A constant row gets scale 0 (every value is `min`); a row with
/// non-finite values gets `(0, 0)`, so it contributes nothing rather than NaN everywhere.
#[inline(always)]
fn quantize_row(row: &[f32], codes: &mut [u8]) -> (f32, f32) {
    // Eight independent extremes, so the loop vectorises without reassociation.
    let (mut lo, mut hi) = ([f32::INFINITY; 8], [f32::NEG_INFINITY; 8]);
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for ((l, h), v) in lo.iter_mut().zip(hi.iter_mut()).zip(c) {
            *l = l.min(*v);
            *h = h.max(*v);
        }
    }
    let fold =
        |init: f32, xs: &[f32], f: fn(f32, f32) -> f32| xs.iter().fold(init, |m, v| f(m, *v));
    let min = fold(
        fold(f32::INFINITY, &lo, f32::min),
        chunks.remainder(),
        f32::min,
    );
    let max = fold(
        fold(f32::NEG_INFINITY, &hi, f32::max),
        chunks.remainder(),
        f32::max,
    );
    let range = max - min;
    if !range.is_finite() {
        codes.fill(0);
        return (0.0, 0.0);
    }
    if range == 0.0 {
        codes.fill(0);
        return (min, 0.0);
    }
    let inv = AMAX / range;
    for (v, c) in row.iter().zip(codes) {
        *c = activation_code((v - min) * inv);
    }
    (min, range / AMAX)
}

/// `y` rounded to the nearest integer (ties to even) and clamped to `[0, 255]`; NaN gives 0.
///
/// `max` maps NaN to 0, and clamping before rounding gives the codes clamping after would.
/// Adding 2^23 to a value in [0, 255] leaves it rounded, ties to even, in the low mantissa bits:
/// the code is the low byte of the sum's bits. So this is `round_ties_even` and a cast in vector
/// instructions only; the saturating float-to-int cast it replaces compiled to per-value scalar
/// compares and was 10% of an int8 pass.
#[inline(always)]
// `clamp` would keep NaN, whose payload bits could then leak into the code.
#[allow(clippy::manual_clamp)]
fn activation_code(y: f32) -> u8 {
    (y.max(0.0).min(AMAX) + ROUNDING_BIAS).to_bits() as u8
}

/// `out = quantise(x) · wᵀ`, dequantised: `x` is rows × `inputs` f32, `out` rows × outputs.
/// The bias is the caller's.
pub(crate) fn linear(x: &[f32], inputs: usize, w: &QuantWeights, out: &mut [f32]) {
    debug_assert_eq!(out.len(), x.len() / inputs * w.n);
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(vnni) = vnni::Vnni::detect() {
            return vnni.linear(x, inputs, w, out);
        }
        if let Some(simd) = V3::try_new() {
            return avx2_linear(simd, x, inputs, w, out);
        }
    }
    matmul_scalar(&QuantRows::new(x, inputs, w.groups), w, out);
}

#[cfg(target_arch = "x86_64")]
fn avx2_linear(simd: V3, x: &[f32], inputs: usize, w: &QuantWeights, out: &mut [f32]) {
    simd.vectorize(Avx2Linear {
        simd,
        x,
        inputs,
        w,
        out,
    });
}

/// The reference kernel; also what CPUs without AVX2 run.
fn matmul_scalar(a: &QuantRows, w: &QuantWeights, out: &mut [f32]) {
    let groups = a.groups;
    for (r, out_row) in out.chunks_exact_mut(w.n).enumerate() {
        let codes = a.codes[r * groups..(r + 1) * groups].as_flattened();
        for (c, o) in out_row.iter_mut().enumerate() {
            let acc: i32 = codes
                .iter()
                .enumerate()
                .map(|(k, &q)| i32::from(q) * w.code(c, k))
                .sum();
            *o = acc as f32 * (a.scale[r] * w.scale[c]) + (a.min[r] * w.scale[c]) * w.code_sums[c];
        }
    }
}

#[cfg(target_arch = "x86_64")]
struct Avx2Linear<'a> {
    simd: V3,
    x: &'a [f32],
    inputs: usize,
    w: &'a QuantWeights,
    out: &'a mut [f32],
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Avx2Linear<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let Avx2Linear {
            simd,
            x,
            inputs,
            w,
            out,
        } = self;
        let a = &QuantRows::new(x, inputs, w.groups);
        let rows = a.rows();
        // Panel-outer: a panel (K/4 × 64 bytes, at most 24 KB for K = 1536) stays in L1 while
        // every row of the block streams past it.
        for p in 0..w.n.div_ceil(PANEL) {
            let mut r = 0;
            while r + TILE_ROWS <= rows {
                avx2_tile::<TILE_ROWS>(simd, a, r, w, p, out);
                r += TILE_ROWS;
            }
            match rows - r {
                3 => avx2_tile::<3>(simd, a, r, w, p, out),
                2 => avx2_tile::<2>(simd, a, r, w, p, out),
                1 => avx2_tile::<1>(simd, a, r, w, p, out),
                _ => {}
            }
        }
    }
}

/// Rows `row0 .. row0 + M` × panel `p` (16 outputs) of the product, written to `out`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2_tile<const M: usize>(
    simd: V3,
    a: &QuantRows,
    row0: usize,
    w: &QuantWeights,
    p: usize,
    out: &mut [f32],
) {
    use core::arch::x86_64::__m256i;
    let groups = a.groups;
    let rows: [&[[u8; 4]]; M] =
        std::array::from_fn(|m| &a.codes[(row0 + m) * groups..(row0 + m + 1) * groups]);
    let ones = simd.avx._mm256_set1_epi16(1);
    let mut acc: [[__m256i; VECS]; M] = [[simd.avx._mm256_setzero_si256(); VECS]; M];
    for (g, pair) in w.panel(p).chunks_exact(VECS).enumerate() {
        let wv: [__m256i; VECS] = std::array::from_fn(|v| cast(pair[v]));
        for m in 0..M {
            // Four codes as one i32, broadcast: every lane gets the same four bytes, in order.
            let codes = simd.avx._mm256_set1_epi32(cast(rows[m][g]));
            for v in 0..VECS {
                let pairs = simd.avx2._mm256_maddubs_epi16(codes, wv[v]);
                let quads = simd.avx2._mm256_madd_epi16(pairs, ones);
                acc[m][v] = simd.avx2._mm256_add_epi32(acc[m][v], quads);
            }
        }
    }
    let sums: [[[i32; LANES]; VECS]; M] = std::array::from_fn(|m| acc[m].map(cast));
    store_sums(&sums, a, row0, w, p, out);
}

/// Rows `row0 .. row0 + M` × panel `p` from their i32 sums (`sums[m][v]`: eight outputs from
/// `16p + 8v`), dequantised into `out` with the scalar kernel's operations, unfused and in its
/// order, so every kernel gives the same bits. Plain Rust on fixed-size arrays: inlined into a
/// kernel it compiles to that kernel's vector instructions.
#[inline(always)]
fn store_sums<const M: usize>(
    sums: &[[[i32; LANES]; VECS]; M],
    a: &QuantRows,
    row0: usize,
    w: &QuantWeights,
    p: usize,
    out: &mut [f32],
) {
    let n = w.n;
    for v in 0..VECS {
        let c0 = p * PANEL + v * LANES;
        if c0 >= n {
            break;
        }
        let width = LANES.min(n - c0);
        let col_scale = lane_values(&w.scale[c0..]);
        let code_sums = lane_values(&w.code_sums[c0..]);
        for (m, row_sums) in sums.iter().enumerate() {
            let r = row0 + m;
            let (row_scale, row_min) = (a.scale[r], a.min[r]);
            let values: [f32; LANES] = std::array::from_fn(|j| {
                row_sums[v][j] as f32 * (row_scale * col_scale[j])
                    + (row_min * col_scale[j]) * code_sums[j]
            });
            let dst = &mut out[r * n + c0..r * n + c0 + width];
            // A whole vector as one array assignment: one store (see `lane_values`).
            match dst.first_chunk_mut::<LANES>() {
                Some(whole) => *whole = values,
                None => store_part(dst, &values),
            }
        }
    }
}

/// The first [`LANES`] values of `values`, zero-padded past its end.
///
/// Whole vectors are one array copy, and the short copy of a last partial panel is out of line
/// ([`part_values`], [`store_part`]): inlined, the compiler merges the two into one memcpy call
/// of run-time length, which then ran for every panel of every tile (4-7% of an int8 pass).
#[inline(always)]
fn lane_values(values: &[f32]) -> [f32; LANES] {
    match values.first_chunk::<LANES>() {
        Some(whole) => *whole,
        None => part_values(values),
    }
}

#[inline(never)]
fn part_values(values: &[f32]) -> [f32; LANES] {
    std::array::from_fn(|j| values.get(j).copied().unwrap_or(0.0))
}

/// The first `dst.len()` (< [`LANES`]) of `values` into `dst`; see [`lane_values`].
#[inline(never)]
fn store_part(dst: &mut [f32], values: &[f32; LANES]) {
    dst.copy_from_slice(&values[..dst.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::values;

    #[test]
    fn dispatched_kernel_equals_scalar_and_exact_sums() {
        // Odd sizes exercise padded inputs, a partial panel and every row remainder.
        for (n, k, rows) in [
            (37, 13, 7),
            (16, 384, 4),
            (50, 1536, 6),
            (8, 4, 1),
            (40, 200, 19),
        ] {
            let mut weight = values(n as u64, n * k);
            // Worst cases for the i16 pair sums: a channel of equal weights (every pair at the
            // bound) against rows at +max and -max everywhere.
            weight[..k].fill(0.7);
            let mut x = values(1000 + k as u64, rows * k);
            x[..k].fill(3.0);
            if rows > 1 {
                x[k..2 * k].fill(-3.0);
            }
            let w = QuantWeights::new(&weight, n, k);
            let mut slow = vec![f32::NAN; rows * n];
            let a = QuantRows::new(&x, k, w.groups);
            matmul_scalar(&a, &w, &mut slow);
            let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            for (kernel, fast) in every_kernel(&x, k, &w) {
                assert_eq!(
                    bits(&fast),
                    bits(&slow),
                    "{kernel}: n={n} k={k} rows={rows}"
                );
            }
            // And both are the exact integer product of the codes, dequantised.
            for r in 0..rows {
                for c in 0..n {
                    let exact: i64 = (0..k)
                        .map(|i| {
                            let q = i64::from(a.codes[r * a.groups + i / 4][i % 4]);
                            q * i64::from(w.code(c, i))
                        })
                        .sum();
                    let want = exact as f32 * (a.scale[r] * w.scale[c])
                        + (a.min[r] * w.scale[c]) * w.code_sums[c];
                    assert_eq!(slow[r * n + c], want, "r={r} c={c}");
                }
            }
        }
    }

    /// The product from each kernel this CPU runs, the dispatched one first.
    fn every_kernel(x: &[f32], k: usize, w: &QuantWeights) -> Vec<(&'static str, Vec<f32>)> {
        let run = |f: &dyn Fn(&mut [f32])| {
            let mut out = vec![f32::NAN; x.len() / k * w.n];
            f(&mut out);
            out
        };
        let mut outs = vec![("dispatched", run(&|out| linear(x, k, w, out)))];
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(vnni) = vnni::Vnni::detect() {
                outs.push(("vnni", run(&|out| vnni.linear(x, k, w, out))));
            }
            if let Some(simd) = V3::try_new() {
                outs.push(("avx2", run(&|out| avx2_linear(simd, x, k, w, out))));
            }
        }
        outs
    }

    #[test]
    fn weight_pairs_respect_the_saturation_bound() {
        let row: Vec<f32> = vec![1.0, 1.0, -0.3, 0.01, 0.5, -1.0, 0.2];
        let mut codes = vec![0i8; row.len()];
        let scale = quantize_weights(&row, &mut codes);
        assert_eq!(scale, 2.0 / 127.0);
        for pair in codes.chunks(2) {
            let sum: i32 = pair.iter().map(|c| i32::from(c.unsigned_abs())).sum();
            assert!(sum <= 128, "{codes:?}");
        }
        for (w, c) in row.iter().zip(&codes) {
            assert!((w - f32::from(*c) * scale).abs() <= scale * 0.5 + 1e-7);
        }
        let mut zero = vec![5i8; 3];
        assert_eq!(quantize_weights(&[0.0; 3], &mut zero), 0.0);
        assert_eq!(zero, vec![0; 3]);
    }

    #[test]
    fn activation_rows_round_trip_within_half_a_step() {
        let v: Vec<f32> = (0..100)
            .map(|i| (i as f32 * 0.37).sin() * 3.0 + 1.0)
            .collect();
        let mut codes = vec![0u8; 100];
        let (min, scale) = quantize_row(&v, &mut codes);
        assert!(codes.contains(&0) && codes.contains(&255));
        for (x, c) in v.iter().zip(&codes) {
            assert!((x - (min + f32::from(*c) * scale)).abs() <= scale * 0.5 + 1e-6);
        }
        let mut codes = vec![9u8; 3];
        assert_eq!(quantize_row(&[0.5; 3], &mut codes), (0.5, 0.0));
        assert_eq!(codes, vec![0; 3]);
        let mut codes = vec![9u8; 3];
        assert_eq!(
            quantize_row(&[f32::INFINITY, 1.0, -1.0], &mut codes),
            (0.0, 0.0)
        );
        assert_eq!(codes, vec![0; 3]);
    }

    #[test]
    fn activation_codes_round_ties_to_even_and_clamp() {
        let reference = |y: f32| y.round_ties_even().clamp(0.0, AMAX) as u8;
        let mut cases = vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            1e30,
            -1e30,
        ];
        // Every tie and its neighbours across the range and past both ends.
        for i in -8..(2 * 256 + 8) {
            let tie = i as f32 * 0.5;
            cases.extend([tie, tie.next_down(), tie.next_up()]);
        }
        cases.extend((0..10_000).map(|i| i as f32 * 0.0273 - 10.0));
        for y in cases {
            assert_eq!(activation_code(y), reference(y), "{y}");
        }
    }

    #[test]
    fn real_products_are_close() {
        let (n, k, rows) = (24, 200, 5);
        let weight = values(7, n * k);
        // Shifted rows, like GELU outputs.
        let x: Vec<f32> = values(8, rows * k)
            .iter()
            .map(|v| v.max(-0.17) * 2.0)
            .collect();
        let w = QuantWeights::new(&weight, n, k);
        let mut out = vec![0f32; rows * n];
        linear(&x, k, &w, &mut out);
        let (mut err, mut norm) = (0f32, 0f32);
        for r in 0..rows {
            for c in 0..n {
                let want: f32 = (0..k).map(|i| x[r * k + i] * weight[c * k + i]).sum();
                err += (out[r * n + c] - want).powi(2);
                norm += want * want;
            }
        }
        // Two 8-bit roundings per product: about 1% relative error, far from a broken kernel.
        let relative = (err / norm).sqrt();
        assert!(relative < 0.015, "relative error {relative}");
    }
}
