//! `rag-index dump`, `stats` and `embed`: what is in the index, and raw embeddings.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use rag_index_core::IndexedChunk;

use super::bounded_lines;
use crate::output::{human_bytes, json_line, line};
use crate::setup::{load_embedder, open_for_reading};

/// Longest text `embed` takes per line (the model reads only its first 256 tokens anyway).
const MAX_EMBED_LINE: usize = 1 << 20;
const MAX_EMBED_LINES: usize = 1_000_000;

#[derive(serde::Serialize)]
struct DumpLine<'a> {
    #[serde(flatten)]
    chunk: &'a IndexedChunk,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<Vec<f32>>,
}

pub fn dump(model_dir: Option<&Path>, index: Option<PathBuf>, vectors: bool) -> Result<ExitCode> {
    let index = open_for_reading(model_dir, index)?;
    let mut out = std::io::stdout().lock();
    for chunk in index.dump()? {
        let vector = if vectors {
            Some(index.vector_of(&chunk.hash)?.unwrap_or_default())
        } else {
            None
        };
        let record = DumpLine {
            chunk: &chunk,
            vector,
        };
        json_line(&mut out, &record)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn stats(model_dir: Option<&Path>, index: Option<PathBuf>, json: bool) -> Result<ExitCode> {
    let index = open_for_reading(model_dir, index)?;
    let stats = index.stats()?;
    let mut out = std::io::stdout().lock();
    if json {
        let mut record = serde_json::to_value(&stats)?;
        // A `watch` running on this index: what it has seen and not yet committed.
        if let Some(watch) = rag_watch::published_status(index.dir()) {
            record["watch"] = serde_json::to_value(watch)?;
        }
        json_line(&mut out, &record)?;
        return Ok(ExitCode::SUCCESS);
    }
    line(
        &mut out,
        format_args!("index:       {}", index.dir().display()),
    )?;
    line(&mut out, format_args!("files:       {}", stats.files))?;
    line(
        &mut out,
        format_args!(
            "chunks:      {} (mean {:.1} tokens)",
            stats.chunks, stats.mean_chunk_tokens
        ),
    )?;
    line(
        &mut out,
        format_args!("vectors:     {} x {} dims", stats.vectors, stats.dimensions),
    )?;
    line(&mut out, format_args!("model:       {}", stats.model))?;
    line(&mut out, format_args!("generation:  {}", stats.generation))?;
    line(
        &mut out,
        format_args!(
            "disk:        {} total ({} store, {} graph, {} lexical)",
            human_bytes(stats.total_bytes),
            human_bytes(stats.db_bytes),
            human_bytes(stats.graph_bytes),
            human_bytes(stats.lexical_bytes)
        ),
    )?;
    if stats.chunks > 0 {
        let per_chunk = |bytes: u64| bytes / stats.chunks;
        line(
            &mut out,
            format_args!(
                "per chunk:   {} B (store {}, graph {}, lexical {})",
                per_chunk(stats.total_bytes),
                per_chunk(stats.db_bytes),
                per_chunk(stats.graph_bytes),
                per_chunk(stats.lexical_bytes)
            ),
        )?;
    }
    // Stored bytes against the pages holding them: a 4 KiB page keeps whole entries only.
    let tables: Vec<String> = stats
        .store_tables
        .iter()
        .filter(|t| t.entries > 0 && t.table != "meta")
        .map(|t| {
            format!(
                "{} {} in {} of pages",
                t.table,
                human_bytes(t.stored_bytes),
                human_bytes(t.page_bytes)
            )
        })
        .collect();
    if !tables.is_empty() {
        line(&mut out, format_args!("store:       {}", tables.join(", ")))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Texts on stdin, one per line (a line starting with `"` is a JSON string), one JSON array of
/// the normalised document embedding per line.
pub fn embed(model_dir: Option<&Path>) -> Result<ExitCode> {
    let embedder = load_embedder(model_dir)?;
    let lines = bounded_lines(
        std::io::stdin().lock(),
        "stdin",
        MAX_EMBED_LINE,
        MAX_EMBED_LINES,
    )?;
    let mut texts = Vec::with_capacity(lines.len());
    for (n, line) in lines.into_iter().enumerate() {
        if line.starts_with('"') {
            let text: String = serde_json::from_str(&line)
                .with_context(|| format!("line {}: not a valid JSON string", n + 1))?;
            texts.push(text);
        } else {
            texts.push(line);
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_documents(&refs)?;
    let mut out = std::io::stdout().lock();
    for vector in vectors {
        json_line(&mut out, &vector)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
