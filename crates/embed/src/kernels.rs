//! Element-wise kernels of the forward pass, on plain slices.
//!
//! Each public function runs its loop through `pulp::Arch::dispatch`, which compiles the loop
//! body for AVX2+FMA and AVX-512 and picks one at run time: the crate itself is built for
//! baseline x86-64 (SSE2), where these loops would be 4 lanes wide at best. No `unsafe`.
//!
//! `exp` and `erf` are our own polynomial versions rather than libm's, because libm calls do not
//! vectorise. Their errors (about 2e-7 absolute) are far below the 1e-4 parity budget.

const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split in a part exact in few bits and a remainder (Cody–Waite), so x - n·ln2 stays exact.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
// 1.5 · 2^23: adding it rounds to an integer held in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// e^x for x in about [-87, 88]; relative error around 2 ulp.
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let t = x * LOG2E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor series to degree 6 on |r| <= ln2/2: truncation error below 2e-7 relative.
    let p = 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // The rounded integer n sits in the low bits of t; move it into the exponent field.
    let n_bits = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits());
    let scale = f32::from_bits((n_bits.wrapping_add(127)) << 23);
    p * scale
}

/// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), with our `exp`.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_8) * t - 0.284_496_72) * t
        + 0.254_829_6)
        * t;
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// Runs `$body` (a block over the captured variables) through pulp's run-time dispatch. The
/// body must live in a generic `with_simd`, not a closure: a closure body is compiled as its
/// own baseline-x86-64 function and never sees the AVX2/AVX-512 target features.
macro_rules! dispatch {
    ($name:ident { $($field:ident : $ty:ty),* $(,)? } $body:block) => {{
        struct $name<'a> { $($field: $ty,)* _life: std::marker::PhantomData<&'a ()> }
        impl pulp::WithSimd for $name<'_> {
            type Output = ();
            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, _simd: S) {
                let $name { $($field,)* .. } = self;
                $body
            }
        }
        pulp::Arch::new().dispatch($name { $($field,)* _life: std::marker::PhantomData })
    }};
}
pub(crate) use dispatch;

/// x += bias, row by row (`bias.len()` is the row width).
pub(crate) fn add_bias(x: &mut [f32], bias: &[f32]) {
    dispatch!(AddBias { x: &'a mut [f32], bias: &'a [f32] } {
        for row in x.chunks_exact_mut(bias.len()) {
            for (v, b) in row.iter_mut().zip(bias) {
                *v += b;
            }
        }
    })
}

/// x = gelu(x + bias) with the exact (erf) GELU that BERT uses.
pub(crate) fn add_bias_gelu(x: &mut [f32], bias: &[f32]) {
    dispatch!(AddBiasGelu { x: &'a mut [f32], bias: &'a [f32] } {
        for row in x.chunks_exact_mut(bias.len()) {
            for (v, b) in row.iter_mut().zip(bias) {
                let y = *v + b;
                *v = 0.5 * y * (1.0 + erf(y * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    })
}

/// x = layer_norm(x + bias + residual) · gamma + beta, row by row.
pub(crate) fn add_bias_residual_layer_norm(
    x: &mut [f32],
    bias: &[f32],
    residual: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    dispatch!(ResidualNorm {
        x: &'a mut [f32],
        bias: &'a [f32],
        residual: &'a [f32],
        gamma: &'a [f32],
        beta: &'a [f32],
        eps: f32,
    } {
        let h = bias.len();
        for (row, res) in x.chunks_exact_mut(h).zip(residual.chunks_exact(h)) {
            for ((v, b), r) in row.iter_mut().zip(bias).zip(res) {
                *v += b + r;
            }
            normalize_row(row, gamma, beta, eps);
        }
    })
}

/// Layer norm of each row in place.
pub(crate) fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    dispatch!(LayerNorm { x: &'a mut [f32], gamma: &'a [f32], beta: &'a [f32], eps: f32 } {
        for row in x.chunks_exact_mut(gamma.len()) {
            normalize_row(row, gamma, beta, eps);
        }
    })
}

#[inline(always)]
fn normalize_row(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let mut var_acc = [0f32; 16];
    let mut chunks = row.chunks_exact(16);
    for c in &mut chunks {
        for (a, v) in var_acc.iter_mut().zip(c) {
            let d = v - mean;
            *a += d * d;
        }
    }
    let mut var = var_acc.iter().sum::<f32>();
    for v in chunks.remainder() {
        var += (v - mean) * (v - mean);
    }
    let inv = 1.0 / (var / n + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// Sum with 16 independent accumulators, so the loop vectorises without reassociation flags.
#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = a.max(*v);
        }
    }
    let m = acc.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
    chunks.remainder().iter().fold(m, |m, v| m.max(*v))
}

/// Softmax of each row of width `n` in place.
pub(crate) fn softmax_rows(x: &mut [f32], n: usize) {
    dispatch!(Softmax { x: &'a mut [f32], n: usize } {
        for row in x.chunks_exact_mut(n) {
            let m = max(row);
            for v in row.iter_mut() {
                *v = exp(*v - m);
            }
            let inv = 1.0 / sum(row);
            for v in row.iter_mut() {
                *v *= inv;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let rel = ((exp(x) as f64 - want) / want).abs();
            worst = worst.max(rel);
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
    }

    #[test]
    fn erf_is_accurate() {
        let mut worst = 0f64;
        let mut x = -6.0f32;
        while x < 6.0 {
            // erf via the series-free identity is not in std; compare with a high-precision
            // f64 evaluation of the same integral by Simpson's rule.
            let want = erf_f64(x as f64);
            worst = worst.max((erf(x) as f64 - want).abs());
            x += 0.0131;
        }
        assert!(worst < 3e-7, "worst absolute error {worst}");
    }

    fn erf_f64(x: f64) -> f64 {
        let n = 2000;
        let h = x / n as f64;
        let f = |t: f64| (-t * t).exp();
        let mut s = f(0.0) + f(x);
        for i in 1..n {
            s += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn softmax_and_layer_norm() {
        let mut x = vec![1.0, 2.0, 3.0, 0.0, 0.0, 0.0];
        softmax_rows(&mut x, 3);
        let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|v| v.exp()).collect();
        let s: f64 = e.iter().sum();
        for (got, want) in x[..3].iter().zip(&e) {
            assert!((*got as f64 - want / s).abs() < 1e-6);
        }
        assert!(x[3..].iter().all(|v| (v - 1.0 / 3.0).abs() < 1e-6));

        let mut y: Vec<f32> = (0..40).map(|i| i as f32 * 0.5 - 3.0).collect();
        let g = vec![1.0; 20];
        let b = vec![0.0; 20];
        layer_norm(&mut y, &g, &b, 1e-12);
        for row in y.chunks(20) {
            let mean: f32 = row.iter().sum::<f32>() / 20.0;
            let var: f32 = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 20.0;
            assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4);
        }
    }
}
