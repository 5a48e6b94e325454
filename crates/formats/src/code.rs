//! Source code to Markdown: tree-sitter finds the items (functions, types, impls, classes), and
//! each big item or type member gets a heading (`# impl WalkBuilder`, `## fn build`) over its code,
//! copied verbatim into a fenced block, so the chunker's breadcrumb reads
//! `path > type > function` and no chunk starts inside a function that fits.
//!
//! Small neighbours (imports, constants, short functions) share a section, each run of them
//! without a blank line in between one fenced block. Every line of the file lands in exactly one
//! block, in order: comments, attributes and decorators go with the item they precede.

mod c_family;
mod csharp;
mod go;
mod java;
mod js;
mod outline;
pub(crate) mod parse_memory;
mod php;
mod python;
mod render;
mod ruby;
mod rust;

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use serde_json::Value;
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use crate::charset;
use crate::convert::{Converted, FormatError};
use crate::format::Language;
use outline::{Cx, Item};
use parse_memory::ParseMemory;

/// Largest source file converted, in bytes.
const MAX_BYTES: usize = 32 << 20;
/// Parse time allowed per grammar, whatever the size, in milliseconds...
const PARSE_FLOOR_MS: u64 = 2_000;
/// ...plus this much per KiB. Real code parses at 4-5 MB/s here; this allows ~200 KB/s, and is
/// well under what embedding the same bytes costs (~30 s per MB).
const PARSE_MS_PER_KIB: u64 = 5;
/// Memory tree-sitter may hold for one file's parse, whatever the size, in bytes...
const PARSE_MEMORY_FLOOR: u64 = 256 << 20;
/// ...plus this much per byte of source. Real code peaks at 13-233 bytes per byte (files over
/// 20 KB among 24,000: every `.rs` in the cargo registry, the Python 3.11 library, TypeScript
/// 5.6's own `.js` and `.d.ts`, up to 8.9 MB); none used more than 42% of its bound (the
/// most: a 1.87 MB Rust file, 213 MB). The runaway shapes pass the floor at tens of KB.
const PARSE_MEMORY_PER_BYTE: u64 = 128;
/// Containers nested deeper than this (a method of an impl inside a module inside a module)
/// are rendered as one item: bounds recursion and keeps breadcrumbs short.
const MAX_NESTING: usize = 3;

/// Language-specific half of the outline: one tree-sitter node to an item.
type Classify = fn(&Cx<'_>, Node<'_>, usize) -> Item;

pub(crate) fn convert(lang: Language, bytes: &[u8]) -> Result<Converted, FormatError> {
    if bytes.len() > MAX_BYTES {
        return Err(FormatError::TooLarge {
            what: "source file size in bytes",
            limit: MAX_BYTES as u64,
        });
    }
    // UTF-16 with a byte order mark (Windows editors' "Unicode") is decoded; its spans are
    // mapped back to the file's bytes at the end. Any other encoding is refused, not guessed
    // (ASCII in UTF-16 without a mark is valid UTF-8: its NULs are what give it away).
    charset::refuse_utf32(lang.name(), bytes)?;
    let marked = charset::decode_marked(bytes);
    if marked.is_none() {
        charset::refuse_nul_bytes(lang.name(), bytes)?;
    }
    let text = match &marked {
        Some(page) => charset::checked_text(page, lang.name())?,
        None => std::borrow::Cow::Borrowed(std::str::from_utf8(bytes).map_err(|e| {
            FormatError::Invalid {
                format: lang.name(),
                reason: format!("source is not UTF-8 ({e})"),
            }
        })?),
    };
    let src: &str = &text;
    let base = if src.starts_with('\u{feff}') { 3 } else { 0 };
    let mut cx = Cx::new(src, base);
    match lang {
        Language::C | Language::Cpp => cx.transparent = c_family::is_transparent,
        Language::CSharp => cx.transparent = csharp::is_transparent,
        Language::Ruby => cx.transparent = ruby::is_transparent,
        Language::Php => cx.transparent = php::is_transparent,
        _ => {}
    }
    let tree = parse(lang, &src[base..])?;
    let root = tree.root_node();
    let mut warnings = Vec::new();
    if root.has_error() {
        warnings.push(format!(
            "{} syntax errors near line {}: sections there follow tree-sitter's recovery",
            lang.name(),
            first_error_line(root).map_or(0, |l| l + 1),
        ));
    }
    let classify: Classify = match lang {
        Language::Rust => rust::classify,
        Language::Python => python::classify,
        Language::JavaScript | Language::TypeScript => js::classify,
        Language::Go => go::classify,
        Language::Java => java::classify,
        Language::C | Language::Cpp => c_family::classify,
        Language::CSharp => csharp::classify,
        Language::Ruby => ruby::classify,
        Language::Php => php::classify,
    };
    let mut items = outline::arrange(&cx, raw_items(&cx, root, 0, classify), 0..cx.line_count());
    if lang == Language::Go {
        items = outline::group_by_key(items);
    }
    outline::link_context(&mut items);
    let (markdown, spans) = render::render(&cx, items, lang.name());
    let mut metadata = serde_json::Map::new();
    metadata.insert("format".into(), Value::from("code"));
    metadata.insert("language".into(), Value::from(lang.name()));
    let mut out = Converted {
        markdown,
        title: None,
        metadata,
        spans,
        warnings,
    };
    if let Some(page) = &marked {
        charset::map_spans_to_file(page, bytes, &mut out);
    }
    Ok(out)
}

