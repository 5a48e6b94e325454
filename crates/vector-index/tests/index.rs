//! Behaviour of the public API on seeded random vectors.

mod common;

use std::collections::HashSet;

use common::{Rng, random_items, recall};
use rag_vector_index::{IndexError, IndexParams, VectorIndex};

type Filter = dyn Fn(u64) -> bool + Sync;

/// Graph path forced at any size, small enough graphs to build fast in tests.
fn graph_params() -> IndexParams {
    IndexParams {
        exact_below: 0,
        ef_construction: 64,
        ..IndexParams::default()
    }
}

#[test]
fn exact_path_returns_true_neighbours_best_first() {
    let items = random_items(1, 500, 32, 1000);
    let index = VectorIndex::build(32, IndexParams::default(), items.clone()).unwrap();
    assert_eq!(index.len(), 500);
    let q = &items[7].1;
    let hits = index.search(q, 5, None).unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].0, 1007);
    assert!((hits[0].1 - 1.0).abs() < 1e-5);
    assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    // Below exact_below the default search is the exact scan.
    assert_eq!(hits, index.search_exact(q, 5, None).unwrap());
}

#[test]
fn graph_path_finds_near_neighbours() {
    let dim = 24;
    let items = random_items(2, 3000, dim, 0);
    let index = VectorIndex::build(dim, graph_params(), items).unwrap();
    let mut rng = Rng::new(99);
    let mut total = 0.0;
    for _ in 0..50 {
        let q = rng.unit_vector(dim);
        let approx = index.search(&q, 10, None).unwrap();
        let exact = index.search_exact(&q, 10, None).unwrap();
        assert_eq!(approx.len(), 10);
        total += recall(&approx, &exact);
    }
    assert!(total / 50.0 > 0.9, "recall {}", total / 50.0);
}

#[test]
fn deleted_ids_are_never_returned_even_when_most_are_deleted() {
    let dim = 16;
    let n = 4000;
    let items = random_items(3, n, dim, 0);
    let mut index = VectorIndex::build(dim, graph_params(), items.clone()).unwrap();
    let mut rng = Rng::new(4);
    let mut deleted = HashSet::new();
    // Delete 95%, checking as we go at several levels of deletion.
    let mut order: Vec<u64> = (0..n as u64).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (step, id) in order.iter().take(n * 95 / 100).enumerate() {
        assert!(index.delete(*id));
        assert!(!index.delete(*id), "second delete reports not live");
        deleted.insert(*id);
        if step % 950 == 0 || step + 1 == n * 95 / 100 {
            for ef in [1, 10, 64] {
                for k in [1, 10, 100] {
                    let q = rng.unit_vector(dim);
                    let hits = index.search_graph(&q, k, ef, None).unwrap();
                    assert!(hits.iter().all(|h| !deleted.contains(&h.0)));
                    let hits = index.search(&q, k, None).unwrap();
                    assert!(hits.iter().all(|h| !deleted.contains(&h.0)));
                    assert_eq!(
                        hits.len(),
                        k.min(index.len()),
                        "k results while live ones exist"
                    );
                    let exact = index.search_exact(&q, k, None).unwrap();
                    assert!(exact.iter().all(|h| !deleted.contains(&h.0)));
                }
            }
        }
    }
    assert_eq!(index.len(), n - deleted.len());
    assert_eq!(index.tombstones(), deleted.len());
    assert!(index.needs_compaction());
    index.compact().unwrap();
    assert_eq!(index.tombstones(), 0);
    assert_eq!(index.len(), n - deleted.len());
    let q = rng.unit_vector(dim);
    let hits = index.search(&q, 10, None).unwrap();
    assert_eq!(hits.len(), 10);
    assert!(hits.iter().all(|h| !deleted.contains(&h.0)));
    // Deleting everything leaves an empty, searchable index.
    for id in 0..n as u64 {
        index.delete(id);
    }
    assert!(index.is_empty());
    assert!(index.search(&q, 10, None).unwrap().is_empty());
}

#[test]
fn deleted_id_can_be_inserted_again() {
    let items = random_items(5, 100, 8, 0);
    let mut index = VectorIndex::build(8, graph_params(), items.clone()).unwrap();
    assert!(matches!(
        index.insert(3, &items[3].1),
        Err(IndexError::DuplicateId(3))
    ));
    assert!(index.delete(3));
    index.insert(3, &items[4].1).unwrap();
    assert_eq!(index.len(), 100);
    let hits = index.search(&items[4].1, 2, None).unwrap();
    let ids: HashSet<u64> = hits.iter().map(|h| h.0).collect();
    assert_eq!(ids, HashSet::from([3, 4]));
}

