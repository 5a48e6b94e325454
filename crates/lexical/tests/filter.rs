//! The `allow` filter runs inside the scan: rare allowed points still fill k.

mod common;

use common::{chunk_id, index_docs};
use rag_lexical::{LexicalDoc, LexicalIndex, Scope};

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

/// Builds an index of `visible` docs (points 0..) and `hidden` docs (points 1000..), across two
/// commits (two segments).
fn index_of(dir: &std::path::Path, visible: &[&str], hidden: &[&str]) -> LexicalIndex {
    let index = LexicalIndex::open_or_create(dir).unwrap();
    for (generation, (texts, first)) in [(visible, 0u64), (hidden, 1000u64)].into_iter().enumerate()
    {
        let docs: Vec<(u64, &str, &str)> = (first..)
            .zip(texts.iter())
            .map(|(point, text)| (point, "notes.md", *text))
            .collect();
        index_docs(&index, &docs, generation as u64 + 1);
    }
    index
}

#[test]
fn scores_within_a_scope_do_not_depend_on_documents_outside_it() {
    let visible = [
        "Plans > Roadmap\nThe quarterly roadmap mentions the merger briefly.",
        "Plans > Budget\nThe budget for the merger review and the audit.",
        "Office\nNotes about the kitchen and parking.",
    ];
    // The same hidden documents but for the words a caller might probe for.
    let with_word = [
        "Secret\nThe merger with Initech closes in May. Merger terms are final.",
        "Board\nMerger merger merger.",
    ];
    let without_word = [
        "Secret\nThe lunch menu changes in May. Lunch terms are final.",
        "Board\nLunch lunch lunch.",
    ];
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let with = index_of(a.path(), &visible, &with_word);
    let without = index_of(b.path(), &visible, &without_word);
    let below = |point: u64| point < 1000;
    let scope = Scope::new("visible", &below);
    let scores = |index: &LexicalIndex, query: &str, scope: Option<Scope<'_>>| {
        index
            .search_within(query, 10, Some(&|p: u64| p < 1000), scope)
            .unwrap()
            .into_iter()
            .map(|h| (h.point, h.score))
            .collect::<Vec<_>>()
    };
    for query in ["merger", "merger roadmap", "merger budget kitchen"] {
        let (seen, control) = (
            scores(&with, query, Some(scope)),
            scores(&without, query, Some(scope)),
        );
        assert!(!seen.is_empty(), "{query}");
        assert_eq!(seen, control, "{query}: hidden documents moved the scores");
        // Index-wide statistics do depend on them: the reason for the scope.
        assert_ne!(
            scores(&with, query, None),
            scores(&without, query, None),
            "{query}"
        );
    }
    // Within the scope the scores are those of an index holding only the scoped documents.
    let c = tempfile::tempdir().unwrap();
    let alone = index_of(c.path(), &visible, &[]);
    let everything = |_: u64| true;
    let everything = Scope::new("all", &everything);
    for query in ["merger", "merger budget kitchen"] {
        let (seen, own) = (
            scores(&with, query, Some(scope)),
            scores(&alone, query, Some(everything)),
        );
        assert_eq!(seen, own, "{query}");
    }
    // An empty scope finds nothing (BM25's mean length is undefined there).
    // A delete changes what a scope holds of a segment: the same key then counts it afresh,
    // as an index that never had the deleted document does.
    let mut batch = with.writer().unwrap();
    batch.delete(&chunk_id(1));
    batch.commit(3).unwrap();
    with.reload().unwrap();
    let d = tempfile::tempdir().unwrap();
    let fewer = index_of(d.path(), &[visible[0], visible[2]], &[]);
    let (seen, own) = (
        scores(&with, "merger budget", Some(scope)),
        scores(&fewer, "merger budget", Some(everything)),
    );
    let scores_only = |hits: Vec<(u64, f32)>| hits.into_iter().map(|(_, s)| s).collect::<Vec<_>>();
    assert_eq!(scores_only(seen), scores_only(own), "after a delete");
    let nothing = |_: u64| false;
    assert!(scores(&with, "merger", Some(Scope::new("none", &nothing))).is_empty());
}

/// A small deterministic generator (xorshift), so the test needs no random crate and always
/// builds the same documents.
struct Words(u64);

impl Words {
    const VOCABULARY: [&'static str; 24] = [
        "router",
        "service",
        "middleware",
        "entrypoint",
        "certificate",
        "provider",
        "header",
        "timeout",
        "retry",
        "weight",
        "rule",
        "label",
        "docker",
        "kubernetes",
        "tls",
        "port",
        "health",
        "check",
        "buffer",
        "limit",
        "rate",
        "mirror",
        "sticky",
        "cookie",
    ];

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn text(&mut self, words: usize) -> String {
        let vocabulary = Self::VOCABULARY.len() as u64;
        (0..words)
            .map(|_| {
                // Skewed: low words are common, so some terms are in most documents.
                let pick = (self.next() % vocabulary).min(self.next() % vocabulary);
                Self::VOCABULARY[pick as usize]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[test]
fn hidden_documents_between_visible_ones_change_no_bit_of_a_score() {
    // The same visible documents, with different hidden ones between them in the same segment:
    // they shift doc IDs and fill posting blocks, so they change the order in which a scan meets
    // each term (and so the float sum of a score) and the per-block best scores block-WAND skips
    // by (chosen with the whole segment's statistics, so a long hidden document can hide a short
    // visible one). A scope's hits and scores must carry none of that, down to the last bit.
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    let visible: Vec<String> = (0..1500)
        .map(|_| {
            let len = 4 + (words.next() % 40) as usize;
            words.text(len)
        })
        .collect();
    let build = |dir: &std::path::Path, seed: u64| {
        let mut hidden = Words(seed);
        let mut docs: Vec<(u64, String)> = Vec::new();
        for (point, text) in visible.iter().enumerate() {
            for _ in 0..hidden.next() % 3 {
                let len = 4 + (hidden.next() % 400) as usize;
                docs.push((100_000 + docs.len() as u64, hidden.text(len)));
            }
            docs.push((point as u64, text.clone()));
        }
        let index = LexicalIndex::open_or_create(dir).unwrap();
        let docs: Vec<(u64, &str, &str)> = docs
            .iter()
            .map(|(point, text)| (*point, "notes.md", text.as_str()))
            .collect();
        index_docs(&index, &docs, 1);
        index
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = build(a.path(), 11);
    let other = build(b.path(), 12_345);
    let visible_only = |point: u64| point < 100_000;
    let scope = Scope::new("visible", &visible_only);
    let hits = |index: &LexicalIndex, query: &str| {
        index
            .search_within(query, 10, Some(&visible_only), Some(scope))
            .unwrap()
            .into_iter()
            .map(|h| (h.point, h.score.to_bits()))
            .collect::<Vec<_>>()
    };
    let mut queries = Words(77);
    for _ in 0..300 {
        let len = 2 + (queries.next() % 7) as usize;
        let query = queries.text(len);
        let seen = hits(&one, &query);
        assert_eq!(seen.len(), 10, "{query}");
        assert_eq!(
            seen,
            hits(&other, &query),
            "{query}: hidden documents moved a score"
        );
    }
}
