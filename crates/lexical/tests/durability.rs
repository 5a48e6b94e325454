//! Commits are atomic and carry the generation; dropped batches vanish; damage is an error.

mod common;

use std::fs;
use std::path::Path;

use common::{chunk_id, index_docs, points};
use rag_lexical::{LexicalDoc, LexicalError, LexicalIndex};

const DOCS: &[(u64, &str, &str)] = &[
    (
        1,
        "a.md",
        "Alpha > Intro\nThe alpha service listens on port 8080.",
    ),
    (
        2,
        "b.md",
        "Beta > Intro\nThe beta service uses maxConcurrentStreams.",
    ),
    (3, "c.md", "Gamma > Intro\nGamma forwards X-Forwarded-For."),
];

fn sorted_ids(index: &LexicalIndex) -> Vec<(String, u64)> {
    let mut ids = index.chunk_ids().unwrap();
    ids.sort();
    ids
}

#[test]
fn generation_is_none_until_first_commit_then_follows_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    let index = LexicalIndex::open_or_create(&path).unwrap();
    assert_eq!((index.generation(), index.num_docs()), (None, 0));
    index_docs(&index, DOCS, 41);
    assert_eq!(index.generation(), Some(41));
    index.writer().unwrap().commit(42).unwrap();
    assert_eq!((index.generation(), index.num_docs()), (Some(42), 3));
    drop(index);
    let index = LexicalIndex::open_or_create(&path).unwrap();
    assert_eq!((index.generation(), index.num_docs()), (Some(42), 3));
}

#[test]
fn dropped_batch_leaves_the_last_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    let index = LexicalIndex::open_or_create(&path).unwrap();
    index_docs(&index, DOCS, 1);
    let before = sorted_ids(&index);
    {
        let mut batch = index.writer().unwrap();
        batch.delete(&chunk_id(1));
        batch.delete(&chunk_id(2));
        let id = chunk_id(99);
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point: 99,
                text: "zeta unique",
                path: "z.md",
            })
            .unwrap();
        batch.clear().unwrap();
        // Dropped without commit.
    }
    assert_eq!(sorted_ids(&index), before);
    // The next batch starts from the last commit, not from the discarded one.
    index.writer().unwrap().commit(2).unwrap();
    assert_eq!(sorted_ids(&index), before);
    assert!(points(&index, "zeta", 5).is_empty());
    drop(index);
    let reopened = LexicalIndex::open_read_only(&path).unwrap();
    assert_eq!(
        (sorted_ids(&reopened), reopened.generation()),
        (before, Some(2))
    );
    assert_eq!(points(&reopened, "alpha", 5), [1]);
}

#[test]
fn dropped_index_with_open_batch_leaves_the_last_commit() {
    // The closest in-process stand-in for a kill: the whole writer goes away mid-batch.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    let index = LexicalIndex::open_or_create(&path).unwrap();
    index_docs(&index, DOCS, 5);
    let mut batch = index.writer().unwrap();
    for n in 100..3000 {
        let id = chunk_id(n);
        batch
            .add(LexicalDoc {
                chunk_id: &id,
                point: n,
                text: "pending words",
                path: "p.md",
            })
            .unwrap();
    }
    batch.delete(&chunk_id(3));
    std::mem::forget(batch); // No rollback runs: like a crash, only the files on disk are left.
    drop(index);
    let index = LexicalIndex::open_or_create(&path).unwrap();
    assert_eq!((index.generation(), index.num_docs()), (Some(5), 3));
    assert!(points(&index, "pending", 5).is_empty());
    assert_eq!(points(&index, "gamma", 5), [3]);
}

#[test]
fn replace_is_delete_then_add_in_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    index_docs(&index, DOCS, 1);
    let mut batch = index.writer().unwrap();
    let id = chunk_id(1);
    batch.delete(&id);
    batch
        .add(LexicalDoc {
            chunk_id: &id,
            point: 1,
            text: "Alpha > Intro\nNow on port 9090.",
            path: "a.md",
        })
        .unwrap();
    batch.commit(2).unwrap();
    assert_eq!(index.num_docs(), 3);
    assert!(points(&index, "8080", 5).is_empty());
    assert_eq!(points(&index, "9090", 5), [1]);
}

