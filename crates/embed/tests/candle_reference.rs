//! candle-transformers' BERT is the reference the fast path is held to: the same token ids
//! through `candle_transformers::models::bert::BertModel`, pooled with a masked mean (the
//! Candle example pools over padding too, candle#380, which would make a vector depend on its
//! batch) and L2-normalised, must give the fast f32 path's vectors; the int8 path must stay
//! within its measured bound of them.

mod common;

use common::{model_dir, root};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use rag_embed::{Embedder, EmbedderConfig, Precision};
use serde::Deserialize;

/// Same bound as `tests/int8.rs`, which measures it on a larger set.
const INT8_MIN_COSINE: f32 = 0.99;

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Candle's BERT over `batch` (padded to its longest with id 0 and masked), masked mean
/// pooling, L2 normalisation.
fn candle_embed(model: &BertModel, batch: &[Vec<u32>]) -> Vec<Vec<f32>> {
    let longest = batch.iter().map(Vec::len).max().unwrap();
    let mut ids = Vec::new();
    let mut mask = Vec::new();
    for seq in batch {
        for i in 0..longest {
            ids.push(seq.get(i).copied().unwrap_or(0));
            mask.push(u32::from(i < seq.len()));
        }
    }
    let dev = Device::Cpu;
    let ids = Tensor::from_vec(ids, (batch.len(), longest), &dev).unwrap();
    let mask = Tensor::from_vec(mask, (batch.len(), longest), &dev).unwrap();
    let types = ids.zeros_like().unwrap();
    let hidden = model.forward(&ids, &types, Some(&mask)).unwrap();
    let mask = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
    let summed = hidden.broadcast_mul(&mask).unwrap().sum(1).unwrap();
    let counts = mask.sum(1).unwrap();
    let mean = summed.broadcast_div(&counts).unwrap();
    let norm = mean.sqr().unwrap().sum_keepdim(1).unwrap().sqrt().unwrap();
    mean.broadcast_div(&norm).unwrap().to_vec2::<f32>().unwrap()
}

fn report(label: &str, want: &[Vec<f32>], got: &[Vec<f32>]) -> (f32, f32) {
    let cosines: Vec<f32> = want.iter().zip(got).map(|(a, b)| cosine(a, b)).collect();
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    eprintln!(
        "{label}: min cosine {min:.7}, mean {mean:.7} over {}",
        cosines.len()
    );
    (min, mean)
}

#[test]
fn fast_paths_match_candle_transformers_bert() {
    let Some(dir) = model_dir() else { return };
    let path = root().join("../shared/reference/minilm_reference.json");
    let reference: Reference =
        serde_json::from_slice(&std::fs::read(&path).expect("reference file")).unwrap();
    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();

    let f32 = Embedder::load(&dir, EmbedderConfig::default()).unwrap();
    let int8 = Embedder::load(
        &dir,
        EmbedderConfig {
            precision: Precision::Int8,
            ..EmbedderConfig::default()
        },
    )
    .unwrap();

    let config: Config =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
    let model = BertModel::load(vb, &config).unwrap();

    // Same ids for both (the fast path's tokenization is checked against sentence-transformers
    // in tests/parity.rs). Batches of 5 in input order mix lengths, so padding is exercised.
    let ids: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| f32.document_token_ids(t).unwrap())
        .collect();
    let want: Vec<Vec<f32>> = ids
        .chunks(5)
        .flat_map(|b| candle_embed(&model, b))
        .collect();

    let fast = f32.embed_documents(&texts).unwrap();
    let (min, _) = report("fast f32 vs candle-transformers", &want, &fast);
    assert!(
        min >= 0.9999,
        "fast f32 path drifted from candle's BERT: {min}"
    );

    let quantised = int8.embed_documents(&texts).unwrap();
    let (min, _) = report("int8 vs candle-transformers", &want, &quantised);
    assert!(min >= INT8_MIN_COSINE, "int8 path: {min}");
}
