//! The index directory: telling our directories from anyone else's, and the commit payload.
//!
//! A directory this crate creates gets a marker file. Only a directory with the marker is ever
//! deleted ([`LexicalIndex::create_fresh`](crate::LexicalIndex::create_fresh)) or has an index
//! created inside it when it already had content, so a wrong path from a caller can never wipe
//! or litter someone's folder. tantivy's garbage collection deletes only the files it lists as its
//! own, so the marker is never touched by it.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::error::LexicalError;

/// The marker file's name.
pub(crate) const MARKER: &str = "rag-lexical.marker";
const MARKER_TEXT: &str = "This directory is a rag-lexical index. It is derived data: deleting it is safe, \
                           the index is rebuilt from the store.\n";

/// tantivy's commit record, whose presence means an index exists.
pub(crate) const META: &str = "meta.json";

/// Version of what is indexed and how (schema, analyzer, payload). Bumped whenever a change makes
/// an existing index unfit; an index of another version is reported as
/// [`LexicalError::Corrupt`], which callers answer with a rebuild.
pub(crate) const FORMAT: u32 = 1;

/// What the directory holds, as far as opening it is concerned.
pub(crate) enum State {
    /// No directory, or an empty one, or one of ours without an index yet.
    Vacant,
    /// A tantivy index is there.
    Index,
}

/// Looks at `dir`, refusing a non-empty directory that is not an index and not ours.
pub(crate) fn inspect(dir: &Path) -> Result<State, LexicalError> {
    let mut entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(State::Vacant),
        Err(e) => return Err(LexicalError::io(dir, e)),
    };
    if dir.join(META).exists() {
        return Ok(State::Index);
    }
    let empty = entries.next().is_none();
    if empty || is_ours(dir) {
        Ok(State::Vacant)
    } else {
        Err(LexicalError::NotOurs { path: dir.into() })
    }
}

/// Whether `dir` carries our marker.
pub(crate) fn is_ours(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// Creates `dir` (and its parents) if needed and puts the marker in it.
pub(crate) fn claim(dir: &Path) -> Result<(), LexicalError> {
    fs::create_dir_all(dir).map_err(|e| LexicalError::io(dir, e))?;
    let marker = dir.join(MARKER);
    if !marker.is_file() {
        fs::write(&marker, MARKER_TEXT).map_err(|e| LexicalError::io(&marker, e))?;
    }
    Ok(())
}

/// Deletes `dir` and everything in it, only if it is ours (or empty). A missing `dir` is fine.
pub(crate) fn remove(dir: &Path) -> Result<(), LexicalError> {
    match fs::read_dir(dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(LexicalError::io(dir, e)),
        Ok(mut entries) => {
            if entries.next().is_some() && !is_ours(dir) {
                return Err(LexicalError::NotOurs { path: dir.into() });
            }
        }
    }
    fs::remove_dir_all(dir).map_err(|e| LexicalError::io(dir, e))
}

/// The commit payload carrying `generation`.
pub(crate) fn payload(generation: u64) -> String {
    format!("rag-lexical format={FORMAT} generation={generation}")
}

/// The generation of a commit payload: `Ok(None)` for an index never committed by a writer of
/// this crate, an error for a payload of another format or of no format at all.
pub(crate) fn parse_payload(
    dir: &Path,
    payload: Option<&str>,
) -> Result<Option<u64>, LexicalError> {
    let Some(payload) = payload else {
        return Ok(None);
    };
    let corrupt = || LexicalError::Corrupt {
        path: dir.into(),
        detail: format!("commit payload {payload:?} is not rag-lexical format {FORMAT}"),
    };
    let rest = payload
        .strip_prefix(&format!("rag-lexical format={FORMAT} generation="))
        .ok_or_else(corrupt)?;
    rest.parse().map(Some).map_err(|_| corrupt())
}
