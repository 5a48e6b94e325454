//! The f32 product for a handful of rows: one search query, a dozen or so tokens.
//!
//! A general GEMM is built for many rows: it packs the weight on every call and pads the rows
//! to its micro-tile (16 for the AVX2 kernel behind candle), so for a short query most of its
//! time is moving the 42 MB of MiniLM's linear weights around rather than multiplying. Here the
//! weights are packed once, on the first query, into 16-column panels read front to back, and
//! each row's values are broadcast against them: `out[r][j] = Σ_k x[r][k] · w[k][j]`. On this
//! machine that is 2-3× faster than the GEMM from 3 to 64 rows (a 19-token query's four
//! products: 1.3 ms against 2.6 ms), and a whole 3-token query embeds in ~3 ms instead of ~9.
//!
//! Only the query path uses it: document vectors always come from the batch GEMM, so a chunk's
//! vector never depends on whether it was embedded alone or in a batch. A query vector differs
//! from the GEMM's in rounding only (`tests/parity.rs` holds both to sentence-transformers).
//!
//! AVX-512 or AVX2 + FMA (through `pulp`, chosen at run time), or a portable loop otherwise.
//! The two vector kernels give the same bits: each output is the same chain of fused
//! multiply-adds over the inputs in order, only more of them run side by side in 512 bits.

use rayon::prelude::*;

use crate::kernels;

#[cfg(target_arch = "x86_64")]
use pulp::x86::{V3, V4};

/// Rows this kernel is for; more rows are the GEMM's.
pub(crate) const MAX_ROWS: usize = 64;
/// f32 lanes per 256-bit vector.
const LANES: usize = 8;
/// Output columns per micro-tile (and panel): two vectors.
const PANEL: usize = 2 * LANES;
/// Rows per AVX2 micro-tile: 6 rows × 2 vectors = 12 accumulators, plus two weight vectors and
/// one broadcast, within AVX2's 16 registers.
#[cfg(target_arch = "x86_64")]
const TILE_ROWS: usize = 6;
/// Rows per AVX-512 micro-tile: a panel line is one 512-bit vector, so 16 rows are 16
/// accumulators of AVX-512's 32 registers, and each weight load serves up to 16 rows (a
/// 19-token query is two passes over a panel, not four).
#[cfg(target_arch = "x86_64")]
const TILE_ROWS_512: usize = 16;
/// Panels per parallel task.
const TASK_PANELS: usize = 4;

