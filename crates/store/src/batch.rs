//! The single write transaction.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use redb::{ReadableTableMetadata, WriteTransaction};

use crate::Result;
use crate::error::guarded;
use crate::records::{
    ChunkRecord, FileRecord, IndexMeta, decode, encode, encode_file, vector_bytes,
};
use crate::snapshot::{read_chunks, read_embedding, read_meta};
use crate::tables::{CHUNKS, EMBEDDINGS, FILES, META, META_KEY, POINTS};

/// The single write transaction. Dropping it without [`commit`](Self::commit) discards it.
pub struct WriteBatch {
    pub(crate) txn: WriteTransaction,
    pub(crate) path: Arc<Path>,
}

impl WriteBatch {
    fn guard<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        guarded(&self.path, f)
    }

    fn guard_mut<T>(&mut self, f: impl FnOnce(&mut WriteTransaction) -> Result<T>) -> Result<T> {
        let path = self.path.clone();
        guarded(&path, || f(&mut self.txn))
    }

    /// The index-wide record as this transaction sees it.
    pub fn meta(&self) -> Result<Option<IndexMeta>> {
        self.guard(|| read_meta(&self.path, &self.txn.open_table(META)?))
    }

    /// Replaces the index-wide record.
    pub fn put_meta(&mut self, meta: &IndexMeta) -> Result<()> {
        let bytes = serde_json::to_vec(meta).expect("meta serialises");
        self.guard_mut(|txn| {
            txn.open_table(META)?.insert(META_KEY, bytes.as_slice())?;
            Ok(())
        })
    }

    /// Inserts or replaces a manifest entry.
    pub fn put_file(&mut self, path: &str, record: &FileRecord) -> Result<()> {
        self.guard_mut(|txn| {
            txn.open_table(FILES)?
                .insert(path, encode_file(record).as_slice())?;
            Ok(())
        })
    }

    /// Removes a manifest entry (not its chunks).
    pub fn remove_file(&mut self, path: &str) -> Result<()> {
        self.guard_mut(|txn| {
            txn.open_table(FILES)?.remove(path)?;
            Ok(())
        })
    }

    /// Inserts or replaces a chunk and its point entry.
    pub fn put_chunk(&mut self, id: &str, record: &ChunkRecord) -> Result<()> {
        self.guard_mut(|txn| {
            txn.open_table(CHUNKS)?
                .insert(id, encode(record).as_slice())?;
            txn.open_table(POINTS)?.insert(record.point, id)?;
            Ok(())
        })
    }

    /// Removes a chunk and its point entry; returns the removed record.
    pub fn remove_chunk(&mut self, id: &str) -> Result<Option<ChunkRecord>> {
        let path = self.path.clone();
        self.guard_mut(|txn| {
            let removed = {
                let mut table = txn.open_table(CHUNKS)?;
                let old = table.remove(id)?;
                old.map(|v| decode::<ChunkRecord>(&path, "chunks", id, v.value()))
                    .transpose()?
            };
            if let Some(record) = &removed {
                txn.open_table(POINTS)?.remove(record.point)?;
            }
            Ok(removed)
        })
    }

    /// The vector stored for a text hash, as this transaction sees it.
    pub fn embedding(&self, hash: &str) -> Result<Option<Vec<f32>>> {
        self.guard(|| read_embedding(&self.path, &self.txn.open_table(EMBEDDINGS)?, hash))
    }

    /// Number of chunks as this transaction sees it.
    pub fn chunk_count(&self) -> Result<u64> {
        self.guard(|| Ok(self.txn.open_table(CHUNKS)?.len()?))
    }

    /// Every chunk as this transaction sees it, ordered by ID.
    pub fn chunks(&self) -> Result<Vec<(String, ChunkRecord)>> {
        self.guard(|| read_chunks(&self.path, &self.txn.open_table(CHUNKS)?))
    }

    /// Stores a vector under the hash of the text it embeds.
    pub fn put_embedding(&mut self, hash: &str, vector: &[f32]) -> Result<()> {
        self.guard_mut(|txn| {
            txn.open_table(EMBEDDINGS)?
                .insert(hash, vector_bytes(vector).as_slice())?;
            Ok(())
        })
    }

    /// Drops every stored vector whose hash is not in `keep`; returns how many were dropped.
    pub fn retain_embeddings(&mut self, keep: &HashSet<String>) -> Result<u64> {
        self.guard_mut(|txn| {
            let mut table = txn.open_table(EMBEDDINGS)?;
            let before = table.len()?;
            table.retain(|hash, _| keep.contains(hash))?;
            Ok(before - table.len()?)
        })
    }

    /// Makes everything in this batch visible and durable (one fsync'd commit).
    pub fn commit(self) -> Result<()> {
        let WriteBatch { txn, path } = self;
        guarded(&path, || {
            txn.commit()?;
            Ok(())
        })
    }
}
