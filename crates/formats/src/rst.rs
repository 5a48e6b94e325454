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
//! than [`MAX_DEPTH`] indented levels is kept as literal text. A `.txt` page written in
//! reStructuredText (Django's) comes here too, told apart by [`looks_like_rst`].

use crate::charset;
use crate::convert::{Converted, FormatError};
use crate::md_out::{Out, OutLine, collapse};
use crate::rst_directive::{self, Directive};
use crate::rst_inline::inline;
use crate::rst_lines::{Line, dedent, dedent_first, indented_end, lines};
use crate::rst_table;

/// Indented levels (block quotes, list items, directive bodies) read as structure; deeper
/// ones stay literal text, so hostile nesting costs linear work per level, at most this many.
pub(crate) const MAX_DEPTH: usize = 24;
/// Heading levels Markdown has.
const MAX_LEVEL: usize = 6;

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
        out.push(OutLine::sourced(
            format!("{} {text}", "#".repeat(level.min(MAX_LEVEL))),
            title.src.clone(),
        ));
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

/// Bytes of a `.txt` file read to tell reStructuredText from plain text.
pub(crate) const SNIFF_BYTES: usize = 64 << 10;

/// Whether `text` (a file's start) is reStructuredText rather than plain text: an underlined
/// section title, and a directive (`.. note::`) or a role (`:ref:`...``) that plain text
/// does not write.
pub(crate) fn looks_like_rst(text: &str) -> bool {
    let mut titled = false;
    let mut marked = false;
    let mut previous = "";
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(c) = adornment(line) {
            titled |= c != '.'
                && line.len() >= 3
                && !previous.is_empty()
                && !previous.starts_with(char::is_whitespace)
                && adornment(previous).is_none()
                && line.len() >= previous.chars().count();
        }
        marked |= Directive::is_directive_line(line) || has_role(line);
        if titled && marked {
            return true;
        }
        previous = line;
    }
    false
}

/// Whether `line` uses a role: `:name:` right before a backquote, after a space or the start.
fn has_role(line: &str) -> bool {
    line.match_indices(":`").any(|(at, _)| {
        let before = &line[..at];
        let name_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_')))
            .map_or(0, |p| p + 1);
        let name = &before[name_start..];
        name.len() >= 3
            && name.starts_with(':')
            && name[1..].starts_with(|c: char| c.is_ascii_lowercase())
    })
}

/// Converts reStructuredText `bytes` to Markdown.
pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    // UTF-16 with a byte order mark is decoded, its spans mapped back to the file's bytes.
    charset::convert_text("rst", bytes, |src| {
        let lines = lines(src);
        let mut reader = Reader::default();
        let out = reader.blocks(&lines, 0, true);
        let mut converted = out.into_converted("rst", reader.title);
        converted.warnings = reader.warnings;
        Ok(converted)
    })
}
