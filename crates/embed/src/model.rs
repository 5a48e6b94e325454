//! The BERT encoder forward pass and pooling.
//!
//! Written against candle's tensors instead of `candle_transformers::models::bert` so that:
//! - a batch is packed without padding: every dense layer runs on exactly the real tokens, and
//!   attention runs per sequence (no mask, no padded rows; a vector cannot depend on its batch);
//! - Q, K and V come from one fused matmul, with the 1/sqrt(d) score scale folded into Q;
//! - bias, GELU, residual and layer norm are fused, in place, vectorised kernels
//!   ([`crate::kernels`]) instead of a chain of allocating element-wise tensor ops.
//!
//! Matrix products are candle's (the `gemm` crate), run on the caller's rayon pool, except a
//! query's f32 products, which run in [`crate::few_rows`] (built for a dozen rows); with
//! [`Precision::Int8`] the four linear layers of each block run in int8 instead
//! ([`crate::qlinear`]) while attention scores, softmax, layer norm, GELU and pooling stay f32.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use candle_core::{
    CpuStorage, DType, Device, IndexOp, InplaceOp1, InplaceOp2, Layout, Storage, Tensor,
};
use rayon::prelude::*;

use crate::config::{ModelSpec, Pooling};
use crate::few_rows::{self, PanelWeights};
use crate::kernels;
use crate::qlinear::QuantLinear;
use crate::{EmbedError, Precision};

pub(crate) struct Bert {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    emb_ln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    vocab: usize,
    eps: f32,
    pooling: Pooling,
}

struct Layer {
    /// Q (pre-scaled), K, V outputs side by side.
    qkv_w: Linear,
    qkv_b: Vec<f32>,
    attn_out_w: Linear,
    attn_out_b: Vec<f32>,
    ln1: (Vec<f32>, Vec<f32>),
    inter_w: Linear,
    inter_b: Vec<f32>,
    out_w: Linear,
    out_b: Vec<f32>,
    ln2: (Vec<f32>, Vec<f32>),
}

/// What a forward pass embeds, which decides its [`Kernels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Documents always take the batch kernels: a document's vector is the same alone or
    /// batched.
    Documents,
    /// One query, which takes [`few_rows`] when it is short.
    Query,
}

/// The kernels one forward pass runs, chosen once per pass from its [`Pass`] and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernels {
    /// candle's GEMM and per-sequence attention.
    Batch,
    /// One short query: [`few_rows`] for the f32 products and the attention.
    FewRows,
}

/// A linear layer's weight (without bias), in the precision the embedder runs.
enum Linear {
    /// `weight`: transposed to a contiguous (in, out) matmul operand. `panels`: the same,
    /// packed for queries on the first one (so an embedder that only syncs never holds it).
    F32 {
        weight: Tensor,
        panels: OnceLock<PanelWeights>,
    },
    Int8(QuantLinear),
}

impl Linear {
    /// `x` (tokens, in) times the weight: (tokens, out).
    fn forward(&self, x: &Tensor, kernels: Kernels) -> Result<Tensor, EmbedError> {
        match self {
            Linear::F32 { weight, panels } if kernels == Kernels::FewRows => {
                let rows = x.dims2()?.0;
                let (inputs, outputs) = weight.dims2()?;
                let panels = match panels.get() {
                    Some(panels) => panels,
                    None => {
                        let packed = with_f32(weight, |w| PanelWeights::new(w, inputs, outputs))?;
                        panels.get_or_init(|| packed)
                    }
                };
                let out = with_f32(x, |x| panels.matmul(x))?;
                Ok(Tensor::from_vec(out, (rows, outputs), &Device::Cpu)?)
            }
            Linear::F32 { weight, .. } => Ok(x.matmul(weight)?),
            Linear::Int8(q) => {
                let rows = x.dims2()?.0;
                let out = with_f32(x, |data| q.forward(data))?;
                Ok(Tensor::from_vec(out, (rows, q.outputs()), &Device::Cpu)?)
            }
        }
    }
}

/// Named tensors of a safetensors file, with the path for error messages. Each tensor is taken
/// out when the model copies it into its own layout, so the file's tensors and the model are
/// never both whole in memory (they were the peak of a sync that embeds one chunk).
struct Weights<'a> {
    tensors: RefCell<HashMap<String, Tensor>>,
    prefix: &'static str,
    path: &'a Path,
}

