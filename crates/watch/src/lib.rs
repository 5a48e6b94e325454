//! Keep a rag-index index exactly in step with its folder, by itself.
//!
//! A [`Watcher`] follows the folder through the operating system's file notifications
//! (inotify on Linux, through the `notify` crate), waits out bursts of events (an editor's
//! save-by-rename, a `git checkout` of hundreds of files) and then runs one
//! [`RagIndex::sync`](rag_index_core::RagIndex::sync): the same sync, the same atomic commit
//! and the same lock as `rag-index sync`, so the index converges to exactly what a sync would
//! give. Events can be lost, so it also syncs fully at start and every
//! [`WatchOptions::reconcile_every`]. It blocks while idle (no polling), remembers at most
//! [`WatchOptions::max_pending_paths`] changed paths, and retries with backoff while another
//! process holds the index. [`StatusHandle::get`] reports freshness: the generation served,
//! when it was committed, and the changes seen but not yet committed.
//!
//! # Example
//! ```no_run
//! use std::sync::{Arc, atomic::AtomicBool};
//! use rag_index_core::{Embedder, EmbedderConfig, IndexConfig};
//! use rag_watch::{WatchOptions, Watcher};
//!
//! let model = rag_index_core::resolve_model_dir(None, &[]).unwrap();
//! let embedder = Arc::new(Embedder::open(&model, EmbedderConfig::default()).unwrap());
//! let options = WatchOptions::default();
//! let stop = AtomicBool::new(false);
//! let index = rag_watch::open_writer(
//!     "docs/.rag-index".as_ref(), embedder, IndexConfig::default(), &options, &stop,
//! ).unwrap();
//! let watcher = Watcher::new(Arc::new(index), "docs".as_ref(), options).unwrap();
//! let handle = watcher.handle();
//! let thread = std::thread::spawn(move || watcher.run());
//! // ... later, from anywhere:
//! println!("serving generation {}", handle.status().generation);
//! handle.stop();
//! thread.join().unwrap().unwrap();
//! ```

mod error;
mod options;
mod pending;
mod root;
mod status;
mod status_file;
mod watcher;

pub use error::{Result, WatchError};
pub use options::WatchOptions;
pub use status::{LastSync, StatusHandle, WatchStatus};
pub use status_file::{STALE_AFTER_MS, publish_status, published_status, withdraw_status};
pub use watcher::{WatchHandle, Watcher, open_writer};
