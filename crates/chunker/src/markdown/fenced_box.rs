//! Boxes fenced by lines of their own: colon fences, `::: tip Title` … `:::` (VitePress,
//! markdown-it-container), `:::note[Title]` … `:::` (Docusaurus), `::: {.callout-note}` … `:::`
//! (Pandoc, Quarto); and paired Hugo shortcodes, `{{% alert title="Note" %}}` …
//! `{{% /alert %}}` (Docsy), `{{< note >}}` … `{{< /note >}}` (Kubernetes).
//!
//! CommonMark reads the fence lines as paragraphs of their own (or as the first and last line of
//! the paragraph they touch), so without this a chunk could end on `::: warning WSL 2` and the
//! warning's text begin the next chunk without it, or a closing `:::` be a chunk alone. Folded
//! into a [`Kind::Container`], the box is packed as one block and, when it must be split, each
//! piece repeats its opening line, as a mkdocs admonition's does.

use std::ops::Range;

use crate::blocks::{Block, Kind};

/// Colons of an opening fence line (`:::` or more, then a name, title or attributes).
fn opening(line: &str) -> Option<usize> {
    let t = line.trim();
    let colons = t.len() - t.trim_start_matches(':').len();
    let rest = t[colons..].trim_start();
    (colons >= 3 && !rest.is_empty() && !rest.starts_with(':')).then_some(colons)
}

/// Colons of a closing fence line (`:::` or more and nothing else).
fn closing(line: &str) -> Option<usize> {
    let t = line.trim();
    (t.len() >= 3 && t.bytes().all(|b| b == b':')).then_some(t.len())
}

/// Whether `line` closes a box: a colon fence alone (`:::`) or a closing Hugo shortcode. A
/// table written right above it runs on to that line for CommonMark, which is no row of it.
pub(crate) fn closes_box(line: &str) -> bool {
    closing(line).is_some() || shortcode(line).is_some_and(|(closes, _)| closes)
}

/// A line that is one Hugo shortcode: `{{< name args >}}` or `{{% name args %}}` (opening) or
/// `{{< /name >}}` (closing): whether it closes, and its name. Self-closing shortcodes
/// (`{{< figure … />}}`) and shortcode comments (`{{</* … */>}}`) are neither.
pub(crate) fn shortcode(line: &str) -> Option<(bool, &str)> {
    let t = line.trim();
    let inner = t
        .strip_prefix("{{<")
        .and_then(|r| r.strip_suffix(">}}"))
        .or_else(|| t.strip_prefix("{{%").and_then(|r| r.strip_suffix("%}}")))?
        .trim();
    if inner.starts_with("/*") || inner.ends_with('/') || inner.contains("}}") {
        return None;
    }
    let (closes, rest) = match inner.strip_prefix('/') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, inner),
    };
    let name_end = rest
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '.')))
        .unwrap_or(rest.len());
    let name = &rest[..name_end];
    let starts_with_letter = name.starts_with(|c: char| c.is_ascii_alphabetic());
    (starts_with_letter && (!closes || rest[name_end..].trim().is_empty()))
        .then_some((closes, name))
}

/// Folds each fenced box of `blocks` (siblings, ranges relative to `text`) into a Container
/// whose children are parsed from the text between its fences. A box is folded only when its
/// closing fence comes before the next heading: colons around whole sections (a Pandoc div
/// holding headings) wrap structure, not a box, and the headings must stay the document's.
/// An unclosed fence is left as text.
pub(super) fn fold(text: &str, blocks: &mut Vec<Block>, depth: usize, html_is_text: bool) {
    if depth < super::MAX_CONTAINER_DEPTH {
        fold_siblings(text, blocks, depth, html_is_text);
    }
    for b in blocks.iter_mut() {
        if !matches!(b.kind, Kind::Container { .. }) && !b.children.is_empty() {
            fold(text, &mut b.children, depth, html_is_text);
        }
    }
}

fn fold_siblings(text: &str, blocks: &mut Vec<Block>, depth: usize, html_is_text: bool) {
    let closings = closings(text, blocks);
    if closings.iter().all(Option::is_none) {
        return;
    }
    let mut folded = Vec::with_capacity(blocks.len());
    let mut old = std::mem::take(blocks).into_iter().enumerate();
    while let Some((i, block)) = old.next() {
        let Some((close_block, close_line)) = closings[i].clone() else {
            folded.push(block);
            continue;
        };
        let start = block.range.start;
        let marker_end = line_end(text, start);
        let body = (marker_end + 1).min(close_line.start)..close_line.start;
        let mut children = super::parse_text(&text[body.clone()], depth + 1, html_is_text);
        super::shift(&mut children, &|o| o + body.start);
        folded.push(Block {
            kind: Kind::Container {
                marker: start..crate::blocks::trim_end(text, start..marker_end),
            },
            range: start..close_line.end,
            children,
        });
        let mut last_end = block.range.end;
        for _ in i..close_block {
            last_end = old.next().map_or(last_end, |(_, b)| b.range.end);
        }
        // What follows the closing fence inside the same block (a paragraph that runs on
        // without a blank line) is parsed again as blocks of its own.
        let rest = close_line.end..last_end.max(close_line.end);
        if !text[rest.clone()].trim().is_empty() {
            let mut after = super::parse_text(&text[rest.clone()], depth, html_is_text);
            super::shift(&mut after, &|o| o + rest.start);
            folded.extend(after);
        }
    }
    *blocks = folded;
}

