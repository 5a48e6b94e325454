//! Local sentence embeddings with a BERT-family model run by Candle, matching
//! sentence-transformers.
//!
//! Point [`Embedder::load`] at a sentence-transformers model folder (`config.json`,
//! `tokenizer.json`, `model.safetensors`, `sentence_bert_config.json`, `1_Pooling/config.json`),
//! or let [`resolve_model_dir`] find one. Texts are tokenized with the model's own tokenizer,
//! truncated at the model's `max_seq_length` (special tokens included), run through the BERT
//! encoder, pooled over real tokens only (mean, or CLS when the model says so) and
//! L2-normalised: the vectors sentence-transformers gives (cosine >= 0.9999999 on the reference
//! set). A text's vector does not depend on the batch it was embedded in.
//!
//! The [`Embedder`] is `Send + Sync`; embedding takes `&self`, so share it through an `Arc`.
//! [`Embedder::fingerprint`] identifies the vector space; store it with the vectors and refuse
//! to mix spaces.
//!
//! # Example
//!
//! ```no_run
//! use rag_embed::{Embedder, EmbedderConfig, resolve_model_dir};
//!
//! # fn main() -> Result<(), rag_embed::EmbedError> {
//! let dir = resolve_model_dir(None, &["models".into()])?;
//! let embedder = Embedder::load(&dir, EmbedderConfig::default())?;
//! let docs = embedder.embed_documents(&["Traefik is a reverse proxy.", "Routers match requests."])?;
//! let query = embedder.embed_query("what is traefik?")?;
//! let scores: Vec<f32> = docs
//!     .iter()
//!     .map(|d| d.iter().zip(&query).map(|(a, b)| a * b).sum())
//!     .collect();
//! assert_eq!(docs[0].len(), embedder.dim());
//! # let _ = scores;
//! # Ok(())
//! # }
//! ```
//!
//! # Performance
//!
//! Texts are sorted by token length and cut into groups of at most
//! [`EmbedderConfig::batch_size`] texts and about 512 tokens. A group is packed without
//! padding (every dense layer runs on real tokens only, attention runs per sequence), so no work
//! is spent on padding whatever the length mix. Groups run in parallel on a thread pool owned
//! by the embedder and sized by [`EmbedderConfig::threads`]; a call that is a single group
//! spreads that group's matmuls, rows and sequences over the pool instead. Matrix products
//! use candle's (the `gemm` crate, AVX-512 where the CPU has it), the element-wise steps are
//! fused, vectorised kernels of this crate.
//!
//! With [`Precision::Int8`] the linear layers (about 90% of the arithmetic) run as integer
//! products instead (AVX2 where the CPU has it, an exact scalar equivalent elsewhere): about
//! 1.35× the f32 throughput on a 2-core Zen 3 machine, at a cosine to the f32 vectors of
//! 0.9986 on average and 0.9926 at worst on real texts (`tests/int8.rs`).
//!
//! Candle also keeps a process-wide pool, sized once from `CANDLE_NUM_THREADS` (else
//! `RAYON_NUM_THREADS`, else the physical core count), for its own element-wise kernels; this
//! crate barely uses them, but a program that must stay on fewer cores can set
//! `CANDLE_NUM_THREADS` at startup.
//!
//! # Crate features
//!
//! None. CPU only. f16/bf16 weights are converted to f32 at load (half-precision matmuls are
//! slower than f32 on CPUs without native f16 arithmetic). [`EmbedderConfig::precision`]
//! selects f32 or int8 linear layers at run time.

mod config;
mod error;
mod few_rows;
mod fingerprint;
mod int8_gemm;
mod kernels;
mod model;
mod precision;
mod qlinear;
mod resolve;
#[cfg(test)]
mod test_values;
mod weights_hash;

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

pub use error::EmbedError;
pub use fingerprint::ModelFingerprint;
pub use precision::Precision;
pub use resolve::{DEFAULT_MODEL_NAME, MODEL_DIR_ENV, resolve_model_dir};
pub use weights_hash::CACHE_DIR_ENV;

use config::ModelSpec;
use model::{Bert, Pass};

/// Settings for an [`Embedder`]; the defaults suit all-MiniLM-L6-v2 on a laptop CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// Most texts per forward pass (after sorting by length; a pass also stops at about 512
    /// tokens). Vectors do not depend on it. Default 16.
    pub batch_size: usize,
    /// Threads for the matrix products; `None` uses every core.
    pub threads: Option<usize>,
    /// Prepended to every query (E5 models want `"query: "`). Default empty.
    pub query_prefix: String,
    /// Prepended to every document (E5 models want `"passage: "`). Default empty.
    pub passage_prefix: String,
    /// Arithmetic of the linear layers. Default [`Precision::F32`]; [`Precision::Int8`] is
    /// faster and changes the vectors slightly (a different fingerprint).
    pub precision: Precision,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        EmbedderConfig {
            batch_size: 16,
            threads: None,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            precision: Precision::F32,
        }
    }
}