/// A weight matrix packed for this kernel: panel `p` holds output columns `16p .. 16p + 16`
/// for every input, `k`-major, so a tile's weights are one contiguous run that the hardware
/// prefetcher streams (the row-major layout puts 4.6 KB between two inputs' values of a
/// panel). A missing last column is zero.
pub(crate) struct PanelWeights {
    panels: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl PanelWeights {
    /// Packs `w`, `inputs` × `outputs` row-major (the GEMM operand's layout).
    pub(crate) fn new(w: &[f32], inputs: usize, outputs: usize) -> PanelWeights {
        debug_assert_eq!(w.len(), inputs * outputs);
        let count = outputs.div_ceil(PANEL);
        let mut panels = vec![0f32; count * inputs * PANEL];
        for (p, panel) in panels.chunks_exact_mut(inputs * PANEL).enumerate() {
            let c0 = p * PANEL;
            let width = PANEL.min(outputs - c0);
            for (k, line) in panel.chunks_exact_mut(PANEL).enumerate() {
                line[..width].copy_from_slice(&w[k * outputs + c0..k * outputs + c0 + width]);
            }
        }
        PanelWeights {
            panels,
            inputs,
            outputs,
        }
    }

    fn panel(&self, p: usize) -> &[f32] {
        &self.panels[p * self.inputs * PANEL..(p + 1) * self.inputs * PANEL]
    }

    /// `x` (rows × inputs) times the weights: rows × outputs. Splits the panels over the
    /// current rayon pool, so each thread streams its share of the weights once.
    pub(crate) fn matmul(&self, x: &[f32]) -> Vec<f32> {
        self.matmul_with(Kernel::detect(), x)
    }

    fn matmul_with(&self, kernel: Kernel, x: &[f32]) -> Vec<f32> {
        let (inputs, outputs) = (self.inputs, self.outputs);
        let rows = x.len().checked_div(inputs).unwrap_or(0);
        let mut out = vec![0f32; rows * outputs];
        if rows == 0 || outputs == 0 {
            return out;
        }
        let panels = outputs.div_ceil(PANEL);
        let tiles = RowTiles::new(x, rows, inputs, kernel.tile_rows());
        let blocks: Vec<Vec<f32>> = (0..panels.div_ceil(TASK_PANELS))
            .into_par_iter()
            .map(|b| {
                let ps = b * TASK_PANELS..panels.min((b + 1) * TASK_PANELS);
                let mut block = vec![0f32; rows * ps.len() * PANEL];
                for (i, p) in ps.enumerate() {
                    let tile = &mut block[i * rows * PANEL..(i + 1) * rows * PANEL];
                    self.panel_product(kernel, x, &tiles, p, tile);
                }
                block
            })
            .collect();
        // Blocks hold rows × 16 per panel; scatter them into rows × outputs.
        for (b, block) in blocks.iter().enumerate() {
            for (i, tile) in block.chunks_exact(rows * PANEL).enumerate() {
                let c0 = (b * TASK_PANELS + i) * PANEL;
                let width = PANEL.min(outputs - c0);
                for (dst, src) in out.chunks_exact_mut(outputs).zip(tile.chunks_exact(PANEL)) {
                    dst[c0..c0 + width].copy_from_slice(&src[..width]);
                }
            }
        }
        out
    }

    /// Panel `p` of the product for every row, into `tile` (rows × 16).
    fn panel_product(
        &self,
        kernel: Kernel,
        x: &[f32],
        tiles: &RowTiles,
        p: usize,
        tile: &mut [f32],
    ) {
        let panel = self.panel(p);
        match kernel {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(simd) => return run_tiles(simd, tiles, panel, tile),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(simd) => return run_tiles(simd, tiles, panel, tile),
            Kernel::Portable => {}
        }
        for r in 0..tiles.rows {
            let xr = &x[r * self.inputs..(r + 1) * self.inputs];
            for c in 0..PANEL {
                tile[r * PANEL + c] = xr
                    .iter()
                    .zip(panel.chunks_exact(PANEL))
                    .map(|(&v, line)| v * line[c])
                    .sum();
            }
        }
    }
}

/// The vector kernel this CPU runs, found once per product.
#[derive(Clone, Copy)]
enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512(V4),
    #[cfg(target_arch = "x86_64")]
    Avx2(V3),
    Portable,
}

impl Kernel {
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V4::try_new() {
            return Kernel::Avx512(simd);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = V3::try_new() {
            return Kernel::Avx2(simd);
        }
        Kernel::Portable
    }

    /// Rows per tile: what the kernel's registers hold; `None` for the portable loop, which
    /// reads the rows as they are.
    fn tile_rows(self) -> Option<usize> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(_) => Some(TILE_ROWS_512),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(_) => Some(TILE_ROWS),
            Kernel::Portable => None,
        }
    }
}

/// The rows of one product in tiles of at most the kernel's tile rows, evened out (19 rows
/// in tiles of six: 5, 5, 5, 4, not 6, 6, 6, 1: a one-row tile loads as many weights per
/// multiply-add as it computes), each tile stored input-major, `[k][m]`, so the kernel reads
/// one tile's values for an input as one array.
struct RowTiles {
    rows: usize,
    /// (first row, rows in the tile, values).
    tiles: Vec<(usize, usize, Vec<f32>)>,
}

impl RowTiles {
    /// The tiles of `x`; none without a tile size (the rows are still counted).
    fn new(x: &[f32], rows: usize, inputs: usize, tile_rows: Option<usize>) -> RowTiles {
        let count = tile_rows.map_or(0, |t| rows.div_ceil(t));
        let mut row0 = 0;
        let tiles = (0..count)
            .map(|t| {
                let size = rows / count + usize::from(t < rows % count);
                let mut values = vec![0f32; inputs * size];
                for m in 0..size {
                    let row = &x[(row0 + m) * inputs..(row0 + m + 1) * inputs];
                    for (k, &v) in row.iter().enumerate() {
                        values[k * size + m] = v;
                    }
                }
                row0 += size;
                (row0 - size, size, values)
            })
            .collect();
        RowTiles { rows, tiles }
    }
}