/// A box open at some line while the siblings are read.
enum Open<'t> {
    Colons(usize),
    Shortcode(&'t str),
}

/// For each of `blocks` that opens a fenced box (its first line is an opening fence): the
/// block holding its closing fence, and that line. Two passes over the lines (the names of the
/// shortcodes that close somewhere, then the boxes), so a page of thousands of unclosed fences
/// costs what it is long.
fn closings(text: &str, blocks: &[Block]) -> Vec<Option<(usize, Range<usize>)>> {
    let lines: Vec<Vec<Range<usize>>> = blocks.iter().map(|b| fence_lines(text, b)).collect();
    // Only shortcodes that some line closes open a box: most (`{{< figure >}}`) stand alone.
    let closed_names: std::collections::HashSet<&str> = lines
        .iter()
        .flatten()
        .filter_map(|l| shortcode(&text[l.clone()]).filter(|(closes, _)| *closes))
        .map(|(_, name)| name)
        .collect();
    let mut found = vec![None; blocks.len()];
    // The boxes open at this line, innermost last, with the block a box opens when its fence
    // is that block's first line. A colon line closes the innermost box when that is a colon
    // box with at most as many colons (fewer is text of that box, as markdown-it reads it); a
    // shortcode closes the innermost box of its name, and any left open inside it.
    let mut open_boxes: Vec<(Open, Option<usize>)> = Vec::new();
    for (k, (block, block_lines)) in blocks.iter().zip(&lines).enumerate() {
        if matches!(block.kind, Kind::Heading { .. }) {
            open_boxes.clear();
            continue;
        }
        for line in block_lines {
            let line_text = &text[line.clone()];
            let opens_block =
                (line.start == block.range.start && block.kind == Kind::Paragraph).then_some(k);
            let closed = if let Some(colons) = opening(line_text) {
                open_boxes.push((Open::Colons(colons), opens_block));
                None
            } else if let Some(colons) = closing(line_text) {
                match open_boxes.last() {
                    Some((Open::Colons(inner), _)) if colons >= *inner => open_boxes.pop(),
                    _ => None,
                }
            } else if let Some((closes, name)) = shortcode(line_text) {
                if !closes {
                    if closed_names.contains(name) {
                        open_boxes.push((Open::Shortcode(name), opens_block));
                    }
                    None
                } else {
                    let at = open_boxes
                        .iter()
                        .rposition(|(open, _)| matches!(open, Open::Shortcode(n) if *n == name));
                    at.and_then(|at| open_boxes.drain(at..).next())
                }
            } else {
                None
            };
            if let Some((_, Some(opened))) = closed {
                found[opened] = Some((k, line.clone()));
            }
        }
    }
    found
}

/// The lines of `block` that could be fences: all but those inside code.
fn fence_lines(text: &str, block: &Block) -> Vec<Range<usize>> {
    let mut verbatim = Vec::new();
    verbatim_ranges(block, &mut verbatim);
    let mut verbatim = verbatim.into_iter().peekable();
    let mut lines = crate::blocks::lines(text, block.range.clone());
    lines.retain(|line| {
        while verbatim.next_if(|v| v.end < line.end).is_some() {}
        !verbatim
            .peek()
            .is_some_and(|v| v.start <= line.start && line.end <= v.end)
    });
    lines
}

/// Ranges of `block` and its descendants whose lines are never fences: code. (Raw HTML is
/// not: a closing fence right under `</details>` is read by CommonMark as part of that HTML.)
fn verbatim_ranges(block: &Block, out: &mut Vec<Range<usize>>) {
    match block.kind {
        Kind::FencedCode | Kind::IndentedCode => out.push(block.range.clone()),
        _ => block.children.iter().for_each(|c| verbatim_ranges(c, out)),
    }
}

