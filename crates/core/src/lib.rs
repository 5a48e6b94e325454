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
mod chunk;
mod commit;
mod dedup;
mod document;
mod error;
pub mod eval;
mod expand;
mod filter;
mod fusion;
mod index_dir;
mod lexical;
mod points;
mod request;
mod search;
mod section;
mod sync;
mod verify;
pub mod walk;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

pub use access::{ACCESS_KEY, Access, AccessRules, RULES_FILE, UNREADABLE_LABEL, check_label};
pub use chunk::{Hit, IndexedChunk, PassageChunk, SignalRank, Signals};
pub use dedup::DUPLICATE_CONTAINMENT;
pub use document::chunk_file;
pub use error::{Error, Result};
pub use expand::SECTION_CAP_TOKENS;
pub use filter::{BUILT_IN_KEYS, Condition, Filter, Op, PathGlob};
pub use fusion::Fusion;
pub use index_dir::move_damaged_store_aside;
pub use rag_chunker::{Chunk, Chunker, ChunkerConfig, Document, TokenCounter};
pub use rag_embed::{Embedder, EmbedderConfig, ModelFingerprint, resolve_model_dir};
pub use rag_store::Counts;
pub use rag_vector_index::IndexParams;
pub use request::{Expand, MAX_BUDGET, MAX_K, MAX_QUERY_BYTES, SearchMode, SearchRequest};
pub use section::{CommitInfo, Section};
pub use sync::{ChunkCounts, FileCounts, FileError, SyncOptions, SyncProgress, SyncReport};
pub use verify::VerifyReport;

use lexical::LexicalView;
use points::PointTable;
use rag_lexical::LexicalIndex;
use rag_store::{Snapshot, Store, StoreError};
use rag_vector_index::VectorIndex;

/// The database file inside an index directory.
pub const DB_FILE: &str = "index.redb";
/// Prefix of saved graph directories inside an index directory.
pub const GRAPH_DIR_PREFIX: &str = "graph-";
/// The lexical (BM25) index's directory inside an index directory.
pub const LEXICAL_DIR: &str = "lexical";

/// Settings that shape an index. The chunker settings are fingerprinted into the index.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    /// Chunk sizes.
    pub chunker: ChunkerConfig,
    /// HNSW and brute-force settings.
    pub vectors: IndexParams,
    /// Texts embedded between two commits of the embedding cache: the most work a crash loses.
    pub embed_commit_every: usize,
    /// Larger files are reported and skipped.
    pub max_file_bytes: u64,
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
}

/// What a search runs against: one committed generation's vectors and the snapshot they came
/// from, so a search never mixes two commits.
struct Searcher {
    generation: u64,
    snapshot: Snapshot,
    vectors: VectorIndex,
    /// Replaced when an unavailable lexical index becomes usable at the same generation (a sync
    /// or repair that rebuilt only it).
    lexical: RwLock<LexicalView>,
    /// Labels and filter fields per point, built on first search.
    points: OnceLock<PointTable>,
}

