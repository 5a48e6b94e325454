//! `rag-index watch`: keep the index in step with the folder until stopped.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rag_watch::{WatchHandle, WatchOptions, Watcher};

use crate::setup::{index_config, load_embedder, locate_index};

/// Opens the index of `dir` for writing (waiting while another process writes to it) and
/// makes its watcher; `table_records` as for `sync` (an index refuses the other setting).
pub fn watcher(
    model_dir: Option<&Path>,
    dir: &Path,
    index: Option<PathBuf>,
    table_records: bool,
    options: WatchOptions,
) -> Result<Watcher> {
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    let rag_index_core::StoreLocation::Dir(index_dir) = locate_index(index, Some(dir))? else {
        bail!(
            "watching keeps an index directory current; --store (PostgreSQL) is not supported by watch yet: run `rag-index sync --store ...` from cron"
        );
    };
    let embedder = load_embedder(model_dir)?;
    let index = rag_watch::open_writer(
        &index_dir,
        embedder,
        index_config(None, table_records)?,
        &options,
        &AtomicBool::new(false),
    )
    .with_context(|| format!("cannot open index {}", index_dir.display()))?;
    Ok(Watcher::new(Arc::new(index), dir, options)?)
}

/// Stops `handle` on SIGINT or SIGTERM: a running sync is cancelled before its commit.
pub fn stop_on_signal(handle: WatchHandle) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install signal handlers")?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            handle.stop();
        }
    });
    Ok(())
}

pub fn run(
    model_dir: Option<&Path>,
    dir: PathBuf,
    index: Option<PathBuf>,
    table_records: bool,
    scan_every_secs: u64,
) -> Result<ExitCode> {
    let options = WatchOptions {
        scan_every: Duration::from_secs(scan_every_secs.max(1)),
        ..WatchOptions::default()
    };
    let watcher = watcher(model_dir, &dir, index, table_records, options)?;
    stop_on_signal(watcher.handle())?;
    log::info!("watching {}", dir.display());
    run_publishing(watcher).with_context(|| format!("watching {} failed", dir.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `watcher` until stopped, publishing its status in the index directory (for `stats
/// --json` in other processes) within 200 ms of a change and at least every 2 s, and
/// withdrawing it at the end.
pub fn run_publishing(watcher: Watcher) -> rag_watch::Result<()> {
    let handle = watcher.handle();
    let index_dir = watcher.index().dir().to_path_buf();
    let done = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (done, index_dir) = (done.clone(), index_dir.clone());
        std::thread::spawn(move || {
            let mut published: Option<(rag_watch::WatchStatus, Instant)> = None;
            while !done.load(Ordering::Relaxed) {
                let status = handle.status();
                let due = published.as_ref().is_none_or(|(last, at)| {
                    *last != status || at.elapsed() >= Duration::from_secs(2)
                });
                // Said on stderr once, whatever the log level: it is why changes arrive late.
                let newly_limited = status.notifications_limited.as_ref().filter(|_| {
                    published
                        .as_ref()
                        .is_none_or(|(last, _)| last.notifications_limited.is_none())
                });
                if let Some(reason) = newly_limited {
                    crate::output::note(&format!("warning: {reason}"));
                }
                if due {
                    rag_watch::publish_status(&index_dir, &status);
                    published = Some((status, Instant::now()));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let result = watcher.run();
    done.store(true, Ordering::Relaxed);
    let _ = publisher.join();
    rag_watch::withdraw_status(&index_dir);
    result
}
