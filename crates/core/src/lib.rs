//! rag-index as a library: keep a local vector index exactly in step with a folder of documents,
//! and search it.
//!
//! A [`RagIndex`] combines the leaf crates: [`rag_chunker`] cuts documents into structure-aware
//! chunks, [`rag_embed`] embeds them with a local sentence-transformers model, [`rag_store`] keeps
//! files, chunks and vectors in one redb file (the source of truth), and [`rag_vector_index`]
//! searches them through an HNSW graph that is derived from the store and rebuilt when missing.
//! [`rag_lexical`] keeps a BM25 index of the same chunks, derived the same way, and hybrid search
//! (the default [`SearchMode`]) fuses both signals.
//!
//! [`RagIndex::sync`] makes the index equal to a fresh index of the folder while embedding only
//! text it has never seen, and switches to the new state in one commit. Searches through the same
//! `RagIndex` (from any thread, also during a sync) see the last committed state.
//!
//! A file whose conversion runs away with memory (a runaway tree-sitter parse always; anything,
//! such as a PDF stream that inflates a thousand-fold, where the host installs
//! [`ConversionAllocator`] as its global allocator) is recorded as set aside and skipped by later
//! syncs until it changes; [`on_runaway_parse`] sets what the process does meanwhile.
//!
//! # Example
//! ```no_run
//! use std::sync::{Arc, atomic::AtomicBool};
//! use rag_index_core::{Access, Embedder, EmbedderConfig, IndexConfig, RagIndex, SyncOptions};
//!
//! let model = rag_index_core::resolve_model_dir(None, &[]).unwrap();
//! let embedder = Arc::new(Embedder::load(&model, EmbedderConfig::default()).unwrap());
//! let index = RagIndex::open("docs/.rag-index".as_ref(), embedder, IndexConfig::default()).unwrap();
//! let report = index
//!     .sync("docs".as_ref(), &SyncOptions::default(), &|_progress| {}, &AtomicBool::new(false))
//!     .unwrap();
//! println!("{} chunks embedded", report.chunks.embedded);
//! // The caller's permission labels are part of every search: here, public documents only.
//! for hit in index.search("how do I renew certificates?", &Access::public(), 5).unwrap() {
//!     println!("{:.3} {} {:?}", hit.score, hit.chunk.path, hit.chunk.heading_path);
//!     println!("{}", hit.chunk.body());
//! }
//! ```

mod access;
mod backend;
mod chunk;
mod commit;
mod conversion_memory;
mod dedup;
mod document;
mod error;
pub mod eval;
mod expand;
mod filter;
mod folder_file;
mod fusion;
mod health;
mod index_dir;
mod lexical;
mod location;
mod points;
mod postgres;
mod provenance;
mod quoted;
mod request;
mod search;
mod searcher;
mod section;
mod source;
mod sync;
mod text_encoding;
mod verify;
pub mod walk;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

pub use access::{ACCESS_KEY, Access, AccessRules, RULES_FILE, UNREADABLE_LABEL, check_label};
pub use backend::OpenMode;
pub use chunk::{Hit, IndexedChunk, PassageChunk, SignalRank, Signals};
pub use conversion_memory::ConversionAllocator;
pub use dedup::{DUPLICATE_CONTAINMENT, near_duplicates};
pub use document::chunk_file;
pub use error::{Error, Result};
pub use expand::SECTION_CAP_TOKENS;
pub use filter::{BUILT_IN_KEYS, Condition, Filter, Op, PathGlob};
pub use fusion::Fusion;
pub use health::{
    DuplicateText, HealthReport, LAST_SYNC_FILE, LastSync, NearCap, StaleSource, WATCH_STATUS_FILE,
};
pub use index_dir::{move_damaged_store_aside, write_index_file};
pub use location::StoreLocation;
pub use provenance::PROVENANCE_KEYS;
pub use quoted::{Quoted, quoted};
pub use rag_chunker::{Chunk, Chunker, ChunkerConfig, Document, TokenCounter};
pub use rag_embed::{Embedder, EmbedderConfig, ModelFingerprint, Precision, resolve_model_dir};
pub use rag_store::Counts;
pub use rag_vector_index::IndexParams;
pub use request::{Expand, MAX_BUDGET, MAX_K, MAX_QUERY_BYTES, SearchMode, SearchRequest};
pub use section::{CommitInfo, Section};
pub use sync::set_aside::{
    RunawayParse, RunawayParsePolicy, SET_ASIDE_ENV, SET_ASIDE_FILE, SetAsideFile, on_runaway_parse,
};
pub use sync::{ChunkCounts, FileCounts, FileError, SyncOptions, SyncProgress, SyncReport};
pub use verify::VerifyReport;

