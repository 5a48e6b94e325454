//! Splitting a fenced code block between lines, re-fencing every piece.

use std::ops::Range;

use super::{Budget, Level};
use crate::blocks::{lines, trim_end};
use crate::pack::PackContext;
use crate::piece::Piece;

impl PackContext<'_> {
    /// Splits between lines (preferring blank lines); every piece is re-fenced with the original
    /// opening fence line (language, attributes) and a closing fence.
    pub(super) fn split_code(&self, range: Range<usize>, budget: Budget) -> Vec<Piece> {
        let src = self.source;
        let code_lines = lines(src, range.clone());
        // The opening fence may follow a list marker or, for a tiled first child, a whole
        // admonition marker line.
        let found = code_lines.iter().enumerate().find_map(|(k, l)| {
            let line = &src[l.clone()];
            let col = line.find("```").or_else(|| line.find("~~~"))?;
            let before_ok = line[..col]
                .chars()
                .all(|c| c.is_whitespace() || "-*+>.)0123456789".contains(c));
            before_ok.then_some((k, col))
        });
        let Some((fence_line, col)) = found.filter(|&(f, _)| f + 1 < code_lines.len()) else {
            return self.split_text(range, budget, Level::Blank, false);
        };
        let first = &src[code_lines[fence_line].clone()];
        let fence_char = first.as_bytes()[col];
        let fence_len = first[col..]
            .bytes()
            .take_while(|&b| b == fence_char)
            .count();
        let fence: String = std::iter::repeat_n(fence_char as char, fence_len).collect();
        let last = src[code_lines[code_lines.len() - 1].clone()].trim();
        let closed = last.len() >= fence_len && last.bytes().all(|b| b == fence_char);
        let indent = " ".repeat(first[..col].chars().count());
        let prefix = format!("{indent}{}\n", &first[col..]);
        let suffix = format!("\n{indent}{fence}");
        let suffix_tokens = self.str_tokens(&suffix);
        let inner_end = if closed {
            code_lines.len() - 1
        } else {
            code_lines.len()
        };
        // Segment starts: the block start, then every non-blank line that follows a blank one.
        let mut starts = vec![range.start];
        for k in fence_line + 2..inner_end {
            let blank_before = src[code_lines[k - 1].clone()].trim().is_empty();
            if blank_before && !src[code_lines[k].clone()].trim().is_empty() {
                starts.push(code_lines[k].start);
            }
        }
        // A piece of a function's body without the function is a fragment: continuation pieces
        // repeat the definition line (`def detect_encoding(b):`, `pub fn global() -> ...`)
        // under their fence, as split tables repeat their header. Only when that line is in
        // the first segment (so always in the first piece) and short.
        let first_segment_end = starts.get(1).copied().unwrap_or(range.end);
        let prefix = match definition_line(src, &code_lines[fence_line + 1..inner_end]) {
            Some(line)
                if line.end <= first_segment_end
                    && self.str_tokens(&src[line.clone()]) * 8 <= budget.max =>
            {
                format!("{prefix}{}\n", &src[line])
            }
            _ => prefix,
        };
        let prefix_tokens = self.str_tokens(&prefix);
        if (prefix_tokens + suffix_tokens) * 2 > budget.max {
            return self.split_text(range, budget, Level::Lines, false);
        }
        let segment_max = budget.max - prefix_tokens - suffix_tokens;
        let mut segments = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let e = starts
                .get(i + 1)
                .map_or(range.end, |&n| trim_end(src, s..n));
            let segment = self.piece(s..e);
            if segment.tokens > segment_max {
                let flat = Budget::flat(segment_max);
                segments.extend(self.split_text(s..e, flat, Level::Lines, false));
            } else {
                segments.push(segment);
            }
        }
        let mut out = self.merge_segments(
            segments,
            budget,
            (&prefix, prefix_tokens),
            (&suffix, suffix_tokens),
        );
        if !closed {
            // The source never closes this fence; close it so the chunk stays balanced.
            if let Some(last) = out.last_mut().filter(|p| p.suffix.is_empty()) {
                last.add_suffix(&suffix, suffix_tokens);
            }
        }
        out
    }
}

/// The line that defines what a code block holds: its first line that is not blank, a comment,
/// an attribute or a decorator, when that line declares a function, type or module in one of
/// the usual keywords (`def`, `class`, `fn`, `impl`, `func`, `function`, ...).
fn definition_line(src: &str, lines: &[Range<usize>]) -> Option<Range<usize>> {
    const KEYWORDS: [&str; 12] = [
        "def",
        "class",
        "fn",
        "impl",
        "struct",
        "enum",
        "trait",
        "func",
        "function",
        "interface",
        "mod",
        "union",
    ];
    const SKIP: [&str; 7] = ["//", "#", "@", "/*", "*", "--", "\"\"\""];
    let line = lines.iter().find(|l| {
        let t = src[(*l).clone()].trim();
        !t.is_empty() && !SKIP.iter().any(|p| t.starts_with(p))
    })?;
    let declares = src[line.clone()]
        .split_whitespace()
        .take(4)
        .any(|word| KEYWORDS.contains(&word.split(['<', '(']).next().unwrap_or(word)));
    declares.then(|| line.clone())
}
