//! Structure detection for `.txt`: blank-line paragraphs, numbered section headings, lists,
//! rules, underlined headings and hanging-indent entries.
//!
//! A heading is a short line that is not a sentence: "3. Safety Stock", "3.1 Inputs", "SCOPE",
//! or any short line underlined with `===` or `---`. A numbered step ("1. Notify the category
//! manager within 24 hours.") ends with punctuation, so it stays a list item inside its
//! section; a sentence wrapped after a few words ("1. When starting Vim initializations are
//! read" / "from various places.") is no heading either.
//!
//! A rule (a line of one repeated sign, `=====`) ends a paragraph, so the heading under it is
//! seen. An entry with a hanging indent (a command, an option, a term at the margin, then its
//! text indented below, over blank lines: Vim's help, man pages as text) is a box whose head line
//! is repeated on every piece when it must be split, so no piece loses what it describes.

use std::ops::Range;

use crate::blocks::{Block, Kind};

const MAX_HEADING_CHARS: usize = 80;
const MAX_HEADING_WORDS: usize = 12;
/// Signs a rule is a run of, at least [`MIN_RULE_CHARS`] long.
const RULE_SIGNS: &[char] = &['=', '-', '_', '*', '~', '#', '+'];
const MIN_RULE_CHARS: usize = 10;

/// Blocks of `source[body]` and, when the first line looks like a title, its text.
pub(crate) fn parse(source: &str, body: Range<usize>) -> (Option<String>, Vec<Block>) {
    let lines = crate::blocks::lines(source, body.clone());
    let text = |l: &Range<usize>| &source[l.clone()];
    // Paragraphs: runs of non-blank lines, cut at rules. An underlined heading keeps its rule.
    let mut paras: Vec<&[Range<usize>]> = Vec::new();
    let mut rules: Vec<(usize, Range<usize>)> = Vec::new();
    // Indexes of underlined paragraphs, ascending (searched by bisection: a page may hold many).
    let mut underlined: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if text(&lines[i]).trim().is_empty() {
            i += 1;
            continue;
        }
        if rule_sign(text(&lines[i])).is_some() {
            rules.push((paras.len(), lines[i].clone()));
            i += 1;
            continue;
        }
        let mut start = i;
        i += 1;
        if i < lines.len() && underlines(text(&lines[start]), text(&lines[i])) {
            underlined.push(paras.len());
            paras.push(&lines[start..=i]);
            i += 1;
            continue;
        }
        while i < lines.len() && !text(&lines[i]).trim().is_empty() {
            if rule_sign(text(&lines[i])).is_some() {
                break;
            }
            // A line back at a lesser indent starts a paragraph of its own (Vim's next entry
            // right under the text of the one before), with the tag lines just above it.
            let line = text(&lines[i]);
            if indent(line) < indent(text(&lines[i - 1])) && list_marker(line).is_none() {
                let mut cut = i;
                while cut > start && is_tag_line(text(&lines[cut - 1])) {
                    cut -= 1;
                }
                if cut > start {
                    paras.push(&lines[start..cut]);
                    start = cut;
                }
            }
            i += 1;
        }
        paras.push(&lines[start..i]);
    }

    let mut title = None;
    let mut blocks = Vec::new();
    let mut rules = rules.into_iter().peekable();
    let mut p = 0;
    while p < paras.len() {
        while let Some((_, rule)) = rules.next_if(|(before, _)| *before <= p) {
            blocks.push(Block::leaf(Kind::Other, rule));
        }
        let para = paras[p];
        let first = text(&para[0]).trim();
        if underlined.binary_search(&p).is_ok() {
            let heading = crate::label::bounded(first);
            let level = if rule_sign(text(&para[1])) == Some('=') {
                1
            } else {
                2
            };
            if p == 0 && title.is_none() {
                title = Some(heading.clone());
            }
            let range = para[0].start..para[1].end;
            blocks.push(Block::leaf(
                Kind::Heading {
                    level,
                    text: heading,
                },
                range,
            ));
            p += 1;
            continue;
        }
        let next_is_item = para.get(1).is_some_and(|l| list_marker(text(l)).is_some());
        let mut rest = para;
        if p == 0 && title.is_none() && para.len() == 1 && is_title_like(first) {
            let heading = crate::label::bounded(first);
            title = Some(heading.clone());
            blocks.push(Block::leaf(
                Kind::Heading {
                    level: 0,
                    text: heading,
                },
                para[0].clone(),
            ));
            p += 1;
            continue;
        }
        // "1. Setting options |set-option|" over "2. Automatically setting options": a table
        // of contents, not a heading.
        let contents = para.get(1).is_some_and(|l| {
            let next = text(l).trim();
            next.starts_with(|c: char| c.is_ascii_digit())
                && heading_level(next).is_some_and(|n| Some(n) == heading_level(first))
        });
        let wraps_on = contents
            || para
                .get(1)
                .is_some_and(|l| continues_sentence(text(&para[0]), text(l)));
        if let Some(level) = heading_level(first).filter(|_| !next_is_item && !wraps_on) {
            let heading = crate::label::bounded(first);
            blocks.push(Block::leaf(
                Kind::Heading {
                    level,
                    text: heading,
                },
                para[0].clone(),
            ));
            rest = &para[1..];
        }
        if rest.is_empty() {
            p += 1;
            continue;
        }
        if rest.len() == para.len()
            && let Some(head) = entry_head(source, rest)
        {
            let margin = indent(text(&rest[head]));
            let mut children = Vec::new();
            if let Some(body) = rest.get(head + 1..).filter(|b| !b.is_empty()) {
                children.extend(para_blocks(source, body));
            }
            let mut q = p + 1;
            while q < paras.len()
                && rules.peek().is_none_or(|(before, _)| *before > q)
                && underlined.binary_search(&q).is_err()
                && paras[q].iter().all(|l| indent(text(l)) > margin)
            {
                children.extend(para_blocks(source, paras[q]));
                q += 1;
            }
            if !children.is_empty() {
                let end = children.last().map_or(rest[head].end, |c| c.range.end);
                blocks.push(Block {
                    kind: Kind::Container {
                        marker: rest[0].start..rest[head].end,
                    },
                    range: rest[0].start..end,
                    children,
                });
                p = q;
                continue;
            }
        }
        blocks.extend(para_blocks(source, rest));
        p += 1;
    }
    blocks.extend(rules.map(|(_, rule)| Block::leaf(Kind::Other, rule)));
    (title, blocks)
}

