//! The fingerprint identifies the vector space: stable across loads, sensitive to every field.

use std::path::{Path, PathBuf};

use rag_embed::{Embedder, EmbedderConfig, ModelFingerprint, Precision};

fn real_model() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2");
    dir.join("model.safetensors").is_file().then_some(dir)
}

#[test]
fn fingerprint_is_stable_and_complete() {
    let Some(dir) = real_model() else { return };
    let a = Embedder::load(&dir, EmbedderConfig::default()).unwrap();
    let b = Embedder::load(
        &dir,
        EmbedderConfig {
            batch_size: 3,
            threads: Some(1),
            ..EmbedderConfig::default()
        },
    )
    .unwrap();
    let fp = a.fingerprint();
    // Batch size and threads do not change the vectors, so they are not in the fingerprint.
    assert_eq!(fp, b.fingerprint());
    assert_eq!(fp.id(), b.fingerprint().id());

    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    assert_eq!(
        fp.weights_blake3,
        blake3::hash(&weights).to_hex().to_string()
    );
    assert_eq!(fp.name, "all-MiniLM-L6-v2");
    assert_eq!((fp.dim, fp.max_seq_len, fp.normalize), (384, 256, true));
    assert_eq!(fp.pooling, "mean");
    assert_eq!(
        fp.id(),
        format!(
            "all-MiniLM-L6-v2@{};dim=384;pool=mean;norm=1;max=256",
            &fp.weights_blake3[..16]
        )
    );

    // Serde round trip, and the prefixes stay out of the JSON when unset.
    let json = serde_json::to_string(fp).unwrap();
    assert!(!json.contains("prefix"));
    // f32 fingerprints serialise exactly as before precision existed.
    assert!(!json.contains("precision"));
    let back: ModelFingerprint = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, fp);

    // Every field moves the id.
    type Change = Box<dyn Fn(&mut ModelFingerprint)>;
    let variants: Vec<Change> = vec![
        Box::new(|f| f.name.push('x')),
        Box::new(|f| f.weights_blake3 = "0".repeat(64)),
        Box::new(|f| f.dim += 1),
        Box::new(|f| f.pooling = "cls".into()),
        Box::new(|f| f.normalize = false),
        Box::new(|f| f.max_seq_len = 128),
        Box::new(|f| f.query_prefix = "query: ".into()),
        Box::new(|f| f.passage_prefix = "passage: ".into()),
        Box::new(|f| f.precision = Precision::Int8),
    ];
    for change in variants {
        let mut f = fp.clone();
        change(&mut f);
        assert_ne!(f.id(), fp.id());
        assert_ne!(&f, fp);
    }
}

#[test]
fn prefixes_are_applied_and_fingerprinted() {
    let Some(dir) = real_model() else { return };
    let plain = Embedder::load(&dir, EmbedderConfig::default()).unwrap();
    let e5 = Embedder::load(
        &dir,
        EmbedderConfig {
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
            ..EmbedderConfig::default()
        },
    )
    .unwrap();
    assert_ne!(plain.fingerprint().id(), e5.fingerprint().id());
    assert!(e5.fingerprint().id().contains("query_prefix=\"query: \""));

    let text = "how do I enable the dashboard";
    // The query path prepends the query prefix, the document path the passage prefix.
    let q = e5.embed_query(text).unwrap();
    let want_q = plain.embed_query(&format!("query: {text}")).unwrap();
    let d = e5.embed_documents(&[text]).unwrap().remove(0);
    let want_d = plain
        .embed_documents(&[&format!("passage: {text}")])
        .unwrap()
        .remove(0);
    let max_diff = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max)
    };
    assert!(max_diff(&q, &want_q) < 1e-6);
    assert!(max_diff(&d, &want_d) < 1e-6);
    assert!(max_diff(&q, &d) > 1e-3);
    // count_tokens counts what the document path embeds: passage prefix included.
    assert_eq!(
        e5.count_tokens(text),
        plain.count_tokens(&format!("passage: {text}"))
    );
}

#[test]
fn threads_setting() {
    let Some(dir) = real_model() else { return };
    let one = Embedder::load(
        &dir,
        EmbedderConfig {
            threads: Some(1),
            ..EmbedderConfig::default()
        },
    )
    .unwrap();
    let two = Embedder::load(
        &dir,
        EmbedderConfig {
            threads: Some(2),
            ..EmbedderConfig::default()
        },
    )
    .unwrap();
    assert_eq!(one.threads(), 1);
    assert_eq!(two.threads(), 2);
    let texts = [
        "threads do not change vectors",
        "neither does the batch it is in",
    ];
    let a = one.embed_documents(&texts).unwrap();
    let b = two.embed_documents(&texts).unwrap();
    for (x, y) in a.iter().zip(&b) {
        let diff = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-5);
    }
}

#[test]
fn precision_is_fingerprinted_and_f32_ids_are_unchanged() {
    let Some(dir) = real_model() else { return };
    let f32 = Embedder::open(&dir, EmbedderConfig::default()).unwrap();
    let int8 = Embedder::open(
        &dir,
        EmbedderConfig {
            precision: Precision::Int8,
            ..EmbedderConfig::default()
        },
    )
    .unwrap();
    let (a, b) = (f32.fingerprint(), int8.fingerprint());
    assert_eq!(a.precision, Precision::F32);
    assert_eq!(b.precision, Precision::Int8);
    // An index stores the id and refuses a different one: the two must never match.
    assert_ne!(a.id(), b.id());
    assert_eq!(b.id(), format!("{};precision=int8", a.id()));
    assert!(!a.id().contains("precision"));

    let json = serde_json::to_string(b).unwrap();
    assert!(json.contains(r#""precision":"int8""#), "{json}");
    let back: ModelFingerprint = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, b);
    // A fingerprint stored before precision existed reads back as f32.
    let old = serde_json::to_string(a).unwrap();
    let back: ModelFingerprint = serde_json::from_str(&old).unwrap();
    assert_eq!(back.precision, Precision::F32);
    let bad = json.replace("int8", "int4");
    assert!(serde_json::from_str::<ModelFingerprint>(&bad).is_err());
}
