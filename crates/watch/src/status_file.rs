//! A running watcher's status in a small file of the index directory, so another process
//! (`rag-index stats --json`) can tell how current the index is and what is still pending.
//! Written atomically (a temporary file, then a rename) when the status changes and at least
//! every few seconds; a file not refreshed for [`STALE_AFTER_MS`] belongs to a watcher that is
//! gone (killed) and is ignored.

use std::path::Path;

use rag_index_core::{WATCH_STATUS_FILE, write_index_file};
use serde::{Deserialize, Serialize};

use crate::status::{WatchStatus, unix_millis_now};

/// A status older than this is a dead watcher's.
pub const STALE_AFTER_MS: u64 = 10_000;

#[derive(Serialize, Deserialize)]
struct Record {
    pid: u32,
    updated_at: u64,
    status: WatchStatus,
}

/// Writes `status` as this process's; a failure only loses the report, so it is logged.
pub fn publish_status(index_dir: &Path, status: &WatchStatus) {
    let record = Record {
        pid: std::process::id(),
        updated_at: unix_millis_now(),
        status: status.clone(),
    };
    let written = serde_json::to_vec(&record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| write_index_file(index_dir, WATCH_STATUS_FILE, &bytes));
    if let Err(e) = written {
        log::warn!(
            "cannot write the watch status in {}: {e}",
            index_dir.display()
        );
    }
}

/// The status a live watcher of `index_dir` published, if any.
pub fn published_status(index_dir: &Path) -> Option<WatchStatus> {
    let bytes = std::fs::read(index_dir.join(WATCH_STATUS_FILE)).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    let age = unix_millis_now().saturating_sub(record.updated_at);
    (age <= STALE_AFTER_MS).then_some(record.status)
}

/// Removes the status file if this process wrote it (a watcher stopping).
pub fn withdraw_status(index_dir: &Path) {
    let path = index_dir.join(WATCH_STATUS_FILE);
    let ours = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
        .is_some_and(|record| record.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(path);
    }
}