/// The blocks of one paragraph's lines: a paragraph, or an intro paragraph and a list.
fn para_blocks(source: &str, rest: &[Range<usize>]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let range = rest[0].start..rest[rest.len() - 1].end;
    // An intro line followed by item lines: paragraph + list.
    let item_start = rest
        .iter()
        .position(|l| list_marker(&source[l.clone()]).is_some());
    match item_start {
        Some(k) => {
            if k > 0 {
                blocks.push(Block::leaf(Kind::Paragraph, rest[0].start..rest[k - 1].end));
            }
            let mut items: Vec<Block> = Vec::new();
            for l in &rest[k..] {
                if list_marker(&source[l.clone()]).is_some() || items.is_empty() {
                    items.push(Block::leaf(Kind::Item, l.clone()));
                } else if let Some(last) = items.last_mut() {
                    last.range.end = l.end;
                }
            }
            blocks.push(Block {
                kind: Kind::List,
                range: rest[k].start..range.end,
                children: items,
            });
        }
        None => blocks.push(Block::leaf(Kind::Paragraph, range)),
    }
    blocks
}

/// The line of `para` that heads an entry with a hanging indent: the paragraph's least
/// indented line, once, with every line after it (if any) indented further and every line
/// before it too (Vim's right-aligned `*tags*`), and not a list item. Entries without text
/// below them in the paragraph are judged by the caller, which looks at what follows.
fn entry_head(source: &str, para: &[Range<usize>]) -> Option<usize> {
    let indents: Vec<usize> = para.iter().map(|l| indent(&source[l.clone()])).collect();
    let margin = *indents.iter().min()?;
    let head = indents.iter().position(|&d| d == margin)?;
    let alone = indents.iter().filter(|&&d| d == margin).count() == 1;
    let head_text = &source[para[head].clone()];
    (alone
        && list_marker(head_text).is_none()
        && head_text.trim().chars().count() <= 2 * MAX_HEADING_CHARS)
        .then_some(head)
}

