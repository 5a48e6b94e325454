//! Config and data files (JSON, YAML, TOML) to Markdown: one section per top-level key, the key
//! path as its heading and the value as a fenced code block in the original syntax. A key whose
//! text is over [`BIG`] bytes and that holds a mapping or sequence is split into its members, one
//! heading level deeper (down to `######`).
//!
//! JSON and YAML sections are slices of the source (exact `source` spans); TOML sections are
//! re-serialised with the `toml` crate (a table may be spread over the file), without spans.

use std::ops::Range;

use crate::builder::MarkdownBuilder;
use crate::charset;
use crate::config_yaml;
use crate::convert::{Converted, FormatError};
use crate::format::ConfigKind;

/// A key's source text over this many bytes is split into its members when it has some.
pub(crate) const BIG: usize = 1500;
/// Heading levels used for key paths.
const MAX_LEVEL: usize = 6;

/// One key (or sequence element) and its text.
#[derive(Debug, Default)]
pub(crate) struct Member {
    /// `key`, or `[i]` for a sequence element.
    pub key: String,
    /// The member's bytes in the source, when sliced from it.
    pub range: Option<Range<usize>>,
    /// Text shown for the member: the source slice, or a re-serialisation.
    pub text: String,
    pub children: Vec<Member>,
}

pub(crate) fn convert(kind: ConfigKind, bytes: &[u8]) -> Result<Converted, FormatError> {
    let (name, lang) = match kind {
        ConfigKind::Json => ("json", "json"),
        ConfigKind::Yaml => ("yaml", "yaml"),
        ConfigKind::Toml => ("toml", "toml"),
        #[allow(unreachable_patterns)]
        _ => ("config", ""),
    };
    let mut out = charset::convert_text(name, bytes, |src| {
        let members = match kind {
            ConfigKind::Json => json_members(src)?,
            ConfigKind::Yaml => config_yaml::members(src)?,
            _ => toml_members(src)?,
        };
        let mut b = MarkdownBuilder::new();
        if members.is_empty() {
            // A scalar document, or an empty one.
            let range = kind_ranges(kind, src);
            b.code_block(lang, src, &[(0..src.len(), range, None)]);
        } else {
            render(&mut b, &members, 1, "", lang);
        }
        Ok(b.into_converted(name, None))
    })?;
    out.metadata.insert("language".into(), lang.into());
    Ok(out)
}

fn kind_ranges(kind: ConfigKind, src: &str) -> Option<Range<usize>> {
    (kind != ConfigKind::Toml).then_some(0..src.len())
}

fn path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else if key.starts_with('[') {
        format!("{prefix}{key}")
    } else {
        format!("{prefix}.{key}")
    }
}

fn render(b: &mut MarkdownBuilder, members: &[Member], level: usize, prefix: &str, lang: &str) {
    for m in members {
        let p = path(prefix, &m.key);
        b.heading_prefix(level);
        b.markup(&collapse_line(&p));
        b.end_block();
        if m.text.len() > BIG && !m.children.is_empty() && level < MAX_LEVEL {
            render(b, &m.children, level + 1, &p, lang);
        } else {
            let text = m.text.trim_end();
            b.code_block(lang, text, &[(0..text.len(), m.range.clone(), None)]);
        }
    }
}

/// A heading must stay on one line.
fn collapse_line(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.is_empty() {
        "(empty key)".into()
    } else {
        one
    }
}

fn invalid(format: &'static str, reason: String) -> FormatError {
    FormatError::Invalid { format, reason }
}

/// JSON: validated by serde_json (its error has line and column), then members are sliced by a
/// scanner that can trust the syntax.
fn json_members(src: &str) -> Result<Vec<Member>, FormatError> {
    serde_json::from_str::<serde::de::IgnoredAny>(src)
        .map_err(|e| invalid("json", e.to_string()))?;
    let bytes = src.as_bytes();
    let start = skip_ws(bytes, 0);
    let (_, members) = json_value(src, start, 1);
    Ok(members)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End of the string starting at `i` (a `"`), after its closing quote.
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// End of the value at `i`, and its members when it is a container and `level` allows.
fn json_value(src: &str, i: usize, level: usize) -> (usize, Vec<Member>) {
    let b = src.as_bytes();
    match b.get(i) {
        Some(b'{') | Some(b'[') if level <= MAX_LEVEL => {
            let object = b[i] == b'{';
            let mut members = Vec::new();
            let mut j = skip_ws(b, i + 1);
            let mut index = 0;
            while j < b.len() && !matches!(b[j], b'}' | b']') {
                let start = j;
                let key = if object {
                    let end = string_end(b, j);
                    let key = serde_json::from_str::<String>(&src[j..end]).unwrap_or_default();
                    j = skip_ws(b, end);
                    j = skip_ws(b, j + 1); // the ':'
                    key
                } else {
                    index += 1;
                    format!("[{}]", index - 1)
                };
                let (end, children) = json_value(src, j, level + 1);
                members.push(Member {
                    key,
                    range: Some(start..end),
                    text: src[start..end].to_string(),
                    children,
                });
                j = skip_ws(b, end);
                if b.get(j) == Some(&b',') {
                    j = skip_ws(b, j + 1);
                }
            }
            (j.saturating_add(1).min(b.len()), members)
        }
        Some(b'{') | Some(b'[') => (skip_container(b, i), Vec::new()),
        Some(b'"') => (string_end(b, i), Vec::new()),
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j, Vec::new())
        }
    }
}

