//! Finding the documents of a folder: `.gitignore`, `.ignore` and `.ragignore` respected, hidden
//! entries and the index itself skipped.

use std::path::{Path, PathBuf};

/// File extensions that are indexed (lower-case).
pub const INDEXED_EXTENSIONS: &[&str] = &["md", "markdown", "txt"];

/// The name of the project-specific ignore file.
pub const RAGIGNORE: &str = ".ragignore";

/// A document found under the root.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// Path relative to the root, `/`-separated: the key in the manifest.
    pub rel: String,
    /// Absolute (or root-joined) path to read.
    pub abs: PathBuf,
}

/// A problem met while walking, attributed to a path when one is known.
#[derive(Debug, Clone)]
pub struct WalkProblem {
    /// Relative path (or the root's display form when unknown).
    pub rel: String,
    /// What went wrong.
    pub error: String,
}

/// Whether `path` has an indexed extension.
pub fn is_indexed_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| INDEXED_EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// `/`-separated form of a path relative to `root`, or `None` when it is not valid UTF-8.
pub fn relative_key(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut parts = Vec::new();
    for component in rel.components() {
        parts.push(component.as_os_str().to_str()?);
    }
    Some(parts.join("/"))
}

fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::Loop { child, .. } => Some(child),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}

/// Lists the documents under `root`, sorted by relative path, skipping `exclude` (the index
/// directory) and everything below it.
pub fn walk(root: &Path, exclude: Option<&Path>) -> (Vec<FoundFile>, Vec<WalkProblem>) {
    let exclude = exclude.and_then(|p| p.canonicalize().ok());
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(false)
        .git_global(false)
        // A docs folder that is not a git checkout still means its .gitignore.
        .require_git(false)
        .follow_links(true)
        .add_custom_ignore_filename(RAGIGNORE)
        .sort_by_file_path(|a, b| a.cmp(b));
    if let Some(exclude) = exclude {
        builder.filter_entry(move |entry| {
            // Cheap check first: only directories can contain the index.
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && entry.path().canonicalize().is_ok_and(|p| p == exclude))
        });
    }
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for entry in builder.build() {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                if !entry.file_type().is_some_and(|t| t.is_file()) || !is_indexed_extension(path) {
                    continue;
                }
                match relative_key(root, path) {
                    Some(rel) => files.push(FoundFile {
                        rel,
                        abs: path.to_owned(),
                    }),
                    None => problems.push(WalkProblem {
                        rel: path.to_string_lossy().into_owned(),
                        error: "path is not valid UTF-8; skipped".into(),
                    }),
                }
            }
            Err(err) => {
                let rel = error_path(&err)
                    .map(|p| {
                        relative_key(root, p).unwrap_or_else(|| p.to_string_lossy().into_owned())
                    })
                    .unwrap_or_else(|| root.display().to_string());
                problems.push(WalkProblem {
                    rel,
                    error: err.to_string(),
                });
            }
        }
    }
    (files, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respects_ignore_files_hidden_dirs_and_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, body) in [
            ("a.md", "a"),
            ("b.txt", "b"),
            ("c.rs", "c"),
            ("sub/d.markdown", "d"),
            ("sub/e.MD", "e"),
            ("skipped/f.md", "f"),
            ("rag-ignored.md", "g"),
            (".git/h.md", "h"),
            ("idx/i.md", "i"),
        ] {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "skipped/\n").unwrap();
        std::fs::write(root.join(RAGIGNORE), "rag-ignored.md\n").unwrap();
        let (files, problems) = walk(root, Some(&root.join("idx")));
        let rels: Vec<_> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["a.md", "b.txt", "sub/d.markdown", "sub/e.MD"]);
        assert!(problems.is_empty(), "{problems:?}");
    }
}
