//! save / load: same results after reload, further updates after reload, corruption detected,
//! directories of earlier formats (before `search.bin`, and with its version 1, which kept
//! hnsw_rs's copy of the vectors) still loading.

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

/// A copy of `tests/fixtures/<name>`, a directory an earlier version saved, to load and damage.
fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    fs::create_dir(&dir).unwrap();
    for path in files(&from) {
        fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    (tmp, dir)
}

/// The items `tests/fixtures/search-v1` was saved from by rag-index at 2054fb0 (its last
/// version-1 writer): `random_items(21, 600, 16, 500)` in `params()`, every fifth id deleted.
fn fixture_items() -> Vec<(u64, Vec<f32>)> {
    random_items(21, 600, 16, 500)
        .into_iter()
        .filter(|(id, _)| (id - 500) % 5 != 0)
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    files(dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect()
}

/// What a save writes: one f32 copy of the vectors, in `vectors.bin`, and their codes in
/// `search.bin`.
const SAVED_FILES: [&str; 5] = [
    "MANIFEST",
    "graph.hnsw.graph",
    "search.bin",
    "slots.bin",
    "vectors.bin",
];
/// What a version-1 save wrote: hnsw_rs's data file held a second copy of the vectors.
const VERSION_1_FILES: [&str; 5] = [
    "MANIFEST",
    "graph.hnsw.data",
    "graph.hnsw.graph",
    "search.bin",
    "slots.bin",
];

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

/// Turns a version-1 directory into what the version before `search.bin` wrote: the same files
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

fn is_vector_rows(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "vectors.bin")
}