impl Searcher {
    /// Turns `(point, score, signals)` in rank order into hits, skipping points whose chunk
    /// is not in this snapshot (so nothing deleted comes back through any signal) and points
    /// `allow` rejects.
    fn hits(
        &self,
        found: impl IntoIterator<Item = (u64, f32, Option<Signals>)>,
        allow: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<Hit>> {
        let mut hits = Vec::new();
        for (point, score, signals) in found {
            if !allow(point) {
                continue;
            }
            let Some(chunk_id) = self.snapshot.chunk_id_for_point(point)? else {
                continue;
            };
            let Some(chunk) = self.snapshot.chunk(&chunk_id)? else {
                continue;
            };
            let mut hit = Hit::new(score, IndexedChunk::from_record(chunk_id, chunk), signals);
            hit.rank = hits.len() + 1;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// The point table of this generation (built once: it reads every chunk record).
    fn points(&self) -> Result<&PointTable> {
        if let Some(table) = self.points.get() {
            return Ok(table);
        }
        let table = PointTable::build(self.snapshot.chunks()?);
        Ok(self.points.get_or_init(|| table))
    }

    fn is_empty(&self) -> Result<bool> {
        Ok(self.snapshot.counts()?.chunks == 0)
    }

    fn lexical(&self) -> LexicalView {
        self.lexical.read().expect("lexical view lock").clone()
    }
}

/// An open index. See the crate documentation.
pub struct RagIndex {
    dir: PathBuf,
    store: Store,
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
        Self::with_store(dir, store, embedder, config, true)
    }

    /// Opens an existing index for searching only; works while another process syncs it.
    pub fn open_read_only(
        dir: &Path,
        embedder: Arc<Embedder>,
        config: IndexConfig,
    ) -> Result<RagIndex> {
        let store = Store::open_reader(&dir.join(DB_FILE)).map_err(|e| map_store_error(dir, e))?;
        Self::with_store(dir, store, embedder, config, false)
    }

    fn with_store(
        dir: &Path,
        store: Store,
        embedder: Arc<Embedder>,
        config: IndexConfig,
        writable: bool,
    ) -> Result<RagIndex> {
        let chunker_config = effective_chunker_config(&embedder, config.chunker.clone());
        chunker_config.validate()?;
        Ok(RagIndex {
            dir: dir.to_owned(),
            store,
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

    /// The index directory.
    pub fn dir(&self) -> &Path {
        &self.dir
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

    /// Fingerprint of the chunker configuration this index uses.
    pub fn chunker_fingerprint(&self) -> &str {
        &self.chunker_fingerprint
    }

    /// Key of a text's vector in the store: the text hash scoped by the model, so vectors of two
    /// models never mix even inside one sync that switches models.
    fn embedding_key(&self, text_hash: &str) -> String {
        embedding_key(&self.embedder.fingerprint().id(), text_hash)
    }

    /// The searcher for the latest commit, loading or rebuilding it when a newer commit exists.
    fn searcher(&self) -> Result<Arc<Searcher>> {
        let snapshot = self.store.read()?;
        let stored = snapshot.meta()?.map(|m| m.generation);
        let generation = stored.unwrap_or(0);
        if let Some(current) = self.searcher.read().expect("searcher lock").as_ref()
            && current.generation == generation
        {
            // Opening a missing or damaged index fails in well under a millisecond, so retrying
            // costs little while it is unusable and nothing once it is fine.
            if stored.is_some() && current.lexical().handle().is_none() {
                let view = self.lexical_view(None, stored);
                if view.handle().is_some() {
                    *current.lexical.write().expect("lexical view lock") = view;
                }
            }
            return Ok(current.clone());
        }
        let previous = self.searcher.read().expect("searcher lock").clone();
        let searcher = Arc::new(self.load_searcher(snapshot, previous.as_deref())?);
        *self.searcher.write().expect("searcher lock") = Some(searcher.clone());
        Ok(searcher)
    }

    /// Loads the saved graph of the snapshot's generation, or rebuilds it from stored vectors
    /// when it is missing, stale or damaged: the graph is derived data and never trusted blindly.
    fn load_searcher(&self, snapshot: Snapshot, previous: Option<&Searcher>) -> Result<Searcher> {
        let meta = snapshot.meta()?;
        let generation = meta.as_ref().map_or(0, |m| m.generation);
        let lexical = RwLock::new(self.lexical_view(
            previous.map(Searcher::lexical).as_ref(),
            meta.as_ref().map(|m| m.generation),
        ));
        let live = snapshot.counts()?.chunks as usize;
        if let Some(pointer) = meta.as_ref().and_then(|m| m.graph.clone())
            && pointer.generation == generation
        {
            match VectorIndex::load(&self.dir.join(&pointer.dir), self.config.vectors.clone()) {
                Ok(vectors) if vectors.len() == live => {
                    return Ok(Searcher {
                        generation,
                        snapshot,
                        vectors,
                        lexical,
                        points: OnceLock::new(),
                    });
                }
                Ok(vectors) => log::warn!(
                    "graph {} holds {} vectors but the store has {live} chunks; rebuilding",
                    pointer.dir,
                    vectors.len()
                ),
                Err(e) => log::warn!("graph {} unusable ({e}); rebuilding", pointer.dir),
            }
        }
        let vectors = self.build_vectors(&snapshot.chunks()?, |key| snapshot.embedding(key))?;
        Ok(Searcher {
            generation,
            snapshot,
            vectors,
            lexical,
            points: OnceLock::new(),
        })
    }

    /// Builds a vector index over `chunks`, fetching each vector through `embedding`.
    fn build_vectors(
        &self,
        chunks: &[(String, rag_store::ChunkRecord)],
        embedding: impl Fn(&str) -> rag_store::Result<Option<Vec<f32>>>,
    ) -> Result<VectorIndex> {
        let mut items = Vec::with_capacity(chunks.len());
        for (id, chunk) in chunks {
            let key = self.embedding_key(&chunk.hash);
            match embedding(&key)? {
                Some(v) => items.push((chunk.point, v)),
                None => log::warn!("chunk {id} of {} has no stored vector", chunk.path),
            }
        }
        Ok(VectorIndex::build(
            self.embedder.dim(),
            self.config.vectors.clone(),
            items,
        )?)
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
        let searcher = self.searcher()?;
        let points = searcher.points()?;
        let none = Filter::default();
        let check = |point: u64| points.allows(point, access, &none);
        let allow: Option<&(dyn Fn(u64) -> bool + Sync)> = match points.passes_all(&none) {
            true => None,
            false => Some(&check),
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
        let snapshot = self.store.read()?;
        Ok(snapshot
            .chunk(chunk_id)?
            .map(|record| IndexedChunk::from_record(chunk_id.to_string(), record))
            .filter(|chunk| access.may_see(&access::required_labels(&chunk.metadata))))
    }

    /// Every live chunk, ordered by path and position.
    pub fn dump(&self) -> Result<Vec<IndexedChunk>> {
        let mut chunks = self.store.read()?.chunks()?;
        chunks.sort_by(|a, b| (&a.1.path, a.1.ordinal, &a.0).cmp(&(&b.1.path, b.1.ordinal, &b.0)));
        Ok(chunks
            .into_iter()
            .map(|(id, record)| IndexedChunk::from_record(id, record))
            .collect())
    }

    /// The stored vector of a chunk text hash.
    pub fn vector_of(&self, text_hash: &str) -> Result<Option<Vec<f32>>> {
        Ok(self
            .store
            .read()?
            .embedding(&self.embedding_key(text_hash))?)
    }

    /// Index-wide statistics.
    pub fn stats(&self) -> Result<Stats> {
        let snapshot = self.store.read()?;
        let meta = snapshot.meta()?;
        let counts = snapshot.counts()?;
        let chunks = snapshot.chunks()?;
        let tokens: u64 = chunks.iter().map(|(_, c)| u64::from(c.tokens)).sum();
        let graph_bytes = meta
            .as_ref()
            .and_then(|m| m.graph.as_ref())
            .map_or(0, |g| dir_size(&self.dir.join(&g.dir)));
        let fingerprint = self.embedder.fingerprint();
        Ok(Stats {
            files: counts.files,
            chunks: counts.chunks,
            vectors: counts.embeddings,
            dimensions: meta.as_ref().map_or(self.embedder.dim(), |m| m.dim),
            model: fingerprint.name.clone(),
            model_fingerprint: meta
                .as_ref()
                .map_or_else(|| fingerprint.id(), |m| m.model_fingerprint.clone()),
            chunker_fingerprint: meta.as_ref().map_or_else(
                || self.chunker_fingerprint.clone(),
                |m| m.chunker_fingerprint.clone(),
            ),
            generation: meta.as_ref().map_or(0, |m| m.generation),
            committed_at: meta.as_ref().and_then(|m| m.committed_at),
            mean_chunk_tokens: if chunks.is_empty() {
                0.0
            } else {
                tokens as f64 / chunks.len() as f64
            },
            db_bytes: std::fs::metadata(self.dir.join(DB_FILE)).map_or(0, |m| m.len()),
            graph_bytes,
            lexical_bytes: dir_size(&self.dir.join(LEXICAL_DIR)),
            total_bytes: dir_size(&self.dir),
        })
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
