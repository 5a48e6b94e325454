//! What compaction gives back after a sync-shaped write, and what it costs, in the same run:
//! vectors cached in commits of 256 (as `sync` caches them) under scattered keys, then one
//! commit of the chunk records (the paragraphs of the Traefik docs as their texts). Prints the
//! file's size before compaction (the baseline: what a sync left before it compacted), the
//! compaction's time and the size after.
//!
//! `cargo bench -p rag-store --bench compaction [-- TEXTS]` (default 12,800 texts, about the
//! SQLite docs' 12,627 vectors)

use std::time::Instant;

use rag_store::{ChunkRecord, Store};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);
/// Texts per vector commit: `IndexConfig::embed_commit_every`'s default.
const BATCH: usize = 256;

fn main() {
    let texts: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(12_800);
    let paragraphs = paragraphs(texts);
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("index.redb");
    let store = Store::open_writer(&path).expect("store");

    let written = Instant::now();
    let key = |i: usize| format!("{:016x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for batch in (0..texts).collect::<Vec<_>>().chunks(BATCH) {
        let mut write = store.write().expect("write");
        for &i in batch {
            let vector: Vec<f32> = (0..384)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            write.put_embedding(&key(i), &vector).expect("vector");
        }
        write.commit().expect("commit");
    }
    let mut write = store.write().expect("write");
    for (i, text) in paragraphs.iter().enumerate() {
        let record = ChunkRecord {
            path: format!("docs/page-{}.md", i / 20),
            title: "Page".into(),
            heading_path: vec!["Page".into(), "Section".into()],
            ordinal: (i % 20) as u32,
            byte_range: (0, text.len() as u64),
            text: text.clone(),
            hash: key(i),
            tokens: 200,
            metadata_json: "{}".into(),
            point: i as u64,
        };
        write
            .put_chunk(&format!("{:032x}", i), &record)
            .expect("chunk");
    }
    write.commit().expect("commit");
    let written = written.elapsed();
    let before = std::fs::metadata(&path).expect("size").len();

    let started = Instant::now();
    let compacted = store.compact().expect("compaction");
    let took = started.elapsed();
    let after = std::fs::metadata(&path).expect("size").len();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "{texts} texts in {} vector commits + 1 chunk commit ({:.1} s)",
        texts.div_ceil(BATCH),
        written.as_secs_f64()
    );
    println!(
        "store before compaction {:.1} MiB ({} B per text); after {:.1} MiB ({} B per text); \
         compaction {:.0} ms (compacted: {compacted})",
        mib(before),
        before / texts as u64,
        mib(after),
        after / texts as u64,
        took.as_secs_f64() * 1e3
    );
}

/// `n` texts: the Traefik docs' paragraphs, in file order, repeated as needed.
fn paragraphs(n: usize) -> Vec<String> {
    let mut files: Vec<_> = walk(std::path::Path::new(CORPUS));
    files.sort();
    let all: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|page| {
            page.split("\n\n")
                .map(str::trim)
                .filter(|p| p.len() > 80)
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!all.is_empty(), "no paragraphs under {CORPUS}");
    all.iter().cycle().take(n).cloned().collect()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("corpus folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out
}
