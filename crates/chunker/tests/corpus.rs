//! Invariants over every file of the Traefik corpus, with the real tokenizer.

mod common;

use rag_chunker::{Chunk, Document};

/// With row records on, so their invariants are checked too.
fn chunk_all() -> Vec<(String, String, Document)> {
    let chunker = common::chunker_with_records();
    common::corpus()
        .into_iter()
        .map(|(path, src)| {
            let doc = chunker.chunk(&path, &src).expect("chunk");
            (path, src, doc)
        })
        .collect()
}

/// Collapses whitespace, and table delimiter rows to their compact embedded form.
fn normalize(s: &str) -> String {
    let lines: Vec<String> = s
        .lines()
        .map(|l| {
            let t = l.trim();
            let delim =
                t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'));
            if delim {
                let mut out = String::new();
                for c in t.chars().filter(|c| !c.is_whitespace()) {
                    if !(c == '-' && out.ends_with("---")) {
                        out.push(c);
                    }
                }
                out
            } else {
                l.to_string()
            }
        })
        .collect();
    lines
        .join("\n")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `body` is in `text`, where blobs (base64 runs, data URIs) may stand in `text` as
/// their placeholder: the text around each placeholder must then be in `body`, in order.
fn verbatim_but_blobs(text: &str, body: &str) -> bool {
    const END: &str = " bytes omitted]";
    if !text.contains(END) {
        return text.contains(body);
    }
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(END) {
        let start = rest[..end].rfind('[').unwrap_or(end);
        pieces.push(&rest[..start]);
        rest = &rest[end + END.len()..];
    }
    pieces.push(rest);
    let mut at = 0;
    for piece in pieces {
        match body[at..].find(piece.trim()) {
            Some(found) => at += found + piece.trim().len(),
            None => return false,
        }
    }
    true
}

fn fence_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            // A backtick fence's info string cannot contain backticks (CommonMark), so a line
            // like "```a``` |" is an inline code span, not a fence.
            let t = l.trim_start();
            (t.starts_with("```") && !t.trim_start_matches('`').contains('`'))
                || t.starts_with("~~~")
        })
        .count()
}

#[test]
fn corpus_invariants() {
    let hf = common::hf();
    let docs = chunk_all();
    assert_eq!(docs.len(), 171);
    let (mut n, mut sum, mut max) = (0usize, 0usize, 0usize);
    let (mut records, mut tables) = (0usize, std::collections::BTreeSet::new());
    for (path, src, doc) in &docs {
        for (i, c) in doc.chunks.iter().enumerate() {
            let real = rag_chunker::TokenCounter::count(hf.as_ref(), &c.text);
            assert_eq!(c.tokens, real, "{path} #{i}: reported vs real token count");
            assert!(real <= 256, "{path} #{i}: {real} tokens");
            assert_eq!(c.ordinal, i);
            assert_eq!(c.hash, blake3::hash(c.text.as_bytes()).to_hex().to_string());
            assert_eq!(c.id.len(), 32);
            if c.metadata.contains_key("record") {
                check_record(path, i, src, c);
                records += 1;
                tables.insert((path.clone(), c.metadata["table_group"].to_string()));
                continue;
            }
            let body = &src[c.byte_range.clone()];
            assert!(
                verbatim_but_blobs(
                    &normalize(c.text.split_once("\n\n").map_or(&c.text, |(_, b)| b)),
                    &normalize(body)
                ),
                "{path} #{i}: body not verbatim in text"
            );
            assert_eq!(
                fence_lines(&c.text) % 2,
                0,
                "{path} #{i}: unbalanced fence\n{}",
                c.text
            );
            check_table_header(path, i, &c.text);
            let body = c.text.split_once("\n\n").map_or("", |(_, b)| b);
            assert!(
                body.lines()
                    .any(|l| !l.trim().is_empty() && !l.starts_with('#')),
                "{path} #{i}: heading alone:\n{}",
                c.text
            );
            assert!(
                c.text.starts_with(&c.heading_path.join(" > ")),
                "{path} #{i}: breadcrumb"
            );
            n += 1;
            sum += real;
            max = max.max(real);
        }
        check_coverage(path, src, &doc.chunks);
    }
    eprintln!(
        "corpus: {} files, {n} chunks, mean {:.1} tokens, max {max}; {records} row records of {} \
         tables",
        docs.len(),
        sum as f64 / n as f64,
        tables.len()
    );
    for (path, group) in &tables {
        eprintln!("  records: {path} {group}");
    }
    for (path, _, doc) in &docs {
        for w in &doc.warnings {
            eprintln!("  warning: {path}: {w}");
        }
    }
}

/// A row record follows the document's chunks, its range is one table row of the source, its key
/// is in that row, and a chunk of the document's own holds the row under the same group.
fn check_record(path: &str, i: usize, src: &str, c: &Chunk) {
    let row = &src[c.byte_range.clone()];
    assert!(
        !row.contains('\n'),
        "{path} #{i}: record range is not one line"
    );
    assert!(
        row.contains('|'),
        "{path} #{i}: record range is not a table row: {row:?}"
    );
    let key = c.metadata["row_key"].as_str().expect("row_key");
    assert!(!key.is_empty(), "{path} #{i}: empty key");
    assert_eq!(c.metadata["record"], "table_row");
    assert!(c.metadata.contains_key("key_column"));
    assert!(
        c.text.starts_with(&c.heading_path.join(" > ")),
        "{path} #{i}: breadcrumb"
    );
}

/// A chunk holding table rows holds their header: the first row is followed by the delimiter.
fn check_table_header(path: &str, i: usize, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_fence = false;
    for (k, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        if !in_fence && t.starts_with('|') {
            let next = lines.get(k + 1).map_or("", |n| n.trim());
            let delim =
                next.contains('-') && next.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
            assert!(delim, "{path} #{i}: table piece without header:\n{text}");
            return;
        }
    }
}

/// Every non-whitespace byte of the body (after front matter) lies in some chunk's byte range,
/// or is a heading the next chunk's breadcrumb names.
fn check_coverage(path: &str, src: &str, chunks: &[Chunk]) {
    let mut covered = vec![false; src.len()];
    for c in chunks {
        covered[c.byte_range.clone()]
            .iter_mut()
            .for_each(|b| *b = true);
    }
    let body_start = chunks.first().map_or(src.len(), |c| c.byte_range.start);
    // Front matter is not body: everything before the first chunk must be front matter.
    if body_start > 0 {
        let head = &src[..body_start];
        assert!(
            head.trim().is_empty() || head.trim_start().starts_with("---"),
            "{path}: lost head {head:?}"
        );
    }
    for (i, ch) in src[body_start..].char_indices() {
        let i = i + body_start;
        if !ch.is_whitespace() && !covered[i] && !common::heading_named_next(src, i, chunks) {
            let ctx = &src[i.saturating_sub(40)..(i + 40).min(src.len())];
            panic!("{path}: byte {i} not covered: {ctx:?}");
        }
    }
}

#[test]
fn deterministic() {
    let a = chunk_all();
    let b = chunk_all();
    for ((p, _, da), (_, _, db)) in a.iter().zip(&b) {
        assert_eq!(da, db, "{p}");
    }
}
