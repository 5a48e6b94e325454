//! `rag-index sync`: make the index equal to a fresh index of the folder.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rag_index_core::{
    Error as CoreError, IndexConfig, OpenMode, RagIndex, StoreLocation, SyncOptions, SyncProgress,
    SyncReport,
};

use crate::output::{json_line, note};
use crate::runaway::is_restarted_image;
use crate::setup::{index_config, load_embedder, locate_index};
use crate::signals::Signals;

/// `rag-index sync`'s flags.
#[derive(clap::Args)]
pub struct SyncFlags {
    /// Index only these extensions (comma-separated, repeatable), e.g. `--ext md,html`.
    /// Default: every known format.
    #[arg(long, value_name = "EXT,...", value_delimiter = ',')]
    pub ext: Vec<String>,
    /// Also follow symbolic links that lead out of DIR (by default only links whose
    /// target is inside DIR are followed).
    #[arg(long)]
    pub follow: bool,
    /// The folder to index.
    pub dir: PathBuf,
    /// Index directory (default: DIR/.rag-index).
    #[arg(long, value_name = "PATH")]
    pub index: Option<PathBuf>,
    /// Print one JSON report on stdout.
    #[arg(long)]
    pub json: bool,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Rebuild everything after a model or chunker change.
    #[arg(long)]
    pub reindex: bool,
    /// Wait for another sync to finish instead of exiting with code 75.
    #[arg(long)]
    pub wait: bool,
    /// Merge target for chunk sizes, in model tokens (changing it needs --reindex).
    #[arg(long, value_name = "N")]
    pub target_tokens: Option<usize>,
    /// Do not index each row of a keyed table as a record of its own (its header and that row,
    /// with the key in metadata for `--filter row_key=...`); the tables stay indexed whole.
    /// Changing it needs --reindex.
    #[arg(long)]
    pub no_table_records: bool,
    /// Records are the default now; the flag is still accepted.
    #[arg(long, hide = true, conflicts_with = "no_table_records")]
    pub table_records: bool,
}

impl SyncFlags {
    /// What the sync runs with; `verbose` is the global `-v`.
    pub fn into_args(self, verbose: bool) -> Result<SyncArgs> {
        let mut options = SyncOptions::default();
        options.dry_run = self.dry_run;
        options.reindex = self.reindex;
        options.follow_links = self.follow;
        if !self.ext.is_empty() {
            let ext = self
                .ext
                .iter()
                .map(|e| e.trim_start_matches('.').to_lowercase());
            options.extensions = Some(ext.filter(|e| !e.is_empty()).collect());
        }
        Ok(SyncArgs {
            dir: self.dir,
            index: self.index,
            json: self.json,
            wait: self.wait,
            verbose,
            options,
            config: index_config(self.target_tokens, !self.no_table_records)?,
        })
    }
}

/// How `sync` runs and reports.
pub struct SyncArgs {
    pub dir: PathBuf,
    pub index: Option<PathBuf>,
    pub json: bool,
    pub wait: bool,
    pub verbose: bool,
    pub options: SyncOptions,
    pub config: IndexConfig,
}

pub fn run(model_dir: Option<&Path>, args: SyncArgs) -> Result<ExitCode> {
    let dir = &args.dir;
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    let location = locate_index(args.index.clone(), Some(dir))?;
    let signals = Signals::install();
    let embedder = load_embedder(model_dir)?;
    let index = open(&location, embedder, &args)
        .with_context(|| format!("cannot open index {location}"))?;

    let bar = std::io::stderr().is_terminal().then(progress_bar);
    let progress = |p: SyncProgress| {
        let Some(bar) = &bar else { return };
        match p {
            SyncProgress::Scanning { done, total } => {
                bar.set_message("files");
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
            SyncProgress::Embedding { done, total } => {
                bar.set_message("embedding");
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
            SyncProgress::Committing => bar.set_message("committing"),
        }
    };
    let report = index.sync(dir, &args.options, &progress, signals.cancel_flag());
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match report {
        Err(CoreError::Cancelled) if signals.exit_code().is_some() => {
            note("interrupted before the commit: the index is unchanged");
            return Ok(ExitCode::from(signals.exit_code().unwrap_or(130)));
        }
        other => other.with_context(|| format!("sync of {} failed", dir.display()))?,
    };
    // The sync is committed: from here on, output trouble (a closed pipe, a full disk) must not
    // make it look failed.
    print_report(&report, &args);
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Opens the index, waiting for another writer with `--wait`, and with `--reindex` moving a
/// damaged store aside (never deleting it) to rebuild from the folder.
fn open(
    location: &StoreLocation,
    embedder: std::sync::Arc<rag_index_core::Embedder>,
    args: &SyncArgs,
) -> Result<RagIndex, CoreError> {
    let StoreLocation::Dir(index_dir) = location else {
        return open_collection(location, embedder, args);
    };
    let mut moved = false;
    loop {
        match RagIndex::open(index_dir, embedder.clone(), args.config.clone()) {
            Err(CoreError::Busy { .. }) if args.wait => {
                std::thread::sleep(Duration::from_millis(500))
            }
            Err(CoreError::Damaged { .. })
                if args.options.reindex && !moved && !args.options.dry_run =>
            {
                let aside = rag_index_core::move_damaged_store_aside(index_dir)?;
                note(&format!(
                    "the damaged index file was moved to {}; rebuilding from the folder",
                    aside.display()
                ));
                moved = true;
            }
            other => return other,
        }
    }
}

/// How long a sync restarted after a runaway parse waits for its collection's lock.
const RESTART_LOCK_WAIT: Duration = Duration::from_secs(10);

/// Opens a PostgreSQL collection; the server waits on its lock with `--wait`. A restarted image
/// also waits, a bounded while: the lock belongs to the previous image's session, which the
/// server ends only once it notices the connection the exec closed.
fn open_collection(
    location: &StoreLocation,
    embedder: std::sync::Arc<rag_index_core::Embedder>,
    args: &SyncArgs,
) -> Result<RagIndex, CoreError> {
    let mode = OpenMode::Writer { wait: args.wait };
    let deadline = Instant::now() + RESTART_LOCK_WAIT;
    loop {
        match RagIndex::open_at(location, embedder.clone(), args.config.clone(), mode) {
            Err(CoreError::Busy { .. }) if is_restarted_image() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200))
            }
            other => return other,
        }
    }
}

fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} ({eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar
}

fn print_report(report: &SyncReport, args: &SyncArgs) {
    for error in &report.errors {
        note(&format!("{}: {}", error.path, error.error));
    }
    for warning in &report.warnings {
        note(&format!("warning: {}: {}", warning.path, warning.error));
    }
    if args.json {
        // The commit is made: a closed stdout must not turn it into a failure.
        let _ = json_line(&mut std::io::stdout().lock(), report);
    } else if args.verbose || std::io::stderr().is_terminal() || args.options.dry_run {
        let f = &report.files;
        let c = &report.chunks;
        note(&format!(
            "{}files: {} added, {} modified, {} removed, {} unchanged, {} failed; chunks: {} embedded, {} reused, {} deleted, {} total ({} ms)",
            if args.options.dry_run {
                "dry run: "
            } else {
                ""
            },
            f.added,
            f.modified,
            f.removed,
            f.unchanged,
            f.failed,
            c.embedded,
            c.reused,
            c.deleted,
            c.total,
            report.elapsed_ms
        ));
    }
}
