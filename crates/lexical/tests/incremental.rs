//! Small commits touch only their documents; segments and files stay bounded.

mod common;

use std::collections::BTreeSet;

use common::chunk_id;
use rag_lexical::{LexicalDoc, LexicalIndex};

fn text(n: u64) -> String {
    format!("Section {n} > Body\nword{n} shared text about routers and maxConcurrentStreams {n}")
}

#[test]
fn many_small_commits_keep_segments_and_files_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    let index = LexicalIndex::open_or_create(&path).unwrap();
    let mut live = BTreeSet::new();
    let mut next = 0u64;
    let mut max_segments = 0;
    for generation in 1..=200u64 {
        let mut batch = index.writer().unwrap();
        // Each commit deletes the 3 oldest live chunks (after a start-up phase) and adds 5.
        if live.len() > 50 {
            for _ in 0..3 {
                let oldest = live.pop_first().unwrap();
                batch.delete(&chunk_id(oldest));
            }
        }
        for _ in 0..5 {
            let (id, body) = (chunk_id(next), text(next));
            batch
                .add(LexicalDoc {
                    chunk_id: &id,
                    point: next,
                    text: &body,
                    path: "docs/x.md",
                })
                .unwrap();
            live.insert(next);
            next += 1;
        }
        batch.commit(generation).unwrap();
        max_segments = max_segments.max(index.num_segments());
    }
    assert!(max_segments < 20, "segments grew to {max_segments}");
    assert_eq!(index.num_docs(), live.len() as u64);
    let indexed: BTreeSet<u64> = index
        .chunk_ids()
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(indexed, live);
    // Deleted chunks are gone, live ones found by their unique word.
    assert!(index.search("word0", 5, None).unwrap().is_empty());
    assert_eq!(
        index.search(&format!("word{}", next - 1), 1, None).unwrap()[0].point,
        next - 1
    );
    // Old segment files are collected: far fewer files than the 200 commits wrote segments.
    let files = std::fs::read_dir(&path).unwrap().count();
    assert!(files < 20 * 8, "{files} files left in the index directory");
    assert_eq!(index.generation(), Some(200));
}

#[test]
fn delete_twenty_add_twenty_touches_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    let mut batch = index.writer().unwrap();
    for n in 0..1000u64 {
        let (id, body) = (chunk_id(n), text(n));
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point: n,
                text: &body,
                path: "docs/x.md",
            })
            .unwrap();
    }
    batch.commit(1).unwrap();
    let mut batch = index.writer().unwrap();
    for n in 0..20u64 {
        batch.delete(&chunk_id(n * 7));
        let (id, body) = (chunk_id(5000 + n), text(5000 + n));
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point: 5000 + n,
                text: &body,
                path: "docs/y.md",
            })
            .unwrap();
    }
    batch.commit(2).unwrap();
    let mut expected: BTreeSet<u64> = (0..1000)
        .filter(|n: &u64| !(n.is_multiple_of(7) && n / 7 < 20))
        .collect();
    expected.extend(5000..5020);
    let indexed: BTreeSet<u64> = index
        .chunk_ids()
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(indexed, expected);
    assert!(
        index
            .search("word7", 3, None)
            .unwrap()
            .iter()
            .all(|h| h.point != 7)
    );
    assert_eq!(index.search("word8", 1, None).unwrap()[0].point, 8);
    assert_eq!(index.search("word5019", 1, None).unwrap()[0].point, 5019);
    assert_eq!(index.point_of(&chunk_id(5019)).unwrap(), Some(5019));
}
