//! What the watcher reports about freshness.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// The watcher's view of freshness, as [`StatusHandle::get`] returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchStatus {
    /// The folder followed.
    pub root: String,
    /// The generation searches see.
    pub generation: u64,
    /// When it was committed (milliseconds since the Unix epoch).
    pub committed_at: Option<u64>,
    /// Changed paths seen and not yet committed (0 with `pending_rescan` alone).
    pub pending_changes: usize,
    /// Too many changes to list, or events were lost: the next sync rescans everything (every
    /// sync does; this says the count above is a lower bound).
    pub pending_rescan: bool,
    /// A sync is running.
    pub syncing: bool,
    /// Syncs finished since the watcher started.
    pub syncs: u64,
    /// The last finished sync.
    pub last_sync: Option<LastSync>,
    /// The last failure (a busy index, an unreadable folder), cleared by the next success.
    pub last_error: Option<String>,
    /// Another process holds the index: syncs are retried with backoff.
    pub busy: bool,
    /// Why some changes are found only by the periodic scan (the system's limit on file
    /// watches was reached), or `None` when every folder is watched.
    #[serde(default)]
    pub notifications_limited: Option<String>,
}

/// What the last successful sync did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LastSync {
    /// When it finished (milliseconds since the Unix epoch).
    pub finished_at: u64,
    /// How long it took.
    pub elapsed_ms: u64,
    /// Files added, modified and removed.
    pub files_changed: usize,
    /// Files that failed (their old chunks are kept).
    pub files_failed: usize,
    /// Chunks embedded.
    pub chunks_embedded: usize,
}

/// A shared, cheap-to-clone view of a watcher's status, readable from any thread.
#[derive(Debug, Clone, Default)]
pub struct StatusHandle(pub(crate) Arc<Mutex<WatchStatus>>);

impl StatusHandle {
    /// The current status.
    pub fn get(&self) -> WatchStatus {
        match self.0.lock() {
            Ok(status) => status.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut WatchStatus)) {
        let mut status = match self.0.lock() {
            Ok(status) => status,
            Err(poisoned) => poisoned.into_inner(),
        };
        change(&mut status);
    }
}

pub(crate) fn unix_millis_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
