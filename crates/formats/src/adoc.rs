//! AsciiDoc (`.adoc`, `.asciidoc`) to Markdown.
//!
//! `asciidoc-parser` reads the page as Asciidoctor does (its tests follow Asciidoctor's suite):
//! sections, paragraphs, lists, delimited blocks, admonitions and tables, each with its source
//! span, inline markup already substituted (attributes, replacements, cross references resolved
//! to their section titles) and rendered as HTML. This walks those blocks into the Markdown the
//! chunker packs well:
//! - the document title and sections become headings (`== Options` is `##`);
//! - admonitions (`NOTE:`, `[WARNING]` blocks), titled examples, sidebars and titled listings
//!   become colon-fenced boxes (`::: Note`), which the chunker keeps whole or splits with the
//!   opening line repeated, so a warning keeps its subject and a listing its caption;
//! - listing, literal and source blocks become fenced code, with the source language;
//! - description lists become items that start with their terms (`- --all: Download ...`), so
//!   an option stays with what it does; consecutive terms share one description;
//! - tables become tables; inline markup becomes the text the page shows.
//!
//! Comments, attribute entries, images, page breaks and `toc::[]` show nothing. Includes are
//! never read: the parser runs in its default secure mode, so a page cannot pull in files
//! (outside the synced folder or not). The parser's costs (nesting, paragraph and table
//! sizes, cells) are bounded before it runs ([`adoc_bounds`](crate::adoc_bounds)).

use std::ops::Range;

use asciidoc_parser::blocks::{
    Block, FindBlocks, IsBlock, ListItemMarker, SimpleBlockStyle, TableCellContent, TableRow,
};
use asciidoc_parser::parser::SourceMap;
use asciidoc_parser::{HasSpan, Parser, Span};
use scraper::Html;

use crate::adoc_bounds::{self, Bounded};
use crate::builder::starts_like_block;
use crate::charset;
use crate::convert::{Converted, FormatError};
use crate::md_out::{Out, OutLine, collapse};
use crate::rst_lines::{Line, lines};

/// Heading levels Markdown has.
const MAX_LEVEL: usize = 6;

/// Converts an AsciiDoc page.
pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    // UTF-16 with a byte order mark is decoded, its spans mapped back to the file's bytes.
    charset::convert_text("asciidoc", bytes, convert_text)
}

fn convert_text(src: &str) -> Result<Converted, FormatError> {
    let bounded = adoc_bounds::bound(src)?;
    let doc = Parser::default().parse(&bounded.text);
    let title = doc.doctitle().map(shown_text).filter(|t| !t.is_empty());
    let page = Page {
        text: &bounded,
        lines: lines(&bounded.text),
        origins: doc.source_map(),
    };
    let mut out = Out::default();
    if let Some(title) = &title {
        out.push(OutLine::markup(format!("# {title}")));
    }
    for block in doc.child_blocks() {
        page.block(block, &mut out);
    }
    Ok(out.into_converted("asciidoc", title))
}

/// The text the parser read, its lines, and where the parser's preprocessed lines came from.
struct Page<'s> {
    text: &'s Bounded<'s>,
    lines: Vec<Line<'s>>,
    origins: &'s SourceMap,
}

impl<'s> Page<'s> {
    /// Where `span` is in the page, when its text is there unchanged. Spans point into the
    /// preprocessed text (an `include::` became a link, an `ifdef::` dropped lines), so their
    /// start is mapped back through the parser's source map; text the preprocessor rewrote
    /// keeps no provenance.
    fn range(&self, span: Span<'_>) -> Option<Range<usize>> {
        let read = self.read_range(span)?;
        Some(self.text.source_offset(read.start)..self.text.source_offset(read.end))
    }

    /// Where `span` is in the text the parser read (before preprocessing).
    fn read_range(&self, span: Span<'_>) -> Option<Range<usize>> {
        let origin = self.origins.origin_at(span.line(), span.col());
        if origin.file.is_some() {
            return None;
        }
        let line = self.lines.get(origin.line.checked_sub(1)?)?;
        let text = &self.text.text[line.src.start..];
        let column = origin.col?.checked_sub(1)?;
        let start = line.src.start + text.char_indices().nth(column).map(|(at, _)| at)?;
        let end = start + span.data().len();
        let unchanged = self.text.text.get(start..end) == Some(span.data()) && start < end;
        unchanged.then_some(start..end)
    }