/// End of a container, without recursion.
fn skip_container(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// TOML: parsed with the `toml` crate, members re-serialised.
fn toml_members(src: &str) -> Result<Vec<Member>, FormatError> {
    let table: toml::Table = src
        .parse()
        .map_err(|e: toml::de::Error| invalid("toml", toml_reason(src, &e)))?;
    Ok(toml_table(&[], &table, 1))
}

/// The parser's message at its line and column. Not the error's own display, which quotes
/// the whole source line: a line of 200,000 brackets made a 200 KB error message.
fn toml_reason(src: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let before = &src.as_bytes()[..span.start.min(src.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            // Characters, not bytes: a UTF-8 continuation byte starts none.
            let column = before[line_start..]
                .iter()
                .filter(|&&b| b & 0xC0 != 0x80)
                .count()
                + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

fn toml_table(parents: &[&str], table: &toml::Table, level: usize) -> Vec<Member> {
    table
        .iter()
        .map(|(k, v)| {
            let mut keys = parents.to_vec();
            keys.push(k);
            // Wrap the value in its full key path so the block is valid TOML on its own.
            let mut wrapped = v.clone();
            for key in keys.iter().rev() {
                let mut t = toml::Table::new();
                t.insert((*key).to_string(), wrapped);
                wrapped = toml::Value::Table(t);
            }
            let text = match &wrapped {
                toml::Value::Table(t) => toml::to_string(t).unwrap_or_default(),
                _ => String::new(),
            };
            let children = match v {
                toml::Value::Table(t) if level < MAX_LEVEL && text.len() > BIG => {
                    toml_table(&keys, t, level + 1)
                }
                _ => Vec::new(),
            };
            Member {
                key: k.clone(),
                range: None,
                text,
                children,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(kind: ConfigKind, s: &str) -> String {
        convert(kind, s.as_bytes())
            .map(|c| c.markdown)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn json_keys_are_sliced() {
        let src = r#"{ "name": "x", "deps": {"a": 1, "b": [1, 2]} }"#;
        let c = convert(ConfigKind::Json, src.as_bytes()).unwrap();
        assert_eq!(
            c.markdown,
            "# name\n\n```json\n\"name\": \"x\"\n```\n\n# deps\n\n```json\n\"deps\": {\"a\": 1, \"b\": [1, 2]}\n```\n"
        );
        let r = c.spans[1].source.clone().unwrap();
        assert_eq!(&src[r], r#""deps": {"a": 1, "b": [1, 2]}"#);
    }

    #[test]
    fn big_keys_split_into_members() {
        let big: Vec<String> = (0..200).map(|i| format!("\"k{i}\": {i}")).collect();
        let src = format!("{{\"small\": true, \"big\": {{{}}}}}", big.join(", "));
        let out = md(ConfigKind::Json, &src);
        assert!(out.contains("# small\n"));
        assert!(
            out.contains("# big\n\n## big.k0\n\n```json\n\"k0\": 0\n```"),
            "{out}"
        );
    }

    #[test]
    fn toml_sections() {
        let out = md(ConfigKind::Toml, "title = \"t\"\n[server]\nport = 8080\n");
        assert_eq!(
            out,
            "# title\n\n```toml\ntitle = \"t\"\n```\n\n# server\n\n```toml\n[server]\nport = 8080\n```\n"
        );
    }

    #[test]
    fn syntax_errors_have_positions() {
        for (kind, src) in [
            (ConfigKind::Json, "{\"a\": 1,\n \"b\" 2}"),
            (ConfigKind::Toml, "a = 1\nb = = 2\n"),
            (ConfigKind::Yaml, "a: 1\nb: [1, 2\n"),
        ] {
            let e = convert(kind, src.as_bytes()).unwrap_err();
            assert!(matches!(e, FormatError::Invalid { .. }), "{e}");
            assert!(
                e.to_string().contains("line") || e.to_string().contains('2'),
                "{e}"
            );
        }
    }

    #[test]
    fn a_toml_error_names_its_place_without_quoting_the_line() {
        let deep = format!(
            "title = \"é\"\na = {}{}\n",
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        let e = convert(ConfigKind::Toml, deep.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2, column "), "{e}");
        assert!(e.len() < 300, "{} bytes: {}", e.len(), &e[..300]);
    }
}
