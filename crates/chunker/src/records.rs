//! Rows of keyed tables as self-contained records.
//!
//! A question about one row of an options table competes with every near-identical row of the
//! same chunk. A table whose rows are keyed records (one column holds distinct, identifier-like
//! values) therefore also yields one chunk per row: the breadcrumb, the table's caption, then the
//! header row, the delimiter and that one row, so the row reads alone under its column names.
//! The lines are the source's own (only the delimiter is compacted, as in every table chunk): a
//! record quotes the document, so what a model cites from it can be found in the file, and a
//! record is a near-duplicate of the table chunk that holds its row, which dedup collapses to
//! whichever ranks first. The table itself is still chunked as before; records and table chunks
//! share a `table_group` so a searcher can keep one record per table.
//!
//! The rule, in the order it is checked (a table failing 1-3 is silently not a record table, one
//! failing 4-5 gets no records and a warning naming the row):
//! 1. at least [`MIN_ROWS`] data rows;
//! 2. the key column (front matter `table_key:`, matched case-insensitively against the header
//!    cells, else the first column) has a non-empty header;
//! 3. every key cell is identifier-like ([`is_identifier_like`]);
//! 4. every row has as many cells as the header (a ragged row may shift values to the wrong
//!    column, and a wrong record is worse than none);
//! 5. the keys are distinct (two records for one key would contradict each other).
//!
//! Then each row up to [`MAX_RECORDS`] becomes a record unless its record would pass the token
//! cap (that row is skipped with a warning).

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Value};

use crate::blocks::{Block, Kind, compact_delimiter, is_delimiter_row, lines};
use crate::pack::{PackContext, section_path};

/// Tables with fewer data rows stay whole without records: a table of a handful of rows fits in
/// one chunk that already reads alone, its rows barely compete with each other, and records would
/// multiply its share of the index several times over for nothing.
pub(crate) const MIN_ROWS: usize = 4;
/// Most records one table yields: a generated table of 100,000 rows should not become 100,000
/// embeddings unasked.
pub(crate) const MAX_RECORDS: usize = 2_000;
/// Longest key cell, in characters of its plain text.
const MAX_KEY_CHARS: usize = 64;
/// Most whitespace-separated words in a key cell: more reads as prose, not a name.
const MAX_KEY_WORDS: usize = 6;

/// One row record, ready to become a chunk.
pub(crate) struct Record {
    pub path: Vec<String>,
    /// Exactly what gets embedded: breadcrumb, blank line, caption, blank line, header row,
    /// delimiter row, the row.
    pub text: String,
    pub tokens: usize,
    /// The row's line in the source, without indentation.
    pub range: Range<usize>,
    /// `record`, `row_key`, `key_column`, `table_group`: set over any front-matter field.
    pub metadata: Map<String, Value>,
    /// The key under the key column's filter name (`sku: A123`): added only where front matter
    /// has no field of that name, so a column cannot shadow a document field.
    pub column_key: Option<(String, Value)>,
}

/// What [`find`] returns.
#[derive(Default)]
pub(crate) struct Found {
    pub records: Vec<Record>,
    /// The span (header to last row) of each table that has records, and its `table_group`.
    pub groups: Vec<(Range<usize>, String)>,
}

/// Finds the keyed tables of a document's blocks and makes their records. `key_column` is the
/// front-matter `table_key`; `line_of` maps an offset to its line number in the original source.
pub(crate) fn find(
    cx: &PackContext<'_>,
    blocks: &[Block],
    key_column: Option<&str>,
    line_of: &dyn Fn(usize) -> usize,
    warnings: &mut Vec<String>,
) -> Found {
    let mut walker = Walker {
        cx,
        key_column: key_column.map(str::trim).filter(|k| !k.is_empty()),
        line_of,
        warnings,
        headings: Vec::new(),
        headers_seen: HashMap::new(),
        found: Found::default(),
    };
    for (i, b) in blocks.iter().enumerate() {
        // Only top-level headings start sections, as in packing.
        if let Kind::Heading { level, text } = &b.kind {
            while walker.headings.last().is_some_and(|(l, _)| l >= level) {
                walker.headings.pop();
            }
            walker.headings.push((*level, text.clone()));
            continue;
        }
        walker.visit(blocks, i);
    }
    walker.found
}

