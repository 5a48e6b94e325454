//! Markdown to block tree with pulldown-cmark (CommonMark + GFM tables), plus boxes: mkdocs
//! admonitions and tabs, boxes between colon fences or paired Hugo shortcodes ([`fenced_box`]).

mod fenced_box;

pub(crate) use fenced_box::{closes_box, shortcode};

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::blocks::{Block, Kind};

/// Deeper block nesting is folded into its ancestor: keeps recursion bounded on hostile input.
const MAX_DEPTH: usize = 24;
/// Containers nested deeper than this are not re-parsed.
const MAX_CONTAINER_DEPTH: usize = 6;

/// Top-level blocks of `source[body]`, ranges in `source` coordinates (not yet tiled).
/// `html_is_text`: the source was converted from a rendered page, so what parses as inline HTML
/// is text the page showed (`impl<T> From<T>` in a heading), not markup to leave out.
pub(crate) fn parse(source: &str, body: Range<usize>, html_is_text: bool) -> Vec<Block> {
    let mut blocks = parse_text(&source[body.clone()], 0, html_is_text);
    shift(&mut blocks, &|o| o + body.start);
    blocks
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

fn block_kind(tag: &Tag<'_>) -> Option<Kind> {
    Some(match tag {
        Tag::Paragraph => Kind::Paragraph,
        Tag::Heading { level, .. } => Kind::Heading {
            level: level_num(*level),
            text: String::new(),
        },
        Tag::BlockQuote(_) => Kind::Quote,
        Tag::CodeBlock(CodeBlockKind::Fenced(_)) => Kind::FencedCode,
        Tag::CodeBlock(CodeBlockKind::Indented) => Kind::IndentedCode,
        Tag::HtmlBlock => Kind::Html,
        Tag::List(_) => Kind::List,
        Tag::Item => Kind::Item,
        Tag::Table(_) => Kind::Table,
        Tag::FootnoteDefinition(_)
        | Tag::DefinitionList
        | Tag::DefinitionListTitle
        | Tag::DefinitionListDefinition
        | Tag::MetadataBlock(_) => Kind::Other,
        _ => return None,
    })
}

fn is_block_end(end: &TagEnd) -> bool {
    matches!(
        end,
        TagEnd::Paragraph
            | TagEnd::Heading(_)
            | TagEnd::BlockQuote(_)
            | TagEnd::CodeBlock
            | TagEnd::HtmlBlock
            | TagEnd::List(_)
            | TagEnd::Item
            | TagEnd::Table
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_)
    )
}

fn level_num(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Blocks of `text` with ranges relative to `text`.
fn parse_text(text: &str, container_depth: usize, html_is_text: bool) -> Vec<Block> {
    let mut top: Vec<Block> = Vec::new();
    let mut stack: Vec<Block> = Vec::new();
    // Block starts ignored because of MAX_DEPTH, so their ends are ignored too.
    let mut folded = 0usize;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if let Some(kind) = block_kind(&tag) {
                    if stack.len() >= MAX_DEPTH {
                        folded += 1;
                    } else {
                        stack.push(Block::leaf(kind, range));
                    }
                }
            }
            Event::End(end) if is_block_end(&end) => {
                if folded > 0 {
                    folded -= 1;
                    continue;
                }
                if let Some(mut b) = stack.pop() {
                    if let Kind::Heading { text, .. } = &mut b.kind {
                        *text = crate::label::bounded(text);
                    }
                    b.range.end = b.range.end.max(b.range.start);
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(b),
                        None => top.push(b),
                    }
                }
            }
            Event::InlineHtml(_) if !html_is_text => {}
            Event::Text(t) | Event::Code(t) | Event::InlineHtml(t) => {
                if let Some(Block {
                    kind: Kind::Heading { text, .. },
                    ..
                }) = stack.last_mut()
                {
                    text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(Block {
                    kind: Kind::Heading { text, .. },
                    ..
                }) = stack.last_mut()
                {
                    text.push(' ');
                }
            }
            Event::Rule => {
                let b = Block::leaf(Kind::Other, range);
                match stack.last_mut() {
                    Some(parent) => parent.children.push(b),
                    None => top.push(b),
                }
            }
            _ => {}
        }
    }
    // An unbalanced stack cannot happen with pulldown-cmark, but never lose blocks if it does.
    while let Some(b) = stack.pop() {
        match stack.last_mut() {
            Some(parent) => parent.children.push(b),
            None => top.push(b),
        }
    }
    sanitize(&mut top, text.len());
    fenced_box::fold(text, &mut top, container_depth, html_is_text);
    containers(text, &mut top, container_depth, html_is_text);
    top
}

