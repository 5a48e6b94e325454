//! The blake3 of the weights file, remembered between processes.
//!
//! The hash is part of the model fingerprint every sync compares with the index, but hashing
//! 90 MB costs 20–40 ms (plus reading it from disk when it is not cached), far more than a no-op
//! sync should take. So the hash is kept in a small file in the user's cache directory, keyed by
//! the weights' canonical path and valid only while its size, mtime, ctime and inode are
//! unchanged (ctime cannot be set back by tools that preserve mtime). Anything unexpected —
//! no cache directory, an unreadable or stale entry — falls back to hashing the file.
//! Whenever the weights are actually loaded, their bytes are hashed again and checked against
//! the fingerprint (see `Embedder::model`), so a wrong cache entry can never file vectors
//! under the wrong model.

use std::path::{Path, PathBuf};

use crate::EmbedError;

/// Overrides the cache directory (tests, sandboxes); empty disables the cache.
pub const CACHE_DIR_ENV: &str = "RAG_INDEX_CACHE_DIR";

/// What identifies one version of the file without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    inode: u64,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        let (ctime_ns, inode) = {
            use std::os::unix::fs::MetadataExt;
            (
                meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
                meta.ino(),
            )
        };
        #[cfg(not(unix))]
        let (ctime_ns, inode) = (0, 0);
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        FileStamp {
            size: meta.len(),
            mtime_ns,
            ctime_ns,
            inode,
        }
    }

    fn line(&self, hash: &str) -> String {
        format!(
            "v1 {} {} {} {} {hash}\n",
            self.size, self.mtime_ns, self.ctime_ns, self.inode
        )
    }
}

fn weights_error(path: &Path, e: std::io::Error) -> EmbedError {
    if e.kind() == std::io::ErrorKind::NotFound {
        EmbedError::Weights {
            path: path.to_owned(),
            message: "file not found".into(),
        }
    } else {
        EmbedError::Io {
            path: path.to_owned(),
            source: e,
        }
    }
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_DIR_ENV) {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("rag-index"));
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty())?;
    Some(PathBuf::from(home).join(".cache").join("rag-index"))
}

/// The cache entry for `weights`: one file per canonical path.
fn entry_path(weights: &Path) -> Option<PathBuf> {
    let canonical = weights.canonicalize().ok()?;
    let key = blake3::hash(canonical.as_os_str().as_encoded_bytes()).to_hex();
    Some(cache_dir()?.join(format!("weights-{}.blake3", &key.as_str()[..32])))
}

fn read_entry(entry: &Path, stamp: &FileStamp) -> Option<String> {
    let text = std::fs::read_to_string(entry).ok()?;
    let hash = text.trim_end().rsplit(' ').next()?;
    let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
    (valid && text == stamp.line(hash)).then(|| hash.to_owned())
}

fn write_entry(entry: &Path, stamp: &FileStamp, hash: &str) -> std::io::Result<()> {
    let dir = entry.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Write then rename, so a concurrent reader sees the old entry or the new one.
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), unique_suffix()));
    std::fs::write(&tmp, stamp.line(hash))?;
    std::fs::rename(&tmp, entry).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The weights' blake3 (hex), from the cache when the file is unchanged, else by hashing it.
pub(crate) fn weights_blake3(weights: &Path) -> Result<String, EmbedError> {
    let meta = std::fs::metadata(weights).map_err(|e| weights_error(weights, e))?;
    let stamp = FileStamp::of(&meta);
    let entry = entry_path(weights);
    if let Some(hash) = entry.as_deref().and_then(|e| read_entry(e, &stamp)) {
        return Ok(hash);
    }
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_mmap_rayon(weights)
        .map_err(|e| weights_error(weights, e))?;
    let hash = hasher.finalize().to_hex().to_string();
    // Only remember a hash of a file that did not change while it was read.
    let after = std::fs::metadata(weights).map(|m| FileStamp::of(&m));
    if let (Some(entry), Ok(after)) = (entry, after)
        && after == stamp
        && let Err(e) = write_entry(&entry, &stamp, &hash)
    {
        log::debug!("cannot cache the weights hash in {}: {e}", entry.display());
    }
    Ok(hash)
}

/// Drops the cache entry of `weights` (after it was found to be wrong).
pub(crate) fn forget(weights: &Path) {
    if let Some(entry) = entry_path(weights) {
        let _ = std::fs::remove_file(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_must_match_the_stamp() {
        let tmp = tempfile::tempdir().unwrap();
        let entry = tmp.path().join("e");
        let stamp = FileStamp {
            size: 10,
            mtime_ns: 20,
            ctime_ns: 30,
            inode: 40,
        };
        let hash = "ab".repeat(32);
        write_entry(&entry, &stamp, &hash).unwrap();
        assert_eq!(read_entry(&entry, &stamp).as_deref(), Some(hash.as_str()));
        let moved = FileStamp {
            ctime_ns: 31,
            ..stamp.clone()
        };
        assert_eq!(read_entry(&entry, &moved), None);
        std::fs::write(&entry, "v1 10 20 30 40 nothex\n").unwrap();
        assert_eq!(read_entry(&entry, &stamp), None);
    }
}