struct Walker<'w, 'c, 'a> {
    cx: &'c PackContext<'a>,
    key_column: Option<&'w str>,
    line_of: &'w dyn Fn(usize) -> usize,
    warnings: &'w mut Vec<String>,
    headings: Vec<(u8, String)>,
    /// Tables seen per header row hash: the group of a table is its header's hash and how many
    /// tables with the same header came before it, so it does not move when other tables are
    /// added or removed.
    headers_seen: HashMap<String, usize>,
    found: Found,
}

/// A GFM table's rows, as line ranges in the source (trimmed of indentation).
struct Rows {
    header: Range<usize>,
    delimiter: Range<usize>,
    data: Vec<Range<usize>>,
}

impl Walker<'_, '_, '_> {
    fn visit(&mut self, siblings: &[Block], i: usize) {
        let b = &siblings[i];
        if b.kind == Kind::Table {
            let caption = i
                .checked_sub(1)
                .map(|j| &siblings[j])
                .filter(|p| p.kind == Kind::Paragraph);
            self.table(b, caption);
        }
        for j in 0..b.children.len() {
            self.visit(&b.children, j);
        }
    }

    fn rows(&self, block: &Block) -> Option<Rows> {
        let src = self.cx.source;
        let trim = |l: &Range<usize>| {
            let s = &src[l.clone()];
            let start = l.start + (s.len() - s.trim_start().len());
            start..l.start + s.trim_end().len()
        };
        let ls: Vec<Range<usize>> = lines(src, block.range.clone()).iter().map(trim).collect();
        // The range may start before the table (a tiled first child holds its parent's marker).
        let d = (1..ls.len()).find(|&k| is_delimiter_row(&src[ls[k].clone()]))?;
        let header = ls[d - 1].clone();
        let delimiter = ls[d].clone();
        // Rows inside block quotes carry quote markers: not worth parsing as records.
        if src[header.clone()].starts_with('>') {
            return None;
        }
        // A box's closing fence right under the table is the end of the box, not a row.
        let data = ls[d + 1..]
            .iter()
            .take_while(|l| !crate::markdown::closes_box(&src[(*l).clone()]))
            .filter(|l| !l.is_empty())
            .cloned()
            .collect();
        Some(Rows {
            header,
            delimiter,
            data,
        })
    }

    fn group(&mut self, header: &str) -> String {
        let normal = cells(header).iter().map(|c| plain(c)).collect::<Vec<_>>();
        let hash = blake3::hash(normal.join("\u{1f}").as_bytes()).to_hex();
        let seen = self.headers_seen.entry(hash[..8].to_string()).or_insert(0);
        let group = format!("{}:{seen}", &hash[..8]);
        *seen += 1;
        group
    }

    fn warn(&mut self, at: usize, what: String) {
        let line = (self.line_of)(at);
        self.warnings.push(format!("line {line}: {what}"));
    }

    fn table(&mut self, block: &Block, caption: Option<&Block>) {
        let cx = self.cx;
        let src = cx.source;
        let Some(rows) = self.rows(block) else {
            return;
        };
        let group = self.group(&src[rows.header.clone()]);
        if rows.data.len() < MIN_ROWS {
            return;
        }
        let header = cells(&src[rows.header.clone()]);
        if header.is_empty() {
            return;
        }
        let wanted = self.key_column.and_then(|name| {
            header
                .iter()
                .position(|h| plain(h).eq_ignore_ascii_case(name))
        });
        let key_at = wanted.unwrap_or(0);
        let key_column = plain(header[key_at]);
        if key_column.is_empty() {
            return;
        }
        let row_cells: Vec<Vec<&str>> = rows.data.iter().map(|r| cells(&src[r.clone()])).collect();
        let keys: Vec<Option<String>> = row_cells
            .iter()
            .map(|c| c.get(key_at).map(|k| plain(k)))
            .collect();
        if !keys.iter().flatten().all(|k| is_identifier_like(k)) {
            return;
        }
        for (r, c) in rows.data.iter().zip(&row_cells) {
            if c.len() != header.len() {
                let what = format!(
                    "table row has {} cells, its header {}; the table gets no row records",
                    c.len(),
                    header.len()
                );
                self.warn(r.start, what);
                return;
            }
        }
        let mut first_at: HashMap<&str, usize> = HashMap::new();
        for (r, key) in rows.data.iter().zip(&keys) {
            let key = key.as_deref().unwrap_or_default();
            if let Some(&earlier) = first_at.get(key) {
                let what = format!(
                    "table key {key:?} repeats the row of line {}; the table gets no row records",
                    (self.line_of)(earlier)
                );
                self.warn(r.start, what);
                return;
            }
            first_at.insert(key, r.start);
        }
        if rows.data.len() > MAX_RECORDS {
            let what = format!(
                "table has {} rows; only the first {MAX_RECORDS} get row records",
                rows.data.len()
            );
            self.warn(rows.header.start, what);
        }

        let path = section_path(&self.headings, &cx.title);
        let (breadcrumb, breadcrumb_tokens) = cx.breadcrumb(&path);
        let caption = caption
            .map(|p| collapse(&src[p.range.clone()]))
            .filter(|t| cx.str_tokens(t) <= cx.max_tokens / 8);
        // The header and delimiter lines every record repeats above its row.
        let rendered = cx.tables == crate::TableText::Rendered;
        let head = match rendered {
            true => format!(
                "{}\n",
                cx.tokens.render(rows.header.start..rows.delimiter.end)
            ),
            false => format!(
                "{}\n{}\n",
                &src[rows.header.clone()],
                compact_delimiter(&src[rows.delimiter.clone()])
            ),
        };
        let filter_name = filter_key(&key_column);
        let counting = cx.tokens.counting;
        let mut made = 0;
        for (r, key) in rows.data.iter().zip(&keys) {
            if made == MAX_RECORDS {
                break;
            }
            let key = key.clone().unwrap_or_default();
            let mut body = String::new();
            if let Some(caption) = &caption {
                body.push_str(caption);
                body.push_str("\n\n");
            }
            body.push_str(&head);
            match rendered {
                true => body.push_str(&cx.tokens.render(r.clone())),
                false => body.push_str(&src[r.clone()]),
            }
            let mut text = String::with_capacity(breadcrumb.len() + 2 + body.len());
            if !breadcrumb.is_empty() {
                text.push_str(&breadcrumb);
                text.push_str("\n\n");
            }
            text.push_str(&body);
            let tokens = if counting.additive {
                counting.specials + breadcrumb_tokens + cx.str_tokens(&body)
            } else {
                counting.counter.count(&text)
            };
            if tokens > cx.max_tokens {
                let what = format!(
                    "the record of table row {key:?} has {tokens} tokens, over the cap of {}; \
                     the row gets no record",
                    cx.max_tokens
                );
                self.warn(r.start, what);
                continue;
            }
            let mut metadata = Map::new();
            metadata.insert(crate::RECORD_KEY.into(), Value::from(crate::ROW_RECORD));
            metadata.insert("row_key".into(), Value::from(key.clone()));
            metadata.insert("key_column".into(), Value::from(key_column.clone()));
            metadata.insert("table_group".into(), Value::from(group.clone()));
            let column_key = (!filter_name.is_empty()
                && !metadata.contains_key(&filter_name)
                && filter_name != "table_keys")
                .then(|| (filter_name.clone(), Value::from(key)));
            self.found.records.push(Record {
                path: path.clone(),
                text,
                tokens,
                range: r.clone(),
                metadata,
                column_key,
            });
            made += 1;
        }
        if made > 0 {
            let end = rows.data.last().map_or(rows.header.end, |r| r.end);
            self.found.groups.push((rows.header.start..end, group));
        }
    }
}

