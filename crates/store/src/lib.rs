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

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use redb::{
    ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadTransaction, ReadableDatabase,
    ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// Version of the on-disk layout; bumped whenever a table or record changes shape.
pub const FORMAT_VERSION: u32 = 1;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
const CHUNKS: TableDefinition<&str, &[u8]> = TableDefinition::new("chunks");
const POINTS: TableDefinition<u64, &str> = TableDefinition::new("points");
const EMBEDDINGS: TableDefinition<&str, &[u8]> = TableDefinition::new("embeddings");
const META_KEY: &str = "meta";

/// Errors of the store. Each carries the database path where it helps the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process has the index open for writing.
    #[error("index {path} is busy: another process is writing to it")]
    Busy {
        /// The database file.
        path: PathBuf,
    },
    /// There is no index at this path.
    #[error("no index at {path}")]
    NotFound {
        /// The database file.
        path: PathBuf,
    },
    /// The database file cannot be opened as a redb database.
    #[error("cannot open index {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What redb said.
        source: DatabaseError,
    },
    /// The index was written by an incompatible version of rag-index.
    #[error("index format version {found} is not supported (this build reads version {expected})")]
    FormatVersion {
        /// Version found on disk.
        found: u32,
        /// Version this build writes.
        expected: u32,
    },
    /// A record could not be decoded: the file is damaged or from another format.
    #[error("corrupt {table} record {key:?}: {reason}")]
    Corrupt {
        /// Table name.
        table: &'static str,
        /// Record key.
        key: String,
        /// Decoder message.
        reason: String,
    },
    /// A write was attempted through a read-only handle.
    #[error("index {path} was opened read-only")]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// Any other redb failure (I/O, transaction, storage).
    #[error("index storage error: {0}")]
    Storage(#[from] redb::Error),
}

impl From<redb::TransactionError> for StoreError {
    fn from(e: redb::TransactionError) -> Self {
        StoreError::Storage(e.into())
    }
}
impl From<redb::TableError> for StoreError {
    fn from(e: redb::TableError) -> Self {
        StoreError::Storage(e.into())
    }
}
impl From<redb::StorageError> for StoreError {
    fn from(e: redb::StorageError) -> Self {
        StoreError::Storage(e.into())
    }
}
impl From<redb::CommitError> for StoreError {
    fn from(e: redb::CommitError) -> Self {
        StoreError::Storage(e.into())
    }
}

/// Result alias for this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Index-wide facts, written in the same transaction as the data they describe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// Fingerprint of the embedding model whose vectors are stored.
    pub model_fingerprint: String,
    /// Fingerprint of the chunker configuration that produced the chunks.
    pub chunker_fingerprint: String,
    /// Vector dimensions.
    pub dim: usize,
    /// Incremented by every commit that changes the set of live chunks.
    pub generation: u64,
    /// The next unused vector-index point ID (IDs are never reused).
    pub next_point: u64,
    /// Graph files built for a generation, if any.
    pub graph: Option<GraphPointer>,
    /// Chunks removed since unreferenced vectors were last dropped: an upper bound on the
    /// stored vectors no live chunk uses. Absent in indexes written before it existed.
    #[serde(default)]
    pub unreferenced_vectors_bound: u64,
}

/// Names the saved vector-index directory and the generation it reflects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphPointer {
    /// Directory name, relative to the index directory.
    pub dir: String,
    /// The [`IndexMeta::generation`] whose live chunks the graph holds.
    pub generation: u64,
}

/// The manifest entry of one indexed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Size in bytes when last indexed.
    pub size: u64,
    /// Modification time (nanoseconds since the Unix epoch) when last indexed.
    pub mtime_ns: i128,
    /// blake3 of the file's bytes.
    pub content_hash: String,
    /// IDs of the file's chunks, in order.
    pub chunk_ids: Vec<String>,
}

/// A live chunk, exactly as embedded, with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Source path relative to the indexed folder.
    pub path: String,
    /// Document title.
    pub title: String,
    /// Title and headings above the chunk.
    pub heading_path: Vec<String>,
    /// Position in the file.
    pub ordinal: u32,
    /// Byte range of the body in the source file.
    pub byte_range: (u64, u64),
    /// The exact text that was embedded.
    pub text: String,
    /// blake3 of `text`; the key of its vector in the embeddings table.
    pub hash: String,
    /// Token count of `text`, special tokens included.
    pub tokens: u32,
    /// Metadata as a JSON object (bincode cannot carry arbitrary JSON values).
    pub metadata_json: String,
    /// The chunk's ID in the vector index.
    pub point: u64,
}

