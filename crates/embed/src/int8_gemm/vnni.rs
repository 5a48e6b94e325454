//! The int8 product with AVX-512 VNNI. `vpdpbusd` multiplies four unsigned activation codes by
//! four signed weight codes and adds the four products to an i32 lane in one instruction, where
//! the AVX2 kernel needs three (`vpmaddubsw`, `vpmaddwd`, `vpaddd`). It reads the same packed
//! panels, because their groups of four bytes per output lane are already what the instruction
//! takes, and a panel's two 256-bit vectors of a group sit side by side, one 512-bit load: a
//! full-width `vpdpbusd` does a whole panel's group for one row, twice the work of the 256-bit
//! form per instruction (on Intel cores with two 512-bit units, twice the throughput; on Zen 4,
//! which splits it in two, the same). Its sums are exact (there is no i16 stage), so with the
//! pair bound of the weight codes it gives the same bits as the other kernels, and a vector does
//! not depend on the CPU.
//!
//! `pulp`, which dispatches the other kernels without `unsafe`, wraps no VNNI instruction. So
//! this file holds the crate's one `unsafe`: the call into a `#[target_feature]` function, made
//! only through [`Vnni`], which exists only once the CPU has reported every feature it enables.

use core::arch::x86_64::{__m512i, _mm512_dpbusd_epi32, _mm512_set1_epi32, _mm512_setzero_si512};

use pulp::bytemuck::{cast, cast_slice};

use super::{LANES, PANEL, QuantRows, QuantWeights, VECS, store_sums};

/// Rows per micro-tile: 8 rows × 2 panels = 16 accumulators, half of AVX-512's 32 registers,
/// so each weight load serves eight rows and each broadcast code two panels.
const TILE_ROWS: usize = 8;
/// Panels per micro-tile: a group of a panel (16 outputs × 4 inputs) is one 512-bit vector.
const TILE_PANELS: usize = 2;

/// Proof that this CPU runs AVX-512 VNNI (and AVX2, which the rest of the function is compiled
/// for).
#[derive(Clone, Copy, Debug)]
pub(super) struct Vnni(());

impl Vnni {
    pub(super) fn detect() -> Option<Vnni> {
        let all = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vnni");
        all.then_some(Vnni(()))
    }

    /// `out = quantise(x) · wᵀ`, dequantised, as [`super::linear`].
    pub(super) fn linear(self, x: &[f32], inputs: usize, w: &QuantWeights, out: &mut [f32]) {
        #[allow(unsafe_code)]
        // SAFETY: a `Vnni` is only made by `detect`, after the CPU reported every feature
        // `linear_vnni` is compiled with.
        unsafe {
            linear_vnni(x, inputs, w, out)
        }
    }
}

#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
fn linear_vnni(x: &[f32], inputs: usize, w: &QuantWeights, out: &mut [f32]) {
    let a = &QuantRows::new(x, inputs, w.groups);
    let rows = a.rows();
    // Tile-outer: a tile's codes (8 rows, at most 12 KB for K = 1536) stay in L1 while the
    // panels stream past them from L2 (a layer's weights, 147-590 KB, fit there), and a tile's
    // row slices are taken once rather than once per panel.
    let panels = w.n.div_ceil(PANEL);
    // One buffer for every tile's interleaved codes, not an allocation per tile.
    let codes = &mut Vec::with_capacity(a.groups * TILE_ROWS);
    let mut r = 0;
    while r + TILE_ROWS <= rows {
        tile::<TILE_ROWS>(a, r, w, panels, codes, out);
        r += TILE_ROWS;
    }
    match rows - r {
        7 => tile::<7>(a, r, w, panels, codes, out),
        6 => tile::<6>(a, r, w, panels, codes, out),
        5 => tile::<5>(a, r, w, panels, codes, out),
        4 => tile::<4>(a, r, w, panels, codes, out),
        3 => tile::<3>(a, r, w, panels, codes, out),
        2 => tile::<2>(a, r, w, panels, codes, out),
        1 => tile::<1>(a, r, w, panels, codes, out),
        _ => {}
    }
}

/// Rows `row0 .. row0 + M` of the product, every panel, written to `out`.
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
#[inline]
fn tile<const M: usize>(
    a: &QuantRows,
    row0: usize,
    w: &QuantWeights,
    panels: usize,
    codes: &mut Vec<[u8; 4]>,
    out: &mut [f32],
) {
    let groups = a.groups;
    // The tile's codes interleaved, group-major (`[g][m]`): the kernel reads them through one
    // pointer instead of M, which would not all fit in registers beside the loop's own.
    // Indexed stores into a sized buffer rather than pushes: a push's capacity check per code
    // kept this loop from unrolling (~3% of an int8 pass).
    let rows: [&[[u8; 4]]; M] =
        std::array::from_fn(|m| &a.codes[(row0 + m) * groups..(row0 + m + 1) * groups]);
    codes.clear();
    codes.resize(groups * M, [0; 4]);
    for (g, quads) in codes.chunks_exact_mut(M).enumerate() {
        for (quad, row) in quads.iter_mut().zip(&rows) {
            *quad = row[g];
        }
    }
    let mut p = 0;
    while p + TILE_PANELS <= panels {
        panel_tile::<M, TILE_PANELS>(codes, a, row0, w, p, out);
        p += TILE_PANELS;
    }
    if p < panels {
        panel_tile::<M, 1>(codes, a, row0, w, p, out);
    }
}

/// Panels `p .. p + P` (16 outputs each) of [`tile`]; `codes` is the tile's, interleaved.
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
#[inline]
fn panel_tile<const M: usize, const P: usize>(
    codes: &[[u8; 4]],
    a: &QuantRows,
    row0: usize,
    w: &QuantWeights,
    p: usize,
    out: &mut [f32],
) {
    let mut acc: [[__m512i; P]; M] = [[_mm512_setzero_si512(); P]; M];
    let groups = codes.len() / M;
    // Exactly `groups` pairs per panel, so the loads below need no bounds checks.
    let weights: [&[[[i8; 32]; VECS]]; P] =
        std::array::from_fn(|i| &cast_slice(w.panel(p + i))[..groups]);
    for (g, quads) in codes.chunks_exact(M).enumerate() {
        // A panel's group is its two 256-bit vectors, adjacent: one 512-bit load whose lane
        // `8v + j` is output `16p + 8v + j`, the order `store_sums` reads.
        let wv: [__m512i; P] = std::array::from_fn(|i| cast(weights[i][g]));
        for m in 0..M {
            // Four codes as one i32, broadcast: every lane gets the same four bytes, in order.
            let quad = _mm512_set1_epi32(cast(quads[m]));
            for i in 0..P {
                acc[m][i] = _mm512_dpbusd_epi32(acc[m][i], quad, wv[i]);
            }
        }
    }
    let sums: [[[[i32; LANES]; VECS]; M]; P] =
        std::array::from_fn(|i| std::array::from_fn(|m| cast(acc[m][i])));
    for (i, sums) in sums.iter().enumerate() {
        store_sums(sums, a, row0, w, p + i, out);
    }
}
