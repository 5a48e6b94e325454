//! Deciding what to do with one found file: unchanged (stat fast path), touched (same bytes),
//! changed (read and chunked), vanished, or failed with a reason naming the problem.

use std::time::UNIX_EPOCH;

use rag_store::{FileRecord, FileStamp};

use super::set_aside::{ConvertingGuard, SetAside};
use crate::folder_file::{FolderReadError, io_reason, read_folder_file};
use crate::walk::FoundFile;
use crate::{Error, RagIndex};

/// Stat facts that decide whether a file must be re-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub size: u64,
    /// What the manifest records (marked racy when too recent to trust).
    pub mtime_ns: i128,
    /// The file's real modification time, for provenance.
    pub modified_ns: i128,
    /// Status-change time and inode, where the platform has them: a file rewritten with its
    /// size kept and its mtime set back (`cp -p`, `tar x`, `touch -r`) still shows as changed.
    pub stamp: Option<FileStamp>,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Stat {
            size: meta.len(),
            mtime_ns,
            modified_ns: mtime_ns,
            stamp: stamp_of(meta),
        }
    }
}

#[cfg(unix)]
fn stamp_of(meta: &std::fs::Metadata) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    Some(FileStamp {
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        inode: meta.ino(),
    })
}

#[cfg(not(unix))]
fn stamp_of(_meta: &std::fs::Metadata) -> Option<FileStamp> {
    None
}

/// A file whose bytes are unchanged but whose stat moved.
pub(crate) struct Touch {
    /// Its new manifest entry (chunk IDs filled in before the commit).
    pub record: FileRecord,
    pub stat: Stat,
    /// Whether its chunks' provenance (size, mtime, hash) is what they already carry.
    pub provenance_kept: bool,
}

/// Marks a recorded time as untrustworthy so the next sync re-hashes the file: a file written
/// within the filesystem's timestamp granularity of our read could change again without changing
/// its mtime or ctime.
const RACY_MTIME: i128 = -1;
const RACY_WINDOW_NS: i128 = 2_000_000_000;

/// What every file of one sync is classified against.
pub(crate) struct Scan<'a> {
    /// The sync's start, for the racy-timestamp window.
    pub now_ns: i128,
    /// Files whose parse ran away in an earlier run, skipped until they change.
    pub set_aside: &'a SetAside,
    /// Where a runaway parse is recorded: the index directory, none for PostgreSQL.
    pub dir: Option<&'a std::path::Path>,
}

/// What one file needs.
pub(crate) enum Outcome {
    /// Same stat as the manifest records: only ever for a file the manifest lists (the plan
    /// counts on that to see that nothing was removed without a set of every path).
    Unchanged,
    /// Same content, new stat: the manifest entry is rewritten, and the chunks' provenance
    /// when it moved. Like `Unchanged`, only for a listed file.
    Touched(Touch),
    /// New or different content, chunked.
    Changed {
        stat: Stat,
        content_hash: String,
        chunks: Vec<rag_chunker::Chunk>,
        warnings: Vec<String>,
    },
    /// Gone between the walk and the read: treated as removed.
    Vanished,
    /// Not indexed this time; its previous chunks (if any) are kept.
    Failed(String),
    /// Its labels changed but it could not be read again: its chunks are withdrawn (they would
    /// be shown under the old labels), and it comes back once it can be read.
    Withheld(String),
    /// The chunker (its tokenizer) cannot be loaded: nothing can be chunked, the sync stops.
    NoChunker(Error),
}

impl RagIndex {
    /// Decides what to do with one file. Never fails: problems become [`Outcome::Failed`].
    /// `labels` are what the permission rules give it; `relabel` says they differ from those
    /// its stored chunks were given, so it is chunked again even when its bytes are the same.
    /// `on_new_content` is called once its bytes are known to be new, before it is chunked.
    pub(crate) fn classify(
        &self,
        file: &FoundFile,
        previous: Option<&FileRecord>,
        scan: &Scan<'_>,
        labels: &[String],
        relabel: bool,
        on_new_content: &dyn Fn(),
    ) -> Outcome {
        match self.classify_file(file, previous, scan, labels, relabel, on_new_content) {
            Outcome::Failed(reason) if relabel && previous.is_some() => Outcome::Withheld(format!(
                "its permission labels changed but it could not be read ({reason}); its chunks \
                 are withdrawn until it can"
            )),
            outcome => outcome,
        }
    }