#[test]
fn clear_then_rebuild_commits_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
    index_docs(&index, DOCS, 1);
    let mut batch = index.writer().unwrap();
    batch.clear().unwrap();
    let id = chunk_id(7);
    batch
        .add(LexicalDoc {
            chunk_id: &id,
            point: 7,
            text: "rebuilt",
            path: "r.md",
        })
        .unwrap();
    assert_eq!(
        index.num_docs(),
        3,
        "the old index stays searchable until the commit"
    );
    batch.commit(9).unwrap();
    assert_eq!(
        (sorted_ids(&index), index.generation()),
        (vec![(chunk_id(7), 7)], Some(9))
    );
}

#[test]
fn readers_follow_commits_and_writers_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    assert!(matches!(
        LexicalIndex::open_read_only(&path),
        Err(LexicalError::NotFound { .. })
    ));
    let writer = LexicalIndex::open_or_create(&path).unwrap();
    assert!(matches!(
        LexicalIndex::open_or_create(&path),
        Err(LexicalError::Busy { .. })
    ));
    let reader = LexicalIndex::open_read_only(&path).unwrap();
    assert!(matches!(
        reader.writer(),
        Err(LexicalError::ReadOnly { .. })
    ));
    index_docs(&writer, DOCS, 3);
    assert_eq!(
        (reader.generation(), reader.num_docs()),
        (None, 0),
        "until it reloads"
    );
    assert!(reader.reload().unwrap());
    assert_eq!((reader.generation(), reader.num_docs()), (Some(3), 3));
    assert!(!reader.reload().unwrap());
    drop(writer);
    // The lock went with the writer.
    LexicalIndex::open_or_create(&path).unwrap();
}

#[test]
fn foreign_directories_are_never_used_nor_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("photos");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("cat.jpg"), b"not an index").unwrap();
    assert!(matches!(
        LexicalIndex::open_or_create(&foreign),
        Err(LexicalError::NotOurs { .. })
    ));
    assert!(matches!(
        LexicalIndex::create_fresh(&foreign),
        Err(LexicalError::NotOurs { .. })
    ));
    assert_eq!(fs::read_dir(&foreign).unwrap().count(), 1);
    assert!(foreign.join("cat.jpg").exists());
    // An empty directory may be used.
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    LexicalIndex::open_or_create(&empty).unwrap();
}

/// Damages a committed index with `damage`, then checks opening gives `Corrupt` (no panic) and
/// that `create_fresh` brings back a working, empty index.
fn damaged(damage: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lexical");
    let index = LexicalIndex::open_or_create(&path).unwrap();
    index_docs(&index, DOCS, 1);
    drop(index);
    damage(&path);
    for result in [
        LexicalIndex::open_or_create(&path),
        LexicalIndex::open_read_only(&path),
    ] {
        match result {
            Err(LexicalError::Corrupt { path: p, .. }) => assert_eq!(p, path),
            Err(other) => panic!("expected Corrupt, got {other}"),
            Ok(_) => panic!("a damaged index opened"),
        }
    }
    let fresh = LexicalIndex::create_fresh(&path).unwrap();
    assert_eq!((fresh.num_docs(), fresh.generation()), (0, None));
    index_docs(&fresh, DOCS, 2);
    assert_eq!(points(&fresh, "alpha", 5), [1]);
}

/// The files of the index's segments with this extension.
fn segment_files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect()
}

#[test]
fn garbage_meta_json_is_an_error() {
    damaged(|dir| fs::write(dir.join("meta.json"), b"\x00\xffnot json").unwrap());
}

#[test]
fn truncated_meta_json_is_an_error() {
    damaged(|dir| {
        let meta = fs::read(dir.join("meta.json")).unwrap();
        fs::write(dir.join("meta.json"), &meta[..meta.len() / 2]).unwrap();
    });
}

#[test]
fn foreign_payload_is_an_error() {
    damaged(|dir| {
        let meta = fs::read_to_string(dir.join("meta.json")).unwrap();
        let meta = meta.replace("rag-lexical format=1", "someone else");
        fs::write(dir.join("meta.json"), meta).unwrap();
    });
}

#[test]
fn deleted_segment_file_is_an_error() {
    damaged(|dir| {
        for file in segment_files(dir, "idx") {
            fs::remove_file(file).unwrap();
        }
    });
}

#[test]
fn garbage_segment_files_are_an_error() {
    damaged(|dir| {
        for ext in ["term", "fast", "fieldnorm"] {
            for file in segment_files(dir, ext) {
                fs::write(file, b"garbage").unwrap();
            }
        }
    });
}
