//! From a file's bytes to its chunks: Markdown and plain text go to the chunker as they are;
//! every other known format (HTML, PDF, DOCX, reStructuredText, also in a `.txt` whose text is
//! it, AsciiDoc, Jupyter notebooks, source code, config) is converted to Markdown by
//! `rag-formats` first, and its chunks' provenance is mapped back to the file (byte ranges
//! where the converter knows them, page numbers for PDF).

use rag_chunker::{Chunker, Document};
use rag_formats::{Converted, Format};
use serde_json::Value;

use crate::text_encoding::FileText;

/// Chunks one file of the folder (`rel`: its `/`-separated path). The error is a reason for
/// the user, the file being named by the caller.
pub fn chunk_file(chunker: &Chunker, rel: &str, bytes: &[u8]) -> Result<Document, String> {
    // Names the file to the policy for a conversion that runs away with memory, and (where
    // the host installed the counting allocator) bounds that memory.
    let _converting = crate::sync::set_aside::ConvertingGuard::enter(rel);
    let memory = crate::conversion_memory::ConversionMemory::watch(bytes.len());
    let document = match Format::from_path_and_bytes(rel, bytes) {
        Some(format) => chunk_converted(chunker, rel, format, bytes),
        None => chunk_text(chunker, rel, bytes),
    };
    log::debug!(
        "converted {rel} ({} bytes): held at most {} bytes",
        bytes.len(),
        memory.peak()
    );
    match memory.refusal() {
        Some(reason) => Err(reason),
        None => document,
    }
}

fn chunk_text(chunker: &Chunker, rel: &str, bytes: &[u8]) -> Result<Document, String> {
    let file_text = FileText::decode(bytes)?;
    let mut doc = chunker
        .chunk(rel, file_text.text())
        .map_err(|e| e.to_string())?;
    // Provenance points into the file, as for every other format.
    let ranges: Vec<_> = doc.chunks.iter().map(|c| c.byte_range.clone()).collect();
    match file_text.file_ranges(bytes, &ranges) {
        Some(in_file) => {
            for (chunk, range) in doc.chunks.iter_mut().zip(in_file) {
                chunk.byte_range = range;
            }
        }
        None => doc
            .warnings
            .push("decoded from UTF-16; source offsets are approximate".to_string()),
    }
    Ok(doc)
}

fn chunk_converted(
    chunker: &Chunker,
    rel: &str,
    format: Format,
    bytes: &[u8],
) -> Result<Document, String> {
    let converted = rag_formats::convert(format, bytes).map_err(|e| e.to_string())?;
    // Code and config have no title of their own: the path is what a reader recognises, and
    // it leads every breadcrumb (`src/walk.rs > impl WalkBuilder > fn build`).
    let title = match format {
        Format::Code(_) | Format::Config(_) => Some(rel.to_string()),
        _ => converted.title.clone(),
    };
    // A rendered page's tables read as the page shows them; code and config stay as converted,
    // and so do notebooks, whose Markdown cells are kept as written like a Markdown file.
    let mut doc = match format {
        Format::Html | Format::Docx | Format::Pdf | Format::Rst | Format::Asciidoc => {
            chunker.chunk_rendered(rel, &converted.markdown, title.as_deref())
        }
        _ => chunker.chunk_titled(rel, &converted.markdown, title.as_deref()),
    }
    .map_err(|e| e.to_string())?;
    for chunk in &mut doc.chunks {
        apply_provenance(&converted, chunk);
        for (key, value) in &converted.metadata {
            chunk
                .metadata
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
        chunk
            .metadata
            .entry("format".to_string())
            .or_insert_with(|| Value::from(format.name()));
    }
    let mut warnings = converted.warnings;
    warnings.append(&mut doc.warnings);
    doc.warnings = warnings;
    Ok(doc)
}

/// Byte ranges into the converted Markdown become ranges into the file where the converter
/// knows them (else they stay Markdown offsets, marked so); PDF chunks get their pages.
fn apply_provenance(converted: &Converted, chunk: &mut rag_chunker::Chunk) {
    let p = converted.provenance(chunk.byte_range.clone());
    match p.source {
        Some(source) => chunk.byte_range = source,
        None => {
            chunk
                .metadata
                .insert("byte_range_of".into(), Value::from("converted_markdown"));
        }
    }
    if let (Some(start), Some(end)) = (p.page_start, p.page_end) {
        chunk
            .metadata
            .insert("page_start".into(), Value::from(start));
        chunk.metadata.insert("page_end".into(), Value::from(end));
    }
}
