use std::path::PathBuf;

/// Errors of the rag-index library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process holds the index for writing. Retry later (CLI exit code 75).
    #[error("index {path} is busy: another rag-index process is writing to it")]
    Busy {
        /// The index directory.
        path: PathBuf,
    },
    /// No index exists at the path.
    #[error("no index at {path} (run `rag-index sync DIR` first)")]
    NoIndex {
        /// The index directory.
        path: PathBuf,
    },
    /// The stored vectors or chunks were made with another model or chunker configuration.
    #[error(
        "the index at {path} was built with a different {what} ({stored}); this run uses {current}. \
         Run `rag-index sync --reindex` to rebuild it with the new {what}"
    )]
    ConfigChanged {
        /// The index directory.
        path: PathBuf,
        /// "embedding model" or "chunker configuration".
        what: &'static str,
        /// Fingerprint in the index.
        stored: String,
        /// Fingerprint of this run.
        current: String,
    },
    /// The operation was cancelled through its cancel flag before its commit point.
    #[error("cancelled; the index is unchanged")]
    Cancelled,
    /// The folder to sync cannot be read.
    #[error("cannot read folder {path}: {source}")]
    Root {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A filesystem operation on the index directory failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store file is damaged. Nothing was written; the folder's files are untouched.
    #[error(
        "index file {path} is damaged ({reason}). `rag-index verify` reports what is wrong; \
         `rag-index sync DIR --reindex` moves the damaged file aside and rebuilds the index from \
         the folder"
    )]
    Damaged {
        /// The store file.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// The index directory holds files that are not an index's, and no index.
    #[error(
        "{path} is not an index directory: it holds other files (such as {example:?}) and no \
         index. rag-index only writes into a new or empty folder or an existing index; choose \
         another --index"
    )]
    ForeignDirectory {
        /// The directory.
        path: PathBuf,
        /// One entry that is not rag-index's.
        example: String,
    },
    /// The index directory lies inside the synced folder, where the walk would skip files.
    #[error(
        "the index {index} is inside the folder being synced ({root}): files under it would \
         never be indexed. Put the index outside the folder, or in a hidden folder such as \
         {root}/.rag-index (the default)"
    )]
    IndexInsideFolder {
        /// The index directory.
        index: PathBuf,
        /// The synced folder.
        root: PathBuf,
    },
    /// The store failed.
    #[error(transparent)]
    Store(rag_store::StoreError),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] rag_embed::EmbedError),
    /// The chunker rejected its configuration.
    #[error(transparent)]
    Chunk(#[from] rag_chunker::ChunkError),
    /// The vector index failed.
    #[error(transparent)]
    Vectors(#[from] rag_vector_index::IndexError),
    /// The lexical (BM25) index failed. A damaged one is rebuilt by the next `sync` or by
    /// `verify --repair`.
    #[error(transparent)]
    Lexical(#[from] rag_lexical::LexicalError),
    /// Lexical search was asked of an index whose lexical index is missing or does not match the
    /// store's last commit (made by an older version, damaged, or a writer died between the two
    /// commits). The next `sync` rebuilds it.
    #[error(
        "the lexical index of {path} cannot be used ({reason}); run `rag-index sync` or \
         `rag-index verify --repair` to rebuild it"
    )]
    LexicalUnavailable {
        /// The index directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An index configuration is not valid.
    #[error("invalid index configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// A search request is not valid.
    #[error("invalid search request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// The folder's permission rules cannot be read: nothing is synced rather than exposing
    /// what they protect.
    #[error("permission rules {path}: {reason}; nothing was synced")]
    AccessRules {
        /// The rule file.
        path: PathBuf,
        /// What is wrong (with the line, for a syntax error).
        reason: String,
    },
    /// The PostgreSQL store failed.
    #[error(transparent)]
    Postgres(rag_pg::PgError),
    /// An operation the index's backend does not offer.
    #[error("{what} is not available for {location}: it needs an index directory")]
    Unsupported {
        /// The operation.
        what: &'static str,
        /// Where the index lives.
        location: String,
    },
    /// The index is opened read-only.
    #[error("index {path} is opened read-only")]
    ReadOnly {
        /// The index directory.
        path: PathBuf,
    },
}

impl From<rag_store::StoreError> for Error {
    fn from(e: rag_store::StoreError) -> Self {
        match e {
            rag_store::StoreError::Damaged { path, reason } => Error::Damaged { path, reason },
            other => Error::Store(other),
        }
    }
}

impl From<rag_pg::PgError> for Error {
    fn from(e: rag_pg::PgError) -> Self {
        match e {
            rag_pg::PgError::Busy { collection, server } => Error::Busy {
                path: format!("postgres://{server} (collection {collection})").into(),
            },
            other => Error::Postgres(other),
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