use backend::Backend;
use rag_lexical::LexicalIndex;
use rag_store::{Store, StoreError};
use searcher::Searcher;
use source::ChunkSource;

/// The database file inside an index directory.
pub const DB_FILE: &str = "index.redb";
/// Prefix of saved graph directories inside an index directory.
pub const GRAPH_DIR_PREFIX: &str = "graph-";
/// The lexical (BM25) index's directory inside an index directory.
pub const LEXICAL_DIR: &str = "lexical";

/// Settings that shape an index. The chunker settings are fingerprinted into the index. Built
/// with [`IndexConfig::builder`], which validates, or [`IndexConfig::default`].
///
/// ```
/// use rag_index_core::{ChunkerConfig, IndexConfig};
/// let config = IndexConfig::builder()
///     .chunker(ChunkerConfig { target_tokens: 200, ..ChunkerConfig::default() })
///     .max_file_bytes(8 << 20)
///     .build()
///     .unwrap();
/// assert_eq!(config.chunker().target_tokens, 200);
/// assert!(IndexConfig::builder().embed_commit_every(0).build().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct IndexConfig {
    chunker: ChunkerConfig,
    vectors: IndexParams,
    embed_commit_every: usize,
    max_file_bytes: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            chunker: ChunkerConfig::default(),
            vectors: IndexParams::default(),
            embed_commit_every: 256,
            max_file_bytes: 32 * 1024 * 1024,
        }
    }
}

impl IndexConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> IndexConfigBuilder {
        IndexConfigBuilder(IndexConfig::default())
    }

    /// Chunk sizes.
    pub fn chunker(&self) -> &ChunkerConfig {
        &self.chunker
    }

    /// HNSW and brute-force settings.
    pub fn vectors(&self) -> &IndexParams {
        &self.vectors
    }

    /// Texts embedded between two commits of the embedding cache.
    pub fn embed_commit_every(&self) -> usize {
        self.embed_commit_every
    }

    /// Files larger than this are reported and skipped.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<()> {
        self.chunker.validate()?;
        self.vectors.validate()?;
        let invalid = |reason: &str| {
            Err(Error::InvalidConfig {
                reason: reason.to_string(),
            })
        };
        if self.embed_commit_every == 0 {
            return invalid("embed_commit_every must be at least 1");
        }
        if self.max_file_bytes == 0 {
            return invalid("max_file_bytes must be at least 1");
        }
        Ok(())
    }
}

/// Builds a validated [`IndexConfig`].
#[derive(Debug, Clone)]
pub struct IndexConfigBuilder(IndexConfig);

impl IndexConfigBuilder {
    /// Chunk sizes (changing them needs a reindex).
    pub fn chunker(mut self, chunker: ChunkerConfig) -> Self {
        self.0.chunker = chunker;
        self
    }

    /// HNSW and brute-force settings.
    pub fn vectors(mut self, vectors: IndexParams) -> Self {
        self.0.vectors = vectors;
        self
    }

    /// Texts embedded between two commits of the embedding cache: the most work a crash loses.
    pub fn embed_commit_every(mut self, texts: usize) -> Self {
        self.0.embed_commit_every = texts;
        self
    }