/// Columns of leading whitespace, a tab counting to the next multiple of 8.
fn indent(line: &str) -> usize {
    let mut col = 0;
    for c in line.chars() {
        match c {
            ' ' => col += 1,
            '\t' => col = (col / 8 + 1) * 8,
            _ => break,
        }
    }
    col
}

/// The sign of a rule line: one sign of [`RULE_SIGNS`], repeated, nothing else.
fn rule_sign(line: &str) -> Option<char> {
    let t = line.trim();
    let sign = t.chars().next().filter(|c| RULE_SIGNS.contains(c))?;
    (t.chars().count() >= MIN_RULE_CHARS && t.chars().all(|c| c == sign)).then_some(sign)
}

/// Whether `rule` underlines `line`: three or more `=` or `-`, about as long as the line's text.
fn underlines(line: &str, rule: &str) -> bool {
    let (t, r) = (line.trim(), rule.trim());
    let (chars, signs) = (t.chars().count(), r.chars().count());
    let sign = r.chars().next().filter(|c| matches!(c, '=' | '-'));
    sign.is_some_and(|sign| signs >= 3 && r.chars().all(|c| c == sign))
        && indent(line) == indent(rule)
        && short_non_sentence(t)
        && signs * 2 >= chars
        && signs <= chars * 2
}

/// Whether `line` is only Vim help tags (`*:earlier*  *:ea*`), which name the entry below.
fn is_tag_line(line: &str) -> bool {
    let mut tokens = line.split_whitespace().peekable();
    tokens.peek().is_some() && tokens.all(|t| t.len() > 2 && t.starts_with('*') && t.ends_with('*'))
}

/// Whether `line` carries on the sentence of `above`: at the same margin, in lower case. (A
/// man page's `NAME` has its text indented below it.)
fn continues_sentence(above: &str, line: &str) -> bool {
    indent(above) == indent(line)
        && line
            .trim_start()
            .chars()
            .next()
            .is_some_and(char::is_lowercase)
}

/// Length of a list marker ("1. ", "2) ", "- ", "* ", "• ", "a) ") at the start of `line`.
fn list_marker(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    for bullet in ["- ", "* ", "• ", "+ "] {
        if t.starts_with(bullet) {
            return Some(indent + bullet.len());
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let letter = if digits == 0 {
        t.bytes().take(1).filter(u8::is_ascii_lowercase).count()
    } else {
        0
    };
    let n = digits + letter;
    if n == 0 || n > 3 {
        return None;
    }
    let rest = &t[n..];
    if (rest.starts_with(". ") || rest.starts_with(") ")) && !is_heading_shaped(t) {
        return Some(indent + n + 2);
    }
    None
}

/// Numbered, short, not ending like a sentence: a heading shape ignoring the title rule.
fn is_heading_shaped(t: &str) -> bool {
    heading_level(t).is_some()
}

/// Section level of a heading line: 1 for "3. Safety Stock" or "SCOPE", 2 for "3.1 Inputs", ...
fn heading_level(t: &str) -> Option<u8> {
    if !short_non_sentence(t) {
        return None;
    }
    // Numbered: digit groups separated by dots, optional trailing dot, then a space and a title.
    let mut level = 0u8;
    let mut rest = t;
    loop {
        let d = rest.bytes().take_while(u8::is_ascii_digit).count();
        if d == 0 || d > 3 {
            break;
        }
        level = level.saturating_add(1);
        rest = &rest[d..];
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
        } else {
            break;
        }
    }
    if level > 0 {
        let title = rest.strip_prefix(' ')?.trim();
        let starts_upper = title.chars().next().is_some_and(|c| c.is_uppercase());
        // "1. When starting Vim initializations are read from various places. See": a
        // sentence ends inside, so this is a wrapped numbered paragraph.
        let sentence_inside = [". ", "? ", "! "].iter().any(|end| title.contains(end));
        return (starts_upper && !sentence_inside).then_some(level.min(6));
    }
    // Unnumbered: all capitals, at least two letters ("SCOPE", "EXCEPTIONS"), starting with one
    // (`*CTRL-R*` is a tag, not a heading).
    let letters: Vec<char> = t.chars().filter(|c| c.is_alphabetic()).collect();
    let starts_alphanumeric = t.chars().next().is_some_and(char::is_alphanumeric);
    (starts_alphanumeric && letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase()))
        .then_some(1)
}

