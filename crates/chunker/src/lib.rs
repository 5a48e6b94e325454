//! Structure-aware, token-budgeted chunking of Markdown and plain-text documents for retrieval.
//!
//! A document is parsed into blocks (pulldown-cmark with GFM tables for Markdown; blank-line
//! paragraphs and numbered headings for `.txt`). Consecutive small blocks of one section are
//! merged up to [`ChunkerConfig::target_tokens`]; a chunk never crosses a heading and a heading is
//! never a chunk alone. Tables, code blocks and lists that fit are kept whole; oversized ones are
//! split between rows, lines or items with the table header, the code fence or the list intro
//! repeated on every piece. Every chunk's embedded text starts with a breadcrumb
//! (`Title > Section > Subsection`) and, counted with the model's own tokenizer including its
//! special tokens, never exceeds [`ChunkerConfig::max_tokens`].
//!
//! With [`ChunkerConfig::table_records`] (the default), a table whose rows are keyed records (at
//! least four rows; one column, the first or the one front matter names with `table_key:`, holds
//! distinct names of at most 64 characters and six words) also yields one chunk per row after
//! the document's own chunks: the breadcrumb, the paragraph before the table when short, then the
//! table's header row, its delimiter and that one row, as written in the source. Such a record
//! carries `record: "table_row"`, `row_key`, `key_column`, the key under the column's name as a
//! filter key (`sku: "A123"`), and `table_group`, which the table's own chunks carry too. Tables
//! with duplicate keys or ragged rows get no records and a warning.
//!
//! Token counts are exact without re-tokenizing merges: for tokenizers whose pre-tokenizer splits
//! on whitespace (BERT word-piece), each distinct word is counted once and ranges are summed.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use rag_chunker::{Chunker, ChunkerConfig, TokenCounter};
//!
//! /// One token per whitespace-separated word, plus two special tokens.
//! struct Words;
//! impl TokenCounter for Words {
//!     fn count(&self, text: &str) -> usize {
//!         text.split_whitespace().count() + 2
//!     }
//! }
//!
//! let chunker = Chunker::new(Arc::new(Words), ChunkerConfig::default()).unwrap();
//! let doc = chunker
//!     .chunk("guide/setup.md", "---\ntitle: Setup\n---\n# Install\n\nRun `make`.\n")
//!     .unwrap();
//! assert_eq!(doc.title, "Setup");
//! assert_eq!(doc.chunks.len(), 1);
//! assert_eq!(doc.chunks[0].text, "Setup > Install\n\n# Install\n\nRun `make`.");
//! assert_eq!(doc.chunks[0].heading_path, ["Setup", "Install"]);
//! ```
//!
//! # Crate features
//!
//! None: the crate depends on no tokenizer; callers pass a [`TokenCounter`].

mod blob;
mod blocks;
mod count;
mod frontmatter;
mod label;
mod markdown;
mod mdx;
mod pack;
mod piece;
mod plaintext;
mod records;
mod split;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::count::{Counting, Tokens};

/// How the GFM tables of a document read in its chunks: as written (Markdown files), or as the
/// page they were converted from shows them ([`Chunker::chunk_rendered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableText {
    Source,
    Rendered,
}

/// Bumped whenever the chunker's output for the same input and config may change.
pub const FORMAT_VERSION: u32 = 18;

/// Counts tokens as the embedding model sees them, INCLUDING the model's special tokens
/// ([CLS]/[SEP]).
///
/// The chunker probes whether counts add up over whitespace-separated words (true for BERT
/// word-piece tokenizers with truncation and padding disabled). If they do, each distinct word is
/// counted once; otherwise every candidate range is counted whole, which is exact but slower.
pub trait TokenCounter: Send + Sync {
    /// Number of tokens of `text`, special tokens included (so `count("")` is their number).
    fn count(&self, text: &str) -> usize;
}

