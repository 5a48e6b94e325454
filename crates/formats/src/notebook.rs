//! Jupyter notebooks (`.ipynb`, nbformat 4, and the `worksheets` of nbformat 2 and 3) to
//! Markdown, in the order the page shows its cells: Markdown cells as written, code cells as
//! fenced code in the kernel's language followed by what they printed (see
//! `notebook_output`), raw cells by their declared type (reStructuredText and HTML through this
//! crate's readers, Markdown as written, other targets left out), nbformat 3 heading cells as
//! headings.
//!
//! The JSON is read by serde_json with every cell, line and output kept as a slice of the file
//! (`RawValue`), so each line of the Markdown points at the JSON string it came from, and
//! image data is never copied. A cell or output that is not what nbformat says is skipped with a
//! warning; the rest of the notebook is indexed. (The `nbformat` crate reads into owned typed
//! structs, so it has no byte positions, fails a notebook on one malformed cell, and reads no
//! nbformat 2.)

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::builder::MarkdownBuilder;
use crate::charset;
use crate::convert::{Converted, FormatError};
use crate::notebook_output::{Shown, shown_outputs};

/// The top level of a notebook file (unknown keys ignored).
#[derive(Deserialize)]
struct NotebookFile<'a> {
    #[serde(borrow, default)]
    cells: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    worksheets: Option<Vec<Worksheet<'a>>>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    /// The format's major version: nbformat reads a version 3 file without worksheets as a
    /// notebook with no cells.
    #[serde(borrow, default)]
    nbformat: Option<&'a RawValue>,
}

/// nbformat 2 and 3 hold their cells in worksheets (in practice one).
#[derive(Deserialize)]
struct Worksheet<'a> {
    #[serde(borrow, default)]
    cells: Vec<&'a RawValue>,
}

/// Notebook metadata this reader uses; each field is read on its own, so one of an unexpected
/// type costs only itself.
#[derive(Deserialize, Default)]
struct NotebookMetadata<'a> {
    #[serde(borrow, default)]
    kernelspec: Option<&'a RawValue>,
    #[serde(borrow, default)]
    language_info: Option<&'a RawValue>,
    #[serde(borrow, default)]
    title: Option<&'a RawValue>,
    /// nbformat 3's notebook name.
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
}

/// One cell, any nbformat version.
#[derive(Deserialize)]
struct Cell<'a> {
    #[serde(default)]
    cell_type: Option<String>,
    #[serde(borrow, default)]
    source: Option<&'a RawValue>,
    /// nbformat 2 and 3 code cells.
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    /// nbformat 3 heading cells.
    #[serde(default)]
    level: Option<u64>,
    #[serde(borrow, default)]
    outputs: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    /// nbformat 3 code cells name their language.
    #[serde(default)]
    language: Option<String>,
}

/// Metadata of a raw cell: the target its text is written for.
#[derive(Deserialize, Default)]
struct RawCellMetadata {
    #[serde(default)]
    raw_mimetype: Option<String>,
    /// What nbformat 3 called it.
    #[serde(default)]
    format: Option<String>,
}

