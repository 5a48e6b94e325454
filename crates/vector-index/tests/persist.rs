//! save / load: same results after reload, further updates after reload, corruption detected.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Rng, random_items};
use rag_vector_index::{IndexError, IndexParams, VectorIndex};

fn params() -> IndexParams {
    IndexParams {
        exact_below: 0,
        ef_construction: 64,
        ..IndexParams::default()
    }
}

fn queries(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.unit_vector(dim)).collect()
}

fn dir_size(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn saved(n: usize, dim: usize) -> (tempfile::TempDir, PathBuf, VectorIndex) {
    let items = random_items(21, n, dim, 500);
    let mut index = VectorIndex::build(dim, params(), items).unwrap();
    for id in (500..500 + n as u64).step_by(5) {
        index.delete(id);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gen-000001");
    index.save(&dir).unwrap();
    (tmp, dir, index)
}

#[test]
fn reload_gives_same_results_and_accepts_updates() {
    let dim = 32;
    let (_tmp, dir, mut index) = saved(3000, dim);
    let mut loaded = VectorIndex::load(&dir, params()).unwrap();
    assert_eq!(loaded.len(), index.len());
    assert_eq!(loaded.tombstones(), index.tombstones());
    assert_eq!(loaded.dim(), dim);
    let deny_odd = |id: u64| id.is_multiple_of(2);
    for q in queries(22, 40, dim) {
        assert_eq!(
            loaded.search(&q, 10, None).unwrap(),
            index.search(&q, 10, None).unwrap()
        );
        assert_eq!(
            loaded.search_graph(&q, 10, 32, Some(&deny_odd)).unwrap(),
            index.search_graph(&q, 10, 32, Some(&deny_odd)).unwrap()
        );
        assert_eq!(
            loaded.search_exact(&q, 10, None).unwrap(),
            index.search_exact(&q, 10, None).unwrap()
        );
    }
    // A reloaded hnsw_rs graph accepts further inserts and deletes. Two reloads given the same
    // updates answer identically; the original may not, since hnsw_rs restarts its level
    // generator on reload, so the new points can get other levels there.
    let mut twin = VectorIndex::load(&dir, params()).unwrap();
    let extra = random_items(23, 200, dim, 100_000);
    for (id, v) in &extra {
        loaded.insert(*id, v).unwrap();
        twin.insert(*id, v).unwrap();
        index.insert(*id, v).unwrap();
    }
    for id in 501..600 {
        let expected = index.delete(id);
        assert_eq!(loaded.delete(id), expected);
        assert_eq!(twin.delete(id), expected);
    }
    for (id, v) in extra.iter().take(50) {
        let hits = loaded.search(v, 1, None).unwrap();
        assert_eq!(hits[0].0, *id);
    }
    let (mut found, mut wanted) = (0, 0);
    for q in queries(24, 40, dim) {
        let graph = loaded.search_graph(&q, 10, 64, None).unwrap();
        assert_eq!(graph, twin.search_graph(&q, 10, 64, None).unwrap());
        let exact = loaded.search_exact(&q, 10, None).unwrap();
        assert_eq!(exact, index.search_exact(&q, 10, None).unwrap());
        wanted += exact.len();
        found += exact.iter().filter(|hit| graph.contains(hit)).count();
    }
    assert!(
        found as f64 >= 0.9 * wanted as f64,
        "recall after updates {found}/{wanted}"
    );
    // ...and can itself be saved again and reloaded.
    let dir2 = dir.with_file_name("gen-000002");
    loaded.save(&dir2).unwrap();
    let again = VectorIndex::load(&dir2, params()).unwrap();
    assert_eq!(again.len(), loaded.len());
    for q in queries(25, 20, dim) {
        assert_eq!(
            again.search(&q, 10, None).unwrap(),
            loaded.search(&q, 10, None).unwrap()
        );
    }
}

#[test]
fn save_never_overwrites() {
    let (_tmp, dir, index) = saved(300, 8);
    assert!(matches!(
        index.save(&dir),
        Err(IndexError::TargetNotEmpty { .. })
    ));
    let file = dir.join("MANIFEST");
    assert!(matches!(
        index.save(&file),
        Err(IndexError::TargetNotEmpty { .. })
    ));
    // An existing empty directory is fine.
    let empty = dir.with_file_name("empty");
    fs::create_dir(&empty).unwrap();
    index.save(&empty).unwrap();
    VectorIndex::load(&empty, params()).unwrap();
}

#[test]
fn empty_index_round_trips() {
    let index = VectorIndex::new(16, params()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    index.save(&dir).unwrap();
    let mut loaded = VectorIndex::load(&dir, params()).unwrap();
    assert!(loaded.is_empty());
    assert_eq!(loaded.dim(), 16);
    for (id, v) in random_items(26, 50, 16, 0) {
        loaded.insert(id, &v).unwrap();
    }
    assert_eq!(
        loaded
            .search(&random_items(26, 1, 16, 0)[0].1, 1, None)
            .unwrap()[0]
            .0,
        0
    );
}

fn expect_corrupt(dir: &Path) {
    match VectorIndex::load(dir, params()) {
        Err(IndexError::Corrupt { .. }) => {}
        Err(other) => panic!("expected Corrupt, got {other:?}"),
        Ok(_) => panic!("a damaged index loaded"),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn any_flipped_byte_is_detected() {
    let (_tmp, dir, _) = saved(500, 8);
    let names = files(&dir);
    assert_eq!(names.len(), 4, "{names:?}");
    for path in names {
        let original = fs::read(&path).unwrap();
        for at in [0, original.len() / 2, original.len() - 1] {
            let mut bytes = original.clone();
            bytes[at] ^= 0x40;
            fs::write(&path, &bytes).unwrap();
            expect_corrupt(&dir);
        }
        fs::write(&path, &original).unwrap();
        VectorIndex::load(&dir, params()).unwrap();
    }
}

#[test]
fn truncated_or_missing_files_are_detected() {
    let (_tmp, dir, _) = saved(500, 8);
    for path in files(&dir) {
        let original = fs::read(&path).unwrap();
        fs::write(&path, &original[..original.len() / 3]).unwrap();
        expect_corrupt(&dir);
        fs::write(&path, []).unwrap();
        expect_corrupt(&dir);
        fs::remove_file(&path).unwrap();
        expect_corrupt(&dir);
        fs::write(&path, &original).unwrap();
    }
    VectorIndex::load(&dir, params()).unwrap();
    // A directory that does not exist at all.
    expect_corrupt(&dir.with_file_name("never-written"));
}

#[test]
fn compaction_shrinks_what_is_saved() {
    let dim = 64;
    let items = random_items(27, 2000, dim, 0);
    let mut index = VectorIndex::build(dim, params(), items).unwrap();
    for id in 0..1500 {
        index.delete(id);
    }
    let tmp = tempfile::tempdir().unwrap();
    index.save(&tmp.path().join("before")).unwrap();
    index.compact().unwrap();
    index.save(&tmp.path().join("after")).unwrap();
    let before = dir_size(&tmp.path().join("before"));
    let after = dir_size(&tmp.path().join("after"));
    assert!(after * 3 < before, "before {before} after {after}");
    let loaded = VectorIndex::load(&tmp.path().join("after"), params()).unwrap();
    assert_eq!((loaded.len(), loaded.tombstones()), (500, 0));
}