/// Sizes for [`Chunker`], in tokens of the embedding model, special tokens and breadcrumb included.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkerConfig {
    /// Hard cap: no chunk's text exceeds it (the model's max sequence length).
    pub max_tokens: usize,
    /// Small blocks of one section are merged until the next would pass this.
    pub target_tokens: usize,
    /// Most tokens of overlap between pieces of an oversized paragraph (sentence-aligned).
    /// When a section continues in a new chunk, that chunk also starts with the previous
    /// chunk's last paragraph, or its last sentences, within half of `max_tokens`. 0 turns
    /// both off.
    pub overlap_tokens: usize,
    /// Also emit one chunk per row of keyed tables (see the crate docs), after the document's
    /// own chunks. On by default: a row question then finds its row alone under its header
    /// instead of a chunk where every near-identical row competes, and `row_key` filters find
    /// it. A record is the source's own header and row lines, not a `Column: value` rewrite: on
    /// the Traefik dev set the rewritten records ranked first for 6 of 6 table questions but
    /// could never hold the table's text as written (table R@5 1.000 -> 0.833, overall MRR@10
    /// 0.825 -> 0.751), while verbatim records keep R@5 at 0.900 and raise R@10 to 0.975.
    /// (A stored configuration without the field predates records: `false`.)
    #[serde(default)]
    pub table_records: bool,
}

/// The default target equals the cap: on the Traefik dev set, merging up to 256 tokens gave the
/// best recall (R@10 0.875, MRR@10 0.725 against 0.850 / 0.645 at 200, 0.800 / 0.587 at 160 and
/// 0.725 / 0.486 at 128) for 12% more tokens per returned chunk than 200 (`rag-index eval`).
impl Default for ChunkerConfig {
    fn default() -> Self {
        ChunkerConfig {
            max_tokens: 256,
            target_tokens: 256,
            overlap_tokens: 32,
            table_records: true,
        }
    }
}

impl ChunkerConfig {
    /// Checks the sizes against each other; [`Chunker::new`] also checks them against the
    /// tokenizer's special tokens.
    pub fn validate(&self) -> Result<(), ChunkError> {
        let err = |m: String| Err(ChunkError::InvalidConfig(m));
        if self.target_tokens == 0 || self.target_tokens > self.max_tokens {
            return err(format!(
                "target_tokens {} must be in 1..={}",
                self.target_tokens, self.max_tokens
            ));
        }
        if self.overlap_tokens * 2 > self.target_tokens {
            return err(format!(
                "overlap_tokens {} must be at most half of target_tokens {}",
                self.overlap_tokens, self.target_tokens
            ));
        }
        Ok(())
    }

    /// What a [`Chunker`] with this configuration would report as its
    /// [`fingerprint`](Chunker::fingerprint), without building one (which loads the tokenizer).
    pub fn fingerprint(&self) -> String {
        format!(
            "rag-chunker/{}/format-{}/max-{}/target-{}/overlap-{}{}",
            env!("CARGO_PKG_VERSION"),
            FORMAT_VERSION,
            self.max_tokens,
            self.target_tokens,
            self.overlap_tokens,
            // Records were `Column: value` rewrites under "/table-records"; the new name makes
            // indexes of those refuse a sync until `--reindex`.
            if self.table_records {
                "/table-records-verbatim"
            } else {
                ""
            }
        )
    }
}

/// The metadata key, and its value, that mark a chunk as a table row record (see the crate docs).
pub const RECORD_KEY: &str = "record";
/// See [`RECORD_KEY`].
pub const ROW_RECORD: &str = "table_row";

/// Errors of the chunker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// The configuration cannot produce valid chunks.
    #[error("invalid chunker config: {0}")]
    InvalidConfig(String),
    /// A chunk could not be brought under the cap (only with a counter whose counts do not add
    /// up over words, on pathological input).
    #[error("{path}: cannot fit a chunk into {max} tokens")]
    OverBudget {
        /// Document path.
        path: String,
        /// The configured cap.
        max: usize,
    },
}

