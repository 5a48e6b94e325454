//! save / load: same results after reload, further updates after reload, corruption detected,
//! directories of the format before `search.bin` still loading.

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
    let (_tmp, dir, mut index) = saved(300, 8);
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
    let mut index = VectorIndex::new(16, params()).unwrap();
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

/// Turns a saved directory into what the version before `search.bin` wrote: the same files
/// without it, and a manifest (with its checksum) that does not list it.
fn make_old_format(dir: &Path) {
    fs::remove_file(dir.join("search.bin")).unwrap();
    let manifest = fs::read_to_string(dir.join("MANIFEST")).unwrap();
    let body: String = manifest
        .lines()
        .filter(|l| !l.starts_with("checksum=") && !l.starts_with("file=search.bin "))
        .map(|l| format!("{l}\n"))
        .collect();
    let checksum = blake3::hash(body.as_bytes()).to_hex();
    fs::write(dir.join("MANIFEST"), format!("{body}checksum={checksum}\n")).unwrap();
}

fn is_hnsw_dump(path: &Path) -> bool {
    path.to_str().unwrap().contains(".hnsw.")
}

/// The hnsw_rs dump of a new-format directory is only read when an insert or `save` needs it:
/// a damaged one still loads for searching (from `search.bin`, answering exactly like
/// `original`), and the first update finds the damage and rebuilds the graph from the verified
/// vectors instead of trusting it.
fn expect_deferred_recovery(dir: &Path, original: &VectorIndex) {
    let mut loaded = VectorIndex::load(dir, params()).unwrap();
    for q in queries(31, 5, original.dim()) {
        assert_eq!(
            loaded.search_graph(&q, 5, 16, None).unwrap(),
            original.search_graph(&q, 5, 16, None).unwrap()
        );
    }
    let extra = random_items(32, 3, original.dim(), 900_000);
    for (id, v) in &extra {
        loaded.insert(*id, v).unwrap();
    }
    assert_eq!(loaded.search(&extra[0].1, 1, None).unwrap()[0].0, 900_000);
    let again = dir.with_file_name("after-recovery");
    loaded.save(&again).unwrap();
    let reloaded = VectorIndex::load(&again, params()).unwrap();
    assert_eq!(reloaded.len(), original.len() + extra.len());
    fs::remove_dir_all(&again).unwrap();
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
    let (_tmp, dir, index) = saved(500, 8);
    let names = files(&dir);
    assert_eq!(names.len(), 5, "{names:?}");
    for path in names {
        let original = fs::read(&path).unwrap();
        for at in [0, original.len() / 2, original.len() - 1] {
            let mut bytes = original.clone();
            bytes[at] ^= 0x40;
            fs::write(&path, &bytes).unwrap();
            if is_hnsw_dump(&path) {
                expect_deferred_recovery(&dir, &index);
            } else {
                expect_corrupt(&dir);
            }
        }
        fs::write(&path, &original).unwrap();
        VectorIndex::load(&dir, params()).unwrap();
    }
}

#[test]
fn truncated_or_missing_files_are_detected() {
    let (_tmp, dir, index) = saved(500, 8);
    for path in files(&dir) {
        let check = |dir: &Path| {
            if is_hnsw_dump(&path) {
                expect_deferred_recovery(dir, &index);
            } else {
                expect_corrupt(dir);
            }
        };
        let original = fs::read(&path).unwrap();
        fs::write(&path, &original[..original.len() / 3]).unwrap();
        check(&dir);
        fs::write(&path, []).unwrap();
        check(&dir);
        fs::remove_file(&path).unwrap();
        check(&dir);
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

#[test]
fn old_format_directories_load_and_are_fully_checked() {
    let dim = 16;
    let (_tmp, dir, index) = saved(2500, dim);
    make_old_format(&dir);
    assert_eq!(files(&dir).len(), 4);
    let mut loaded = VectorIndex::load(&dir, params()).unwrap();
    assert_eq!(
        (loaded.len(), loaded.tombstones()),
        (index.len(), index.tombstones())
    );
    for q in queries(33, 20, dim) {
        assert_eq!(
            loaded.search(&q, 10, None).unwrap(),
            index.search(&q, 10, None).unwrap()
        );
    }
    // It updates and saves in the new format, which loads without the hnsw_rs dump.
    let extra = random_items(34, 20, dim, 800_000);
    for (id, v) in &extra {
        loaded.insert(*id, v).unwrap();
    }
    let dir2 = dir.with_file_name("new-format");
    loaded.save(&dir2).unwrap();
    assert_eq!(files(&dir2).len(), 5);
    let again = VectorIndex::load(&dir2, params()).unwrap();
    for q in queries(35, 20, dim) {
        assert_eq!(
            again.search(&q, 10, None).unwrap(),
            loaded.search(&q, 10, None).unwrap()
        );
    }
    // Without `search.bin` the hnsw_rs dump is what searches use: it is verified at load.
    for path in files(&dir) {
        let original = fs::read(&path).unwrap();
        let mut bytes = original.clone();
        bytes[original.len() / 2] ^= 0x40;
        fs::write(&path, &bytes).unwrap();
        expect_corrupt(&dir);
        fs::write(&path, &original[..original.len() / 3]).unwrap();
        expect_corrupt(&dir);
        fs::write(&path, &original).unwrap();
    }
    VectorIndex::load(&dir, params()).unwrap();
}

#[test]
fn loaded_index_saves_after_deletes_only() {
    // No insert loads the hnsw_rs graph first: `save` does, from the directory it came from.
    let dim = 16;
    let (_tmp, dir, mut index) = saved(2500, dim);
    let mut loaded = VectorIndex::load(&dir, params()).unwrap();
    for id in (500..1000).step_by(3) {
        assert_eq!(loaded.delete(id), index.delete(id));
    }
    let dir2 = dir.with_file_name("deletes-only");
    loaded.save(&dir2).unwrap();
    let again = VectorIndex::load(&dir2, params()).unwrap();
    assert_eq!(
        (again.len(), again.tombstones()),
        (index.len(), index.tombstones())
    );
    for q in queries(36, 20, dim) {
        assert_eq!(
            again.search(&q, 10, None).unwrap(),
            index.search(&q, 10, None).unwrap()
        );
    }
    // The dump written by that `save` is a complete graph in its own right.
    make_old_format(&dir2);
    let old = VectorIndex::load(&dir2, params()).unwrap();
    for q in queries(37, 20, dim) {
        assert_eq!(
            old.search(&q, 10, None).unwrap(),
            index.search(&q, 10, None).unwrap()
        );
    }
}
