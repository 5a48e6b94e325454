//! Where an index lives. The one place that decides the backend: a directory (redb + graph and
//! lexical files, the default) or a collection in PostgreSQL. Everything above it (the sync
//! plan, the chunker, the embedder, the query pipeline) runs the same on either.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Where an index lives.
///
/// ```
/// use rag_index_core::StoreLocation;
/// let at = StoreLocation::from_flag(Some("postgres://rag@db/rag"), "docs/.rag-index".as_ref(), Some("team-docs")).unwrap();
/// assert_eq!(at.to_string(), "postgres://db:5432/rag (collection team-docs)");
/// let at = StoreLocation::from_flag(None, "docs/.rag-index".as_ref(), None).unwrap();
/// assert_eq!(at, StoreLocation::Dir("docs/.rag-index".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// An index directory on this machine.
    Dir(PathBuf),
    /// A collection in a PostgreSQL database with pgvector.
    Postgres {
        /// `postgres://` or `postgresql://` URL (password and `sslmode` as libpq takes them).
        url: String,
        /// Collection name: one per synced folder.
        collection: String,
    },
}

impl StoreLocation {
    /// From a `--store` value (or `$RAG_INDEX_STORE`): a PostgreSQL URL, or nothing for the
    /// embedded index in `dir`. Without `collection`, a Postgres collection is named after the
    /// index directory's folder (the synced folder for the default `.rag-index`).
    pub fn from_flag(store: Option<&str>, dir: &Path, collection: Option<&str>) -> Result<Self> {
        let Some(url) = store.filter(|s| !s.is_empty()) else {
            return Ok(StoreLocation::Dir(dir.to_owned()));
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "--store {:?} is not a postgres:// URL (leave it out for the index directory)",
                    redact(url)
                ),
            });
        }
        let collection = match collection {
            Some(name) => name.to_string(),
            None => default_collection(dir),
        };
        for name in collection.split(',') {
            check_collection(name)?;
        }
        Ok(StoreLocation::Postgres {
            url: url.to_string(),
            collection,
        })
    }

    /// The collections named: `--collection a,b` reads several (searches only).
    pub fn collections(&self) -> Vec<String> {
        match self {
            StoreLocation::Dir(_) => Vec::new(),
            StoreLocation::Postgres { collection, .. } => {
                collection.split(',').map(str::to_string).collect()
            }
        }
    }

    /// Whether this is a PostgreSQL collection.
    pub fn is_postgres(&self) -> bool {
        matches!(self, StoreLocation::Postgres { .. })
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Dir(dir) => write!(f, "{}", dir.display()),
            StoreLocation::Postgres { url, collection } => {
                write!(f, "{} (collection {collection})", redact(url))
            }
        }
    }
}

/// The URL without user, password or parameters: `postgres://host:port/db`.
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let (host, db) = rest.split_once('/').unwrap_or((rest, ""));
    let host = match host.contains(':') || host.is_empty() {
        true => host.to_string(),
        false => format!("{host}:5432"),
    };
    format!("{scheme}://{host}/{db}")
}

/// The folder name an index directory belongs to: the parent of a `.rag-index`, else the
/// directory itself.
fn default_collection(dir: &Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let named = match absolute.file_name().and_then(|n| n.to_str()) {
        Some(name) if name.starts_with('.') => absolute.parent().unwrap_or(&absolute),
        _ => &absolute,
    };
    let name: String = named
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("default")
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '-',
        })
        .collect();
    match name.is_empty() {
        true => "default".into(),
        false => name,
    }
}

fn check_collection(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    match ok {
        true => Ok(()),
        false => Err(Error::InvalidConfig {
            reason: format!(
                "collection name {name:?} must be 1-200 letters, digits, `-`, `_` or `.`"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            redact("postgres://u:secret@h:6000/rag?sslmode=require"),
            "postgres://h:6000/rag"
        );
        assert_eq!(
            default_collection(Path::new("/x/team docs/.rag-index")),
            "team-docs"
        );
        assert_eq!(default_collection(Path::new("/x/idx")), "idx");
        assert!(StoreLocation::from_flag(Some("mysql://x"), Path::new("i"), None).is_err());
        assert!(
            StoreLocation::from_flag(Some("postgres://h/db"), Path::new("i"), Some("a b")).is_err()
        );
    }
}