/// The cells of a table row, untrimmed of markup: split at unescaped `|` (as GFM does, also
/// inside code spans), without the optional outer pipes.
pub(crate) fn cells(row: &str) -> Vec<&str> {
    let row = row.trim();
    let bytes = row.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // The escaped byte is skipped; it is never a UTF-8 continuation of something else.
            b'\\' => i += 1,
            b'|' => {
                out.push(&row[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&row[start.min(row.len())..]);
    if row.starts_with('|') {
        out.remove(0);
    }
    if out.last() == Some(&"") && row.ends_with('|') {
        out.pop();
    }
    out.into_iter().map(str::trim).collect()
}

/// A cell as embedded: Markdown inline markup kept as written (units, code spans, emphasis,
/// links), HTML tags of rendering only (anchors, `<br />`) dropped, escaped pipes unescaped,
/// whitespace collapsed.
fn rich(cell: &str) -> String {
    collapse(&strip_html(cell).replace("\\|", "|"))
}

/// A cell's plain text, for keys and column names: [`rich`] without code, emphasis and link
/// markup.
pub(crate) fn plain(cell: &str) -> String {
    let text: String = rich(cell)
        .chars()
        .filter(|c| !matches!(c, '`' | '*'))
        .collect();
    let t = text.trim();
    // A whole-cell link `[name](#anchor)` is keyed by its text.
    if let Some(inner) = t.strip_prefix('[')
        && let Some((label, rest)) = inner.split_once("](")
        && rest.ends_with(')')
        && !rest[..rest.len() - 1].contains(')')
    {
        return label.trim().to_string();
    }
    t.to_string()
}

/// Whether a key cell's plain text names a thing rather than saying something: non-empty, at most
/// [`MAX_KEY_CHARS`] characters and [`MAX_KEY_WORDS`] words, not ending like a sentence.
pub(crate) fn is_identifier_like(key: &str) -> bool {
    !key.is_empty()
        && key.chars().count() <= MAX_KEY_CHARS
        && key.split_whitespace().count() <= MAX_KEY_WORDS
        && !key.ends_with(['.', '!', '?', ';', ','])
}

/// A column name as a metadata filter key: lowercase, spaces to `_`, only `[a-z0-9_.-]` kept.
pub(crate) fn filter_key(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' | '\t' => Some('_'),
            'a'..='z' | '0'..='9' | '_' | '.' | '-' => Some(c),
            _ => None,
        })
        .collect()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// HTML elements that only shape rendering inside a cell; any other `<...>` (a placeholder such
/// as `<service-name>`) is text and kept.
const RENDERING_TAGS: &[&str] = &[
    "a", "b", "br", "code", "div", "em", "i", "li", "ol", "p", "small", "span", "strong", "sub",
    "sup", "u", "ul",
];

/// `cell` without rendering-only HTML tags outside code spans; `<br>` becomes a space.
fn strip_html(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    let mut in_code = false;
    let mut rest = cell;
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            in_code = !in_code;
        } else if c == '<'
            && !in_code
            && let Some((len, name)) = html_tag(rest)
        {
            if name.eq_ignore_ascii_case("br") {
                out.push(' ');
            }
            rest = &rest[len..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// If `s` starts with a rendering-only tag (`<a href=..>`, `</a>`, `<br />`): its length and name.
fn html_tag(s: &str) -> Option<(usize, &str)> {
    let inner = s.strip_prefix('<')?;
    let inner = inner.strip_prefix('/').unwrap_or(inner);
    let name_len = inner.bytes().take_while(u8::is_ascii_alphanumeric).count();
    let name = &inner[..name_len];
    if !RENDERING_TAGS.iter().any(|t| t.eq_ignore_ascii_case(name)) {
        return None;
    }
    let after = &inner[name_len..];
    if !after.starts_with(['>', ' ', '/', '\t']) {
        return None;
    }
    let close = after.find('>')?;
    if after[..close].contains(['<', '\n']) {
        return None;
    }
    Some((s.len() - after.len() + close + 1, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_split_at_unescaped_pipes() {
        assert_eq!(cells("| a | b \\| c | d |"), ["a", "b \\| c", "d"]);
        assert_eq!(cells("a | b"), ["a", "b"]);
        assert_eq!(cells("| a | |"), ["a", ""]);
        assert_eq!(cells("|"), Vec::<&str>::new());
    }

    #[test]
    fn markup_is_kept_and_rendering_tags_dropped() {
        let cell = r##"<a id="opt-x" href="#opt-x" title="#opt-x">`x`</a>"##;
        assert_eq!(rich(cell), "`x`");
        assert_eq!(plain(cell), "x");
        assert_eq!(rich("A<br />B **10 ms** `<br>`"), "A B **10 ms** `<br>`");
        assert_eq!(
            rich("use `<service-name>` or <name>"),
            "use `<service-name>` or <name>"
        );
        assert_eq!(plain("[`average`](#average)"), "average");
    }

    #[test]
    fn keys_and_filter_names() {
        assert!(is_identifier_like("sourceCriterion.ipStrategy.depth"));
        assert!(is_identifier_like("Proxy Server's Hostname"));
        assert!(!is_identifier_like(""));
        assert!(!is_identifier_like("This row explains a thing."));
        assert!(!is_identifier_like("one two three four five six seven"));
        assert_eq!(filter_key("Lead Time (days)"), "lead_time_days");
        assert_eq!(filter_key("SKU"), "sku");
        assert_eq!(filter_key("ingress-nginx key"), "ingress-nginx_key");
    }
}