/// A chunked document.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Document {
    /// Front matter `title`, else the first H1, else the file name.
    pub title: String,
    /// Parsed front matter (all fields).
    pub metadata: Map<String, Value>,
    /// Chunks in document order, then the row records of keyed tables.
    pub chunks: Vec<Chunk>,
    /// Non-fatal problems (e.g. malformed front matter kept as text).
    pub warnings: Vec<String>,
}

/// One embeddable piece of a document, with its provenance.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Chunk {
    /// 32 hex chars, from path, text and the number of earlier chunks of the file with the same
    /// text: independent of position, so edits elsewhere in the file do not change it.
    pub id: String,
    /// Document path relative to the indexed folder, '/'-separated.
    pub path: String,
    /// Document title.
    pub title: String,
    /// Document title, then the headings above this chunk.
    pub heading_path: Vec<String>,
    /// Position among the document's chunks (row records come after all others).
    pub ordinal: usize,
    /// Into the original source (front matter and BOM included). For a table row record, the
    /// row's line. Otherwise `source[byte_range]` is the body, verbatim except that table delimiter rows are embedded compacted (`|:---|---|`),
    /// split blocks repeat their table header, code fence or list intro, and blobs (data URIs,
    /// base64 blocks, minified lines) are embedded as a short placeholder.
    pub byte_range: Range<usize>,
    /// Exactly what gets embedded: breadcrumb, blank line, body.
    pub text: String,
    /// Tokens of `text` including special tokens; never above `max_tokens`.
    pub tokens: usize,
    /// blake3 hex of `text`.
    pub hash: String,
    /// Every front-matter field, plus `table_keys` (first cells of table rows) if any, and for
    /// keyed tables `table_group` and, on row records, `record`, `row_key` and `key_column` and
    /// the key under the key column's filter name.
    pub metadata: Map<String, Value>,
}

/// Splits documents into chunks. Cheap to share across threads (`Send + Sync`); it keeps a word
/// count cache shared by all calls.
pub struct Chunker {
    counting: Counting,
    config: ChunkerConfig,
}

impl std::fmt::Debug for Chunker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunker")
            .field("config", &self.config)
            .field("specials", &self.counting.specials)
            .field("additive", &self.counting.additive)
            .finish()
    }
}

impl Chunker {
    /// Validates `config` against the counter (its special tokens must leave room for text).
    pub fn new(
        counter: Arc<dyn TokenCounter>,
        config: ChunkerConfig,
    ) -> Result<Chunker, ChunkError> {
        let counting = Counting::new(counter);
        let c = &config;
        let err = |m: String| Err(ChunkError::InvalidConfig(m));
        if c.max_tokens < counting.specials + 16 {
            return err(format!(
                "max_tokens {} leaves fewer than 16 tokens after {} special tokens",
                c.max_tokens, counting.specials
            ));
        }
        c.validate()?;
        if !counting.additive {
            log::warn!(
                "token counts do not add up over words: counting every range whole (slower)"
            );
        }
        Ok(Chunker { counting, config })
    }

    /// The configuration in use.
    pub fn config(&self) -> &ChunkerConfig {
        &self.config
    }

    /// Changes whenever output for the same input could change: crate version, format version
    /// and config. Equal to [`ChunkerConfig::fingerprint`] of its configuration.
    pub fn fingerprint(&self) -> String {
        self.config.fingerprint()
    }

    /// Chunks one document. `path` is relative to the indexed folder with '/' separators; a
    /// `.txt` extension selects plain-text rules, anything else Markdown.
    pub fn chunk(&self, path: &str, source: &str) -> Result<Document, ChunkError> {
        self.chunk_titled(path, source, None)
    }

