//! The PostgreSQL + pgvector store of a rag-index, for teams that share one index.
//!
//! A [`PgStore`] is one *collection* (one synced folder) in the `rag_index` schema of a
//! database: its manifest (files), its chunks (text, provenance, metadata as `jsonb`, the
//! labels a caller must hold, a pgvector `vector` and a `tsvector`), and a vector cache keyed
//! by model-scoped text hash that all collections share. rag-index creates and migrates the
//! schema itself ([`SCHEMA_VERSION`]) and never touches anything outside it.
//!
//! - One sync is one [`PgStore::commit`]: a single transaction that swaps the chunk sets of
//!   changed files, drops those of removed files and writes the manifest and meta record.
//!   Readers ([`PgStore::read`], a repeatable-read transaction) see the state before or after.
//! - Vectors are saved before it, in batches ([`PgStore::save_embeddings`]): a crash loses at
//!   most one batch of embedding work and nothing visible.
//! - One writer per collection: a session advisory lock, held while the writer is open.
//! - Searches ([`PgView::dense`], [`PgView::lexical`]) apply labels and metadata filters as SQL
//!   conditions inside the query, and an HNSW scan starved by a selective filter is redone
//!   exactly, so `k` hits come back whenever `k` chunks match.
//!
//! # Example
//! ```no_run
//! use rag_pg::{OpenMode, PgFilter, PgStore};
//! let store = PgStore::open("postgres://rag@localhost/rag", "docs", OpenMode::Reader).unwrap();
//! let filter = PgFilter { held_labels: vec!["staff".into()], ..PgFilter::default() };
//! let hits = store.read(|view| view.dense(&[0.0; 384], 5, &filter, false)).unwrap();
//! for (chunk, score) in hits {
//!     println!("{score:.3} {} {}", chunk.path, chunk.id);
//! }
//! ```

mod connect;
mod error;
mod filter;
mod pool;
mod records;
mod schema;
mod store;
mod terms;
mod tls;
mod view;
mod write;

pub use error::PgError;
pub use filter::{PgCondition, PgFilter, PgOp};
pub use records::{PgChunk, PgCommit, PgCounts, PgFile};
pub use schema::SCHEMA_VERSION;
pub use store::{OpenMode, PgStore};
pub use terms::TEXT_CANDIDATE_BUDGET;
pub use view::PgView;
