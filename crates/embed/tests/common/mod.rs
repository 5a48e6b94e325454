//! What the embedder's integration tests share: where the workspace and the real model are.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real model fetched by `models/fetch-model.sh`, or `None` (with a note) when it is not
/// there, so `cargo test -p rag-embed` on a fresh clone says what to run.
pub fn model_dir() -> Option<PathBuf> {
    let dir = root().join("models/all-MiniLM-L6-v2");
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: {} has no model (run ./models/fetch-model.sh)",
            dir.display()
        );
        None
    }
}
