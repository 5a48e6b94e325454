//! Broken model folders give errors that name the file, never panics.

use std::path::{Path, PathBuf};

use rag_embed::{EmbedError, Embedder, EmbedderConfig};

fn real_model() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2");
    dir.join("model.safetensors").is_file().then_some(dir)
}

/// A copy of the model folder in a temp dir; the weights are symlinked (90 MB).
fn model_copy() -> Option<(tempfile::TempDir, PathBuf)> {
    let src = real_model()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(src.join("model.safetensors"), dir.join("model.safetensors"))
        .unwrap();
    Some((tmp, dir))
}

fn load(dir: &Path) -> Result<Embedder, EmbedError> {
    Embedder::load(dir, EmbedderConfig::default())
}

fn assert_names(err: &EmbedError, file: &str) {
    let msg = err.to_string();
    assert!(msg.contains(file), "error {msg:?} should name {file}");
}

#[test]
fn missing_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let err = load(&tmp.path().join("nope")).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err:?}");
    assert_names(&err, "nope");
}

#[test]
fn missing_config() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::remove_file(dir.join("config.json")).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err:?}");
    assert_names(&err, "config.json");
}

#[test]
fn corrupt_config() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::write(dir.join("config.json"), "{ not json").unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::InvalidConfig { .. }), "{err:?}");
    assert_names(&err, "config.json");
}

#[test]
fn unsupported_architecture() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type": "xlm-roberta", "architectures": ["XLMRobertaModel"]}"#,
    )
    .unwrap();
    let err = load(&dir).unwrap_err();
    assert!(
        matches!(err, EmbedError::UnsupportedArchitecture { .. }),
        "{err:?}"
    );
    assert_names(&err, "config.json");
    assert_names(&err, "XLMRobertaModel");
}

#[test]
fn unsupported_activation() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let config = config.replace("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_new\"");
    std::fs::write(dir.join("config.json"), config).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(
        matches!(err, EmbedError::UnsupportedArchitecture { .. }),
        "{err:?}"
    );
    assert_names(&err, "config.json");
    assert_names(&err, "gelu_new");
}

#[test]
fn extra_dense_module_is_refused() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::write(
        dir.join("modules.json"),
        r#"[{"type": "sentence_transformers.models.Transformer"},
            {"type": "sentence_transformers.models.Pooling"},
            {"type": "sentence_transformers.models.Dense"}]"#,
    )
    .unwrap();
    let err = load(&dir).unwrap_err();
    assert!(
        matches!(err, EmbedError::UnsupportedArchitecture { .. }),
        "{err:?}"
    );
    assert_names(&err, "modules.json");
}

#[test]
fn missing_weights() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert_names(&err, "model.safetensors");
}

#[test]
fn corrupt_weights() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.join("model.safetensors"),
        b"\x08\x00\x00\x00\x00\x00\x00\x00garbage!",
    )
    .unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert_names(&err, "model.safetensors");
}

#[test]
fn truncated_weights() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("model.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert_names(&err, "model.safetensors");
}

#[test]
fn weights_not_matching_config() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let config = config.replace("\"hidden_size\": 384", "\"hidden_size\": 768");
    std::fs::write(dir.join("config.json"), config).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert_names(&err, "model.safetensors");
}

#[test]
fn missing_and_corrupt_tokenizer() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err:?}");
    assert_names(&err, "tokenizer.json");

    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Tokenizer { .. }), "{err:?}");
    assert_names(&err, "tokenizer.json");
}

