//! Hybrid search end to end, with the real model on real Traefik docs: the lexical index follows
//! every sync exactly, deleted text never comes back through it, exact identifiers are found at
//! rank 1, and `verify` / `sync` notice and rebuild a damaged or missing lexical index (the real
//! binary).

mod common;

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use common::*;
use rag_index_core::{IndexConfig, RagIndex, SearchMode, SearchRequest};
use rag_lexical::LexicalIndex;

const FILES: &[&str] = &[
    "security/http2-header-memory.md",
    "getting-started/faq.md",
    "security/request-path.md",
    "reference/routing-configuration/http/middlewares/circuitbreaker.md",
];

/// The chunk IDs the lexical index of `index_dir` holds, read by a handle of its own.
fn lexical_ids(index_dir: &Path) -> BTreeSet<String> {
    let lexical = LexicalIndex::open_read_only(&index_dir.join(rag_index_core::LEXICAL_DIR))
        .expect("lexical index opens");
    let ids: Vec<String> = lexical
        .chunk_ids()
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let set: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(set.len(), ids.len(), "a chunk is indexed twice");
    set
}

fn store_ids(index: &RagIndex) -> BTreeSet<String> {
    index
        .dump()
        .unwrap()
        .into_iter()
        .map(|c| c.chunk_id)
        .collect()
}

fn search(index: &RagIndex, query: &str, k: usize, mode: SearchMode) -> Vec<rag_index_core::Hit> {
    index
        .search_with(
            &SearchRequest::new(query, rag_index_core::Access::public())
                .k(k)
                .mode(mode),
        )
        .unwrap()
}

/// Terms of `path`'s text that no other file of `docs` has.
fn unique_terms(docs: &Path, path: &str) -> Vec<String> {
    let (files, _) = rag_index_core::walk::walk(docs, None);
    let mut others = HashSet::new();
    let mut own = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file.abs).unwrap();
        let terms = LexicalIndex::analyze(&text)
            .into_iter()
            .chain(LexicalIndex::analyze(&file.rel));
        if file.rel == path {
            own.extend(terms);
        } else {
            others.extend(terms);
        }
    }
    own.into_iter()
        .filter(|t| {
            t.len() >= 6 && !others.contains(t) && t.chars().all(|c| c.is_ascii_lowercase())
        })
        .take(8)
        .collect()
}

