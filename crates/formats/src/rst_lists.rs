//! reStructuredText lists: bullet, enumerated, field and option lists, and definition lists,
//! each item's body read as blocks one level down and rendered as a Markdown list item.

use crate::md_out::{Out, OutLine};
use crate::rst::Reader;
use crate::rst_inline::inline;
use crate::rst_lines::{Line, dedent, dedent_first, indented_end};

/// Field names that only steer Sphinx (a page's metadata), not text a reader sees.
const SPHINX_FIELDS: &[&str] = &["orphan", "nocomments", "nosearch", "tocdepth", "hide-toc"];

/// What starts a list item.
#[derive(Debug, Clone, PartialEq)]
enum Marker {
    /// `-`, `*`, `+`, `•`: the character.
    Bullet(char),
    /// `1.`, `#.`, `(a)`, `iv)`: the number, when it is one.
    Enumerated(Option<u64>),
    /// `:name: text`: the name.
    Field(String),
    /// `-a, --all  text`: the options.
    Option(String),
}

impl Marker {
    /// Whether `other` continues a list that `self` started.
    fn same_list(&self, other: &Marker) -> bool {
        matches!(
            (self, other),
            (Marker::Enumerated(_), Marker::Enumerated(_))
                | (Marker::Field(_), Marker::Field(_))
                | (Marker::Option(_), Marker::Option(_))
        ) || matches!((self, other), (Marker::Bullet(a), Marker::Bullet(b)) if a == b)
    }
}

/// The marker of `lines[i]` and the byte where the item's text starts, if it starts an item.
fn marker(lines: &[Line], i: usize) -> Option<(Marker, usize)> {
    let t = lines[i].text.as_ref();
    let mut chars = t.chars();
    let first = chars.next()?;
    let after_first = first.len_utf8();
    let spaced = |at: usize| t[at..].is_empty() || t[at..].starts_with(' ');
    if matches!(first, '-' | '*' | '+' | '•' | '‣' | '⁃') && spaced(after_first) {
        return Some((Marker::Bullet(first), text_start(t, after_first)));
    }
    if let Some((number, end)) = enumerator(t)
        && spaced(end)
    {
        // A paragraph that happens to begin "A. Lincoln" is not a list: an item's next line is
        // blank, indented, or another item.
        let next_ok = lines.get(i + 1).is_none_or(|l| {
            l.is_blank()
                || l.indent() > 0
                || enumerator(&l.text).is_some_and(|(_, e)| l.text[e..].starts_with(' '))
        });
        if next_ok {
            return Some((Marker::Enumerated(number), text_start(t, end)));
        }
    }
    if let Some(rest) = t.strip_prefix(':')
        && !rest.starts_with([':', ' ', '`'])
    {
        // `:name: text`, not a role (`:ref:`...``) at the start of a paragraph.
        let close = rest
            .char_indices()
            .find(|&(p, c)| {
                c == ':' && (rest[p + 1..].is_empty() || rest[p + 1..].starts_with(' '))
            })
            .map(|(p, _)| p)?;
        let name = &rest[..close];
        if !name.contains('`') {
            return Some((Marker::Field(name.to_string()), text_start(t, close + 2)));
        }
    }
    if t.starts_with('-') && t[1..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-') {
        // An option list: the options, two spaces, the description (or it on indented lines).
        match t.find("  ") {
            Some(gap) => return Some((Marker::Option(t[..gap].to_string()), text_start(t, gap))),
            None if lines
                .get(i + 1)
                .is_some_and(|l| !l.is_blank() && l.indent() > 0) =>
            {
                return Some((Marker::Option(t.to_string()), t.len()));
            }
            None => {}
        }
    }
    None
}

/// Byte where text starts after a marker ending at `at` (spaces skipped).
fn text_start(t: &str, at: usize) -> usize {
    let at = at.min(t.len());
    at + (t[at..].len() - t[at..].trim_start().len())
}

