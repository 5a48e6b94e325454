//! A BM25 index over the chunks of a rag-index, the lexical half of hybrid retrieval, built on
//! tantivy.
//!
//! Like the HNSW graph it is *derived data*: the store is the source of truth, and the caller
//! feeds this index the live chunks and decides when to rebuild it. Each commit carries the
//! store generation it matches ([`LexicalIndex::generation`]), so a mismatch (a crash between
//! the store's commit and this one, a damaged or missing directory) is seen and answered with a
//! catch-up or a rebuild.
//!
//! - **One document per chunk**: its chunk ID (unique key, deletes go by it), its point (a fast
//!   field, what hits return and filters test), its text and its path (both analyzed).
//! - **Crash safety**: a [`LexicalWriter`] batch becomes visible only at its commit, which is
//!   atomic (tantivy writes a new `meta.json` and renames it over the old one) and durable
//!   (fsynced before [`LexicalWriter::commit`] returns). A batch dropped, or a process killed,
//!   before that leaves the previous commit whole. Damaged files give [`LexicalError::Corrupt`],
//!   never a panic: tantivy calls that read files run under `catch_unwind`.
//! - **Incremental**: deletes and adds touch only their documents; tantivy's log merge policy
//!   keeps the segment count bounded and old segment files are garbage-collected after each
//!   commit and merge.
//! - **Filtered search**: the caller's `allow(point)` runs inside the scan, so `k` allowed hits
//!   come back whenever `k` allowed matching chunks exist.
//! - **Scores from what the caller may see**: [`LexicalIndex::search_within`] counts BM25's
//!   statistics (documents, mean length, document frequencies) over the caller's scope only,
//!   so neither scores nor order tell a caller whether documents hidden from it hold a word.
//!   Each score adds its terms in a fixed order, and a scoped search skips no block of postings
//!   by bounds the hidden documents helped set, so this holds to the last bit of every score.
//! - **Analyzer for technical text** ([`TechTokenizer`]): identifiers are indexed whole and by
//!   parts (`maxConcurrentStreams`, `--entrypoints.web.address`, `X-Forwarded-For`,
//!   `snake_case_name`), prose is stemmed, numbers kept. Queries go through the same analyzer and
//!   have no syntax: any text is a valid query. The [`analyzer`](mod@analyzer) module says what is emitted and
//!   why.
//! - **Verification**: [`LexicalIndex::chunk_ids`] lists every indexed `(chunk_id, point)`,
//!   [`LexicalIndex::point_of`] looks one up, [`LexicalIndex::num_docs`] counts them.
//!
//! One process writes ([`LexicalIndex::open_or_create`] takes tantivy's writer lock); any
//! number of others read ([`LexicalIndex::open_read_only`]) and follow commits with
//! [`LexicalIndex::reload`].
//!
//! # Example
//! ```
//! use rag_lexical::{LexicalDoc, LexicalIndex};
//! let dir = tempfile::tempdir().unwrap();
//! let index = LexicalIndex::open_or_create(&dir.path().join("lexical")).unwrap();
//! let mut batch = index.writer().unwrap();
//! batch.add(LexicalDoc {
//!     chunk_id: "00000000000000000000000000000001",
//!     point: 1,
//!     text: "HTTP/2 > Options\nSet `maxConcurrentStreams` to bound streams per connection.",
//!     path: "routing/overview.md",
//! }).unwrap();
//! batch.commit(7).unwrap();
//! assert_eq!(index.generation(), Some(7));
//! let hits = index.search("max concurrent streams", 10, None).unwrap();
//! assert_eq!(hits[0].point, 1);
//! // The filter runs inside the search: nothing allowed, nothing found.
//! assert!(index.search("streams", 10, Some(&|point| point != 1)).unwrap().is_empty());
//! ```
//!
//! # Crate features
//! None of its own. tantivy is built with only `mmap` (segment files are memory-mapped; no
//! compression codecs, since the document store is unused, nor tantivy's stemmer set: the English
//! Snowball stemmer comes from `frostem` directly).

pub mod analyzer;
mod collect;
mod dir;
mod error;
mod index;
mod reader_dir;
mod schema;
mod statistics;
mod writer;

pub use analyzer::{
    ANALYZER_NAME, MAX_TOKEN_BYTES, TechTokenStream, TechTokenizer, analyze, analyzer,
};
pub use error::LexicalError;
pub use index::{LexicalHit, LexicalIndex};
pub use statistics::Scope;
pub use writer::{LexicalDoc, LexicalWriter};
