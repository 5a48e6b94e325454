//! Bounds on the work an AsciiDoc page can cost the parser, applied before it runs.
//!
//! Measured on `asciidoc-parser` 0.31 (release build):
//! - Nested blocks are read by recursion: every example, sidebar, quote or open block inside
//!   another, and every list level (`*`, `**`, ... or `.`, `..`, ... or `::`, `:::`, ...), is a
//!   level deeper on the stack. Thousands of levels fit in a few megabytes and would overflow
//!   the thread's stack, a crash no `catch_unwind` stops; real pages nest a handful. Past
//!   [`MAX_NESTING`] the page is refused.
//! - Inline markup costs time quadratic in a paragraph's length when delimiters stay unclosed
//!   (120 KB of `*a ` took 3.5 s, 300 KB 22 s). A run of text lines longer than
//!   [`MAX_PARAGRAPH`] is split into paragraphs of at most that size by inserting blank lines
//!   (between lines, or at a space in a longer line); [`Bounded::source_offset`] maps offsets
//!   back to the page. Real paragraphs are a few hundred bytes.
//! - A table costs time quadratic in its lines (5,000 one-row lines 0.12 s, 20,000 1.6 s, a
//!   600 KB table 40 s). A table longer than [`MAX_TABLE_LINES`] is closed and a new one
//!   opened there (the same delimiter lines inserted before a row), so every row is kept.
//! - A table cell costs ~0.6 KB of parser state (400,000 two-cell rows, 2.4 MB, took 459 MB),
//!   and an AsciiDoc cell (`a|`, or a column styled `a`) is a document of its own, ~4.5 KB
//!   (100,000 of them in 400 KB took 445 MB). Past [`MAX_TABLE_CELLS`] cells, or
//!   [`MAX_DOCUMENT_CELLS`] document cells, the page is refused.

use std::borrow::Cow;

use crate::convert::FormatError;

/// Nested delimited blocks, and list marker levels, a page may have. Asciidoctor's own list
/// markers go to five levels; docs nest blocks two or three deep.
pub(crate) const MAX_NESTING: usize = 32;
/// Longest run of text lines read as one paragraph (~5 ms of the worst inline markup).
pub(crate) const MAX_PARAGRAPH: usize = 4 << 10;
/// Lines of one table before it is continued as another (~20 ms of parsing at most).
pub(crate) const MAX_TABLE_LINES: usize = 2_000;
/// Table cells read as AsciiDoc documents, per page (~45 MB of parser state).
pub(crate) const MAX_DOCUMENT_CELLS: usize = 10_000;
/// Table cells per page (~60 MB of parser state): a 10-column table of 10,000 rows.
pub(crate) const MAX_TABLE_CELLS: usize = 100_000;

/// The text handed to the parser: the page, with blank lines inserted where paragraphs were
/// too long.
#[derive(Debug)]
pub(crate) struct Bounded<'s> {
    pub text: Cow<'s, str>,
    /// Offsets in `text` of the inserted bytes, ascending.
    inserted: Vec<usize>,
}

impl Bounded<'_> {
    /// The page offset of `offset` in [`text`](Self::text).
    pub(crate) fn source_offset(&self, offset: usize) -> usize {
        offset - self.inserted.partition_point(|&p| p < offset)
    }
}

