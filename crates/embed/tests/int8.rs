//! The int8 path against the f32 path on real texts: the shared reference set (whose
//! sentence-transformers vectors are known) plus paragraphs of the Traefik docs corpus, so the
//! bound is measured over a few hundred texts of every length up to the 256-token cap.

mod common;

use common::{model_dir, root};

use std::path::Path;

use rag_embed::{Embedder, EmbedderConfig, Precision};
use serde::Deserialize;

/// Lowest cosine to the f32 vector any text may have. Measured on these 324 texts: min 0.99256
/// (the empty text, [CLS][SEP] only: the fewer tokens, the less the mean pooling averages the
/// rounding away), mean 0.99856. The bound leaves a little room for other CPUs' f32 rounding
/// while failing on any real kernel bug (a wrong sign, offset or scale drops cosines far lower).
const MIN_COSINE: f32 = 0.99;
/// Lowest mean cosine over the set (measured 0.99856).
const MIN_MEAN_COSINE: f32 = 0.998;

#[derive(Deserialize)]
struct Reference {
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    embedding: Vec<f32>,
}

fn reference() -> Reference {
    let path = root().join("../shared/reference/minilm_reference.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("reference JSON")
}

/// Blank-line separated paragraphs of the first Markdown files of the Traefik docs, in a
/// fixed order; each capped at 1,500 bytes on a char boundary so some reach the token cap.
fn corpus_texts(limit: usize) -> Vec<String> {
    let dir = root().join("../shared/corpora/traefik/docs");
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut texts = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for para in text.split("\n\n").map(str::trim).filter(|p| p.len() > 40) {
            let mut end = para.len().min(1500);
            while !para.is_char_boundary(end) {
                end -= 1;
            }
            texts.push(para[..end].to_string());
            if texts.len() == limit {
                return texts;
            }
        }
    }
    texts
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn load(dir: &Path, precision: Precision) -> Embedder {
    let config = EmbedderConfig {
        precision,
        ..EmbedderConfig::default()
    };
    Embedder::load(dir, config).unwrap()
}

#[test]
fn int8_stays_close_to_f32() {
    let Some(dir) = model_dir() else { return };
    let reference = reference();
    let mut texts: Vec<String> = reference.items.iter().map(|i| i.text.clone()).collect();
    texts.extend(corpus_texts(300));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

    let f32 = load(&dir, Precision::F32);
    let int8 = load(&dir, Precision::Int8);
    let want = f32.embed_documents(&refs).unwrap();
    let got = int8.embed_documents(&refs).unwrap();

    let cosines: Vec<f32> = want.iter().zip(&got).map(|(a, b)| cosine(a, b)).collect();
    let (worst, worst_at) = cosines
        .iter()
        .enumerate()
        .map(|(i, &c)| (c, i))
        .fold((f32::INFINITY, 0), |m, x| if x.0 < m.0 { x } else { m });
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    let tokens: Vec<usize> = refs
        .iter()
        .map(|t| int8.document_token_ids(t).unwrap().len())
        .collect();
    eprintln!(
        "int8 vs f32 over {} texts ({} tokens, max {}): min cosine {worst:.5} \
         ({} tokens), mean {mean:.5}",
        refs.len(),
        tokens.iter().sum::<usize>(),
        tokens.iter().max().unwrap(),
        tokens[worst_at]
    );
    assert!(
        worst >= MIN_COSINE,
        "min cosine {worst} for {:?}",
        &refs[worst_at][..refs[worst_at].len().min(80)]
    );
    assert!(mean >= MIN_MEAN_COSINE, "mean cosine {mean}");

    // Against sentence-transformers itself, on the reference texts.
    let st_min = reference
        .items
        .iter()
        .zip(&got)
        .map(|(item, v)| cosine(&item.embedding, v))
        .fold(f32::INFINITY, f32::min);
    eprintln!("int8 vs sentence-transformers (reference set): min cosine {st_min:.5}");
    assert!(st_min >= MIN_COSINE);

    for v in &got {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn int8_vectors_do_not_depend_on_the_batch() {
    let Some(dir) = model_dir() else { return };
    let texts = corpus_texts(40);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let int8 = load(&dir, Precision::Int8);
    let batched = int8.embed_documents(&refs).unwrap();
    let single = EmbedderConfig {
        precision: Precision::Int8,
        batch_size: 1,
        threads: Some(1),
        ..EmbedderConfig::default()
    };
    let alone = Embedder::load(&dir, single).unwrap();
    for (text, b) in refs.iter().zip(&batched) {
        let a = alone.embed_documents(&[text]).unwrap().remove(0);
        let diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        // Activations are quantised per token, so batch-mates cannot change a text's scales.
        assert!(diff < 1e-5, "differs from its batched vector by {diff}");
    }
}
