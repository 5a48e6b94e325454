//! Property: after any sequence of file creations, edits, renames, moves, deletions, truncations
//! and touches followed by `sync`, the live chunks equal those of a fresh index of the folder as it
//! now is — IDs, paths, texts and vectors — the lexical index holds exactly the live chunks, and
//! `verify` passes.
//!
//! The same property holds on the PostgreSQL backend (a real server from `scripts/pg.sh`),
//! where the fresh index to compare with is a new collection.
//!
//! Sequences are random but seeded. `RAG_PROPTEST_SEQUENCES` (default 12) and `RAG_PROPTEST_SEED`
//! set how many and which; `scripts/sync-property.sh` runs a larger number.

mod common;
#[path = "common/pg.rs"]
mod pg_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use rag_index_core::{IndexConfig, OpenMode, RagIndex, SearchMode, SearchRequest, StoreLocation};
use rag_lexical::LexicalIndex;

const STEPS_PER_SEQUENCE: usize = 6;

/// Small real Markdown files to build folders from (sorted for determinism).
fn pool() -> Vec<PathBuf> {
    let (files, _) = rag_index_core::walk::walk(&corpus_dir(), None);
    let mut small: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| std::fs::metadata(&f.abs).is_ok_and(|m| m.len() < 3_500))
        .map(|f| f.abs)
        .collect();
    small.sort();
    assert!(small.len() >= 10, "the corpus has small files");
    small
}

fn random_words(rng: &mut fastrand::Rng, n: usize) -> String {
    const WORDS: &[&str] = &[
        "router",
        "middleware",
        "certificate",
        "entrypoint",
        "timeout",
        "retry",
        "backend",
        "label",
        "provider",
        "quota",
        "header",
        "redirect",
        "zebra",
        "lantern",
        "orchard",
    ];
    (0..n)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Number of saved graph directories in the index directory.
fn graph_dirs(index: &Path) -> usize {
    std::fs::read_dir(index)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("graph-"))
        .count()
}

/// Relative paths of the documents in `docs`.
fn documents(docs: &Path) -> Vec<String> {
    rag_index_core::walk::walk(docs, None)
        .0
        .into_iter()
        .map(|f| f.rel)
        .collect()
}

/// Applies one random change to the folder and says what it was.
fn mutate(rng: &mut fastrand::Rng, docs: &Path, pool: &[PathBuf], serial: usize) -> String {
    let existing = documents(docs);
    let pick = |rng: &mut fastrand::Rng| existing[rng.usize(..existing.len())].clone();
    let op = if existing.is_empty() {
        0
    } else {
        rng.usize(..10)
    };
    match op {
        0 => {
            let src = &pool[rng.usize(..pool.len())];
            let dir = ["", "a/", "a/b/", "c d/"][rng.usize(..4)];
            let rel = format!("{dir}new-{serial}.md");
            std::fs::create_dir_all(docs.join(&rel).parent().unwrap()).unwrap();
            std::fs::copy(src, docs.join(&rel)).unwrap();
            format!("add {rel}")
        }
        1 => {
            let rel = pick(rng);
            let mut text = std::fs::read_to_string(docs.join(&rel)).unwrap();
            text.push_str(&format!("\n\n{}.\n", random_words(rng, 12)));
            std::fs::write(docs.join(&rel), text).unwrap();
            format!("append to {rel}")
        }
        2 => {
            let rel = pick(rng);
            let text = std::fs::read_to_string(docs.join(&rel)).unwrap();
            std::fs::write(
                docs.join(&rel),
                format!("{}.\n\n{text}", random_words(rng, 9)),
            )
            .unwrap();
            format!("insert at top of {rel}")
        }
        3 => {
            let rel = pick(rng);
            let text = std::fs::read_to_string(docs.join(&rel)).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if !lines.is_empty() {
                let i = rng.usize(..lines.len());
                lines[i] = format!("{} {}", lines[i], random_words(rng, 3));
            }
            std::fs::write(docs.join(&rel), lines.join("\n")).unwrap();
            format!("edit a line of {rel}")
        }
        4 => {
            let rel = pick(rng);
            let text = std::fs::read_to_string(docs.join(&rel)).unwrap();
            let mut cut = rng.usize(..=text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            std::fs::write(docs.join(&rel), &text[..cut]).unwrap();
            format!("truncate {rel} to {cut} bytes")
        }
        5 => {
            let rel = pick(rng);
            let to = format!("moved/{serial}-{}", rel.replace('/', "_"));
            std::fs::create_dir_all(docs.join("moved")).unwrap();
            std::fs::rename(docs.join(&rel), docs.join(&to)).unwrap();
            format!("rename {rel} -> {to}")
        }
        6 => {
            let rel = pick(rng);
            std::fs::remove_file(docs.join(&rel)).unwrap();
            format!("delete {rel}")
        }
        7 => {
            let rel = pick(rng);
            let to = format!("copy-{serial}.md");
            std::fs::copy(docs.join(&rel), docs.join(&to)).unwrap();
            format!("duplicate {rel} -> {to}")
        }
        8 => {
            // Other bytes, same size, and the mtime it had (as `cp -p`, `tar x` or `touch -r`
            // leave a file): must count as a change. With no such file yet, one is set back, for
            // a later draw to rewrite once a sync has recorded it settled.
            let settled = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
            let is_settled = |rel: &String| {
                std::fs::metadata(docs.join(rel))
                    .unwrap()
                    .modified()
                    .unwrap()
                    == settled
            };
            let settled_files: Vec<&String> = existing.iter().filter(|r| is_settled(r)).collect();
            let rel = match settled_files.is_empty() {
                true => pick(rng),
                false => settled_files[rng.usize(..settled_files.len())].clone(),
            };
            let path = docs.join(&rel);
            let set_back = || {
                std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_modified(settled)
                    .unwrap()
            };
            if !is_settled(&rel) {
                set_back();
                return format!("set the mtime of {rel} back");
            }
            let mut bytes = std::fs::read(&path).unwrap();
            let Some(at) = bytes.iter().rposition(u8::is_ascii_alphabetic) else {
                return format!("nothing to rewrite in {rel}");
            };
            bytes[at] ^= 0x20; // swaps the letter's case
            std::fs::write(&path, bytes).unwrap();
            set_back();
            format!("rewrite {rel} keeping its size and mtime")
        }
        _ => {
            // Same bytes, new mtime: must not count as a change.
            let rel = pick(rng);
            let bytes = std::fs::read(docs.join(&rel)).unwrap();
            std::fs::write(docs.join(&rel), bytes).unwrap();
            format!("rewrite {rel} unchanged")
        }
    }
}

/// A folder of four random pool files, in a temporary directory (kept alive by the caller).
fn starting_folder(rng: &mut fastrand::Rng, pool: &[PathBuf]) -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..4 {
        let src = &pool[rng.usize(..pool.len())];
        std::fs::copy(src, docs.join(format!("start-{i}.md"))).unwrap();
    }
    (work, docs)
}

