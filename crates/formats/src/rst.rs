//! reStructuredText (Sphinx and docutils sources, `.rst`) to Markdown.
//!
//! No maintained Rust crate reads the reStructuredText that Sphinx projects write: `rst_parser`
//! is a partial grammar that fails on constructs it lacks, and a docutils port, like docutils
//! itself, rejects Sphinx's own directives (`code-block`, `versionadded`, `py:function`, ...),
//! which are most of what such docs hold. So this is a line-based reader of the block structure,
//! made to keep every piece of text a reader of the rendered page sees, in the shape the
//! chunker packs well:
//! - section titles (underlined, or over- and underlined) become headings, their level by the
//!   order in which each adornment style first appears, as docutils decides;
//! - admonitions (`.. note::`, `.. admonition:: Title`, ...) and object descriptions
//!   (`.. function:: name(args)`, `.. py:data:: NAME`, ...) become colon-fenced boxes, which the
//!   chunker keeps whole or splits with the opening line repeated, so a rule keeps its
//!   condition and a parameter its function;
//! - literal blocks (`::`), `code-block` and doctest blocks become fenced code;
//! - grid, simple, list and CSV tables become tables; lists, definition and field lists become
//!   lists; inline markup becomes the text the page shows (`:meth:`~a.B.run`` → `run()`).
//!
//! Comments, link targets, substitution definitions, `toctree` and the like hold nothing a
//! reader sees and are dropped; `include` is not followed. Input is bounded: nesting deeper
//! than [`MAX_DEPTH`] indented levels is kept as literal text.

use std::borrow::Cow;
use std::ops::Range;

use crate::builder::{MarkdownBuilder, escape_cell, fence_for, starts_like_block};
use crate::convert::{Converted, FormatError, check_size, decode_text};
use crate::rst_directive::{self, Directive};
use crate::rst_inline::inline;
use crate::rst_table;

/// Indented levels (block quotes, list items, directive bodies) read as structure; deeper
/// ones stay literal text, so hostile nesting costs linear work per level, at most this many.
pub(crate) const MAX_DEPTH: usize = 24;
/// Heading levels Markdown has.
const MAX_LEVEL: usize = 6;

/// One source line: leading tabs expanded (to 8 columns), trailing whitespace dropped.
#[derive(Debug, Clone)]
pub(crate) struct Line<'a> {
    pub text: Cow<'a, str>,
    /// The line's bytes in the decoded source.
    pub src: Range<usize>,
    /// Columns of leading spaces, counted once: every indented level asks again.
    indent: usize,
}

impl<'a> Line<'a> {
    pub(crate) fn new(text: Cow<'a, str>, src: Range<usize>) -> Line<'a> {
        let indent = text.len() - text.trim_start_matches(' ').len();
        Line { text, src, indent }
    }

    pub(crate) fn is_blank(&self) -> bool {
        self.text.is_empty()
    }

    /// Columns of leading spaces.
    pub(crate) fn indent(&self) -> usize {
        self.indent
    }

    /// The line with `columns` leading spaces removed (fewer if it has fewer).
    pub(crate) fn dedented(&self, columns: usize) -> Line<'a> {
        let cut = columns.min(self.indent);
        let text = match &self.text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[cut..]),
            Cow::Owned(s) => Cow::Owned(s[cut..].to_string()),
        };
        Line {
            text,
            src: self.src.clone(),
            indent: self.indent - cut,
        }
    }

    /// The line with its first `bytes` bytes (a list marker) replaced by nothing.
    pub(crate) fn after(&self, bytes: usize) -> Line<'a> {
        let text = match &self.text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[bytes.min(s.len())..]),
            Cow::Owned(s) => Cow::Owned(s[bytes.min(s.len())..].to_string()),
        };
        Line::new(text, self.src.clone())
    }
}

/// Splits `src` into [`Line`]s.
pub(crate) fn lines(src: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in src.split_inclusive('\n') {
        let end = start + piece.len();
        let body = piece.trim_end_matches(['\n', '\r']).trim_end();
        let lead = body.len() - body.trim_start_matches([' ', '\t']).len();
        let text = if body[..lead].contains('\t') {
            let mut expanded = String::new();
            for c in body[..lead].chars() {
                if c == '\t' {
                    let pad = 8 - expanded.len() % 8;
                    expanded.extend(std::iter::repeat_n(' ', pad));
                } else {
                    expanded.push(c);
                }
            }
            expanded.push_str(&body[lead..]);
            Cow::Owned(expanded)
        } else {
            Cow::Borrowed(body)
        };
        out.push(Line::new(text, start..start + body.len()));
        start = end;
    }
    out
}

