//! AsciiDoc pages through the whole lifecycle with the real binary and model: indexed by
//! default (`.adoc`, `.asciidoc`), boxes and option entries whole in their chunks, byte ranges
//! in the file, a hostile page refused by name while the rest is indexed, and real AsciiDoc
//! docs from Debian (git-lfs's man pages, openQA's guides) answering every question of
//! `benches/questions/asciidoc-docs.jsonl` whole in one chunk.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// The handwritten page of `rag-formats`' AsciiDoc tests.
fn handbook() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/formats/tests/fixtures/handbook.adoc")
}

fn text(chunk: &Value) -> &str {
    chunk["text"].as_str().unwrap()
}

#[test]
fn asciidoc_pages_are_indexed_by_default_with_boxes_whole_and_ranges_in_the_file() {
    let source = std::fs::read_to_string(handbook()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(docs.join("ops")).unwrap();
    std::fs::copy(handbook(), docs.join("handbook.adoc")).unwrap();
    std::fs::write(
        docs.join("ops/rotation.asciidoc"),
        "= Key Rotation\n\n== Schedule\n\nTIP: Rotate the signing key every 90 days, \
         and keep the old key for one more day.\n",
    )
    .unwrap();
    // Nested a thousand levels deep: refused by name, the other pages indexed.
    let deep: String = (1..=1_000)
        .map(|level| format!("{} level\n", "*".repeat(level)))
        .collect();
    std::fs::write(docs.join("deep.adoc"), deep).unwrap();
    let index = work.path().join("idx");
    let report = sync(&docs, &index, 1);
    assert_eq!(report["files"]["added"], 2, "{report}");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["path"], "deep.adoc");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("AsciiDoc nesting depth"),
        "{report}"
    );

    let chunks = dump(&index);
    let page: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["path"] == "handbook.adoc")
        .collect();
    for c in &page {
        assert_eq!(c["metadata"]["format"], "asciidoc", "{c}");
    }
    // The warning's title and both paragraphs are one chunk, under its section.
    let warning = page
        .iter()
        .find(|c| text(c).contains("::: Warning: Upgrades from 1.x"))
        .expect("a chunk holds the warning");
    assert!(
        text(warning).contains("Stop every worker before you replace the binary.")
            && text(warning).contains("Workers left running keep the old queue format."),
        "{warning}"
    );
    assert_eq!(
        warning["heading_path"].as_array().unwrap().last().unwrap(),
        "Installing"
    );
    // An option's names and what it does, and a table row, read as the page shows them.
    assert!(
        page.iter()
            .any(|c| text(c).contains("- -q, --quiet: Print nothing but errors."))
    );
    assert!(
        page.iter()
            .any(|c| text(c).contains("max_jobs\t500\tJobs held before new ones are refused"))
    );
    // Byte ranges point into the .adoc file.
    let hit = page
        .iter()
        .find(|c| text(c).contains("Where queued jobs wait."))
        .unwrap();
    let range = hit["byte_range"].as_array().unwrap();
    let range = range[0].as_u64().unwrap() as usize..range[1].as_u64().unwrap() as usize;
    assert!(source[range].contains("Where queued jobs wait."), "{hit}");

    let top = top_hit(&index, "how often should the signing key be rotated");
    assert_eq!(top["path"], "ops/rotation.asciidoc", "{top}");
    assert!(text(&top).contains("::: Tip"), "{top}");
}

/// The corpus of `benches/unseen_asciidoc_docs.sh`: git-lfs's man pages as `git-lfs/` and
/// openQA's guides (gunzipped, as a docs site has them) as `openqa/`.
fn asciidoc_docs(into: &Path) {
    let lfs = debian_package("golang-github-git-lfs-git-lfs-dev")
        .join("usr/share/gocode/src/github.com/git-lfs/git-lfs/docs/man");
    let openqa = debian_package("openqa-doc").join("usr/share/doc/openqa");
    for (from, to) in [(lfs, "git-lfs"), (openqa, "openqa")] {
        let dest = into.join(to);
        std::fs::create_dir_all(&dest).unwrap();
        for entry in std::fs::read_dir(&from).unwrap().flatten() {
            if !entry.path().is_file() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            match name.strip_suffix(".gz") {
                Some(stem) => {
                    let gunzip = Command::new("gunzip")
                        .arg("-c")
                        .arg(entry.path())
                        .output()
                        .expect("gunzip runs");
                    assert!(gunzip.status.success(), "{name}");
                    std::fs::write(dest.join(stem), gunzip.stdout).unwrap();
                }
                None => {
                    std::fs::copy(entry.path(), dest.join(&name)).unwrap();
                }
            }
        }
    }
}

#[test]
fn real_asciidoc_docs_index_every_page_with_each_answer_whole_in_one_chunk() {
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    asciidoc_docs(&docs);
    let pages = ["git-lfs", "openqa"]
        .iter()
        .flat_map(|d| std::fs::read_dir(docs.join(d)).unwrap().flatten())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".adoc") || name.ends_with(".asciidoc")
        })
        .count();
    assert_eq!(pages, 47, "35 git-lfs man pages and 12 openQA guides");
    let chunks = sync_every_page(&docs, &work.path().join("idx"), "asciidoc", pages);
    // Every question (evidence as the rendered page words it; options, admonitions, listings
    // and tables among them) is answered whole by one chunk of its page.
    assert_every_answer_whole_in_one_chunk(&chunks, "benches/questions/asciidoc-docs.jsonl");
}