#[test]
fn pooling_config() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let pooling = dir.join("1_Pooling/config.json");
    std::fs::write(
        &pooling,
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#,
    )
    .unwrap();
    let err = load(&dir).unwrap_err();
    assert!(
        matches!(err, EmbedError::UnsupportedArchitecture { .. }),
        "{err:?}"
    );
    assert_names(&err, "1_Pooling");

    std::fs::write(&pooling, r#"{"pooling_mode_cls_token": true}"#).unwrap();
    let cls = load(&dir).unwrap();
    assert_eq!(cls.fingerprint().pooling, "cls");
    let mean = load(&real_model().unwrap()).unwrap();
    let text = "CLS pooling takes the first token's vector";
    let a = cls.embed_documents(&[text]).unwrap().remove(0);
    let b = mean.embed_documents(&[text]).unwrap().remove(0);
    let dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!(
        dot < 0.999,
        "CLS and mean pooling should differ (dot {dot})"
    );
    // A CLS vector is batch-independent too.
    let batched = cls
        .embed_documents(&["x", text, "a much longer text than the other two"])
        .unwrap();
    let diff = a
        .iter()
        .zip(&batched[1])
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-5);
}

#[test]
fn invalid_settings() {
    let Some(dir) = real_model() else { return };
    for config in [
        EmbedderConfig {
            batch_size: 0,
            ..EmbedderConfig::default()
        },
        EmbedderConfig {
            threads: Some(0),
            ..EmbedderConfig::default()
        },
    ] {
        let err = Embedder::load(&dir, config).unwrap_err();
        assert!(matches!(err, EmbedError::InvalidSetting(_)), "{err:?}");
    }
}

/// `open` reads only the configuration and the weights hash; broken weights or tokenizer
/// surface on first use, as typed errors naming the file, and `load` reports them at once.
#[test]
fn open_defers_tokenizer_and_weights() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::remove_file(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();

    let embedder = Embedder::open(&dir, EmbedderConfig::default()).expect("open is lazy");
    let fp = embedder.fingerprint();
    assert_eq!(
        fp.weights_blake3,
        blake3::hash(&bytes[..bytes.len() / 3]).to_hex().to_string(),
        "the fingerprint names the file as it is"
    );
    assert_eq!((fp.dim, fp.max_seq_len), (384, 256));
    assert_eq!(embedder.dim(), 384);

    let err = embedder.preload_tokenizer().unwrap_err();
    assert!(matches!(err, EmbedError::Tokenizer { .. }), "{err:?}");
    assert_names(&err, "tokenizer.json");
    let err = embedder.embed_query("hello").unwrap_err();
    assert_names(&err, "tokenizer.json");

    std::fs::copy(
        real_model().unwrap().join("tokenizer.json"),
        dir.join("tokenizer.json"),
    )
    .unwrap();
    assert!(
        embedder.count_tokens("hello world") >= 4,
        "tokenizer retried after a fix"
    );
    let err = embedder.embed_documents(&["hello"]).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert_names(&err, "model.safetensors");
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
}

/// Weights replaced after `open` are refused instead of producing vectors filed under the
/// fingerprint of the old file; a new `open` sees the new file.
#[test]
fn weights_changed_after_open_are_refused() {
    let Some((_tmp, dir)) = model_copy() else {
        return;
    };
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    let embedder = Embedder::open(&dir, EmbedderConfig::default()).unwrap();
    let real = embedder.fingerprint().weights_blake3.clone();
    assert_eq!(real, blake3::hash(&bytes).to_hex().to_string());

    std::fs::remove_file(&weights).unwrap();
    let mut changed = bytes.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1; // a different file of the same size
    std::fs::write(&weights, &changed).unwrap();
    let err = embedder.embed_query("hello").unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err:?}");
    assert!(err.to_string().contains("changed"), "{err}");

    let reopened = Embedder::open(&dir, EmbedderConfig::default()).unwrap();
    assert_ne!(reopened.fingerprint().weights_blake3, real);
    assert_eq!(
        reopened.fingerprint().weights_blake3,
        blake3::hash(&changed).to_hex().to_string()
    );
    // The same unchanged file opened again gets the same (cached) hash.
    let again = Embedder::open(&dir, EmbedderConfig::default()).unwrap();
    assert_eq!(again.fingerprint(), reopened.fingerprint());
}
