//! Helpers shared by the integration tests.
#![allow(dead_code)]

use rag_lexical::{LexicalDoc, LexicalIndex};

/// A 32-hex-digit chunk ID for `n`.
pub fn chunk_id(n: u64) -> String {
    format!("{n:032x}")
}

/// Indexes `docs` as `(point, path, text)` in one batch committed at `generation`.
pub fn index_docs(index: &LexicalIndex, docs: &[(u64, &str, &str)], generation: u64) {
    let mut batch = index.writer().unwrap();
    for &(point, path, text) in docs {
        let id = chunk_id(point);
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point,
                text,
                path,
            })
            .unwrap();
    }
    batch.commit(generation).unwrap();
}

/// The points of the hits of `query`, best first.
pub fn points(index: &LexicalIndex, query: &str, k: usize) -> Vec<u64> {
    index
        .search(query, k, None)
        .unwrap()
        .into_iter()
        .map(|h| h.point)
        .collect()
}