impl Weights<'_> {
    fn err(&self, message: String) -> EmbedError {
        EmbedError::Weights {
            path: self.path.to_path_buf(),
            message,
        }
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .tensors
            .borrow_mut()
            .remove(&full)
            .ok_or_else(|| self.err(format!("tensor {full} is missing")))?;
        if t.dims() != shape {
            return Err(self.err(format!(
                "tensor {full} has shape {:?}, config.json implies {shape:?}",
                t.dims()
            )));
        }
        t.to_dtype(DType::F32)
            .map_err(|e| self.err(format!("tensor {full}: {e}")))
    }

    fn vec(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let t = self.get(name, shape)?;
        t.flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| self.err(format!("tensor {name}: {e}")))
    }

    /// A linear layer made of the weights `parts` (name, output rows, scale), stacked along the
    /// output dimension (that is how Q, K and V become one product), all with `inp` inputs.
    fn linear(
        &self,
        parts: &[(&str, usize, f64)],
        inp: usize,
        precision: Precision,
    ) -> Result<Linear, EmbedError> {
        let scaled = parts
            .iter()
            .map(|&(name, out, scale)| {
                let w = self.get(name, &[out, inp])?;
                let w = if scale == 1.0 {
                    Ok(w)
                } else {
                    w.affine(scale, 0.0)
                };
                w.map_err(|e| self.err(format!("tensor {name}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let name = parts.first().map_or("", |p| p.0);
        let stacked =
            Tensor::cat(&scaled, 0).map_err(|e| self.err(format!("tensor {name}: {e}")))?;
        match precision {
            Precision::F32 => stacked
                .t()
                .and_then(|t| t.contiguous())
                .map(|weight| Linear::F32 {
                    weight,
                    panels: OnceLock::new(),
                })
                .map_err(|e| self.err(format!("tensor {name}: {e}"))),
            Precision::Int8 => {
                let out = stacked.dim(0)?;
                let data = stacked
                    .flatten_all()
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(|e| self.err(format!("tensor {name}: {e}")))?;
                Ok(Linear::Int8(QuantLinear::new(&data, out, inp)))
            }
        }
    }
}

impl Bert {
    /// Builds the model from the safetensors file's `bytes`, which it drops as soon as they are
    /// parsed.
    pub(crate) fn load(
        spec: &ModelSpec,
        bytes: Vec<u8>,
        precision: Precision,
    ) -> Result<Bert, EmbedError> {
        let c = &spec.bert;
        let path = spec.weights.as_path();
        let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu).map_err(|e| {
            EmbedError::Weights {
                path: path.to_path_buf(),
                message: format!("not a valid safetensors file: {e}"),
            }
        })?;
        drop(bytes);
        // sentence-transformers saves a bare BertModel; checkpoints of BertFor* carry "bert.".
        let prefix = ["", "bert."]
            .into_iter()
            .find(|p| tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or_else(|| EmbedError::Weights {
                path: path.to_path_buf(),
                message: "no embeddings.word_embeddings.weight tensor: not a BERT checkpoint"
                    .into(),
            })?;
        let w = Weights {
            tensors: RefCell::new(tensors),
            prefix,
            path,
        };
        let (h, i) = (c.hidden_size, c.intermediate_size);
        let heads = c.num_attention_heads;
        let q_scale = 1.0 / ((h / heads) as f64).sqrt();
        let ln = |name: &str| -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
            Ok((
                w.vec(&format!("{name}.weight"), &[h])?,
                w.vec(&format!("{name}.bias"), &[h])?,
            ))
        };

        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for l in 0..c.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let att = format!("{p}.attention.self");
            let (query, key, value) = (
                format!("{att}.query.weight"),
                format!("{att}.key.weight"),
                format!("{att}.value.weight"),
            );
            let qkv_w = w.linear(
                &[(&query, h, q_scale), (&key, h, 1.0), (&value, h, 1.0)],
                h,
                precision,
            )?;
            let mut qkv_b = w.vec(&format!("{att}.query.bias"), &[h])?;
            qkv_b.iter_mut().for_each(|b| *b *= q_scale as f32);
            qkv_b.extend(w.vec(&format!("{att}.key.bias"), &[h])?);
            qkv_b.extend(w.vec(&format!("{att}.value.bias"), &[h])?);
            let linear = |name: String, out: usize, inp: usize| {
                w.linear(&[(&name, out, 1.0)], inp, precision)
            };
            layers.push(Layer {
                qkv_w,
                qkv_b,
                attn_out_w: linear(format!("{p}.attention.output.dense.weight"), h, h)?,
                attn_out_b: w.vec(&format!("{p}.attention.output.dense.bias"), &[h])?,
                ln1: ln(&format!("{p}.attention.output.LayerNorm"))?,
                inter_w: linear(format!("{p}.intermediate.dense.weight"), i, h)?,
                inter_b: w.vec(&format!("{p}.intermediate.dense.bias"), &[i])?,
                out_w: linear(format!("{p}.output.dense.weight"), h, i)?,
                out_b: w.vec(&format!("{p}.output.dense.bias"), &[h])?,
                ln2: ln(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let token_types = w.vec(
            "embeddings.token_type_embeddings.weight",
            &[c.type_vocab_size, h],
        )?;
        Ok(Bert {
            word: w.vec("embeddings.word_embeddings.weight", &[c.vocab_size, h])?,
            position: w.vec(
                "embeddings.position_embeddings.weight",
                &[c.max_position_embeddings, h],
            )?,
            token_type0: token_types[..h].to_vec(),
            emb_ln: ln("embeddings.LayerNorm")?,
            layers,
            hidden: h,
            heads,
            vocab: c.vocab_size,
            eps: c.layer_norm_eps as f32,
            pooling: spec.pooling,
        })
    }

    pub(crate) fn dim(&self) -> usize {
        self.hidden
    }

    /// Embeds one batch of token id sequences; returns pooled, L2-normalised vectors in the
    /// order given. Run it inside the rayon pool that should do the work.
    pub(crate) fn embed_batch(
        &self,
        batch: &[&[u32]],
        pass: Pass,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let h = self.hidden;
        // An empty id list cannot come from the tokenizer (it adds [CLS]/[SEP]); guard anyway.
        let spans: Vec<(usize, usize)> = batch
            .iter()
            .scan(0, |offset, ids| {
                let span = (*offset, ids.len().max(1));
                *offset += span.1;
                Some(span)
            })
            .collect();
        let total: usize = spans.iter().map(|s| s.1).sum();
        if total == 0 {
            return Ok(Vec::new());
        }
        let max_len = spans.iter().map(|s| s.1).max().unwrap_or(0);
        if max_len * h > self.position.len() {
            return Err(EmbedError::Inference(format!(
                "sequence of {max_len} tokens exceeds the model's position table"
            )));
        }

        let mut x = vec![0f32; total * h];
        for (ids, &(offset, _)) in batch.iter().zip(&spans) {
            for (pos, &id) in ids.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(EmbedError::Inference(format!(
                        "token id {id} outside the vocabulary of {}",
                        self.vocab
                    )));
                }
                let row = &mut x[(offset + pos) * h..(offset + pos + 1) * h];
                let word = &self.word[id * h..(id + 1) * h];
                let position = &self.position[pos * h..(pos + 1) * h];
                for (((r, w), p), t) in row
                    .iter_mut()
                    .zip(word)
                    .zip(position)
                    .zip(&self.token_type0)
                {
                    *r = w + p + t;
                }
            }
        }
        par_rows(&mut x, h, |rows| {
            kernels::layer_norm(rows, &self.emb_ln.0, &self.emb_ln.1, self.eps)
        });

        let kernels = match pass {
            Pass::Query if spans.len() == 1 && total <= few_rows::MAX_ROWS => Kernels::FewRows,
            _ => Kernels::Batch,
        };
        let mut x = Tensor::from_vec(x, (total, h), &Device::Cpu)?;
        for layer in &self.layers {
            x = self.layer_forward(layer, &x, &spans, kernels)?;
        }

        let pooling = self.pooling;
        with_f32(&x, |hidden| {
            spans
                .iter()
                .map(|&(offset, len)| pool(pooling, &hidden[offset * h..(offset + len) * h], h))
                .collect()
        })
    }

    fn layer_forward(
        &self,
        layer: &Layer,
        x: &Tensor,
        spans: &[(usize, usize)],
        kernels: Kernels,
    ) -> Result<Tensor, EmbedError> {
        let (total, h) = x.dims2()?;
        let heads = self.heads;
        let d = h / heads;

        let qkv = layer.qkv_w.forward(x, kernels)?;
        qkv.inplace_op1(&Bias {
            bias: &layer.qkv_b,
            gelu: false,
        })?;
        let context = if kernels == Kernels::FewRows {
            let context = with_f32(&qkv, |qkv| few_rows::attention(qkv, heads, d))?;
            Tensor::from_vec(context, (total, h), &Device::Cpu)?
        } else {
            batch_attention(&qkv, spans, heads, d)?
        };

        let attn = layer.attn_out_w.forward(&context, kernels)?;
        attn.inplace_op2(
            x,
            &ResidualNorm {
                bias: &layer.attn_out_b,
                gamma: &layer.ln1.0,
                beta: &layer.ln1.1,
                eps: self.eps,
            },
        )?;
        let inter = layer.inter_w.forward(&attn, kernels)?;
        inter.inplace_op1(&Bias {
            bias: &layer.inter_b,
            gelu: true,
        })?;
        let out = layer.out_w.forward(&inter, kernels)?;
        drop(inter);
        out.inplace_op2(
            &attn,
            &ResidualNorm {
                bias: &layer.out_b,
                gamma: &layer.ln2.0,
                beta: &layer.ln2.1,
                eps: self.eps,
            },
        )?;
        Ok(out)
    }
}

/// Attention of each sequence of a packed batch (`qkv`: tokens × 3·heads·d, Q pre-scaled): no
/// padding and no mask; sequences run in parallel.
fn batch_attention(
    qkv: &Tensor,
    spans: &[(usize, usize)],
    heads: usize,
    d: usize,
) -> Result<Tensor, EmbedError> {
    let total = qkv.dims2()?.0;
    let qkv = qkv.reshape((total, 3, heads, d))?;
    let contexts = spans
        .par_iter()
        .map(|&(offset, len)| {
            let s = qkv.narrow(0, offset, len)?;
            let q = s.i((.., 0))?.transpose(0, 1)?;
            let k = s.i((.., 1))?.transpose(0, 1)?;
            let v = s.i((.., 2))?.transpose(0, 1)?;
            let scores = q.matmul(&k.t()?)?;
            scores.inplace_op1(&Softmax)?;
            scores.matmul(&v)?.transpose(0, 1)
        })
        .collect::<candle_core::Result<Vec<_>>>()?;
    Ok(Tensor::cat(&contexts, 0)?.reshape((total, heads * d))?)
}

/// Runs `f` on the tensor's f32 data (contiguous tensors only).
fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R, EmbedError> {
    let (storage, layout) = t.storage_and_layout();
    match (&*storage, layout.contiguous_offsets()) {
        (Storage::Cpu(CpuStorage::F32(data)), Some((start, end))) => Ok(f(&data[start..end])),
        _ => Err(EmbedError::Inference(
            "expected a contiguous f32 CPU tensor".into(),
        )),
    }
}

fn f32_mut<'a>(storage: &'a mut CpuStorage, layout: &Layout) -> candle_core::Result<&'a mut [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(data), Some((start, end))) => Ok(&mut data[start..end]),
        _ => candle_core::bail!("expected a contiguous f32 tensor"),
    }
}

fn f32_ref<'a>(storage: &'a CpuStorage, layout: &Layout) -> candle_core::Result<&'a [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(data), Some((start, end))) => Ok(&data[start..end]),
        _ => candle_core::bail!("expected a contiguous f32 tensor"),
    }
}