fn short_non_sentence(t: &str) -> bool {
    !t.is_empty()
        && t.chars().count() <= MAX_HEADING_CHARS
        && t.split_whitespace().count() <= MAX_HEADING_WORDS
        && !t.ends_with(['.', '!', '?', ';', ',', ':'])
}

fn is_title_like(t: &str) -> bool {
    short_non_sentence(t) && t.chars().next().is_some_and(|c| c.is_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each top-level block as its kind and first line.
    fn outline(src: &str) -> Vec<String> {
        let (_, blocks) = parse(src, 0..src.len());
        blocks
            .iter()
            .map(|b| {
                let first = src[b.range.clone()].lines().next().unwrap_or("").trim();
                match &b.kind {
                    Kind::Heading { level, text } => format!("h{level} {text}"),
                    Kind::Container { marker } => {
                        let head = src[marker.clone()].lines().last().unwrap_or("").trim();
                        format!("entry {head} ({} parts)", b.children.len())
                    }
                    kind => format!("{kind:?} {first}"),
                }
            })
            .collect()
    }

    #[test]
    fn vim_help_sections_and_entries() {
        let src = "*undo.txt*\tFor Vim version 9.0.\n\n\
            ==============================================================================\n\
            1. Undo and redo commands\t\t\t\t*undo-commands*\n\n\
            \t\t\t\t\t\t\t*:ea* *:earlier*\n\
            :earlier {N}f\t\tGo to older text state {N} file writes before.\n\
            \t\t\tWhen changes were made since the last write\n\
            \t\t\t\":earlier 1f\" will revert the text.\n\n\
            \t\t\tWhen at the state of the first file write it goes\n\
            \t\t\tto before the first change.\n\
            \t\t\t\t\t\t\t*CTRL-R*\n\
            CTRL-R\t\t\tRedo [count] changes which were undone.\n\n\
            1. When starting Vim initializations are read from various places.  See\n\
            \x20  |initialization|.  Most of them are performed for all sessions.\n\n\
            1. Setting options\t\t|set-option|\n\
            2. Automatically setting options\t|auto-setting|\n";
        assert_eq!(
            outline(src),
            [
                "Paragraph *undo.txt*\tFor Vim version 9.0.",
                "Other ==============================================================================",
                "h1 1. Undo and redo commands *undo-commands*",
                "entry :earlier {N}f\t\tGo to older text state {N} file writes before. (2 parts)",
                "Paragraph *CTRL-R*",
                "List 1. When starting Vim initializations are read from various places.  See",
                "Paragraph 1. Setting options\t\t|set-option|",
            ]
        );
    }

    #[test]
    fn underlined_headings_man_pages_and_wrapped_steps() {
        let src = "Installation\n============\n\nRun the installer.\n\n\
            Upgrading\n---------\n\nStop the service first.\n\n\
            NAME\n       ls - list directory contents\n\n\
            2. Configure the proxy so that all outgoing\n\
            requests use TLS.\n";
        assert_eq!(
            outline(src),
            [
                "h1 Installation",
                "Paragraph Run the installer.",
                "h2 Upgrading",
                "Paragraph Stop the service first.",
                "h1 NAME",
                "Paragraph ls - list directory contents",
                "Paragraph 2. Configure the proxy so that all outgoing",
            ]
        );
    }
}
