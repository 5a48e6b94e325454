//! Finding the model and the index, and opening them, for every command alike.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use rag_index_core::{
    Embedder, EmbedderConfig, IndexConfig, OpenMode, Precision, RagIndex, StoreLocation,
};

/// Environment variable naming the index for commands other than `sync`.
pub const INDEX_ENV: &str = "RAG_INDEX_PATH";
/// Name of the default index directory inside the synced folder.
pub const DEFAULT_INDEX_DIR: &str = ".rag-index";

/// Where to look for `models/all-MiniLM-L6-v2`: next to the binary and its ancestors (a source
/// checkout's target/release/rag-index finds the checkout's models/), then the working directory
/// and its ancestors, then the checkout the binary was built from.
fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut push_ancestors = |start: &Path| {
        for dir in start.ancestors() {
            let candidate = dir.join("models");
            if candidate.is_dir() && !dirs.contains(&candidate) {
                dirs.push(candidate);
            }
        }
    };
    if let Ok(exe) = std::env::current_exe()
        && let Some(parent) = exe.parent()
    {
        push_ancestors(parent);
    }
    if let Ok(cwd) = std::env::current_dir() {
        push_ancestors(&cwd);
    }
    // A binary built from a checkout finds that checkout's models/ even when its target
    // directory lives elsewhere (CARGO_TARGET_DIR) and it runs from another folder.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    if checkout.is_dir() && !dirs.contains(&checkout) {
        dirs.push(checkout);
    }
    dirs
}

/// The `--precision` of this run (or `$RAG_INDEX_PRECISION`), set once at start.
static PRECISION_CHOICE: OnceLock<Option<Precision>> = OnceLock::new();

/// Records `--precision` for every model this run opens.
pub fn choose_precision(precision: Option<Precision>) {
    let _ = PRECISION_CHOICE.set(precision);
}

/// Opens the model (lazily: weights and tokenizer load on first use), in the `--precision`
/// chosen (f32 by default). The precision is part of the fingerprint, so an index built in the
/// other one is refused, never mixed.
pub fn load_embedder(model_dir: Option<&Path>) -> Result<Arc<Embedder>> {
    let dir = rag_index_core::resolve_model_dir(model_dir, &model_search_dirs())?;
    log::info!("model: {}", dir.display());
    let mut config = EmbedderConfig::default();
    if let Some(precision) = PRECISION_CHOICE.get().copied().flatten() {
        config.precision = precision;
    }
    let embedder = Embedder::open(&dir, config)
        .with_context(|| format!("cannot load the model from {}", dir.display()))?;
    Ok(Arc::new(embedder))
}

/// `--index`, then `$RAG_INDEX_PATH`, then `.rag-index` in the working directory or a parent.
pub fn find_index(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    if let Some(path) = std::env::var_os(INDEX_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    for dir in cwd.ancestors() {
        let candidate = dir.join(DEFAULT_INDEX_DIR);
        if candidate.join(rag_index_core::DB_FILE).is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "no index found: pass --index PATH, set {INDEX_ENV}, or run from a folder synced with `rag-index sync`"
    )
}

/// `--store` and `--collection` (or their environment variables), set once per run.
static STORE_CHOICE: OnceLock<(Option<String>, Option<String>)> = OnceLock::new();

/// Records the run's `--store` and `--collection`.
pub fn choose_store(store: Option<String>, collection: Option<String>) {
    let _ = STORE_CHOICE.set((store.filter(|s| !s.is_empty()), collection));
}

/// Where the index of this run lives: the PostgreSQL collection `--store` names, else the index
/// directory (`--index`, `$RAG_INDEX_PATH`, or found from the working directory). `synced`
/// is the folder a sync indexes, which names the collection when `--collection` is not given.
pub fn locate_index(index: Option<PathBuf>, synced: Option<&Path>) -> Result<StoreLocation> {
    let (store, collection) = STORE_CHOICE.get().cloned().unwrap_or_default();
    let Some(store) = store else {
        return Ok(match (index, synced) {
            (Some(dir), _) => StoreLocation::Dir(dir),
            (None, Some(folder)) => StoreLocation::Dir(folder.join(DEFAULT_INDEX_DIR)),
            (None, None) => StoreLocation::Dir(find_index(None)?),
        });
    };
    let named_by = match (&collection, synced) {
        (Some(_), _) => PathBuf::new(),
        (None, Some(folder)) => folder.join(DEFAULT_INDEX_DIR),
        (None, None) => bail!("--store needs --collection NAME (or $RAG_INDEX_COLLECTION)"),
    };
    Ok(StoreLocation::from_flag(
        Some(&store),
        &named_by,
        collection.as_deref(),
    )?)
}

/// Opens the index for reading (works while a sync runs).
pub fn open_for_reading(model_dir: Option<&Path>, index: Option<PathBuf>) -> Result<RagIndex> {
    let location = locate_index(index, None)?;
    let embedder = load_embedder(model_dir)?;
    RagIndex::open_at(
        &location,
        embedder,
        IndexConfig::default(),
        OpenMode::Reader,
    )
    .with_context(|| format!("cannot open index {location}"))
}

/// The configuration with an optional chunk-size override, and table row records on or off.
pub fn index_config(target_tokens: Option<usize>, table_records: bool) -> Result<IndexConfig> {
    let mut chunker = rag_index_core::ChunkerConfig {
        table_records,
        ..rag_index_core::ChunkerConfig::default()
    };
    if let Some(target) = target_tokens {
        chunker.target_tokens = target;
    }
    IndexConfig::builder()
        .chunker(chunker)
        .build()
        .context("--target-tokens")
}