    /// Like [`chunk`](Self::chunk), with the document title given (e.g. a converted HTML page's
    /// `<title>`, or a source file's path) instead of taken from front matter, the first H1 or
    /// the file name.
    pub fn chunk_titled(
        &self,
        path: &str,
        source: &str,
        title: Option<&str>,
    ) -> Result<Document, ChunkError> {
        self.chunk_as(path, source, title, TableText::Source)
    }

    /// Like [`chunk_titled`](Self::chunk_titled), for Markdown converted from a rendered page
    /// (HTML, DOCX, PDF): its tables read as the page shows them, each row's cells joined by
    /// tabs, with no pipes and no delimiter row (the form a browser copies a table in). The
    /// reader of the page never saw the converter's pipes, so a quote of the page must be found
    /// in its chunks: "ERROR 40" is, "| ERROR | 40 |" is not. Tables are still split between
    /// rows with their header repeated, and keyed rows still get records.
    pub fn chunk_rendered(
        &self,
        path: &str,
        source: &str,
        title: Option<&str>,
    ) -> Result<Document, ChunkError> {
        self.chunk_as(path, source, title, TableText::Rendered)
    }

    fn chunk_as(
        &self,
        path: &str,
        source: &str,
        title: Option<&str>,
        tables: TableText,
    ) -> Result<Document, ChunkError> {
        let blobs = blob::find(source, body_start(path, source));
        let sanitized = blob::Sanitized::new(source, &blobs);
        let title = title.map(str::trim).filter(|t| !t.is_empty());
        // Warnings name lines of the original source, which blob placeholders may have shortened.
        let line_of = |at: usize| {
            let at = sanitized.to_source(at..at).start.min(source.len());
            1 + bytecount_newlines(&source[..at])
        };
        let mut doc = self.chunk_sanitized(path, &sanitized.text, title, tables, &line_of)?;
        for chunk in &mut doc.chunks {
            chunk.byte_range = sanitized.to_source(chunk.byte_range.clone());
        }
        let mut line = 1;
        let mut counted = 0;
        for b in &blobs {
            line += bytecount_newlines(&source[counted..b.range.start]);
            counted = b.range.start;
            doc.warnings.push(format!(
                "line {line}: a {} of {} bytes is left out of the embedded text",
                b.what,
                b.range.len()
            ));
        }
        Ok(doc)
    }

    fn chunk_sanitized(
        &self,
        path: &str,
        source: &str,
        title: Option<&str>,
        tables: TableText,
        line_of: &dyn Fn(usize) -> usize,
    ) -> Result<Document, ChunkError> {
        let mut slack = 0;
        loop {
            let doc = self.chunk_with_slack(path, source, slack, title, tables, line_of);
            let over = doc.chunks.iter().any(|c| c.tokens > self.config.max_tokens);
            if !over {
                return Ok(doc);
            }
            // Only expected with a non-additive counter: hold back more and retry.
            if self.counting.additive {
                log::warn!("{path}: chunk over the cap with an additive counter; retrying");
            }
            let room = self.config.max_tokens - self.counting.specials;
            if slack >= room / 2 {
                return Err(ChunkError::OverBudget {
                    path: path.into(),
                    max: self.config.max_tokens,
                });
            }
            slack = (slack * 2).max(4);
        }
    }

