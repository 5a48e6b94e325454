//! Recall against exact search on real all-MiniLM-L6-v2 embeddings (20,000 Traefik doc texts,
//! 500 held-out queries). Random vectors are the known worst case for graph indexes and are
//! used for the deletion and filter tests instead.

mod common;

use common::{Rng, real_embeddings, recall};
use rag_vector_index::{IndexParams, VectorIndex};

const QUERIES: usize = 500;
const K: usize = 10;

fn mean_recall(index: &VectorIndex, queries: &[Vec<f32>], graph_only: bool) -> f64 {
    let total: f64 = queries
        .iter()
        .map(|q| {
            let exact = index.search_exact(q, K, None).unwrap();
            let approx = if graph_only {
                index
                    .search_graph(q, K, index.params().ef_search, None)
                    .unwrap()
            } else {
                index.search(q, K, None).unwrap()
            };
            recall(&approx, &exact)
        })
        .sum();
    total / queries.len() as f64
}

#[test]
fn recall_at_10_is_at_least_095_at_default_ef_and_survives_deletes() {
    let (dim, vectors) = real_embeddings();
    assert!(vectors.len() >= 20_000 + QUERIES);
    let (data, queries) = vectors.split_at(vectors.len() - QUERIES);
    let items: Vec<(u64, Vec<f32>)> = data
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, v)| (i as u64, v))
        .collect();
    let params = IndexParams::default();
    assert!(
        items.len() >= params.exact_below,
        "the default search must take the graph path"
    );
    let mut index = VectorIndex::build(dim, params, items).unwrap();

    let graph = mean_recall(&index, queries, true);
    let default_path = mean_recall(&index, queries, false);
    eprintln!("recall@10 at default ef: graph {graph:.4}, search() {default_path:.4}");
    assert!(graph >= 0.95, "graph recall@10 {graph}");
    assert!(default_path >= 0.95, "search() recall@10 {default_path}");

    // 20% deleted (below the compaction threshold): the tombstone-filtered walk keeps recall.
    let mut rng = Rng::new(31);
    let mut deleted = 0;
    while deleted < data.len() / 5 {
        deleted += usize::from(index.delete(rng.below(data.len() as u64)));
    }
    assert!(!index.needs_compaction());
    let after = mean_recall(&index, queries, true);
    eprintln!("recall@10 with 20% tombstones: {after:.4}");
    assert!(after >= 0.95, "recall@10 with tombstones {after}");
}
