//! A chunk's whole section and the index's last commit: the lookups a server hands to callers
//! that already hold a chunk ID.

use serde::Serialize;

use crate::access::{Access, required_labels};
use crate::backend::Backend;
use crate::chunk::IndexedChunk;
use crate::postgres::PgChunks;
use crate::source::{ChunkSource, SnapshotChunks};
use crate::{RagIndex, Result};

/// The chunks under one heading (deeper headings included) around a chunk, in document order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// Source path of the document.
    pub path: String,
    /// The headings that bound the section (those of the chunk asked for).
    pub heading_path: Vec<String>,
    /// The chunk the section was asked for.
    pub chunk_id: String,
    /// The section's chunks the caller may see, in document order.
    pub chunks: Vec<IndexedChunk>,
    /// Model tokens of `chunks`.
    pub tokens: u32,
    /// Whether chunks of the section were left out to stay within the token cap.
    pub truncated: bool,
}

/// The generation an index serves and when it was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// Commit generation (0: nothing committed yet).
    pub generation: u64,
    /// Milliseconds since the Unix epoch; `None` before the first commit or for generations
    /// written by a version that did not record it.
    pub committed_at: Option<u64>,
}

impl RagIndex {
    /// The section of the chunk `chunk_id` (the run of chunks around it whose headings start
    /// with its headings), among the chunks `access` may see, at most `max_tokens` model tokens
    /// grown around the chunk (the chunk itself is always included). `None` when the chunk is
    /// not live or `access` may not see it.
    pub fn section(
        &self,
        chunk_id: &str,
        access: &Access,
        max_tokens: usize,
    ) -> Result<Option<Section>> {
        match &self.backend {
            Backend::Embedded(store) => {
                // One snapshot for the chunk and its file, so the section is never a mix.
                let snapshot = store.read()?;
                section_in(&mut SnapshotChunks(&snapshot), chunk_id, access, max_tokens)
            }
            Backend::Postgres(store) => {
                let named = crate::postgres::spans_several(store);
                store.read(|view| {
                    section_in(&mut PgChunks { view, named }, chunk_id, access, max_tokens)
                })
            }
        }
    }

    /// The generation searches see now and when it was committed (one small read).
    pub fn last_commit(&self) -> Result<CommitInfo> {
        let meta = match &self.backend {
            Backend::Embedded(store) => store.read()?.meta()?,
            Backend::Postgres(store) => crate::postgres::meta_from(store.meta()?, &self.dir)?,
        };
        Ok(CommitInfo {
            generation: meta.as_ref().map_or(0, |m| m.generation),
            committed_at: meta.and_then(|m| m.committed_at),
        })
    }
}

/// The section around `chunk_id` among the chunks of `source` that `access` may see.
fn section_in(
    source: &mut dyn ChunkSource,
    chunk_id: &str,
    access: &Access,
    max_tokens: usize,
) -> Result<Option<Section>> {
    let Some(hit) = source.chunk(chunk_id)? else {
        return Ok(None);
    };
    if !access.may_see(&required_labels(&hit.metadata)) {
        return Ok(None);
    }
    let mut chunks = source.file_chunks(&hit)?;
    chunks.retain(|chunk| access.may_see(&required_labels(&chunk.metadata)));
    let Some(at) = chunks.iter().position(|c| c.chunk_id == hit.chunk_id) else {
        return Ok(Some(section_of(hit.clone(), vec![hit], false)));
    };
    let inside = |c: &IndexedChunk| c.heading_path.starts_with(&hit.heading_path);
    let (mut lo, mut hi) = (at, at);
    let mut spent = chunks[at].tokens as usize;
    let mut truncated = false;
    // Grow one chunk at a time on alternating sides, so a cap keeps the text nearest the
    // chunk on both sides.
    let (mut grow_lo, mut grow_hi) = (true, true);
    while grow_lo || grow_hi {
        if grow_lo {
            match lo.checked_sub(1).filter(|&j| inside(&chunks[j])) {
                Some(j) if spent + chunks[j].tokens as usize <= max_tokens => {
                    spent += chunks[j].tokens as usize;
                    lo = j;
                }
                Some(_) => (truncated, grow_lo) = (true, false),
                None => grow_lo = false,
            }
        }
        if grow_hi {
            match Some(hi + 1).filter(|&j| j < chunks.len() && inside(&chunks[j])) {
                Some(j) if spent + chunks[j].tokens as usize <= max_tokens => {
                    spent += chunks[j].tokens as usize;
                    hi = j;
                }
                Some(_) => (truncated, grow_hi) = (true, false),
                None => grow_hi = false,
            }
        }
    }
    let parts = chunks.drain(lo..=hi).collect();
    Ok(Some(section_of(hit, parts, truncated)))
}

fn section_of(hit: IndexedChunk, chunks: Vec<IndexedChunk>, truncated: bool) -> Section {
    Section {
        tokens: chunks.iter().map(|c| c.tokens).sum(),
        path: hit.path,
        heading_path: hit.heading_path,
        chunk_id: hit.chunk_id,
        chunks,
        truncated,
    }
}
