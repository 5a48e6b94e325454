//! Splitting one oversized block into pieces that fit a budget, at the coarsest boundary that
//! fits: child blocks, table rows, code lines, then blank lines, lines, sentences, words and
//! characters of text. Pieces of a split block repeat what makes them readable alone (the table
//! header, the code fence, the list intro, the admonition marker).

mod code;
mod table;
mod text;

use crate::blocks::{Block, Kind};
use crate::pack::{CARRY_SHARE_PERCENT, PackContext, Packer};
use crate::piece::Piece;

/// Token limits for the pieces of one split: the first piece may have less room (it shares a
/// chunk with what was accumulated before it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub first_max: usize,
    pub first_target: usize,
    pub max: usize,
    pub target: usize,
}

impl Budget {
    pub fn flat(max: usize) -> Budget {
        Budget {
            first_max: max,
            first_target: max,
            max,
            target: max,
        }
    }
}

/// Text boundaries, coarsest first.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub(crate) enum Level {
    Blank,
    Lines,
    Sentences,
    Words,
    Chars,
}

impl Level {
    fn finer(self) -> Level {
        match self {
            Level::Blank => Level::Lines,
            Level::Lines => Level::Sentences,
            Level::Sentences => Level::Words,
            Level::Words | Level::Chars => Level::Chars,
        }
    }
}

