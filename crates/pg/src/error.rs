//! Errors of the PostgreSQL store. Each names the server (never its password) or the collection.

/// Errors of the PostgreSQL store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The URL cannot be used (bad syntax, unknown `sslmode`).
    #[error("invalid PostgreSQL URL: {reason}")]
    InvalidUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// The server cannot be reached or refused the connection.
    #[error("cannot connect to PostgreSQL at {server}: {reason}")]
    Connect {
        /// `host:port/database` (no password).
        server: String,
        /// Why, as the client library says it.
        reason: String,
    },
    /// Another process is syncing this collection.
    #[error("collection {collection:?} on {server} is busy: another process is syncing it")]
    Busy {
        /// The collection.
        collection: String,
        /// `host:port/database`.
        server: String,
    },
    /// The collection was never synced.
    #[error("no collection {collection:?} on {server}")]
    NoCollection {
        /// The collection.
        collection: String,
        /// `host:port/database`.
        server: String,
    },
    /// The database holds a rag-index schema of a newer version than this build knows.
    #[error("the rag_index schema on {server} is version {found}; this build knows up to {known}")]
    SchemaVersion {
        /// `host:port/database`.
        server: String,
        /// Version found.
        found: i32,
        /// Newest version this build can migrate to.
        known: i32,
    },
    /// A commit named vectors that are not stored (the embedding step did not save them).
    #[error("{missing} chunk(s) have no stored vector (first: key {first}); nothing was committed")]
    MissingVectors {
        /// How many.
        missing: usize,
        /// One of the keys.
        first: String,
    },
    /// A query or statement failed.
    #[error("PostgreSQL {action} failed on {server}: {source}")]
    Query {
        /// What was being done.
        action: &'static str,
        /// `host:port/database`.
        server: String,
        /// The client library's error.
        source: postgres::Error,
    },
}

impl PgError {
    /// Whether the connection to the server was lost (the server went away, a network error):
    /// nothing was committed by the failed call.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            PgError::Connect { .. } => true,
            PgError::Query { source, .. } => source.is_closed() || source.as_db_error().is_none(),
            _ => false,
        }
    }
}