/// Runs [`PanelTask`] compiled for `simd`'s instruction set.
#[cfg(target_arch = "x86_64")]
fn run_tiles<S: PanelTile + pulp::Simd>(
    simd: S,
    tiles: &RowTiles,
    panel: &[f32],
    tile: &mut [f32],
) {
    simd.vectorize(PanelTask {
        simd,
        tiles,
        panel,
        tile,
    });
}

/// One panel's product for every tile of rows, in a vector ISA's micro-tiles.
#[cfg(target_arch = "x86_64")]
struct PanelTask<'a, S> {
    simd: S,
    tiles: &'a RowTiles,
    panel: &'a [f32],
    tile: &'a mut [f32],
}

/// A vector ISA's micro-tile: rows `row0 .. row0 + size` of one panel's product.
#[cfg(target_arch = "x86_64")]
trait PanelTile: Copy {
    fn rows_tile(self, size: usize, values: &[f32], row0: usize, panel: &[f32], tile: &mut [f32]);
}

#[cfg(target_arch = "x86_64")]
impl PanelTile for V3 {
    #[inline(always)]
    fn rows_tile(self, size: usize, values: &[f32], row0: usize, panel: &[f32], tile: &mut [f32]) {
        match size {
            6 => rows_tile::<6>(self, values, row0, panel, tile),
            5 => rows_tile::<5>(self, values, row0, panel, tile),
            4 => rows_tile::<4>(self, values, row0, panel, tile),
            3 => rows_tile::<3>(self, values, row0, panel, tile),
            2 => rows_tile::<2>(self, values, row0, panel, tile),
            _ => rows_tile::<1>(self, values, row0, panel, tile),
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl PanelTile for V4 {
    #[inline(always)]
    fn rows_tile(self, size: usize, values: &[f32], row0: usize, panel: &[f32], tile: &mut [f32]) {
        macro_rules! sizes {
            ($($m:literal)*) => {
                match size {
                    $($m => rows_tile_512::<$m>(self, values, row0, panel, tile),)*
                    _ => rows_tile_512::<1>(self, values, row0, panel, tile),
                }
            };
        }
        sizes!(16 15 14 13 12 11 10 9 8 7 6 5 4 3 2);
    }
}

#[cfg(target_arch = "x86_64")]
impl<S: PanelTile> pulp::NullaryFnOnce for PanelTask<'_, S> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let PanelTask {
            simd,
            tiles,
            panel,
            tile,
        } = self;
        for (row0, size, values) in &tiles.tiles {
            simd.rows_tile(*size, values, *row0, panel, tile);
        }
    }
}

/// Rows `row0 .. row0 + M` of one panel's product, written to `tile` (rows × 16); `values` is
/// the rows' tile, input-major.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rows_tile<const M: usize>(
    simd: V3,
    values: &[f32],
    row0: usize,
    panel: &[f32],
    tile: &mut [f32],
) {
    use core::arch::x86_64::__m256;
    use pulp::bytemuck::cast;
    let mut acc: [[__m256; 2]; M] = [[simd.avx._mm256_setzero_ps(); 2]; M];
    let (lines, _) = pulp::as_arrays::<PANEL, f32>(panel);
    let (inputs, _) = pulp::as_arrays::<M, f32>(values);
    for (line, xs) in lines.iter().zip(inputs) {
        let lo: __m256 = cast(*line.first_chunk::<LANES>().expect("low half"));
        let hi: __m256 = cast(*line.last_chunk::<LANES>().expect("high half"));
        for m in 0..M {
            let v = simd.avx._mm256_set1_ps(xs[m]);
            acc[m][0] = simd.fma._mm256_fmadd_ps(v, lo, acc[m][0]);
            acc[m][1] = simd.fma._mm256_fmadd_ps(v, hi, acc[m][1]);
        }
    }
    for (m, pair) in acc.iter().enumerate() {
        let at = (row0 + m) * PANEL;
        let lo: [f32; LANES] = cast(pair[0]);
        let hi: [f32; LANES] = cast(pair[1]);
        tile[at..at + LANES].copy_from_slice(&lo);
        tile[at + LANES..at + PANEL].copy_from_slice(&hi);
    }
}

