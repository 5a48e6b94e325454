//! A linear layer run in int8: weights quantised once at load, symmetric per output channel;
//! activations quantised per token (row) on every call, over the row's `[min, max]`. The product runs in integers ([`crate::int8_gemm`]); bias and everything after
//! it stay in f32 with the caller.
//!
//! Per-token scales follow the activations' real spread: BERT's hidden states have a few large
//! outlier dimensions whose size differs from token to token, and one scale for the whole
//! tensor would spend most of the 8 bits on them.

use rayon::prelude::*;

use crate::int8_gemm::{self, QuantWeights};

/// Rows per parallel task: enough to amortise the weight stream from L2, few enough that a
/// 512-token pass still splits over every thread.
const MAX_TASK_ROWS: usize = 64;

pub(crate) struct QuantLinear {
    weights: QuantWeights,
    inputs: usize,
}

impl QuantLinear {
    /// Quantises a `(outputs, inputs)` row-major f32 weight matrix (PyTorch's layout).
    pub(crate) fn new(weight: &[f32], outputs: usize, inputs: usize) -> QuantLinear {
        debug_assert_eq!(weight.len(), outputs * inputs);
        QuantLinear {
            weights: QuantWeights::new(weight, outputs, inputs),
            inputs,
        }
    }

    pub(crate) fn outputs(&self) -> usize {
        self.weights.outputs()
    }

    /// `x` (rows × inputs) times the weights transposed, without bias: rows × outputs. Splits
    /// the rows over the current rayon pool.
    pub(crate) fn forward(&self, x: &[f32]) -> Vec<f32> {
        let outputs = self.outputs();
        let rows = x.len() / self.inputs;
        let mut out = vec![0f32; rows * outputs];
        if rows == 0 {
            return out;
        }
        let per_task = rows
            .div_ceil(rayon::current_num_threads() * 2)
            .clamp(1, MAX_TASK_ROWS);
        out.par_chunks_mut(per_task * outputs)
            .zip(x.par_chunks(per_task * self.inputs))
            .for_each(|(out, x)| int8_gemm::linear(x, self.inputs, &self.weights, out));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_approximates_the_f32_product() {
        let (outputs, inputs, rows) = (40, 70, 9);
        let w: Vec<f32> = (0..outputs * inputs)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        let x: Vec<f32> = (0..rows * inputs)
            .map(|i| ((i * 104_729) % 997) as f32 / 400.0 - 1.2)
            .collect();
        let layer = QuantLinear::new(&w, outputs, inputs);
        let got = layer.forward(&x);
        assert_eq!(got.len(), rows * outputs);
        let mut worst = 0f32;
        let mut scale = 0f32;
        for r in 0..rows {
            for c in 0..outputs {
                let want: f32 = (0..inputs)
                    .map(|k| x[r * inputs + k] * w[c * inputs + k])
                    .sum();
                worst = worst.max((got[r * outputs + c] - want).abs());
                scale = scale.max(want.abs());
            }
        }
        // Two 8-bit roundings per product: the error is around 1% of the output range.
        assert!(worst < 0.02 * scale, "worst {worst} of {scale}");
        assert!(layer.forward(&[]).is_empty());
    }
}