/// End of the line starting at or containing `at` (before its line break).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |k| at + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_lines_of_each_dialect() {
        for open in [
            "::: tip",
            "::: warning Origin check for WebSockets",
            ":::note",
            ":::note[A note on formatting]",
            "::: {.callout-note}",
            "  :::: details Nested",
        ] {
            assert!(opening(open).is_some(), "{open}");
            assert_eq!(closing(open), None, "{open}");
        }
        assert_eq!(opening(":::: tip"), Some(4));
        for close in [":::", "::::", "  :::  "] {
            assert!(closing(close).is_some(), "{close}");
            assert_eq!(opening(close), None, "{close}");
        }
        for neither in ["::", ":: tip", "a ::: b", "", ":::: ::::"] {
            assert_eq!(opening(neither), None, "{neither}");
            assert_eq!(closing(neither), None, "{neither}");
        }
    }

    fn containers(blocks: &[Block], out: &mut Vec<(usize, usize)>, depth: usize) {
        for b in blocks {
            if matches!(b.kind, Kind::Container { .. }) {
                out.push((depth, b.range.start));
            }
            containers(&b.children, out, depth + 1);
        }
    }

    fn boxes(src: &str) -> Vec<(usize, String)> {
        let blocks = crate::markdown::parse(src, 0..src.len(), false);
        let mut found = Vec::new();
        containers(&blocks, &mut found, 0);
        found
            .into_iter()
            .map(|(depth, at)| (depth, src[at..line_end(src, at)].to_string()))
            .collect()
    }

    #[test]
    fn boxes_are_found_whether_or_not_blank_lines_surround_the_fences() {
        let tight = "Intro.\n\n::: tip\nKeep it short.\n:::\nAfter, same paragraph.\n";
        assert_eq!(boxes(tight), [(0, "::: tip".to_string())]);
        let blocks = crate::markdown::parse(tight, 0..tight.len(), false);
        let after = blocks.last().expect("blocks");
        assert_eq!(after.kind, Kind::Paragraph);
        assert!(tight[after.range.clone()].starts_with("After, same paragraph."));
        let after_html =
            "::: tip\n\n<details>\n<summary>Example</summary>\n\nText.\n\n</details>\n:::\n";
        assert_eq!(boxes(after_html), [(0, "::: tip".to_string())]);
        let in_list = "- item\n\n  ::: warning\n  Careful.\n  :::\n";
        assert_eq!(boxes(in_list), [(2, "::: warning".to_string())]);
    }

    #[test]
    fn nested_boxes_close_innermost_first() {
        let src = "::::: details Outer\n\n::: tip Inner\nText.\n:::\n\nMore outer text.\n\n:::::\n";
        assert_eq!(
            boxes(src),
            [
                (0, "::::: details Outer".to_string()),
                (1, "::: tip Inner".to_string())
            ]
        );
        // A closing line with fewer colons than the open box is its text.
        let fewer = ":::: note\n\nText.\n\n:::\n\nStill inside.\n\n::::\n";
        let blocks = crate::markdown::parse(fewer, 0..fewer.len(), false);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].range.end, fewer.trim_end().len());
    }

    #[test]
    fn fences_inside_code_unclosed_fences_and_fences_across_headings_are_text() {
        let in_code = "```md\n::: tip\n```\n\nText.\n\n:::\n";
        assert!(boxes(in_code).is_empty());
        let closer_in_code = "::: tip\n\n```md\n:::\n```\n\nStill in the tip.\n\n:::\n";
        let blocks = crate::markdown::parse(closer_in_code, 0..closer_in_code.len(), false);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].range.end, closer_in_code.trim_end().len());
        assert!(boxes("::: tip\n\nNever closed.\n").is_empty());
        assert!(boxes("::: {.section}\n\n## Install\n\nText.\n\n:::\n").is_empty());
    }

    #[test]
    fn shortcode_lines() {
        assert_eq!(
            shortcode("{{% alert title=\"Note\" color=\"info\" %}}"),
            Some((false, "alert"))
        );
        assert_eq!(shortcode("  {{< note >}}"), Some((false, "note")));
        assert_eq!(shortcode("{{% /alert %}}"), Some((true, "alert")));
        assert_eq!(shortcode("{{%/alert%}}"), Some((true, "alert")));
        assert_eq!(
            shortcode("{{< about/testimonials >}}"),
            Some((false, "about/testimonials"))
        );
        for neither in [
            "{{< figure src=\"a.png\" />}}",
            "{{</* note */>}}",
            "{{< ref \"x\" >}} and {{< ref \"y\" >}}",
            "text {{< note >}}",
            "{{< 123 >}}",
            "{{< /alert extra >}}",
        ] {
            assert_eq!(shortcode(neither), None, "{neither}");
        }
    }

    #[test]
    fn shortcode_boxes_pair_by_name_and_lone_shortcodes_open_nothing() {
        let src = "{{% alert title=\"Warning\" %}}\n{{< youtube id=\"x\" >}}\nCareful.\n{{% /alert %}}\n\n{{< figure-less >}}\n\nText.\n";
        assert_eq!(
            boxes(src),
            [(0, "{{% alert title=\"Warning\" %}}".to_string())]
        );
        let colon_inside = "{{< note >}}\n\n::: tip\nInner.\n:::\n\n{{< /note >}}\n";
        assert_eq!(
            boxes(colon_inside),
            [(0, "{{< note >}}".to_string()), (1, "::: tip".to_string())]
        );
    }
}