#[test]
fn filter_is_respected_and_still_yields_k() {
    let dim = 16;
    let n = 10_000;
    let items = random_items(6, n, dim, 0);
    let mut index = VectorIndex::build(dim, graph_params(), items).unwrap();
    for id in (0..n as u64).filter(|id| id % 7 == 0) {
        index.delete(id);
    }
    let mut rng = Rng::new(7);
    // Broad (2/3: graph walk), selective (1/100: flat scan) and tiny (3 ids) filters.
    let filters: Vec<(Box<Filter>, usize)> = vec![
        (Box::new(|id| id % 3 != 0), 10),
        (Box::new(|id| id % 100 == 1), 10),
        (Box::new(|id| id == 5 || id == 6 || id == 7), 10),
    ];
    for (f, k) in &filters {
        let matching = (0..n as u64).filter(|&id| f(id) && id % 7 != 0).count();
        for _ in 0..20 {
            let q = rng.unit_vector(dim);
            let hits = index.search(&q, *k, Some(f.as_ref())).unwrap();
            assert!(hits.iter().all(|h| f(h.0) && h.0 % 7 != 0));
            assert_eq!(hits.len(), (*k).min(matching));
            let exact = index.search_exact(&q, *k, Some(f.as_ref())).unwrap();
            assert!(recall(&hits, &exact) >= 0.7);
            // The graph walk alone also applies the filter inside.
            let graph = index.search_graph(&q, *k, 64, Some(f.as_ref())).unwrap();
            assert!(graph.iter().all(|h| f(h.0) && h.0 % 7 != 0));
        }
    }
    // A filter matching nothing gives nothing.
    let none = |_: u64| false;
    assert!(
        index
            .search(&rng.unit_vector(dim), 5, Some(&none))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn validation_errors_not_panics() {
    for bad in [
        IndexParams {
            max_connections: 300,
            ..IndexParams::default()
        },
        IndexParams {
            max_connections: 0,
            ..IndexParams::default()
        },
        IndexParams {
            ef_construction: 0,
            ..IndexParams::default()
        },
        IndexParams {
            ef_search: 0,
            ..IndexParams::default()
        },
        IndexParams {
            compact_ratio: 0.0,
            ..IndexParams::default()
        },
        IndexParams {
            compact_ratio: f32::NAN,
            ..IndexParams::default()
        },
        IndexParams {
            compact_ratio: 1.5,
            ..IndexParams::default()
        },
    ] {
        assert!(matches!(
            VectorIndex::new(8, bad.clone()),
            Err(IndexError::InvalidParams(_))
        ));
        assert!(VectorIndex::build(8, bad, vec![]).is_err());
    }
    assert!(matches!(
        VectorIndex::new(0, IndexParams::default()),
        Err(IndexError::InvalidParams(_))
    ));
    let mut index = VectorIndex::new(4, IndexParams::default()).unwrap();
    assert!(matches!(
        index.insert(1, &[1.0, 0.0]),
        Err(IndexError::DimensionMismatch {
            expected: 4,
            got: 2
        })
    ));
    assert!(matches!(
        index.insert(1, &[0.0; 4]),
        Err(IndexError::InvalidVector { .. })
    ));
    assert!(matches!(
        index.insert(1, &[f32::NAN, 0.0, 0.0, 1.0]),
        Err(IndexError::InvalidVector { .. })
    ));
    assert!(matches!(
        index.search(&[1.0, 0.0], 3, None),
        Err(IndexError::DimensionMismatch { .. })
    ));
    assert!(
        index
            .search(&[1.0, 0.0, 0.0, 0.0], 3, None)
            .unwrap()
            .is_empty()
    );
    // An unnormalised vector is normalised, not rejected.
    index.insert(1, &[3.0, 4.0, 0.0, 0.0]).unwrap();
    let hits = index.search(&[0.0, 2.0, 0.0, 0.0], 1, None).unwrap();
    assert!((hits[0].1 - 0.8).abs() < 1e-6);
    // build rejects duplicates without building anything.
    let dup = vec![(1, vec![1.0, 0.0, 0.0, 0.0]), (1, vec![0.0, 1.0, 0.0, 0.0])];
    assert!(matches!(
        VectorIndex::build(4, IndexParams::default(), dup),
        Err(IndexError::DuplicateId(1))
    ));
    // insert_many is all-or-nothing.
    let batch = vec![(2, vec![1.0, 0.0, 0.0, 0.0]), (3, vec![1.0, 0.0])];
    assert!(index.insert_many(batch).is_err());
    assert_eq!(index.len(), 1);
}

#[test]
fn normalised_duplicates_do_not_panic_the_graph() {
    // Many copies of the same vector: dot(v, v) rounds above 1 for some of them.
    let dim = 384;
    let mut rng = Rng::new(8);
    let base: Vec<Vec<f32>> = (0..50).map(|_| rng.unit_vector(dim)).collect();
    let items: Vec<(u64, Vec<f32>)> = (0..3000u64)
        .map(|i| (i, base[(i % 50) as usize].clone()))
        .collect();
    let index = VectorIndex::build(dim, graph_params(), items).unwrap();
    let hits = index.search(&base[0], 10, None).unwrap();
    assert_eq!(hits.len(), 10);
    assert!(hits.iter().all(|h| h.0 % 50 == 0 && h.1 > 0.9999));
}

#[test]
fn searches_from_several_threads() {
    let dim = 16;
    let items = random_items(9, 2000, dim, 0);
    let index = VectorIndex::build(dim, graph_params(), items.clone()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let index = &index;
            let items = &items;
            s.spawn(move || {
                for i in (t..200).step_by(4) {
                    let hits = index.search(&items[i].1, 1, None).unwrap();
                    assert_eq!(hits[0].0, i as u64);
                }
            });
        }
    });
}

