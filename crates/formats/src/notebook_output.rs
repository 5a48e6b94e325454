//! What a notebook's code cell printed, as a reader of the page sees it: streams, results and
//! errors as text, terminal colours and progress-bar redraws removed, each output cut to
//! [`OUTPUT_LIMIT`] bytes. Images, HTML-only and widget outputs show nothing.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::notebook::{MultiLine, range_in};

/// Text kept of one output. A training log or an install transcript can run to megabytes,
/// which would bury the cell's code in chunks of noise; what a reader looks at is its start.
pub(crate) const OUTPUT_LIMIT: usize = 4_000;

/// One output of a code cell, nbformat 3 or 4 (every field optional: a damaged output is
/// skipped, not the notebook).
#[derive(Deserialize)]
struct RawOutput<'a> {
    #[serde(default)]
    output_type: Option<String>,
    /// nbformat 4 stream text; nbformat 3 `text/plain` of a result.
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    /// nbformat 4 mime bundle.
    #[serde(borrow, default)]
    data: Option<BTreeMap<String, &'a RawValue>>,
    /// nbformat 3 Markdown result.
    #[serde(borrow, default)]
    markdown: Option<&'a RawValue>,
    /// nbformat 3 images.
    #[serde(borrow, default)]
    png: Option<&'a RawValue>,
    #[serde(borrow, default)]
    jpeg: Option<&'a RawValue>,
    #[serde(borrow, default)]
    svg: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ename: Option<&'a RawValue>,
    #[serde(borrow, default)]
    evalue: Option<&'a RawValue>,
    /// nbformat 4 stream name (`stdout`, `stderr`); nbformat 3 calls it `stream`.
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    stream: Option<String>,
}

/// An output ready to show: plain text, or Markdown a result displayed.
#[derive(Debug, PartialEq)]
pub(crate) enum Shown {
    /// Shown as preformatted text.
    Text {
        text: String,
        source: Option<Range<usize>>,
    },
    /// Shown as Markdown (`IPython.display.Markdown`).
    Markdown {
        text: String,
        source: Option<Range<usize>>,
    },
}

/// The outputs of one cell as shown, in order, consecutive writes to the same stream joined
/// (a kernel flushes a loop's prints in pieces). Returns also how many outputs could not be
/// read.
pub(crate) fn shown_outputs(src: &str, outputs: &[&RawValue]) -> (Vec<Shown>, usize) {
    let mut shown = Vec::new();
    let mut unreadable = 0;
    let mut last_stream: Option<String> = None;
    for raw in outputs {
        let Ok(output) = serde_json::from_str::<RawOutput>(raw.get()) else {
            unreadable += 1;
            continue;
        };
        let kind = output.output_type.as_deref().unwrap_or("");
        let stream = output.name.clone().or(output.stream.clone());
        let next = match kind {
            "stream" => output.text.and_then(|t| text_of(src, t, Shown::text)),
            "execute_result" | "display_data" | "pyout" => result(src, &output),
            "error" | "pyerr" => error(src, &output),
            _ => None,
        };
        let Some(next) = next else {
            if kind != "stream" {
                last_stream = None;
            }
            continue;
        };
        let continues = kind == "stream" && last_stream.is_some() && last_stream == stream;
        match (continues, shown.last_mut(), next) {
            (
                true,
                Some(Shown::Text { text, source }),
                Shown::Text {
                    text: more,
                    source: s,
                },
            ) => {
                text.push_str(&more);
                *source = union(source.take(), s);
            }
            (_, _, next) => shown.push(next),
        }
        last_stream = if kind == "stream" { stream } else { None };
    }
    for out in &mut shown {
        if let Shown::Text { text, .. } = out {
            *text = terminal_text(text);
        }
    }
    (shown, unreadable)
}

impl Shown {
    fn text(text: String, source: Option<Range<usize>>) -> Shown {
        Shown::Text { text, source }
    }

    fn markdown(text: String, source: Option<Range<usize>>) -> Shown {
        Shown::Markdown { text, source }
    }
}

/// A result or display as a notebook shows it: its Markdown if it has one; else nothing if it
/// is an image (its plain text is only a stand-in, `<Figure size 640x480 with 1 Axes>`); else
/// its plain text (a table's HTML has it too). HTML, JavaScript and widget state alone show
/// nothing.
fn result(src: &str, output: &RawOutput) -> Option<Shown> {
    let (markdown, image, plain) = match &output.data {
        Some(data) => (
            data.get("text/markdown").copied(),
            data.keys().any(|mime| mime.starts_with("image/")),
            data.get("text/plain").copied(),
        ),
        None => (
            output.markdown,
            output.png.or(output.jpeg).or(output.svg).is_some(),
            output.text,
        ),
    };
    if let Some(shown) = markdown.and_then(|m| text_of(src, m, Shown::markdown)) {
        return Some(shown);
    }
    if image {
        return None;
    }
    plain.and_then(|p| text_of(src, p, Shown::text))
}

