//! The block tree both parsers produce and the packer consumes, and the row model of GFM tables
//! (delimiter rows, row keys) that both the parser's rewrites and the table splitter read.

use std::ops::Range;

use crate::TableText;

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
    /// A box: a mkdocs admonition or content tab (a marker line, `!!! note` or `=== "YAML"`,
    /// and its indented body), or the text between colon fences (`::: tip` … `:::`). `marker`
    /// is the marker or opening line, repeated at the head of continuation pieces.
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

/// Whether `line` is a GFM table delimiter row (`|---|:--:|`).
pub(crate) fn is_delimiter_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('-')
        && t.contains(['|', ':', '-'])
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// The first cell of a table row, without markup: the row's entity key.
pub(crate) fn row_key(line: &str) -> Option<String> {
    let t = line.trim().strip_prefix('|').unwrap_or(line.trim());
    let cell = t.split('|').next()?;
    let mut out = String::new();
    let mut in_tag = false;
    for c in cell.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            '`' | '*' => {}
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out.trim().to_string();
    (!out.is_empty() && !out.bytes().all(|b| matches!(b, b'-' | b':' | b' '))).then_some(out)
}

/// The rewrites of every table (nested ones too), by how `tables` read: as written, each
/// delimiter row compacted (padded rows, `|:------|`, cost one token per dash and say nothing);
/// or rendered, as the page they were converted from shows them: each row's cells joined by
/// tabs, without pipes, and no delimiter row (the form a browser copies a table in, and the
/// words and order of the page's visible text). A rendered table stays a table to the chunker:
/// it is still split between rows with its header repeated, and keyed rows still get records.
/// Ranges are the trimmed rows in `source`; a dropped delimiter row goes with the line break
/// before it.
pub(crate) fn table_rewrites(
    source: &str,
    blocks: &[Block],
    tables: TableText,
    out: &mut Vec<(Range<usize>, String)>,
) {
    for b in blocks {
        if b.kind == Kind::Table {
            let rows = lines(source, b.range.clone());
            match tables {
                TableText::Source => compact_delimiter_row(source, &rows, out),
                TableText::Rendered => render_rows(source, &rows, out),
            }
        }
        table_rewrites(source, &b.children, tables, out);
    }
}

fn compact_delimiter_row(
    source: &str,
    rows: &[Range<usize>],
    out: &mut Vec<(Range<usize>, String)>,
) {
    if let Some(l) = rows
        .iter()
        .skip(1)
        .find(|l| is_delimiter_row(&source[(*l).clone()]))
    {
        let line = &source[l.clone()];
        let start = l.start + (line.len() - line.trim_start().len());
        let end = l.start + line.trim_end().len();
        let compact = compact_delimiter(&source[start..end]);
        if compact.len() < end - start {
            out.push((start..end, compact));
        }
    }
}

fn render_rows(source: &str, rows: &[Range<usize>], out: &mut Vec<(Range<usize>, String)>) {
    let mut previous_end = None;
    for l in rows {
        let line = &source[l.clone()];
        let start = l.start + (line.len() - line.trim_start().len());
        let end = l.start + line.trim_end().len();
        if start < end && line.contains('|') {
            match previous_end {
                Some(before) if is_delimiter_row(line) => out.push((before..end, String::new())),
                _ => row_separators(source, start..end, out),
            }
        }
        previous_end = Some(l.end);
    }
}

/// The rewrites that read the trimmed row `source[row]` as [`row_text`] does: each run of
/// blanks and unescaped pipes between two cells becomes one tab per pipe (none for the row's
/// outer pipes), each `\|` a `|`. Pipe by pipe rather than the whole row, so that a part of a
/// row (an oversized row split between its sentences) reads as rendered too.
fn row_separators(source: &str, row: Range<usize>, out: &mut Vec<(Range<usize>, String)>) {
    let text = &source[row.clone()];
    let bytes = text.as_bytes();
    let blank = |b: u8| b == b' ' || b == b'\t';
    let leading = text.starts_with('|');
    let trailing = text.ends_with('|') && !text.ends_with("\\|");
    let mut done = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if bytes.get(i + 1) == Some(&b'|') => {
                out.push((row.start + i..row.start + i + 2, "|".to_string()));
                i += 2;
                done = i;
            }
            b'|' => {
                let mut start = i;
                while start > done && blank(bytes[start - 1]) {
                    start -= 1;
                }
                let mut end = i;
                let mut pipes = 0;
                while end < bytes.len() && (blank(bytes[end]) || bytes[end] == b'|') {
                    pipes += usize::from(bytes[end] == b'|');
                    end += 1;
                }
                let outer = usize::from(start == 0 && leading)
                    + usize::from(end == bytes.len() && trailing);
                out.push((
                    row.start + start..row.start + end,
                    "\t".repeat(pipes.saturating_sub(outer)),
                ));
                i = end;
                done = end;
            }
            _ => i += 1,
        }
    }
}

/// `| a | b\|c |` as `a<TAB>b|c`: cells split at unescaped pipes, trimmed, unescaped. The
/// reading [`row_separators`] gives piecewise, kept as its test's oracle.
#[cfg(test)]
fn row_text(row: &str) -> String {
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().expect("one cell").push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().expect("one cell").push(c),
        }
    }
    if row.starts_with('|') {
        cells.remove(0);
    }
    if row.ends_with('|') && !row.ends_with("\\|") && !cells.is_empty() {
        cells.pop();
    }
    let cells: Vec<&str> = cells.iter().map(|c| c.trim()).collect();
    cells.join("\t")
}

pub(crate) fn compact_delimiter(row: &str) -> String {
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let cells: Vec<String> = inner
        .split('|')
        .map(|c| {
            let c = c.trim();
            match (c.starts_with(':'), c.len() > 1 && c.ends_with(':')) {
                (true, true) => ":---:",
                (true, false) => ":---",
                (false, true) => "---:",
                (false, false) => "---",
            }
            .to_string()
        })
        .collect();
    let lead = if row.starts_with('|') { "|" } else { "" };
    let trail = if row.ends_with('|') && row.len() > 1 {
        "|"
    } else {
        ""
    };
    format!("{lead}{}{trail}", cells.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `row` with its separator rewrites applied.
    fn rendered(row: &str) -> String {
        let mut rewrites = Vec::new();
        row_separators(row, 0..row.len(), &mut rewrites);
        let mut out = String::new();
        let mut pos = 0;
        for (r, new) in rewrites {
            out.push_str(&row[pos..r.start]);
            out.push_str(&new);
            pos = r.end;
        }
        out.push_str(&row[pos..]);
        out
    }

    #[test]
    fn separator_rewrites_read_a_row_as_its_cells_joined_by_tabs() {
        for row in [
            "| a | b |",
            "|a|b|",
            "| a | | b |",
            "|  |",
            "| a |",
            "a | b",
            "| a \\| b | c |",
            "| a\\| | b |",
            "| a \\|",
            "|\tx  y\t|  z |",
            "| `x | y` | w |",
            "||",
            "|",
        ] {
            assert_eq!(rendered(row), row_text(row), "{row:?}");
        }
    }
}
