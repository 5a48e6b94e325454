//! Metadata filters: conditions on front-matter fields, tags and the path that a chunk must meet
//! to be returned. They are checked inside each search signal (the graph walk, the flat scan,
//! the BM25 scan), so a search still returns k hits when k matching chunks exist.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Map, Value};

use crate::quoted::quoted;
use crate::{Error, Result};

/// How a condition compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `KEY=A,B`: the field (or one element of a list field) equals one of the values.
    Eq,
    /// `KEY!=A,B`: no element of the field equals any of the values (a missing field passes).
    Ne,
    /// `KEY>=V`: numbers compare as numbers, everything else as text (RFC 3339 dates sort right).
    Ge,
    /// `KEY>V`.
    Gt,
    /// `KEY<=V`.
    Le,
    /// `KEY<V`.
    Lt,
}

/// One condition of a filter, parsed from `KEY=VALUE[,VALUE...]` or `KEY>=VALUE` (and `!=`,
/// `>`, `<=`, `<`).
///
/// ```
/// use rag_index_core::Condition;
/// let c: Condition = "tags=eu,global".parse().unwrap();
/// assert_eq!(c.key(), "tags");
/// assert!("=x".parse::<Condition>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    key: String,
    op: Op,
    values: Vec<String>,
    /// `values` sorted and distinct: checked for every point a search visits, so a list of
    /// hundreds of values (a filter on many paths) costs a binary search, not a scan.
    sorted: Vec<String>,
}

/// Keys every chunk has, besides its metadata fields.
pub const BUILT_IN_KEYS: [&str; 2] = ["path", "title"];

impl Condition {
    /// A condition; `values` must not be empty (comparisons use the first).
    pub fn new(key: impl Into<String>, op: Op, values: Vec<String>) -> Result<Condition> {
        let key = key.into();
        let invalid = |reason: String| Err(Error::InvalidRequest { reason });
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return invalid(format!(
                "filter key {} must be letters, digits, `_`, `.` or `-`",
                quoted(&key)
            ));
        }
        if values.is_empty() || values.iter().any(String::is_empty) {
            return invalid(format!("filter on {} has an empty value", quoted(&key)));
        }
        if !matches!(op, Op::Eq | Op::Ne) && values.len() > 1 {
            return invalid(format!("a comparison on {} takes one value", quoted(&key)));
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        sorted.dedup();
        Ok(Condition {
            key,
            op,
            values,
            sorted,
        })
    }

    /// The field it tests.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The comparison.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The values compared with (any of them for `=` and `!=`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a chunk with this path, title and metadata meets it.
    pub(crate) fn matches(&self, path: &str, title: &str, metadata: &Map<String, Value>) -> bool {
        match self.key.as_str() {
            "path" => self.holds(std::iter::once(Cow::Borrowed(path))),
            "title" => self.holds(std::iter::once(Cow::Borrowed(title))),
            key => match metadata.get(key) {
                None => self.holds(std::iter::empty()),
                Some(Value::Array(items)) => self.holds(items.iter().filter_map(scalar)),
                Some(value) => self.holds(scalar(value).into_iter()),
            },
        }
    }

    /// Whether a field with these scalar values meets the condition.
    fn holds<'v>(&self, mut scalars: impl Iterator<Item = Cow<'v, str>>) -> bool {
        let is_listed = |s: &str| self.sorted.binary_search_by(|v| v.as_str().cmp(s)).is_ok();
        match self.op {
            Op::Eq => scalars.any(|s| is_listed(&s)),
            Op::Ne => !scalars.any(|s| is_listed(&s)),
            op => scalars.any(|s| {
                let order = compare(&s, &self.values[0]);
                match op {
                    Op::Ge => order.is_ge(),
                    Op::Gt => order.is_gt(),
                    Op::Le => order.is_le(),
                    _ => order.is_lt(),
                }
            }),
        }
    }
}

fn scalar(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        _ => None,
    }
}

fn compare(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    }
}

impl FromStr for Condition {
    type Err = Error;

