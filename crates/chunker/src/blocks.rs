//! The block tree both parsers produce and the packer consumes.

use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Heading {
        level: u8,
        text: String,
    },
    Paragraph,
    Table,
    FencedCode,
    IndentedCode,
    List,
    Item,
    Quote,
    /// mkdocs admonition or content tab: a marker line (`!!! note`, `=== "YAML"`) and its
    /// indented body. `marker` is the marker line, repeated at the head of continuation pieces.
    Container {
        marker: Range<usize>,
    },
    Html,
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub kind: Kind,
    /// Byte range in the full source. After [`tile`] the ranges of siblings cover their parent.
    pub range: Range<usize>,
    pub children: Vec<Block>,
}

impl Block {
    pub fn leaf(kind: Kind, range: Range<usize>) -> Block {
        Block {
            kind,
            range,
            children: Vec::new(),
        }
    }
}

/// Makes sibling ranges cover `parent` without gaps (the first starts at `parent.start`, each
/// ends where the next starts, then trailing whitespace is trimmed), recursively. Bytes the parser
/// emits no event for (link reference definitions, stray markers) thereby belong to a block and
/// can never be lost.
pub(crate) fn tile(source: &str, blocks: &mut [Block], parent: Range<usize>) {
    let n = blocks.len();
    for i in 0..n {
        let start = if i == 0 {
            parent.start
        } else {
            blocks[i].range.start
        };
        let end = if i + 1 < n {
            blocks[i + 1].range.start
        } else {
            parent.end
        };
        let end = trim_end(source, start..end.max(start));
        blocks[i].range = start..end;
    }
    for b in blocks.iter_mut() {
        let r = b.range.clone();
        if !b.children.is_empty() {
            tile(source, &mut b.children, r);
        }
    }
}

/// `r.end` moved back over trailing whitespace (never before `r.start`).
pub(crate) fn trim_end(source: &str, r: Range<usize>) -> usize {
    let s = &source[r.clone()];
    r.start + s.trim_end_matches(crate::count::is_ws).len()
}

/// `r.start` moved forward over leading whitespace (never past `r.end`).
pub(crate) fn trim_start(source: &str, r: Range<usize>) -> usize {
    let s = &source[r.clone()];
    r.end - s.trim_start_matches(crate::count::is_ws).len()
}

/// Line ranges (without the line break) covering `r`.
pub(crate) fn lines(source: &str, r: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = r.start;
    let text = &source[r.clone()];
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        out.push(pos..pos + content.len());
        pos += line.len();
    }
    out
}
