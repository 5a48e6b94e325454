//! Boundary stability: editing one section leaves every other section's chunks (ids, texts) as
//! they were, so an index re-embeds only what changed.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use rag_chunker::Document;

type Sections = BTreeMap<Vec<String>, BTreeSet<(String, String)>>;

fn sections(doc: &Document) -> Sections {
    let mut out = Sections::new();
    for c in &doc.chunks {
        out.entry(c.heading_path.clone())
            .or_default()
            .insert((c.id.clone(), c.text.clone()));
    }
    out
}

/// Byte offsets just after each ATX heading line (outside fences) that has text under it.
fn insertion_points(src: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut pos = 0;
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        pos += line.len();
        let next_content = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
        if !in_fence && line.starts_with('#') && next_content.is_some_and(|l| !l.starts_with('#')) {
            out.push(pos);
        }
    }
    out
}

fn check_file(rel: &str, min_sections: usize) {
    let chunker = common::chunker();
    let src = std::fs::read_to_string(format!("{}/{rel}", common::CORPUS)).expect("file");
    let before = chunker.chunk(rel, &src).expect("chunk");
    let base = sections(&before);
    let points = insertion_points(&src);
    assert!(
        points.len() >= min_sections,
        "{rel}: {} sections",
        points.len()
    );
    const PARA: &str = "\nThis paragraph was inserted by the boundary stability test.\n";
    for &at in &points {
        let edited = format!("{}{PARA}{}", &src[..at], &src[at..]);
        let after = chunker.chunk(rel, &edited).expect("chunk");
        let hit: Vec<_> = after
            .chunks
            .iter()
            .filter(|c| c.text.contains(PARA.trim()))
            // Right before a keyed table the paragraph is also the caption of its row records.
            .filter(|c| !c.metadata.contains_key("record"))
            .collect();
        // Two chunks when the next chunk of the section carries the paragraph over; never two
        // sections.
        assert!((1..=2).contains(&hit.len()), "{rel}@{at}: {}", hit.len());
        let touched = &hit[0].heading_path;
        assert!(hit.iter().all(|c| &c.heading_path == touched), "{rel}@{at}");
        let changed = sections(&after);
        for (path, set) in &base {
            if path != touched {
                assert_eq!(
                    changed.get(path),
                    Some(set),
                    "{rel}@{at}: edit in {touched:?} changed {path:?}"
                );
            }
        }
        assert_eq!(changed.len(), base.len(), "{rel}@{at}: section count");
    }
}

#[test]
fn inserting_a_paragraph_changes_only_its_section() {
    check_file("migrate/nginx-to-traefik.md", 25);
    check_file("migrate/v3.md", 40);
    check_file(
        "reference/routing-configuration/http/load-balancing/service.md",
        20,
    );
}
