//! Incremental saves: a delta beside its base holds exactly the changes, loads to the same
//! answers, is folded into a full save past its limit, and is refused when damaged or when its
//! base is not the save it was written against.

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

const DIM: usize = 24;

fn queries(seed: u64, n: usize) -> Vec<Vec<f32>> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.unit_vector(DIM)).collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Same live set and same answers, exact and through the graph.
fn assert_same(a: &VectorIndex, b: &VectorIndex) {
    assert_eq!(a.len(), b.len());
    for q in queries(77, 30) {
        assert_eq!(
            a.search_exact(&q, 10, None).unwrap(),
            b.search_exact(&q, 10, None).unwrap()
        );
        assert_eq!(
            a.search(&q, 10, None).unwrap(),
            b.search(&q, 10, None).unwrap()
        );
    }
}

/// A full save of `n` random vectors in `gen-1` of a new temporary directory.
fn saved_base(seed: u64, n: usize, params: &IndexParams) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("gen-1");
    let items = random_items(seed, n, DIM, 0);
    let mut index = VectorIndex::build(DIM, params.clone(), items).unwrap();
    index.save(&base).unwrap();
    (tmp, base)
}

#[test]
fn an_edit_saves_a_delta_that_loads_to_the_same_index() {
    let (tmp, base) = saved_base(5, 3000, &params());

    // An edit as a sync makes it: load without the vectors, delete a few, insert their new ones.
    let mut edited = VectorIndex::load_deferred(&base, params()).unwrap();
    for id in [3u64, 10, 2999] {
        assert!(edited.delete(id));
    }
    edited.insert_many(random_items(6, 4, DIM, 10_000)).unwrap();
    assert_eq!(edited.pending(), 4);
    let gen2 = tmp.path().join("gen-2");
    edited.save_incremental(&gen2).unwrap();
    assert_eq!(names(&gen2), ["MANIFEST", "delta.bin"]);
    assert!(
        fs::metadata(gen2.join("delta.bin")).unwrap().len() < 3000 + 4 * (8 + 4 * DIM as u64) + 64
    );
    assert_eq!(VectorIndex::saved_base(&gen2).unwrap(), Some(base.clone()));
    assert_eq!(VectorIndex::saved_base(&base).unwrap(), None);
    VectorIndex::check_saved(&gen2).unwrap();

    let reloaded = VectorIndex::load(&gen2, params()).unwrap();
    assert_eq!(reloaded.len(), 3000 - 3 + 4);
    assert!(!reloaded.contains(10) && reloaded.contains(10_002));
    assert_same(&reloaded, &edited);
    // The pending vectors are found: each is its own nearest neighbour.
    for (id, v) in random_items(6, 4, DIM, 10_000) {
        assert_eq!(reloaded.search(&v, 1, None).unwrap()[0].0, id);
    }

    // A second edit on top of the delta writes a delta against the same base, cumulative, so
    // the first delta can go.
    let mut again = VectorIndex::load_deferred(&gen2, params()).unwrap();
    again.delete(10_001);
    again.delete(7);
    again.insert(20_000, &Rng::new(9).unit_vector(DIM)).unwrap();
    let gen3 = tmp.path().join("gen-3");
    again.save_incremental(&gen3).unwrap();
    assert_eq!(VectorIndex::saved_base(&gen3).unwrap(), Some(base.clone()));
    assert!(VectorIndex::remove_saved(&gen2).unwrap());
    let third = VectorIndex::load(&gen3, params()).unwrap();
    assert_eq!(third.len(), 3000 - 3 + 4 - 2 + 1);
    assert_same(&third, &again);
}

#[test]
fn pending_vectors_past_the_limit_are_folded_into_a_full_save() {
    let small = IndexParams {
        exact_below: 100,
        ..params()
    };
    let (tmp, base) = saved_base(1, 2000, &small);
    let mut loaded = VectorIndex::load_deferred(&base, small.clone()).unwrap();
    assert_eq!(loaded.delta_limit(), 100);
    loaded
        .insert_many(random_items(2, 101, DIM, 50_000))
        .unwrap();
    let gen2 = tmp.path().join("gen-2");
    loaded.save_incremental(&gen2).unwrap();
    assert_eq!(VectorIndex::saved_base(&gen2).unwrap(), None);
    assert!(names(&gen2).contains(&"search.bin".to_string()));
    assert_eq!(loaded.pending(), 0);
    // Independent of the old base now.
    assert!(VectorIndex::remove_saved(&base).unwrap());
    let reloaded = VectorIndex::load(&gen2, small).unwrap();
    assert_eq!(reloaded.len(), 2101);
    assert_same(&reloaded, &loaded);
}

#[test]
fn a_damaged_delta_or_a_replaced_base_is_refused() {
    let (tmp, base) = saved_base(3, 2500, &params());
    let mut edited = VectorIndex::load_deferred(&base, params()).unwrap();
    edited.delete(5);
    edited.insert_many(random_items(4, 3, DIM, 9_000)).unwrap();
    let gen2 = tmp.path().join("gen-2");
    edited.save_incremental(&gen2).unwrap();

    let delta = gen2.join("delta.bin");
    let original = fs::read(&delta).unwrap();
    for at in [0, 40, original.len() - 3] {
        let mut bytes = original.clone();
        bytes[at] ^= 0x10;
        fs::write(&delta, &bytes).unwrap();
        for err in [
            VectorIndex::load(&gen2, params()).err().unwrap(),
            VectorIndex::check_saved(&gen2).err().unwrap(),
        ] {
            assert!(matches!(err, IndexError::Corrupt { .. }), "{err:?}");
        }
    }
    fs::write(&delta, &original).unwrap();
    VectorIndex::load(&gen2, params()).unwrap();

    // Another full save under the base's name: the delta was not written against it.
    VectorIndex::remove_saved(&base).unwrap();
    let mut other = VectorIndex::build(DIM, params(), random_items(3, 2500, DIM, 0)).unwrap();
    other.delete(1);
    other.save(&base).unwrap();
    for err in [
        VectorIndex::load(&gen2, params()).err().unwrap(),
        VectorIndex::check_saved(&gen2).err().unwrap(),
    ] {
        assert!(matches!(err, IndexError::Corrupt { .. }), "{err:?}");
    }
    // And with the base gone the delta cannot load at all.
    VectorIndex::remove_saved(&base).unwrap();
    assert!(VectorIndex::load(&gen2, params()).is_err());
    assert!(VectorIndex::remove_saved(&gen2).unwrap());
}

#[test]
fn a_deferred_load_reads_the_vectors_only_when_a_search_needs_them() {
    let (_tmp, base) = saved_base(8, 2500, &params());
    let deferred = VectorIndex::load_deferred(&base, params()).unwrap();
    // Damage the vectors after the deferred load: the search that reads them says so.
    let search = base.join("search.bin");
    let mut bytes = fs::read(&search).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&search, &bytes).unwrap();
    let err = deferred.search(&queries(1, 1)[0], 5, None).err().unwrap();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err:?}");
    assert!(matches!(
        VectorIndex::load(&base, params()),
        Err(IndexError::Corrupt { .. })
    ));
}
