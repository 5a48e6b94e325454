//! The BERT forward pass and pooling.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::BertModel;

use crate::EmbedError;
use crate::config::{ModelSpec, Pooling};

pub(crate) struct Bert {
    model: BertModel,
    device: Device,
    pad_id: u32,
    hidden: usize,
    pooling: Pooling,
}

impl Bert {
    pub(crate) fn load(spec: &ModelSpec, weights: &[u8]) -> Result<Bert, EmbedError> {
        let device = Device::Cpu;
        let weights_err = |err: candle_core::Error| EmbedError::Weights {
            path: spec.weights.clone(),
            message: err.to_string(),
        };
        // f32 on purpose: candle's BERT masks attention with f32::MIN, which becomes -inf
        // (and NaN after softmax) in f16/bf16.
        let vb = VarBuilder::from_slice_safetensors(weights, DType::F32, &device)
            .map_err(weights_err)?;
        let model = BertModel::load(vb, &spec.bert).map_err(weights_err)?;
        Ok(Bert {
            model,
            device,
            pad_id: spec.bert.pad_token_id as u32,
            hidden: spec.bert.hidden_size,
            pooling: spec.pooling,
        })
    }

    pub(crate) fn dim(&self) -> usize {
        self.hidden
    }

    /// Embeds one batch of token id sequences, padded to the longest; returns pooled,
    /// L2-normalised vectors in the order given.
    pub(crate) fn embed_batch(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let b = batch.len();
        if b == 0 {
            return Ok(Vec::new());
        }
        let seq = batch.iter().map(|ids| ids.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![self.pad_id; b * seq];
        let mut mask = vec![0u32; b * seq];
        for (row, text) in batch.iter().enumerate() {
            ids[row * seq..row * seq + text.len()].copy_from_slice(text);
            mask[row * seq..row * seq + text.len()].fill(1);
        }
        let ids_t = Tensor::from_vec(ids, (b, seq), &self.device)?;
        let mask_t = Tensor::from_vec(mask, (b, seq), &self.device)?;
        let type_ids = ids_t.zeros_like()?;
        let hidden = self.model.forward(&ids_t, &type_ids, Some(&mask_t))?;
        let hidden = hidden.flatten_all()?.to_vec1::<f32>()?;
        let h = self.hidden;
        Ok(batch
            .iter()
            .enumerate()
            .map(|(row, text)| {
                let rows = &hidden[row * seq * h..(row * seq + text.len().max(1)) * h];
                pool(self.pooling, rows, h)
            })
            .collect())
    }
}

/// Pools the real tokens' vectors (`rows`: n × h, padding already excluded) and L2-normalises.
fn pool(pooling: Pooling, rows: &[f32], h: usize) -> Vec<f32> {
    let n = rows.len() / h;
    let mut out = vec![0f32; h];
    match pooling {
        Pooling::Cls => out.copy_from_slice(&rows[..h]),
        Pooling::Max => {
            out.fill(f32::NEG_INFINITY);
            for row in rows.chunks_exact(h) {
                for (o, &x) in out.iter_mut().zip(row) {
                    *o = o.max(x);
                }
            }
        }
        Pooling::Mean | Pooling::MeanSqrtLen => {
            for row in rows.chunks_exact(h) {
                for (o, &x) in out.iter_mut().zip(row) {
                    *o += x;
                }
            }
            let div = if pooling == Pooling::Mean {
                n as f32
            } else {
                (n as f32).sqrt()
            };
            out.iter_mut().for_each(|o| *o /= div);
        }
    }
    // Same epsilon as torch.nn.functional.normalize, which sentence-transformers uses.
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    out.iter_mut().for_each(|o| *o /= norm);
    out
}
