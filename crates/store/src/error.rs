//! Store errors, and the boundary that turns a damaged file into an error instead of a panic.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use redb::DatabaseError;

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
    /// The file is damaged: unreadable pages, records that do not decode, a truncated file, or
    /// the storage engine failing on it.
    #[error("index file {path} is damaged: {reason}")]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// The file is a redb database, but not one of rag-index: it is left alone.
    #[error("{path} is a database of another program, not a rag-index store; it is left untouched")]
    NotAnIndex {
        /// The database file.
        path: PathBuf,
    },
    /// The database file cannot be opened (permissions, I/O).
    #[error("cannot open index {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What redb said.
        source: DatabaseError,
    },
    /// An interrupted write left the file needing recovery, and this process cannot write it.
    #[error(
        "index {path} needs recovery after an interrupted write, and this process cannot write \
         it ({reason}); run `rag-index sync` or `rag-index verify --repair` as a user who can"
    )]
    NeedsRecovery {
        /// The database file.
        path: PathBuf,
        /// Why recovery failed.
        reason: String,
    },
    /// The index was written by an incompatible version of rag-index.
    #[error("index format version {found} is not supported (this build reads version {expected})")]
    FormatVersion {
        /// Version found on disk.
        found: u32,
        /// Version this build writes.
        expected: u32,
    },
    /// A write was attempted through a read-only handle.
    #[error("index {path} was opened read-only")]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// Reading or writing the database file failed: a full disk, a failing device.
    #[error("index file {path}: {error}")]
    Io {
        /// The database file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// Any other redb failure (transaction, storage).
    #[error("index storage error: {0}")]
    Storage(#[from] redb::Error),
}

impl StoreError {
    /// Whether the error means the file itself is damaged (as opposed to busy, missing, I/O).
    pub fn is_damage(&self) -> bool {
        matches!(self, StoreError::Damaged { .. })
    }

    /// Names the file in errors that come from redb without one, and classifies corruption.
    fn at(self, path: &Path) -> StoreError {
        match self {
            StoreError::Storage(redb::Error::Corrupted(reason)) => StoreError::Damaged {
                path: path.to_owned(),
                reason,
            },
            // Reading past the end of a truncated file, or a page that is not redb's.
            StoreError::Storage(redb::Error::Io(io))
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
                ) =>
            {
                StoreError::Damaged {
                    path: path.to_owned(),
                    reason: format!("the file is truncated or not redb's ({io})"),
                }
            }
            StoreError::Storage(redb::Error::Io(error)) => StoreError::Io {
                path: path.to_owned(),
                error,
            },
            other => other,
        }
    }
}

/// A record that does not decode: the file is damaged (or from an unknown format).
pub(crate) fn bad_record(path: &Path, table: &str, key: &str, reason: String) -> StoreError {
    StoreError::Damaged {
        path: path.to_owned(),
        reason: format!("{table} record {key:?} does not decode: {reason}"),
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Storage(e.into())
            }
        }
    )*};
}
storage_from!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Runs `f`, turning redb corruption errors and panics (redb asserts on some damaged pages)
/// into [`StoreError::Damaged`] naming `path`.
pub(crate) fn guarded<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(|e| e.at(path)),
        Err(panic) => Err(StoreError::Damaged {
            path: path.to_owned(),
            reason: format!(
                "the storage engine failed reading it ({})",
                panic_text(&panic)
            ),
        }),
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown failure".into())
}

/// Classifies an error of opening the database file.
pub(crate) fn open_error(path: &Path, e: DatabaseError) -> StoreError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => StoreError::Busy {
            path: path.to_owned(),
        },
        DatabaseError::Storage(redb::StorageError::Corrupted(reason)) => StoreError::Damaged {
            path: path.to_owned(),
            reason,
        },
        DatabaseError::Storage(redb::StorageError::Io(io))
            if io.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            StoreError::Damaged {
                path: path.to_owned(),
                reason: format!("the file is truncated ({io})"),
            }
        }
        // redb reports a bad header (magic number, layout) as invalid data.
        DatabaseError::Storage(redb::StorageError::Io(io))
            if io.kind() == std::io::ErrorKind::InvalidData =>
        {
            StoreError::Damaged {
                path: path.to_owned(),
                reason: io.to_string(),
            }
        }
        DatabaseError::UpgradeRequired(version) => StoreError::Damaged {
            path: path.to_owned(),
            reason: format!("not a redb file this build can read (file format {version})"),
        },
        source => StoreError::Open {
            path: path.to_owned(),
            source,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_names_the_file_and_says_the_reason_once() {
        let path = Path::new("/index/index.redb");
        let full_disk = std::io::Error::from_raw_os_error(28);
        let reason = full_disk.to_string();
        let err = StoreError::Storage(redb::Error::Io(full_disk)).at(path);
        assert!(matches!(err, StoreError::Io { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("index file /index/index.redb: {reason}")
        );
        assert!(std::error::Error::source(&err).is_none());
        assert!(!err.is_damage(), "a full disk is not damage");
    }
}
