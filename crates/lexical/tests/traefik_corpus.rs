//! Every paragraph of the real Traefik docs: technical tokens find a paragraph holding them.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use rag_lexical::{LexicalDoc, LexicalIndex};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/corpora/traefik/docs"
);

/// `(path, paragraph)` for every non-blank paragraph of every Markdown file under the corpus.
fn paragraphs() -> Vec<(String, String)> {
    let root = Path::new(CORPUS);
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = fs::read_to_string(&file).unwrap();
        for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
            out.push((rel.clone(), paragraph.to_string()));
        }
    }
    out
}

#[test]
fn technical_tokens_find_a_paragraph_holding_them() {
    let paragraphs = paragraphs();
    assert!(
        paragraphs.len() > 3000,
        "only {} paragraphs: is the corpus there?",
        paragraphs.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    let mut batch = index.writer().unwrap();
    for (n, (path, text)) in paragraphs.iter().enumerate() {
        let id = format!("{n:032x}");
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point: n as u64,
                text,
                path,
            })
            .unwrap();
    }
    batch.commit(1).unwrap();
    assert_eq!(index.num_docs(), paragraphs.len() as u64);

    for token in [
        "maxConcurrentStreams",
        "X-Forwarded-For",
        "--entrypoints.web.address",
        "traefik.http.routers",
        "insecureSkipVerify",
        "forwardedHeaders.trustedIPs",
        "escaped_request_uri",
        "HTTP 503",
    ] {
        let hits = index.search(token, 5, None).unwrap();
        assert!(!hits.is_empty(), "{token}: no hit");
        let first = &paragraphs[hits[0].point as usize].1;
        // Matching is case-insensitive (`--entryPoints.web.address` is in the docs).
        let wanted = token.trim_start_matches('-').to_lowercase();
        assert!(
            first.to_lowercase().contains(&wanted),
            "{token}: first hit is {first:?}"
        );
    }
    // Every hit of an exact multi-part identifier holds it (there are more than 5 such paragraphs).
    for hit in index.search("X-Forwarded-For", 5, None).unwrap() {
        assert!(paragraphs[hit.point as usize].1.contains("X-Forwarded-For"));
    }
}