type Live = BTreeMap<(String, String, String), Vec<f32>>;

fn live_state(index: &RagIndex) -> Live {
    index
        .dump()
        .unwrap()
        .into_iter()
        .map(|c| {
            let vector = index
                .vector_of(&c.hash)
                .unwrap()
                .expect("every chunk has a vector");
            ((c.chunk_id, c.path, c.text), vector)
        })
        .collect()
}

#[test]
fn random_edit_sequences_keep_the_index_equal_to_a_fresh_one() {
    let pool = pool();
    let sequences = env_number("RAG_PROPTEST_SEQUENCES", 12);
    let seed = env_number("RAG_PROPTEST_SEED", 0x5eed);
    // Graph directory counts after commits, for default and folding sequences.
    let mut saves_seen = [BTreeSet::new(), BTreeSet::new()];
    for sequence in 0..sequences {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(sequence));
        let (work, docs) = starting_folder(&mut rng, &pool);
        // Odd sequences fold the graph's pending points after more than two: their commits cross
        // from deltas to full saves and back, where even ones (the defaults) write deltas.
        let folds = sequence % 2 == 1;
        let config = match folds {
            true => IndexConfig::builder()
                .vectors(rag_index_core::IndexParams {
                    exact_below: 2,
                    delta_ratio: 0.0,
                    ..Default::default()
                })
                .build()
                .unwrap(),
            false => IndexConfig::default(),
        };
        let index = RagIndex::open(&work.path().join("index"), embedder(), config).unwrap();
        sync_in_process(&index, &docs);
        let mut history = Vec::new();
        let mut graph_dirs_seen = BTreeSet::new();
        for step in 0..STEPS_PER_SEQUENCE {
            let changes = 1 + rng.usize(..3);
            for c in 0..changes {
                history.push(mutate(&mut rng, &docs, &pool, step * 10 + c));
            }
            let report = sync_in_process(&index, &docs);
            graph_dirs_seen.insert(graph_dirs(index.dir()));
            let live = live_state(&index);
            let keys: BTreeSet<_> = live.keys().cloned().collect();
            assert_eq!(
                keys,
                expected_chunks(&docs, None),
                "seed {seed} sequence {sequence} after: {history:#?}"
            );
            assert_eq!(report.chunks.total, live.len());
            let lexical = LexicalIndex::open_read_only(&index.dir().join("lexical")).unwrap();
            let lexical_ids: BTreeSet<String> = lexical
                .chunk_ids()
                .unwrap()
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let store_ids: BTreeSet<String> = keys.iter().map(|k| k.0.clone()).collect();
            assert_eq!(lexical_ids, store_ids, "lexical after: {history:#?}");
            assert_eq!(lexical.num_docs() as usize, live.len());
            let verify = index.verify(false).unwrap();
            assert!(
                verify.ok(),
                "verify after {history:#?}: {:?}",
                verify.problems
            );
            // A no-op sync right after does nothing.
            let noop = sync_in_process(&index, &docs);
            assert_eq!(noop.chunks.embedded, 0);
            assert_eq!(noop.chunks.deleted, 0);
        }
        // A delta keeps its base beside it (2 graph directories), a full save stands alone (1).
        assert!(
            graph_dirs_seen.iter().all(|n| (1..=2).contains(n)),
            "{graph_dirs_seen:?}"
        );
        saves_seen[usize::from(folds)].extend(graph_dirs_seen);
        // The incrementally maintained index equals a fresh one, vectors included.
        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = RagIndex::open(fresh_dir.path(), embedder(), IndexConfig::default()).unwrap();
        sync_in_process(&fresh, &docs);
        let (ours, theirs) = (live_state(&index), live_state(&fresh));
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>()
        );
        for (key, v) in &ours {
            let w = &theirs[key];
            let dot: f32 = v.iter().zip(w).map(|(a, b)| a * b).sum();
            assert!(
                dot > 0.9999,
                "vector of {key:?} differs from a fresh embedding: {dot}"
            );
        }
        // Dense searches agree too (scores, since duplicated texts tie). BM25 scores may not:
        // deleted documents count in its statistics until tantivy merges them away.
        let request = SearchRequest::new(
            "how do I configure a router middleware",
            rag_index_core::Access::public(),
        )
        .mode(SearchMode::Dense)
        .exact(true);
        let a = index.search_with(&request).unwrap();
        let b = fresh.search_with(&request).unwrap();
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x.score - y.score).abs() < 1e-4,
                "{} vs {}",
                x.score,
                y.score
            );
        }
    }
    // Small edits were saved as deltas; the folding sequences also crossed to full saves.
    if sequences >= 2 {
        assert!(saves_seen[0].contains(&2), "no delta: {saves_seen:?}");
        assert_eq!(saves_seen[1].len(), 2, "no fold and delta: {saves_seen:?}");
    }
}

