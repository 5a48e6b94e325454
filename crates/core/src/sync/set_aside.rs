//! Files set aside because their parse ran away with memory: named, skipped until their bytes
//! change, so one hostile file cannot stop every later sync.
//!
//! rag-formats bounds the memory tree-sitter holds for a parse, but its last step cannot be
//! interrupted: past the bound, rag-formats calls [`runaway_parse`] inside the allocation. That
//! records the file (path and content hash) in `set-aside.json` in the index directory, then
//! applies the process's policy ([`on_runaway_parse`]): the CLI's `sync` starts again in a new
//! process image, which skips the file; a library host's parse goes on, is refused if it ends,
//! and if the process dies of it instead, the next sync skips the file. A PostgreSQL index has
//! no directory of its own: the list is carried to the new process in `RAG_INDEX_SET_ASIDE`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};

use serde::{Deserialize, Serialize};

/// The list's file in an index directory.
pub const SET_ASIDE_FILE: &str = "set-aside.json";
/// The environment variable that carries the list to a restarted process (a JSON array).
pub const SET_ASIDE_ENV: &str = "RAG_INDEX_SET_ASIDE";

/// One file set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAsideFile {
    /// Path in the folder.
    pub path: String,
    /// BLAKE3 of the bytes that ran away: other bytes at the same path are tried again.
    pub content_hash: String,
    /// Why, for the user.
    pub reason: String,
}

/// What the process's policy is told when a parse runs away.
#[derive(Debug, Clone)]
pub struct RunawayParse {
    /// The file being converted, as the sync names it.
    pub path: String,
    /// Why it is refused.
    pub reason: String,
    /// When a sync was converting it: the list to hand a restarted process in
    /// [`SET_ASIDE_ENV`] (this file added), so it skips the file even without a directory.
    pub set_aside_env: Option<String>,
}

/// The process's policy for a runaway parse. Called on the parsing thread, inside one of
/// tree-sitter's allocations: it must not return into a parse it wants stopped (it may replace
/// or end the process), and must not panic.
pub type RunawayParsePolicy = fn(&RunawayParse);

static POLICY: OnceLock<RunawayParsePolicy> = OnceLock::new();

/// Sets the process's policy for a parse that passes its memory bound (the CLI restarts its
/// `sync`). Only the first call sets it; returns whether this one did. Without one, the file is
/// still recorded and the parse goes on (see the module docs).
pub fn on_runaway_parse(policy: RunawayParsePolicy) -> bool {
    POLICY.set(policy).is_ok()
}

/// The file a thread is converting, and where a sync would record it.
#[derive(Clone)]
struct Converting {
    path: String,
    set_aside: Option<SetAsideContext>,
}

#[derive(Clone)]
struct SetAsideContext {
    content_hash: String,
    /// The index directory; none for PostgreSQL.
    dir: Option<PathBuf>,
}

thread_local! {
    static CONVERTING: RefCell<Option<Converting>> = const { RefCell::new(None) };
}

/// Names the file this thread converts until dropped; within a sync (`set_aside` given), a
/// runaway parse records it.
pub(crate) struct ConvertingGuard {
    previous: Option<Converting>,
}

impl ConvertingGuard {
    pub(crate) fn enter(path: &str) -> ConvertingGuard {
        install_hook();
        let set_aside = CONVERTING.with(|c| {
            c.borrow()
                .as_ref()
                .filter(|outer| outer.path == path)
                .and_then(|outer| outer.set_aside.clone())
        });
        Self::replace(Converting {
            path: path.to_string(),
            set_aside,
        })
    }

    pub(crate) fn enter_sync(
        path: &str,
        content_hash: &str,
        dir: Option<&Path>,
    ) -> ConvertingGuard {
        install_hook();
        Self::replace(Converting {
            path: path.to_string(),
            set_aside: Some(SetAsideContext {
                content_hash: content_hash.to_string(),
                dir: dir.map(Path::to_path_buf),
            }),
        })
    }

    fn replace(converting: Converting) -> ConvertingGuard {
        let previous = CONVERTING.with(|c| c.borrow_mut().replace(converting));
        ConvertingGuard { previous }
    }
}

impl Drop for ConvertingGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CONVERTING.with(|c| *c.borrow_mut() = previous);
    }
}

fn install_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        rag_formats::on_runaway_parse(runaway_parse);
    });
}