    /// Larger files are reported and skipped.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.0.max_file_bytes = bytes;
        self
    }

    /// The configuration, or [`Error::InvalidConfig`] (or the chunker's or vector index's
    /// own error) naming what is wrong.
    pub fn build(self) -> Result<IndexConfig> {
        self.0.validate()?;
        Ok(self.0)
    }
}

/// Counts tokens with the embedding model's tokenizer, so chunk budgets are exact.
struct ModelTokens(Arc<Embedder>);

impl TokenCounter for ModelTokens {
    fn count(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }
}

/// The chunker configuration used with `embedder`: the hard cap is lowered to the model's max
/// sequence length, since text past it is invisible to the model.
pub fn effective_chunker_config(embedder: &Embedder, mut config: ChunkerConfig) -> ChunkerConfig {
    config.max_tokens = config.max_tokens.min(embedder.max_seq_len());
    config.target_tokens = config.target_tokens.min(config.max_tokens);
    config
}

/// Builds the chunker that sizes chunks with `embedder`'s tokenizer (loading it), with
/// [`effective_chunker_config`].
pub fn chunker_for(embedder: &Arc<Embedder>, config: ChunkerConfig) -> Result<Chunker> {
    embedder.preload_tokenizer()?;
    Ok(Chunker::new(
        Arc::new(ModelTokens(embedder.clone())),
        effective_chunker_config(embedder, config),
    )?)
}

/// Index-wide statistics.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    /// Indexed files.
    pub files: u64,
    /// Live chunks.
    pub chunks: u64,
    /// Stored vectors (unique embedded texts). May include a few no live chunk uses any more:
    /// they are dropped in bulk once they could be an eighth of the chunks.
    pub vectors: u64,
    /// Vector dimensions.
    pub dimensions: usize,
    /// Model name.
    pub model: String,
    /// Full model fingerprint.
    pub model_fingerprint: String,
    /// Chunker fingerprint.
    pub chunker_fingerprint: String,
    /// Commit generation.
    pub generation: u64,
    /// When that generation was committed, in milliseconds since the Unix epoch (`None` for
    /// indexes written before it was recorded).
    pub committed_at: Option<u64>,
    /// Mean tokens per chunk.
    pub mean_chunk_tokens: f64,
    /// Bytes of the redb file.
    pub db_bytes: u64,
    /// Bytes of the current graph directory.
    pub graph_bytes: u64,
    /// Bytes of the lexical index directory.
    pub lexical_bytes: u64,
    /// Bytes of the whole index directory.
    pub total_bytes: u64,
    /// Where the store's bytes go, table by table (empty on PostgreSQL).
    pub store_tables: Vec<StoreTable>,
}

/// One table of the embedded store: what it holds and the pages holding it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreTable {
    /// What the table holds: `vectors`, `chunks`, `manifest`, `points` or `meta`.
    pub table: String,
    /// Entries.
    pub entries: u64,
    /// Bytes of its keys and values.
    pub stored_bytes: u64,
    /// Bytes of the pages it occupies, stored bytes included.
    pub page_bytes: u64,
}

/// An open index. See the crate documentation.
pub struct RagIndex {
    dir: PathBuf,
    /// Where the index lives; the one value that decides the backend.
    location: StoreLocation,
    backend: Backend,
    embedder: Arc<Embedder>,
    /// Built on first use: building it loads the tokenizer, which a no-op sync never needs.
    chunker: OnceLock<Chunker>,
    /// [`ChunkerConfig::fingerprint`] of the effective configuration.
    chunker_fingerprint: String,
    config: IndexConfig,
    writable: bool,
    searcher: RwLock<Option<Arc<Searcher>>>,
    /// The lexical index's writer (holding tantivy's writer lock), opened by the first commit
    /// that changes it: a sync with nothing to do never starts its threads.
    lexical_writer: Mutex<Option<LexicalIndex>>,
    // One sync at a time per process; redb already excludes other processes.
    sync_guard: Mutex<()>,
}

