//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in this crate. No public function panics or exits instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// A vector (inserted or queried) does not have the index's dimension.
    #[error("vector has {got} dimensions, the index expects {expected}")]
    DimensionMismatch {
        /// The index's dimension.
        expected: usize,
        /// The dimension of the vector passed in.
        got: usize,
    },
    /// A parameter is out of range; checked before hnsw_rs sees it.
    #[error("invalid index parameters: {0}")]
    InvalidParams(String),
    /// A vector is zero or holds NaN/infinity, so it has no direction to compare.
    #[error("invalid vector for id {id:?}: {reason}")]
    InvalidVector {
        /// The id it was inserted under, if it was an insert.
        id: Option<u64>,
        /// What is wrong with it.
        reason: String,
    },
    /// The id is already live in the index (delete it first to replace its vector).
    #[error("id {0} is already live in the index")]
    DuplicateId(u64),
    /// A saved index is missing a file, truncated or fails its checksums: rebuild it.
    #[error("saved index at {} is missing or corrupt: {reason}", path.display())]
    Corrupt {
        /// The file (or directory) found wanting.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// `save` was pointed at a directory that already holds files.
    #[error("save target {} is not an empty directory", path.display())]
    TargetNotEmpty {
        /// The directory passed to `save`.
        path: PathBuf,
    },
    /// An I/O error on a file of a saved index.
    #[error("I/O error on {}", path.display())]
    Io {
        /// The file or directory being accessed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// hnsw_rs failed (or panicked) while dumping or loading the graph.
    #[error("hnsw graph {op} in {} failed: {reason}", dir.display())]
    Graph {
        /// `"dump"` or `"load"`.
        op: &'static str,
        /// The directory of the saved index.
        dir: PathBuf,
        /// hnsw_rs's message.
        reason: String,
    },
}

impl IndexError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        IndexError::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