pub(crate) fn convert(bytes: &[u8]) -> Result<Converted, FormatError> {
    charset::convert_text("notebook", bytes, |src| {
        let file: NotebookFile = serde_json::from_str(src).map_err(|e| invalid(e.to_string()))?;
        let metadata: NotebookMetadata = file
            .metadata
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_default();
        let cells: Vec<&RawValue> = match (file.cells, file.worksheets) {
            (Some(cells), _) => cells,
            (None, Some(sheets)) => sheets.into_iter().flat_map(|s| s.cells).collect(),
            (None, None) if file.nbformat.is_some() => Vec::new(),
            (None, None) => return Err(invalid("no cells (not a Jupyter notebook)".into())),
        };
        let language = kernel_language(&metadata);
        let mut page = Page {
            src,
            out: MarkdownBuilder::new(),
            language: language.clone(),
            title: None,
            skipped_cells: Vec::new(),
            unreadable_outputs: 0,
        };
        for (number, raw) in cells.iter().enumerate() {
            page.cell(number + 1, raw);
        }
        let title = page.title.clone().or_else(|| {
            [metadata.title, metadata.name]
                .into_iter()
                .flatten()
                .find_map(one_line)
        });
        let mut warnings = Vec::new();
        match page.skipped_cells.as_slice() {
            [] => {}
            [one] => warnings.push(format!(
                "cell {one} is not a notebook cell and was left out"
            )),
            many => {
                // A damaged file may have thousands: the first few name the place.
                let named: Vec<String> = many.iter().take(10).map(|n| n.to_string()).collect();
                let more = match many.len() - named.len() {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                warnings.push(format!(
                    "cells {}{more} are not notebook cells and were left out",
                    named.join(", ")
                ))
            }
        }
        match page.unreadable_outputs {
            0 => {}
            1 => warnings.push("1 cell output could not be read and was left out".into()),
            n => warnings.push(format!(
                "{n} cell outputs could not be read and were left out"
            )),
        }
        let mut converted = page.out.into_converted("notebook", title);
        if let Some(language) = language {
            converted
                .metadata
                .insert("language".into(), language.into());
        }
        converted.warnings = warnings;
        Ok(converted)
    })
}

fn invalid(reason: String) -> FormatError {
    FormatError::Invalid {
        format: "notebook",
        reason,
    }
}

/// The kernel's language, also the info string of every code block: `language_info.name`,
/// else `kernelspec.language`, lower-case.
fn kernel_language(metadata: &NotebookMetadata) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        language: Option<String>,
    }
    let read =
        |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<Named>(r.get()).ok());
    let name = read(metadata.language_info)
        .and_then(|i| i.name)
        .or_else(|| read(metadata.kernelspec).and_then(|k| k.language))?;
    let name = name.trim().to_ascii_lowercase();
    // An info string is one word.
    (!name.is_empty() && !name.contains(char::is_whitespace) && !name.contains('`')).then_some(name)
}

/// The language a cell magic on the first line runs its cell in (`%%bash`, `%%sql`, ...), as
/// Jupyter highlights it; None for other cells.
fn cell_magic_language(code: &str) -> Option<&'static str> {
    let magic = code.strip_prefix("%%")?;
    let name = magic.split_whitespace().next()?;
    Some(match name {
        "bash" => "bash",
        "sh" => "sh",
        "html" => "html",
        "javascript" | "js" => "javascript",
        "latex" => "latex",
        "markdown" => "markdown",
        "perl" => "perl",
        "ruby" => "ruby",
        "sql" => "sql",
        "svg" => "svg",
        "R" => "r",
        "julia" => "julia",
        "octave" => "octave",
        "cython" => "cython",
        _ => return None,
    })
}

/// A string value as one line of text.
fn one_line(raw: &RawValue) -> Option<String> {
    let text = serde_json::from_str::<String>(raw.get()).ok()?;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!line.is_empty()).then_some(line)
}

/// The page under construction.
struct Page<'a> {
    src: &'a str,
    out: MarkdownBuilder,
    language: Option<String>,
    /// The first level-1 heading of a Markdown cell.
    title: Option<String>,
    skipped_cells: Vec<usize>,
    unreadable_outputs: usize,
}