/// [`rows_tile`] in 512 bits: a panel line (16 outputs) is one vector, so a row needs one
/// accumulator, not two. Each lane runs the same fused multiply-adds in the same order.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rows_tile_512<const M: usize>(
    simd: V4,
    values: &[f32],
    row0: usize,
    panel: &[f32],
    tile: &mut [f32],
) {
    use core::arch::x86_64::__m512;
    use pulp::bytemuck::cast;
    let mut acc: [__m512; M] = [simd.avx512f._mm512_setzero_ps(); M];
    let (lines, _) = pulp::as_arrays::<PANEL, f32>(panel);
    let (inputs, _) = pulp::as_arrays::<M, f32>(values);
    for (line, xs) in lines.iter().zip(inputs) {
        let w: __m512 = cast(*line);
        for m in 0..M {
            let v = simd.avx512f._mm512_set1_ps(xs[m]);
            acc[m] = simd.avx512f._mm512_fmadd_ps(v, w, acc[m]);
        }
    }
    for (m, sums) in acc.iter().enumerate() {
        let at = (row0 + m) * PANEL;
        let sums: [f32; PANEL] = cast(*sums);
        tile[at..at + PANEL].copy_from_slice(&sums);
    }
}

/// Self-attention of one short sequence, unmasked: `qkv` is (tokens, 3, heads, d) with Q
/// pre-scaled, the result (tokens, heads · d). Heads run in parallel.
///
/// For a query this replaces two candle matmuls per head and layer, each of which reads
/// `/proc/cpuinfo` to count cores (candle-core 0.11 `get_num_threads`, ~60 µs per call) and
/// copies its transposed operands; the products themselves are a few hundred thousand
/// multiply-adds.
pub(crate) fn attention(qkv: &[f32], heads: usize, d: usize) -> Vec<f32> {
    let h = heads * d;
    let tokens = qkv.len().checked_div(3 * h).unwrap_or(0);
    let contexts: Vec<Vec<f32>> = (0..heads)
        .into_par_iter()
        .map(|hd| {
            let mut rows = vec![0f32; tokens * d];
            let context = rows.as_mut_slice();
            // Through pulp's dispatch, so the loops compile for the CPU's vectors rather than
            // baseline SSE (they were ~15% of an int8 query). The same operations in the same
            // order, so the same bits.
            kernels::dispatch!(HeadAttention {
                qkv: &'a [f32],
                context: &'a mut [f32],
                heads: usize,
                d: usize,
                hd: usize,
            } {
                head_attention(qkv, heads, d, hd, context)
            });
            rows
        })
        .collect();
    let mut out = vec![0f32; tokens * h];
    for (hd, context) in contexts.iter().enumerate() {
        for (t, values) in context.chunks_exact(d).enumerate() {
            out[t * h + hd * d..t * h + (hd + 1) * d].copy_from_slice(values);
        }
    }
    out
}

/// Head `hd`'s context rows into `context` (tokens × d), `qkv` as in [`attention`].
#[inline(always)]
fn head_attention(qkv: &[f32], heads: usize, d: usize, hd: usize, context: &mut [f32]) {
    let h = heads * d;
    let tokens = qkv.len().checked_div(3 * h).unwrap_or(0);
    let head = |part: usize, t: usize| {
        let at = (t * 3 + part) * h + hd * d;
        &qkv[at..at + d]
    };
    let mut scores = vec![0f32; tokens * tokens];
    for (i, row) in scores.chunks_exact_mut(tokens.max(1)).enumerate() {
        let q = head(0, i);
        for (j, score) in row.iter_mut().enumerate() {
            *score = dot(q, head(1, j));
        }
    }
    kernels::softmax_rows(&mut scores, tokens.max(1));
    for (row, out) in scores
        .chunks_exact(tokens.max(1))
        .zip(context.chunks_exact_mut(d))
    {
        for (j, &p) in row.iter().enumerate() {
            for (o, &v) in out.iter_mut().zip(head(2, j)) {
                *o += p * v;
            }
        }
    }
}

