//! Splitting a fenced code block between lines, re-fencing every piece.

use std::ops::Range;

use super::{Budget, Level};
use crate::blocks::{lines, trim_end};
use crate::pack::PackContext;
use crate::piece::Piece;

/// A block's first piece is cut to the room beside its lead only when that room is at least
/// this fraction (1/n) of a piece.
const MIN_FIRST_ROOM_SHARE: usize = 4;

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
        // A block inside a list item starts after the item's indent (its range starts at the
        // fence): repeated fences go at the same column as the source's, or the closing fence,
        // indented, would not close them.
        let line_start = src[..range.start].rfind('\n').map_or(0, |k| k + 1);
        let before_fence = &src[line_start..range.start];
        let outer = if fence_line == 0
            && before_fence
                .chars()
                .all(|c| c == ' ' || "-*+.)0123456789".contains(c))
        {
            before_fence.chars().count()
        } else {
            0
        };
        let indent = " ".repeat(outer + first[..col].chars().count());
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
        // A piece of a function's body without the function is a fragment, and a value without
        // its key is noise: continuation pieces repeat, under their fence, the lines that
        // enclose their first line (by indentation: `def detect_encoding(b):` and `if len(b) >=
        // 4:`, or `http:` and `routers:`), as split tables repeat their header. Room for the
        // longest such head is kept on every piece.
        let inner_lines = &code_lines[fence_line + 1..inner_end];
        let heads = self.scope_heads(inner_lines, budget.max / 8);
        let scope_room = heads.iter().map(|h| h.1).max().unwrap_or(0);
        let prefix_tokens = self.str_tokens(&prefix);
        if (prefix_tokens + scope_room + suffix_tokens) * 2 > budget.max {
            return self.split_text(range, budget, Level::Lines, false);
        }
        let segment_max = budget.max - prefix_tokens - scope_room - suffix_tokens;
        // The first piece sits beside what leads the block (a heading and the sentence under
        // it): a first segment too big for the room left there is cut between lines, or the
        // lead would become a chunk of its own. A sliver of room is not worth a cut.
        let first_room = budget.first_max.saturating_sub(suffix_tokens);
        let mut segments = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            let e = starts
                .get(i + 1)
                .map_or(range.end, |&n| trim_end(src, s..n));
            let segment = self.piece(s..e);
            let cap = if i == 0 && first_room >= segment_max / MIN_FIRST_ROOM_SHARE {
                segment_max.min(first_room)
            } else {
                segment_max
            };
            if segment.tokens > cap {
                // The opening fence line belongs to the code after it: alone, it would make a
                // piece of an empty block.
                let lead_end = if i == 0 {
                    code_lines[fence_line].end
                } else {
                    s
                };
                segments.extend(self.split_lines(s..e, cap, lead_end));
            } else {
                segments.push(segment);
            }
        }
        self.fill_first_room(&mut segments, first_room, segment_max);
        let mut out = self.merge_segments(
            segments,
            budget,
            (&prefix, prefix_tokens + scope_room),
            (&suffix, suffix_tokens),
        );
        // merge_segments counted the room; each piece gets its own head, and the lines just
        // before its cut when they fit (a field list or a run of statements cut in the middle).
        for piece in out.iter_mut().skip(1) {
            piece.prefix_tokens -= scope_room;
            piece.tokens -= scope_room;
        }
        // The lines just before a cut, repeated: never starting at a blank line.
        if self.overlap_tokens > 0 {
            let starts: Vec<usize> = (inner_lines.iter())
                .filter(|l| !src[(*l).clone()].trim().is_empty())
                .map(|l| l.start)
                .collect();
            self.carry_back(&mut out, &starts, usize::MAX, budget.max, scope_room);
        }
        for piece in out.iter_mut().skip(1) {
            let at = inner_lines.partition_point(|l| l.start < piece.range.start);
            let Some((head, _)) = heads.get(at).filter(|h| !h.0.is_empty()) else {
                continue;
            };
            let text: String = (head.iter())
                .map(|&k| format!("{}\n", &src[inner_lines[k].clone()]))
                .collect();
            let tokens = self.str_tokens(&text);
            // Tokens of a joined text can differ from the sum of its lines' by a word piece.
            if piece.tokens + tokens <= budget.max {
                piece.prefix.push_str(&text);
                piece.prefix_tokens += tokens;
                piece.tokens += tokens;
            }
        }
        if !closed {
            // The source never closes this fence; close it so the chunk stays balanced.
            if let Some(last) = out.last_mut().filter(|p| p.suffix.is_empty()) {
                last.add_suffix(&suffix, suffix_tokens);
            }
        }
        out
    }
}