    fn from_str(s: &str) -> Result<Condition> {
        // Two-character operators first, so `a>=b` is not read as `a>` `=b`.
        const OPS: [(&str, Op); 6] = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("!=", Op::Ne),
            ("=", Op::Eq),
            (">", Op::Gt),
            ("<", Op::Lt),
        ];
        let found = s
            .char_indices()
            .find_map(|(i, _)| {
                OPS.iter()
                    .find(|(text, _)| s[i..].starts_with(text))
                    .map(|&(text, op)| (i, text.len(), op))
            })
            .ok_or_else(|| Error::InvalidRequest {
                reason: format!("filter {} is not KEY=VALUE (or KEY>=VALUE, ...)", quoted(s)),
            })?;
        let (at, len, op) = found;
        let values = s[at + len..]
            .split(',')
            .map(|v| v.trim().to_string())
            .collect();
        Condition::new(s[..at].trim(), op, values)
    }
}

/// A path glob (`docs/**/*.md`): `*` stays inside one folder, `**` crosses folders.
#[derive(Debug, Clone)]
pub struct PathGlob {
    text: String,
    matcher: GlobMatcher,
}

impl PathGlob {
    /// Compiles `glob`.
    pub fn new(glob: &str) -> Result<PathGlob> {
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::InvalidRequest {
                reason: format!("path glob {}: {}", quoted(glob), e.kind()),
            })?
            .compile_matcher();
        Ok(PathGlob {
            text: glob.to_string(),
            matcher,
        })
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The glob as a POSIX (PostgreSQL) regular expression: globset's translation without its
    /// leading `(?-u)` flag, which is Rust-regex-only; the rest of it is ARE syntax.
    pub(crate) fn posix_regex(&self) -> String {
        let regex = self.matcher.glob().regex();
        regex.strip_prefix("(?-u)").unwrap_or(regex).to_string()
    }

    /// Whether `path` (`/`-separated, relative to the folder) matches.
    pub fn matches_path(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }
}

impl PartialEq for PathGlob {
    fn eq(&self, other: &PathGlob) -> bool {
        self.text == other.text
    }
}

/// What a chunk must meet: every condition, and one of the path globs when there are any.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub(crate) conditions: Vec<Condition>,
    pub(crate) paths: Vec<PathGlob>,
}

impl Filter {
    /// Whether it lets everything through.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.paths.is_empty()
    }

    /// Whether a chunk with this path, title and metadata passes.
    pub(crate) fn matches(&self, path: &str, title: &str, metadata: &Map<String, Value>) -> bool {
        (self.paths.is_empty() || self.paths.iter().any(|g| g.matches_path(path)))
            && self
                .conditions
                .iter()
                .all(|c| c.matches(path, title, metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn conditions_parse_and_match_lists_and_comparisons() {
        let m =
            meta(r#"{"tags": ["eu", "pricing"], "weight": 3, "modified": "2026-03-01T00:00:00Z"}"#);
        let t = |s: &str| s.parse::<Condition>().unwrap().matches("a/b.md", "B", &m);
        assert!(t("tags=eu"));
        assert!(t("tags=us,pricing"));
        assert!(!t("tags=us"));
        assert!(t("tags!=us"));
        assert!(!t("tags!=eu"));
        assert!(t("weight>=3") && t("weight<10") && !t("weight>3"));
        assert!(t("modified>=2026-01-01") && !t("modified<2026-01-01"));
        assert!(t("path=a/b.md") && t("title=B"));
        assert!(!t("missing=x"));
        assert!("tags".parse::<Condition>().is_err());
        assert!("tags=".parse::<Condition>().is_err());
        assert!("w>=1,2".parse::<Condition>().is_err());
        assert!("bad key=1".parse::<Condition>().is_err());
    }

    #[test]
    fn paths_are_any_of_and_conditions_all_of() {
        let filter = Filter {
            conditions: vec!["tags=eu".parse().unwrap()],
            paths: vec![
                PathGlob::new("docs/**").unwrap(),
                PathGlob::new("*.md").unwrap(),
            ],
        };
        let eu = meta(r#"{"tags": "eu"}"#);
        assert!(filter.matches("docs/x/y.md", "", &eu));
        assert!(filter.matches("top.md", "", &eu));
        assert!(!filter.matches("other/top.md", "", &eu));
        assert!(!filter.matches("docs/y.md", "", &Map::new()));
        assert!(Filter::default().is_empty());
    }
}
