//! The watch loop: filesystem events in, debounced syncs out, with a full reconcile at start
//! and periodically, and backoff while another process holds the index.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::{Config, EventKindMask, RecursiveMode, Watcher as _};
use rag_index_core::{Embedder, Error as CoreError, IndexConfig, RagIndex, SyncReport};

use crate::options::WatchOptions;
use crate::pending::Pending;
use crate::root::RootIdentity;
use crate::status::{LastSync, StatusHandle, WatchStatus, unix_millis_now};
use crate::{Result, WatchError};

enum Message {
    Event(notify::Result<notify::Event>),
    Stop,
}

/// Follows a folder and keeps an index equal to what `RagIndex::sync` of it gives. See the
/// crate documentation.
pub struct Watcher {
    index: Arc<RagIndex>,
    root: PathBuf,
    /// `root` and the index directory resolved, to compare with event paths.
    canonical_root: PathBuf,
    canonical_index: PathBuf,
    options: WatchOptions,
    status: StatusHandle,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    cancel: Arc<AtomicBool>,
}

/// Stops a running [`Watcher`] from another thread and reads its status.
#[derive(Clone)]
pub struct WatchHandle {
    tx: Sender<Message>,
    cancel: Arc<AtomicBool>,
    status: StatusHandle,
}

impl WatchHandle {
    /// Asks the watcher to stop: a running sync is cancelled before its commit point (the index
    /// stays as it was) and [`Watcher::run`] returns.
    pub fn stop(&self) {
        self.cancel.store(true, Ordering::SeqCst);
        let _ = self.tx.send(Message::Stop);
    }

    /// The watcher's status.
    pub fn status(&self) -> WatchStatus {
        self.status.get()
    }
}

/// Whether `e` is the system's limit on file watches or watchers (inotify's
/// `max_user_watches` and `max_user_instances`, or the open-file limit) being reached, which
/// scanning works around.
fn is_limit(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => matches!(
            io.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOSPC)
        ),
        _ => false,
    }
}

/// Errors that retrying cannot fix: the watcher gives up rather than fail every few seconds.
fn is_fatal(e: &CoreError) -> bool {
    matches!(
        e,
        CoreError::ConfigChanged { .. }
            | CoreError::IndexInsideFolder { .. }
            | CoreError::ReadOnly { .. }
            | CoreError::Damaged { .. }
            | CoreError::ForeignDirectory { .. }
    )
}

/// Opens `dir` for writing, retrying with the backoff of `options` while another process
/// writes to it ([`CoreError::Busy`]), until `stop` is set.
pub fn open_writer(
    dir: &Path,
    embedder: Arc<Embedder>,
    config: IndexConfig,
    options: &WatchOptions,
    stop: &AtomicBool,
) -> Result<RagIndex> {
    let mut failures = 0;
    loop {
        match RagIndex::open(dir, embedder.clone(), config.clone()) {
            Err(CoreError::Busy { .. }) if !stop.load(Ordering::SeqCst) => {
                failures += 1;
                let wait = options.backoff(failures);
                log::info!("{} is busy; retrying in {wait:?}", dir.display());
                sleep_unless(wait, stop);
            }
            Err(CoreError::Busy { .. }) => return Err(WatchError::Stopped),
            other => return Ok(other?),
        }
    }
}

