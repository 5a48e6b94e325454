//! The library's own chunk and hit types: what callers see, independent of how the store
//! encodes records.

use std::ops::Range;

use serde::Serialize;
use serde_json::{Map, Value};

/// An indexed chunk (or, from [`chunk_file`](crate::RagIndex::chunk_file), one a file would
/// produce), with its provenance. Serialises to the one chunk shape of the CLI's JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexedChunk {
    /// 32 hex chars, stable across edits elsewhere in the file.
    pub chunk_id: String,
    /// Source path relative to the indexed folder, `/`-separated.
    pub path: String,
    /// Document title.
    pub title: String,
    /// Title and headings above the chunk.
    pub heading_path: Vec<String>,
    /// Position in the file.
    pub ordinal: u32,
    /// Byte range of the body in the source file (serialised as `[start, end]`).
    #[serde(serialize_with = "range_as_pair")]
    pub byte_range: Range<u64>,
    /// Exactly what was embedded: breadcrumb, blank line, body.
    pub text: String,
    /// blake3 hex of `text`.
    pub hash: String,
    /// Model tokens of `text`, special tokens included.
    pub tokens: u32,
    /// Front-matter fields and tags, and `table_keys` for table chunks.
    pub metadata: Map<String, Value>,
    /// The PostgreSQL collection it came from, when a search spans several (a chunk ID and
    /// path are unique within one collection only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
}

impl IndexedChunk {
    /// The chunk ID, prefixed by the collection when there is one: unique across a search.
    pub(crate) fn scoped_id(&self) -> String {
        self.scoped(&self.chunk_id)
    }

    /// The path, prefixed by the collection when there is one.
    pub(crate) fn scoped_path(&self) -> String {
        self.scoped(&self.path)
    }

    fn scoped(&self, name: &str) -> String {
        match &self.collection {
            Some(collection) => format!("{collection}\u{0}{name}"),
            None => name.to_string(),
        }
    }

    /// The text without its breadcrumb line.
    pub fn body(&self) -> &str {
        match self.heading_path.is_empty() {
            true => &self.text,
            false => self.text.split_once("\n\n").map_or("", |(_, body)| body),
        }
    }

    pub(crate) fn from_record(chunk_id: String, r: rag_store::ChunkRecord) -> IndexedChunk {
        let metadata = match serde_json::from_str(&r.metadata_json) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        IndexedChunk {
            chunk_id,
            path: r.path,
            title: r.title,
            heading_path: r.heading_path,
            ordinal: r.ordinal,
            byte_range: r.byte_range.0..r.byte_range.1,
            text: r.text,
            hash: r.hash,
            tokens: r.tokens,
            metadata,
            collection: None,
        }
    }

    /// A chunk as the chunker produced it (not yet indexed).
    pub fn from_chunk(c: rag_chunker::Chunk) -> IndexedChunk {
        IndexedChunk {
            chunk_id: c.id,
            path: c.path,
            title: c.title,
            heading_path: c.heading_path,
            ordinal: c.ordinal as u32,
            byte_range: c.byte_range.start as u64..c.byte_range.end as u64,
            text: c.text,
            hash: c.hash,
            tokens: c.tokens as u32,
            metadata: c.metadata,
            collection: None,
        }
    }
}

fn range_as_pair<S: serde::Serializer>(r: &Range<u64>, s: S) -> Result<S::Ok, S::Error> {
    [r.start, r.end].serialize(s)
}

/// A search result: a chunk with its rank and score, and with expansion the passage around it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// 1-based rank.
    pub rank: usize,
    /// What the ranking sorts by: cosine similarity in dense mode, BM25 in lexical mode, the
    /// fused score in hybrid mode (see [`Fusion`](crate::Fusion)).
    pub score: f32,
    /// The chunk that matched (with expansion, the best-ranked hit of the passage).
    #[serde(flatten)]
    pub chunk: IndexedChunk,
    /// Where each signal placed this chunk, to explain the ranking. `None` from
    /// [`search_vector`](crate::RagIndex::search_vector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<Signals>,
    /// With expansion: every chunk handed back for this result, in document order, the hits
    /// among them marked. Empty without expansion (the result is `chunk` alone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passage: Vec<PassageChunk>,
    /// Model tokens this result hands back: its passage's chunks, or its chunk.
    pub result_tokens: u32,
}