fn parse(lang: Language, text: &str) -> Result<Tree, FormatError> {
    let limit = Duration::from_millis(
        PARSE_FLOOR_MS + PARSE_MS_PER_KIB * (text.len() as u64).div_ceil(1024),
    );
    let memory = PARSE_MEMORY_FLOOR + PARSE_MEMORY_PER_BYTE * text.len() as u64;
    parse_within(lang, text, limit, memory)
}

/// [`parse`] with `limit` on each grammar's parse time and `budget` on the bytes tree-sitter
/// holds for the whole parse (the first grammar's tree is held while the second parses).
fn parse_within(
    lang: Language,
    text: &str,
    limit: Duration,
    budget: u64,
) -> Result<Tree, FormatError> {
    let grammars: Vec<tree_sitter::Language> = match lang {
        Language::Rust => vec![tree_sitter_rust::LANGUAGE.into()],
        Language::Python => vec![tree_sitter_python::LANGUAGE.into()],
        Language::JavaScript => vec![tree_sitter_javascript::LANGUAGE.into()],
        // `.ts` and `.tsx` share one Language: TSX is tried when plain TypeScript has errors.
        Language::TypeScript => vec![
            tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            tree_sitter_typescript::LANGUAGE_TSX.into(),
        ],
        Language::Go => vec![tree_sitter_go::LANGUAGE.into()],
        Language::Java => vec![tree_sitter_java::LANGUAGE.into()],
        // A `.h` header may be C++: the C++ grammar reads it when C's does not cleanly.
        Language::C => vec![
            tree_sitter_c::LANGUAGE.into(),
            tree_sitter_cpp::LANGUAGE.into(),
        ],
        Language::Cpp => vec![tree_sitter_cpp::LANGUAGE.into()],
        Language::CSharp => vec![tree_sitter_c_sharp::LANGUAGE.into()],
        Language::Ruby => vec![tree_sitter_ruby::LANGUAGE.into()],
        // PHP files open in HTML mode (`<?php` switches to code), which this grammar reads.
        Language::Php => vec![tree_sitter_php::LANGUAGE_PHP.into()],
    };
    let memory = ParseMemory::watch(budget);
    let mut best: Option<(Tree, usize)> = None;
    for grammar in &grammars {
        let mut parser = Parser::new();
        parser
            .set_language(grammar)
            .map_err(|e| FormatError::Invalid {
                format: lang.name(),
                reason: format!("grammar does not load: {e}"),
            })?;
        // tree-sitter's error recovery can take far longer than parsing on text far from valid
        // (1 MB of random code characters: 24 s as TypeScript, 0.2 s for valid code), and it
        // exposes no count of that work, so the bound is time, checked every 100 operations.
        let started = Instant::now();
        let mut in_time = |_: &ParseState| {
            if started.elapsed() > limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = text.as_bytes();
        let parsed = parser.parse_with_options(
            &mut |at, _| &bytes[at.min(bytes.len())..],
            None,
            Some(ParseOptions::new().progress_callback(&mut in_time)),
        );
        if memory.tripped() {
            return Err(runaway(budget));
        }
        let Some(tree) = parsed else {
            if started.elapsed() > limit {
                return Err(FormatError::TooLarge {
                    what: "tree-sitter's parse time in milliseconds (error recovery on text far \
                           from valid code)",
                    limit: limit.as_millis() as u64,
                });
            }
            continue;
        };
        // Of several grammars, the one that leaves the fewest bytes unread wins (a C++ header
        // has errors as C wherever it uses templates, and maybe a few as C++ too).
        let unread = unread_bytes(tree.root_node());
        if best.as_ref().is_none_or(|(_, least)| unread < *least) {
            best = Some((tree, unread));
        }
        if unread == 0 {
            break;
        }
    }
    let used = memory.finish();
    log::debug!(
        "tree-sitter parse of {} bytes held at most {} bytes",
        text.len(),
        used.peak
    );
    best.map(|(tree, _)| tree)
        .ok_or_else(|| FormatError::Invalid {
            format: lang.name(),
            reason: "tree-sitter returned no tree".into(),
        })
}

fn runaway(budget: u64) -> FormatError {
    FormatError::TooLarge {
        what: "tree-sitter's memory for this parse in bytes (error recovery on text far from \
               valid code)",
        limit: budget,
    }
}

/// Bytes under ERROR nodes, plus one per missing node: how much of the text the grammar did
/// not read.
fn unread_bytes(root: Node<'_>) -> usize {
    let mut unread = 0;
    visit_errors(root, |node| {
        unread += if node.is_error() {
            node.byte_range().len().max(1)
        } else {
            1
        };
        ControlFlow::Continue(())
    });
    unread
}

/// Zero-based line of the first error or missing node.
fn first_error_line(root: Node<'_>) -> Option<usize> {
    let mut line = None;
    visit_errors(root, |node| {
        line = Some(node.start_position().row);
        ControlFlow::Break(())
    });
    line
}

/// Calls `visit` on each ERROR node (not what it holds) and each missing node, in order,
/// until it breaks. Descends only into subtrees that hold an error, without recursion.
fn visit_errors(root: Node<'_>, mut visit: impl FnMut(Node<'_>) -> ControlFlow<()>) {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            if visit(node).is_break() {
                return;
            }
        } else if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Items of the named children of `node`, unarranged.
