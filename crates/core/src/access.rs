//! Permission labels: which chunks a caller may see.
//!
//! A document requires every label it carries: the labels of its front matter's `access` field
//! and of each rule of the folder's `.ragaccess` file that matches its path. A caller states the
//! labels it holds ([`Access`]) and sees a chunk only when it holds all the labels the chunk
//! requires; a document with no labels is public. Labels are stored in the chunk's metadata
//! under [`ACCESS_KEY`] and checked inside every search signal, never after it.
//!
//! Anything unreadable fails closed: an `access` value that is not a label or a list of labels
//! gives the chunk [`UNREADABLE_LABEL`], which no caller can hold.

use std::collections::BTreeSet;
use std::path::Path;

use globset::{Glob, GlobMatcher};
use serde_json::{Map, Value};

use crate::folder_file::{FolderReadError, read_folder_file};
use crate::quoted::quoted;
use crate::{Error, Result};

/// The metadata key that holds a chunk's required labels, and the front-matter field read.
pub const ACCESS_KEY: &str = "access";
/// The rule file, at the root of the synced folder.
pub const RULES_FILE: &str = ".ragaccess";
/// Required by a chunk whose labels could not be read: no valid label set contains it.
pub const UNREADABLE_LABEL: &str = "!unreadable";
/// Longest label, in bytes.
pub const MAX_LABEL_BYTES: usize = 64;
/// Largest rule file read.
const MAX_RULES_BYTES: u64 = 1 << 20;

/// Checks one label: 1 to 64 bytes of ASCII letters, digits and `_ . : -`, starting with a
/// letter or digit.
pub fn check_label(label: &str) -> std::result::Result<(), String> {
    let ok = !label.is_empty()
        && label.len() <= MAX_LABEL_BYTES
        && label.as_bytes()[0].is_ascii_alphanumeric()
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{} is not a label (1 to {MAX_LABEL_BYTES} ASCII letters, digits, `_`, `.`, \
             `:` or `-`, starting with a letter or digit)",
            quoted(label)
        )),
    }
}

/// The labels a caller holds. There is no default: every search states one, and
/// [`Access::public`] sees only documents that need no label.
///
/// ```
/// use rag_index_core::Access;
/// let finance = Access::labels(["finance"]).unwrap();
/// assert!(finance.may_see(&["finance".to_string()]));
/// assert!(!Access::public().may_see(&["finance".to_string()]));
/// assert!(Access::labels(["no spaces"]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    held: BTreeSet<String>,
}

impl Access {
    /// A caller holding no label: sees public documents only.
    pub fn public() -> Access {
        Access {
            held: BTreeSet::new(),
        }
    }

    /// A caller holding `labels` (each checked with [`check_label`]).
    pub fn labels<S: AsRef<str>>(labels: impl IntoIterator<Item = S>) -> Result<Access> {
        let mut held = BTreeSet::new();
        for label in labels {
            let label = label.as_ref().trim();
            check_label(label).map_err(|reason| Error::InvalidRequest { reason })?;
            held.insert(label.to_string());
        }
        Ok(Access { held })
    }

    /// Parses `a,b,c` (empty: public).
    pub fn parse_list(list: &str) -> Result<Access> {
        Access::labels(list.split(',').map(str::trim).filter(|s| !s.is_empty()))
    }

    /// The labels held.
    pub fn held(&self) -> impl Iterator<Item = &str> {
        self.held.iter().map(String::as_str)
    }

    /// Whether a chunk that requires `required` may be shown to this caller.
    pub fn may_see(&self, required: &[String]) -> bool {
        required.iter().all(|label| self.held.contains(label))
    }
}

/// The labels a chunk's metadata requires, sorted. A malformed value requires
/// [`UNREADABLE_LABEL`].
pub fn required_labels(metadata: &Map<String, Value>) -> Vec<String> {
    match metadata.get(ACCESS_KEY) {
        None => Vec::new(),
        Some(value) => parse_labels(value).unwrap_or_else(|_| vec![UNREADABLE_LABEL.to_string()]),
    }
}

