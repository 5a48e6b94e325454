//! YAML front matter: parsed into metadata, never embedded, never fatal.
//!
//! Parsed from the YAML event stream into JSON values directly, with a budget on the nodes built:
//! a naive load expands aliases by copying, so ~450 bytes of nested aliases (an "alias bomb")
//! would build billions of nodes. Here an alias costs the size of what it copies, and front
//! matter that would build more than [`MAX_NODES`] nodes or nest deeper than [`MAX_DEPTH`] is
//! refused (kept as text, with a warning).

use std::collections::HashMap;

use serde_json::{Map, Value};
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Front matter larger than this is not parsed (treated as text): bounds work on hostile input.
const MAX_FRONT_MATTER: usize = 64 * 1024;
/// Most values (scalars, sequences, mappings, alias copies included) front matter may build.
const MAX_NODES: usize = 20_000;
/// Deepest nesting of sequences and mappings.
const MAX_DEPTH: usize = 64;

#[derive(Debug)]
pub(crate) struct FrontMatter {
    /// Offset where the body starts (after the closing `---` line).
    pub body_start: usize,
    pub metadata: Map<String, Value>,
}

/// Front matter that could not be used.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// Not valid front matter (perhaps not front matter at all): kept as body text.
    Malformed(String),
    /// Over a bound (size, nesting, alias expansion): left out; the body starts at `body_start`.
    Refused { reason: String, body_start: usize },
}

impl Unusable {
    #[cfg(test)]
    fn message(&self) -> &str {
        match self {
            Unusable::Malformed(m) | Unusable::Refused { reason: m, .. } => m,
        }
    }
}

/// Parses front matter at `start` (after any BOM). `Ok(None)`: there is none.
pub(crate) fn parse(source: &str, start: usize) -> Result<Option<FrontMatter>, Unusable> {
    let text = &source[start..];
    let Some(first_len) = delimiter_line(text, 0, "---") else {
        return Ok(None);
    };
    let mut pos = first_len;
    let yaml_start = pos;
    let yaml_end;
    loop {
        if pos >= text.len() {
            return Err(Unusable::Malformed(
                "front matter has no closing `---` line".into(),
            ));
        }
        if let Some(len) =
            delimiter_line(text, pos, "---").or_else(|| delimiter_line(text, pos, "..."))
        {
            yaml_end = pos;
            pos += len;
            break;
        }
        pos = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
    }
    let yaml = &text[yaml_start..yaml_end];
    let refused = |reason: String| Unusable::Refused {
        reason,
        body_start: start + pos,
    };
    if yaml.len() > MAX_FRONT_MATTER {
        return Err(refused(format!(
            "front matter larger than {MAX_FRONT_MATTER} bytes"
        )));
    }
    let metadata = match load_bounded(yaml) {
        Ok(None | Some(Value::Null)) => Map::new(),
        Ok(Some(Value::Object(m))) => m,
        Ok(Some(_)) => {
            return Err(Unusable::Malformed("front matter is not a mapping".into()));
        }
        Err(LoadError::Syntax(msg)) => return Err(Unusable::Malformed(msg)),
        Err(LoadError::Bound(msg)) => return Err(refused(msg)),
    };
    Ok(Some(FrontMatter {
        body_start: start + pos,
        metadata,
    }))
}

/// Length of the line at `pos` (including its line break) if it is exactly `delim` plus optional
/// trailing spaces.
fn delimiter_line(text: &str, pos: usize, delim: &str) -> Option<usize> {
    let rest = &text[pos..];
    let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
    let line = rest[..end].trim_end_matches(['\n', '\r', ' ', '\t']);
    (line == delim).then_some(end)
}

/// A collection being built, with the anchor it will be registered under.
enum Open {
    Seq(Vec<Value>, usize),
    /// The map so far, the key awaiting its value (`Some(None)`: an unusable key), the anchor.
    Map(Map<String, Value>, Option<Option<String>>, usize),
}

enum LoadError {
    Syntax(String),
    Bound(String),
}

/// Loads the first YAML document of `yaml` as JSON, within [`MAX_NODES`] and [`MAX_DEPTH`].
fn load_bounded(yaml: &str) -> Result<Option<Value>, LoadError> {
    let mut parser = Parser::new_from_str(yaml);
    let mut stack: Vec<Open> = Vec::new();
    // Anchor id -> (value, nodes it holds).
    let mut anchors: HashMap<usize, (Value, usize)> = HashMap::new();
    // Nodes built so far; per open collection, the count when it opened.
    let mut nodes = 0usize;
    let mut opened_at: Vec<usize> = Vec::new();
    loop {
        let (event, _) = parser
            .next_token()
            .map_err(|e| LoadError::Syntax(format!("malformed front matter: {e}")))?;
        let (value, size, anchor) = match event {
            Event::StreamEnd => return Ok(None),
            Event::DocumentEnd if stack.is_empty() => return Ok(None),
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => {
                continue;
            }
            Event::SequenceStart(anchor, _) => {
                open(
                    &mut stack,
                    &mut opened_at,
                    nodes,
                    Open::Seq(Vec::new(), anchor),
                )?;
                continue;
            }
            Event::MappingStart(anchor, _) => {
                let map = Open::Map(Map::new(), None, anchor);
                open(&mut stack, &mut opened_at, nodes, map)?;
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let start = opened_at.pop().unwrap_or(0);
                match stack.pop() {
                    Some(Open::Seq(items, anchor)) => (Value::Array(items), nodes - start, anchor),
                    Some(Open::Map(map, _, anchor)) => (Value::Object(map), nodes - start, anchor),
                    None => {
                        let reason = "malformed front matter: unbalanced collection";
                        return Err(LoadError::Syntax(reason.into()));
                    }
                }
            }
            Event::Scalar(text, style, anchor, _) => {
                nodes += 1;
                (scalar(text, style), 1, anchor)
            }
            Event::Alias(id) => {
                let Some((value, size)) = anchors.get(&id) else {
                    let reason = "malformed front matter: unknown alias";
                    return Err(LoadError::Syntax(reason.into()));
                };
                nodes += size;
                if nodes > MAX_NODES {
                    return Err(LoadError::Bound(too_big()));
                }
                (value.clone(), *size, 0)
            }
        };
        if nodes > MAX_NODES {
            return Err(LoadError::Bound(too_big()));
        }
        if anchor > 0 {
            anchors.insert(anchor, (value.clone(), size.max(1)));
        }
        match stack.last_mut() {
            None => return Ok(Some(value)),
            Some(Open::Seq(items, _)) => items.push(value),
            // A key that is a collection has no useful name: its entry is dropped.
            Some(Open::Map(map, key, _)) => match key.take() {
                None => *key = Some(key_text(value)),
                Some(Some(k)) => {
                    map.insert(k, value);
                }
                Some(None) => {}
            },
        }
    }
}

