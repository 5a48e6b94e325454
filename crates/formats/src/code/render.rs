//! Outline to Markdown: a heading per big item or type, small neighbours grouped, every line of
//! the source verbatim in a fenced block whose span maps back to its bytes.

use std::ops::Range;

use super::outline::{Cx, Item, estimated_tokens};
use crate::convert::SourceSpan;

/// An item at most this big (about 150 tokens at 4 bytes a token) and...
const SMALL_BYTES: usize = 600;
/// ...at most this many lines is grouped with its small neighbours instead of getting a heading.
const SMALL_LINES: usize = 40;
/// A group of small items closes before its section passes about this many tokens, heading
/// (twice: its line and the breadcrumb) and context line included, so that one group fits one
/// chunk and its heading names what that chunk holds. An unbounded group spans several chunks
/// that all carry the heading of its first members; a group that fills a chunk without room for
/// its heading leaves the heading a chunk of its own. The 64 tokens left of 256 hold the file
/// path, parent headings and the estimate's error: on unseen code, 224 and 208 left 2.5% and
/// 1.3% of chunks holding only a heading, 192 0.9% (0.8% before groups were capped).
const SECTION_TOKENS: usize = 192;
/// Tokens a fenced block costs beyond its lines: "```rust" and "```".
const FENCE_TOKENS: usize = 7;
/// A container's opening (`impl X {`) or closing (`}`) lines are glued to its first or last
/// member when they are this few, rather than standing as a block of their own.
const GLUE_LINES: usize = 3;
/// Group headings list member labels up to about this many bytes.
const GROUP_LABEL_BYTES: usize = 60;
/// Longest heading label, in bytes.
const LABEL_BYTES: usize = 80;

/// A heading (none for the file's opening section) and the line ranges of its fenced blocks.
#[derive(Debug, Default)]
struct Section {
    level: usize,
    heading: Option<String>,
    labels: Vec<String>,
    context: Option<String>,
    blocks: Vec<Range<usize>>,
    /// Estimated tokens of the blocks pushed so far.
    tokens: usize,
    /// Estimated tokens of the context line.
    context_tokens: usize,
}

impl Section {
    fn new(level: usize, heading: Option<String>, context: Option<&str>) -> Self {
        Section {
            level,
            heading,
            context: context.map(str::to_string),
            // "Context: " and the line, estimated once rather than at every item's size check.
            context_tokens: context.map_or(0, |c| estimated_tokens(c) + 2),
            ..Section::default()
        }
    }

    /// Tokens the section's heading (on its line and in the breadcrumb) and context line take,
    /// were `label` to join it. This over-counts what `close` will name on purpose (every label
    /// up to the one passing the limit, plus `label`): the cap was calibrated with it, and an
    /// exact count let groups overflow their chunk (heading-only chunks 66 -> 79 on unseen code).
    fn overhead(&self, label: Option<&String>) -> usize {
        let heading = match &self.heading {
            Some(h) => estimated_tokens(h),
            None => {
                let mut named = 0;
                let mut tokens = 0;
                for l in self.labels.iter().chain(label) {
                    if named > GROUP_LABEL_BYTES {
                        break;
                    }
                    named += l.len();
                    tokens += estimated_tokens(l) + 1;
                }
                tokens
            }
        };
        2 * heading + self.context_tokens
    }

    /// Adds `lines` (about `tokens` tokens), joining the last block when no blank line separates
    /// them.
    fn push(&mut self, lines: Range<usize>, tokens: usize, label: Option<&String>) {
        self.tokens += tokens;
        match self.blocks.last_mut() {
            Some(last) if last.end >= lines.start => last.end = last.end.max(lines.end),
            _ => {
                self.tokens += FENCE_TOKENS;
                self.blocks.push(lines);
            }
        }
        // Only the first labels can name the group (see `close`): keeping the rest made each
        // push scan every label before it, quadratic in a file of thousands of small items.
        let named = self.labels.len() >= 2
            && self.labels.iter().map(String::len).sum::<usize>() > GROUP_LABEL_BYTES;
        if let Some(l) = label
            && !named
            && !self.labels.contains(l)
        {
            self.labels.push(l.clone());
        }
    }
}

fn is_small(cx: &Cx<'_>, it: &Item) -> bool {
    it.lines.len() <= SMALL_LINES && cx.size(&it.lines) <= SMALL_BYTES
}

