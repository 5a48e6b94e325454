use std::path::PathBuf;

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The tokens file cannot be read or has a bad line.
    #[error("tokens file {path}: {reason}")]
    Tokens {
        /// The file.
        path: PathBuf,
        /// What is wrong (with the line number).
        reason: String,
    },
    /// The HTTP listener failed.
    #[error("HTTP server: {0}")]
    Http(#[source] std::io::Error),
    /// The MCP session failed to start or ended with an error.
    #[error("MCP server: {0}")]
    Mcp(String),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] rag_index_core::Error),
}

/// Result alias for this crate.
pub type Result<T, E = ServerError> = std::result::Result<T, E>;