#[test]
fn seeded_builds_are_deterministic() {
    let dim = 32;
    let items = random_items(10, 3000, dim, 0);
    let params = IndexParams {
        seed: Some(42),
        ..graph_params()
    };
    let a = VectorIndex::build(dim, params.clone(), items.clone()).unwrap();
    let b = VectorIndex::build(dim, params, items).unwrap();
    let mut rng = Rng::new(11);
    for _ in 0..50 {
        let q = rng.unit_vector(dim);
        assert_eq!(
            a.search_graph(&q, 10, 16, None).unwrap(),
            b.search_graph(&q, 10, 16, None).unwrap()
        );
    }
}

#[test]
fn compaction_threshold() {
    let items = random_items(12, 100, 8, 0);
    let params = IndexParams {
        compact_ratio: 0.25,
        ..IndexParams::default()
    };
    let mut index = VectorIndex::build(8, params, items).unwrap();
    for id in 0..25 {
        index.delete(id);
    }
    assert!(!index.needs_compaction(), "25 of 100 is not above 0.25");
    assert!(!index.maybe_compact().unwrap());
    index.delete(25);
    assert!(index.needs_compaction());
    assert!(index.maybe_compact().unwrap());
    assert_eq!((index.len(), index.tombstones()), (74, 0));
    assert!(!index.contains(0));
    assert!(index.contains(99));
}

#[test]
fn graph_and_exact_scores_are_bit_identical() {
    // 384 is the real dimension (whole SIMD blocks); 37 exercises the partial tail.
    for dim in [384, 37] {
        let items = random_items(12, 2500, dim, 0);
        let index = VectorIndex::build(dim, graph_params(), items).unwrap();
        let mut rng = Rng::new(13);
        for _ in 0..20 {
            let q = rng.unit_vector(dim);
            let exact = index.search_exact(&q, 50, None).unwrap();
            for (id, score) in index.search_graph(&q, 10, 64, None).unwrap() {
                if let Some(e) = exact.iter().find(|e| e.0 == id) {
                    assert_eq!(e.1.to_bits(), score.to_bits(), "dim {dim} id {id}");
                }
            }
        }
    }
}

#[test]
fn a_filter_may_itself_search() {
    let dim = 16;
    let items = random_items(14, 3000, dim, 0);
    let index = VectorIndex::build(dim, graph_params(), items.clone()).unwrap();
    let probe = items[0].1.clone();
    // The walk's per-thread buffers are busy while the filter runs its own walk.
    let nested = |id: u64| {
        id.is_multiple_of(2) && !index.search_graph(&probe, 1, 16, None).unwrap().is_empty()
    };
    let q = &items[42].1;
    let hits = index.search_graph(q, 5, 32, Some(&nested)).unwrap();
    assert_eq!(hits[0].0, 42);
    assert!(hits.iter().all(|h| h.0.is_multiple_of(2)));
}