/// Counts of records, for `stats` and `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Files in the manifest.
    pub files: u64,
    /// Live chunks.
    pub chunks: u64,
    /// Point-to-chunk entries.
    pub points: u64,
    /// Stored vectors.
    pub embeddings: u64,
}

enum Handle {
    Writer(Database),
    Reader(ReadOnlyDatabase),
}

/// The index database. See the crate documentation.
pub struct Store {
    handle: Handle,
    path: PathBuf,
}

fn builder() -> redb::Builder {
    let mut builder = Database::builder();
    // One writer process with readers that follow its commits: `query` keeps working while a
    // cron `sync` runs, and a second `sync` is refused.
    builder.set_concurrency_mode(ConcurrencyMode::SingleWriter);
    builder
}

fn open_error(path: &Path, e: DatabaseError) -> StoreError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => StoreError::Busy {
            path: path.to_owned(),
        },
        source => StoreError::Open {
            path: path.to_owned(),
            source,
        },
    }
}

impl Store {
    /// Opens (creating if needed) the database for writing. Fails with [`StoreError::Busy`]
    /// when another process is writing.
    pub fn open_writer(path: &Path) -> Result<Store> {
        let db = if path.exists() {
            builder().open(path)
        } else {
            builder().create(path)
        }
        .map_err(|e| open_error(path, e))?;
        let store = Store {
            handle: Handle::Writer(db),
            path: path.to_owned(),
        };
        // Create every table up front so readers never meet a missing one. Only when one is
        // missing: a write transaction costs several fsyncs, too much for every no-op sync.
        if !store.has_all_tables()? {
            let txn = store.writer()?.begin_write()?;
            txn.open_table(META)?;
            txn.open_table(FILES)?;
            txn.open_table(CHUNKS)?;
            txn.open_table(POINTS)?;
            txn.open_table(EMBEDDINGS)?;
            txn.commit()?;
        }
        store.read()?.check_format()?;
        Ok(store)
    }

    /// Opens an existing database read-only.
    pub fn open_reader(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::NotFound {
                path: path.to_owned(),
            });
        }
        let db = builder()
            .open_read_only(path)
            .map_err(|e| open_error(path, e))?;
        let store = Store {
            handle: Handle::Reader(db),
            path: path.to_owned(),
        };
        store.read()?.check_format()?;
        Ok(store)
    }

    fn has_all_tables(&self) -> Result<bool> {
        use redb::TableHandle;
        let txn = self.writer()?.begin_read()?;
        let mut names: Vec<String> = txn.list_tables()?.map(|t| t.name().to_string()).collect();
        names.sort();
        let mut wanted: Vec<String> = [
            META.name(),
            FILES.name(),
            CHUNKS.name(),
            POINTS.name(),
            EMBEDDINGS.name(),
        ]
        .iter()
        .map(|n| n.to_string())
        .collect();
        wanted.sort();
        Ok(wanted.iter().all(|w| names.binary_search(w).is_ok()))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn writer(&self) -> Result<&Database> {
        match &self.handle {
            Handle::Writer(db) => Ok(db),
            Handle::Reader(_) => Err(StoreError::ReadOnly {
                path: self.path.clone(),
            }),
        }
    }

    /// A consistent snapshot of the last commit.
    pub fn read(&self) -> Result<Snapshot> {
        let txn = match &self.handle {
            Handle::Writer(db) => db.begin_read()?,
            Handle::Reader(db) => db.begin_read()?,
        };
        Ok(Snapshot { txn })
    }

    /// Starts the (only) write transaction. Nothing is visible to readers until
    /// [`WriteBatch::commit`], which is durable when it returns.
    pub fn write(&self) -> Result<WriteBatch> {
        let txn = self.writer()?.begin_write()?;
        Ok(WriteBatch { txn })
    }

    /// Verifies redb's page checksums; repairs what redb can. Needs the writer.
    pub fn check_integrity(&mut self) -> Result<bool> {
        match &mut self.handle {
            Handle::Writer(db) => db.check_integrity().map_err(|e| open_error(&self.path, e)),
            Handle::Reader(_) => Ok(true),
        }
    }

    /// Returns free pages to the file system. Needs the writer.
    pub fn compact(&mut self) -> Result<bool> {
        match &mut self.handle {
            Handle::Writer(db) => db.compact().map_err(|e| StoreError::Storage(e.into())),
            Handle::Reader(_) => Ok(false),
        }
    }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Encoding plain structs into a Vec cannot fail.
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .expect("bincode encoding of an in-memory record")
}

