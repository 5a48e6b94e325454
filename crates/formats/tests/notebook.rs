//! The Jupyter notebook reader on notebooks written as Jupyter writes them (`fixtures/`: one
//! nbformat 4 notebook with every kind of cell and output, one nbformat 3), and on hostile
//! files. Real notebooks (nbsphinx's documentation) are read in the workspace's
//! `tests/notebook.rs`.

mod support;
use support::between;

use rag_formats::{Format, FormatError, convert};

#[path = "../benches/inputs/hostile_notebook.rs"]
mod hostile_notebook;
use hostile_notebook::hostile_notebooks;

const FORECAST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/forecast.ipynb");
const LEGACY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/legacy_v3.ipynb"
);

fn read(path: &str) -> (Vec<u8>, rag_formats::Converted) {
    let bytes = std::fs::read(path).unwrap();
    let format = Format::from_path(path).unwrap();
    assert_eq!(format, Format::Notebook);
    let converted = convert(format, &bytes).unwrap();
    (bytes, converted)
}

#[test]
fn cells_read_in_order_as_markdown_and_code_in_the_kernels_language() {
    let (_, nb) = read(FORECAST);
    assert_eq!(nb.title.as_deref(), Some("Forecasting bike rentals"));
    assert_eq!(nb.metadata["format"], "notebook");
    assert_eq!(nb.metadata["language"], "python");
    assert!(nb.warnings.is_empty(), "{:?}", nb.warnings);
    let md = &nb.markdown;
    // Markdown cells as written, headings included; the code after the cell that introduces
    // it, then what it printed.
    assert_eq!(
        between(md, "## Loading the data", "17379 rows, 42 stations"),
        [
            "## Loading the data",
            "",
            "The counts come from `rentals.csv`; timestamps are in UTC.",
            "",
            "```python",
            "import pandas as pd",
            "",
            "rentals = pd.read_csv(\"rentals.csv\", parse_dates=[\"hour\"])",
            "print(f\"{len(rentals)} rows, {rentals.station.nunique()} stations\")",
            "```",
            "",
            "```text",
            "17379 rows, 42 stations",
        ]
    );
    // A table shows its plain text, not its HTML.
    assert!(md.contains("mean     189.463088"), "{md}");
    assert!(!md.contains("<table>"), "{md}");
}

#[test]
fn outputs_read_as_the_page_shows_them() {
    let (_, nb) = read(FORECAST);
    let md = &nb.markdown;
    // A progress bar as last drawn, an error as its last traceback line, colours removed.
    assert!(
        md.contains("```text\n100%|##########| 100/100 [01:52<00:00]\n```"),
        "{md}"
    );
    assert!(!md.contains(" 50%|"), "{md}");
    assert!(
        md.contains("```text\nValueError: hours must be positive, got -1\n```"),
        "{md}"
    );
    assert!(!md.contains('\u{1b}'), "{md}");
    // A figure shows no text: neither its image data nor the `<Figure ...>` stand-in.
    assert!(
        !md.contains("iVBORw0KGgo") && !md.contains("<Figure"),
        "{md}"
    );
    // Markdown a cell displayed reads as Markdown.
    assert!(
        md.ends_with("\nMean absolute error: **23.4** rentals per hour\n"),
        "{md}"
    );
}

#[test]
fn a_cell_is_read_on_its_own_and_raw_cells_by_their_target() {
    let (_, nb) = read(FORECAST);
    let md = &nb.markdown;
    // The fence the cell leaves open closes with it, so the cells after it stay text.
    assert!(
        md.contains("model.forecast(hours=48).to_csv(\"forecast.csv\")\n```\n\n::: note\nThe forecast file is overwritten on every run.\n:::"),
        "{md}"
    );
    // A raw cell for LaTeX does not show on a page.
    assert!(!md.contains("clearpage"), "{md}");
}

#[test]
fn nbformat_3_worksheets_read_like_nbformat_4() {
    let (_, nb) = read(LEGACY);
    assert_eq!(nb.title.as_deref(), Some("Legacy walkthrough"));
    assert_eq!(
        nb.markdown,
        "# Legacy walkthrough\n\nOlder notebooks keep their cells in worksheets.\n\n## Counting\n\n\
         ```python\nsum(range(10))\n```\n\n```text\n45\n```\n\n\
         ```python\n1 / 0\n```\n\n```text\nZeroDivisionError: division by zero\n```\n"
    );
}

#[test]
fn provenance_points_at_the_json_strings_of_the_file() {
    let (bytes, nb) = read(FORECAST);
    let file = String::from_utf8(bytes).unwrap();
    for (text, quoted) in [
        ("timestamps are in UTC", "timestamps are in UTC."),
        ("parse_dates", "parse_dates=[\\\"hour\\\"]"),
        ("17379 rows", "17379 rows, 42 stations\\n"),
        ("hours must be positive", "hours must be positive, got -1"),
        ("overwritten on every run", "overwritten on every run."),
    ] {
        let at = nb.markdown.find(text).unwrap();
        let source = nb.provenance(at..at + text.len()).source.unwrap();
        assert!(
            file[source.clone()].contains(quoted),
            "{text}: {:?}",
            &file[source]
        );
    }
}

#[test]
fn hostile_notebooks_convert_within_bounds_or_are_refused_without_a_panic() {
    for (name, src) in hostile_notebooks() {
        let converted = match convert(Format::Notebook, src.as_bytes()) {
            Ok(c) => c,
            Err(e) => panic!("{name}: {e}"),
        };
        let md = &converted.markdown;
        match name {
            // What a cell printed is cut; the stand-in of an image shows nothing.
            "log of a million lines" | "progress redraws" | "colour codes" | "image data" => {
                assert!(md.len() < 10_000, "{name}: {} bytes", md.len())
            }
            "nested cells" => assert_eq!(
                converted.warnings,
                ["cell 1 is not a notebook cell and was left out"]
            ),
            // Cells of the wrong shape are named (the first ten), the rest is read.
            "wrong types" => {
                assert_eq!(
                    converted.warnings,
                    [
                        "cells 1, 2, 3, 6, 7, 8, 11, 12, 13, 16 and 149990 more are not notebook cells and were left out"
                    ]
                );
                assert!(
                    md.contains("```\nok\n```") && md.contains("\nraw\n"),
                    "{md:.200}"
                );
            }
            _ => assert!(md.len() <= src.len() * 2, "{name}"),
        }
    }
    for bad in [&b"\0\x01binary"[..], b"{\"cells\": [", b"# Not JSON"] {
        let e = convert(Format::Notebook, bad).unwrap_err();
        assert!(
            matches!(
                e,
                FormatError::Invalid {
                    format: "notebook",
                    ..
                }
            ),
            "{e}"
        );
    }
}
