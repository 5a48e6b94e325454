//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use rag_formats::{Converted, Format, convert};

pub const CODE_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpora/code");

/// The 19 source files of the code corpus, relative to `docs/`, sorted.
pub fn corpus_files() -> Vec<String> {
    let docs = Path::new(CODE_CORPUS).join("docs");
    let mut out = Vec::new();
    let mut stack = vec![docs.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus dir") {
            let p: PathBuf = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("py" | "rs")) {
                out.push(
                    p.strip_prefix(&docs)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

pub fn read_corpus(rel: &str) -> Vec<u8> {
    std::fs::read(Path::new(CODE_CORPUS).join("docs").join(rel)).expect("corpus file")
}

pub fn convert_path(rel: &str, bytes: &[u8]) -> Converted {
    let format = Format::from_path(rel).expect("known extension");
    convert(format, bytes).expect("converts")
}

pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Heading path (as the chunker reads it with pulldown-cmark) in force at byte `offset`.
pub fn heading_path_at(md: &str, offset: usize) -> Vec<String> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (event, range) in Parser::new(md).into_offset_iter() {
        if range.start > offset {
            break;
        }
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some((level as usize, String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, s)) = &mut current {
                    s.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = current.take() {
                    stack.retain(|(l, _)| *l < level);
                    stack.push((level, text));
                }
            }
            _ => {}
        }
    }
    stack.into_iter().map(|(_, t)| t).collect()
}

/// Every heading of `md` as (level, text), read with pulldown-cmark.
pub fn headings(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for event in Parser::new(md) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some((level as usize, String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, s)) = &mut current {
                    s.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

/// Checks the span invariants and that every non-blank source line is inside a span, in order.
pub fn assert_every_line_in_order(src: &str, doc: &Converted) {
    let mut prev_md = 0;
    let mut prev_src = 0;
    let mut covered = vec![false; src.len() + 1];
    for s in &doc.spans {
        let r = s.source.clone().expect("code spans have a source");
        assert!(
            s.markdown.start >= prev_md,
            "spans sorted and disjoint in markdown"
        );
        assert!(r.start >= prev_src, "spans in source order");
        assert_eq!(
            &doc.markdown[s.markdown.clone()],
            &src[r.clone()],
            "span text is verbatim"
        );
        covered[r.clone()].iter_mut().for_each(|c| *c = true);
        prev_md = s.markdown.end;
        prev_src = r.end;
    }
    let mut pos = 0;
    for line in src.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        if line.trim().is_empty() {
            continue;
        }
        assert!(
            covered[start..pos - usize::from(line.ends_with('\n'))]
                .iter()
                .all(|&c| c),
            "line not in any span: {line:?}"
        );
    }
    // And plainly: the lines occur in the Markdown in order.
    let mut at = 0;
    for line in src.lines().filter(|l| !l.trim().is_empty()) {
        let found = doc.markdown[at..]
            .find(line)
            .unwrap_or_else(|| panic!("missing in order: {line:?}"));
        at += found + line.len();
    }
}

/// Texts of the fenced blocks of `doc`: runs of spans that touch in the Markdown.
pub fn blocks(doc: &Converted) -> Vec<&str> {
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for s in &doc.spans {
        match ranges.last_mut() {
            Some(r) if r.end == s.markdown.start => r.end = s.markdown.end,
            _ => ranges.push(s.markdown.clone()),
        }
    }
    ranges.into_iter().map(|r| &doc.markdown[r]).collect()
}

/// The fenced block containing `needle`, with its provenance.
pub fn block_with<'a>(doc: &'a Converted, needle: &str) -> (&'a str, std::ops::Range<usize>) {
    let at = doc.markdown.find(needle).expect("needle in the Markdown");
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    for s in &doc.spans {
        match ranges.last_mut() {
            Some(r) if r.end == s.markdown.start => r.end = s.markdown.end,
            _ => ranges.push(s.markdown.clone()),
        }
    }
    let r = ranges
        .into_iter()
        .find(|r| r.contains(&at))
        .expect("needle inside a fenced block");
    let source = doc
        .provenance(r.clone())
        .source
        .expect("block has a source");
    (&doc.markdown[r], source)
}

/// Byte offsets of the heading lines of `md` (as pulldown-cmark reads them).
pub fn heading_offsets(md: &str) -> Vec<usize> {
    Parser::new(md)
        .into_offset_iter()
        .filter_map(|(e, r)| matches!(e, Event::Start(Tag::Heading { .. })).then_some(r.start))
        .collect()
}
