//! Jupyter notebooks through the whole lifecycle with the real binary and model: indexed by
//! default (`.ipynb`), a code cell whole with what it printed, headings from Markdown cells,
//! byte ranges in the JSON file, a damaged notebook refused by name while the rest is indexed,
//! and nbsphinx's documentation (32 notebooks, from its PyPI sdist) answering every question of
//! `benches/questions/notebook-docs.jsonl` whole in one chunk.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// The notebooks of `rag-formats`' notebook tests.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/formats/tests/fixtures")
        .join(name)
}

fn text(chunk: &Value) -> &str {
    chunk["text"].as_str().unwrap()
}

#[test]
fn notebooks_are_indexed_by_default_with_code_and_output_together_and_ranges_in_the_file() {
    let source = std::fs::read_to_string(fixture("forecast.ipynb")).unwrap();
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(docs.join("old")).unwrap();
    std::fs::copy(fixture("forecast.ipynb"), docs.join("forecast.ipynb")).unwrap();
    std::fs::copy(fixture("legacy_v3.ipynb"), docs.join("old/legacy.ipynb")).unwrap();
    // Cut off mid-file (a notebook saved while the disk filled): refused by name.
    std::fs::write(docs.join("cut.ipynb"), &source[..source.len() / 2]).unwrap();
    let index = work.path().join("idx");
    let report = sync(&docs, &index, 1);
    assert_eq!(report["files"]["added"], 2, "{report}");
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["path"], "cut.ipynb");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("not a valid notebook file"),
        "{report}"
    );

    let chunks = dump(&index);
    let page: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["path"] == "forecast.ipynb")
        .collect();
    for c in &page {
        assert_eq!(c["metadata"]["format"], "notebook", "{c}");
        assert_eq!(c["metadata"]["language"], "python", "{c}");
    }
    // The code that loads the data and what it printed are one chunk, under the Markdown
    // cell's heading.
    let loading = page
        .iter()
        .find(|c| text(c).contains("pd.read_csv(\"rentals.csv\""))
        .expect("a chunk holds the loading cell");
    assert!(
        text(loading).contains("17379 rows, 42 stations"),
        "{loading}"
    );
    assert_eq!(
        loading["heading_path"].as_array().unwrap().last().unwrap(),
        "Loading the data"
    );
    // No image data was indexed.
    assert!(!chunks.iter().any(|c| text(c).contains("iVBORw0KGgo")));
    // Byte ranges point into the JSON file.
    let hit = page
        .iter()
        .find(|c| text(c).contains("The seasonal period is 24 hours."))
        .unwrap();
    let range = hit["byte_range"].as_array().unwrap();
    let range = range[0].as_u64().unwrap() as usize..range[1].as_u64().unwrap() as usize;
    assert!(
        source[range].contains("The seasonal period is 24 hours."),
        "{hit}"
    );

    let top = top_hit(&index, "error raised for a negative forecast horizon");
    assert_eq!(top["path"], "forecast.ipynb", "{top}");
    assert!(
        text(&top).contains("ValueError: hours must be positive, got -1"),
        "{top}"
    );
    let top = top_hit(&index, "what is the sum of the numbers below ten");
    assert_eq!(top["path"], "old/legacy.ipynb", "{top}");
    assert!(
        text(&top).contains("sum(range(10))") && text(&top).contains("45"),
        "{top}"
    );
}

/// nbformat's own test notebooks (its PyPI sdist): every version it reads (2, 3, 4.0-4.5), with
/// and without worksheets, metadata or cell ids, some invalid by its schema. Each is indexed;
/// none fails the sync.
#[test]
fn nbformat_test_notebooks_of_every_version_are_indexed() {
    let tests = pypi_sdist("nbformat", "5.11.1").join("tests");
    let notebooks = count_files(&tests, "ipynb");
    assert!(notebooks >= 15, "{notebooks} notebooks in nbformat's tests");
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for entry in std::fs::read_dir(&tests).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "ipynb") {
            std::fs::copy(&path, docs.join(path.file_name().unwrap())).unwrap();
        }
    }
    let index = work.path().join("idx");
    let report = sync(&docs, &index, 0);
    assert_eq!(report["files"]["failed"], 0, "{report}");
    let chunks = dump(&index);
    // nbformat 2 wrote a cell's lines without their newlines: they are joined with them, as
    // nbformat joins them, not run together ("modesof interaction").
    let tour = chunks
        .iter()
        .find(|c| c["path"] == "test2.ipynb" && text(c).contains("allows for new modes"))
        .expect("the nbformat 2 notebook is indexed");
    assert!(
        text(tour).contains("allows for new modes\nof interaction with IPython"),
        "{tour}"
    );
    // nbformat 3 and 4 copies of the same notebook read alike.
    for name in ["test3.ipynb", "test4.ipynb", "test4.5.ipynb"] {
        assert!(
            chunks
                .iter()
                .any(|c| c["path"] == name && c["heading_path"][0] == "nbconvert latex test"),
            "{name}"
        );
    }
}

#[test]
fn nbsphinx_notebook_docs_index_every_notebook_with_each_answer_whole_in_one_chunk() {
    let docs = pypi_sdist("nbsphinx", "0.9.8").join("doc");
    let notebooks = count_files(&docs, "ipynb");
    assert_eq!(notebooks, 32, "the nbsphinx 0.9.8 docs have 32 notebooks");
    let work = tempfile::tempdir().unwrap();
    let chunks = sync_every_page(&docs, &work.path().join("idx"), "notebook", notebooks);
    assert_every_answer_whole_in_one_chunk(&chunks, "benches/questions/notebook-docs.jsonl");
}