impl PackContext<'_> {
    /// The first piece sits beside the block's lead (the sentence introducing the example):
    /// when the whole segments that fit there leave a quarter of a piece or more unused (an
    /// example opening with `'use strict'` or its imports, then a long statement), the next
    /// segment is cut between lines to fill that room, so the lead keeps the start of its code
    /// rather than a sliver of it. The first piece is then joined here, as full as the room
    /// allows; later pieces repeat the cut statement's enclosing lines.
    fn fill_first_room(&self, segments: &mut Vec<Piece>, limit: usize, segment_max: usize) {
        let mut used = 0;
        let mut next = 0;
        while let Some(s) = segments.get(next).filter(|s| used + s.tokens <= limit) {
            used += s.tokens;
            next += 1;
        }
        let room = limit - used.min(limit);
        if next == 0 || next >= segments.len() || room < segment_max / MIN_FIRST_ROOM_SHARE {
            return;
        }
        let range = segments[next].range.clone();
        let src = self.source;
        let cut = lines(src, range.clone())
            .into_iter()
            .take_while(|l| self.tokens.range(range.start..l.end) <= room)
            .filter(|l| {
                let text = src[l.clone()].trim();
                !text.is_empty() && !is_comment(text) && !text.starts_with('@')
            })
            .map(|l| l.end)
            .last()
            .filter(|&end| end < range.end);
        let Some(end) = cut else {
            return;
        };
        let rest = src[end..range.end]
            .find(|c: char| !c.is_whitespace())
            .map_or(range.end, |k| end + k);
        let rest_start = src[end..rest].rfind('\n').map_or(rest, |k| end + k + 1);
        let first = self.piece(segments[0].range.start..end);
        if rest_start >= range.end || first.tokens > limit {
            return;
        }
        let rest = self.piece(rest_start..range.end);
        segments.splice(0..=next, [first, rest]);
    }

    /// For every line, the lines that enclose it (indices into `lines`, outermost first) and
    /// their tokens: walking back, each line indented less than the innermost found so far;
    /// blank lines, comments and lone brackets are never scope. Of a deeper chain, the
    /// outermost lines that fit `max` tokens. One pass with a stack of open lines.
    fn scope_heads(&self, lines: &[Range<usize>], max: usize) -> Vec<(Vec<usize>, usize)> {
        let src = self.source;
        let mut open: Vec<(usize, usize, usize)> = Vec::new(); // (line, indent, tokens)
        let mut heads = Vec::with_capacity(lines.len());
        for (k, line) in lines.iter().enumerate() {
            let text = &src[line.clone()];
            let Some(depth) = indent(text) else {
                heads.push((Vec::new(), 0));
                continue;
            };
            let trimmed = text.trim();
            // A comment or a lone bracket belongs to what encloses it but names nothing, and
            // does not end an enclosing line's scope either (a comment at column 0, the `{` under
            // a shell or C function's name).
            let opens = !is_comment(trimmed) && !trimmed.chars().all(|c| "()[]{};,".contains(c));
            if opens {
                while open.last().is_some_and(|o| o.1 >= depth) {
                    open.pop();
                }
            }
            let mut used = 0;
            let mut head = Vec::new();
            for &(j, _, tokens) in open.iter().filter(|o| o.1 < depth) {
                if used + tokens <= max {
                    head.push(j);
                    used += tokens;
                }
            }
            heads.push((head, used));
            if opens {
                open.push((k, depth, self.str_tokens(text)));
            }
        }
        heads
    }

    /// `range` cut into pieces of at most `max` tokens between lines, never right after a
    /// comment, attribute or decorator line, nor within `lead_end` (an opening fence): those
    /// belong to the line they introduce.
    fn split_lines(&self, range: Range<usize>, max: usize, lead_end: usize) -> Vec<Piece> {
        let src = self.source;
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut open_group: Option<usize> = None;
        for line in lines(src, range.clone()) {
            let text = src[line.clone()].trim();
            let start = open_group.take().unwrap_or(line.start);
            if text.is_empty() || is_comment(text) || text.starts_with('@') || line.end <= lead_end
            {
                open_group = Some(start);
            } else {
                groups.push(start..line.end);
            }
        }
        if let Some(start) = open_group {
            groups.push(start..range.end);
        }
        let mut pieces = Vec::new();
        for group in groups {
            let piece = self.piece(group.clone());
            if piece.tokens > max {
                pieces.extend(self.split_text(group, Budget::flat(max), Level::Lines, false));
            } else {
                pieces.push(piece);
            }
        }
        self.merge_segments(pieces, Budget::flat(max), ("", 0), ("", 0))
    }
}

/// Leading whitespace of a line in columns (a tab counts 4); `None` for a blank line.
fn indent(line: &str) -> Option<usize> {
    let body = line.trim_start();
    if body.is_empty() {
        return None;
    }
    Some(
        line[..line.len() - body.len()]
            .chars()
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum(),
    )
}

/// Whether a trimmed line is only a comment (or a docstring's quotes) in a common syntax.
fn is_comment(line: &str) -> bool {
    const STARTS: [&str; 6] = ["//", "#", "/*", "*", "--", "\"\"\""];
    STARTS.iter().any(|p| line.starts_with(p))
}