/// An enumerator at the start of `t`: `1.`, `1)`, `(1)`, with `#`, a letter or a roman
/// numeral in place of the number. Returns the number (when it is digits) and its end.
fn enumerator(t: &str) -> Option<(Option<u64>, usize)> {
    let (open, body) = match t.strip_prefix('(') {
        Some(rest) => (1, rest),
        None => (0, t),
    };
    let len = body
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
        .unwrap_or(body.len());
    let label = &body[..len];
    let close = body[len..].chars().next()?;
    let closes = if open == 1 {
        close == ')'
    } else {
        close == '.' || close == ')'
    };
    if !closes || label.is_empty() {
        return None;
    }
    let digits = label.bytes().all(|b| b.is_ascii_digit()) && label.len() <= 9;
    let roman = label.bytes().all(|b| b"ivxlcdm".contains(&b))
        || label.bytes().all(|b| b"IVXLCDM".contains(&b));
    let letter = label.len() == 1 && label.as_bytes()[0].is_ascii_alphabetic();
    if !(digits || label == "#" || letter || (roman && label.len() <= 6)) {
        return None;
    }
    let number = digits.then(|| label.parse().ok()).flatten();
    Some((number, open + len + 1))
}

/// Reads the list starting at `lines[i]`, if one does; returns where the next block starts.
pub(crate) fn read(
    reader: &mut Reader,
    lines: &[Line],
    i: usize,
    depth: usize,
    out: &mut Out,
) -> Option<usize> {
    let (first_marker, _) = marker(lines, i)?;
    let mut at = i;
    let mut counter = 0u64;
    // Items with no blank line between them stay a tight list.
    let mut tight = false;
    loop {
        let (item_marker, text_at) = marker(lines, at)?;
        let end = indented_end(lines, at + 1, 1);
        let mut body: Vec<Line> = vec![lines[at].after(text_at)];
        body.extend(dedent(&lines[at + 1..end]));
        let read = reader.blocks(&dedent_first(body), depth + 1, false);
        let prefix = match &item_marker {
            Marker::Bullet(_) => "- ".to_string(),
            Marker::Enumerated(number) => {
                counter = number.unwrap_or(counter + 1);
                format!("{counter}. ")
            }
            Marker::Field(name) if SPHINX_FIELDS.contains(&name.as_str()) => String::new(),
            Marker::Field(name) => format!("- {}: ", inline(name)),
            Marker::Option(options) => format!("- {}: ", options.trim()),
        };
        if !prefix.is_empty() {
            let item = if read.lines.iter().all(|l| l.text.is_empty()) {
                let mut bare = Out::default();
                bare.push(OutLine::sourced(
                    prefix.trim_end_matches([' ', ':']).to_string(),
                    lines[at].src.clone(),
                ));
                bare
            } else {
                read.into_item(&prefix)
            };
            if tight {
                out.extend_tight(item);
            } else {
                out.extend(item);
            }
        }
        let mut next = end;
        while next < lines.len() && lines[next].is_blank() {
            next += 1;
        }
        tight = next == end;
        let continues = next < lines.len()
            && lines[next].indent() == 0
            && marker(lines, next).is_some_and(|(m, _)| first_marker.same_list(&m));
        if !continues {
            return Some(end.max(at + 1));
        }
        at = next;
    }
}

/// A definition list item: the term on `lines[i]`, its definition on the indented lines below.
pub(crate) fn definition(
    reader: &mut Reader,
    lines: &[Line],
    i: usize,
    depth: usize,
    out: &mut Out,
) -> usize {
    let end = indented_end(lines, i + 1, 1);
    let mut item = Out::default();
    item.paragraph(
        &format!("**{}**", inline(lines[i].text.trim())),
        Some(lines[i].src.clone()),
    );
    item.extend(reader.blocks(&dedent(&lines[i + 1..end]), depth + 1, false));
    out.extend(item.into_item("- "));
    end
}