/// Checks `src` against the bounds and splits its over-long paragraphs.
pub(crate) fn bound(src: &str) -> Result<Bounded<'_>, FormatError> {
    let too_large = |what: &'static str, limit: usize| FormatError::TooLarge {
        what,
        limit: limit as u64,
    };
    let mut open: Vec<&str> = Vec::new();
    // Inside a verbatim block (listing, literal, passthrough, comment) nothing nests and no
    // inline markup is read, until its closing line, the same delimiter.
    let mut verbatim: Option<&str> = None;
    let mut document_cells = 0;
    let mut cells = 0;
    let mut table_cells_are_documents = false;
    // The open table's delimiter line, and its lines so far.
    let mut table: Option<(&str, usize)> = None;
    let mut previous = "";
    let mut out = String::new();
    let mut inserted = Vec::new();
    let mut run = 0;
    for raw in src.split_inclusive('\n') {
        let line = raw.trim_end();
        if let Some(delimiter) = verbatim {
            if line == delimiter {
                verbatim = None;
            }
            out.push_str(raw);
            continue;
        }
        match &mut table {
            Some((delimiter, _)) if line == *delimiter => table = None,
            None if is_table_delimiter(line) => {
                table = Some((line, 0));
                table_cells_are_documents = document_columns(previous);
            }
            Some((delimiter, lines)) => {
                *lines += 1;
                if *lines > MAX_TABLE_LINES && line.starts_with(&delimiter[..1]) {
                    // Close the table and open another before this row.
                    for seam in [*delimiter, "", *delimiter] {
                        inserted.extend(out.len()..out.len() + seam.len() + 1);
                        out.push_str(seam);
                        out.push('\n');
                    }
                    *lines = 1;
                    run = 0;
                }
                document_cells += if table_cells_are_documents {
                    line.matches('|').count()
                } else {
                    document_cell_marks(line)
                };
                if document_cells > MAX_DOCUMENT_CELLS {
                    return Err(too_large(
                        "AsciiDoc table cells read as documents",
                        MAX_DOCUMENT_CELLS,
                    ));
                }
                cells += line.matches(&delimiter[..1]).count();
                if cells > MAX_TABLE_CELLS {
                    return Err(too_large("AsciiDoc table cells", MAX_TABLE_CELLS));
                }
            }
            None => {}
        }
        if line.is_empty() {
            run = 0;
            out.push_str(raw);
        } else {
            if run > 0 && run + raw.len() > MAX_PARAGRAPH {
                inserted.push(out.len());
                out.push('\n');
                run = 0;
            }
            run += split_long_line(raw, &mut out, &mut inserted);
        }
        match delimiter_kind(line) {
            Some(Kind::Verbatim) => verbatim = Some(line),
            Some(Kind::Compound) => {
                if open.last() == Some(&line) {
                    open.pop();
                } else {
                    open.push(line);
                    if open.len() > MAX_NESTING {
                        return Err(too_large("AsciiDoc nesting depth", MAX_NESTING));
                    }
                }
            }
            None => {
                if list_marker_levels(line) > MAX_NESTING {
                    return Err(too_large("AsciiDoc nesting depth", MAX_NESTING));
                }
            }
        }
        previous = line;
    }
    let text = if inserted.is_empty() {
        Cow::Borrowed(src)
    } else {
        Cow::Owned(out)
    };
    Ok(Bounded { text, inserted })
}

/// Writes `line` into `out`, in pieces of at most [`MAX_PARAGRAPH`] bytes when longer, each
/// cut at its last space when it has one, a blank line inserted after each but the last.
/// Returns the length of the last piece (the run it ends).
fn split_long_line(line: &str, out: &mut String, inserted: &mut Vec<usize>) -> usize {
    let mut rest = line;
    while rest.len() > MAX_PARAGRAPH {
        let mut cut = MAX_PARAGRAPH;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(space) = rest[..cut].rfind(' ').filter(|&s| s > 0) {
            cut = space + 1;
        }
        out.push_str(&rest[..cut]);
        for _ in 0..2 {
            inserted.push(out.len());
            out.push('\n');
        }
        rest = &rest[cut..];
    }
    out.push_str(rest);
    rest.len()
}

enum Kind {
    /// Holds other blocks (example `====`, sidebar `****`, quote `____`, open `--`).
    Compound,
    /// Holds text read verbatim (listing `----`, literal `....`, pass `++++`, comment `////`,
    /// a Markdown fence).
    Verbatim,
}

fn delimiter_kind(line: &str) -> Option<Kind> {
    if line == "--" {
        return Some(Kind::Compound);
    }
    if line.starts_with("```") {
        return Some(Kind::Verbatim);
    }
    let first = line.chars().next()?;
    if line.len() < 4 || !line.chars().all(|c| c == first) {
        return None;
    }
    match first {
        '=' | '*' | '_' => Some(Kind::Compound),
        '-' | '.' | '+' | '/' => Some(Kind::Verbatim),
        _ => None,
    }
}

/// `|===`, or a nested or data table's `!===`, `,===`, `:===`.
fn is_table_delimiter(line: &str) -> bool {
    line.len() >= 4 && line.starts_with(['|', '!', ',', ':']) && line[1..].chars().all(|c| c == '=')
}