    fn block(&self, block: &Block<'_>, out: &mut Out) {
        match block {
            Block::Section(section) => {
                let text = shown_text(section.section_title());
                if !text.is_empty() {
                    let hashes = "#".repeat((section.level() + 1).min(MAX_LEVEL));
                    out.block();
                    out.push(line(
                        format!("{hashes} {text}"),
                        self.range(section.section_title_source()),
                    ));
                }
                self.children(block, out);
            }
            Block::Simple(simple) => {
                if matches!(simple.style(), SimpleBlockStyle::Paragraph) {
                    self.caption(block, out);
                    let shown = shown_text(simple.content().rendered_html());
                    out.paragraph(&shown, self.range(block.span()));
                } else {
                    // An indented literal paragraph or a `[source]` paragraph: shown verbatim.
                    let mut body = Out::default();
                    self.code(block, simple.content().original(), &mut body);
                    self.titled(block, body, out);
                }
            }
            Block::List(_) => {
                self.caption(block, out);
                out.extend(self.list(block));
            }
            Block::RawDelimited(raw) => match block.resolved_context().as_ref() {
                "comment" => {}
                "pass" => {
                    let shown = shown_text(raw.content().rendered_html());
                    out.paragraph(&shown, self.range(raw.content().original()));
                }
                _ => {
                    let mut body = Out::default();
                    self.code(block, raw.content().original(), &mut body);
                    self.titled(block, body, out);
                }
            },
            Block::Admonition(admonition) => {
                let mut body = Out::default();
                if let Some(content) = admonition.content() {
                    body.paragraph(
                        &shown_text(content.rendered_html()),
                        self.range(content.original()),
                    );
                }
                self.children(block, &mut body);
                let label = collapse(admonition.label());
                let opening = match block.title().map(shown_text) {
                    Some(title) if !title.is_empty() => format!("{label}: {title}"),
                    _ => label,
                };
                out.extend(body.into_box(&opening));
            }
            Block::CompoundDelimited(_) => {
                let mut body = Out::default();
                self.children(block, &mut body);
                match block.resolved_context().as_ref() {
                    // Examples and sidebars are units of their own, as the page frames them.
                    "example" | "sidebar" => self.titled(block, body, out),
                    _ => {
                        self.caption(block, out);
                        out.extend(body);
                    }
                }
            }
            Block::Quote(quote) => {
                self.caption(block, out);
                if let Some(content) = quote.content() {
                    out.paragraph(
                        &shown_text(content.rendered_html()),
                        self.range(content.original()),
                    );
                }
                self.children(block, out);
                if let Some(by) = quote.attribution().map(shown_text) {
                    out.paragraph(&format!("— {by}"), None);
                }
            }
            Block::Table(table) => {
                self.caption(block, out);
                let mut rows: Vec<Vec<String>> = table
                    .header_row()
                    .into_iter()
                    .chain(table.body_rows())
                    .chain(table.footer_row())
                    .map(|row| self.cells(row))
                    .collect();
                if !rows.is_empty() {
                    // Without a header row the first row heads the Markdown table.
                    let header = rows.remove(0);
                    match self.range(block.span()) {
                        Some(src) => out.table(&header, &rows, src),
                        None => {
                            let mut table = Out::default();
                            table.table(&header, &rows, 0..0);
                            out.extend(without_sources(table));
                        }
                    }
                }
            }
            Block::Preamble(_) => self.children(block, out),
            // Images, breaks, `toc::[]` and attribute entries: nothing to read. Block kinds a
            // later parser adds are read through their children.
            Block::Media(_) | Block::Break(_) | Block::Toc(_) | Block::DocumentAttribute(_) => {}
            _ => self.children(block, out),
        }
    }

    fn children(&self, block: &Block<'_>, out: &mut Out) {
        for child in block.child_blocks() {
            self.block(child, out);
        }
    }

    /// A block title (`.Title` above a block) as a bold line before it.
    fn caption(&self, block: &Block<'_>, out: &mut Out) {
        if let Some(title) = block.title().map(shown_text).filter(|t| !t.is_empty()) {
            let src = block.title_source().and_then(|s| self.range(s));
            out.paragraph(&format!("**{title}**"), src);
        }
    }

    /// `body` in a box opened by the block's title when it has one, as it is without.
    fn titled(&self, block: &Block<'_>, body: Out, out: &mut Out) {
        match block.title().map(shown_text).filter(|t| !t.is_empty()) {
            Some(title) => out.extend(body.into_box(&title)),
            None => out.extend(body),
        }
    }

    /// A fenced code block of the source lines `content` covers, in the block's language
    /// (`[source,yaml]`).
    fn code(&self, block: &Block<'_>, content: Span<'_>, out: &mut Out) {
        let language = block
            .attrlist()
            .filter(|a| a.block_style() == Some("source"))
            .and_then(|a| a.nth_attribute(2))
            .map(|a| a.value().trim().to_string())
            .unwrap_or_default();
        if let Some(read) = self.read_range(content) {
            // Lines of the text read, their sources mapped to the page's.
            let first = self.lines.partition_point(|l| l.src.end <= read.start);
            let last = self.lines.partition_point(|l| l.src.start < read.end);
            let code: Vec<Line> = self.lines[first..last.max(first)]
                .iter()
                .map(|l| {
                    let src =
                        self.text.source_offset(l.src.start)..self.text.source_offset(l.src.end);
                    Line::new(l.text.clone(), src)
                })
                .collect();
            out.code(&language, &code);
        } else {
            // Rewritten by the preprocessor: the text, without provenance.
            let mut code = Out::default();
            code.code(&language, &lines(content.data()));
            out.extend(without_sources(code));
        }
    }

