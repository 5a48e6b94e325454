//! `rag-index chunks`: the chunks files would produce (any indexed format), without an index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use rag_index_core::{IndexConfig, IndexedChunk};

use crate::output::{json_line, line, note};
use crate::setup::load_embedder;
use crate::terminal_text::one_line;

pub fn run(
    model_dir: Option<&Path>,
    files: &[PathBuf],
    json: bool,
    config: IndexConfig,
) -> Result<ExitCode> {
    let embedder = load_embedder(model_dir)?;
    let chunker = rag_index_core::chunker_for(&embedder, config.chunker().clone())?;
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for file in files {
        let path = file.to_string_lossy().replace('\\', "/");
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) => {
                note(&format!("{path}: {e}"));
                failed = true;
                continue;
            }
        };
        let document = match rag_index_core::chunk_file(&chunker, &path, &bytes) {
            Ok(document) => document,
            Err(reason) => {
                note(&format!("{path}: {reason}"));
                failed = true;
                continue;
            }
        };
        for warning in &document.warnings {
            note(&format!("warning: {path}: {warning}"));
        }
        for chunk in document.chunks {
            let chunk = IndexedChunk::from_chunk(chunk);
            if json {
                json_line(&mut out, &chunk)?;
            } else {
                line(
                    &mut out,
                    format_args!(
                        "--- {} #{} {} tokens, bytes {}..{}",
                        one_line(&chunk.path),
                        chunk.ordinal,
                        chunk.tokens,
                        chunk.byte_range.start,
                        chunk.byte_range.end
                    ),
                )?;
                line(&mut out, format_args!("{}\n", chunk.text))?;
            }
        }
    }
    out.flush()?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