/// Sleeps up to `wait`, waking early (within 100 ms) once `stop` is set.
fn sleep_unless(wait: Duration, stop: &AtomicBool) {
    let until = Instant::now() + wait;
    while !stop.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

impl Watcher {
    /// A watcher that keeps `index` (opened for writing) equal to a fresh index of `root`.
    pub fn new(index: Arc<RagIndex>, root: &Path, options: WatchOptions) -> Result<Watcher> {
        let folder_error = |reason: String| WatchError::Folder {
            path: root.to_owned(),
            reason,
        };
        let canonical_root = root
            .canonicalize()
            .map_err(|e| folder_error(e.to_string()))?;
        if !canonical_root.is_dir() {
            return Err(folder_error("not a folder".into()));
        }
        let canonical_index = index
            .dir()
            .canonicalize()
            .unwrap_or_else(|_| index.dir().to_owned());
        let (tx, rx) = mpsc::channel();
        let status = StatusHandle::default();
        let commit = index.last_commit()?;
        status.update(|s| {
            s.root = root.display().to_string();
            s.generation = commit.generation;
            s.committed_at = commit.committed_at;
        });
        Ok(Watcher {
            index,
            root: root.to_owned(),
            canonical_root,
            canonical_index,
            options,
            status,
            tx,
            rx,
            cancel: Arc::new(AtomicBool::new(false)),
        })
    }

    /// A handle to stop the watcher and read its status from other threads.
    pub fn handle(&self) -> WatchHandle {
        WatchHandle {
            tx: self.tx.clone(),
            cancel: self.cancel.clone(),
            status: self.status.clone(),
        }
    }

    /// The index it keeps current (searches through it see the last commit, also during a
    /// sync).
    pub fn index(&self) -> &Arc<RagIndex> {
        &self.index
    }

    /// Its status, shared.
    pub fn status(&self) -> StatusHandle {
        self.status.clone()
    }

    /// Follows the folder until [`WatchHandle::stop`]. Starts with a full sync (changes made
    /// while nothing watched are found), then syncs after each burst of events and every
    /// [`reconcile_every`](WatchOptions::reconcile_every). Returns an error only for failures
    /// retrying cannot fix (a changed model, the index inside the folder); others are logged,
    /// shown in the status and retried with backoff.
    pub fn run(mut self) -> Result<()> {
        let tx = self.tx.clone();
        // Access events are filtered in the kernel: every sync reads the files it indexes, and
        // those reads must not look like changes.
        let config = Config::default().with_event_kinds(EventKindMask::CORE);
        // Past the system's limit on watches (or watchers) the folder is scanned instead: a
        // large tree must not stop `watch`, only make its changes arrive later.
        let mut limited: Option<String> = None;
        let mut fs = match notify::RecommendedWatcher::new(
            move |event| {
                let _ = tx.send(Message::Event(event));
            },
            config,
        ) {
            Ok(fs) => Some(fs),
            Err(e) if is_limit(&e) => {
                self.limit(&mut limited, &e);
                None
            }
            Err(e) => return Err(self.notify_error(e)),
        };
        // Watching starts before the first sync, so nothing changed in between is missed.
        if let Some(fs) = fs.as_mut() {
            match fs.watch(&self.canonical_root, RecursiveMode::Recursive) {
                Ok(()) => {}
                Err(e) if is_limit(&e) => self.limit(&mut limited, &e),
                Err(e) => return Err(self.notify_error(e)),
            }
        }

        let mut pending = Pending::new(self.options.max_pending_paths);
        pending.mark_all();
        let started = Instant::now();
        let mut burst = Burst {
            first: Some(started),
            last: started.checked_sub(self.options.quiet).unwrap_or(started),
        };
        let mut next_reconcile = started + self.reconcile_every(&limited);
        let mut failures = 0u32;
        let mut retry_at: Option<Instant> = None;
        let mut watched = RootIdentity::of(&self.root);
        let mut root_lost = false;
        let mut next_root_check = started + self.options.root_check_every;
        loop {
            let now = Instant::now();
            let due = self.sync_due(&burst, retry_at, next_reconcile);
            // Blocks until an event or a deadline: an idle watcher wakes once per root check.
            match self
                .rx
                .recv_timeout(due.min(next_root_check).saturating_duration_since(now))
            {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                Ok(Message::Event(event)) => {
                    // A folder created later can meet the limit too.
                    if let Err(e) = &event
                        && is_limit(e)
                        && limited.is_none()
                    {
                        self.limit(&mut limited, e);
                        next_reconcile =
                            next_reconcile.min(Instant::now() + self.reconcile_every(&limited));
                    }
                    root_lost |= self.removes_root(&event);
                    if self.note(event, &mut pending) {
                        let now = Instant::now();
                        burst.first.get_or_insert(now);
                        burst.last = now;
                    }
                    self.publish_pending(&pending);
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            let now = Instant::now();
            if now >= next_root_check {
                next_root_check = now + self.options.root_check_every;
                if let Some(current) = RootIdentity::of(&self.root)
                    && (root_lost || watched.as_ref() != Some(&current))
                {
                    if let (Some(old), Some(fs)) = (&watched, fs.as_mut()) {
                        // Gone with the old folder, usually; an error only says so.
                        let _ = fs.unwatch(&old.canonical);
                    }
                    let rewatched = match fs.as_mut() {
                        Some(fs) => fs.watch(&current.canonical, RecursiveMode::Recursive),
                        None => Ok(()),
                    };
                    let accepted = match rewatched {
                        Ok(()) => true,
                        Err(e) if is_limit(&e) => {
                            self.limit(&mut limited, &e);
                            true
                        }
                        // Tried again at the next check.
                        Err(e) => {
                            log::warn!("cannot watch {}: {e}", current.canonical.display());
                            false
                        }
                    };
                    if accepted {
                        log::info!(
                            "{} now names {}; watching it and syncing",
                            self.root.display(),
                            current.canonical.display()
                        );
                        self.canonical_root = current.canonical.clone();
                        watched = Some(current);
                        root_lost = false;
                        pending.mark_all();
                        burst.first.get_or_insert(now);
                        burst.last = now;
                        self.publish_pending(&pending);
                    }
                }
            }
            if Instant::now() < self.sync_due(&burst, retry_at, next_reconcile) {
                continue;
            }
            if burst.first.is_none() {
                log::debug!("periodic reconcile of {}", self.root.display());
                pending.mark_all();
            }
            let in_flight = pending.take();
            burst.first = None;
            self.status.update(|s| s.syncing = true);
            match self.sync_once() {
                Ok(report) => {
                    failures = 0;
                    retry_at = None;
                    next_reconcile = Instant::now() + self.reconcile_every(&limited);
                    self.publish_sync(&report, &pending);
                }
                Err(CoreError::Cancelled) if self.cancel.load(Ordering::SeqCst) => return Ok(()),
                Err(e) if is_fatal(&e) => {
                    self.status.update(|s| {
                        s.syncing = false;
                        s.last_error = Some(e.to_string());
                    });
                    return Err(e.into());
                }
                Err(e) => {
                    failures += 1;
                    let wait = self.options.backoff(failures);
                    log::warn!(
                        "sync of {} failed ({e}); retrying in {wait:?}",
                        self.root.display()
                    );
                    pending.merge(in_flight);
                    let now = Instant::now();
                    burst.first.get_or_insert(now);
                    retry_at = Some(now + wait);
                    self.status.update(|s| {
                        s.syncing = false;
                        s.busy = matches!(e, CoreError::Busy { .. });
                        s.last_error = Some(e.to_string());
                    });
                    self.publish_pending(&pending);
                }
            }
        }
    }

    /// When the next sync is due: once a burst has settled (or waited long enough), not before
    /// a retry's backoff, else at the next periodic reconcile.
    fn sync_due(
        &self,
        burst: &Burst,
        retry_at: Option<Instant>,
        next_reconcile: Instant,
    ) -> Instant {
        match burst.first {
            Some(first) => {
                let settled = (burst.last + self.options.quiet).min(first + self.options.max_delay);
                retry_at.map_or(settled, |r| settled.max(r))
            }
            None => next_reconcile,
        }
    }

    /// Whether the event says the watched root itself went away (deleted or moved): its watch
    /// is then gone, even if a new folder reuses the inode number.
    fn removes_root(&self, event: &notify::Result<notify::Event>) -> bool {
        event.as_ref().is_ok_and(|e| {
            matches!(
                e.kind,
                notify::EventKind::Remove(_)
                    | notify::EventKind::Modify(notify::event::ModifyKind::Name(_))
            ) && e.paths.iter().any(|p| p == &self.canonical_root)
        })
    }

    /// How long until the next full sync without events: the scan interval once
    /// notifications are limited.
    fn reconcile_every(&self, limited: &Option<String>) -> Duration {
        match limited {
            Some(_) => self.scan_every(),
            None => self.options.reconcile_every,
        }
    }

    /// The interval of full syncs while notifications are limited.
    fn scan_every(&self) -> Duration {
        self.options.scan_every.min(self.options.reconcile_every)
    }

    /// Records, once, that some changes are found only by scanning, and says so.
    fn limit(&self, limited: &mut Option<String>, e: &notify::Error) {
        if limited.is_some() {
            return;
        }
        let reason = format!(
            "{e}: changes under {} are found by a full scan every {} s instead of as they \
             happen; raise the limit (on Linux: sysctl fs.inotify.max_user_watches, \
             fs.inotify.max_user_instances) to follow them",
            self.root.display(),
            self.scan_every().as_secs()
        );
        log::warn!("{reason}");
        self.status
            .update(|s| s.notifications_limited = Some(reason.clone()));
        *limited = Some(reason);
    }

    fn notify_error(&self, source: notify::Error) -> WatchError {
        WatchError::Notify {
            path: self.root.clone(),
            source,
        }
    }

    fn sync_once(&self) -> rag_index_core::Result<SyncReport> {
        let report = self
            .index
            .sync(&self.root, &self.options.sync, &|_| {}, &self.cancel)?;
        for error in &report.errors {
            log::warn!("{}: {}", error.path, error.error);
        }
        Ok(report)
    }

    /// Records one event; whether it may change what a sync gives.
    fn note(&self, event: notify::Result<notify::Event>, pending: &mut Pending) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                log::warn!("file notification error ({e}); a full rescan follows");
                pending.mark_all();
                return true;
            }
        };
        if event.need_rescan() {
            log::info!("the notification queue overflowed; a full rescan follows");
            pending.mark_all();
            return true;
        }
        let mut relevant = false;
        for path in event.paths {
            if let Some(rel) = self.relevant(&path) {
                pending.add(rel);
                relevant = true;
            }
        }
        relevant
    }

    /// The path relative to the root, unless nothing under it can be indexed: the index
    /// directory itself (its own commits would trigger syncs forever) and entries inside hidden
    /// folders, which the walk skips (`.git` during a checkout). Hidden files themselves count:
    /// `.gitignore`, `.ragignore` and `.ragaccess` change what is indexed.
    fn relevant(&self, path: &Path) -> Option<PathBuf> {
        if path.starts_with(&self.canonical_index) || path.starts_with(self.index.dir()) {
            return None;
        }
        let rel = path.strip_prefix(&self.canonical_root).unwrap_or(path);
        let components: Vec<Component> = rel.components().collect();
        let hidden_parent = components.iter().rev().skip(1).any(|c| match c {
            Component::Normal(name) => name.to_string_lossy().starts_with('.'),
            _ => false,
        });
        (!hidden_parent).then(|| rel.to_owned())
    }

    fn publish_pending(&self, pending: &Pending) {
        self.status.update(|s| {
            s.pending_changes = pending.len();
            s.pending_rescan = pending.overflowed();
        });
    }

    fn publish_sync(&self, report: &SyncReport, pending: &Pending) {
        let commit = self.index.last_commit().ok();
        let f = &report.files;
        self.status.update(|s| {
            if let Some(commit) = commit {
                s.generation = commit.generation;
                s.committed_at = commit.committed_at;
            }
            s.syncing = false;
            s.busy = false;
            s.syncs += 1;
            s.last_error = None;
            s.pending_changes = pending.len();
            s.pending_rescan = pending.overflowed();
            s.last_sync = Some(LastSync {
                finished_at: unix_millis_now(),
                elapsed_ms: report.elapsed_ms,
                files_changed: f.added + f.modified + f.removed,
                files_failed: f.failed,
                chunks_embedded: report.chunks.embedded,
            });
        });
    }
}

/// The burst of events being waited out.
struct Burst {
    /// When its first event arrived; `None` when nothing is pending.
    first: Option<Instant>,
    last: Instant,
}
