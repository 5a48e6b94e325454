//! YAML front matter: parsed into metadata, never embedded, never fatal.

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Front matter larger than this is not parsed (treated as text): bounds work on hostile input.
const MAX_FRONT_MATTER: usize = 64 * 1024;

pub(crate) struct FrontMatter {
    /// Offset where the body starts (after the closing `---` line).
    pub body_start: usize,
    pub metadata: Map<String, Value>,
}

/// Parses front matter at `start` (after any BOM). `Ok(None)`: there is none. `Err(msg)`: it is
/// malformed and the caller keeps it as body text.
pub(crate) fn parse(source: &str, start: usize) -> Result<Option<FrontMatter>, String> {
    let text = &source[start..];
    let Some(first_len) = delimiter_line(text, 0, "---") else {
        return Ok(None);
    };
    let mut pos = first_len;
    let yaml_start = pos;
    let yaml_end;
    loop {
        if pos >= text.len() {
            return Err("front matter has no closing `---` line".into());
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
    if yaml.len() > MAX_FRONT_MATTER {
        return Err("front matter too large to parse".into());
    }
    // Deep nesting could exhaust the parser's stack; real front matter is shallow.
    if yaml.bytes().filter(|b| matches!(b, b'[' | b'{')).count() > 256 {
        return Err("front matter too deeply nested".into());
    }
    let docs =
        YamlLoader::load_from_str(yaml).map_err(|e| format!("malformed front matter: {e}"))?;
    let metadata = match docs.into_iter().next() {
        None | Some(Yaml::Null) => Map::new(),
        Some(Yaml::Hash(h)) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) | Yaml::Real(s) => s,
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => continue,
                };
                m.insert(key, to_json(v, 0));
            }
            m
        }
        Some(_) => return Err("front matter is not a mapping".into()),
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

fn to_json(y: Yaml, depth: usize) -> Value {
    match y {
        Yaml::String(s) => Value::String(s),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(s), Value::Number),
        Yaml::Array(a) if depth < 16 => {
            Value::Array(a.into_iter().map(|v| to_json(v, depth + 1)).collect())
        }
        Yaml::Hash(h) if depth < 16 => {
            let mut m = Map::new();
            for (k, v) in h {
                if let Yaml::String(k) = k {
                    m.insert(k, to_json(v, depth + 1));
                }
            }
            Value::Object(m)
        }
        _ => Value::Null,
    }
}

/// Metadata copied onto every chunk: scalars and arrays of scalars (tags), not nested maps.
pub(crate) fn chunk_metadata(doc: &Map<String, Value>) -> Map<String, Value> {
    doc.iter()
        .filter(|(_, v)| match v {
            Value::Array(a) => a.iter().all(|x| !x.is_object() && !x.is_array()),
            Value::Object(_) | Value::Null => false,
            _ => true,
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