impl Page<'_> {
    fn cell(&mut self, number: usize, raw: &RawValue) {
        let Ok(cell) = serde_json::from_str::<Cell>(raw.get()) else {
            self.skipped_cells.push(number);
            return;
        };
        let source = cell.source.or(cell.input);
        let lines = match source.map(|s| MultiLine::read(self.src, s)) {
            Some(Ok(lines)) => lines,
            Some(Err(())) => {
                self.skipped_cells.push(number);
                return;
            }
            None => MultiLine::default(),
        };
        match cell.cell_type.as_deref() {
            Some("markdown") => self.markdown(&lines),
            Some("code") => {
                let language = cell_magic_language(&lines.text)
                    .map(str::to_string)
                    .or(cell.language.clone())
                    .or(self.language.clone());
                self.code(&lines, language.as_deref().unwrap_or(""));
                let outputs = cell.outputs.unwrap_or_default();
                let (shown, unreadable) = shown_outputs(self.src, &outputs);
                self.unreadable_outputs += unreadable;
                self.outputs(shown);
            }
            Some("raw") => self.raw(&cell, &lines),
            Some("heading") => self.heading(cell.level.unwrap_or(1), &lines),
            _ => self.skipped_cells.push(number),
        }
    }

    /// A Markdown cell as written. Jupyter renders every cell on its own, so a code fence the
    /// cell leaves open is closed at its end instead of swallowing the cells after it.
    fn markdown(&mut self, lines: &MultiLine) {
        if self.title.is_none() {
            self.title = lines.text.lines().find_map(level_one_heading);
        }
        self.out.end_block();
        let base = self.out.len();
        self.out.markup(&lines.text);
        for (range, source) in &lines.pieces {
            self.out
                .span(base + range.start..base + range.end, source.clone(), None);
        }
        if let Some(fence) = open_fence_at_end(&lines.text) {
            self.out.markup("\n");
            self.out.markup(&fence);
        }
        self.out.end_block();
    }

    fn code(&mut self, lines: &MultiLine, language: &str) {
        let pieces: Vec<_> = lines
            .pieces
            .iter()
            .map(|(range, source)| (range.clone(), source.clone(), None))
            .collect();
        self.out.code_block(language, &lines.text, &pieces);
    }

    fn outputs(&mut self, shown: Vec<Shown>) {
        for output in shown {
            match output {
                Shown::Text { text, source } => {
                    self.out
                        .code_block("text", &text, &[(0..text.len(), source, None)]);
                }
                Shown::Markdown { text, source } => self.markdown(&MultiLine {
                    pieces: vec![(0..text.len(), source)],
                    text,
                }),
            }
        }
    }

    /// A raw cell is written for one target (`raw_mimetype`). Those a documentation page shows
    /// are read: reStructuredText (nbsphinx renders it), HTML, Markdown, and no type at all
    /// (every exporter passes it through); LaTeX, Python and the like are left out.
    fn raw(&mut self, cell: &Cell, lines: &MultiLine) {
        let meta: RawCellMetadata = cell
            .metadata
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_default();
        let mime = meta
            .raw_mimetype
            .or(meta.format)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let converted = match mime.as_str() {
            "" | "text/plain" | "text/markdown" | "text/x-markdown" => {
                return self.markdown(lines);
            }
            "text/restructuredtext" | "text/x-rst" => crate::rst::convert(lines.text.as_bytes()),
            "text/html" => crate::html::convert(lines.text.as_bytes()),
            _ => return,
        };
        // A cell the reader refuses shows as written rather than not at all.
        let text = match converted {
            Ok(c) => c.markdown,
            Err(_) => lines.text.clone(),
        };
        let source = lines.whole_source();
        self.markdown(&MultiLine {
            pieces: vec![(0..text.len(), source)],
            text,
        });
    }

    /// nbformat 3's heading cell: one line at its level.
    fn heading(&mut self, level: u64, lines: &MultiLine) {
        let text = lines.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return;
        }
        let level = level.clamp(1, 6) as usize;
        if level == 1 && self.title.is_none() {
            self.title = Some(text.clone());
        }
        self.out.heading_prefix(level);
        self.out.text(&text, lines.whole_source(), None);
        self.out.end_block();
    }
}

/// A multi-line string of a notebook (a string, or the list of lines nbformat writes) joined,
/// with where each line came from.
#[derive(Debug, Default)]
pub(crate) struct MultiLine {
    pub(crate) text: String,
    /// `(range in text, range in the file)` per line.
    pub(crate) pieces: Vec<(Range<usize>, Option<Range<usize>>)>,
}

impl MultiLine {
    /// Reads `raw`, a slice of `src`: `Err` when it is neither a string nor a list of strings.
    ///
    /// nbformat writes a list of lines each ending in its newline; older writers (nbformat 2,
    /// some converters) wrote them without, to be joined with newlines. As nbformat reads them:
    /// the first line says which.
    pub(crate) fn read(src: &str, raw: &RawValue) -> Result<MultiLine, ()> {
        let parts: Vec<(String, Option<Range<usize>>)> = if raw.get().starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(|_| ())?;
            items
                .into_iter()
                .map(|item| Ok((string(item)?, range_in(src, item.get()))))
                .collect::<Result<_, ()>>()?
        } else {
            vec![(string(raw)?, range_in(src, raw.get()))]
        };
        let separator = match parts.first() {
            Some((first, _)) if !first.ends_with(['\n', '\r']) => "\n",
            _ => "",
        };
        let mut out = MultiLine::default();
        for (i, (line, source)) in parts.into_iter().enumerate() {
            if i > 0 {
                out.text.push_str(separator);
            }
            let start = out.text.len();
            out.text.push_str(&line);
            out.pieces.push((start..out.text.len(), source));
        }
        Ok(out)
    }

    /// The file range from the first line to the last.
    fn whole_source(&self) -> Option<Range<usize>> {
        let mut sources = self.pieces.iter().filter_map(|(_, s)| s.clone());
        let first = sources.next()?;
        let end = sources.next_back().map_or(first.end, |s| s.end);
        Some(first.start..end)
    }
}