fn map_store_error(dir: &Path, e: StoreError) -> Error {
    match e {
        StoreError::Busy { .. } => Error::Busy {
            path: dir.to_owned(),
        },
        StoreError::NotFound { .. } => Error::NoIndex {
            path: dir.to_owned(),
        },
        other => Error::from(other),
    }
}

impl RagIndex {
    /// Opens (creating if needed) the index directory for syncing and searching. Fails with
    /// [`Error::Busy`] while another process writes to it, [`Error::ForeignDirectory`] when the
    /// directory holds other files and no index, and [`Error::Damaged`] when the store file is
    /// damaged (see [`move_damaged_store_aside`]).
    pub fn open(dir: &Path, embedder: Arc<Embedder>, config: IndexConfig) -> Result<RagIndex> {
        index_dir::check_usable(dir)?;
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            action: "cannot create index directory",
            path: dir.to_owned(),
            source,
        })?;
        let store = Store::open_writer(&dir.join(DB_FILE)).map_err(|e| map_store_error(dir, e))?;
        Self::with_backend(
            StoreLocation::Dir(dir.to_owned()),
            Backend::Embedded(store),
            embedder,
            config,
            true,
        )
    }

    /// Opens an existing index for searching only; works while another process syncs it.
    pub fn open_read_only(
        dir: &Path,
        embedder: Arc<Embedder>,
        config: IndexConfig,
    ) -> Result<RagIndex> {
        let store = Store::open_reader(&dir.join(DB_FILE)).map_err(|e| map_store_error(dir, e))?;
        Self::with_backend(
            StoreLocation::Dir(dir.to_owned()),
            Backend::Embedded(store),
            embedder,
            config,
            false,
        )
    }

    /// Opens the index at `location` (a directory or a PostgreSQL collection), for syncing and
    /// searching or for searching only, as `mode` says.
    pub fn open_at(
        location: &StoreLocation,
        embedder: Arc<Embedder>,
        config: IndexConfig,
        mode: OpenMode,
    ) -> Result<RagIndex> {
        match (location, mode) {
            (StoreLocation::Dir(dir), OpenMode::Reader) => {
                Self::open_read_only(dir, embedder, config)
            }
            (StoreLocation::Dir(dir), OpenMode::Writer { .. }) => Self::open(dir, embedder, config),
            (StoreLocation::Postgres { url, collection }, mode) => {
                let names = location.collections();
                let store = match (mode, names.len()) {
                    (OpenMode::Reader, 2..) => rag_pg::PgStore::open_readers(url, &names)?,
                    (_, 2..) => {
                        return Err(Error::InvalidConfig {
                            reason: format!(
                                "a sync writes one collection; {} were named ({collection})",
                                names.len()
                            ),
                        });
                    }
                    _ => rag_pg::PgStore::open(url, collection, mode.into())?,
                };
                let writable = mode != OpenMode::Reader;
                Self::with_backend(
                    location.clone(),
                    Backend::Postgres(Box::new(store)),
                    embedder,
                    config,
                    writable,
                )
            }
        }
    }

    fn with_backend(
        location: StoreLocation,
        backend: Backend,
        embedder: Arc<Embedder>,
        config: IndexConfig,
        writable: bool,
    ) -> Result<RagIndex> {
        config.validate()?;
        // Messages name the index by this path; a collection has none, so its description.
        let dir = match &location {
            StoreLocation::Dir(dir) => dir.clone(),
            other => PathBuf::from(other.to_string()),
        };
        let chunker_config = effective_chunker_config(&embedder, config.chunker.clone());
        chunker_config.validate()?;
        Ok(RagIndex {
            dir,
            location,
            backend,
            // Converted formats shape chunks too.
            chunker_fingerprint: format!(
                "{}/formats-{}",
                chunker_config.fingerprint(),
                rag_formats::FORMAT_VERSION
            ),
            embedder,
            chunker: OnceLock::new(),
            config,
            writable,
            searcher: RwLock::new(None),
            lexical_writer: Mutex::new(None),
            sync_guard: Mutex::new(()),
        })
    }

    /// The index directory (for a PostgreSQL collection: its description, no real path).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the index lives.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The shared embedder.
    pub fn embedder(&self) -> &Arc<Embedder> {
        &self.embedder
    }

    /// The chunker this index uses (built, and the tokenizer loaded, on first call).
    pub fn chunker(&self) -> Result<&Chunker> {
        if let Some(chunker) = self.chunker.get() {
            return Ok(chunker);
        }
        let built = chunker_for(&self.embedder, self.config.chunker.clone())?;
        Ok(self.chunker.get_or_init(|| built))
    }

    /// The chunker settings in force (the configured ones, capped by the model).
    pub fn chunker_config(&self) -> ChunkerConfig {
        effective_chunker_config(&self.embedder, self.config.chunker.clone())
    }

    /// Fingerprint of the chunker configuration this index uses.
    pub fn chunker_fingerprint(&self) -> &str {
        &self.chunker_fingerprint
    }

    /// Key of a text's vector in the store: the text hash scoped by the model, so vectors of two
    /// models never mix even inside one sync that switches models.
    fn embedding_key(&self, text_hash: &str) -> String {
        embedding_key(&self.embedder.fingerprint().id(), text_hash)
    }

    /// The `k` best chunks for `query` that `access` may see, in the default [`SearchMode`],
    /// best first. Shorthand for [`search_with`](Self::search_with), which takes every setting.
    pub fn search(&self, query: &str, access: &Access, k: usize) -> Result<Vec<Hit>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        self.search_with(&SearchRequest::new(query, access.clone()).k(k.min(MAX_K)))
    }

    /// A dense search with an already embedded query, among the chunks `access` may see.
    /// `exact` scans every vector instead of walking the graph.
    pub fn search_vector(
        &self,
        vector: &[f32],
        access: &Access,
        k: usize,
        exact: bool,
    ) -> Result<Vec<Hit>> {
        if let Some(store) = self.pg() {
            return self.search_vector_pg(store, vector, access, k, exact);
        }
        let searcher = self.searcher()?;
        self.check_query_model(&searcher)?;
        let none = Filter::default();
        let points = searcher.points_for(&none)?;
        let check = |point: u64| points.is_none_or(|p| p.allows(point, access, &none));
        let allow: Option<&(dyn Fn(u64) -> bool + Sync)> = match points {
            Some(p) if !p.passes_all(&none) => Some(&check),
            _ => None,
        };
        let found = if exact {
            searcher.vectors.search_exact(vector, k, allow)?
        } else {
            searcher.vectors.search(vector, k, allow)?
        };
        searcher.hits(
            found.into_iter().map(|(point, score)| (point, score, None)),
            &check,
        )
    }

    /// The chunk with this ID, if it is live and `access` may see it.
    pub fn chunk(&self, chunk_id: &str, access: &Access) -> Result<Option<IndexedChunk>> {
        let chunk = match &self.backend {
            Backend::Embedded(store) => source::SnapshotChunks(&store.read()?).chunk(chunk_id)?,
            Backend::Postgres(store) => {
                let named = postgres::spans_several(store);
                store.read(|view| postgres::PgChunks { view, named }.chunk(chunk_id))?
            }
        };
        Ok(chunk.filter(|chunk| access.may_see(&access::required_labels(&chunk.metadata))))
    }

    /// Every live chunk, ordered by path and position.
    pub fn dump(&self) -> Result<Vec<IndexedChunk>> {
        if let Some(store) = self.pg() {
            postgres::one_collection(store, "dump")?;
            let chunks = store.read(|view| view.chunks())?;
            return Ok(chunks
                .into_iter()
                .map(|c| postgres::indexed_chunk(c, false))
                .collect());
        }
        let mut chunks = self.store()?.read()?.chunks()?;
        chunks.sort_by(|a, b| (&a.1.path, a.1.ordinal, &a.0).cmp(&(&b.1.path, b.1.ordinal, &b.0)));
        Ok(chunks
            .into_iter()
            .map(|(id, record)| IndexedChunk::from_record(id, record))
            .collect())
    }

    /// The stored vector of a chunk text hash.
    pub fn vector_of(&self, text_hash: &str) -> Result<Option<Vec<f32>>> {
        let key = self.embedding_key(text_hash);
        match &self.backend {
            Backend::Embedded(store) => Ok(store.read()?.embedding(&key)?),
            Backend::Postgres(store) => Ok(store.embedding(&key)?),
        }
    }

    /// Index-wide statistics.
    pub fn stats(&self) -> Result<Stats> {
        if let Some(store) = self.pg() {
            return self.stats_pg(store);
        }
        let snapshot = self.store()?.read()?;
        let meta = snapshot.meta()?;
        let counts = snapshot.counts()?;
        let chunks = snapshot.chunks()?;
        let tokens: u64 = chunks.iter().map(|(_, c)| u64::from(c.tokens)).sum();
        // A delta's directory holds only the changes: its base is part of the graph too.
        let graph_bytes = meta.as_ref().and_then(|m| m.graph.as_ref()).map_or(0, |g| {
            let dir = self.dir.join(&g.dir);
            let base = rag_vector_index::VectorIndex::saved_base(&dir)
                .ok()
                .flatten();
            dir_size(&dir) + base.map_or(0, |base| dir_size(&base))
        });
        Ok(Stats {
            db_bytes: std::fs::metadata(self.dir.join(DB_FILE)).map_or(0, |m| m.len()),
            graph_bytes,
            lexical_bytes: dir_size(&self.dir.join(LEXICAL_DIR)),
            total_bytes: dir_size(&self.dir),
            store_tables: snapshot
                .table_bytes()?
                .into_iter()
                .map(|t| StoreTable {
                    table: t.table.to_string(),
                    entries: t.entries,
                    stored_bytes: t.stored_bytes,
                    page_bytes: t.page_bytes,
                })
                .collect(),
            ..self.base_stats(meta.as_ref(), counts, tokens)
        })
    }

    /// The statistics every backend reports the same way, with the sizes left at zero.
    pub(crate) fn base_stats(
        &self,
        meta: Option<&rag_store::IndexMeta>,
        counts: Counts,
        tokens: u64,
    ) -> Stats {
        let fingerprint = self.embedder.fingerprint();
        Stats {
            files: counts.files,
            chunks: counts.chunks,
            vectors: counts.embeddings,
            dimensions: meta.map_or(self.embedder.dim(), |m| m.dim),
            model: fingerprint.name.clone(),
            model_fingerprint: meta
                .map_or_else(|| fingerprint.id(), |m| m.model_fingerprint.clone()),
            chunker_fingerprint: meta.map_or_else(
                || self.chunker_fingerprint.clone(),
                |m| m.chunker_fingerprint.clone(),
            ),
            generation: meta.map_or(0, |m| m.generation),
            committed_at: meta.and_then(|m| m.committed_at),
            mean_chunk_tokens: match counts.chunks {
                0 => 0.0,
                n => tokens as f64 / n as f64,
            },
            db_bytes: 0,
            graph_bytes: 0,
            lexical_bytes: 0,
            total_bytes: 0,
            store_tables: Vec::new(),
        }
    }
}

pub(crate) fn embedding_key(model_id: &str, text_hash: &str) -> String {
    let model = blake3::hash(model_id.as_bytes()).to_hex();
    format!("{}:{text_hash}", &model[..16])
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