impl Hit {
    pub(crate) fn new(score: f32, chunk: IndexedChunk, signals: Option<Signals>) -> Hit {
        Hit {
            rank: 0,
            score,
            result_tokens: chunk.tokens,
            chunk,
            signals,
            passage: Vec::new(),
        }
    }

    /// What this result hands back as text: the chunk's text, or the passage's chunks joined in
    /// document order (the breadcrumb once, at the top).
    pub fn text(&self) -> String {
        if self.passage.is_empty() {
            return self.chunk.text.clone();
        }
        let mut out = String::new();
        let mut last_crumb: Option<&[String]> = None;
        for part in &self.passage {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            if last_crumb != Some(part.chunk.heading_path.as_slice()) {
                let text = &part.chunk.text;
                out.push_str(&text[..text.len() - part.chunk.body().len()]);
            }
            out.push_str(part.new_body());
            last_crumb = Some(part.chunk.heading_path.as_slice());
        }
        out
    }

    /// IDs of every chunk this result hands back.
    pub fn chunk_ids(&self) -> Vec<&str> {
        match self.passage.is_empty() {
            true => vec![self.chunk.chunk_id.as_str()],
            false => self
                .passage
                .iter()
                .map(|p| p.chunk.chunk_id.as_str())
                .collect(),
        }
    }
}

/// One chunk of an expanded result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassageChunk {
    /// Whether the search found this chunk itself (not only its neighbour or section).
    pub is_hit: bool,
    /// Bytes at the start of the chunk's body (its text after the breadcrumb) that repeat the
    /// end of the part before it: a paragraph the chunker carried over a cut, or the lines two
    /// pieces of a split block share. [`Hit::text`] leaves them out; so should anyone joining
    /// the parts.
    #[serde(skip_serializing_if = "is_zero")]
    pub repeated: usize,
    /// The chunk.
    #[serde(flatten)]
    pub chunk: IndexedChunk,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PassageChunk {
    pub(crate) fn new(chunk: IndexedChunk, is_hit: bool) -> PassageChunk {
        PassageChunk {
            is_hit,
            repeated: 0,
            chunk,
        }
    }

    /// The body without the bytes that repeat the part before.
    pub fn new_body(&self) -> &str {
        let body = self.chunk.body();
        match self.repeated {
            0 => body,
            // The repeat ends where a paragraph or line ends: drop the break after it too.
            n => body
                .get(n..)
                .unwrap_or(body)
                .trim_start_matches(['\n', '\r']),
        }
    }
}

/// Marks, in each part of a passage (document order), the bytes that repeat the part before:
/// where two neighbouring chunks' source ranges overlap and the later body starts with text the
/// earlier one ends with. Source ranges alone are not enough: a chunk's text may be rewritten
/// (compacted table rows), so the repeat must also be found in the texts.
pub(crate) fn mark_repeats(parts: &mut [PassageChunk]) {
    for i in 1..parts.len() {
        let (before, after) = parts.split_at_mut(i);
        let (prev, part) = (&before[i - 1].chunk, &mut after[0]);
        part.repeated = 0;
        let overlap = prev
            .byte_range
            .end
            .saturating_sub(part.chunk.byte_range.start) as usize;
        if prev.path != part.chunk.path || overlap == 0 {
            continue;
        }
        let (earlier, body) = (prev.text.trim_end(), part.chunk.body());
        let repeats = |len: usize| {
            body.is_char_boundary(len)
                && !body[..len].trim().is_empty()
                && earlier.ends_with(body[..len].trim_end())
        };
        // Verbatim texts repeat exactly the overlap; otherwise the longest repeat ending at a
        // line break, no longer than the overlap.
        let candidates = std::iter::once(overlap.min(body.len())).chain(
            body[..overlap.min(body.len())]
                .match_indices('\n')
                .map(|(at, _)| at)
                .rev(),
        );
        if let Some(len) = candidates.filter(|&len| len > 0).find(|&len| repeats(len)) {
            part.repeated = len;
        }
    }
}

/// Each signal's view of one hit; a signal that did not list it among its candidates is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Signals {
    /// Embedding similarity: cosine score and rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<SignalRank>,
    /// BM25: score and rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical: Option<SignalRank>,
}

/// One signal's rank (1-based) and raw score for a hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SignalRank {
    /// 1-based rank in that signal's candidate list.
    pub rank: usize,
    /// That signal's own score (not comparable across signals).
    pub score: f32,
}
