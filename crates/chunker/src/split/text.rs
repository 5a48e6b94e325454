//! Splitting verbatim text at blank lines, lines, sentences, words or characters, with
//! sentence-aligned overlap between the pieces of a paragraph.

use std::ops::Range;

use super::{Budget, Level};
use crate::blocks::{trim_end, trim_start};
use crate::count::is_ws;
use crate::pack::PackContext;
use crate::piece::Piece;

impl PackContext<'_> {
    /// Splits verbatim text at the coarsest boundaries that fit: blank lines, lines, sentences,
    /// words, then characters (counted exactly). `overlap` repeats up to two trailing sentences of
    /// the previous piece, within `overlap_tokens`.
    pub(crate) fn split_text(
        &self,
        r: Range<usize>,
        budget: Budget,
        level: Level,
        overlap: bool,
    ) -> Vec<Piece> {
        let max = budget.max.max(1);
        if level == Level::Chars {
            return self.split_chars(r, max);
        }
        let segs = self.boundaries(r.clone(), level);
        if segs.len() <= 1 {
            return self.split_text(r, budget, level.finer(), overlap);
        }
        let mut pieces = Vec::new();
        for s in &segs {
            let p = self.piece(s.clone());
            if p.tokens > max {
                pieces.extend(self.split_text(s.clone(), Budget::flat(max), level.finer(), false));
            } else {
                pieces.push(p);
            }
        }
        let overlap = overlap && level == Level::Sentences && self.overlap_tokens > 0;
        // Leave room on later pieces for the sentences repeated from the previous one.
        let room = if overlap {
            self.overlap_tokens.min(max / 4)
        } else {
            0
        };
        let greedy_budget = Budget {
            max: max - room,
            first_max: budget.first_max.min(max - room),
            ..budget
        };
        let mut out = self.merge_segments(pieces, greedy_budget, ("", 0), ("", 0));
        if overlap {
            let starts: Vec<usize> = segs.iter().map(|s| s.start).collect();
            self.carry_back(&mut out, &starts, 2, max, 0);
        }
        out
    }

    /// Last resort inside a huge word: the largest prefix that fits, counted exactly.
    fn split_chars(&self, r: Range<usize>, max: usize) -> Vec<Piece> {
        let src = self.source;
        let ceil = |mut i: usize| {
            while i < r.end && !src.is_char_boundary(i) {
                i += 1;
            }
            i.min(r.end)
        };
        let mut out = Vec::new();
        let mut pos = r.start;
        while pos < r.end {
            let fits = |e: usize| self.tokens.range(pos..e) <= max;
            let min_end = ceil(pos + 1);
            if fits(r.end) {
                out.push(self.piece(pos..r.end));
                break;
            }
            // Exponential then binary search for the last fitting end.
            let (mut good, mut bad) = (min_end, r.end);
            let mut step = 64;
            loop {
                let e = ceil(pos + step);
                if e >= bad {
                    break;
                }
                if fits(e) {
                    good = e;
                    step *= 2;
                } else {
                    bad = e;
                    break;
                }
            }
            while bad - good > 1 {
                let mid = ceil(good + (bad - good) / 2);
                if mid >= bad {
                    break;
                }
                if fits(mid) {
                    good = mid;
                } else {
                    bad = mid;
                }
            }
            out.push(self.piece(pos..good));
            pos = good;
        }
        out
    }

    /// Tiles `r` into segments at boundaries of `level` (each trimmed of trailing whitespace).
    pub(crate) fn boundaries(&self, r: Range<usize>, level: Level) -> Vec<Range<usize>> {
        let text = &self.source[r.clone()];
        let mut starts = vec![r.start];
        match level {
            Level::Blank | Level::Lines => {
                let mut prev_blank = false;
                let mut pos = r.start;
                for line in text.split_inclusive('\n') {
                    let blank = line.trim().is_empty();
                    let split = match level {
                        Level::Blank => prev_blank && !blank,
                        _ => !blank,
                    };
                    if split && pos > r.start {
                        starts.push(pos);
                    }
                    prev_blank = blank;
                    pos += line.len();
                }
            }
            Level::Sentences => {
                let b = text.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    let c = b[i];
                    i += 1;
                    if !matches!(c, b'.' | b'!' | b'?') || (c == b'.' && abbreviation(&text[..i])) {
                        continue;
                    }
                    let mut j = i;
                    while j < b.len()
                        && matches!(b[j], b')' | b'"' | b'\'' | b']' | b'*' | b'_' | b'`')
                    {
                        j += 1;
                    }
                    let ws_start = j;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if j == ws_start || j >= b.len() {
                        continue;
                    }
                    let next = text[j..].chars().next().unwrap_or(' ');
                    if !next.is_lowercase() {
                        starts.push(r.start + j);
                        i = j;
                    }
                }
            }
            Level::Words => {
                let mut prev_ws = false;
                for (i, c) in text.char_indices() {
                    let ws = is_ws(c);
                    if prev_ws && !ws && i > 0 {
                        starts.push(r.start + i);
                    }
                    prev_ws = ws;
                }
            }
            Level::Chars => {}
        }
        let mut out = Vec::with_capacity(starts.len());
        for (i, &s) in starts.iter().enumerate() {
            let e = starts
                .get(i + 1)
                .map_or(r.end, |&n| trim_end(self.source, s..n));
            if i == 0 || trim_start(self.source, s..e) < e {
                out.push(s..e);
            }
        }
        out
    }
}

/// Whether `before` (text up to and including a '.') ends with an abbreviation that does not end
/// a sentence: letters in dotted groups of one or two ("e.g.", "i.e.", "U.S.", not "v3.6." or
/// "config.yaml.") or "vs." / "cf.". Splitting
/// there cut "(e.g. `X-Forwarded-For`)" in two, and an overlap starting mid-parenthesis.
fn abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    let stem = &word[..word.len().saturating_sub(1)];
    let dotted = stem.contains('.')
        && stem
            .split('.')
            .all(|part| (1..=2).contains(&part.len()) && part.chars().all(char::is_alphabetic));
    dotted || matches!(stem.to_ascii_lowercase().as_str(), "vs" | "cf")
}
