//! Quarto (`.qmd`) and R Markdown (`.Rmd`) pages are indexed by default, as the Markdown they
//! are, with the real binary and model: quartodoc's Quarto docs (its PyPI sdist) and dplyr's R
//! Markdown vignettes (Debian's `r-cran-dplyr`), every page indexed under its front-matter
//! title and sections, callouts and executable code blocks whole in their chunks.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use serde_json::Value;

fn text(chunk: &Value) -> &str {
    chunk["text"].as_str().unwrap()
}

/// Syncs `docs` with no file failing and returns every chunk of the pages ending in `ext`
/// (any case), checking that each of the `pages` such files was indexed.
fn sync_pages(docs: &Path, index: &Path, ext: &str, pages: usize) -> Vec<Value> {
    let report = sync(docs, index, 0);
    assert_eq!(report["files"]["failed"], 0, "{report}");
    let of_pages: Vec<Value> = dump(index)
        .into_iter()
        .filter(|c| {
            c["path"]
                .as_str()
                .unwrap()
                .to_ascii_lowercase()
                .ends_with(ext)
        })
        .collect();
    let indexed: BTreeSet<&str> = of_pages
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(indexed.len(), pages, "{ext} pages indexed: {indexed:?}");
    of_pages
}

#[test]
fn quarto_docs_are_indexed_by_default_with_sections_and_callouts() {
    let docs = pypi_sdist("quartodoc", "0.11.1").join("docs");
    let pages = count_files(&docs, "qmd");
    assert!(pages >= 20, "{pages} .qmd pages in quartodoc's docs");
    let work = tempfile::tempdir().unwrap();
    let chunks = sync_pages(&docs, &work.path().join("idx"), ".qmd", pages);
    // Read as Markdown: most chunks sit under a section of their page.
    let below = chunks
        .iter()
        .filter(|c| c["heading_path"].as_array().unwrap().len() > 1)
        .count();
    assert!(
        below * 2 > chunks.len(),
        "{below} of {} under a section",
        chunks.len()
    );
    // A callout (a Pandoc fenced div) is one box with its text.
    let callout = chunks
        .iter()
        .find(|c| text(c).contains(":::{.callout-tip title=\"Guide pages on each linking style\"}"))
        .expect("a chunk holds the crossrefs callout");
    assert!(
        text(callout).contains("Here are some examples of different linking styles"),
        "{callout}"
    );
    // The front matter's title leads the breadcrumb.
    assert!(
        chunks
            .iter()
            .any(|c| c["path"] == "get-started/architecture.qmd"
                && c["heading_path"][0] == "Architecture")
    );
}

#[test]
fn r_markdown_vignettes_are_indexed_by_default_with_their_code_chunks() {
    let vignettes = debian_package("r-cran-dplyr").join("usr/lib/R/site-library/dplyr/doc");
    let pages = count_files(&vignettes, "Rmd");
    assert!(pages >= 5, "{pages} .Rmd vignettes in r-cran-dplyr");
    let work = tempfile::tempdir().unwrap();
    let docs = work.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for entry in std::fs::read_dir(&vignettes).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "Rmd") {
            std::fs::copy(&path, docs.join(path.file_name().unwrap())).unwrap();
        }
    }
    let chunks = sync_pages(&docs, &work.path().join("idx"), ".rmd", pages);
    let grouping: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["path"] == "grouping.Rmd")
        .collect();
    assert!(!grouping.is_empty());
    for c in &grouping {
        assert_eq!(c["heading_path"][0], "Grouped data", "{c}");
    }
    // A knitr code chunk is fenced code, kept with the sentence that introduces it.
    let tally = grouping
        .iter()
        .find(|c| text(c).contains("by_species %>% tally()"))
        .expect("a chunk holds the tally() example");
    assert!(
        text(tally).contains("```{r}") && text(tally).contains("Or use `tally()`"),
        "{tally}"
    );
    let top = top_hit(
        &work.path().join("idx"),
        "count the rows in each group, largest first",
    );
    assert_eq!(top["path"], "grouping.Rmd", "{top}");
}