fn raw_items(cx: &Cx<'_>, node: Node<'_>, depth: usize, classify: Classify) -> Vec<Item> {
    item_nodes(cx, node)
        .into_iter()
        .map(|child| classify(cx, child, depth))
        .collect()
}

/// Transparent nodes nested deeper than this are items themselves: bounds the recursion.
const MAX_TRANSPARENT: usize = 8;

/// The named children of `node`, those of its transparent children in their place.
fn item_nodes<'t>(cx: &Cx<'_>, node: Node<'t>) -> Vec<Node<'t>> {
    fn expand<'t>(cx: &Cx<'_>, node: Node<'t>, level: usize, out: &mut Vec<Node<'t>>) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            // An ERROR node is tree-sitter's recovery from code it could not fit (a brace opened
            // under `#ifdef __cplusplus`, an unknown macro): the items it recognised inside
            // still get their sections, instead of the rest of the file becoming one blob.
            if level < MAX_TRANSPARENT && (child.is_error() || (cx.transparent)(child.kind())) {
                expand(cx, child, level + 1, out);
            } else {
                out.push(child);
            }
        }
    }
    let mut out = Vec::new();
    expand(cx, node, 0, &mut out);
    out
}

/// Arranged members of a container body, skipping the leading children for which `in_prologue`
/// holds (a class docstring and its attributes stay with the class line), or None when nesting
/// is too deep or there are no members.
fn members(
    cx: &Cx<'_>,
    body: Node<'_>,
    depth: usize,
    classify: Classify,
    in_prologue: fn(&str) -> bool,
) -> Option<Vec<Item>> {
    if depth + 1 >= MAX_NESTING {
        return None;
    }
    let raw: Vec<Item> = item_nodes(cx, body)
        .into_iter()
        .skip_while(|c| in_prologue(c.kind()))
        .map(|child| classify(cx, child, depth + 1))
        .collect();
    let within = raw.first()?.lines.start..raw.last()?.lines.end;
    Some(outline::arrange(cx, raw, within))
}

