//! reStructuredText tables (grid, simple, `list-table`, `csv-table`) to Markdown tables.
//!
//! A cell that spans rows or columns is read as the text it holds in each column, and a
//! cell's lines are joined with spaces: the words stay in their row, which is what a reader of
//! one row needs. A grid or simple table that does not parse is kept as literal text.

use crate::md_out::{Out, collapse};
use crate::rst_directive::Directive;
use crate::rst_inline::inline;
use crate::rst_lines::{Line, dedent};

/// A grid table's top border: `+---+----+`.
pub(crate) fn is_grid_border(t: &str) -> bool {
    (t.starts_with("+-") || t.starts_with("+="))
        && t.ends_with('+')
        && t.chars().all(|c| matches!(c, '+' | '-' | '='))
}

/// A simple table's border: two or more runs of `=` separated by spaces.
pub(crate) fn is_simple_border(t: &str) -> bool {
    t.starts_with('=')
        && t.chars().all(|c| c == '=' || c == ' ')
        && t.split_whitespace().count() >= 2
}

/// Reads the grid or simple table starting at `lines[i]` into `out`; returns where the next
/// block starts. A table that does not parse is kept as literal text.
pub(crate) fn read(lines: &[Line], i: usize, out: &mut Out) -> Option<usize> {
    let grid = is_grid_border(&lines[i].text);
    let parsed = if grid {
        grid_table(lines, i)
    } else {
        simple_table(lines, i)
    };
    match parsed {
        Some((rows, header_rows, end)) => {
            emit(
                rows,
                header_rows,
                lines[i].src.start..lines[end - 1].src.end,
                out,
            );
            Some(end)
        }
        None => {
            let end = lines[i..]
                .iter()
                .position(Line::is_blank)
                .map_or(lines.len(), |p| i + p);
            out.code("", &lines[i..end]);
            Some(end)
        }
    }
}

/// Rows read so far, how many of them are header rows, and the line after the table.
type Parsed = (Vec<Vec<String>>, usize, usize);

/// Chars of `line` from column `from` up to `to` (or its end), as a string.
fn columns(chars: &[char], from: usize, to: usize) -> String {
    let to = to.min(chars.len());
    if from >= to {
        return String::new();
    }
    chars[from..to].iter().collect()
}

fn grid_table(lines: &[Line], i: usize) -> Option<Parsed> {
    let end = lines[i..]
        .iter()
        .position(Line::is_blank)
        .map_or(lines.len(), |p| i + p);
    let border: Vec<char> = lines[i].text.chars().collect();
    let bounds: Vec<usize> = border
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == '+')
        .map(|(p, _)| p)
        .collect();
    if bounds.len() < 2 {
        return None;
    }
    let cells = bounds.len() - 1;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header_rows = 0;
    let mut current: Vec<String> = vec![String::new(); cells];
    let mut has_text = false;
    for line in &lines[i + 1..end] {
        let chars: Vec<char> = line.text.trim_end().chars().collect();
        match chars.first() {
            Some('+') if is_grid_border(line.text.trim_end()) => {
                if has_text {
                    rows.push(std::mem::replace(&mut current, vec![String::new(); cells]));
                    has_text = false;
                }
                if line.text.contains('=') {
                    header_rows = rows.len();
                }
            }
            Some('|') | Some('+') => {
                for c in 0..cells {
                    let piece = columns(&chars, bounds[c] + 1, bounds[c + 1]);
                    let piece = piece.trim();
                    // A border under one cell of a row that continues (a cell spanning rows).
                    if piece.is_empty() || piece.chars().all(|ch| matches!(ch, '-' | '=' | '+')) {
                        continue;
                    }
                    let piece = piece.trim_matches('|').trim();
                    if !current[c].is_empty() {
                        current[c].push(' ');
                    }
                    current[c].push_str(piece);
                    has_text = true;
                }
            }
            _ => return None,
        }
    }
    if has_text {
        rows.push(current);
    }
    Some((rows, header_rows, end))
}