/// A front-matter `access` value: a label, a comma-separated string, or a list of labels.
fn parse_labels(value: &Value) -> std::result::Result<Vec<String>, String> {
    let mut out = BTreeSet::new();
    let mut add = |s: &str| -> std::result::Result<(), String> {
        for label in s.split(',').map(str::trim).filter(|l| !l.is_empty()) {
            check_label(label)?;
            out.insert(label.to_string());
        }
        Ok(())
    };
    match value {
        Value::String(s) => add(s)?,
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => add(s)?,
                    other => return Err(format!("{} is not a label", quoted(&other.to_string()))),
                }
            }
        }
        other => {
            return Err(format!(
                "{} is not a label or a list of labels",
                quoted(&other.to_string())
            ));
        }
    }
    Ok(out.into_iter().collect())
}

/// Sets `metadata[access]` to the union of the document's own labels and `rule_labels`, as a
/// sorted list (absent when there are none). Returns a warning when the document's own value
/// could not be read (the chunk then requires [`UNREADABLE_LABEL`]).
pub(crate) fn apply_labels(
    metadata: &mut Map<String, Value>,
    rule_labels: &[String],
) -> Option<String> {
    let mut warning = None;
    let mut labels: BTreeSet<String> = rule_labels.iter().cloned().collect();
    if let Some(own) = metadata.get(ACCESS_KEY) {
        match parse_labels(own) {
            Ok(own) => labels.extend(own),
            Err(reason) => {
                warning = Some(format!(
                    "front matter `{ACCESS_KEY}`: {reason}; the document is hidden from every \
                     caller until it is fixed"
                ));
                labels.insert(UNREADABLE_LABEL.to_string());
            }
        }
    }
    if labels.is_empty() {
        metadata.remove(ACCESS_KEY);
    } else {
        metadata.insert(
            ACCESS_KEY.to_string(),
            Value::from(labels.into_iter().collect::<Vec<_>>()),
        );
    }
    warning
}

/// Gives every chunk of a freshly chunked document its required labels: its own front-matter
/// `access` plus `rule_labels`. A document whose front matter mentions `access` but could not be
/// read (refused or malformed, so no field reached the chunks) fails closed.
pub(crate) fn label_document(
    doc: &mut rag_chunker::Document,
    bytes: &[u8],
    rule_labels: &[String],
) {
    // The document's own front matter, whole: chunk metadata leaves out nested or empty
    // values, and an `access` of that shape must fail closed, not vanish.
    let own = doc.metadata.get(ACCESS_KEY).cloned();
    let lost = own.is_none() && front_matter_mentions_access(bytes);
    if lost {
        doc.warnings.push(format!(
            "the front matter names `{ACCESS_KEY}` but could not be read; the document is \
             hidden from every caller until it is fixed"
        ));
    }
    let mut warning = None;
    for chunk in &mut doc.chunks {
        match (&own, lost) {
            (Some(value), _) => {
                chunk.metadata.insert(ACCESS_KEY.into(), value.clone());
            }
            (None, true) => {
                chunk
                    .metadata
                    .insert(ACCESS_KEY.into(), Value::from(UNREADABLE_LABEL));
            }
            (None, false) => {}
        }
        warning = warning.or(apply_labels(&mut chunk.metadata, rule_labels));
    }
    doc.warnings.extend(warning.filter(|_| !lost));
}

/// Whether the text opens with a `---` front-matter block that has an `access:` line.
fn front_matter_mentions_access(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return false;
    }
    for line in lines {
        let line = line.trim_end();
        if line == "---" || line == "..." {
            return false;
        }
        if let Some(rest) = line.trim_start().strip_prefix(ACCESS_KEY)
            && rest.trim_start().starts_with(':')
        {
            return true;
        }
    }
    false
}

/// The rules of a `.ragaccess` file: each line `GLOB LABEL[,LABEL...]`, `#` starts a comment.
/// A glob matches the whole `/`-separated path relative to the folder (`*` stays inside one
/// folder, `**` crosses folders: `**/secret/*.md`). A file requires the labels of every rule
/// that matches it.
#[derive(Debug, Clone, Default)]
pub struct AccessRules {
    text: String,
    rules: Vec<(GlobMatcher, Vec<String>)>,
}

