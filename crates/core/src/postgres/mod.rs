//! The lifecycle's storage steps on PostgreSQL: records to rows and back, the commit, and the
//! query pipeline's candidate retrieval in SQL.

mod commit;
mod maintain;
mod search;

use std::path::Path;

use rag_pg::{PgChunk, PgFile, PgView};
use rag_store::{FileRecord, IndexMeta};
use serde_json::Value;

use crate::chunk::IndexedChunk;
use crate::source::ChunkSource;
use crate::{Error, Result};

/// The collection's meta record, decoded.
pub(crate) fn meta_from(value: Option<Value>, location: &Path) -> Result<Option<IndexMeta>> {
    value
        .map(|value| {
            serde_json::from_value(value).map_err(|e| Error::Damaged {
                path: location.to_owned(),
                reason: format!("the collection's meta record does not decode: {e}"),
            })
        })
        .transpose()
}

pub(crate) fn file_record(file: PgFile) -> FileRecord {
    FileRecord {
        size: file.size,
        mtime_ns: i128::from(file.mtime_ns),
        content_hash: file.content_hash,
        chunk_ids: file.chunk_ids,
        stamp: file.stamp.map(|(ctime_ns, inode)| rag_store::FileStamp {
            ctime_ns: i128::from(ctime_ns),
            inode: inode as u64,
        }),
    }
}

pub(crate) fn pg_file(record: &FileRecord) -> PgFile {
    PgFile {
        size: record.size,
        mtime_ns: i64::try_from(record.mtime_ns).unwrap_or(i64::MAX),
        content_hash: record.content_hash.clone(),
        chunk_ids: record.chunk_ids.clone(),
        // bigint columns: a ctime past 2262 is recorded as none, which costs a re-hash only;
        // an inode past i64 keeps its bits.
        stamp: record
            .stamp
            .and_then(|stamp| Some((i64::try_from(stamp.ctime_ns).ok()?, stamp.inode as i64))),
    }
}

/// Whether reads of `store` span several collections (so chunks must name theirs).
pub(crate) fn spans_several(store: &rag_pg::PgStore) -> bool {
    store.collections().len() > 1
}

/// Refuses `what` on a store that reads several collections: it concerns one.
pub(crate) fn one_collection(store: &rag_pg::PgStore, what: &str) -> Result<()> {
    match spans_several(store) {
        false => Ok(()),
        true => Err(Error::InvalidConfig {
            reason: format!(
                "{what} works on one collection; {} were named ({})",
                store.collections().len(),
                store.collections().join(", ")
            ),
        }),
    }
}

/// A row as the library's chunk; `named` when the read spans several collections.
pub(crate) fn indexed_chunk(chunk: PgChunk, named: bool) -> IndexedChunk {
    IndexedChunk {
        collection: named.then_some(chunk.collection),
        chunk_id: chunk.id,
        path: chunk.path,
        title: chunk.title,
        heading_path: chunk.heading_path,
        ordinal: chunk.ordinal,
        byte_range: chunk.byte_range.0..chunk.byte_range.1,
        text: chunk.text,
        hash: chunk.hash,
        tokens: chunk.tokens,
        metadata: chunk.metadata,
    }
}

/// A read transaction as a [`ChunkSource`]; `named` as in [`indexed_chunk`].
pub(crate) struct PgChunks<'v, 'a, 't> {
    pub view: &'v mut PgView<'a, 't>,
    pub named: bool,
}

impl ChunkSource for PgChunks<'_, '_, '_> {
    fn chunk(&mut self, chunk_id: &str) -> Result<Option<IndexedChunk>> {
        let named = self.named;
        Ok(self.view.chunk(chunk_id)?.map(|c| indexed_chunk(c, named)))
    }

    fn file_chunks(&mut self, of: &IndexedChunk) -> Result<Vec<IndexedChunk>> {
        let named = self.named;
        let collection = of.collection.as_deref().unwrap_or("");
        Ok(self
            .view
            .file_chunks(collection, &of.path)?
            .into_iter()
            .map(|c| indexed_chunk(c, named))
            .collect())
    }
}