    fn classify_file(
        &self,
        file: &FoundFile,
        previous: Option<&FileRecord>,
        scan: &Scan<'_>,
        labels: &[String],
        relabel: bool,
        on_new_content: &dyn Fn(),
    ) -> Outcome {
        let before = match std::fs::metadata(&file.abs) {
            Ok(meta) => Stat::of(&meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(io_reason(&e)),
        };
        if let Some(prev) = previous
            && !relabel
            && prev.size == before.size
            && prev.mtime_ns == before.mtime_ns
            && prev.stamp == before.stamp
        {
            return Outcome::Unchanged;
        }
        // Bounded, and only a regular file: the name may be a pipe or a device by now.
        let read = match read_folder_file(&file.abs, self.config.max_file_bytes) {
            Ok(read) => read,
            Err(FolderReadError::NotFound) => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        let bytes = read.bytes;
        // A file replaced before we opened it, or rewritten while we read it, may be half old,
        // half new: leave it for next time. The handle says what was read, the name what is
        // there now.
        let same_as_before = |meta: &std::fs::Metadata| Stat::of(meta) == before;
        match std::fs::metadata(&file.abs) {
            Ok(meta)
                if same_as_before(&read.meta)
                    && same_as_before(&meta)
                    && bytes.len() as u64 == before.size => {}
            Ok(_) => {
                return Outcome::Failed(
                    "file changed while it was being read; it will be retried on the next sync"
                        .into(),
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Vanished,
            Err(e) => return Outcome::Failed(io_reason(&e)),
        }
        // Each time is marked on its own: the mtime stays true for the health report's
        // staleness when only the ctime is recent (a file whose mtime was just set back).
        let racy = |ns: i128| scan.now_ns - ns < RACY_WINDOW_NS;
        let stat = Stat {
            mtime_ns: if racy(before.mtime_ns) {
                RACY_MTIME
            } else {
                before.mtime_ns
            },
            stamp: before.stamp.map(|stamp| FileStamp {
                ctime_ns: if racy(stamp.ctime_ns) {
                    RACY_MTIME
                } else {
                    stamp.ctime_ns
                },
                ..stamp
            }),
            ..before
        };
        let content_hash = blake3::hash(&bytes).to_hex().to_string();
        if let Some(prev) = previous
            && !relabel
            && prev.content_hash == content_hash
        {
            return Outcome::Touched(Touch {
                record: FileRecord {
                    size: stat.size,
                    mtime_ns: stat.mtime_ns,
                    content_hash,
                    chunk_ids: prev.chunk_ids.clone(),
                    stamp: stat.stamp,
                },
                // The chunks carry size, mtime and hash; a settled manifest entry that has the
                // same says they need no rewrite (a chmod, a copy, a first stamp).
                provenance_kept: prev.size == stat.size && prev.mtime_ns == stat.modified_ns,
                stat,
            });
        }
        if let Some(reason) = scan.set_aside.reason(&file.rel, &content_hash) {
            return Outcome::Failed(reason);
        }
        on_new_content();
        // Built here, not at open: a sync with nothing to chunk never loads the tokenizer.
        let chunker = match self.chunker() {
            Ok(chunker) => chunker,
            Err(e) => return Outcome::NoChunker(e),
        };
        // A parse that runs away with memory records these bytes as set aside.
        let _converting = ConvertingGuard::enter_sync(&file.rel, &content_hash, scan.dir);
        match crate::document::chunk_file(chunker, &file.rel, &bytes) {
            Ok(mut document) => {
                crate::access::label_document(&mut document, &bytes, labels);
                Outcome::Changed {
                    stat,
                    content_hash,
                    chunks: document.chunks,
                    warnings: document.warnings,
                }
            }
            Err(reason) => Outcome::Failed(reason),
        }
    }
}