impl AccessRules {
    /// Parses rules; the error names the line.
    pub fn parse(text: &str) -> std::result::Result<AccessRules, String> {
        let mut rules = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split_once('#').map_or(raw, |(rule, _)| rule).trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [glob, labels] = fields[..] else {
                return Err(format!(
                    "line {}: expected `GLOB LABEL[,LABEL...]`, found {}",
                    n + 1,
                    quoted(line)
                ));
            };
            let matcher = globset::GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map(|g: Glob| g.compile_matcher())
                .map_err(|e| format!("line {}: glob {}: {}", n + 1, quoted(glob), e.kind()))?;
            let labels = parse_labels(&Value::from(labels))
                .map_err(|reason| format!("line {}: {reason}", n + 1))?;
            if labels.is_empty() {
                return Err(format!("line {}: no label", n + 1));
            }
            rules.push((matcher, labels));
        }
        Ok(AccessRules {
            text: text.to_string(),
            rules,
        })
    }

    /// Reads `root/.ragaccess` (no file: no rules). Any problem reading it is an error: rules
    /// that are silently skipped would expose what they protect.
    pub fn load(root: &Path) -> Result<AccessRules> {
        let path = root.join(RULES_FILE);
        let problem = |reason: String| Error::AccessRules {
            path: path.clone(),
            reason,
        };
        let bytes = match read_folder_file(&path, MAX_RULES_BYTES) {
            Ok(read) => read.bytes,
            // A link to a missing file was meant to hold rules: not the same as no file.
            Err(FolderReadError::NotFound) if std::fs::symlink_metadata(&path).is_ok() => {
                return Err(problem("a link to a file that does not exist".into()));
            }
            Err(FolderReadError::NotFound) => return Ok(AccessRules::default()),
            Err(e) => return Err(problem(e.to_string())),
        };
        let text = String::from_utf8(bytes).map_err(|_| problem("not UTF-8".into()))?;
        AccessRules::parse(&text).map_err(problem)
    }

    /// The rule text as read (stored with each commit, to see which files a rule change affects).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Labels the rules give to the file at `rel`, sorted.
    pub fn labels_for(&self, rel: &str) -> Vec<String> {
        let labels: BTreeSet<&String> = self
            .rules
            .iter()
            .filter(|(glob, _)| glob.is_match(rel))
            .flat_map(|(_, labels)| labels)
            .collect();
        labels.into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_whole_paths_and_add_up() {
        let rules = AccessRules::parse(
            "# finance\nfinance/** finance\n**/pricing*.md finance,legal  # both\n\n*.md top\n",
        )
        .unwrap();
        assert_eq!(rules.labels_for("finance/q1/report.md"), ["finance"]);
        assert_eq!(
            rules.labels_for("sales/pricing-2026.md"),
            ["finance", "legal"]
        );
        assert_eq!(rules.labels_for("readme.md"), ["top"]);
        assert!(rules.labels_for("guides/readme.md").is_empty());
        assert!(AccessRules::parse("only-a-glob").is_err());
        assert!(AccessRules::parse("a/** bad label!").is_err());
        assert!(AccessRules::parse("[ x").is_err());
    }

    #[test]
    fn unreadable_labels_fail_closed() {
        let mut meta = Map::new();
        meta.insert(ACCESS_KEY.into(), Value::from(7));
        assert!(apply_labels(&mut meta, &[]).is_some());
        let required = required_labels(&meta);
        assert_eq!(required, [UNREADABLE_LABEL]);
        assert!(!Access::labels(["finance"]).unwrap().may_see(&required));
        assert!(Access::labels([UNREADABLE_LABEL]).is_err());
        for shape in [
            Value::Null,
            serde_json::json!({"team": "finance"}),
            serde_json::json!([["a"]]),
        ] {
            let mut meta = Map::new();
            meta.insert(ACCESS_KEY.into(), shape);
            assert!(apply_labels(&mut meta, &[]).is_some());
            assert_eq!(required_labels(&meta), [UNREADABLE_LABEL]);
        }
    }

    #[test]
    fn own_and_rule_labels_are_merged() {
        let mut meta = Map::new();
        meta.insert(ACCESS_KEY.into(), Value::from("legal, hr"));
        assert!(apply_labels(&mut meta, &["finance".to_string()]).is_none());
        assert_eq!(required_labels(&meta), ["finance", "hr", "legal"]);
        let all = Access::parse_list("finance,hr,legal,extra").unwrap();
        assert!(all.may_see(&required_labels(&meta)));
        assert!(
            !Access::parse_list("finance,hr")
                .unwrap()
                .may_see(&required_labels(&meta))
        );
        let mut public = Map::new();
        assert!(apply_labels(&mut public, &[]).is_none());
        assert!(!public.contains_key(ACCESS_KEY));
    }
}
