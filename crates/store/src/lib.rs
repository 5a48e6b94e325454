//! The redb-backed store of a rag-index: the source of truth for what is indexed.
//!
//! A [`Store`] holds four tables in one redb file:
//! - **files**: every indexed file by relative path, with its size, mtime, blake3 content hash and
//!   the IDs of its chunks (the manifest that lets `sync` skip unchanged files);
//! - **chunks**: every live chunk by chunk ID (text exactly as embedded, provenance, metadata) and
//!   the point ID it has in the vector index;
//! - **points**: point ID to chunk ID, to turn vector-index hits back into chunks;
//! - **embeddings**: vectors keyed by the blake3 hash of the exact embedded text, so unchanged,
//!   moved or duplicated text is never embedded twice.
//!
//! plus a small **meta** record (format version, model and chunker fingerprints, the generation
//! counter and the graph files that were built for it). Everything else (the HNSW graph) is
//! derived and can be rebuilt from this file.
//!
//! One process writes at a time ([`Store::open_writer`] fails with [`StoreError::Busy`] while
//! another holds it); any number of readers ([`Store::open_reader`]) may follow its commits.
//!
//! # Example
//! ```
//! use rag_store::Store;
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open_writer(&dir.path().join("index.redb")).unwrap();
//! let mut batch = store.write().unwrap();
//! batch.put_embedding("hash-of-text", &[0.6, 0.8]).unwrap();
//! batch.commit().unwrap();
//! assert_eq!(store.read().unwrap().embedding("hash-of-text").unwrap(), Some(vec![0.6, 0.8]));
//! ```

mod batch;
mod error;
mod records;
mod snapshot;
mod store;
mod tables;

pub use batch::WriteBatch;
pub use error::StoreError;
pub use records::{
    ChunkRecord, Counts, FileRecord, FileStamp, GraphPointer, IndexMeta, TableBytes,
};
pub use snapshot::Snapshot;
pub use store::Store;

/// Version of the on-disk layout; bumped whenever a table or record changes shape.
pub const FORMAT_VERSION: u32 = 1;

