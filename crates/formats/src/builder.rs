//! Appends Markdown and records, for each piece of real text, where it came from.

use std::ops::Range;

use crate::convert::{Converted, SourceSpan};

/// A piece of a code block: range in the code, source bytes, page.
pub(crate) type CodePiece = (Range<usize>, Option<Range<usize>>, Option<u32>);

/// Markdown under construction with its [`SourceSpan`]s (sorted and disjoint by construction).
#[derive(Debug, Default)]
pub(crate) struct MarkdownBuilder {
    out: String,
    spans: Vec<SourceSpan>,
}

impl MarkdownBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.out
    }

    /// Removes the last character written (a line-end hyphen).
    pub(crate) fn pop_char(&mut self) {
        self.out.pop();
        let len = self.out.len();
        if let Some(last) = self.spans.last_mut() {
            last.markdown.end = last.markdown.end.min(len);
        }
    }

    /// Appends synthesised markup (no provenance).
    pub(crate) fn markup(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// Appends text that came from `source` (file bytes) on `page`.
    pub(crate) fn text(&mut self, s: &str, source: Option<Range<usize>>, page: Option<u32>) {
        if s.is_empty() {
            return;
        }
        let start = self.out.len();
        self.out.push_str(s);
        self.span(start..self.out.len(), source, page);
    }

    /// Records provenance for `markdown`, a range already written at the end of the output.
    pub(crate) fn span(
        &mut self,
        markdown: Range<usize>,
        source: Option<Range<usize>>,
        page: Option<u32>,
    ) {
        if markdown.is_empty() || (source.is_none() && page.is_none()) {
            return;
        }
        if let Some(last) = self.spans.last_mut() {
            debug_assert!(last.markdown.end <= markdown.start);
            // Merge a piece that continues the previous one (adjacent text nodes of one block):
            // fewer spans, same union.
            let adjacent = markdown.start - last.markdown.end <= 1 && last.page == page;
            let continues = match (&last.source, &source) {
                (Some(a), Some(b)) => b.start >= a.end && b.start - a.end <= 256,
                (None, None) => true,
                _ => false,
            };
            if adjacent && continues {
                last.markdown.end = markdown.end;
                if let (Some(a), Some(b)) = (&mut last.source, source) {
                    a.end = b.end;
                }
                return;
            }
        }
        self.spans.push(SourceSpan {
            markdown,
            source,
            page,
        });
    }

    /// Ends the current block: the output ends with a blank line (or is empty).
    pub(crate) fn end_block(&mut self) {
        while self.out.ends_with([' ', '\t']) {
            self.out.pop();
        }
        // Trailing blanks may have been the end of the last span.
        let len = self.out.len();
        if let Some(last) = self.spans.last_mut() {
            last.markdown.end = last.markdown.end.min(len);
        }
        if self.out.is_empty() || self.out.ends_with("\n\n") {
            return;
        }
        self.out.push_str(if self.out.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        });
    }

    /// A fenced code block around `code`, whose pieces are `(range in code, source, page)`.
    pub(crate) fn code_block(&mut self, info: &str, code: &str, pieces: &[CodePiece]) {
        self.code_block_in_item(info, code, pieces, 0, None);
    }

    /// A fenced block inside a list item: the fences and every line of code indented by
    /// `indent` columns (the item's content column, or the block would end the list), the
    /// opening fence after the item's `marker` when the item starts with the code.
    pub(crate) fn code_block_in_item(
        &mut self,
        info: &str,
        code: &str,
        pieces: &[CodePiece],
        indent: usize,
        marker: Option<&str>,
    ) {
        let code = code.trim_end_matches(['\n', ' ', '\t', '\r']);
        if code.trim().is_empty() {
            return;
        }
        self.end_block();
        let fence = fence_for(code);
        let pad = " ".repeat(indent);
        match marker {
            Some(m) => {
                self.markup(&" ".repeat(indent.saturating_sub(m.len())));
                self.markup(m);
            }
            None => self.markup(&pad),
        }
        self.markup(&fence);
        self.markup(info);
        self.markup("\n");
        let base = self.out.len();
        // Where each line of `code` starts, and the indent bytes added up to and including it
        // (a blank line gets none).
        let mut lines: Vec<(usize, usize)> = Vec::new();
        let mut added = 0;
        let mut at = 0;
        for (k, line) in code.split('\n').enumerate() {
            if k > 0 {
                self.out.push('\n');
            }
            if !line.is_empty() {
                added += indent;
                self.out.push_str(&pad);
            }
            self.out.push_str(line);
            lines.push((at, added));
            at += line.len() + 1;
        }
        let shift = |at: usize| -> usize {
            let line = lines.partition_point(|l| l.0 <= at).saturating_sub(1);
            lines.get(line).map_or(0, |l| l.1)
        };
        for (r, src, page) in pieces {
            let r = r.start.min(code.len())..r.end.min(code.len());
            let (start, end) = (base + r.start + shift(r.start), base + r.end + shift(r.end));
            self.span(start..end, src.clone(), *page);
        }
        self.markup("\n");
        self.markup(&pad);
        self.markup(&fence);
        self.markup("\n\n");
    }

    /// A heading line (`level` 1..=6) from single-line `text` already cleaned.
    pub(crate) fn heading_prefix(&mut self, level: usize) {
        self.end_block();
        for _ in 0..level.clamp(1, 6) {
            self.out.push('#');
        }
        self.out.push(' ');
    }

    pub(crate) fn finish(mut self) -> (String, Vec<SourceSpan>) {
        self.end_block();
        while self.out.ends_with('\n') {
            self.out.pop();
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        let len = self.out.len();
        self.spans.retain(|s| s.markdown.start < len);
        if let Some(last) = self.spans.last_mut() {
            last.markdown.end = last.markdown.end.min(len);
        }
        (self.out, self.spans)
    }

    /// Wraps up as a [`Converted`] with `format` metadata.
    pub(crate) fn into_converted(self, format: &str, title: Option<String>) -> Converted {
        let (markdown, spans) = self.finish();
        let mut metadata = serde_json::Map::new();
        metadata.insert("format".into(), format.into());
        Converted {
            markdown,
            title,
            metadata,
            spans,
            warnings: Vec::new(),
        }
    }
}

/// A backtick fence longer than any backtick run in `code` (at least three).
pub(crate) fn fence_for(code: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for b in code.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Escapes `|` for a GFM table cell (already single-line).
pub(crate) fn escape_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Whether a paragraph starting with `s` would be read as other block syntax (needs a `\`).
pub(crate) fn starts_like_block(s: &str) -> bool {
    s.starts_with(['#', '>', '|'])
        || s.starts_with("```")
        || s.starts_with("~~~")
        || ["- ", "* ", "+ "]
            .iter()
            .any(|m| s.starts_with(m) || s == m.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backtick_runs() {
        assert_eq!(fence_for("a ``` b"), "````");
        assert_eq!(fence_for("plain"), "```");
    }

    #[test]
    fn adjacent_pieces_merge_and_blocks_separate() {
        let mut b = MarkdownBuilder::new();
        b.heading_prefix(2);
        b.text("Title", Some(10..15), None);
        b.end_block();
        b.text("one", Some(20..23), None);
        b.markup(" ");
        b.text("two", Some(30..33), None);
        let (md, spans) = b.finish();
        assert_eq!(md, "## Title\n\none two\n");
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[1].markdown, 10..17);
        assert_eq!(spans[1].source, Some(20..33));
    }
}
