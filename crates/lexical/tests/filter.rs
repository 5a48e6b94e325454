//! The `allow` filter runs inside the scan: rare allowed points still fill k.

mod common;

use common::chunk_id;
use rag_lexical::{LexicalDoc, LexicalIndex};

#[test]
fn rare_allowed_points_still_fill_k() {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    // 10,000 matching docs in a few commits (so several segments), with varied scores.
    for part in 0..4u64 {
        let mut batch = index.writer().unwrap();
        for n in part * 2500..(part + 1) * 2500 {
            let id = chunk_id(n);
            let body = format!(
                "Routers > Rule\nrouter {} rule text {n}",
                "router ".repeat((n / 100 % 5) as usize)
            );
            batch
                .add(LexicalDoc {
                    chunk_id: &id,
                    point: n,
                    text: &body,
                    path: "routing/x.md",
                })
                .unwrap();
        }
        batch.commit(part + 1).unwrap();
    }
    assert_eq!(index.num_docs(), 10_000);
    let allow = |point: u64| point % 100 == 37; // 1% of points.
    let hits = index.search("router", 10, Some(&allow)).unwrap();
    assert_eq!(hits.len(), 10);
    assert!(hits.iter().all(|h| allow(h.point)), "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // The best allowed docs: those with the most `router` repeats.
    assert!(hits.iter().all(|h| h.point / 100 % 5 == 4), "{hits:?}");
    // Fewer allowed matches than k: all of them, and no others.
    let only_two = |point: u64| point == 5 || point == 9_999;
    let mut points: Vec<u64> = index
        .search("router", 10, Some(&only_two))
        .unwrap()
        .into_iter()
        .map(|h| h.point)
        .collect();
    points.sort();
    assert_eq!(points, [5, 9_999]);
    assert!(
        index
            .search("router", 10, Some(&|_| false))
            .unwrap()
            .is_empty()
    );
    // Without a filter: k hits, the best-scoring ones.
    assert_eq!(index.search("router", 10, None).unwrap().len(), 10);
}