fn simple_table(lines: &[Line], i: usize) -> Option<Parsed> {
    let border: Vec<char> = lines[i].text.chars().collect();
    let mut starts = Vec::new();
    for (p, c) in border.iter().enumerate() {
        if *c == '=' && (p == 0 || border[p - 1] == ' ') {
            starts.push(p);
        }
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header_rows = 0;
    let mut j = i + 1;
    while j < lines.len() {
        let line = &lines[j];
        let t = line.text.as_ref();
        if is_simple_border(t) || (t.starts_with('=') && t.chars().all(|c| c == '=' || c == ' ')) {
            if lines.get(j + 1).is_none_or(Line::is_blank) {
                return Some((rows, header_rows, j + 1));
            }
            header_rows = rows.len();
            j += 1;
            continue;
        }
        j += 1;
        if line.is_blank() || t.chars().all(|c| c == '-' || c == ' ') {
            continue;
        }
        let chars: Vec<char> = t.chars().collect();
        let cells: Vec<String> = (0..starts.len())
            .map(|c| {
                let to = starts.get(c + 1).copied().unwrap_or(usize::MAX);
                columns(&chars, starts[c], to).trim().to_string()
            })
            .collect();
        match rows.last_mut() {
            // A line whose first column is blank continues the row above.
            Some(last) if cells[0].is_empty() => {
                for (cell, more) in last.iter_mut().zip(cells) {
                    if !more.is_empty() {
                        if !cell.is_empty() {
                            cell.push(' ');
                        }
                        cell.push_str(&more);
                    }
                }
            }
            _ => rows.push(cells),
        }
    }
    None
}

/// Writes `rows` as a Markdown table: the header rows joined into one (the first row when
/// there are none), then the rest.
fn emit(
    mut rows: Vec<Vec<String>>,
    header_rows: usize,
    src: std::ops::Range<usize>,
    out: &mut Out,
) {
    rows.retain(|r| r.iter().any(|c| !c.trim().is_empty()));
    if rows.is_empty() {
        return;
    }
    let take = header_rows.clamp(1, rows.len());
    let header_lines: Vec<Vec<String>> = rows.drain(..take).collect();
    let width = header_lines
        .iter()
        .chain(&rows)
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    let header: Vec<String> = (0..width)
        .map(|c| {
            let joined = header_lines
                .iter()
                .filter_map(|r| r.get(c).map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            inline(&collapse(&joined))
        })
        .collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| inline(&collapse(c))).collect())
        .collect();
    out.table(&header, &rows, src);
}

/// `.. list-table::`: a bullet list of rows, each a bullet list of cells.
pub(crate) fn list_table(d: &Directive, out: &mut Out) {
    let content = dedent(&d.content());
    let bullet = |t: &str| t == "*" || t == "-" || t.starts_with("* ") || t.starts_with("- ");
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row_lines: Vec<Line> = Vec::new();
    let flush = |row_lines: &mut Vec<Line>, rows: &mut Vec<Vec<String>>| {
        if row_lines.is_empty() {
            return;
        }
        let body = dedent(row_lines);
        let mut cells: Vec<String> = Vec::new();
        for l in &body {
            let t = l.text.trim_start();
            if l.indent() == 0 && bullet(t) {
                cells.push(t.get(2..).unwrap_or("").trim().to_string());
            } else if let Some(cell) = cells.last_mut() {
                if !l.is_blank() {
                    cell.push(' ');
                    cell.push_str(t.trim());
                }
            } else if !l.is_blank() {
                cells.push(t.trim().to_string());
            }
        }
        rows.push(cells);
        row_lines.clear();
    };
    for l in &content {
        if l.indent() == 0 && bullet(&l.text) {
            flush(&mut row_lines, &mut rows);
            // The row's first cell marker sits after the row's: `* - cell`.
            let after = l.after(2);
            row_lines.push(Line::new(format!("  {}", after.text).into(), l.src.clone()));
        } else if !row_lines.is_empty() {
            row_lines.push(l.clone());
        }
    }
    flush(&mut row_lines, &mut rows);
    let header_rows = d
        .option("header-rows")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    emit(rows, header_rows, d.src.clone(), out);
}

/// `.. csv-table::`: rows of comma-separated values in the content, a header in `:header:`.
/// A table read from `:file:` or `:url:` is not followed.
pub(crate) fn csv_table(d: &Directive, out: &mut Out) {
    let delimiter = match d.option("delim").map(str::trim) {
        Some("tab") => '\t',
        Some("space") => ' ',
        Some(other) => other.chars().next().unwrap_or(','),
        None => ',',
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header_rows = d
        .option("header-rows")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    if let Some(header) = d.option("header") {
        rows.push(csv_row(header, delimiter));
        header_rows += 1;
    }
    let mut pending = String::new();
    for l in d.content() {
        if l.is_blank() {
            continue;
        }
        if !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(l.text.trim());
        // A quoted value may go on over the next line.
        if pending.matches('"').count().is_multiple_of(2) {
            rows.push(csv_row(&pending, delimiter));
            pending.clear();
        }
    }
    if !pending.is_empty() {
        rows.push(csv_row(&pending, delimiter));
    }
    emit(rows, header_rows, d.src.clone(), out);
}

/// One CSV record: values split at `delimiter` outside double quotes (`""` is a quote).
fn csv_row(line: &str, delimiter: char) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(s) = cells.last_mut() {
                    s.push('"');
                }
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => cells.push(String::new()),
            c => {
                if let Some(s) = cells.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::csv_row;

    #[test]
    fn csv_values_keep_quoted_delimiters() {
        assert_eq!(
            csv_row(r#"a, "b, c", "say ""hi""""#, ','),
            ["a", "b, c", r#"say "hi""#]
        );
    }
}