/// rag-formats' hook for a tree-sitter parse past its bound.
fn runaway_parse(event: &rag_formats::RunawayParse) {
    set_aside_current(format!(
        "its source parse passed the memory bound of {} MiB (tree-sitter's error recovery on \
         text far from valid code)",
        event.budget >> 20
    ));
}

/// Records the file this thread converts as set aside for `reason` and applies the policy.
/// Called from inside an allocation: never panics, and nothing here holds a borrow while the
/// policy runs.
pub(crate) fn set_aside_current(reason: String) {
    let Ok(Some(converting)) = CONVERTING.try_with(|c| c.try_borrow().ok().and_then(|c| c.clone()))
    else {
        return;
    };
    let mut set_aside_env = None;
    if let Some(context) = &converting.set_aside {
        let entry = SetAsideFile {
            path: converting.path.clone(),
            content_hash: context.content_hash.clone(),
            reason: reason.clone(),
        };
        if let Some(dir) = &context.dir {
            record(dir, &entry);
        }
        let mut carried = from_env();
        carried.push(entry);
        set_aside_env = serde_json::to_string(&carried).ok();
    }
    if let Some(policy) = POLICY.get() {
        policy(&RunawayParse {
            path: converting.path,
            reason,
            set_aside_env,
        });
    }
}

/// Adds `entry` to the directory's list. A failure is logged: the parse is refused either way.
fn record(dir: &Path, entry: &SetAsideFile) {
    let mut files = load_file(dir);
    // Two bounds can trip on one file (tree-sitter's, then the conversion's): one entry.
    if !files
        .iter()
        .any(|f| f.path == entry.path && f.content_hash == entry.content_hash)
    {
        files.push(entry.clone());
    }
    if let Err(e) = save_file(dir, &files) {
        log::warn!("cannot record {} in {}: {e}", entry.path, dir.display());
    }
}

fn load_file(dir: &Path) -> Vec<SetAsideFile> {
    std::fs::read(dir.join(SET_ASIDE_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save_file(dir: &Path, files: &[SetAsideFile]) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(files).map_err(std::io::Error::other)?;
    crate::write_index_file(dir, SET_ASIDE_FILE, &bytes)
}

fn from_env() -> Vec<SetAsideFile> {
    std::env::var(SET_ASIDE_ENV)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The files one sync skips: the directory's list and the restarted process's.
pub(crate) struct SetAside {
    dir: Option<PathBuf>,
    from_file: Vec<SetAsideFile>,
    reasons: HashMap<(String, String), String>,
    /// Entries whose file still has those bytes: the rest are dropped from the list.
    seen: Mutex<HashSet<(String, String)>>,
}

impl SetAside {
    pub(crate) fn load(dir: Option<&Path>) -> SetAside {
        let from_file = dir.map(load_file).unwrap_or_default();
        let reasons = from_file
            .iter()
            .chain(from_env().iter())
            .map(|f| ((f.path.clone(), f.content_hash.clone()), f.reason.clone()))
            .collect();
        SetAside {
            dir: dir.map(Path::to_path_buf),
            from_file,
            reasons,
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Why the file at `path` with these bytes is skipped, if it is.
    pub(crate) fn reason(&self, path: &str, content_hash: &str) -> Option<String> {
        let key = (path.to_string(), content_hash.to_string());
        let reason = self.reasons.get(&key)?;
        self.seen.lock().expect("set-aside lock").insert(key);
        Some(format!(
            "set aside: {reason}; it is tried again when it changes"
        ))
    }

    /// After a sync saw every file: drops the entries whose file changed or went away. Entries
    /// recorded during this sync (a library host's parse that ended) are kept.
    pub(crate) fn prune(&self) {
        let Some(dir) = &self.dir else { return };
        let seen = self.seen.lock().expect("set-aside lock");
        let stale: Vec<&SetAsideFile> = self
            .from_file
            .iter()
            .filter(|f| !seen.contains(&(f.path.clone(), f.content_hash.clone())))
            .collect();
        if stale.is_empty() {
            return;
        }
        let kept: Vec<SetAsideFile> = load_file(dir)
            .into_iter()
            .filter(|f| !stale.contains(&f))
            .collect();
        if let Err(e) = save_file(dir, &kept) {
            log::warn!("cannot update {} in {}: {e}", SET_ASIDE_FILE, dir.display());
        }
    }
}