    fn chunk_with_slack(
        &self,
        path: &str,
        source: &str,
        slack: usize,
        given_title: Option<&str>,
        tables: TableText,
        line_of: &dyn Fn(usize) -> usize,
    ) -> Document {
        let mut warnings = Vec::new();
        let bom = if source.starts_with('\u{FEFF}') {
            '\u{FEFF}'.len_utf8()
        } else {
            0
        };
        let is_txt = is_plain_text(path);
        let (body_start, metadata) = if is_txt {
            (bom, Map::new())
        } else {
            match frontmatter::parse(source, bom) {
                Ok(Some(fm)) => (fm.body_start, fm.metadata),
                Ok(None) => (bom, Map::new()),
                Err(frontmatter::Unusable::Malformed(msg)) => {
                    warnings.push(format!("{msg}; kept as text"));
                    (bom, Map::new())
                }
                Err(frontmatter::Unusable::Refused { reason, body_start }) => {
                    warnings.push(format!("{reason}; left out, the rest is indexed"));
                    (body_start, Map::new())
                }
            }
        };
        let body_start = mdx::text_start(path, source, body_start);
        let body = body_start..source.len();
        let (txt_title, mut blocks) = if is_txt {
            plaintext::parse(source, body.clone())
        } else {
            let html_is_text = tables == TableText::Rendered;
            (None, markdown::parse(source, body.clone(), html_is_text))
        };
        blocks::tile(source, &mut blocks, body.clone());
        if let Some(first) = blocks.first_mut() {
            first.range.start = blocks::trim_start(source, first.range.clone());
        }

        let title = given_title
            .map(String::from)
            .or_else(|| {
                metadata
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(String::from)
            })
            .or(txt_title)
            .or_else(|| {
                // A plain-text file's title heads it: a capitalised "ADA" deep in the file, or
                // its "1. Introduction", is a section.
                let numbered = |t: &str| is_txt && t.starts_with(|c: char| c.is_ascii_digit());
                let candidates = if is_txt {
                    &blocks[..blocks.len().min(1)]
                } else {
                    &blocks[..]
                };
                candidates.iter().find_map(|b| match &b.kind {
                    blocks::Kind::Heading { level: 1, text }
                        if !text.is_empty() && !numbered(text) =>
                    {
                        Some(text.clone())
                    }
                    _ => None,
                })
            })
            .unwrap_or_else(|| file_title(path));
        let title = label::bounded(&title);

        let mut rewrites = Vec::new();
        blocks::table_rewrites(source, &blocks, tables, &mut rewrites);
        let tokens = Tokens::new(&self.counting, source, body, rewrites);
        let cx = pack::PackContext {
            tokens: &tokens,
            source,
            max_tokens: self.config.max_tokens,
            target_tokens: self.config.target_tokens,
            overlap_tokens: self.config.overlap_tokens,
            tables,
            slack,
            title: title.clone(),
        };
        let emitted = cx.pack_document(&blocks);
        let found = if self.config.table_records {
            let key_column = metadata.get("table_key").and_then(Value::as_str);
            records::find(&cx, &blocks, key_column, line_of, &mut warnings)
        } else {
            records::Found::default()
        };

        let (base_meta, left_out) = frontmatter::chunk_metadata(&metadata);
        warnings.extend(left_out.into_iter().map(|(key, bytes)| {
            format!(
                "front matter `{key}` ({bytes} bytes) is over {} bytes; left out of the chunks' \
                 metadata (each chunk carries a copy)",
                frontmatter::MAX_CHUNK_VALUE_BYTES
            )
        }));
        let mut ids = Ids::new(path);
        let mut chunks = Vec::with_capacity(emitted.len() + found.records.len());
        let heading_path = |section: Vec<String>| {
            let mut out = Vec::with_capacity(section.len() + 1);
            out.push(title.clone());
            out.extend(section);
            out
        };
        for (ordinal, e) in emitted.into_iter().enumerate() {
            let p = e.piece;
            let mut text = String::with_capacity(
                e.breadcrumb.len() + 2 + p.prefix.len() + p.range.len() + p.suffix.len(),
            );
            if !e.breadcrumb.is_empty() {
                text.push_str(&e.breadcrumb);
                text.push_str("\n\n");
            }
            text.push_str(&p.prefix);
            text.push_str(&tokens.render(p.range.clone()));
            text.push_str(&p.suffix);
            let n_tokens = if self.counting.additive {
                self.counting.specials + e.breadcrumb_tokens + p.tokens
            } else {
                self.counting.counter.count(&text)
            };
            let (id, hash) = ids.next(&text);
            let mut meta = base_meta.clone();
            if !p.keys.is_empty() {
                meta.insert("table_keys".into(), Value::from(p.keys));
            }
            // The first keyed table the chunk holds: a chunk holding two is rare enough that
            // collapsing it with only one of them is acceptable.
            let r = &p.range;
            if let Some((_, group)) = found
                .groups
                .iter()
                .find(|(t, _)| t.start < r.end && r.start < t.end)
            {
                meta.insert("table_group".into(), Value::from(group.clone()));
            }
            chunks.push(Chunk {
                id,
                path: path.to_string(),
                title: title.clone(),
                heading_path: heading_path(e.path),
                ordinal,
                byte_range: p.range,
                text,
                tokens: n_tokens,
                hash,
                metadata: meta,
            });
        }
        // Records follow the document's own chunks, so neighbour and section expansion of those
        // never pulls in a second copy of a table, and their ordinals do not move.
        for record in found.records {
            let (id, hash) = ids.next(&record.text);
            let mut meta = base_meta.clone();
            if let Some((name, key)) = record.column_key
                && !meta.contains_key(&name)
            {
                meta.insert(name, key);
            }
            meta.extend(record.metadata);
            chunks.push(Chunk {
                id,
                path: path.to_string(),
                title: title.clone(),
                heading_path: heading_path(record.path),
                ordinal: chunks.len(),
                byte_range: record.range,
                text: record.text,
                tokens: record.tokens,
                hash,
                metadata: meta,
            });
        }
        Document {
            title,
            metadata,
            chunks,
            warnings,
        }
    }
}