#[test]
fn lexical_and_hybrid_search_follow_every_sync() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let dir = work.path().join("index");
    copy_corpus_files(&docs, FILES);
    let index = RagIndex::open(&dir, embedder(), IndexConfig::default()).unwrap();
    sync_in_process(&index, &docs);
    assert_eq!(lexical_ids(&dir), store_ids(&index));

    // An exact identifier is answered at rank 1 by a chunk holding it.
    for mode in [SearchMode::Lexical, SearchMode::Hybrid] {
        let hits = search(&index, "maxConcurrentStreams", 5, mode);
        assert!(
            hits[0].chunk.text.contains("maxConcurrentStreams"),
            "{mode:?}: {}",
            hits[0].chunk.text
        );
        assert!(hits[0].signals.unwrap().lexical.is_some());
    }

    // Hybrid lists each chunk once, ranks 1..n, and no more than k.
    for query in [
        "maxConcurrentStreams",
        "circuit breaker expression NetworkErrorRatio",
        "how do I report a bug?",
        "request path normalization and encoded characters",
    ] {
        for k in [1, 7, 40] {
            let hits = search(&index, query, k, SearchMode::Hybrid);
            assert!(hits.len() <= k);
            let ids: HashSet<&str> = hits.iter().map(|h| h.chunk.chunk_id.as_str()).collect();
            assert_eq!(
                ids.len(),
                hits.len(),
                "{query:?} k={k}: a chunk came back twice"
            );
            for (i, hit) in hits.iter().enumerate() {
                assert_eq!(hit.rank, i + 1);
            }
        }
    }

    // A deleted file's own words find nothing lexically, and no chunk of it in hybrid mode.
    let gone = "security/request-path.md";
    let terms = unique_terms(&docs, gone);
    assert!(terms.len() >= 3, "{terms:?}");
    for term in &terms {
        let hits = search(&index, term, 10, SearchMode::Lexical);
        assert!(
            hits.iter().any(|h| h.chunk.path == gone),
            "{term} before deletion"
        );
    }
    std::fs::remove_file(docs.join(gone)).unwrap();
    sync_in_process(&index, &docs);
    assert_eq!(lexical_ids(&dir), store_ids(&index));
    for term in &terms {
        assert!(
            search(&index, term, 10, SearchMode::Lexical).is_empty(),
            "{term}"
        );
        let hybrid = search(&index, term, 10, SearchMode::Hybrid);
        assert!(hybrid.iter().all(|h| h.chunk.path != gone), "{term}");
    }

    // Edits and additions follow too, seen by a reader in another handle.
    let faq = docs.join("getting-started/faq.md");
    let mut text = std::fs::read_to_string(&faq).unwrap();
    text.push_str("\n\n## Quokkas\n\nThe quokkaFeatureGate option enables marsupial routing.\n");
    std::fs::write(&faq, text).unwrap();
    copy_corpus_files(&docs, &["security/request-path.md"]);
    let reader = RagIndex::open_read_only(&dir, embedder(), IndexConfig::default()).unwrap();
    let before = search(&reader, "quokkaFeatureGate", 5, SearchMode::Lexical);
    assert!(
        before
            .iter()
            .all(|h| !h.chunk.text.contains("quokkaFeatureGate"))
    );
    sync_in_process(&index, &docs);
    assert_eq!(lexical_ids(&dir), store_ids(&index));
    let found = search(&reader, "quokkaFeatureGate", 5, SearchMode::Lexical);
    assert!(found[0].chunk.text.contains("quokkaFeatureGate"));
    let back = search(&reader, &terms[0], 5, SearchMode::Lexical);
    assert!(back.iter().any(|h| h.chunk.path == gone));
    assert!(index.verify(false).unwrap().ok());

    // Damaged under a running process: its next sync (no file changed) rebuilds it, and both
    // handles' searches use it again at the same generation.
    std::fs::write(dir.join("lexical/meta.json"), b"garbage").unwrap();
    assert!(!index.verify(false).unwrap().ok());
    sync_in_process(&index, &docs);
    assert!(index.verify(false).unwrap().ok());
    assert_eq!(lexical_ids(&dir), store_ids(&index));
    for handle in [&index, &reader] {
        let found = search(handle, "quokkaFeatureGate", 5, SearchMode::Lexical);
        assert!(found[0].chunk.text.contains("quokkaFeatureGate"));
    }
}

