use std::path::PathBuf;

/// Errors of the watcher.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The folder to watch is not a readable folder.
    #[error("cannot watch {path}: {reason}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The operating system's file notification failed to start.
    #[error("cannot follow changes under {path}: {source}")]
    Notify {
        /// The folder.
        path: PathBuf,
        /// The notification error.
        source: notify::Error,
    },
    /// The index failed in a way retrying cannot fix.
    #[error(transparent)]
    Index(#[from] rag_index_core::Error),
    /// Stopped through [`WatchHandle::stop`](crate::WatchHandle::stop) before the index could
    /// be opened.
    #[error("stopped")]
    Stopped,
}

/// Result alias for this crate.
pub type Result<T, E = WatchError> = std::result::Result<T, E>;