fn open(
    stack: &mut Vec<Open>,
    opened_at: &mut Vec<usize>,
    nodes: usize,
    collection: Open,
) -> Result<(), LoadError> {
    if stack.len() >= MAX_DEPTH {
        return Err(LoadError::Bound("front matter too deeply nested".into()));
    }
    stack.push(collection);
    opened_at.push(nodes);
    Ok(())
}

fn too_big() -> String {
    format!("front matter expands to more than {MAX_NODES} values (YAML alias bomb?)")
}

/// A mapping key as text, or `None` for a key that is a collection or null.
fn key_text(key: Value) -> Option<String> {
    match key {
        Value::String(s) => Some(s),
        Value::Bool(_) | Value::Number(_) => Some(key.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// A scalar as JSON: quoted scalars are strings; plain ones are typed as YAML 1.2 core types.
fn scalar(text: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::String(text);
    }
    match Yaml::from_str(&text) {
        Yaml::Integer(i) => Value::from(i),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Null => Value::Null,
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(text), Value::Number),
        _ => Value::String(text),
    }
}

/// Longest front matter value (as JSON) copied onto every chunk. A value is stored once per
/// chunk: a 60 KB `description` made a 71 KB file take 20 MB.
pub(crate) const MAX_CHUNK_VALUE_BYTES: usize = 1024;

/// Metadata copied onto every chunk: scalars and arrays of scalars (tags), not nested maps,
/// and none longer than [`MAX_CHUNK_VALUE_BYTES`]; those are returned with their sizes.
pub(crate) fn chunk_metadata(
    doc: &Map<String, Value>,
) -> (Map<String, Value>, Vec<(String, usize)>) {
    let mut kept = Map::new();
    let mut left_out = Vec::new();
    for (key, value) in doc {
        let copied = match value {
            Value::Array(a) => a.iter().all(|x| !x.is_object() && !x.is_array()),
            Value::Object(_) | Value::Null => false,
            _ => true,
        };
        if !copied {
            continue;
        }
        let bytes = value.to_string().len();
        if bytes > MAX_CHUNK_VALUE_BYTES {
            left_out.push((key.clone(), bytes));
        } else {
            kept.insert(key.clone(), value.clone());
        }
    }
    (kept, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(yaml: &str) -> String {
        format!("---\n{yaml}---\n# Body\n")
    }

    #[test]
    fn scalars_lists_and_small_aliases_load() {
        let src = doc("title: T\ntags: [a, b]\nn: 3\nok: true\nbase: &b {x: 1}\ncopy: *b\n");
        let fm = parse(&src, 0).unwrap().unwrap();
        assert_eq!(fm.metadata["title"], "T");
        assert_eq!(fm.metadata["tags"], serde_json::json!(["a", "b"]));
        assert_eq!(fm.metadata["n"], 3);
        assert_eq!(fm.metadata["ok"], true);
        assert_eq!(fm.metadata["copy"], serde_json::json!({"x": 1}));
        assert_eq!(&src[fm.body_start..], "# Body\n");
    }

    /// Every level doubles the one below: a naive load of 30 levels builds 2^30 nodes.
    #[test]
    fn alias_bombs_are_refused_not_expanded() {
        for (levels, width) in [(30, 2), (10, 10), (6, 40)] {
            let mut yaml = format!("a0: &a0 [{}]\n", vec!["x"; width].join(", "));
            for i in 1..levels {
                let refs = vec![format!("*a{}", i - 1); width].join(", ");
                yaml.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
            }
            let src = doc(&yaml);
            match parse(&src, 0).expect_err("refused") {
                Unusable::Refused { reason, body_start } => {
                    assert!(reason.contains("alias bomb"), "{reason}");
                    assert_eq!(&src[body_start..], "# Body\n");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = format!("k: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(
            parse(&doc(&deep), 0)
                .unwrap_err()
                .message()
                .contains("deeply nested")
        );
        let block: String = (0..100)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect();
        assert!(
            parse(&doc(&block), 0)
                .unwrap_err()
                .message()
                .contains("deeply nested")
        );
    }

    #[test]
    fn malformed_front_matter_is_an_error_message() {
        let malformed = |src: &str| match parse(&doc(src), 0) {
            Err(Unusable::Malformed(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(malformed("a: [1, 2\n").contains("malformed"));
        assert!(malformed("- just\n- a list\n").contains("not a mapping"));
        assert!(parse(&doc("x: *nowhere\n"), 0).is_err());
    }
}