/// A sentence-embedding model. Cheap to share: `Send + Sync`, every method takes `&self`.
///
/// [`Embedder::open`] reads only the small configuration files and the (cached) weights hash,
/// so its [`fingerprint`](Self::fingerprint) is known at once; the tokenizer (~35 ms to parse)
/// and the weights (~0.3 s) are loaded on first use. That keeps commands that turn out to have
/// nothing to embed — a no-op sync, `stats` — in milliseconds. [`Embedder::load`] loads
/// everything up front instead, so errors in any model file surface immediately.
pub struct Embedder {
    spec: ModelSpec,
    /// Parsed on first use; see [`Tokenizers`].
    tokenizers: OnceLock<Tokenizers>,
    /// Loaded on first embedding.
    model: OnceLock<Bert>,
    /// Serialises the first loads, so concurrent callers wait for one load instead of each
    /// doing it. Failed loads are not remembered: the next call tries again.
    init: Mutex<()>,
    pool: rayon::ThreadPool,
    config: EmbedderConfig,
    /// Tokens per forward pass; see [`GROUP_TOKENS`].
    group_tokens: usize,
    fingerprint: ModelFingerprint,
}

struct Tokenizers {
    /// Truncates at `max_seq_len`, never pads (batches are padded by hand, to their longest).
    truncating: Tokenizer,
    /// No truncation, so callers can see how far over the cap a text is.
    counting: Tokenizer,
}

