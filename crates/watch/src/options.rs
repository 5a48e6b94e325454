use std::time::Duration;

use rag_index_core::SyncOptions;

/// How a [`Watcher`](crate::Watcher) batches changes and how often it reconciles.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// A burst counts as over once no event arrived for this long: an editor's save-by-rename
    /// or a `git checkout` of many files becomes one sync.
    pub quiet: Duration,
    /// The longest a change waits for a burst to end: a folder that never stops changing is
    /// still synced this often.
    pub max_delay: Duration,
    /// A full sync this often even without events, since events can be lost (a full
    /// notification queue, a folder replaced by a mount, a network filesystem).
    pub reconcile_every: Duration,
    /// How often the whole folder is synced when the system cannot notify of every change
    /// (its limit on watches or watchers is reached): changes are then found by scanning. A
    /// no-op sync of 100,000 files takes about 0.1-0.4 s.
    pub scan_every: Duration,
    /// How often the root is checked for having been replaced (a switched symlink, a folder
    /// moved into place): the watch follows the inode it was set on, so it is set again on the
    /// new folder, which is then synced. One `stat` per check.
    pub root_check_every: Duration,
    /// Changed paths remembered for the status; past this many the watcher only remembers
    /// that a full rescan is due (each sync rescans everything anyway).
    pub max_pending_paths: usize,
    /// First wait after a failed or busy sync; doubled on every further failure.
    pub retry_first: Duration,
    /// Longest wait between retries.
    pub retry_max: Duration,
    /// Options of every sync.
    pub sync: SyncOptions,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            quiet: Duration::from_millis(200),
            max_delay: Duration::from_secs(2),
            reconcile_every: Duration::from_secs(600),
            scan_every: Duration::from_secs(30),
            root_check_every: Duration::from_secs(1),
            max_pending_paths: 10_000,
            retry_first: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            sync: SyncOptions::default(),
        }
    }
}

impl WatchOptions {
    /// The wait after `failures` consecutive failures (1 = the first).
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.saturating_sub(1).min(16);
        self.retry_first.saturating_mul(factor).min(self.retry_max)
    }
}
