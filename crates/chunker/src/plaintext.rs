//! Structure detection for `.txt`: blank-line paragraphs, numbered section headings, lists.
//!
//! A heading is a short line that is not a sentence: "3. Safety Stock", "3.1 Inputs", "SCOPE".
//! A numbered step ("1. Notify the category manager within 24 hours.") ends with punctuation, so
//! it stays a list item inside its section.

use std::ops::Range;

use crate::blocks::{Block, Kind};

const MAX_HEADING_CHARS: usize = 80;
const MAX_HEADING_WORDS: usize = 12;

/// Blocks of `source[body]` and, when the first line looks like a title, its text.
pub(crate) fn parse(source: &str, body: Range<usize>) -> (Option<String>, Vec<Block>) {
    let lines = crate::blocks::lines(source, body.clone());
    // Paragraphs: runs of non-blank lines.
    let mut paras: Vec<&[Range<usize>]> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if source[lines[i].clone()].trim().is_empty() {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && !source[lines[i].clone()].trim().is_empty() {
            i += 1;
        }
        paras.push(&lines[start..i]);
    }

    let mut title = None;
    let mut blocks = Vec::new();
    for (p, para) in paras.iter().enumerate() {
        let first = source[para[0].clone()].trim();
        let next_is_item = para
            .get(1)
            .is_some_and(|l| list_marker(&source[l.clone()]).is_some());
        let mut rest = *para;
        if p == 0 && title.is_none() && para.len() == 1 && is_title_like(first) {
            let text = crate::label::bounded(first);
            title = Some(text.clone());
            blocks.push(Block::leaf(
                Kind::Heading { level: 0, text },
                para[0].clone(),
            ));
            continue;
        }
        if let Some(level) = heading_level(first).filter(|_| !next_is_item) {
            let text = crate::label::bounded(first);
            blocks.push(Block::leaf(Kind::Heading { level, text }, para[0].clone()));
            rest = &para[1..];
        }
        if rest.is_empty() {
            continue;
        }
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
                let list = Block {
                    kind: Kind::List,
                    range: rest[k].start..range.end,
                    children: items,
                };
                blocks.push(list);
            }
            None => blocks.push(Block::leaf(Kind::Paragraph, range)),
        }
    }
    (title, blocks)
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
        return starts_upper.then_some(level.min(6));
    }
    // Unnumbered: all capitals, at least two letters ("SCOPE", "EXCEPTIONS").
    let letters: Vec<char> = t.chars().filter(|c| c.is_alphabetic()).collect();
    (letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase())).then_some(1)
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