/// Splits `x` (rows of `width`) into a few row blocks per thread and runs `f` on each in
/// parallel on the current rayon pool.
fn par_rows(x: &mut [f32], width: usize, f: impl Fn(&mut [f32]) + Sync + Send) {
    let rows = x.len() / width;
    let per_task = rows.div_ceil(rayon::current_num_threads() * 4).max(1);
    x.par_chunks_mut(per_task * width).for_each(f);
}

/// In place: x += bias, then GELU if asked.
struct Bias<'a> {
    bias: &'a [f32],
    gelu: bool,
}

impl InplaceOp1 for Bias<'_> {
    fn name(&self) -> &'static str {
        "rag-embed-bias"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let x = f32_mut(storage, layout)?;
        par_rows(x, self.bias.len(), |rows| {
            if self.gelu {
                kernels::add_bias_gelu(rows, self.bias)
            } else {
                kernels::add_bias(rows, self.bias)
            }
        });
        Ok(())
    }
}

/// In place: x = layer_norm(x + bias + residual).
struct ResidualNorm<'a> {
    bias: &'a [f32],
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
}

impl InplaceOp2 for ResidualNorm<'_> {
    fn name(&self) -> &'static str {
        "rag-embed-residual-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<()> {
        let x = f32_mut(s1, l1)?;
        let residual = f32_ref(s2, l2)?;
        if x.len() != residual.len() {
            candle_core::bail!("residual shape mismatch");
        }
        let h = self.bias.len();
        let rows = x.len() / h;
        let per_task = rows.div_ceil(rayon::current_num_threads() * 4).max(1) * h;
        x.par_chunks_mut(per_task)
            .zip(residual.par_chunks(per_task))
            .for_each(|(x, r)| {
                kernels::add_bias_residual_layer_norm(
                    x, self.bias, r, self.gamma, self.beta, self.eps,
                )
            });
        Ok(())
    }
}

/// In place softmax over the last dimension.
struct Softmax;

impl InplaceOp1 for Softmax {
    fn name(&self) -> &'static str {
        "rag-embed-softmax"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let n = *layout.dims().last().unwrap_or(&1);
        let x = f32_mut(storage, layout)?;
        kernels::softmax_rows(x, n);
        Ok(())
    }
}

/// Pools the real tokens' vectors (`rows`: n × h) and L2-normalises.
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