/// Every line of `lines`, dedented by the least indent of the non-blank ones.
pub(crate) fn dedent<'a>(lines: &[Line<'a>]) -> Vec<Line<'a>> {
    let least = lines
        .iter()
        .filter(|l| !l.is_blank())
        .map(Line::indent)
        .min()
        .unwrap_or(0);
    lines.iter().map(|l| l.dedented(least)).collect()
}

/// Index of the first line from `from` that is not blank and indented less than `columns`
/// (the end of an indented block), with trailing blank lines left outside.
pub(crate) fn indented_end(lines: &[Line], from: usize, columns: usize) -> usize {
    let mut end = from;
    let mut last_text = from;
    while end < lines.len() {
        let l = &lines[end];
        if !l.is_blank() {
            if l.indent() < columns {
                break;
            }
            last_text = end + 1;
        }
        end += 1;
    }
    last_text.max(from)
}

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

/// Collapses runs of whitespace to one space and trims.
pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

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

/// A line that is one punctuation character repeated (a section adornment or transition).
pub(crate) fn adornment(line: &str) -> Option<char> {
    let mut chars = line.chars();
    let c = chars.next()?;
    let valid = c.is_ascii_punctuation() && line.len() >= 2 && chars.all(|d| d == c);
    valid.then_some(c)
}

/// The reader of one document: the adornment styles met so far decide heading levels.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// Adornment styles in order of first appearance: (character, has an overline).
    styles: Vec<(char, bool)>,
    pub(crate) title: Option<String>,
    pub(crate) warnings: Vec<String>,
}

impl Reader {
    /// Reads `lines` (one indented level, dedented) at nesting `depth`. `sections`: whether
    /// titles here are section headings (the document's top level) or only bold lines.
    pub(crate) fn blocks(&mut self, lines: &[Line], depth: usize, sections: bool) -> Out {
        let mut out = Out::default();
        if depth > MAX_DEPTH {
            if depth == MAX_DEPTH + 1 {
                self.warnings.push(format!(
                    "indented more than {MAX_DEPTH} levels deep: the rest is kept as literal text"
                ));
            }
            out.code("", lines);
            return out;
        }
        let mut i = 0;
        while i < lines.len() {
            i = self.block(lines, i, depth, sections, &mut out);
        }
        out
    }

    /// Reads the block starting at `lines[i]` into `out`; returns where the next one starts.
    fn block(
        &mut self,
        lines: &[Line],
        i: usize,
        depth: usize,
        sections: bool,
        out: &mut Out,
    ) -> usize {
        let line = &lines[i];
        if line.is_blank() {
            return i + 1;
        }
        if line.indent() > 0 {
            // A block quote: the indented lines, read one level down.
            let end = indented_end(lines, i, 1);
            out.extend(self.blocks(&dedent(&lines[i..end]), depth + 1, false));
            return end.max(i + 1);
        }
        let t = line.text.as_ref();
        let next = lines.get(i + 1);
        // Over- and underlined title.
        if let Some(c) = adornment(t)
            && let (Some(title), Some(under)) = (next, lines.get(i + 2))
            && !title.is_blank()
            && adornment(under.text.trim()) == Some(c)
            && adornment(title.text.trim()).is_none()
        {
            self.heading(c, true, title, sections, out);
            return i + 3;
        }
        // Underlined title.
        if let Some(under) = next
            && under.indent() == 0
            && let Some(c) = adornment(&under.text)
            && (under.text.len() >= 4 || under.text.len() >= t.chars().count())
            && !t.starts_with("..")
            && adornment(t).is_none()
        {
            self.heading(c, false, line, sections, out);
            return i + 2;
        }
        // A transition (a lone adornment line): nothing to show.
        if adornment(t).is_some() && t.len() >= 4 && next.is_none_or(Line::is_blank) {
            return i + 1;
        }
        if t == ".." || t.starts_with(".. ") {
            let end = indented_end(lines, i + 1, 1);
            self.explicit(&lines[i..end], depth, out);
            return end;
        }
        if (rst_table::is_grid_border(t) || rst_table::is_simple_border(t))
            && let Some(end) = rst_table::read(lines, i, out)
        {
            return end;
        }
        if let Some(end) = crate::rst_lists::read(self, lines, i, depth, out) {
            return end;
        }
        if t.starts_with(">>>") {
            let end = lines[i..]
                .iter()
                .position(Line::is_blank)
                .map_or(lines.len(), |p| i + p);
            out.code("pycon", &lines[i..end]);
            return end;
        }
        if t == "|" || t.starts_with("| ") {
            // A line block: each line its own, as the page shows them.
            let mut j = i;
            while j < lines.len() && !lines[j].is_blank() {
                let text = lines[j].text.trim_start_matches('|');
                out.paragraph(&inline(text), Some(lines[j].src.clone()));
                j += 1;
            }
            return j;
        }
        self.paragraph(lines, i, depth, out)
    }

