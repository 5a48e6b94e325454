//! Finds where DOM text nodes sit in the HTML source, for exact-enough `SourceSpan`s.
//!
//! html5ever does not report byte offsets, but text nodes come out in source order, so each one
//! is searched forward from the end of the previous one, by a literal prefix that entity
//! decoding cannot have changed. Total search work is bounded (a few times the input size);
//! past that, spans are simply not recorded.

use std::ops::Range;

/// Longest literal prefix searched for.
const PROBE: usize = 32;
/// How far ahead of the cursor one search looks.
const WINDOW: usize = 64 << 10;

pub(crate) struct Locator<'a> {
    src: &'a str,
    cursor: usize,
    budget: usize,
}

impl<'a> Locator<'a> {
    pub(crate) fn new(src: &'a str, start: usize) -> Self {
        Locator {
            src,
            cursor: start.min(src.len()),
            budget: 8 * src.len() + (1 << 20),
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        self.budget == 0
    }

    /// Source range of the text node `text`: from its first literal character to the next tag.
    pub(crate) fn locate(&mut self, text: &str) -> Option<Range<usize>> {
        let body = text.trim_start();
        let probe_len = body
            .char_indices()
            .find(|&(i, c)| i >= PROBE || !literal(c))
            .map_or(body.len(), |(i, _)| i);
        let probe = &body[..probe_len];
        if probe.is_empty() || self.budget == 0 {
            return None;
        }
        let end = floor_char(self.src, (self.cursor + WINDOW).min(self.src.len()));
        let hay = &self.src[self.cursor..end];
        match hay.find(probe) {
            Some(i) => {
                self.budget = self.budget.saturating_sub(i + probe.len());
                let start = self.cursor + i;
                let rest = &self.src[start..];
                let stop = rest.find('<').unwrap_or(rest.len());
                self.cursor = start + stop.max(probe.len());
                Some(start..self.cursor)
            }
            None => {
                self.budget = self.budget.saturating_sub(hay.len());
                None
            }
        }
    }
}

/// Characters that appear in the source exactly as in the DOM (no entity or CR/LF rewriting).
fn literal(c: char) -> bool {
    (c.is_ascii_graphic() || c == ' ') && !matches!(c, '&' | '<' | '>' | '"' | '\'')
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_text_nodes_in_order() {
        let src = "<p>a</p><p>a &amp; b</p>";
        let mut l = Locator::new(src, 0);
        assert_eq!(l.locate("a").map(|r| &src[r]), Some("a"));
        assert_eq!(l.locate("a & b").map(|r| &src[r]), Some("a &amp; b"));
        assert_eq!(l.locate("missing"), None);
        assert_eq!(l.locate("&"), None);
    }
}
