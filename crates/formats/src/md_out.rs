//! The Markdown a reStructuredText or AsciiDoc page becomes, line by line, each with the source
//! bytes its text came from: paragraphs, fenced code, tables, list items and colon-fenced boxes.

use std::ops::Range;

use crate::builder::{MarkdownBuilder, escape_cell, fence_for, starts_like_block};
use crate::convert::Converted;
use crate::rst_lines::Line;

/// One line of Markdown output and where its text came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutLine {
    pub text: String,
    pub src: Option<Range<usize>>,
    /// Colons, when this line is a box's fence written here.
    fence: usize,
}

impl OutLine {
    pub(crate) fn markup(text: impl Into<String>) -> OutLine {
        OutLine {
            text: text.into(),
            src: None,
            fence: 0,
        }
    }

    /// A line of text from `src`.
    pub(crate) fn sourced(text: String, src: Range<usize>) -> OutLine {
        OutLine {
            text,
            src: Some(src),
            fence: 0,
        }
    }

    pub(crate) fn blank() -> OutLine {
        OutLine::default()
    }
}

/// Markdown lines under construction: blocks separated by one blank line.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub lines: Vec<OutLine>,
}

impl Out {
    /// Starts a new block (a blank line after the previous one).
    pub(crate) fn block(&mut self) {
        if self.lines.last().is_some_and(|l| !l.text.is_empty()) {
            self.lines.push(OutLine::blank());
        }
    }

    pub(crate) fn push(&mut self, line: OutLine) {
        self.lines.push(line);
    }

    /// Appends `other` as blocks of their own.
    pub(crate) fn extend(&mut self, other: Out) {
        let mut lines = other.lines.into_iter().skip_while(|l| l.text.is_empty());
        if let Some(first) = lines.next() {
            self.block();
            self.lines.push(first);
            self.lines.extend(lines);
        }
        while self.lines.last().is_some_and(|l| l.text.is_empty()) {
            self.lines.pop();
        }
    }

    /// Appends `other` right below the last line: the next item of a tight list.
    pub(crate) fn extend_tight(&mut self, other: Out) {
        if self.lines.is_empty() {
            return self.extend(other);
        }
        while self.lines.last().is_some_and(|l| l.text.is_empty()) {
            self.lines.pop();
        }
        self.lines
            .extend(other.lines.into_iter().skip_while(|l| l.text.is_empty()));
        while self.lines.last().is_some_and(|l| l.text.is_empty()) {
            self.lines.pop();
        }
    }

    /// The Markdown of these lines, with the provenance of their sourced text.
    pub(crate) fn into_converted(self, format: &str, title: Option<String>) -> Converted {
        let mut b = MarkdownBuilder::new();
        for line in self.lines {
            match line.src {
                Some(src) if !line.text.is_empty() => b.text(&line.text, Some(src), None),
                _ => b.markup(&line.text),
            }
            b.markup("\n");
        }
        b.into_converted(format, title)
    }

    /// A paragraph: `text` (inline markup already turned into shown text) on one line.
    pub(crate) fn paragraph(&mut self, text: &str, src: Option<Range<usize>>) {
        let text = collapse(text);
        if text.is_empty() {
            return;
        }
        self.block();
        self.lines.push(OutLine {
            text: escape_block_start(&text),
            src,
            fence: 0,
        });
    }

    /// A fenced code block of `code` lines.
    pub(crate) fn code(&mut self, info: &str, code: &[Line]) {
        let code = trim_blank_ends(code);
        if code.is_empty() {
            return;
        }
        let joined: String = code.iter().map(|l| l.text.as_ref()).collect();
        let fence = fence_for(&joined);
        self.block();
        self.lines.push(OutLine::markup(format!("{fence}{info}")));
        for l in code {
            self.lines.push(OutLine {
                text: l.text.to_string(),
                src: Some(l.src.clone()),
                fence: 0,
            });
        }
        self.lines.push(OutLine::markup(fence));
    }