    /// A section title: a heading at the top level, a bold line inside indented blocks.
    fn heading(&mut self, c: char, overline: bool, title: &Line, sections: bool, out: &mut Out) {
        let text = collapse(&inline(title.text.trim()));
        if text.is_empty() {
            return;
        }
        if !sections {
            out.paragraph(&format!("**{text}**"), Some(title.src.clone()));
            return;
        }
        let level = match self.styles.iter().position(|&s| s == (c, overline)) {
            Some(p) => p + 1,
            None => {
                self.styles.push((c, overline));
                self.styles.len()
            }
        };
        if self.title.is_none() {
            self.title = Some(text.clone());
        }
        out.block();
        out.push(OutLine {
            text: format!("{} {text}", "#".repeat(level.min(MAX_LEVEL))),
            src: Some(title.src.clone()),
            fence: 0,
        });
    }

    /// An explicit markup block (`..`): a directive, footnote, or something with nothing to
    /// show (comment, link target, substitution definition).
    fn explicit(&mut self, lines: &[Line], depth: usize, out: &mut Out) {
        let first = lines[0].text.as_ref();
        let rest = first.get(3..).unwrap_or("");
        if let Some(directive) = Directive::parse(lines) {
            rst_directive::render(self, &directive, depth, out);
            return;
        }
        if let Some(label_end) = rest.strip_prefix('[').and_then(|r| r.find(']')) {
            // A footnote or citation: its label, then its text.
            let label = &rest[..label_end + 2];
            let mut body: Vec<Line> = vec![lines[0].after(3 + label.len())];
            body.extend(dedent(&lines[1..]));
            let body = dedent_first(body);
            let read = self.blocks(&body, depth + 1, false);
            out.extend(read.into_item(&format!("{label} ")));
        }
        // Anything else is a comment, a target (`.. _name:`) or a substitution definition.
    }

    /// A paragraph from `lines[i]` to the next blank line, or a definition list item when a
    /// single line is followed by indented ones; a trailing `::` introduces a literal block.
    fn paragraph(&mut self, lines: &[Line], i: usize, depth: usize, out: &mut Out) -> usize {
        let mut end = i + 1;
        while end < lines.len() && !lines[end].is_blank() && lines[end].indent() == 0 {
            end += 1;
        }
        if end == i + 1
            && lines
                .get(end)
                .is_some_and(|l| !l.is_blank() && l.indent() > 0)
        {
            return crate::rst_lists::definition(self, lines, i, depth, out);
        }
        let src = lines[i].src.start..lines[end - 1].src.end;
        let mut text = lines[i..end]
            .iter()
            .map(|l| l.text.trim())
            .collect::<Vec<_>>()
            .join(" ");
        let literal = text.ends_with("::");
        if literal {
            text.truncate(text.len() - 2);
            // "Text::" shows as "Text:", "Text ::" as "Text", and a lone "::" as nothing.
            if text.ends_with(char::is_whitespace) || text.is_empty() {
                text = text.trim_end().to_string();
            } else {
                text.push(':');
            }
        }
        out.paragraph(&inline(&text), Some(src));
        if !literal {
            return end;
        }
        let mut start = end;
        while start < lines.len() && lines[start].is_blank() {
            start += 1;
        }
        if start < lines.len() && lines[start].indent() > 0 {
            let block_end = indented_end(lines, start, 1);
            out.code("", &dedent(&lines[start..block_end]));
            return block_end;
        }
        end
    }
}

/// Lines whose first line was cut after a marker: the rest dedented to the first's column.
pub(crate) fn dedent_first(mut body: Vec<Line<'_>>) -> Vec<Line<'_>> {
    if let Some(first) = body.first_mut() {
        let lead = first.indent();
        *first = first.dedented(lead);
    }
    body
}

/// Converts reStructuredText `bytes` to Markdown.
pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    check_size(bytes)?;
    let src = decode_text("rst", bytes)?;
    let lines = lines(&src);
    let mut reader = Reader::default();
    let out = reader.blocks(&lines, 0, true);
    let mut b = MarkdownBuilder::new();
    for line in out.lines {
        match line.src {
            Some(src) if !line.text.is_empty() => b.text(&line.text, Some(src), None),
            _ => b.markup(&line.text),
        }
        b.markup("\n");
    }
    let mut converted = b.into_converted("rst", reader.title);
    converted.warnings = reader.warnings;
    Ok(converted)
}