/// A damaged row of `vectors.bin`: searching still loads (it reads rows one at a time, each
/// checked), while the save check every sync runs, and any read of the whole table, refuse it.
fn expect_row_damage(dir: &Path, original: &VectorIndex) {
    assert!(matches!(
        VectorIndex::check_saved(dir),
        Err(IndexError::Corrupt { .. })
    ));
    let loaded = VectorIndex::load(dir, params()).unwrap();
    let q = &queries(37, 1, original.dim())[0];
    assert_eq!(loaded.search(q, 5, None).unwrap().len(), 5);
    match loaded.search_exact(q, 5, None) {
        Err(IndexError::Corrupt { path, .. }) => assert!(is_vector_rows(&path)),
        other => panic!("expected the damaged vectors.bin, got {other:?}"),
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
    assert_eq!(names(&dir), SAVED_FILES);
    for path in files(&dir) {
        let original = fs::read(&path).unwrap();
        for at in [0, original.len() / 2, original.len() - 1] {
            let mut bytes = original.clone();
            bytes[at] ^= 0x40;
            fs::write(&path, &bytes).unwrap();
            if is_hnsw_dump(&path) {
                expect_deferred_recovery(&dir, &index);
            } else if is_vector_rows(&path) {
                expect_row_damage(&dir, &index);
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
    let (_keep, v1) = fixture("search-v1");
    let index = VectorIndex::load(&v1, params()).unwrap();
    let (_tmp, dir) = fixture("search-v1");
    make_old_format(&dir);
    assert_eq!(
        names(&dir),
        [
            "MANIFEST",
            "graph.hnsw.data",
            "graph.hnsw.graph",
            "slots.bin"
        ]
    );
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
    // It updates and saves in the current format, which loads without the hnsw_rs dump.
    let extra = random_items(34, 20, dim, 800_000);
    for (id, v) in &extra {
        loaded.insert(*id, v).unwrap();
    }
    let dir2 = dir.with_file_name("new-format");
    loaded.save(&dir2).unwrap();
    assert_eq!(names(&dir2), SAVED_FILES);
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

/// A directory whose `search.bin` is version 1 lists hnsw_rs's data file, a second copy of
/// the vectors: it searches from `search.bin`, loads its graph from the data file when an
/// update needs it, and its next save stores the vectors once.
#[test]
fn version_1_directories_load_update_and_save_the_vectors_once() {
    let (_tmp, dir) = fixture("search-v1");
    assert_eq!(names(&dir), VERSION_1_FILES);
    let items = fixture_items();
    let mut loaded = VectorIndex::load(&dir, params()).unwrap();
    assert_eq!((loaded.len(), loaded.tombstones()), (480, 120));
    // Every saved vector is its own nearest neighbour, through the graph.
    for (id, v) in items.iter().step_by(7) {
        assert_eq!(loaded.search_graph(v, 1, 32, None).unwrap()[0].0, *id);
    }
    let extra = random_items(38, 30, 16, 900_000);
    for (id, v) in &extra {
        loaded.insert(*id, v).unwrap();
    }
    loaded.delete(501);
    let dir2 = dir.with_file_name("saved-again");
    loaded.save(&dir2).unwrap();
    assert_eq!(names(&dir2), SAVED_FILES);
    assert_eq!(
        names(&dir),
        VERSION_1_FILES,
        "loading the graph changed the old directory"
    );
    let mut again = VectorIndex::load(&dir2, params()).unwrap();
    assert_eq!(again.len(), 480 + 30 - 1);
    for q in queries(39, 20, 16) {
        assert_eq!(
            again.search(&q, 10, None).unwrap(),
            loaded.search(&q, 10, None).unwrap()
        );
    }
    // The graph of a version-2 directory loads from its one copy too: another full save.
    again.insert(7_000_000, &extra[0].1).unwrap();
    let dir3 = dir.with_file_name("third");
    again.save(&dir3).unwrap();
    assert_eq!(names(&dir2), SAVED_FILES, "the data file was left behind");
    let third = VectorIndex::load(&dir3, params()).unwrap();
    for (id, v) in items.iter().skip(1).step_by(11) {
        assert_eq!(third.search_graph(v, 1, 32, None).unwrap()[0].0, *id);
    }
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
    assert_eq!(names(&dir2), SAVED_FILES);
}

/// A process that only searches reads the f32 rows it rescores, not the table: with every other
/// row of `vectors.bin` damaged, a loaded index still answers exactly, scores bit for bit. On
/// real MiniLM embeddings of the Traefik docs, whose neighbourhoods are what the codes rank.
#[test]
fn a_loaded_index_reads_only_the_rows_it_rescores() {
    let (dim, real) = common::real_embeddings();
    let items: Vec<(u64, Vec<f32>)> = real[..3000]
        .iter()
        .enumerate()
        .map(|(i, v)| (500 + i as u64, v.clone()))
        .collect();
    let mut index = VectorIndex::build(dim, params(), items).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("real");
    index.save(&dir).unwrap();
    let path = dir.join("vectors.bin");
    let original = fs::read(&path).unwrap();
    for q in real[real.len() - 5..].iter() {
        let exact = index.search_exact(q, 10, None).unwrap();
        // Slots are the build order: the id minus the first id (500).
        let near: std::collections::HashSet<usize> = index
            .search_exact(q, 200, None)
            .unwrap()
            .iter()
            .map(|(id, _)| (id - 500) as usize)
            .collect();
        let mut bytes = original.clone();
        for slot in (0..3000).filter(|s| !near.contains(s)) {
            bytes[slot * 4 * dim + 1] ^= 0x40;
        }
        fs::write(&path, &bytes).unwrap();
        let loaded = VectorIndex::load(&dir, params()).unwrap();
        let found = loaded.search(q, 10, None).unwrap();
        assert_eq!(found.len(), 10);
        for ((id, score), (e_id, e_score)) in found.iter().zip(&exact) {
            assert_eq!((id, score.to_bits()), (e_id, e_score.to_bits()));
        }
        // The damage is still there for the checks that read every row.
        assert!(VectorIndex::check_saved(&dir).is_err());
    }
    fs::write(&path, &original).unwrap();
    VectorIndex::check_saved(&dir).unwrap();
}