/// Whether a table's attribute line (`[cols="1,2a"]`) styles a column `a`: every cell of
/// the table is then counted as a document (an over-count, which only bounds sooner).
fn document_columns(attributes: &str) -> bool {
    attributes.starts_with('[')
        && attributes.find("cols=").is_some_and(|at| {
            attributes[at + 5..]
                .split([',', ';', '"', ']'])
                .any(|spec| spec.trim().ends_with('a'))
        })
}

/// Cells of a table line given the AsciiDoc style: `a|`, after a span or alignment spec
/// (`2+a|`, `^.^a|`) or at the line's start.
fn document_cell_marks(line: &str) -> usize {
    line.match_indices("a|")
        .filter(|&(at, _)| {
            line[..at]
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || "0123456789+*.^<>".contains(c))
        })
        .count()
}

/// The level a list item line's marker asks for: the run of `*` or `.` before a space, or of
/// `:` (less one) or `;` ending a term.
fn list_marker_levels(line: &str) -> usize {
    let item = line.trim_start();
    for marker in ['*', '.'] {
        let run = item.len() - item.trim_start_matches(marker).len();
        if run > 0 && item[run..].starts_with(' ') {
            return run;
        }
    }
    for marker in [':', ';'] {
        let run = line.len() - line.trim_end_matches(marker).len();
        if run >= 2 {
            return run - 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_nesting_passes_unchanged() {
        let page = "= T\n\n====\nExample\n\n****\nSidebar\n****\n====\n\n* a\n** b\n*** c\n\
                    term::: def\n----\n====\n====\n====\n----\n";
        let bounded = bound(page).unwrap();
        assert!(matches!(bounded.text, Cow::Borrowed(_)));
    }

    #[test]
    fn deep_blocks_deep_lists_and_many_document_cells_are_refused() {
        let blocks: String = (4..4 + MAX_NESTING + 1)
            .map(|n| format!("{}\n", "=".repeat(n)))
            .collect();
        assert!(bound(&blocks).is_err());
        let closed: String = (0..1000).map(|_| "====\nx\n====\n").collect();
        assert!(bound(&closed).is_ok());
        let list = format!("{} deep\n", "*".repeat(MAX_NESTING + 1));
        assert!(bound(&list).is_err());
        let terms = format!("term{}\n", ":".repeat(MAX_NESTING + 2));
        assert!(bound(&terms).is_err());
        let cells = format!("|===\n{}\n|===\n", "a|x ".repeat(MAX_DOCUMENT_CELLS + 1));
        assert!(bound(&cells).is_err());
        let styled = format!(
            "[cols=\"1,1a\"]\n|===\n{}|===\n",
            "|x |y\n".repeat(MAX_DOCUMENT_CELLS / 2 + 1)
        );
        assert!(bound(&styled).is_err());
        let plain = format!("|===\n{}|===\n", "|x |y\n".repeat(MAX_DOCUMENT_CELLS));
        assert!(bound(&plain).is_ok());
        let many = format!("|===\n{}|===\n", "|x |y\n".repeat(MAX_TABLE_CELLS / 2 + 1));
        assert!(bound(&many).is_err());
    }

    #[test]
    fn long_tables_are_continued_as_new_tables_and_offsets_map_back() {
        let rows: String = (0..5_000).map(|i| format!("|row {i} |value\n")).collect();
        let page = format!("[cols=\"1,1\"]\n|===\n{rows}|===\n\nAfter.\n");
        let bounded = bound(&page).unwrap();
        let text = bounded.text.as_ref();
        assert_eq!(text.matches("|===\n").count(), 2 + 2 * 2, "two seams");
        for i in [0, 1_999, 2_000, 4_999] {
            let row = format!("|row {i} |value\n");
            let at = text.find(&row).unwrap();
            let source = bounded.source_offset(at);
            assert_eq!(&page[source..source + row.len()], row);
        }
    }

    #[test]
    fn long_paragraphs_are_split_and_offsets_map_back() {
        let line = "word ".repeat(3000);
        let page = format!("Intro.\n\n{line}\nnext line\n");
        let bounded = bound(&page).unwrap();
        let text = bounded.text.as_ref();
        assert!(text.split("\n\n").all(|p| p.len() <= MAX_PARAGRAPH));
        assert_eq!(text.replace('\n', ""), page.replace('\n', ""));
        // Every byte of the bounded text maps to the same byte of the page.
        for (at, c) in text.char_indices().filter(|&(_, c)| c != '\n') {
            assert_eq!(page[bounded.source_offset(at)..].chars().next(), Some(c));
        }
    }
}