/// Every path under `dir`, relative.
fn paths_under(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            found.insert(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    found
}

/// An index the searching user may not write (built by another user, or on a read-only volume)
/// is searched with both signals: tantivy's reader takes a lock file it cannot create there.
#[test]
fn an_index_the_reader_cannot_write_is_searched_with_both_signals() {
    let work = tempfile::tempdir().unwrap();
    let (docs, index) = (work.path().join("docs"), work.path().join("index"));
    copy_corpus_files(&docs, &FILES[..2]);
    sync(&docs, &index, 0);
    let idx = index.to_str().unwrap();
    let files_before = paths_under(&index);

    let root = String::from_utf8(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
        == "0";
    let chmod = |mode: &str| {
        let status = std::process::Command::new("chmod")
            .args(["-R", mode])
            .arg(work.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    // Root writes anywhere, so as root the searches run as `nobody`, who may read the index but
    // not write it; otherwise the index is made read-only for this user.
    chmod(if root { "a+rX" } else { "a-w" });
    let as_reader = |args: &[&str]| {
        let mut reader = if root {
            rag_index_through(
                "setpriv",
                &["--reuid=65534", "--regid=65534", "--clear-groups"],
            )
        } else {
            rag_index()
        };
        let out = reader.args(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_lines(&String::from_utf8(out.stdout).unwrap())
    };

    let lexical = as_reader(&[
        "query",
        "--index",
        idx,
        "--mode",
        "lexical",
        "--json",
        "maxConcurrentStreams",
    ]);
    let hits = lexical[0]["hits"].as_array().unwrap();
    assert!(
        hits[0]["text"]
            .as_str()
            .unwrap()
            .contains("maxConcurrentStreams"),
        "{hits:?}"
    );
    let hybrid = as_reader(&["query", "--index", idx, "--json", "maxConcurrentStreams"]);
    assert!(
        hybrid[0]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|hit| hit["signals"]["lexical"]["rank"] == 1),
        "the hybrid search has its lexical side: {hybrid:?}"
    );
    assert_eq!(
        as_reader(&["verify", "--index", idx, "--json"])[0]["ok"],
        true
    );
    chmod("u+w");
    assert_eq!(
        paths_under(&index),
        files_before,
        "the readers wrote nothing"
    );
}

#[test]
fn verify_and_sync_rebuild_a_damaged_or_missing_lexical_index() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    let index = work.path().join("index");
    copy_corpus_files(&docs, &FILES[..2]);
    sync(&docs, &index, 0);
    let idx = index.to_str().unwrap();
    let verify = |code| json_lines(&run_expect(&["verify", "--index", idx, "--json"], code));
    assert_eq!(verify(0)[0]["ok"], true);
    let meta = index.join("lexical/meta.json");

    // Garbage commit record: verify reports it, --repair rebuilds it.
    std::fs::write(&meta, b"{ not json").unwrap();
    let report = verify(1);
    assert!(
        report[0]["problems"].to_string().contains("lexical"),
        "{}",
        report[0]
    );
    // Hybrid search still answers (from vectors); lexical search says why it cannot.
    run_expect(
        &[
            "query",
            "--index",
            idx,
            "--mode",
            "hybrid",
            "maxConcurrentStreams",
        ],
        0,
    );
    let out = run(&[
        "query",
        "--index",
        idx,
        "--mode",
        "lexical",
        "maxConcurrentStreams",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lexical index"));
    let repaired = json_lines(&run_expect(
        &["verify", "--index", idx, "--repair", "--json"],
        0,
    ));
    assert!(repaired[0]["repaired"].to_string().contains("lexical"));
    assert_eq!(verify(0)[0]["ok"], true);

    // Missing, then damaged again: a plain sync with no file changes rebuilds it.
    std::fs::remove_dir_all(index.join("lexical")).unwrap();
    assert!(verify(1)[0]["problems"].to_string().contains("lexical"));
    sync(&docs, &index, 0);
    assert_eq!(verify(0)[0]["ok"], true);
    std::fs::write(&meta, b"").unwrap();
    sync(&docs, &index, 0);
    assert_eq!(verify(0)[0]["ok"], true);

    // A rebuilt index answers exact terms at rank 1, through the binary.
    for mode in ["lexical", "hybrid"] {
        let lines = json_lines(&run_expect(
            &[
                "query",
                "--index",
                idx,
                "--mode",
                mode,
                "--json",
                "maxConcurrentStreams",
            ],
            0,
        ));
        let top = &lines[0]["hits"][0];
        assert!(
            top["text"]
                .as_str()
                .unwrap()
                .contains("maxConcurrentStreams"),
            "{mode}"
        );
        assert!(top["signals"]["lexical"]["rank"].is_u64(), "{top}");
    }

    // The lexical set equals the store's after the rebuilds.
    let dumped: BTreeSet<String> = dump(&index)
        .iter()
        .map(|c| c["chunk_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(lexical_ids(&index), dumped);
}