impl PackContext<'_> {
    /// Splits `block` into pieces within `budget`; `intro` is the text introducing a list,
    /// repeated on every piece of it.
    pub fn split_block(
        &self,
        block: &Block,
        budget: Budget,
        intro: Option<(&str, usize)>,
    ) -> Vec<Piece> {
        let range = block.range.clone();
        match &block.kind {
            Kind::Table => self.split_table(range, budget),
            Kind::FencedCode => self.split_code(range, budget),
            Kind::IndentedCode => self.split_text(range, budget, Level::Blank, false),
            _ if !block.children.is_empty() => {
                let prefix = match (&block.kind, intro) {
                    (Kind::List, Some((text, _))) => format!("{text}\n\n"),
                    (Kind::Container { marker }, _) => {
                        format!("{}\n\n", &self.source[marker.clone()])
                    }
                    _ => String::new(),
                };
                let mut pieces = self.split_children(&block.children, budget, &prefix);
                if block.kind == Kind::List && self.is_ordered(&block.children) {
                    self.carry_steps(&mut pieces, &block.children, budget.max);
                }
                pieces
            }
            Kind::Paragraph | Kind::Heading { .. } | Kind::Item => {
                self.split_text(range, budget, Level::Sentences, true)
            }
            _ => self.split_text(range, budget, Level::Blank, false),
        }
    }

    /// Packs child blocks; continuation pieces start with `prefix` (list intro, admonition marker).
    fn split_children(&self, children: &[Block], budget: Budget, prefix: &str) -> Vec<Piece> {
        let mut prefix_tokens = self.str_tokens(prefix);
        let mut prefix = prefix;
        if prefix_tokens * 3 > budget.max {
            prefix = "";
            prefix_tokens = 0;
        }
        // The first piece is filled: it holds the block's lead (an item's description, a
        // procedure's first steps), which then keeps what it introduces beside it; the rest is
        // shared evenly once the first piece is known.
        let max = budget.max - prefix_tokens;
        let inner = Budget {
            first_max: budget.first_max,
            first_target: budget.first_max,
            max,
            target: max,
        };
        let mut packer = Packer::new(self, Some(inner));
        if let Some(last) = children.last() {
            packer.balance_after_first(last.range.end);
        }
        for c in children {
            packer.push_block(c);
        }
        let mut pieces: Vec<Piece> = packer.finish().into_iter().map(|e| e.piece).collect();
        for piece in pieces.iter_mut().skip(1) {
            piece.add_prefix(prefix, prefix_tokens);
        }
        pieces
    }

    /// Whether a list's items are numbered (`1.`, `2)`): a procedure.
    fn is_ordered(&self, items: &[Block]) -> bool {
        items.first().is_some_and(|item| {
            let text = self.source[item.range.clone()].trim_start();
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            (1..=9).contains(&digits) && matches!(text.as_bytes().get(digits), Some(b'.' | b')'))
        })
    }

    /// Each piece of a split procedure after the first starts with the step before its first
    /// one, when that step takes at most half the cap and the piece still fits `max`: a step
    /// keeps what it follows on from ("3. Drain connections" after "2. `preClose` hooks run";
    /// "step 4 without steps 1-3"), as a continued paragraph keeps the one before it. A
    /// verbatim stretch: the piece's range starts earlier, after the repeated intro.
    fn carry_steps(&self, pieces: &mut [Piece], items: &[Block], max: usize) {
        if self.overlap_tokens == 0 {
            return;
        }
        let limit = self.max_tokens * CARRY_SHARE_PERCENT / 100;
        for k in 1..pieces.len() {
            let start = pieces[k].range.start;
            let floor = pieces[k - 1].range.start;
            // Only a piece that starts at a step: one that goes on inside a split step already
            // follows on from that step's first part.
            // Items are in document order: the last one starting before the piece, by bisection
            // (a linear scan per piece was quadratic in a long list).
            let before = items.partition_point(|i| i.range.start < start);
            let Some(step) = before
                .checked_sub(1)
                .map(|k| &items[k])
                .filter(|i| i.range.start > floor && i.range.end <= start)
                .filter(|i| self.source[i.range.end..start].trim().is_empty())
            else {
                continue;
            };
            let carried = self.tokens.range(step.range.start..start);
            let p = &mut pieces[k];
            let tokens = p.prefix_tokens
                + self.tokens.range(step.range.start..p.range.end)
                + p.suffix_tokens;
            if carried <= limit && tokens <= max {
                p.range.start = step.range.start;
                p.tokens = tokens;
            }
        }
    }

    /// Starts each piece after the first earlier, at up to `most` of the `starts` (sorted
    /// boundaries: sentence starts, non-blank line starts) inside the piece before it, as long
    /// as the repeated text takes at most `overlap_tokens` and the piece, with `reserve` more
    /// tokens for a head added later, stays within `max`.
    fn carry_back(
        &self,
        out: &mut [Piece],
        starts: &[usize],
        most: usize,
        max: usize,
        reserve: usize,
    ) {
        for k in 1..out.len() {
            let (start, end) = (out[k].range.start, out[k].range.end);
            let floor = out[k - 1].range.start;
            let before = starts.partition_point(|&s| s < start);
            let mut new_start = start;
            for &cand in starts[before.saturating_sub(most)..before].iter().rev() {
                let fits = cand >= floor
                    && self.tokens.range(cand..start) <= self.overlap_tokens
                    && out[k].prefix_tokens
                        + reserve
                        + self.tokens.range(cand..end)
                        + out[k].suffix_tokens
                        <= max;
                if !fits {
                    break;
                }
                new_start = cand;
            }
            if new_start < start {
                let p = &mut out[k];
                p.range.start = new_start;
                p.tokens = p.prefix_tokens + self.tokens.range(p.range.clone()) + p.suffix_tokens;
            }
        }
    }

    /// Merges consecutive segments up to the target; pieces after the first get `prefix`, pieces
    /// before the last get `suffix`. Segments must already fit
    /// `max - prefix_tokens - suffix_tokens`.
    fn merge_segments(
        &self,
        segments: Vec<Piece>,
        budget: Budget,
        (prefix, prefix_tokens): (&str, usize),
        (suffix, suffix_tokens): (&str, usize),
    ) -> Vec<Piece> {
        let total = segments.iter().map(|s| s.tokens).sum();
        let (first_soft, soft) = balance(total, budget, prefix_tokens + suffix_tokens);
        let mut out: Vec<Piece> = Vec::new();
        let mut current: Option<Piece> = None;
        for segment in segments {
            if let Some(c) = current.take() {
                let limit = if out.is_empty() {
                    first_soft.saturating_sub(suffix_tokens)
                } else {
                    soft
                };
                if c.mergeable(&segment) {
                    let joined = self.join(&c, &segment);
                    if joined.tokens <= limit {
                        current = Some(joined);
                        continue;
                    }
                }
                out.push(c);
            }
            current = Some(segment);
        }
        out.extend(current);
        let n = out.len();
        for (i, p) in out.iter_mut().enumerate() {
            if i > 0 {
                p.add_prefix(prefix, prefix_tokens);
            }
            if i + 1 < n && !suffix.is_empty() {
                p.add_suffix(suffix, suffix_tokens);
            }
        }
        out
    }
}

/// Soft limits (first piece, later pieces) that split `total` tokens into the fewest pieces of
/// even size: an oversized block is cut as few times as the cap forces, so a procedure keeps
/// as many consecutive steps together as fit. `overhead` is repeated on every later piece.
pub(crate) fn balance(total: usize, b: Budget, overhead: usize) -> (usize, usize) {
    let lead = b.max.saturating_sub(b.first_max);
    let hard = b.max.saturating_sub(overhead).max(1);
    let total = total + lead;
    let n = total.div_ceil(hard).max(1);
    let even = total.div_ceil(n);
    let soft = (even + even / 8).min(hard);
    (soft.saturating_sub(lead).min(b.first_max), soft)
}
