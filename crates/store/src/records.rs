//! The records the store keeps, and their byte encodings (bincode, JSON for meta, LE floats).

use std::path::Path;

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::error::{StoreError, bad_record};

/// Index-wide facts, written in the same transaction as the data they describe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// [`FORMAT_VERSION`](crate::FORMAT_VERSION) of the writer.
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
    /// The permission rule file's text as applied by the last commit, to find the files whose
    /// labels a rule change affects. Absent before rules existed (no rules applied).
    #[serde(default)]
    pub access_rules: Option<String>,
    /// Incremented by every commit that rewrites chunk records (a new generation, or only
    /// their metadata, as a touch does), so searchers reload what they cache about chunks.
    #[serde(default)]
    pub metadata_epoch: u64,
    /// When the commit that made this generation happened, in milliseconds since the Unix
    /// epoch (for freshness reports). Absent in indexes written before it existed.
    #[serde(default)]
    pub committed_at: Option<u64>,
    /// Whether any committed chunk may require a permission label: set by the first labelled
    /// chunk and kept (recomputed on a reindex), so an index that never had one searches
    /// without per-point checks. Absent (unknown) in indexes written before it existed.
    #[serde(default)]
    pub labels_seen: Option<bool>,
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
    /// The file's status-change time and inode when last indexed, where the platform has them.
    /// Encoded after the fields above, so a manifest entry written without it (older indexes)
    /// still decodes, as `None`, and a reader that predates it ignores it.
    #[serde(skip)]
    pub stamp: Option<FileStamp>,
}

/// What says a file was rewritten when its size and modification time were kept: the ctime,
/// which no program can set back, and the inode, which a replace-by-rename changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Status-change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i128,
    /// Inode number.
    pub inode: u64,
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

/// Where one table's bytes go: what its keys and values hold, and the pages that hold them
/// (a B-tree page of 4 KiB keeps whole entries only, so entries of 1-2 KiB leave much of each
/// page unused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableBytes {
    /// What the table holds (`vectors`, `chunks`, `manifest`, `points`, `meta`).
    pub table: &'static str,
    /// Entries.
    pub entries: u64,
    /// Bytes of keys and values.
    pub stored_bytes: u64,
    /// Bytes of the pages the table occupies, stored bytes included.
    pub page_bytes: u64,
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

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Encoding plain structs into a Vec cannot fail.
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .expect("bincode encoding of an in-memory record")
}

pub(crate) fn decode<T: DeserializeOwned>(
    path: &Path,
    table: &str,
    key: &str,
    bytes: &[u8],
) -> Result<T, StoreError> {
    bincode::serde::decode_from_slice(bytes, bincode::config::standard())
        .map(|(value, _)| value)
        .map_err(|e| bad_record(path, table, key, e.to_string()))
}

/// A manifest entry's bytes: the record, then its stamp when it has one.
pub(crate) fn encode_file(record: &FileRecord) -> Vec<u8> {
    let mut bytes = encode(record);
    if let Some(stamp) = &record.stamp {
        bytes.extend(encode(stamp));
    }
    bytes
}

pub(crate) fn decode_file(path: &Path, key: &str, bytes: &[u8]) -> Result<FileRecord, StoreError> {
    let config = bincode::config::standard();
    let bad = |e: bincode::error::DecodeError| bad_record(path, "files", key, e.to_string());
    let (mut record, used): (FileRecord, usize) =
        bincode::serde::decode_from_slice(bytes, config).map_err(bad)?;
    if used < bytes.len() {
        let (stamp, _) = bincode::serde::decode_from_slice(&bytes[used..], config).map_err(bad)?;
        record.stamp = Some(stamp);
    }
    Ok(record)
}

/// Vectors are stored as little-endian f32, explicitly, so the file is portable.
pub(crate) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn vector_from_bytes(
    path: &Path,
    key: &str,
    bytes: &[u8],
) -> Result<Vec<f32>, StoreError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(bad_record(
            path,
            "embeddings",
            key,
            format!("{} bytes is not a whole number of f32", bytes.len()),
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}