fn nonblank(cx: &Cx<'_>, lines: &Range<usize>) -> usize {
    lines.clone().filter(|&l| !cx.is_blank(l)).count()
}

/// Sections of `items` at heading `level`; small items at the start go into `first`.
fn layout(
    cx: &Cx<'_>,
    items: Vec<Item>,
    level: usize,
    context: Option<&str>,
    first: Section,
    out: &mut Vec<Section>,
) {
    let mut group = Some(first);
    for it in items {
        // A big comment block or statement (a module docstring) has no name to head a section
        // with: it stays in the current one.
        let anonymous = it.label.is_none() && it.body.is_none();
        if is_small(cx, &it) || anonymous {
            let tokens = cx.tokens(&it.lines);
            let full = |g: &mut Section| {
                g.tokens > 0 && g.tokens + tokens + g.overhead(it.label.as_ref()) > SECTION_TOKENS
            };
            if let Some(g) = group.take_if(full) {
                close(g, level, out);
            }
            group
                .get_or_insert_with(|| Section::new(level, None, context))
                .push(it.lines.clone(), tokens, it.label.as_ref());
            continue;
        }
        if let Some(g) = group.take() {
            close(g, level, out);
        }
        if it.body.as_ref().is_some_and(|b| !b.children.is_empty()) {
            container(cx, it, level, out);
        } else {
            let mut s = Section::new(level, it.label.clone(), context);
            s.push(it.lines.clone(), cx.tokens(&it.lines), None);
            if s.heading.is_none() {
                s.heading = Some(fallback(level).into());
            }
            out.push(s);
        }
    }
    if let Some(g) = group {
        close(g, level, out);
    }
}

fn fallback(level: usize) -> &'static str {
    if level <= 1 { "module items" } else { "items" }
}

/// Pushes a group section, naming it after its members unless it already has a heading.
fn close(mut g: Section, level: usize, out: &mut Vec<Section>) {
    let opening = out.is_empty() && level == 1;
    if g.heading.is_none() && !opening {
        let mut name = String::new();
        for l in &g.labels {
            if !name.is_empty() {
                if name.len() + l.len() > GROUP_LABEL_BYTES {
                    name.push_str(", …");
                    break;
                }
                name.push_str(", ");
            }
            name.push_str(l);
        }
        if name.is_empty() {
            name = fallback(level).into();
        }
        g.heading = Some(name);
    }
    if g.heading.is_some() || !g.blocks.is_empty() {
        out.push(g);
    }
}

/// A type or module: its heading, its prologue and first small members directly under it, then
/// a sub-section per big member or group of small ones.
fn container(cx: &Cx<'_>, it: Item, level: usize, out: &mut Vec<Section>) {
    let Some(body) = it.body else { return };
    let mut children = body.children;
    let (Some(first), Some(last)) = (children.first(), children.last()) else {
        return;
    };
    let prologue = it.lines.start..first.lines.start;
    let epilogue = last.lines.end..it.lines.end;
    let own_context = if body.context_in_prologue {
        None
    } else {
        body.context.as_deref()
    };
    let mut direct = Section::new(level, it.label.clone(), own_context);
    if nonblank(cx, &prologue) <= GLUE_LINES {
        children[0].lines.start = prologue.start;
    } else {
        direct.push(prologue.clone(), cx.tokens(&prologue), None);
    }
    let glue_end = nonblank(cx, &epilogue) <= GLUE_LINES;
    if glue_end && let Some(last) = children.last_mut() {
        last.lines.end = epilogue.end;
    }
    let before = out.len();
    layout(
        cx,
        children,
        level + 1,
        body.context.as_deref(),
        direct,
        out,
    );
    if !glue_end
        && out.len() > before
        && let Some(s) = out.last_mut()
    {
        s.push(epilogue.clone(), cx.tokens(&epilogue), None);
    }
}