/// Keeps ranges ordered and inside the text, whatever the parser reported.
fn sanitize(blocks: &mut Vec<Block>, len: usize) {
    blocks.sort_by_key(|b| b.range.start);
    let mut prev_end = 0;
    blocks.retain_mut(|b| {
        b.range.start = b.range.start.min(len);
        b.range.end = b.range.end.clamp(b.range.start, len);
        if b.range.start < prev_end {
            // Overlapping siblings: fold into the previous one (its range covers the bytes).
            return false;
        }
        prev_end = b.range.end;
        sanitize(&mut b.children, len);
        b.children
            .retain(|c| c.range.start >= b.range.start && c.range.end <= b.range.end);
        true
    });
}

fn is_container_marker(line: &str) -> bool {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return false;
    }
    ["!!! ", "??? ", "???+ ", "=== "]
        .iter()
        .any(|m| t.starts_with(m))
        || ["!!!", "???", "???+"].contains(&t.trim_end())
}

/// Folds mkdocs admonitions and content tabs into Containers whose children are parsed from the
/// de-indented body. CommonMark reads them as a paragraph starting with the marker line (the body
/// continues it lazily when no blank line follows the marker), plus an indented code block when
/// one does.
fn containers(text: &str, blocks: &mut Vec<Block>, depth: usize, html_is_text: bool) {
    let mut i = 0;
    while i < blocks.len() {
        let para = &blocks[i];
        let first_line_end = text[para.range.clone()]
            .find('\n')
            .map_or(para.range.end, |k| para.range.start + k);
        if para.kind != Kind::Paragraph
            || depth >= MAX_CONTAINER_DEPTH
            || !is_container_marker(&text[para.range.start..first_line_end])
        {
            i += 1;
            continue;
        }
        let marker_end = crate::blocks::trim_end(text, para.range.start..first_line_end);
        let marker = para.range.start..marker_end;
        let body_start = (first_line_end + 1).min(para.range.end.max(first_line_end));
        let mut body_end = para.range.end;
        let mut consumed = 1;
        if let Some(next) = blocks.get(i + 1)
            && next.kind == Kind::IndentedCode
            && text[para.range.end..next.range.start].trim().is_empty()
        {
            body_end = next.range.end;
            consumed = 2;
        }
        if text[body_start.min(body_end)..body_end].trim().is_empty() {
            i += 1;
            continue;
        }
        let children = dedented_blocks(text, body_start..body_end, depth + 1, html_is_text);
        let container = Block {
            kind: Kind::Container { marker },
            range: para.range.start..body_end,
            children,
        };
        blocks.splice(i..i + consumed, [container]);
        i += 1;
    }
    for b in blocks.iter_mut() {
        if !matches!(b.kind, Kind::Container { .. }) && !b.children.is_empty() {
            containers(text, &mut b.children, depth, html_is_text);
        }
    }
}

/// Parses `text[r]` with up to 4 columns of indentation removed per line, mapping ranges back.
fn dedented_blocks(text: &str, r: Range<usize>, depth: usize, html_is_text: bool) -> Vec<Block> {
    let mut dedented = String::with_capacity(r.len());
    // (offset in `dedented`, offset in `text`) at the start of each line's kept content.
    let mut map: Vec<(usize, usize)> = Vec::new();
    let mut pos = r.start;
    for line in text[r.clone()].split_inclusive('\n') {
        let strip = indent_to_strip(line);
        map.push((dedented.len(), pos + strip));
        dedented.push_str(&line[strip..]);
        pos += line.len();
    }
    let mut blocks = parse_text(&dedented, depth, html_is_text);
    let to_source = |o: usize| -> usize {
        let k = map.partition_point(|&(d, _)| d <= o).saturating_sub(1);
        match map.get(k) {
            Some(&(d, s)) => s + (o - d),
            None => r.start + o,
        }
    };
    shift(&mut blocks, &to_source);
    blocks
}

/// Bytes of leading indentation to remove: up to 4 spaces, or one tab.
fn indent_to_strip(line: &str) -> usize {
    let mut n = 0;
    for b in line.bytes() {
        match b {
            b' ' if n < 4 => n += 1,
            b'\t' if n == 0 => return 1,
            _ => break,
        }
    }
    n
}

fn shift(blocks: &mut [Block], f: &dyn Fn(usize) -> usize) {
    for b in blocks {
        b.range = f(b.range.start)..f(b.range.end);
        if let Kind::Container { marker } = &mut b.kind {
            *marker = f(marker.start)..f(marker.end);
        }
        shift(&mut b.children, f);
    }
}