/// Dot product with eight independent partial sums, so it vectorises.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    for (x, y) in a8.iter().zip(b8) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_values::values;

    #[test]
    fn equals_the_plain_product_for_every_row_count_and_partial_panels() {
        for (inputs, outputs) in [(384, 1152), (13, 37), (70, 100), (5, 16)] {
            let w = values(inputs as u64, inputs * outputs);
            let packed = PanelWeights::new(&w, inputs, outputs);
            for rows in [1, 2, 5, 6, 7, 13, 19, MAX_ROWS] {
                let x = values(rows as u64 + 99, rows * inputs);
                // This CPU's kernel, and the portable loop every CPU can fall back to.
                for kernel in [Kernel::detect(), Kernel::Portable] {
                    let got = packed.matmul_with(kernel, &x);
                    for r in 0..rows {
                        for c in 0..outputs {
                            let want: f64 = (0..inputs)
                                .map(|k| {
                                    f64::from(x[r * inputs + k]) * f64::from(w[k * outputs + c])
                                })
                                .sum();
                            let diff = (f64::from(got[r * outputs + c]) - want).abs();
                            assert!(
                                diff <= 1e-4 * (1.0 + want.abs()),
                                "inputs={inputs} outputs={outputs} rows={rows} r={r} c={c}: {} vs {want}",
                                got[r * outputs + c]
                            );
                        }
                    }
                }
            }
        }
    }

    /// The AVX-512 and AVX2 kernels (where this CPU runs them) give the same bits, for row
    /// counts on both sides of each kernel's tile size and a partial last panel.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_vector_kernels_give_the_same_bits() {
        let (Some(v4), Some(v3)) = (V4::try_new(), V3::try_new()) else {
            eprintln!("skipped: this CPU lacks AVX-512 or AVX2");
            return;
        };
        for (inputs, outputs) in [(384, 1152), (1536, 384), (13, 37)] {
            let w = values(inputs as u64 + 7, inputs * outputs);
            let packed = PanelWeights::new(&w, inputs, outputs);
            for rows in [1, 5, 6, 7, 12, 16, 17, 19, 33, MAX_ROWS] {
                let x = values(rows as u64 + 3, rows * inputs);
                let wide = packed.matmul_with(Kernel::Avx512(v4), &x);
                let narrow = packed.matmul_with(Kernel::Avx2(v3), &x);
                assert!(
                    wide.iter()
                        .zip(&narrow)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "inputs={inputs} outputs={outputs} rows={rows}"
                );
            }
        }
    }

    #[test]
    fn attention_equals_the_plain_softmax_of_scores() {
        let (heads, d) = (3, 12);
        for tokens in [1, 2, 9] {
            let qkv = values(tokens as u64, tokens * 3 * heads * d);
            let got = attention(&qkv, heads, d);
            let at = |part: usize, t: usize, hd: usize, i: usize| {
                f64::from(qkv[(t * 3 + part) * heads * d + hd * d + i])
            };
            for hd in 0..heads {
                for i in 0..tokens {
                    let scores: Vec<f64> = (0..tokens)
                        .map(|j| (0..d).map(|e| at(0, i, hd, e) * at(1, j, hd, e)).sum())
                        .collect();
                    let max = scores.iter().cloned().fold(f64::MIN, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for e in 0..d {
                        let want: f64 = (0..tokens)
                            .map(|j| weights[j] / total * at(2, j, hd, e))
                            .sum();
                        let have = f64::from(got[i * heads * d + hd * d + e]);
                        assert!((have - want).abs() < 1e-5, "tokens={tokens} head={hd}");
                    }
                }
            }
        }
        assert!(attention(&[], heads, d).is_empty());
    }

    #[test]
    fn no_rows_or_no_outputs_give_an_empty_product() {
        assert!(PanelWeights::new(&[0.0; 8], 4, 2).matmul(&[]).is_empty());
        assert!(PanelWeights::new(&[], 4, 0).matmul(&[1.0; 4]).is_empty());
    }
}