/// Markdown and spans of `items`, fenced blocks tagged `lang`.
pub(super) fn render(cx: &Cx<'_>, items: Vec<Item>, lang: &str) -> (String, Vec<SourceSpan>) {
    let mut sections = Vec::new();
    layout(
        cx,
        items,
        1,
        None,
        Section::new(1, None, None),
        &mut sections,
    );
    let mut md = String::with_capacity(cx.src.len() + cx.src.len() / 8);
    let mut spans = Vec::new();
    for s in &sections {
        if let Some(h) = &s.heading {
            md.push_str(&"#".repeat(s.level.clamp(1, 6)));
            md.push(' ');
            md.push_str(&escape_heading(h));
            md.push_str("\n\n");
        }
        let blocks: Vec<Range<usize>> = s
            .blocks
            .iter()
            .filter_map(|b| trim_blank(cx, b.clone()))
            .collect();
        if let (Some(c), false) = (&s.context, blocks.is_empty()) {
            // One line starting with a word: always a plain paragraph, whatever `c` holds.
            md.push_str("Context: ");
            md.push_str(c);
            md.push_str("\n\n");
        }
        for b in blocks {
            fenced(cx, b, lang, &mut md, &mut spans);
        }
    }
    while md.ends_with("\n\n") {
        md.pop();
    }
    (md, spans)
}

fn trim_blank(cx: &Cx<'_>, mut b: Range<usize>) -> Option<Range<usize>> {
    while b.start < b.end && cx.is_blank(b.start) {
        b.start += 1;
    }
    while b.end > b.start && cx.is_blank(b.end - 1) {
        b.end -= 1;
    }
    (!b.is_empty()).then_some(b)
}

/// Appends the lines `b` verbatim in a fence longer than any backtick run inside.
fn fenced(cx: &Cx<'_>, b: Range<usize>, lang: &str, md: &mut String, spans: &mut Vec<SourceSpan>) {
    let source = cx.bytes(b);
    let text = &cx.src[source.clone()];
    let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
    md.push_str(&fence);
    md.push_str(lang);
    md.push('\n');
    // A span per line: a chunk cut from an oversized block maps back to exactly its lines.
    let mut at = source.start;
    for line in text.split_inclusive('\n') {
        let start = md.len();
        md.push_str(line);
        spans.push(SourceSpan {
            markdown: start..md.len(),
            source: Some(at..at + line.len()),
            page: None,
        });
        at += line.len();
    }
    if !text.ends_with('\n') {
        md.push('\n');
    }
    md.push_str(&fence);
    md.push_str("\n\n");
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for b in s.bytes() {
        run = if b == b'`' { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// A label as heading text that CommonMark reads back literally: escapes what could start
/// inline markup (`<T>` would be an HTML tag, `__init__` bold); `_`/`*` inside a word are safe.
fn escape_heading(label: &str) -> String {
    let label = truncate(label, LABEL_BYTES);
    let chars: Vec<char> = label.chars().collect();
    let mut out = String::with_capacity(label.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<&char>| j.is_some_and(|c| c.is_alphanumeric());
        let escape = match c {
            '\\' | '`' | '<' | '[' | ']' | '~' => true,
            '_' | '*' => !(i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1))),
            '#' => i + 1 == chars.len(),
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group_heading(labels: &[String]) -> (usize, Option<String>) {
        let mut group = Section::new(2, None, None);
        for (i, label) in labels.iter().enumerate() {
            group.push(3 * i..3 * i + 2, 10, Some(label));
        }
        let kept = group.labels.len();
        let mut out = Vec::new();
        close(group, 2, &mut out);
        (kept, out.pop().and_then(|s| s.heading))
    }

    #[test]
    fn a_group_of_many_small_items_keeps_only_the_labels_that_can_name_it() {
        let many: Vec<String> = (0..50_000).map(|i| format!("fn item_{i}")).collect();
        let (kept, heading) = group_heading(&many);
        assert!(kept <= 8, "{kept} labels kept");
        assert_eq!(
            heading.as_deref(),
            Some("fn item_0, fn item_1, fn item_2, fn item_3, fn item_4, …")
        );
        // A first label longer than the bound still gets its "…" when others follow.
        let long = vec!["x".repeat(70), "fn b".into(), "fn c".into()];
        assert_eq!(
            group_heading(&long).1,
            Some(format!("{}, …", "x".repeat(70)))
        );
        // Repeats name the group once.
        let repeated: Vec<String> = ["fn a", "fn b", "fn a"].map(String::from).to_vec();
        assert_eq!(group_heading(&repeated).1.as_deref(), Some("fn a, fn b"));
    }
}
