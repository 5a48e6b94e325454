//! The rows rag-index keeps in PostgreSQL, as plain data.

use serde_json::{Map, Value};

/// The manifest entry of one indexed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgFile {
    /// Size in bytes when last indexed.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (`bigint`: good until 2262).
    pub mtime_ns: i64,
    /// blake3 of the file's bytes.
    pub content_hash: String,
    /// IDs of the file's chunks, in order.
    pub chunk_ids: Vec<String>,
    /// Status-change time (nanoseconds) and inode when last indexed; `None` where the
    /// platform has none, and in rows written before schema version 4.
    pub stamp: Option<(i64, i64)>,
}

/// A live chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct PgChunk {
    /// The collection it belongs to (empty in a [`PgCommit`], which names its own).
    pub collection: String,
    /// Chunk ID.
    pub id: String,
    /// Source path relative to the synced folder.
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
    /// blake3 of `text`.
    pub hash: String,
    /// Token count of `text`.
    pub tokens: u32,
    /// Metadata (front matter, provenance, labels).
    pub metadata: Map<String, Value>,
    /// The labels a caller must hold, every one, to see the chunk.
    pub labels: Vec<String>,
    /// Key of the chunk's vector in the shared vector cache.
    pub embedding_key: String,
}

/// Row counts and sizes of one collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PgCounts {
    /// Files in the manifest.
    pub files: u64,
    /// Live chunks.
    pub chunks: u64,
    /// Vectors in the shared cache (all collections).
    pub embeddings: u64,
    /// Model tokens of the live chunks.
    pub tokens: u64,
    /// Bytes of the chunks table and its indexes (all collections).
    pub chunk_bytes: u64,
    /// Bytes of the collection's vector index.
    pub vector_index_bytes: u64,
}

/// Everything one sync changes, applied in one transaction by
/// [`PgStore::commit`](crate::PgStore::commit).
#[derive(Debug, Default)]
pub struct PgCommit {
    /// Drop every chunk and file of the collection first (a reindex).
    pub clear: bool,
    /// Chunk IDs to delete.
    pub remove_chunks: Vec<String>,
    /// Manifest entries to delete.
    pub remove_files: Vec<String>,
    /// Manifest entries to write.
    pub put_files: Vec<(String, PgFile)>,
    /// Chunks to write (new ones, and kept ones whose record changed); their vectors come from
    /// the vector cache by `embedding_key`.
    pub put_chunks: Vec<PgChunk>,
    /// Kept chunks whose metadata or labels alone changed (an edit elsewhere in their file
    /// changes its provenance): (ID, metadata, labels). An update that leaves the text and the
    /// vector alone costs no re-join of the vector cache and no re-sent text.
    pub put_metadata: Vec<(String, Map<String, Value>, Vec<String>)>,
    /// The collection's new meta record.
    pub meta: Value,
}