fn string(raw: &RawValue) -> Result<String, ()> {
    serde_json::from_str::<String>(raw.get()).map_err(|_| ())
}

/// Where `part`, a slice of `src` (a value serde_json borrowed from it), lies in `src`.
pub(crate) fn range_in(src: &str, part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(src.as_ptr() as usize)?;
    let end = start + part.len();
    (end <= src.len()).then_some(start..end)
}

/// `# Title` (an ATX level-1 heading) as its text.
fn level_one_heading(line: &str) -> Option<String> {
    let rest = line.trim_start_matches(' ');
    if line.len() - rest.len() > 3 {
        return None;
    }
    let text = rest.strip_prefix('#')?;
    if !(text.is_empty() || text.starts_with([' ', '\t'])) {
        return None;
    }
    let text = text.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The fence that would close a code block `text` leaves open, if it does.
fn open_fence_at_end(text: &str) -> Option<String> {
    let mut open: Option<(char, usize)> = None;
    for line in text.lines() {
        let rest = line.trim_start_matches(' ');
        if line.len() - rest.len() > 3 {
            continue;
        }
        let Some(mark) = rest.chars().next().filter(|c| matches!(c, '`' | '~')) else {
            continue;
        };
        let run = rest.chars().take_while(|&c| c == mark).count();
        if run < 3 {
            continue;
        }
        let after = &rest[run..];
        match open {
            None if !(mark == '`' && after.contains('`')) => open = Some((mark, run)),
            Some((m, n)) if m == mark && run >= n && after.trim().is_empty() => open = None,
            _ => {}
        }
    }
    open.map(|(mark, run)| mark.to_string().repeat(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(json: &str) -> String {
        convert(json.as_bytes()).unwrap().markdown
    }

    #[test]
    fn cells_in_order_with_language_and_outputs() {
        let nb = r##"{"cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Loading data\n", "\n", "Read the *CSV* first."]},
            {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["rows: 3\n"]}],
             "source": ["import pandas as pd\n", "print('rows:', 3)"]},
            {"cell_type": "raw", "metadata": {"raw_mimetype": "text/latex"}, "source": "\\newpage"}],
          "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}"##;
        let converted = convert(nb.as_bytes()).unwrap();
        assert_eq!(
            converted.markdown,
            "# Loading data\n\nRead the *CSV* first.\n\n```python\nimport pandas as pd\nprint('rows:', 3)\n```\n\n```text\nrows: 3\n```\n"
        );
        assert_eq!(converted.title.as_deref(), Some("Loading data"));
        assert_eq!(converted.metadata["language"], "python");
        // Lines point at their JSON strings (neighbouring lines of a cell merge into one span).
        let at = converted.markdown.find("print(").unwrap();
        let p = converted.provenance(at..at + 5);
        let quoted = &nb[p.source.unwrap()];
        assert!(
            quoted.starts_with("\"import pandas") && quoted.ends_with("\"print('rows:', 3)\""),
            "{quoted}"
        );
        let at = converted.markdown.find("rows: 3").unwrap();
        let p = converted.provenance(at..at + 7);
        assert_eq!(&nb[p.source.unwrap()], "[\"rows: 3\\n\"]");
    }

    #[test]
    fn an_open_fence_ends_with_its_cell() {
        let nb = r###"{"cells": [
            {"cell_type": "markdown", "source": "Example:\n\n```bash\npip install x"},
            {"cell_type": "markdown", "source": "## Next\n\nMore."}], "metadata": {}}"###;
        assert_eq!(
            md(nb),
            "Example:\n\n```bash\npip install x\n```\n\n## Next\n\nMore.\n"
        );
    }

    #[test]
    fn nbformat_3_worksheets_headings_and_inputs() {
        let nb = r#"{"metadata": {"name": "Old notebook"}, "nbformat": 3, "worksheets": [{"cells": [
            {"cell_type": "heading", "level": 2, "source": ["Setup"]},
            {"cell_type": "code", "language": "python", "input": ["x = 1"], "outputs": [
                {"output_type": "pyout", "prompt_number": 1, "text": ["1"]},
                {"output_type": "pyerr", "ename": "NameError", "evalue": "name 'y' is not defined"}]}]}]}"#;
        let converted = convert(nb.as_bytes()).unwrap();
        assert_eq!(
            converted.markdown,
            "## Setup\n\n```python\nx = 1\n```\n\n```text\n1\n```\n\n```text\nNameError: name 'y' is not defined\n```\n"
        );
        assert_eq!(converted.title.as_deref(), Some("Old notebook"));
    }

    #[test]
    fn raw_cells_by_target_and_damaged_cells_skipped() {
        let nb = r#"{"cells": [
            {"cell_type": "raw", "metadata": {"raw_mimetype": "text/restructuredtext"}, "source": [".. note::\n", "\n", "   Restart the kernel."]},
            {"cell_type": "raw", "metadata": {"raw_mimetype": "text/html"}, "source": "<p>Shown <b>bold</b>.</p>"},
            {"cell_type": "raw", "metadata": {"raw_mimetype": "text/latex"}, "source": "\\LaTeX only"},
            {"cell_type": "markdown", "source": 42},
            "not a cell",
            {"cell_type": "widget", "source": "?"}], "metadata": {"title": 7}}"#;
        let converted = convert(nb.as_bytes()).unwrap();
        assert!(
            converted.markdown.contains("Restart the kernel."),
            "{}",
            converted.markdown
        );
        assert!(
            converted.markdown.contains("Shown bold."),
            "{}",
            converted.markdown
        );
        assert!(!converted.markdown.contains("LaTeX only"));
        assert_eq!(converted.title, None);
        assert_eq!(
            converted.warnings,
            ["cells 4, 5, 6 are not notebook cells and were left out"]
        );
    }

    #[test]
    fn not_a_notebook_is_refused() {
        for bad in [
            "[1, 2]",
            "{\"metadata\": {}}",
            "{\"cells\": 3}",
            "{\"cells\": [",
            "",
        ] {
            let e = convert(bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains("not a valid notebook file"), "{bad}: {e}");
        }
        // nbformat reads a version 3 file without worksheets as an empty notebook.
        let empty = convert(br#"{"metadata": {}, "nbformat": 3, "nbformat_minor": 0}"#).unwrap();
        assert_eq!(empty.markdown, "");
    }

    #[test]
    fn lines_written_without_their_newlines_are_joined_with_them() {
        let nb = r##"{"worksheets": [{"cells": [
            {"cell_type": "markdown", "source": ["# Tour", "", "First line", "second line."]},
            {"cell_type": "markdown", "source": ["Kept\n", "as", " written"]}]}]}"##;
        assert_eq!(
            md(nb),
            "# Tour\n\nFirst line\nsecond line.\n\nKept\nas written\n"
        );
    }

    #[test]
    fn a_cell_magic_names_its_cells_language() {
        assert_eq!(cell_magic_language("%%bash\nls"), Some("bash"));
        assert_eq!(
            cell_magic_language("%%sql postgresql://\nselect 1"),
            Some("sql")
        );
        assert_eq!(cell_magic_language("%%time\nrun()"), None);
        assert_eq!(cell_magic_language("%matplotlib inline"), None);
        let nb = r#"{"cells": [{"cell_type": "code", "source": ["%%latex\n", "$x$"]}],
            "metadata": {"kernelspec": {"language": "python"}}}"#;
        assert_eq!(md(nb), "```latex\n%%latex\n$x$\n```\n");
    }

    #[test]
    fn level_one_headings_and_fences() {
        assert_eq!(level_one_heading("# Intro #"), Some("Intro".into()));
        assert_eq!(level_one_heading("#Intro"), None);
        assert_eq!(level_one_heading("## Intro"), None);
        assert_eq!(open_fence_at_end("```\na\n```"), None);
        assert_eq!(open_fence_at_end("~~~~py\na\n~~~"), Some("~~~~".into()));
        assert_eq!(open_fence_at_end("``` `x` ```"), None);
    }
}