/// An error as its last traceback line reads: `ValueError: bad value`. The traceback above it
/// is the kernel's frames, coloured for a terminal.
fn error(src: &str, output: &RawOutput) -> Option<Shown> {
    let name = output
        .ename
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok());
    let value = output
        .evalue
        .and_then(|r| serde_json::from_str::<String>(r.get()).ok());
    let text = match (name, value) {
        (Some(n), Some(v)) if !v.is_empty() => format!("{n}: {v}"),
        (Some(n), _) => n,
        (None, Some(v)) => v,
        (None, None) => return None,
    };
    let source = match (output.ename, output.evalue) {
        (Some(a), Some(b)) => union(range_in(src, a.get()), range_in(src, b.get())),
        (a, b) => a.or(b).and_then(|r| range_in(src, r.get())),
    };
    Some(Shown::Text { text, source })
}

/// Text of a string or list-of-lines value, with its place in the file.
fn text_of(
    src: &str,
    raw: &RawValue,
    shown: fn(String, Option<Range<usize>>) -> Shown,
) -> Option<Shown> {
    let text = MultiLine::read(src, raw).ok()?.text;
    (!text.trim().is_empty()).then(|| shown(text, range_in(src, raw.get())))
}

fn union(a: Option<Range<usize>>, b: Option<Range<usize>>) -> Option<Range<usize>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
        (a, b) => a.or(b),
    }
}

/// Text written to a terminal as it ends up on screen: colour and cursor sequences removed, a
/// line redrawn after a carriage return (a progress bar) kept as last drawn, and cut to
/// [`OUTPUT_LIMIT`] bytes at a line end, saying how many lines were left out.
pub(crate) fn terminal_text(text: &str) -> String {
    let plain = strip_escapes(text);
    let mut lines: Vec<&str> = plain
        .split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            line.rsplit('\r').next().unwrap_or(line)
        })
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let mut kept = 0;
    let mut size = 0;
    for line in &lines {
        if size + line.len() + 1 > OUTPUT_LIMIT && kept > 0 {
            break;
        }
        size += line.len() + 1;
        kept += 1;
    }
    let mut out = lines[..kept].join("\n");
    if out.len() > OUTPUT_LIMIT {
        // One line longer than the limit: cut it at a character boundary.
        let mut end = OUTPUT_LIMIT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push_str(" …");
    }
    if kept < lines.len() {
        out.push_str(&format!(
            "\n[{} more lines of output not indexed]",
            lines.len() - kept
        ));
    }
    out
}

/// Removes ANSI escape sequences: CSI (`ESC [ ... letter`), OSC (`ESC ] ... BEL` or `ESC \`)
/// and two-byte escapes; also lone backspaces and other control characters but tab.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte in '@'..='~'.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\r' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_redraws_are_removed() {
        let text = "\u{1b}[0;31mValueError\u{1b}[0m: bad\n 10%|#   \r 50%|#####  \r100%|##########|\r\ndone\n";
        assert_eq!(
            terminal_text(text),
            "ValueError: bad\n100%|##########|\ndone"
        );
        assert_eq!(
            terminal_text("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\ ok"),
            "link ok"
        );
    }

    #[test]
    fn long_output_is_cut_at_a_line_end() {
        let text: String = (0..2_000)
            .map(|i| format!("epoch {i}: loss 0.5\n"))
            .collect();
        let cut = terminal_text(&text);
        assert!(cut.len() <= OUTPUT_LIMIT + 64, "{}", cut.len());
        assert!(cut.starts_with("epoch 0: loss 0.5\nepoch 1:"));
        let last = cut.lines().last().unwrap();
        assert!(
            last.starts_with('[') && last.contains("more lines of output not indexed"),
            "{last}"
        );
        let one_line = "é".repeat(OUTPUT_LIMIT);
        assert!(terminal_text(&one_line).len() <= OUTPUT_LIMIT + 4);
    }

    #[test]
    fn streams_join_and_results_prefer_markdown() {
        let src = r#"[{"output_type":"stream","name":"stdout","text":["a\n"]},
            {"output_type":"stream","name":"stdout","text":"b\n"},
            {"output_type":"stream","name":"stderr","text":"warn\n"},
            {"output_type":"execute_result","data":{"text/plain":["<Md>"],"text/markdown":"**bold**"}},
            {"output_type":"display_data","data":{"image/png":"iVBOR","text/plain":"<Figure>"}},
            {"output_type":"error","ename":"KeyError","evalue":"'x'","traceback":["\u001b[31m..."]},
            {"output_type":"execute_result","data":"not a bundle"}]"#;
        let outputs: Vec<&RawValue> = serde_json::from_str(src).unwrap();
        let (shown, unreadable) = shown_outputs(src, &outputs);
        let texts: Vec<String> = shown
            .iter()
            .map(|s| match s {
                Shown::Text { text, .. } => format!("text:{text}"),
                Shown::Markdown { text, .. } => format!("md:{text}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "text:a\nb",
                "text:warn",
                "md:**bold**",
                "text:KeyError: 'x'"
            ]
        );
        assert_eq!(unreadable, 1);
        let Shown::Text { source, .. } = &shown[0] else {
            panic!()
        };
        let range = source.clone().unwrap();
        assert!(src[range].starts_with("[\"a\\n\"]"));
    }
}
