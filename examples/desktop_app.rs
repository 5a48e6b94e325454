//! How a desktop app embeds rag-index: one shared embedder, a sync running in a background thread
//! with a progress callback and a cancel flag, and searches answered from another thread while the
//! sync runs (they see the last committed state, then the new one).
//!
//! ```sh
//! cargo run --release --example desktop_app -- [DOCS_DIR]
//! ```
//! DOCS_DIR defaults to the Traefik "getting-started" docs in ../shared. The index is written to a
//! temporary directory and removed at the end.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rag_index_core::{
    Embedder, EmbedderConfig, IndexConfig, RagIndex, SyncOptions, SyncProgress, resolve_model_dir,
};

fn main() -> Result<()> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../shared/corpora/traefik/docs/getting-started"));
    let index_dir = tempfile::tempdir().context("temporary index directory")?;

    // Load the model once; the index, the sync thread and the search thread share it.
    let model = resolve_model_dir(None, &[manifest.join("models")])?;
    let embedder = Arc::new(Embedder::load(&model, EmbedderConfig::default())?);
    let index = Arc::new(RagIndex::open(
        index_dir.path(),
        embedder,
        IndexConfig::default(),
    )?);

    let cancel = Arc::new(AtomicBool::new(false));
    let last_progress = Arc::new(Mutex::new(None::<SyncProgress>));
    let sync_thread = {
        let (index, cancel, last_progress) = (index.clone(), cancel.clone(), last_progress.clone());
        let docs = docs.clone();
        std::thread::spawn(move || {
            let progress = |p: SyncProgress| *last_progress.lock().unwrap() = Some(p);
            index.sync(&docs, &SyncOptions::default(), &progress, &cancel)
        })
    };

    // The "UI thread": keeps answering searches while the sync runs.
    let question = "What status code does Traefik return when the upstream service fails?";
    let searches_during_sync = AtomicUsize::new(0);
    let started = Instant::now();
    while !sync_thread.is_finished() {
        let hits = index.search(question, &rag_index_core::Access::public(), 3)?;
        searches_during_sync.fetch_add(1, Ordering::Relaxed);
        eprintln!(
            "[{:>5} ms] progress {:?}; search sees {} hits",
            started.elapsed().as_millis(),
            *last_progress.lock().unwrap(),
            hits.len()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let report = sync_thread.join().expect("sync thread")?;
    println!(
        "synced {}: {} files added, {} chunks embedded, {} live; {} searches answered meanwhile",
        docs.display(),
        report.files.added,
        report.chunks.embedded,
        report.chunks.total,
        searches_during_sync.load(Ordering::Relaxed)
    );

    let hits = index.search(question, &rag_index_core::Access::public(), 3)?;
    let Some(top) = hits.first() else {
        bail!("no hits after the sync");
    };
    println!("Q: {question}");
    for hit in &hits {
        println!(
            "{}. {:.3} {} [{}]",
            hit.rank,
            hit.score,
            hit.chunk.path,
            hit.chunk.heading_path.join(" > ")
        );
    }
    if report.chunks.total == 0 || top.score <= 0.0 {
        bail!("unexpected result: {report:?}");
    }
    Ok(())
}
