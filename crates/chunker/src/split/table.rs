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
                segments.extend(self.split_row(segment, rows[k].clone(), segment_max));
                continue;
            }
            // A row whose first cell is empty goes on with the row above (Doxygen gives each
            // member's description a row of its own under the member; tables written by hand
            // leave the cell blank for "same as above"): never cut between them when they fit.
            if starts_with_empty_cell(&self.source[rows[k].clone()])
                && let Some(above) = segments.last_mut()
                && above.mergeable(&segment)
            {
                let joined = self.join(above, &segment);
                if joined.tokens <= segment_max {
                    *above = joined;
                    continue;
                }
            }
            segments.push(segment);
        }
        self.merge_segments(segments, budget, (&header, header_tokens), ("", 0))
    }

    /// Pieces of one row too big for a chunk (`segment`, the row `row` with what the table's
    /// range adds around it): cut between sentences, each piece after the first repeating the
    /// previous one's last sentence and starting with the row's first cell, so that it still
    /// says which row it belongs to (`INTEGER` then the rest of that cell's text).
    fn split_row(&self, segment: Piece, row: Range<usize>, max: usize) -> Vec<Piece> {
        let first_cell = first_cell_end(&self.source[row.clone()])
            .filter(|_| !segment.keys.is_empty())
            .map(|end| {
                let lead = self.tokens.render(row.start..row.start + end);
                let tokens = self.str_tokens(&lead);
                (lead, tokens)
            })
            .filter(|(_, tokens)| *tokens * 8 <= max);
        let lead_tokens = first_cell.as_ref().map_or(0, |(_, t)| *t);
        let mut pieces = self.split_text(
            segment.range,
            Budget::flat(max - lead_tokens),
            Level::Sentences,
            true,
        );
        if let Some(first) = pieces.first_mut() {
            first.keys = segment.keys;
        }
        if let Some((lead, tokens)) = &first_cell {
            for p in pieces.iter_mut().skip(1) {
                p.add_prefix(lead, *tokens);
            }
        }
        pieces
    }
}

/// Where the first cell of the trimmed-or-not row `line` ends, with the separator after it
/// (`| INTEGER | text |` to just before `text`), or None when it has no second cell.
fn first_cell_end(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start().len();
    let body = &line[indent..];
    let open = usize::from(body.starts_with('|'));
    let bytes = body.as_bytes();
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'|' => {
                let rest = &body[i + 1..];
                let blanks = rest.len() - rest.trim_start().len();
                return (!rest.trim().is_empty()).then_some(indent + i + 1 + blanks);
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether the table row `line` has an empty first cell and text in a later one.
fn starts_with_empty_cell(line: &str) -> bool {
    let body = line.trim_start();
    let body = body.strip_prefix('|').unwrap_or(body);
    body.find('|')
        .is_some_and(|end| body[..end].trim().is_empty() && has_cell_text(&body[end + 1..]))
}

fn has_cell_text(cells: &str) -> bool {
    cells.chars().any(|c| !c.is_whitespace() && c != '|')
}
