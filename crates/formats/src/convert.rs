//! The types every format converter returns: Markdown, where its pieces come from, errors.

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

/// A piece of [`Converted::markdown`] and where it came from.
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
    /// Smallest source range covering the sources of every overlapping span that has one.
    pub source: Option<Range<usize>>,
    /// Lowest page among the overlapping spans.
    pub page_start: Option<u32>,
    /// Highest page among the overlapping spans.
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
        /// Format name, as [`crate::Format::name`].
        format: &'static str,
        /// What is wrong, one short sentence.
        reason: String,
    },
    /// A PDF without a text layer (scanned): "no text layer".
    #[error("no text layer (scanned PDF?): nothing to index")]
    NoTextLayer,
    /// Input over a safety bound (decompressed size, nesting depth, page count, node count...).
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// What was measured, e.g. "source file size in bytes".
        what: &'static str,
        /// The bound it passed.
        limit: u64,
    },
    /// A parser dependency panicked; caught at this crate's boundary.
    #[error("the {format} parser failed: {message}")]
    ParserPanic {
        /// Format name, as [`crate::Format::name`].
        format: &'static str,
        /// The panic payload, when it is a string.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(md: Range<usize>, src: Option<Range<usize>>, page: Option<u32>) -> SourceSpan {
        SourceSpan {
            markdown: md,
            source: src,
            page,
        }
    }

    fn doc() -> Converted {
        Converted {
            markdown: "x".repeat(100),
            spans: vec![
                span(0..10, Some(100..110), Some(3)),
                span(10..20, None, Some(4)),
                span(30..40, Some(50..60), Some(2)),
                span(40..50, Some(200..210), Some(7)),
            ],
            ..Converted::default()
        }
    }

    #[test]
    fn one_span_maps_to_its_source() {
        let p = doc().provenance(2..8);
        assert_eq!(p.source, Some(100..110));
        assert_eq!((p.page_start, p.page_end), (Some(3), Some(3)));
    }

    #[test]
    fn union_over_overlapping_spans_skips_missing_sources() {
        let p = doc().provenance(5..35);
        assert_eq!(p.source, Some(50..110));
        assert_eq!((p.page_start, p.page_end), (Some(2), Some(4)));
        let p = doc().provenance(0..100);
        assert_eq!(p.source, Some(50..210));
        assert_eq!((p.page_start, p.page_end), (Some(2), Some(7)));
    }

    #[test]
    fn boundaries_are_half_open() {
        // 10..30 touches span 0 only at its end and span 2 only at its start.
        let p = doc().provenance(10..30);
        assert_eq!(p.source, None);
        assert_eq!((p.page_start, p.page_end), (Some(4), Some(4)));
        assert_eq!(doc().provenance(20..30), Provenance::default());
    }

    #[test]
    fn empty_range_takes_the_span_around_it() {
        assert_eq!(doc().provenance(35..35).source, Some(50..60));
        assert_eq!(doc().provenance(40..40).source, Some(200..210));
        assert_eq!(doc().provenance(25..25), Provenance::default());
        assert_eq!(doc().provenance(500..600), Provenance::default());
    }

    #[test]
    fn no_spans_no_provenance() {
        assert_eq!(
            Converted::default().provenance(0..10),
            Provenance::default()
        );
    }
}