fn decode<T: DeserializeOwned>(table: &'static str, key: &str, bytes: &[u8]) -> Result<T> {
    bincode::serde::decode_from_slice(bytes, bincode::config::standard())
        .map(|(value, _)| value)
        .map_err(|e| StoreError::Corrupt {
            table,
            key: key.to_owned(),
            reason: e.to_string(),
        })
}

/// Vectors are stored as little-endian f32, explicitly, so the file is portable.
fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn vector_from_bytes(key: &str, bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(StoreError::Corrupt {
            table: "embeddings",
            key: key.to_owned(),
            reason: format!("{} bytes is not a whole number of f32", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn read_chunks(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Vec<(String, ChunkRecord)>> {
    let mut out = Vec::with_capacity(table.len()? as usize);
    for entry in table.iter()? {
        let (k, v) = entry?;
        let key = k.value().to_owned();
        let record = decode("chunks", &key, v.value())?;
        out.push((key, record));
    }
    Ok(out)
}

fn read_meta(table: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Option<IndexMeta>> {
    let Some(bytes) = table.get(META_KEY)? else {
        return Ok(None);
    };
    serde_json::from_slice(bytes.value())
        .map(Some)
        .map_err(|e| StoreError::Corrupt {
            table: "meta",
            key: META_KEY.into(),
            reason: e.to_string(),
        })
}

fn read_embedding(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<Vec<f32>>> {
    table
        .get(key)?
        .map(|v| vector_from_bytes(key, v.value()))
        .transpose()
}

/// A read snapshot: everything it returns reflects one commit.
pub struct Snapshot {
    txn: ReadTransaction,
}

impl Snapshot {
    fn check_format(&self) -> Result<()> {
        match self.meta()? {
            Some(meta) if meta.format_version != FORMAT_VERSION => Err(StoreError::FormatVersion {
                found: meta.format_version,
                expected: FORMAT_VERSION,
            }),
            _ => Ok(()),
        }
    }

    /// The index-wide record, or `None` for an index never synced.
    pub fn meta(&self) -> Result<Option<IndexMeta>> {
        read_meta(&self.txn.open_table(META)?)
    }

    /// The manifest entry of one file.
    pub fn file(&self, path: &str) -> Result<Option<FileRecord>> {
        let table = self.txn.open_table(FILES)?;
        table
            .get(path)?
            .map(|v| decode("files", path, v.value()))
            .transpose()
    }

    /// Every manifest entry, ordered by path.
    pub fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        let table = self.txn.open_table(FILES)?;
        let mut out = Vec::with_capacity(table.len()? as usize);
        for entry in table.iter()? {
            let (k, v) = entry?;
            let key = k.value().to_owned();
            let record = decode("files", &key, v.value())?;
            out.push((key, record));
        }
        Ok(out)
    }

    /// One chunk by ID.
    pub fn chunk(&self, id: &str) -> Result<Option<ChunkRecord>> {
        let table = self.txn.open_table(CHUNKS)?;
        table
            .get(id)?
            .map(|v| decode("chunks", id, v.value()))
            .transpose()
    }

    /// Every live chunk, ordered by ID.
    pub fn chunks(&self) -> Result<Vec<(String, ChunkRecord)>> {
        read_chunks(&self.txn.open_table(CHUNKS)?)
    }

    /// The chunk ID behind a vector-index point.
    pub fn chunk_id_for_point(&self, point: u64) -> Result<Option<String>> {
        let table = self.txn.open_table(POINTS)?;
        Ok(table.get(point)?.map(|v| v.value().to_owned()))
    }

    /// Every point-to-chunk entry, ordered by point.
    pub fn points(&self) -> Result<Vec<(u64, String)>> {
        let table = self.txn.open_table(POINTS)?;
        let mut out = Vec::with_capacity(table.len()? as usize);
        for entry in table.iter()? {
            let (k, v) = entry?;
            out.push((k.value(), v.value().to_owned()));
        }
        Ok(out)
    }

    /// The vector stored for a text hash.
    pub fn embedding(&self, hash: &str) -> Result<Option<Vec<f32>>> {
        read_embedding(&self.txn.open_table(EMBEDDINGS)?, hash)
    }

    /// Whether a vector is stored for a text hash.
    pub fn has_embedding(&self, hash: &str) -> Result<bool> {
        let table = self.txn.open_table(EMBEDDINGS)?;
        Ok(table.get(hash)?.is_some())
    }

    /// Every stored text hash.
    pub fn embedding_hashes(&self) -> Result<Vec<String>> {
        let table = self.txn.open_table(EMBEDDINGS)?;
        let mut out = Vec::with_capacity(table.len()? as usize);
        for entry in table.iter()? {
            out.push(entry?.0.value().to_owned());
        }
        Ok(out)
    }

    /// Record counts.
    pub fn counts(&self) -> Result<Counts> {
        Ok(Counts {
            files: self.txn.open_table(FILES)?.len()?,
            chunks: self.txn.open_table(CHUNKS)?.len()?,
            points: self.txn.open_table(POINTS)?.len()?,
            embeddings: self.txn.open_table(EMBEDDINGS)?.len()?,
        })
    }
}

/// The single write transaction. Dropping it without [`commit`](Self::commit) discards it.
pub struct WriteBatch {
    txn: WriteTransaction,
}

impl WriteBatch {
    /// The index-wide record as this transaction sees it.
    pub fn meta(&self) -> Result<Option<IndexMeta>> {
        read_meta(&self.txn.open_table(META)?)
    }

    /// Replaces the index-wide record.
    pub fn put_meta(&mut self, meta: &IndexMeta) -> Result<()> {
        let bytes = serde_json::to_vec(meta).expect("meta serialises");
        self.txn
            .open_table(META)?
            .insert(META_KEY, bytes.as_slice())?;
        Ok(())
    }

    /// Inserts or replaces a manifest entry.
    pub fn put_file(&mut self, path: &str, record: &FileRecord) -> Result<()> {
        self.txn
            .open_table(FILES)?
            .insert(path, encode(record).as_slice())?;
        Ok(())
    }

    /// Removes a manifest entry (not its chunks).
    pub fn remove_file(&mut self, path: &str) -> Result<()> {
        self.txn.open_table(FILES)?.remove(path)?;
        Ok(())
    }

    /// Inserts or replaces a chunk and its point entry.
    pub fn put_chunk(&mut self, id: &str, record: &ChunkRecord) -> Result<()> {
        self.txn
            .open_table(CHUNKS)?
            .insert(id, encode(record).as_slice())?;
        self.txn.open_table(POINTS)?.insert(record.point, id)?;
        Ok(())
    }

    /// Removes a chunk and its point entry; returns the removed record.
    pub fn remove_chunk(&mut self, id: &str) -> Result<Option<ChunkRecord>> {
        let removed = {
            let mut table = self.txn.open_table(CHUNKS)?;
            let old = table.remove(id)?;
            old.map(|v| decode::<ChunkRecord>("chunks", id, v.value()))
                .transpose()?
        };
        if let Some(record) = &removed {
            self.txn.open_table(POINTS)?.remove(record.point)?;
        }
        Ok(removed)
    }

    /// Whether a vector is stored for a text hash.
    pub fn has_embedding(&self, hash: &str) -> Result<bool> {
        Ok(self.txn.open_table(EMBEDDINGS)?.get(hash)?.is_some())
    }

    /// The vector stored for a text hash, as this transaction sees it.
    pub fn embedding(&self, hash: &str) -> Result<Option<Vec<f32>>> {
        read_embedding(&self.txn.open_table(EMBEDDINGS)?, hash)
    }

    /// Number of chunks as this transaction sees it.
    pub fn chunk_count(&self) -> Result<u64> {
        Ok(self.txn.open_table(CHUNKS)?.len()?)
    }

    /// Every chunk as this transaction sees it, ordered by ID.
    pub fn chunks(&self) -> Result<Vec<(String, ChunkRecord)>> {
        read_chunks(&self.txn.open_table(CHUNKS)?)
    }

    /// Stores a vector under the hash of the text it embeds.
    pub fn put_embedding(&mut self, hash: &str, vector: &[f32]) -> Result<()> {
        self.txn
            .open_table(EMBEDDINGS)?
            .insert(hash, vector_bytes(vector).as_slice())?;
        Ok(())
    }

    /// Drops every stored vector whose hash is not in `keep`; returns how many were dropped.
    pub fn retain_embeddings(&mut self, keep: &HashSet<String>) -> Result<u64> {
        let mut table = self.txn.open_table(EMBEDDINGS)?;
        let before = table.len()?;
        table.retain(|hash, _| keep.contains(hash))?;
        Ok(before - table.len()?)
    }

    /// Removes every file, chunk, point and vector (for `--reindex`), keeping nothing but meta.
    pub fn clear(&mut self) -> Result<()> {
        self.txn.open_table(FILES)?.retain(|_, _| false)?;
        self.txn.open_table(CHUNKS)?.retain(|_, _| false)?;
        self.txn.open_table(POINTS)?.retain(|_, _| false)?;
        self.txn.open_table(EMBEDDINGS)?.retain(|_, _| false)?;
        Ok(())
    }

    /// Makes everything in this batch visible and durable (one fsync'd commit).
    pub fn commit(self) -> Result<()> {
        self.txn.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