/// Result alias for this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn chunk(path: &str, point: u64) -> ChunkRecord {
        ChunkRecord {
            path: path.into(),
            title: "T".into(),
            heading_path: vec!["T".into(), "S".into()],
            ordinal: 0,
            byte_range: (0, 10),
            text: "T > S\n\nbody".into(),
            hash: "h1".into(),
            tokens: 5,
            metadata_json: "{}".into(),
            point,
        }
    }

    #[test]
    fn records_round_trip_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        {
            let store = Store::open_writer(&path).unwrap();
            let mut w = store.write().unwrap();
            let file = FileRecord {
                size: 10,
                mtime_ns: -5,
                content_hash: "c".into(),
                chunk_ids: vec!["a".into()],
                stamp: None,
            };
            w.put_file("x.md", &file).unwrap();
            w.put_chunk("a", &chunk("x.md", 7)).unwrap();
            w.put_embedding("h1", &[1.0, -0.5]).unwrap();
            w.commit().unwrap();
        }
        let store = Store::open_reader(&path).unwrap();
        let r = store.read().unwrap();
        assert_eq!(r.file("x.md").unwrap().unwrap().mtime_ns, -5);
        assert_eq!(r.chunk("a").unwrap().unwrap(), chunk("x.md", 7));
        assert_eq!(r.chunk_id_for_point(7).unwrap().as_deref(), Some("a"));
        assert_eq!(r.embedding("h1").unwrap(), Some(vec![1.0, -0.5]));
        assert_eq!(
            r.counts().unwrap(),
            Counts {
                files: 1,
                chunks: 1,
                points: 1,
                embeddings: 1
            }
        );
    }

    #[test]
    fn file_stamps_round_trip_and_entries_without_one_still_decode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        let stamped = FileRecord {
            size: 3,
            mtime_ns: 1_700_000_000_000_000_000,
            content_hash: "c".into(),
            chunk_ids: vec!["a".into(), "b".into()],
            stamp: Some(FileStamp {
                ctime_ns: 1_700_000_000_123_456_789,
                inode: 42,
            }),
        };
        let plain = FileRecord {
            stamp: None,
            ..stamped.clone()
        };
        let store = Store::open_writer(&path).unwrap();
        let mut w = store.write().unwrap();
        w.put_file("stamped.md", &stamped).unwrap();
        w.put_file("plain.md", &plain).unwrap();
        w.commit().unwrap();
        let r = store.read().unwrap();
        assert_eq!(r.file("stamped.md").unwrap().unwrap(), stamped);
        assert_eq!(r.file("plain.md").unwrap().unwrap(), plain);
        // A manifest entry as written before stamps existed is the plain record's bytes; and a
        // reader from then, which decodes the record and ignores what follows, reads a
        // stamped entry's record whole.
        assert_eq!(records::encode_file(&plain), records::encode(&plain));
        let bytes = records::encode_file(&stamped);
        let (old_reader, _): (FileRecord, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
        assert_eq!(old_reader, plain);
    }

    #[test]
    fn uncommitted_batch_is_invisible() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_writer(&dir.path().join("i.redb")).unwrap();
        {
            let mut w = store.write().unwrap();
            w.put_chunk("a", &chunk("x.md", 1)).unwrap();
            // dropped: aborted
        }
        assert_eq!(store.read().unwrap().counts().unwrap().chunks, 0);
    }

    #[test]
    fn remove_chunk_drops_point_and_retain_drops_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_writer(&dir.path().join("i.redb")).unwrap();
        let mut w = store.write().unwrap();
        w.put_chunk("a", &chunk("x.md", 1)).unwrap();
        w.put_embedding("h1", &[1.0]).unwrap();
        w.put_embedding("h2", &[2.0]).unwrap();
        assert_eq!(w.remove_chunk("a").unwrap().unwrap().point, 1);
        let keep: HashSet<String> = ["h2".to_string()].into();
        assert_eq!(w.retain_embeddings(&keep).unwrap(), 1);
        w.commit().unwrap();
        let r = store.read().unwrap();
        assert_eq!(
            r.counts().unwrap(),
            Counts {
                files: 0,
                chunks: 0,
                points: 0,
                embeddings: 1
            }
        );
    }

    #[test]
    fn second_writer_is_busy_but_reader_follows_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        let writer = Store::open_writer(&path).unwrap();
        assert!(matches!(
            Store::open_writer(&path),
            Err(StoreError::Busy { .. })
        ));
        let reader = Store::open_reader(&path).unwrap();
        let mut w = writer.write().unwrap();
        w.put_embedding("h", &[0.5]).unwrap();
        w.commit().unwrap();
        assert!(reader.read().unwrap().has_embedding("h").unwrap());
    }

    #[test]
    fn garbage_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        assert!(Store::open_writer(&path).is_err());
        assert!(Store::open_reader(&path).is_err());
    }

    #[test]
    fn another_programs_redb_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        {
            let db = redb::Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            let t: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("theirs");
            txn.open_table(t).unwrap().insert("k", 1).unwrap();
            txn.commit().unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        assert!(matches!(
            Store::open_writer(&path),
            Err(StoreError::NotAnIndex { .. })
        ));
        assert!(matches!(
            Store::open_reader(&path),
            Err(StoreError::NotAnIndex { .. })
        ));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    /// Flipping bytes anywhere in a real store gives errors naming the file, never a panic.
    #[test]
    fn damaged_files_are_errors_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        {
            let store = Store::open_writer(&path).unwrap();
            let mut w = store.write().unwrap();
            for i in 0..2000u64 {
                let mut c = chunk("x.md", i);
                c.text = format!("chunk number {i} with some text to fill pages");
                w.put_chunk(&format!("id{i:05}"), &c).unwrap();
                w.put_embedding(&format!("h{i}"), &[i as f32; 16]).unwrap();
            }
            w.commit().unwrap();
        }
        let good = std::fs::read(&path).unwrap();
        let mut rng = 0x9e3779b97f4a7c15u64;
        for trial in 0..40 {
            let mut bytes = good.clone();
            for _ in 0..(1 + trial % 8) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let at = (rng % bytes.len() as u64) as usize;
                bytes[at] ^= 0xa5;
            }
            if trial % 5 == 4 {
                bytes.truncate(bytes.len() / 2);
            }
            std::fs::write(&path, &bytes).unwrap();
            // Every operation either works or fails with an error; none may panic.
            let outcome = std::panic::catch_unwind(|| {
                let _ = Store::open_reader(&path).and_then(|s| {
                    let r = s.read()?;
                    r.meta()?;
                    r.files()?;
                    r.chunks()?;
                    r.check_embeddings(16)
                });
                let _ = Store::open_writer(&path).and_then(|s| {
                    let mut w = s.write()?;
                    w.put_chunk("new", &chunk("y.md", 99_999))?;
                    w.commit()?;
                    s.read()?.chunks()
                });
            });
            assert!(outcome.is_ok(), "trial {trial} panicked");
        }
    }

    #[test]
    fn compaction_gives_back_freed_space_and_waits_for_no_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.redb");
        let store = Store::open_writer(&path).unwrap();
        // Vectors committed in many small batches of scattered keys, as a sync caches them.
        for batch in 0..60u32 {
            let mut w = store.write().unwrap();
            for k in 0..32u32 {
                let key = format!("{:08x}", (batch * 32 + k).wrapping_mul(2_654_435_761));
                w.put_embedding(&key, &[batch as f32; 384]).unwrap();
            }
            w.commit().unwrap();
        }
        let grown = std::fs::metadata(&path).unwrap().len();
        // A reader's snapshot is never pulled from under it: nothing is compacted.
        let snapshot = store.read().unwrap();
        assert!(!store.compact().unwrap());
        drop(snapshot);
        assert!(store.compact().unwrap());
        let compacted = std::fs::metadata(&path).unwrap().len();
        assert!(compacted < grown, "{grown} -> {compacted}");
        // Everything is still there.
        let snapshot = store.read().unwrap();
        let key = format!("{:08x}", (59u32 * 32 + 31).wrapping_mul(2_654_435_761));
        assert!(snapshot.has_embedding(&key).unwrap());
    }
}
