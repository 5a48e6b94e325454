//! Serve a rag-index index, always warm: to coding agents over MCP (stdio) and to applications
//! over an HTTP JSON API.
//!
//! A [`Server`] shares one open [`RagIndex`](rag_index_core::RagIndex) between every client:
//! the model and graph load once, and searches see the index's last commit, also while a sync
//! (or a [`rag-watch`](https://docs.rs/rag-watch) watcher in the same process) commits a new
//! one. Search is CPU-bound, so it runs on the blocking pool with a bounded number of slots;
//! a client that is slow to send or read never holds one.
//!
//! The caller's permission labels are never a request field. Over MCP they are fixed when the
//! server starts; over HTTP they come from the bearer token ([`Tokens`]), or are public when
//! the server has no tokens file. HTTP requests must name a loopback host (or one allowed in
//! [`ServeOptions::extra_hosts`]) in `Host` and `Origin`, against DNS rebinding.
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use rag_index_core::{Embedder, EmbedderConfig, IndexConfig, RagIndex};
//! use rag_server::{ServeOptions, Server};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let model = rag_index_core::resolve_model_dir(None, &[])?;
//! let embedder = Arc::new(Embedder::open(&model, EmbedderConfig::default())?);
//! let index = RagIndex::open_read_only("docs/.rag-index".as_ref(), embedder, IndexConfig::default())?;
//! let server = Server::new(Arc::new(index), ServeOptions::default());
//! server.warm_up().await;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7341").await?;
//! server.serve_http(listener, None, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

mod error;
mod http;
mod mcp;
mod params;
mod server;
mod tokens;

pub use error::{Result, ServerError};
pub use params::{ChunkParams, SearchParams, SectionParams};
pub use server::{ServeOptions, Server};
pub use tokens::Tokens;