#[test]
fn random_edit_sequences_on_postgres_keep_the_collection_equal_to_a_fresh_one() {
    let server = pg_support::PgServer::start();
    let pool = pool();
    let sequences = env_number("RAG_PG_PROPTEST_SEQUENCES", 3);
    let seed = env_number("RAG_PROPTEST_SEED", 0x5eed);
    let open = |collection: &str| {
        let location =
            StoreLocation::from_flag(Some(&server.url), Path::new("unused"), Some(collection))
                .unwrap();
        RagIndex::open_at(
            &location,
            embedder(),
            IndexConfig::default(),
            OpenMode::Writer { wait: false },
        )
        .unwrap()
    };
    for sequence in 0..sequences {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(1000 + sequence));
        let (_work, docs) = starting_folder(&mut rng, &pool);
        let index = open(&format!("seq{sequence}"));
        sync_in_process(&index, &docs);
        let mut history = Vec::new();
        for step in 0..STEPS_PER_SEQUENCE {
            for c in 0..1 + rng.usize(..3) {
                history.push(mutate(&mut rng, &docs, &pool, step * 10 + c));
            }
            let report = sync_in_process(&index, &docs);
            let live = live_state(&index);
            let keys: BTreeSet<_> = live.keys().cloned().collect();
            assert_eq!(
                keys,
                expected_chunks(&docs, None),
                "seed {seed} sequence {sequence} after: {history:#?}"
            );
            assert_eq!(report.chunks.total, live.len());
            let verify = index.verify(false).unwrap();
            assert!(
                verify.ok(),
                "verify after {history:#?}: {:?}",
                verify.problems
            );
            let noop = sync_in_process(&index, &docs);
            assert_eq!((noop.chunks.embedded, noop.chunks.deleted), (0, 0));
        }
        let fresh = open(&format!("fresh{sequence}"));
        sync_in_process(&fresh, &docs);
        assert_eq!(live_state(&index), live_state(&fresh), "after {history:#?}");
        let request = SearchRequest::new(
            "how do I configure a router middleware",
            rag_index_core::Access::public(),
        )
        .mode(SearchMode::Dense)
        .exact(true);
        let scores = |i: &RagIndex| -> Vec<f32> {
            i.search_with(&request)
                .unwrap()
                .iter()
                .map(|h| h.score)
                .collect()
        };
        let (a, b) = (scores(&index), scores(&fresh));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-4),
            "{a:?} vs {b:?}"
        );
    }
}
