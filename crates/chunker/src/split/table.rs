//! Splitting a table between rows, repeating its header and delimiter rows on every piece.

use std::ops::Range;

use super::{Budget, Level};
use crate::blocks::{is_delimiter_row, lines, row_key};
use crate::pack::PackContext;
use crate::piece::Piece;

impl PackContext<'_> {
    /// Splits between rows; every continuation piece repeats the header and delimiter rows.
    pub(super) fn split_table(&self, range: Range<usize>, budget: Budget) -> Vec<Piece> {
        let rows = lines(self.source, range.clone());
        // The range may start before the table (a tiled first child holds its parent's marker).
        let Some(delimiter) =
            (1..rows.len()).find(|&k| is_delimiter_row(&self.source[rows[k].clone()]))
        else {
            return self.split_text(range, budget, Level::Lines, false);
        };
        if delimiter + 1 >= rows.len() {
            return self.split_text(range, budget, Level::Lines, false);
        }
        let header = format!(
            "{}\n",
            self.tokens
                .render(rows[delimiter - 1].start..rows[delimiter].end)
        );
        let header_tokens = self.str_tokens(&header);
        if header_tokens * 2 > budget.max {
            return self.split_text(range, budget, Level::Lines, false);
        }
        let segment_max = budget.max - header_tokens;
        let mut segments = Vec::new();
        for k in delimiter + 1..rows.len() {
            let start = if k == delimiter + 1 {
                range.start
            } else {
                rows[k].start
            };
            let end = if k + 1 == rows.len() {
                range.end
            } else {
                rows[k].end
            };
            if self.source[start..end].trim().is_empty() {
                continue;
            }
            let mut segment = self.piece(start..end);
            if let Some(key) = row_key(&self.source[rows[k].clone()]) {
                segment.keys.push(key);
            }
            if segment.tokens > segment_max {
                let keys = segment.keys.clone();
                let mut sub = self.split_text(
                    segment.range,
                    Budget::flat(segment_max),
                    Level::Words,
                    false,
                );
                if let Some(first) = sub.first_mut() {
                    first.keys = keys;
                }
                segments.extend(sub);
            } else {
                segments.push(segment);
            }
        }
        self.merge_segments(segments, budget, (&header, header_tokens), ("", 0))
    }
}
