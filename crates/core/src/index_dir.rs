//! The index directory: what rag-index keeps in it, and the rule that it only ever deletes what
//! it can prove it wrote.
//!
//! An index directory holds `index.redb`, one saved graph directory per committed generation
//! (`graph-<generation>-<hex nonce>`), the lexical index (`lexical/`), the last sync's problems
//! (`last-sync.json`), files set aside by a runaway parse (`set-aside.json`), plus damaged stores moved aside. A folder holding
//! anything else and no store is not an index, and is refused rather than written into. Old
//! graph directories are removed only when their name has the exact form and every file in them
//! is one the vector index writes; they are removed file by file, never recursively.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rag_vector_index::VectorIndex;

use crate::{DB_FILE, Error, GRAPH_DIR_PREFIX, LEXICAL_DIR, Result};

/// Suffix of a damaged store moved aside by a rebuild: `index.redb.damaged-<unix seconds>`.
const DAMAGED_SUFFIX: &str = ".damaged-";

/// A fresh graph directory name for `generation`: never reused, so the directory the last
/// commit points at is never touched, and a crashed sync's leftovers never pass for a graph.
pub(crate) fn new_graph_dir_name(generation: u64) -> String {
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{GRAPH_DIR_PREFIX}{generation}-{nonce:x}")
}

/// Whether `name` has exactly the form [`new_graph_dir_name`] gives.
fn is_graph_dir_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(GRAPH_DIR_PREFIX) else {
        return false;
    };
    let Some((generation, nonce)) = rest.split_once('-') else {
        return false;
    };
    !generation.is_empty()
        && generation.bytes().all(|b| b.is_ascii_digit())
        && !nonce.is_empty()
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `name` is something rag-index keeps in an index directory.
fn is_ours(name: &str) -> bool {
    name == DB_FILE
        || name == LEXICAL_DIR
        || name == crate::LAST_SYNC_FILE
        || name == crate::WATCH_STATUS_FILE
        || name == crate::SET_ASIDE_FILE
        || (name.starts_with(DB_FILE) && name[DB_FILE.len()..].starts_with(DAMAGED_SUFFIX))
        || is_graph_dir_name(name)
}

/// Writes `name` in the index directory `dir` whole or not at all: a temporary file beside it,
/// then a rename, so a reader never sees half a file.
pub fn write_index_file(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Refuses a directory that holds foreign content and no store: writing an index there could
/// mix with, or later clean up, files rag-index did not create.
pub(crate) fn check_usable(dir: &Path) -> Result<()> {
    if dir.join(DB_FILE).exists() {
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(Error::Io {
                action: "cannot read index directory",
                path: dir.to_owned(),
                source,
            });
        }
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_ours) {
            return Err(Error::ForeignDirectory {
                path: dir.to_owned(),
                example: name.to_string_lossy().into_owned(),
            });
        }
    }
    Ok(())
}

/// Removes graph directories other than those in `keep` (the current one and the base it is a
/// delta of) that rag-index wrote: old generations, leftovers of interrupted syncs. Anything
/// else is left alone.
pub(crate) fn remove_unreferenced_graphs(dir: &Path, keep: &[&str]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if keep.contains(&name) || !is_graph_dir_name(name) {
            continue;
        }
        match VectorIndex::remove_saved(&entry.path()) {
            Ok(true) => {}
            Ok(false) => log::warn!(
                "{}: holds files rag-index did not write; left in place",
                entry.path().display()
            ),
            Err(e) => log::warn!("cannot remove old graph {name}: {e}"),
        }
    }
}

/// Moves a damaged store aside (never deletes it) so a new one can be built; returns where.
pub fn move_damaged_store_aside(dir: &Path) -> Result<PathBuf> {
    let from = dir.join(DB_FILE);
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut to = dir.join(format!("{DB_FILE}{DAMAGED_SUFFIX}{secs}"));
    let mut n = 1;
    while to.exists() {
        to = dir.join(format!("{DB_FILE}{DAMAGED_SUFFIX}{secs}-{n}"));
        n += 1;
    }
    std::fs::rename(&from, &to).map_err(|source| Error::Io {
        action: "cannot move the damaged index file aside",
        path: from.clone(),
        source,
    })?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_dir_names_are_exact() {
        assert!(is_graph_dir_name(&new_graph_dir_name(7)));
        assert!(is_graph_dir_name("graph-12-1a2b"));
        for name in [
            "graph-x",
            "graph-",
            "graph-1",
            "graph-1-",
            "graph-1-zz",
            "graph--ab",
        ] {
            assert!(!is_graph_dir_name(name), "{name}");
        }
    }

    #[test]
    fn foreign_folders_are_refused_and_their_graph_lookalikes_kept() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("graph-1-ab");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
        std::fs::create_dir(dir.path().join("graph-x")).unwrap();
        assert!(matches!(
            check_usable(dir.path()),
            Err(Error::ForeignDirectory { .. })
        ));
        remove_unreferenced_graphs(dir.path(), &["graph-2-cd"]);
        assert!(foreign.join("notes.txt").is_file());
        assert!(dir.path().join("graph-x").is_dir());
        assert!(check_usable(&dir.path().join("missing")).is_ok());
    }
}
