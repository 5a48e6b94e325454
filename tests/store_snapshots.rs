//! What each incremental sync writes to the store, as reviewed text: after every step of a fixed
//! sequence (create, edit, touch, rename, delete) the store's state — manifest, chunks (ID,
//! path, ordinal, point, tokens, text hash, metadata keys), generation and next point — is
//! rendered and compared with `tests/snapshots/store_steps.txt`. A change in what a sync writes
//! then shows up in review as a diff of that file. `RAG_UPDATE_SNAPSHOTS=1` rewrites it.
//!
//! Times (mtimes, provenance timestamps) vary between runs and are left out; everything else
//! is deterministic: chunk IDs come from content, points are handed out in walk order.

mod common;

use std::fmt::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use common::*;
use rag_index_core::{IndexConfig, RagIndex, SyncOptions};

fn render(step: &str, index_dir: &Path, report: &rag_index_core::SyncReport) -> String {
    let store = rag_store::Store::open_reader(&index_dir.join(rag_index_core::DB_FILE)).unwrap();
    let snapshot = store.read().unwrap();
    let meta = snapshot.meta().unwrap().unwrap();
    let mut out = String::new();
    writeln!(out, "## {step}").unwrap();
    writeln!(
        out,
        "report: files {:?}, embedded {}, reused {}, deleted {}, total {}",
        report.files,
        report.chunks.embedded,
        report.chunks.reused,
        report.chunks.deleted,
        report.chunks.total
    )
    .unwrap();
    writeln!(
        out,
        "meta: format {}, generation {}, next_point {}, graph for generation {:?}",
        meta.format_version,
        meta.generation,
        meta.next_point,
        meta.graph.as_ref().map(|g| g.generation)
    )
    .unwrap();
    for (path, file) in snapshot.files().unwrap() {
        writeln!(
            out,
            "file {path}: size {}, content {}, {} chunks",
            file.size,
            &file.content_hash[..12],
            file.chunk_ids.len()
        )
        .unwrap();
    }
    let mut chunks = snapshot.chunks().unwrap();
    chunks.sort_by(|a, b| (&a.1.path, a.1.ordinal).cmp(&(&b.1.path, b.1.ordinal)));
    for (id, c) in chunks {
        let metadata: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&c.metadata_json).unwrap();
        let keys: Vec<&str> = metadata.keys().map(String::as_str).collect();
        writeln!(
            out,
            "chunk {id} {}#{} point {} tokens {} text {} bytes {:?} meta [{}]",
            c.path,
            c.ordinal,
            c.point,
            c.tokens,
            &c.hash[..12],
            c.byte_range,
            keys.join(",")
        )
        .unwrap();
    }
    out.push('\n');
    out
}

#[test]
fn each_incremental_step_writes_what_the_snapshot_says() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index_dir = work.path().join("index");
    let index = RagIndex::open(&index_dir, embedder(), IndexConfig::default()).unwrap();
    let sync = |index: &RagIndex| {
        index
            .sync(
                &docs,
                &SyncOptions::default(),
                &|_| {},
                &AtomicBool::new(false),
            )
            .unwrap()
    };
    let mut rendered = String::new();

    copy_corpus_files(
        &docs,
        &[
            "getting-started/faq.md",
            "reference/install-configuration/observability/healthcheck.md",
        ],
    );
    let report = sync(&index);
    rendered += &render("1. two files", &index_dir, &report);

    let faq = docs.join("getting-started/faq.md");
    let mut text = std::fs::read_to_string(&faq).unwrap();
    text.push_str("\n## Snapshot step\n\nA paragraph appended by the snapshot test.\n");
    std::fs::write(&faq, text).unwrap();
    rendered += &render("2. append a section to faq.md", &index_dir, &sync(&index));

    let health = docs.join("reference/install-configuration/observability/healthcheck.md");
    let f = std::fs::File::options().write(true).open(&health).unwrap();
    f.set_modified(
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
    )
    .unwrap();
    rendered += &render("3. touch healthcheck.md", &index_dir, &sync(&index));

    std::fs::rename(&health, docs.join("healthcheck-moved.md")).unwrap();
    rendered += &render("4. rename healthcheck.md", &index_dir, &sync(&index));

    std::fs::remove_file(&faq).unwrap();
    rendered += &render("5. delete faq.md", &index_dir, &sync(&index));

    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/store_steps.txt");
    if std::env::var_os("RAG_UPDATE_SNAPSHOTS").is_some() || !file.exists() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &rendered).unwrap();
    }
    let expected = std::fs::read_to_string(&file).unwrap();
    assert!(
        expected == rendered,
        "the store's state differs from {}; review the diff and rerun with \
         RAG_UPDATE_SNAPSHOTS=1 if the change is intended.\n--- got:\n{rendered}",
        file.display()
    );
}
