//! The types every format module returns: the converted Markdown with its provenance, and errors.

use std::ops::Range;

use serde_json::{Map, Value};

/// A document converted to Markdown, the interchange the structure-aware Markdown chunker of
/// rag-index consumes: headings as `#`..`######` lines, paragraphs separated by blank lines,
/// GFM pipe tables (header row + `|---|` delimiter row), fenced code blocks (a fence longer than
/// any backtick run inside), `-`/`1.` lists. Definition lists may be rendered as a paragraph per
/// term: `**term**` line followed by its description (or as a 2-column table), your choice.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Converted {
    /// The document as Markdown.
    pub markdown: String,
    /// Document title (HTML <title>, DOCX core properties title, PDF Info/Title, code: None).
    pub title: Option<String>,
    /// Extra metadata copied onto every chunk (e.g. "format": "pdf", "language": "rust").
    pub metadata: Map<String, Value>,
    /// Where pieces of `markdown` come from, sorted by `markdown.start`, non-overlapping.
    /// Not every byte of `markdown` must be covered (synthesised markup need not be).
    pub spans: Vec<SourceSpan>,
    /// Non-fatal problems, each a short sentence (the caller prefixes the file name).
    pub warnings: Vec<String>,
}

/// One piece of the Markdown and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpan {
    /// Byte range in `Converted::markdown`.
    pub markdown: Range<usize>,
    /// Byte range in the original file bytes, when known (HTML, code, config: yes; PDF: the
    /// content stream offsets are meaningless, use None; DOCX: None is fine).
    pub source: Option<Range<usize>>,
    /// 1-based page number (PDF only).
    pub page: Option<u32>,
}

/// Where a byte range of the Markdown came from: the union of the overlapping spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Smallest source range covering every overlapping span's source range.
    pub source: Option<Range<usize>>,
    /// First page of the overlapping spans.
    pub page_start: Option<u32>,
    /// Last page of the overlapping spans.
    pub page_end: Option<u32>,
}

impl Converted {
    /// Provenance of `markdown[range]` (binary search over `spans`; O(log n + overlapping spans)).
    ///
    /// A span overlaps when it shares at least one byte with `range`; an empty `range` takes the
    /// span containing its position, if any.
    pub fn provenance(&self, range: Range<usize>) -> Provenance {
        // Spans are sorted and disjoint, so their ends are sorted too.
        let first = self
            .spans
            .partition_point(|s| s.markdown.end <= range.start);
        let mut out = Provenance::default();
        for span in &self.spans[first..] {
            let overlaps = if range.is_empty() {
                span.markdown.start <= range.start && range.start < span.markdown.end
            } else {
                span.markdown.start < range.end
            };
            if !overlaps {
                break;
            }
            if let Some(src) = &span.source {
                out.source = Some(match out.source.take() {
                    Some(u) => u.start.min(src.start)..u.end.max(src.end),
                    None => src.clone(),
                });
            }
            if let Some(p) = span.page {
                out.page_start = Some(out.page_start.map_or(p, |q| q.min(p)));
                out.page_end = Some(out.page_end.map_or(p, |q| q.max(p)));
            }
        }
        out
    }
}

/// Why a file could not be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes are not a valid file of the format (truncated PDF, a zip that is not a DOCX, ...).
    #[error("not a valid {format} file: {reason}")]
    Invalid {
        /// Short format name, as [`crate::Format::name`].
        format: &'static str,
        /// What is wrong, with the parser's position when it gives one.
        reason: String,
    },
    /// A PDF without a text layer (scanned): "no text layer".
    #[error("no text layer (scanned PDF?): nothing to index")]
    NoTextLayer,
    /// Input over a safety bound (decompressed size, nesting depth, page count, node count...).
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// The bounded quantity.
        what: &'static str,
        /// The bound.
        limit: u64,
    },
    /// A parser dependency panicked; caught at this crate's boundary.
    #[error("the {format} parser failed: {message}")]
    ParserPanic {
        /// Short format name.
        format: &'static str,
        /// The panic payload, when it is a string.
        message: String,
    },
}

/// Largest input accepted by any format (DOCX parts have their own decompressed bound).
pub(crate) const MAX_INPUT: usize = 32 << 20;

/// Refuses inputs over [`MAX_INPUT`].
pub(crate) fn check_size(bytes: &[u8]) -> Result<(), FormatError> {
    if bytes.len() > MAX_INPUT {
        return Err(FormatError::TooLarge {
            what: "input size in bytes",
            limit: MAX_INPUT as u64,
        });
    }
    Ok(())
}

/// Decodes a text format: UTF-8 as is (BOM dropped), lossily when only a few bytes are invalid,
/// `Invalid` when the bytes are not text (NULs, or many invalid sequences) or are UTF-16
/// without a byte order mark.
pub(crate) fn decode_text<'a>(
    format: &'static str,
    bytes: &'a [u8],
) -> Result<std::borrow::Cow<'a, str>, FormatError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    crate::charset::refuse_nul_bytes(format, bytes)?;
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(std::borrow::Cow::Borrowed(s)),
        Err(_) => {
            let lossy = String::from_utf8_lossy(bytes);
            let bad = lossy.matches('\u{FFFD}').count();
            // A few stray bytes (a Latin-1 name in a UTF-8 page) are tolerated, binary is not.
            if bad > 64 || bad * 100 > bytes.len() {
                Err(FormatError::Invalid {
                    format,
                    reason: format!("{bad} invalid UTF-8 sequences: not text"),
                })
            } else {
                Ok(std::borrow::Cow::Owned(lossy.into_owned()))
            }
        }
    }
}