    /// A list: items (`- `, `1. `), or for a description list its terms then what follows
    /// them, as one item per description.
    fn list(&self, list: &Block<'_>) -> Out {
        let mut out = Out::default();
        // `[start=4]` numbers an ordered list from 4, as the page shows it.
        let mut number = match list {
            Block::List(list) => list.start().filter(|&n| n >= 0).unwrap_or(1),
            _ => 1,
        };
        let mut terms: Vec<String> = Vec::new();
        for child in list.child_blocks() {
            let Block::ListItem(item) = child else {
                self.block(child, &mut out);
                continue;
            };
            let mut body = Out::default();
            self.children(child, &mut body);
            let lead = match item.list_item_marker() {
                ListItemMarker::DefinedTerm { term, .. } => {
                    let term = shown_text(term.rendered_html());
                    if !term.is_empty() {
                        terms.push(term);
                    }
                    if body.lines.iter().all(|l| l.text.is_empty()) {
                        // `-a::` above `--all::`: both name the next description.
                        continue;
                    }
                    let lead = format!("{}: ", terms.join(", "));
                    terms.clear();
                    lead
                }
                _ => match item.checkbox() {
                    Some(true) => "[x] ".to_string(),
                    Some(false) => "[ ] ".to_string(),
                    None => String::new(),
                },
            };
            let marker = match item.list_item_marker() {
                ListItemMarker::DefinedTerm { .. }
                | ListItemMarker::Hyphen(_)
                | ListItemMarker::Asterisks(_)
                | ListItemMarker::Bullet(_) => "- ".to_string(),
                _ => {
                    number += 1;
                    format!("{}. ", number - 1)
                }
            };
            out.extend_tight(item_lines(&marker, &lead, body));
        }
        if !terms.is_empty() {
            let mut lone = Out::default();
            lone.push(OutLine::markup(terms.join(", ")));
            out.extend_tight(lone.into_item("- "));
        }
        out
    }

    /// A table row's cells as shown text; an AsciiDoc cell (`a|`) is read as blocks, joined.
    fn cells(&self, row: &TableRow<'_>) -> Vec<String> {
        row.cells()
            .iter()
            .map(|cell| match cell.content() {
                TableCellContent::Simple(content) => shown_text(content.rendered_html()),
                TableCellContent::AsciiDoc(doc) => {
                    let mut inner = Out::default();
                    for block in doc.blocks() {
                        self.block(block, &mut inner);
                    }
                    let text: Vec<&str> = inner
                        .lines
                        .iter()
                        .map(|l| l.text.trim())
                        .filter(|t| !t.is_empty() && !t.starts_with("```"))
                        .collect();
                    text.join(" ")
                }
            })
            .collect()
    }
}

/// A list item: `marker` (`- `, `3. `), then `lead` (its terms, a checkbox) and the body. The
/// body's first paragraph joins the lead on one line; another first block (code, a nested
/// list) goes below it.
fn item_lines(marker: &str, lead: &str, body: Out) -> Out {
    let opens_with_text = body
        .lines
        .iter()
        .find(|l| !l.text.is_empty())
        .is_some_and(|l| !starts_like_block(&l.text) && !l.text.starts_with(":::"));
    if opens_with_text || lead.is_empty() {
        return body.into_item(&format!("{marker}{lead}"));
    }
    let mut item = Out::default();
    item.push(OutLine::markup(lead.trim_end().to_string()));
    item.extend(body);
    item.into_item(marker)
}

/// `out` with no line claiming a source (its text was rewritten by the preprocessor).
fn without_sources(mut out: Out) -> Out {
    for line in &mut out.lines {
        line.src = None;
    }
    out
}

fn line(text: String, src: Option<Range<usize>>) -> OutLine {
    match src {
        Some(src) => OutLine::sourced(text, src),
        None => OutLine::markup(text),
    }
}

/// The text a reader sees for inline HTML the parser rendered: tags dropped, character
/// references decoded, zero-width spaces (Asciidoctor puts one after an ellipsis) removed.
fn shown_text(html: &str) -> String {
    let text = if html.contains(['<', '&']) {
        let fragment = Html::parse_fragment(html);
        fragment.root_element().text().collect::<String>()
    } else {
        html.to_string()
    };
    collapse(&text.replace('\u{200B}', ""))
}
