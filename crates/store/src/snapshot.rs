//! Read snapshots: everything one returns reflects one commit.

use std::path::Path;
use std::sync::Arc;

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata};

use crate::error::{StoreError, guarded};
use crate::records::{
    ChunkRecord, Counts, FileRecord, IndexMeta, TableBytes, decode, decode_file, vector_from_bytes,
};
use crate::tables::{CHUNKS, EMBEDDINGS, FILES, META, META_KEY, POINTS};
use crate::{FORMAT_VERSION, Result};

/// A read snapshot of the last commit when it was taken.
pub struct Snapshot {
    pub(crate) txn: ReadTransaction,
    pub(crate) path: Arc<Path>,
}

pub(crate) fn read_chunks(
    path: &Path,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Vec<(String, ChunkRecord)>> {
    let mut out = Vec::with_capacity(table.len()? as usize);
    for entry in table.iter()? {
        let (k, v) = entry?;
        let key = k.value().to_owned();
        let record = decode(path, "chunks", &key, v.value())?;
        out.push((key, record));
    }
    Ok(out)
}

pub(crate) fn read_meta(
    path: &Path,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Option<IndexMeta>> {
    let Some(bytes) = table.get(META_KEY)? else {
        return Ok(None);
    };
    serde_json::from_slice(bytes.value())
        .map(Some)
        .map_err(|e| crate::error::bad_record(path, "meta", META_KEY, e.to_string()))
}

pub(crate) fn read_embedding(
    path: &Path,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<Vec<f32>>> {
    table
        .get(key)?
        .map(|v| vector_from_bytes(path, key, v.value()))
        .transpose()
}

impl Snapshot {
    fn guard<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        guarded(&self.path, f)
    }

    pub(crate) fn check_format(&self) -> Result<()> {
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
        self.guard(|| read_meta(&self.path, &self.txn.open_table(META)?))
    }

    /// The manifest entry of one file.
    pub fn file(&self, path: &str) -> Result<Option<FileRecord>> {
        self.guard(|| {
            let table = self.txn.open_table(FILES)?;
            table
                .get(path)?
                .map(|v| decode_file(&self.path, path, v.value()))
                .transpose()
        })
    }

    /// Every manifest entry, ordered by path.
    pub fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        self.guard(|| {
            let table = self.txn.open_table(FILES)?;
            let mut out = Vec::with_capacity(table.len()? as usize);
            for entry in table.iter()? {
                let (k, v) = entry?;
                let key = k.value().to_owned();
                let record = decode_file(&self.path, &key, v.value())?;
                out.push((key, record));
            }
            Ok(out)
        })
    }

    /// One chunk by ID.
    pub fn chunk(&self, id: &str) -> Result<Option<ChunkRecord>> {
        self.guard(|| {
            let table = self.txn.open_table(CHUNKS)?;
            table
                .get(id)?
                .map(|v| decode(&self.path, "chunks", id, v.value()))
                .transpose()
        })
    }

    /// Every live chunk, ordered by ID.
    pub fn chunks(&self) -> Result<Vec<(String, ChunkRecord)>> {
        self.guard(|| read_chunks(&self.path, &self.txn.open_table(CHUNKS)?))
    }

    /// The chunk ID behind a vector-index point.
    pub fn chunk_id_for_point(&self, point: u64) -> Result<Option<String>> {
        self.guard(|| {
            let table = self.txn.open_table(POINTS)?;
            Ok(table.get(point)?.map(|v| v.value().to_owned()))
        })
    }

    /// The vector stored for a text hash.
    pub fn embedding(&self, hash: &str) -> Result<Option<Vec<f32>>> {
        self.guard(|| read_embedding(&self.path, &self.txn.open_table(EMBEDDINGS)?, hash))
    }

    /// Whether a vector is stored for a text hash.
    pub fn has_embedding(&self, hash: &str) -> Result<bool> {
        self.guard(|| Ok(self.txn.open_table(EMBEDDINGS)?.get(hash)?.is_some()))
    }

    /// Reads every stored vector once, checking that each decodes; returns the keys of those
    /// whose dimension is not `dim`.
    /// Touches every page of the table, so page checksums are verified.
    pub fn check_embeddings(&self, dim: usize) -> Result<Vec<String>> {
        self.guard(|| {
            let table = self.txn.open_table(EMBEDDINGS)?;
            let mut wrong = Vec::new();
            for entry in table.iter()? {
                let (k, v) = entry?;
                let vector = vector_from_bytes(&self.path, k.value(), v.value())?;
                if vector.len() != dim {
                    wrong.push(k.value().to_owned());
                }
            }
            Ok(wrong)
        })
    }

    /// Where the bytes of each table go.
    pub fn table_bytes(&self) -> Result<Vec<TableBytes>> {
        fn of<T: ReadableTableMetadata>(table: &'static str, t: &T) -> Result<TableBytes> {
            let stats = t.stats()?;
            Ok(TableBytes {
                table,
                entries: t.len()?,
                stored_bytes: stats.stored_bytes(),
                page_bytes: stats.stored_bytes()
                    + stats.metadata_bytes()
                    + stats.fragmented_bytes(),
            })
        }
        self.guard(|| {
            Ok(vec![
                of("vectors", &self.txn.open_table(EMBEDDINGS)?)?,
                of("chunks", &self.txn.open_table(CHUNKS)?)?,
                of("manifest", &self.txn.open_table(FILES)?)?,
                of("points", &self.txn.open_table(POINTS)?)?,
                of("meta", &self.txn.open_table(META)?)?,
            ])
        })
    }

    /// Record counts.
    pub fn counts(&self) -> Result<Counts> {
        self.guard(|| {
            Ok(Counts {
                files: self.txn.open_table(FILES)?.len()?,
                chunks: self.txn.open_table(CHUNKS)?.len()?,
                points: self.txn.open_table(POINTS)?.len()?,
                embeddings: self.txn.open_table(EMBEDDINGS)?.len()?,
            })
        })
    }
}
