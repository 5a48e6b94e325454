//! Source-code conversion over the real corpus: the question evidence survives, inside one
//! fenced block, every line is kept in order, and the rendering of real files is pinned.

mod common;

use common::{assert_every_line_in_order, blocks, collapse, convert_path, read_corpus};

struct Question {
    id: String,
    source: String,
    evidence: Vec<String>,
}

fn questions() -> Vec<Question> {
    let path = format!("{}/questions.jsonl", common::CODE_CORPUS);
    std::fs::read_to_string(path)
        .expect("questions.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("question line");
            let s = |k: &str| v[k].as_str().expect("string field").to_string();
            Question {
                id: s("id"),
                source: s("source"),
                evidence: v["evidence"]
                    .as_array()
                    .expect("evidence list")
                    .iter()
                    .map(|e| e.as_str().expect("evidence string").to_string())
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn every_evidence_string_is_inside_one_fenced_block() {
    let qs = questions();
    assert_eq!(qs.len(), 20);
    for q in &qs {
        let doc = convert_path(&q.source, &read_corpus(&q.source));
        let whole = collapse(&doc.markdown);
        let blocks: Vec<String> = blocks(&doc).into_iter().map(collapse).collect();
        for ev in &q.evidence {
            let ev = collapse(ev);
            assert!(whole.contains(&ev), "{}: {ev:?} not in the Markdown", q.id);
            assert!(
                blocks.iter().any(|b| b.contains(&ev)),
                "{}: {ev:?} not inside one fenced block",
                q.id
            );
        }
    }
}

#[test]
fn all_evidence_of_a_question_shares_one_section() {
    // A chunk never crosses a heading: the answer's evidence must share a section.
    for q in &questions() {
        let doc = convert_path(&q.source, &read_corpus(&q.source));
        let sections: Vec<String> = split_sections(&doc.markdown)
            .into_iter()
            .map(collapse)
            .collect();
        assert!(
            sections
                .iter()
                .any(|s| q.evidence.iter().all(|e| s.contains(&collapse(e)))),
            "{}: evidence split across sections",
            q.id
        );
    }
}

/// Markdown split at heading lines outside fenced blocks.
fn split_sections(md: &str) -> Vec<&str> {
    let headings = common::heading_offsets(md);
    let mut cuts = headings;
    cuts.push(md.len());
    let mut out = Vec::new();
    let mut start = 0;
    for c in cuts {
        out.push(&md[start..c]);
        start = c;
    }
    out
}

#[test]
fn every_line_of_every_corpus_file_is_kept_in_order() {
    let files = common::corpus_files();
    assert_eq!(files.len(), 19);
    for rel in &files {
        let bytes = read_corpus(rel);
        let doc = convert_path(rel, &bytes);
        assert!(doc.warnings.is_empty(), "{rel}: {:?}", doc.warnings);
        assert_every_line_in_order(std::str::from_utf8(&bytes).unwrap(), &doc);
    }
}

#[test]
fn corpus_headings_are_read_back_as_written() {
    // pulldown-cmark (the chunker's parser) sees exactly the headings the converter wrote, with
    // their text unescaped: `impl<'s> Worker<'s>`, `def __init__`.
    for rel in common::corpus_files() {
        let doc = convert_path(&rel, &read_corpus(&rel));
        let written = doc.markdown.lines().filter(|l| l.starts_with('#')).count();
        let fenced_hash_lines: usize = blocks(&doc)
            .iter()
            .map(|b| b.lines().filter(|l| l.starts_with('#')).count())
            .sum();
        let read = common::headings(&doc.markdown);
        assert_eq!(read.len(), written - fenced_hash_lines, "{rel}");
        for (_, text) in &read {
            assert!(!text.contains('\\'), "{rel}: escape left in {text:?}");
        }
    }
    let doc = convert_path("walk.rs", &read_corpus("rust/ignore/src/walk.rs"));
    let texts: Vec<String> = common::headings(&doc.markdown)
        .into_iter()
        .map(|h| h.1)
        .collect();
    assert!(
        texts.contains(&"impl<'s> Worker<'s>".to_string()),
        "{texts:?}"
    );
    let doc = convert_path("d.py", &read_corpus("python/json/decoder.py"));
    let path = common::heading_path_at(
        &doc.markdown,
        doc.markdown
            .find("def __init__(self, *, object_hook")
            .unwrap(),
    );
    assert_eq!(path, ["class JSONDecoder", "def __init__"]);
}

#[test]
fn snapshot_rust_overrides() {
    let doc = convert_path("overrides.rs", &read_corpus("rust/ignore/src/overrides.rs"));
    insta::assert_snapshot!(doc.markdown);
}

#[test]
fn snapshot_python_decoder() {
    let doc = convert_path("decoder.py", &read_corpus("python/json/decoder.py"));
    insta::assert_snapshot!(doc.markdown);
}

#[test]
fn snapshot_outline_of_walk_rs_and_cookiejar_py() {
    // Headings only: the shape of the two largest files, each heading with its path.
    let mut out = String::new();
    for rel in ["rust/ignore/src/walk.rs", "python/http/cookiejar.py"] {
        let doc = convert_path(rel, &read_corpus(rel));
        out.push_str(&format!("== {rel}\n"));
        for (level, text) in common::headings(&doc.markdown) {
            out.push_str(&format!("{}{text}\n", "  ".repeat(level - 1)));
        }
    }
    insta::assert_snapshot!(out);
}