/// An item whose `body` field holds members with sections of their own (a module, a
/// namespace).
fn container_item(
    cx: &Cx<'_>,
    node: Node<'_>,
    depth: usize,
    classify: Classify,
    label: Option<String>,
) -> Item {
    let body = node
        .child_by_field_name("body")
        .and_then(|b| members(cx, b, depth, classify, |_| false))
        .map(|children| outline::Body {
            children,
            ..outline::Body::default()
        });
    Item {
        body,
        ..outline::item(cx.lines(node), label)
    }
}

/// A type (class, interface, struct, enum) named `key`: its doc comment is summarised and its
/// members, after those `in_prologue` keeps with its first line, get sections when it is big.
fn type_item(
    cx: &Cx<'_>,
    node: Node<'_>,
    depth: usize,
    classify: Classify,
    in_prologue: fn(&str) -> bool,
    label: Option<String>,
    key: Option<String>,
) -> Item {
    let body = node
        .child_by_field_name("body")
        .and_then(|b| members(cx, b, depth, classify, in_prologue))
        .map(|children| outline::Body {
            children,
            context: None,
            context_in_prologue: true,
        });
    Item {
        wants_doc: true,
        key,
        body,
        ..outline::item(cx.lines(node), label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_over_its_time_is_cancelled_and_named() {
        let valid: String = (0..20_000)
            .map(|i| format!("function f{i}(a: number): number {{ return a + {i}; }}\n"))
            .collect();
        // No time at all: cancelled at the first check, as a parse that ran out would be.
        match parse_within(Language::TypeScript, &valid, Duration::ZERO, u64::MAX) {
            Err(FormatError::TooLarge { what, limit }) => {
                assert!(what.contains("tree-sitter"), "{what}");
                assert_eq!(limit, 0);
            }
            other => panic!("expected a time bound, got {:?}", other.map(|_| ())),
        }
        // The default bound leaves a big valid file (1 MB) far inside it.
        let tree = parse(Language::TypeScript, &valid).unwrap();
        assert!(!tree.root_node().has_error());
        assert_eq!(tree.root_node().child_count(), 20_000);
    }

    #[test]
    fn runaway_parse_memory_is_refused_and_real_code_is_far_inside_its_budget() {
        // Unclosed type arguments: tree-sitter's accept step holds memory quadratic in their
        // count (40 KB of them, 1.4 GB). Here 8 KB against a 16 MiB budget, no hook set.
        let runaway = "f<a, ".repeat(1_600);
        match parse_within(
            Language::TypeScript,
            &runaway,
            Duration::from_secs(60),
            16 << 20,
        ) {
            Err(FormatError::TooLarge { what, limit }) => {
                assert!(what.contains("memory"), "{what}");
                assert_eq!(limit, 16 << 20);
            }
            other => panic!("expected a memory bound, got {:?}", other.map(|_| ())),
        }
        // The same budget holds a real file of the same size many times over.
        let real = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/corpora/code/docs/rust/ignore/src/overrides.rs"
        ))
        .unwrap();
        let tree = parse_within(Language::Rust, &real, Duration::from_secs(60), 16 << 20).unwrap();
        assert!(!tree.root_node().has_error());
    }
}
