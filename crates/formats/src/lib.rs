//! Converts HTML, DOCX, PDF, reStructuredText, AsciiDoc, Jupyter notebooks, source code and
//! config/data files to Markdown for rag-index.
//!
//! Each format has its own converter; all of them return a [`Converted`]: Markdown in the shape the
//! structure-aware Markdown chunker expects (headings, paragraphs, GFM tables, fenced code, lists),
//! the document title, metadata, and [`SourceSpan`]s that map Markdown byte ranges back to file
//! bytes or PDF pages ([`Converted::provenance`]). Every parser is bounded (input size, decompressed
//! size, nesting depth, YAML node count, PDF pages, HTML tree-building steps, source parse time
//! and memory) and dependency panics are caught, so hostile input gives a typed [`FormatError`],
//! never a crash. tree-sitter's memory is counted by its allocator, because its last step (which
//! can take memory quadratic in some malformed TypeScript) runs where no callback can stop it:
//! past the bound the host's hook is called ([`on_runaway_parse`]), and if it returns, the parse
//! goes on and is refused.
//!
//! # Example
//!
//! ```
//! use rag_formats::{convert, Format};
//!
//! let html = b"<html><head><title>Guide</title></head><body><main>\
//!     <h1>Install</h1><p>Run <code>make</code> first.</p></main></body></html>";
//! let format = Format::from_path("docs/guide.html").unwrap();
//! let doc = convert(format, html).unwrap();
//! assert_eq!(doc.title.as_deref(), Some("Guide"));
//! assert_eq!(doc.markdown, "# Install\n\nRun make first.\n");
//! // Where "make" came from in the file:
//! let p = doc.provenance(15..19);
//! assert!(p.source.is_some());
//! ```
//!
//! # Crate features
//!
//! None: every format is always built.

mod adoc;
mod adoc_bounds;
mod builder;
mod charset;
mod code;
mod config;
mod config_yaml;
mod convert;
mod docx;
mod docx_body;
mod format;
mod html;
mod html_locate;
mod html_parse;
mod md_out;
mod notebook;
mod notebook_output;
mod pdf;
mod rst;
mod rst_directive;
mod rst_inline;
mod rst_lines;
mod rst_lists;
mod rst_table;

pub use charset::{DecodedPage, decode_marked, looks_like_utf16, utf32_marked};
pub use code::parse_memory::{RunawayParse, RunawayParseHook, on_runaway_parse};
pub use convert::{Converted, FormatError, Provenance, SourceSpan};

/// Bumped whenever a converter's output for the same input may change, so indexes built from
/// converted files know to rebuild.
pub const FORMAT_VERSION: u32 = 6;
pub use format::{ConfigKind, Format, Language};

/// Converts `bytes` of `format` to Markdown. Never panics (dependency panics are caught with
/// `std::panic::catch_unwind` and returned as `FormatError::ParserPanic`).
pub fn convert(format: Format, bytes: &[u8]) -> Result<Converted, FormatError> {
    let run = || match format {
        Format::Html => html::convert(bytes),
        Format::Pdf => pdf::convert(bytes),
        Format::Docx => docx::convert(bytes),
        Format::Rst => rst::convert(bytes),
        Format::Asciidoc => adoc::convert(bytes),
        Format::Notebook => notebook::convert(bytes),
        Format::Code(lang) => code::convert(lang, bytes),
        Format::Config(kind) => config::convert(kind, bytes),
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic without a message".into());
        Err(FormatError::ParserPanic {
            format: format.name(),
            message,
        })
    })
}
