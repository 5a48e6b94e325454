//! The typed errors of the lexical index.

use std::path::PathBuf;

/// Errors of the lexical index. Each carries the index directory, so a message names what to look
/// at (or what the caller should rebuild).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LexicalError {
    /// A file-system operation on the index directory failed.
    #[error("lexical index {path}: {source}")]
    Io {
        /// The file or directory the operation was about.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// tantivy reported an error (I/O, lock, or a damaged file it detected itself).
    #[error("lexical index {path}: {source}")]
    Tantivy {
        /// The index directory.
        path: PathBuf,
        /// The underlying error.
        source: tantivy::TantivyError,
    },
    /// The directory holds something that is not a usable index of this crate: damaged files
    /// (tantivy panicked reading them, or its commit payload is not ours), or an index written
    /// with another schema or analyzer version. Rebuild it with
    /// [`LexicalIndex::create_fresh`](crate::LexicalIndex::create_fresh).
    #[error("lexical index {path} is damaged or incompatible: {detail}")]
    Corrupt {
        /// The index directory.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// There is no index in this directory (opening read-only never creates one).
    #[error("no lexical index at {path}")]
    NotFound {
        /// The directory that was looked in.
        path: PathBuf,
    },
    /// The directory exists and has content, but this crate did not create it, so it will not
    /// write an index into it nor delete it.
    #[error("{path} was not created by rag-lexical (no marker file): refusing to use or delete it")]
    NotOurs {
        /// The directory.
        path: PathBuf,
    },
    /// Another writer (in this or another process) holds the index's writer lock.
    #[error("lexical index {path} is busy: another writer holds its lock")]
    Busy {
        /// The index directory.
        path: PathBuf,
    },
    /// A write was asked of an index opened with
    /// [`LexicalIndex::open_read_only`](crate::LexicalIndex::open_read_only).
    #[error("lexical index {path} was opened read-only")]
    ReadOnly {
        /// The index directory.
        path: PathBuf,
    },
}

impl LexicalError {
    /// Wraps a tantivy error, turning the cases callers act on into their own variants.
    pub(crate) fn tantivy(path: &std::path::Path, source: tantivy::TantivyError) -> Self {
        match source {
            tantivy::TantivyError::LockFailure(
                tantivy::directory::error::LockError::LockBusy,
                _,
            ) => LexicalError::Busy { path: path.into() },
            // The lock file could not be created or locked: say why, not that someone holds it.
            tantivy::TantivyError::LockFailure(
                tantivy::directory::error::LockError::IoError(io),
                _,
            ) => LexicalError::Io {
                path: path.into(),
                source: std::io::Error::new(io.kind(), format!("cannot take its lock: {io}")),
            },
            tantivy::TantivyError::DataCorruption(c) => LexicalError::Corrupt {
                path: path.into(),
                detail: format!("{c:?}"),
            },
            source => LexicalError::Tantivy {
                path: path.into(),
                source,
            },
        }
    }

    /// Wraps an error met while opening or reloading an existing index: whatever is not a lock or
    /// plain I/O failure means the files are damaged (unreadable meta.json, missing or truncated
    /// segment file), which callers answer with a rebuild.
    pub(crate) fn opening(path: &std::path::Path, source: tantivy::TantivyError) -> Self {
        match source {
            tantivy::TantivyError::LockFailure(..) | tantivy::TantivyError::IoError(_) => {
                Self::tantivy(path, source)
            }
            source => LexicalError::Corrupt {
                path: path.into(),
                detail: source.to_string(),
            },
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        LexicalError::Io {
            path: path.into(),
            source,
        }
    }
}
