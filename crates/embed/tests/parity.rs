//! Parity with sentence-transformers on the shared reference set: every text must reach cosine
//! >= 0.9999 embedded alone and inside mixed-length batches of several sizes.

mod common;

use common::{model_dir, root};

use rag_embed::{Embedder, EmbedderConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    max_seq_length: usize,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    embedding: Vec<f32>,
    n_tokens_with_special: usize,
    input_ids_used: Vec<u32>,
}

fn reference() -> Reference {
    let path = root().join("../shared/reference/minilm_reference.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("reference JSON")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn check(label: &str, reference: &Reference, got: &[Vec<f32>]) -> f32 {
    let mut min = f32::INFINITY;
    for (item, v) in reference.items.iter().zip(got) {
        let c = cosine(&item.embedding, v);
        assert!(
            c >= 0.9999,
            "{label}: cosine {c} for {:?}",
            item.text.chars().take(60).collect::<String>()
        );
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{label}: norm {norm}");
        min = min.min(c);
    }
    eprintln!("{label}: min cosine {min:.7}");
    min
}

#[test]
fn matches_sentence_transformers() {
    let Some(dir) = model_dir() else { return };
    let reference = reference();
    let embedder = Embedder::load(&dir, EmbedderConfig::default()).unwrap();
    assert_eq!(embedder.max_seq_len(), reference.max_seq_length);
    assert_eq!(embedder.dim(), reference.items[0].embedding.len());

    for item in &reference.items {
        assert_eq!(
            embedder.document_token_ids(&item.text).unwrap(),
            item.input_ids_used,
            "token ids for {:?}",
            item.text
        );
        assert_eq!(
            embedder.count_tokens(&item.text),
            item.n_tokens_with_special
        );
    }

    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();

    let single: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| embedder.embed_documents(&[t]).unwrap().remove(0))
        .collect();
    let mut min = check("single", &reference, &single);

    let queries: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| embedder.embed_query(t).unwrap())
        .collect();
    min = min.min(check("query path", &reference, &queries));

    for batch_size in [3, 7, 16, 64] {
        let config = EmbedderConfig {
            batch_size,
            ..EmbedderConfig::default()
        };
        let batched = Embedder::load(&dir, config).unwrap();
        let got = batched.embed_documents(&texts).unwrap();
        min = min.min(check(
            &format!("all 24, batch {batch_size}"),
            &reference,
            &got,
        ));
        for (a, b) in single.iter().zip(&got) {
            let diff = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max);
            assert!(
                diff < 1e-5,
                "batch {batch_size}: differs from single by {diff}"
            );
        }
    }

    // Each text next to the longest one, so it is padded from its own length to 256.
    let long = texts.iter().max_by_key(|t| t.len()).unwrap();
    let padded: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| {
            embedder
                .embed_documents(&[long, t, "short"])
                .unwrap()
                .remove(1)
        })
        .collect();
    min = min.min(check("padded next to the longest", &reference, &padded));

    // Reversed input order: results must still line up with inputs.
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    let mut got = embedder.embed_documents(&reversed).unwrap();
    got.reverse();
    min = min.min(check("reversed input", &reference, &got));

    eprintln!("MIN COSINE over all runs: {min:.7}");
}

#[test]
fn empty_input_gives_no_vectors() {
    let Some(dir) = model_dir() else { return };
    let embedder = Embedder::load(&dir, EmbedderConfig::default()).unwrap();
    assert!(embedder.embed_documents(&[]).unwrap().is_empty());
}

#[test]
fn shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Embedder>();

    let Some(dir) = model_dir() else { return };
    let embedder = std::sync::Arc::new(Embedder::load(&dir, EmbedderConfig::default()).unwrap());
    let expected = embedder.embed_query("concurrent use").unwrap();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let e = embedder.clone();
            std::thread::spawn(move || e.embed_query("concurrent use").unwrap())
        })
        .collect();
    for h in handles {
        let got = h.join().unwrap();
        let diff = got
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-6);
    }
}
