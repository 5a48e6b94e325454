//! Converts documents that are not Markdown (HTML, PDF, DOCX, source code, config files) into
//! Markdown for the structure-aware chunker of rag-index, with [`SourceSpan`]s that map every
//! piece of the Markdown back to the bytes it came from ([`Converted::provenance`]).
//!
//! Each format lives in its own module behind one entry point, [`convert`], which never panics:
//! a panic inside a parser dependency is caught and returned as [`FormatError::ParserPanic`].
//! Every parser is bounded (input size, nesting depth, node counts), so hostile input fails with
//! [`FormatError::TooLarge`] instead of exhausting memory or time.
//!
//! Source code is parsed with tree-sitter and rendered as one heading per top-level item or type
//! (`# impl WalkBuilder`, `## fn build`), the item's code copied verbatim into a fenced block.
//!
//! # Example
//!
//! ```
//! use rag_formats::{convert, Format};
//!
//! let src = "/// Adds.\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
//! let format = Format::from_path("src/math.rs").unwrap();
//! let doc = convert(format, src.as_bytes()).unwrap();
//! assert!(doc.markdown.contains("```rust\n/// Adds.\nfn add(a: i32, b: i32) -> i32 {\n"));
//! // The fenced block maps back to the function's bytes, line by line.
//! assert_eq!(doc.provenance(0..doc.markdown.len()).source, Some(0..src.len()));
//! let body = doc.markdown.find("    a + b").unwrap();
//! assert_eq!(doc.provenance(body..body + 4).source, Some(42..52));
//! ```
//!
//! # Crate features
//!
//! None: every format is always built.

mod code;
mod config;
mod convert;
mod docx;
mod format;
mod html;
mod pdf;

use std::panic::{AssertUnwindSafe, catch_unwind};

pub use convert::{Converted, FormatError, Provenance, SourceSpan};
pub use format::{ConfigKind, Format, Language};

/// Converts `bytes` of `format` to Markdown. Never panics (dependency panics are caught with
/// `std::panic::catch_unwind` and returned as `FormatError::ParserPanic`).
pub fn convert(format: Format, bytes: &[u8]) -> Result<Converted, FormatError> {
    let run = || match format {
        Format::Html => html::convert(bytes),
        Format::Pdf => pdf::convert(bytes),
        Format::Docx => docx::convert(bytes),
        Format::Code(lang) => code::convert(lang, bytes),
        Format::Config(kind) => config::convert(kind, bytes),
    };
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic with a non-string payload".into());
        Err(FormatError::ParserPanic {
            format: format.name(),
            message,
        })
    })
}