    /// A table: the header row, then the rows; cells are shown text already.
    pub(crate) fn table(&mut self, header: &[String], rows: &[Vec<String>], src: Range<usize>) {
        let columns = rows
            .iter()
            .map(Vec::len)
            .chain([header.len()])
            .max()
            .unwrap_or(0);
        if columns == 0 {
            return;
        }
        let row_line = |cells: &[String]| {
            let mut line = String::from("|");
            for c in 0..columns {
                let cell = cells.get(c).map(|s| collapse(s)).unwrap_or_default();
                line.push(' ');
                line.push_str(&escape_cell(&cell));
                line.push_str(" |");
            }
            line
        };
        self.block();
        self.lines.push(OutLine {
            text: row_line(header),
            src: Some(src.clone()),
            fence: 0,
        });
        self.lines
            .push(OutLine::markup(format!("|{}", " --- |".repeat(columns))));
        for row in rows {
            self.lines.push(OutLine {
                text: row_line(row),
                src: Some(src.clone()),
                fence: 0,
            });
        }
    }

    /// Prefixes the first line with `first` and indents the rest by the width of its list
    /// marker (`- `, `12. `), where Markdown continues an item: text after the marker (a
    /// field's name) would make the item's later blocks indented code.
    pub(crate) fn into_item(self, first: &str) -> Out {
        let digits = first.len() - first.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let marker = if first.starts_with("- ") {
            2
        } else if digits > 0 && first[digits..].starts_with(". ") {
            digits + 2
        } else {
            first.chars().count()
        };
        let pad = " ".repeat(marker);
        let mut lines = Vec::with_capacity(self.lines.len());
        let mut body = self.lines.into_iter().skip_while(|l| l.text.is_empty());
        let head = body.next().unwrap_or_default();
        lines.push(OutLine {
            text: format!("{first}{}", head.text),
            src: head.src,
            fence: head.fence,
        });
        for l in body {
            if l.text.is_empty() {
                lines.push(l);
            } else {
                lines.push(OutLine {
                    text: format!("{pad}{}", l.text),
                    src: l.src,
                    fence: l.fence,
                });
            }
        }
        Out { lines }
    }

    /// Wraps the lines in a colon-fenced box opened by `::: {opening}`, with more colons than
    /// any box inside.
    pub(crate) fn into_box(self, opening: &str) -> Out {
        let inner = self.lines.iter().map(|l| l.fence).max().unwrap_or(0);
        let colons = (inner + 1).max(3);
        let fence = ":".repeat(colons);
        let mut out = Out::default();
        out.push(OutLine {
            text: format!("{fence} {}", collapse(opening)),
            src: None,
            fence: colons,
        });
        let mut body = Out::default();
        body.extend(self);
        out.lines.extend(body.lines);
        out.push(OutLine {
            text: fence,
            src: None,
            fence: colons,
        });
        out
    }
}

pub(crate) use crate::html::collapse;

/// `lines` without blank lines at either end.
fn trim_blank_ends<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let start = lines
        .iter()
        .position(|l| !l.is_blank())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_blank())
        .map_or(start, |e| e + 1);
    &lines[start..end]
}

/// A backslash before text that Markdown would read as other block syntax at a line start.
fn escape_block_start(text: &str) -> String {
    let numbered = {
        let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && digits <= 9 && text[digits..].starts_with(['.', ')'])
    };
    let hashes = text.len() - text.trim_start_matches('#').len();
    let heading = (1..=6).contains(&hashes)
        && text[hashes..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace);
    let other_block = starts_like_block(text) && !text.starts_with('#');
    if heading
        || other_block
        || text.starts_with(":::")
        || text.starts_with('<')
        || text.starts_with("{{")
        || numbered
    {
        format!("\\{text}")
    } else {
        text.to_string()
    }
}
