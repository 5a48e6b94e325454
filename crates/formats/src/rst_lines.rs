//! Source lines of a reStructuredText page and the indented blocks they form.

use std::borrow::Cow;
use std::ops::Range;

/// One source line: leading tabs expanded (to 8 columns), trailing whitespace dropped.
#[derive(Debug, Clone)]
pub(crate) struct Line<'a> {
    pub text: Cow<'a, str>,
    /// The line's bytes in the decoded source.
    pub src: Range<usize>,
    /// Columns of leading spaces, counted once: every indented level asks again.
    indent: usize,
}

impl<'a> Line<'a> {
    pub(crate) fn new(text: Cow<'a, str>, src: Range<usize>) -> Line<'a> {
        let indent = text.len() - text.trim_start_matches(' ').len();
        Line { text, src, indent }
    }

    pub(crate) fn is_blank(&self) -> bool {
        self.text.is_empty()
    }

    /// Columns of leading spaces.
    pub(crate) fn indent(&self) -> usize {
        self.indent
    }

    /// The line with `columns` leading spaces removed (fewer if it has fewer).
    pub(crate) fn dedented(&self, columns: usize) -> Line<'a> {
        let cut = columns.min(self.indent);
        let text = match &self.text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[cut..]),
            Cow::Owned(s) => Cow::Owned(s[cut..].to_string()),
        };
        Line {
            text,
            src: self.src.clone(),
            indent: self.indent - cut,
        }
    }

    /// The line with its first `bytes` bytes (a list marker) replaced by nothing.
    pub(crate) fn after(&self, bytes: usize) -> Line<'a> {
        let text = match &self.text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[bytes.min(s.len())..]),
            Cow::Owned(s) => Cow::Owned(s[bytes.min(s.len())..].to_string()),
        };
        Line::new(text, self.src.clone())
    }
}

/// Splits `src` into [`Line`]s.
pub(crate) fn lines(src: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in src.split_inclusive('\n') {
        let end = start + piece.len();
        let body = piece.trim_end_matches(['\n', '\r']).trim_end();
        let lead = body.len() - body.trim_start_matches([' ', '\t']).len();
        let text = if body[..lead].contains('\t') {
            let mut expanded = String::new();
            for c in body[..lead].chars() {
                if c == '\t' {
                    let pad = 8 - expanded.len() % 8;
                    expanded.extend(std::iter::repeat_n(' ', pad));
                } else {
                    expanded.push(c);
                }
            }
            expanded.push_str(&body[lead..]);
            Cow::Owned(expanded)
        } else {
            Cow::Borrowed(body)
        };
        out.push(Line::new(text, start..start + body.len()));
        start = end;
    }
    out
}

/// Every line of `lines`, dedented by the least indent of the non-blank ones.
pub(crate) fn dedent<'a>(lines: &[Line<'a>]) -> Vec<Line<'a>> {
    let least = lines
        .iter()
        .filter(|l| !l.is_blank())
        .map(Line::indent)
        .min()
        .unwrap_or(0);
    lines.iter().map(|l| l.dedented(least)).collect()
}

/// Index of the first line from `from` that is not blank and indented less than `columns`
/// (the end of an indented block), with trailing blank lines left outside.
pub(crate) fn indented_end(lines: &[Line], from: usize, columns: usize) -> usize {
    let mut end = from;
    let mut last_text = from;
    while end < lines.len() {
        let l = &lines[end];
        if !l.is_blank() {
            if l.indent() < columns {
                break;
            }
            last_text = end + 1;
        }
        end += 1;
    }
    last_text.max(from)
}

/// Lines whose first line was cut after a marker: the rest dedented to the first's column.
pub(crate) fn dedent_first(mut body: Vec<Line<'_>>) -> Vec<Line<'_>> {
    if let Some(first) = body.first_mut() {
        let lead = first.indent();
        *first = first.dedented(lead);
    }
    body
}