/// Chunk IDs of one file: from path, text and the number of earlier chunks of the file with the
/// same text, so they do not depend on position.
struct Ids<'p> {
    path: &'p str,
    seen: HashMap<blake3::Hash, usize>,
}

impl<'p> Ids<'p> {
    fn new(path: &'p str) -> Self {
        Ids {
            path,
            seen: HashMap::new(),
        }
    }

    /// The ID and the blake3 hex of the next chunk, of text `text`.
    fn next(&mut self, text: &str) -> (String, String) {
        let hash = blake3::hash(text.as_bytes());
        let dup = self.seen.entry(hash).or_insert(0);
        let mut h = blake3::Hasher::new();
        h.update(self.path.as_bytes());
        h.update(b"\0");
        h.update(text.as_bytes());
        h.update(b"\0");
        h.update(dup.to_string().as_bytes());
        *dup += 1;
        (
            h.finalize().to_hex()[..32].to_string(),
            hash.to_hex().to_string(),
        )
    }
}

/// Whether `path` gets plain-text rules (no front matter, numbered headings).
fn is_plain_text(path: &str) -> bool {
    has_extension(path, "txt")
}

/// Whether the file name of `path` is a stem, a dot and `ext` (in any case).
pub(crate) fn has_extension(path: &str, ext: &str) -> bool {
    path.rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .is_some_and(|(stem, e)| !stem.is_empty() && e.eq_ignore_ascii_case(ext))
}

/// Where the body starts: after a BOM, any well-formed front matter and, on an MDX page, the
/// import lines that open it (blobs are looked for only in the body; front matter is bounded
/// separately).
fn body_start(path: &str, source: &str) -> usize {
    let bom = if source.starts_with('\u{FEFF}') {
        '\u{FEFF}'.len_utf8()
    } else {
        0
    };
    if is_plain_text(path) {
        return bom;
    }
    let start = match frontmatter::parse(source, bom) {
        Ok(Some(fm)) => fm.body_start,
        Err(frontmatter::Unusable::Refused { body_start, .. }) => body_start,
        _ => bom,
    };
    mdx::text_start(path, source, start)
}

fn bytecount_newlines(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

/// File name without extension, the title of last resort.
fn file_title(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let stem = if stem.trim().is_empty() { name } else { stem };
    if stem.trim().is_empty() {
        "Untitled".into()
    } else {
        stem.trim().to_string()
    }
}