/// Tokens per forward pass. Small enough that a pass's activations (tokens × 1536 floats in
/// the feed-forward layer) stay near a core's L2 cache, large enough for efficient matmuls.
/// Measured on the Traefik chunks, 1 thread: 256–512 best, 128 and 4096 about 10% slower.
const GROUP_TOKENS: usize = 512;

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("fingerprint", &self.fingerprint)
            .field("config", &self.config)
            .field("threads", &self.pool.current_num_threads())
            .field("tokenizer_loaded", &self.tokenizers.get().is_some())
            .field("weights_loaded", &self.model.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads a sentence-transformers BERT model folder completely.
    ///
    /// Errors name the offending file: a missing `config.json`, unreadable or corrupt
    /// `model.safetensors` or `tokenizer.json`, an architecture other than BERT, a pooling mode
    /// not supported.
    pub fn load(model_dir: &Path, config: EmbedderConfig) -> Result<Embedder, EmbedError> {
        let embedder = Embedder::open(model_dir, config)?;
        embedder.preload()?;
        Ok(embedder)
    }

    /// Opens a sentence-transformers BERT model folder, deferring the expensive parts (see
    /// the type's documentation). Configuration errors are reported here; tokenizer and weights
    /// errors by the first call that needs them.
    pub fn open(model_dir: &Path, config: EmbedderConfig) -> Result<Embedder, EmbedError> {
        if config.batch_size == 0 {
            return Err(EmbedError::InvalidSetting(
                "batch_size must be at least 1".into(),
            ));
        }
        if config.threads == Some(0) {
            return Err(EmbedError::InvalidSetting(
                "threads must be at least 1".into(),
            ));
        }
        let spec = ModelSpec::read(model_dir)?;
        if !spec.tokenizer.is_file() {
            return Err(EmbedError::MissingFile {
                path: spec.tokenizer.clone(),
            });
        }
        let weights_blake3 = weights_hash::weights_blake3(&spec.weights)?;

        let threads = config.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("rag-embed-{i}"))
            .build()
            .map_err(|e| {
                EmbedError::InvalidSetting(format!("cannot start {threads} threads: {e}"))
            })?;

        let fingerprint = ModelFingerprint {
            name: model_name(model_dir),
            weights_blake3,
            dim: spec.bert.hidden_size,
            pooling: spec.pooling.as_str().to_string(),
            normalize: true,
            max_seq_len: spec.max_seq_len,
            query_prefix: config.query_prefix.clone(),
            passage_prefix: config.passage_prefix.clone(),
            precision: config.precision,
        };
        log::info!(
            "opened embedder {} with {threads} threads",
            fingerprint.id()
        );
        Ok(Embedder {
            group_tokens: GROUP_TOKENS.max(spec.max_seq_len),
            spec,
            tokenizers: OnceLock::new(),
            model: OnceLock::new(),
            init: Mutex::new(()),
            pool,
            config,
            fingerprint,
        })
    }

    /// Loads the tokenizer and the weights now if they are not loaded yet.
    pub fn preload(&self) -> Result<(), EmbedError> {
        self.tokenizers()?;
        self.model()?;
        Ok(())
    }

    /// Loads the tokenizer now if it is not loaded yet: call it before work that counts tokens
    /// ([`count_tokens`](Self::count_tokens) cannot report a tokenizer error).
    pub fn preload_tokenizer(&self) -> Result<(), EmbedError> {
        self.tokenizers().map(|_| ())
    }

    /// The value in `cell`, loading it first if needed. Loads run one at a time (under
    /// `init`); a failed load leaves the cell empty for the next call to retry.
    fn get_or_load<'a, T>(
        &self,
        cell: &'a OnceLock<T>,
        load: impl FnOnce() -> Result<T, EmbedError>,
    ) -> Result<&'a T, EmbedError> {
        if let Some(value) = cell.get() {
            return Ok(value);
        }
        let _init = self.init.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = cell.get() {
            return Ok(value);
        }
        let loaded = load()?;
        Ok(cell.get_or_init(|| loaded))
    }

    fn tokenizers(&self) -> Result<&Tokenizers, EmbedError> {
        self.get_or_load(&self.tokenizers, || {
            let loaded = load_tokenizers(&self.spec)?;
            log::info!("loaded tokenizer {}", self.spec.tokenizer.display());
            Ok(loaded)
        })
    }

    fn model(&self) -> Result<&Bert, EmbedError> {
        self.get_or_load(&self.model, || self.load_model())
    }

    fn load_model(&self) -> Result<Bert, EmbedError> {
        let path = &self.spec.weights;
        let weights = config::read_file(path).map_err(|err| match err {
            EmbedError::MissingFile { path } => EmbedError::Weights {
                path,
                message: "file not found".into(),
            },
            other => other,
        })?;
        // The fingerprint's hash may come from the cache; the vectors must come from exactly
        // the weights it names.
        let actual = blake3::hash(&weights).to_hex().to_string();
        if actual != self.fingerprint.weights_blake3 {
            weights_hash::forget(path);
            return Err(EmbedError::Weights {
                path: path.clone(),
                message: format!(
                    "the file changed after the model was opened (blake3 {} now, {} then); \
                     open the model again",
                    &actual[..16],
                    &self.fingerprint.weights_blake3
                        [..16.min(self.fingerprint.weights_blake3.len())]
                ),
            });
        }
        let model = Bert::load(&self.spec, weights, self.config.precision)?;
        if model.dim() != self.fingerprint.dim {
            return Err(EmbedError::Weights {
                path: path.clone(),
                message: format!(
                    "hidden size {} does not match config.json ({})",
                    model.dim(),
                    self.fingerprint.dim
                ),
            });
        }
        log::info!("loaded weights {}", path.display());
        Ok(model)
    }

    /// Embeds documents (the passage path: `passage_prefix` is prepended). Vectors come back
    /// L2-normalised, one per text, in input order.
    pub fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_with_prefix(texts, &self.config.passage_prefix, Pass::Documents)
    }

    /// Embeds one search query (the query path: `query_prefix` is prepended).
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut out = self.embed_with_prefix(&[text], &self.config.query_prefix, Pass::Query)?;
        Ok(out.pop().unwrap_or_default())
    }

    /// Vector dimension (384 for all-MiniLM-L6-v2), from `config.json`.
    pub fn dim(&self) -> usize {
        self.fingerprint.dim
    }

    /// Tokens per text, special tokens included, beyond which text is ignored (256 for
    /// all-MiniLM-L6-v2, from `sentence_bert_config.json`).
    pub fn max_seq_len(&self) -> usize {
        self.spec.max_seq_len
    }

    /// Tokens the document path would feed the model for `text` (with `passage_prefix` and the
    /// special tokens) *before* truncation, so a chunker can keep chunks within
    /// [`max_seq_len`](Self::max_seq_len). Thread-safe; skips offset tracking for speed.
    /// Loads the tokenizer on first use; call [`preload_tokenizer`](Self::preload_tokenizer)
    /// first to see its errors.
    pub fn count_tokens(&self, text: &str) -> usize {
        let text = with_prefix(&self.config.passage_prefix, text);
        let counted = self.tokenizers().map_err(|e| e.to_string()).and_then(|t| {
            t.counting
                .encode_fast(text.as_ref(), true)
                .map_err(|e| e.to_string())
        });
        match counted {
            Ok(encoding) => encoding.len(),
            Err(err) => {
                // Never seen with BERT's WordPiece; over-count so callers split rather than
                // silently truncate.
                log::warn!("token count failed ({err}); estimating from byte length");
                text.len() + 2
            }
        }
    }

    /// Token ids the document path feeds the model for `text` (prefix, special tokens,
    /// truncation applied). Useful to check tokenization against another implementation.
    pub fn document_token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.encode(text, &self.config.passage_prefix)
    }

    /// What the vectors depend on; store it and refuse to mix vectors of different spaces.
    pub fn fingerprint(&self) -> &ModelFingerprint {
        &self.fingerprint
    }

    /// The settings this embedder was loaded with.
    pub fn config(&self) -> &EmbedderConfig {
        &self.config
    }

    /// Threads the matrix products run on.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    fn encode(&self, text: &str, prefix: &str) -> Result<Vec<u32>, EmbedError> {
        let text = with_prefix(prefix, text);
        let encoding = self
            .tokenizers()?
            .truncating
            .encode_fast(text.as_ref(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    fn embed_with_prefix(
        &self,
        texts: &[&str],
        prefix: &str,
        pass: Pass,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encoded = texts
            .iter()
            .map(|t| self.encode(t, prefix))
            .collect::<Result<Vec<_>, _>>()?;
        let model = self.model()?;
        // Longest first, so a group holds texts of similar length; results are written back by
        // index, so callers see input order.
        let mut order: Vec<usize> = (0..encoded.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encoded[i].len()));
        let groups = group_by_budget(
            &order,
            |i| encoded[i].len(),
            self.config.batch_size,
            self.group_tokens,
        );

        // Groups are independent forward passes run in parallel, so a worker mostly keeps a
        // whole pass in its core's cache; within a pass, matmuls, rows and sequences split
        // further when a worker is idle (rayon work stealing).
        let vectors: Vec<Vec<Vec<f32>>> = self.pool.install(|| {
            groups
                .par_iter()
                .map(|group| {
                    let ids: Vec<&[u32]> = group.iter().map(|&i| encoded[i].as_slice()).collect();
                    model.embed_batch(&ids, pass)
                })
                .collect::<Result<_, _>>()
        })?;
        let mut out = vec![Vec::new(); encoded.len()];
        for (group, vecs) in groups.iter().zip(vectors) {
            for (&i, v) in group.iter().zip(vecs) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

fn load_tokenizers(spec: &ModelSpec) -> Result<Tokenizers, EmbedError> {
    let tok_err = |message: String| EmbedError::Tokenizer {
        path: spec.tokenizer.clone(),
        message,
    };
    let mut counting = Tokenizer::from_file(&spec.tokenizer).map_err(|e| tok_err(e.to_string()))?;
    // tokenizer.json ships truncation 128 and fixed padding 128 for the training setup;
    // sentence-transformers ignores both and uses max_seq_length with dynamic padding.
    counting.with_padding(None);
    counting
        .with_truncation(None)
        .map_err(|e| tok_err(e.to_string()))?;
    let mut truncating = counting.clone();
    truncating
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: spec.max_seq_len,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| tok_err(e.to_string()))?;
    Ok(Tokenizers {
        truncating,
        counting,
    })
}

/// Splits `order` into consecutive groups of at most `max_texts` texts and, unless a single
/// text is longer, at most `max_tokens` tokens.
fn group_by_budget(
    order: &[usize],
    len: impl Fn(usize) -> usize,
    max_texts: usize,
    max_tokens: usize,
) -> Vec<Vec<usize>> {
    let mut groups = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut tokens = 0;
    for &i in order {
        let n = len(i);
        if !current.is_empty() && (current.len() == max_texts || tokens + n > max_tokens) {
            groups.push(std::mem::take(&mut current));
            tokens = 0;
        }
        current.push(i);
        tokens += n;
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

fn with_prefix<'a>(prefix: &str, text: &'a str) -> Cow<'a, str> {
    if prefix.is_empty() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{prefix}{text}"))
    }
}

/// The folder name, or the repository name for a Hugging Face cache snapshot
/// (`models--org--name/snapshots/<commit>`), so both spell all-MiniLM-L6-v2 the same.
fn model_name(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name_of = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let parent = dir.parent();
    if name_of(parent) == "snapshots" {
        let repo = name_of(parent.and_then(Path::parent));
        if let Some(rest) = repo.strip_prefix("models--") {
            return rest.rsplit("--").next().unwrap_or(rest).to_string();
        }
    }
    name_of(Some(&dir))
}
