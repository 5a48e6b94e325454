//! The corpora's question sets: every evidence string must be in the converted Markdown of its
//! source file (after collapsing whitespace, and reading GFM table rows as their cells' text, the
//! way the corpus checkers read the visible text).

use std::collections::BTreeMap;
use std::path::Path;

use rag_formats::{Format, convert};

const CORPORA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpora");

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Markdown as visible text: table pipes and delimiter rows out (outside code fences only).
fn visible(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let t = line.trim_start();
        if let Some(f) = &fence {
            if t.starts_with(f.as_str()) && t.trim_end().trim_start_matches('`').is_empty() {
                fence = None;
            } else {
                out.push_str(line);
            }
        } else if t.starts_with("```") {
            fence = Some(t.chars().take_while(|&c| c == '`').collect());
        } else if t.starts_with('|') {
            if !t.starts_with("|---") {
                let cells = t.trim_end().trim_start_matches('|').trim_end_matches('|');
                out.push_str(
                    &cells
                        .replace("\\|", "\u{1}")
                        .replace('|', " ")
                        .replace('\u{1}', "|"),
                );
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

struct Question {
    id: String,
    source: String,
    evidence: Vec<String>,
}

fn questions(corpus: &str) -> Vec<Question> {
    let text = std::fs::read_to_string(format!("{CORPORA}/{corpus}/questions.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Question {
                id: v["id"].as_str().unwrap().into(),
                source: v["source"].as_str().unwrap().into(),
                evidence: v["evidence"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e.as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
}

/// Failing question ids (with the missing strings) for `files[source]`'s Markdown.
fn failures(qs: &[Question], text_of: &mut dyn FnMut(&str) -> String) -> Vec<String> {
    let mut cache: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut failed = Vec::new();
    for q in qs {
        let (raw, vis) = cache.entry(q.source.clone()).or_insert_with(|| {
            let md = text_of(&q.source);
            (collapse(&md), collapse(&visible(&md)))
        });
        let missing: Vec<_> = q
            .evidence
            .iter()
            .map(|e| collapse(e))
            .filter(|e| !raw.contains(e.as_str()) && !vis.contains(e.as_str()))
            .collect();
        if !missing.is_empty() {
            failed.push(format!("{}: {:?}", q.id, missing));
        }
    }
    failed
}

fn markdown(path: &Path) -> String {
    let format = Format::from_path(path.to_str().unwrap()).unwrap();
    let bytes = std::fs::read(path).unwrap();
    convert(format, &bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .markdown
}

fn check_bash(ext: &str, allowed_failures: usize) {
    let qs = questions("bash");
    let path = Path::new(CORPORA).join(format!("bash/docs/bashref.{ext}"));
    let failed = failures(&qs, &mut |_| markdown(&path));
    eprintln!(
        "bash {ext}: {}/{} questions pass",
        qs.len() - failed.len(),
        qs.len()
    );
    for f in &failed {
        eprintln!("  {f}");
    }
    assert!(failed.len() <= allowed_failures, "{ext}: {failed:#?}");
}

#[test]
fn bash_html_evidence() {
    check_bash("html", 0);
}

#[test]
fn python_docs_html_evidence() {
    let qs = questions("python-docs");
    let docs = Path::new(CORPORA).join("python-docs/docs");
    let failed = failures(&qs, &mut |src| markdown(&docs.join(src)));
    eprintln!(
        "python-docs html: {}/{} questions pass",
        qs.len() - failed.len(),
        qs.len()
    );
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn bash_docx_evidence() {
    check_bash("docx", 0);
}

#[test]
fn bash_pdf_evidence() {
    check_bash("pdf", 0);
}
