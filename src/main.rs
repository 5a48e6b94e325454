//! `rag-index`: keep a local vector index of a docs folder in step with it, and query it.
//!
//! A thin command line over the `rag-index-core` library: this file parses arguments and
//! dispatches; each command lives in `commands/`. stdout carries only results; progress, logs
//! and errors go to stderr. Exit codes: 0 success; 1 finished but some files failed (or
//! `verify` found problems); 2 usage or fatal error; 75 the index is busy (another process is
//! writing to it); 128 + N a sync stopped by signal N before its commit point.

mod commands;
mod explain;
mod output;
mod runaway;
mod setup;
mod signals;
mod terminal_text;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use rag_index_core::{Error as CoreError, Precision};

use commands::{eval::EvalArgs, query::QueryArgs, serve::ServeArgs};
use setup::index_config;

/// Exit code for "the index is busy": EX_TEMPFAIL, so cron wrappers can retry.
const EXIT_BUSY: u8 = 75;

#[derive(Parser)]
#[command(
    name = "rag-index",
    version,
    about = "A local, always-current vector index of a docs folder"
)]
struct Cli {
    /// Model folder (sentence-transformers layout). Default: $RAG_INDEX_MODEL_DIR, then
    /// models/all-MiniLM-L6-v2 next to the binary or the working directory, then the hf-hub cache.
    #[arg(long, global = true, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Log more to stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Keep the index in PostgreSQL (with pgvector) instead of an index directory:
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=require|verify-full&...]`. The
    /// password may also come from $PGPASSWORD or ~/.pgpass.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "RAG_INDEX_STORE",
        hide_env_values = true
    )]
    store: Option<String>,
    /// The collection in --store (one per synced folder). Default for `sync`: the folder's
    /// name; other commands need it. `query`, `eval` and `serve` take a comma list (`a,b`) to
    /// search several collections at once.
    #[arg(
        long,
        global = true,
        value_name = "NAME[,NAME]",
        env = "RAG_INDEX_COLLECTION"
    )]
    collection: Option<String>,
    /// Arithmetic of the model's linear layers: `f32` (the vectors sentence-transformers gives)
    /// or `int8` (faster, slightly different vectors). Part of the model fingerprint: an index
    /// built in one is refused by the other until `sync --reindex`.
    #[arg(
        long,
        global = true,
        value_name = "f32|int8",
        env = "RAG_INDEX_PRECISION"
    )]
    precision: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index the documents under DIR (Markdown, text, HTML, PDF, DOCX, source code, config),
    /// re-embedding only what changed.
    Sync(commands::sync::SyncFlags),
    /// Search the index.
    Query(QueryArgs),
    /// Print the chunks files would produce (no index needed).
    Chunks {
        /// Files to chunk.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per chunk per line.
        #[arg(long)]
        json: bool,
        /// Merge target for chunk sizes, in model tokens.
        #[arg(long, value_name = "N")]
        target_tokens: Option<usize>,
        /// Leave out the row records of keyed tables, as `sync --no-table-records` does.
        #[arg(long)]
        no_table_records: bool,
    },
    /// Print every live chunk as one JSON object per line.
    Dump {
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Include each chunk's stored vector.
        #[arg(long)]
        vectors: bool,
    },
    /// Embed texts from stdin, one per line (a line starting with `"` is a JSON string); one
    /// JSON array per line.
    Embed {
        /// The output is always JSON; the flag is accepted so scripts may spell it out.
        #[arg(long, hide = true)]
        json: bool,
    },
    /// Files, chunks, dimensions, model and sizes on disk.
    Stats {
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// The health report instead: duplicated texts, stale sources, files the last sync could
        /// not index, chunks near the token cap, fingerprints.
        #[arg(long)]
        health: bool,
        /// With --health: report sources not modified for more than DAYS days.
        #[arg(long, value_name = "DAYS", default_value_t = 365)]
        stale_days: u64,
    },
    /// Retrieval quality over a question set (questions.jsonl format).
    Eval(EvalArgs),
    /// Keep the index of DIR in step with it until stopped (SIGINT/SIGTERM): syncs after each
    /// burst of changes and every 10 minutes. While it runs it is the index's writer: a `sync`
    /// meanwhile exits with code 75.
    Watch {
        /// The folder to follow.
        dir: PathBuf,
        /// Index directory (default: DIR/.rag-index).
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// For an index synced with `--no-table-records`: no row records of keyed tables.
        #[arg(long)]
        no_table_records: bool,
        /// When the system's limit on file watches is reached (a very large tree), how often
        /// the whole folder is synced instead, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        scan_every: u64,
    },
    /// Answer searches from a warm process: MCP over stdio for agents (--mcp) or an HTTP JSON
    /// API (--http).
    Serve(ServeArgs),
    /// Check every invariant of the index; exit 1 when one fails.
    Verify {
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Rebuild derived data (the graph) and drop inconsistent files for the next sync.
        #[arg(long)]
        repair: bool,
        #[arg(long)]
        json: bool,
    },
}

/// Counts what each file's conversion holds, so one that runs away is set aside (see
/// `runaway.rs`) before it takes the machine.
#[global_allocator]
static ALLOCATOR: rag_index_core::ConversionAllocator = rag_index_core::ConversionAllocator;

fn main() -> ExitCode {
    output::install_quiet_panic_hook();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match std::panic::catch_unwind(AssertUnwindSafe(|| run(cli))) {
        Ok(Ok(code)) => code,
        Ok(Err(err)) => {
            if output::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let busy = err.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<CoreError>(),
                    Some(CoreError::Busy { .. })
                )
            });
            output::note(&format!("error: {}", output::error_text(&err)));
            ExitCode::from(if busy { EXIT_BUSY } else { 2 })
        }
        Err(_) => {
            output::note(&format!("internal error: {}", output::last_panic()));
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8) {
    // Cron mail stays empty on success: only errors unless asked.
    let level = match verbose {
        0 => "error",
        1 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .target(env_logger::Target::Stderr)
        // Milliseconds: `-vv` is how one sees where a sync's time goes. Messages name indexed
        // files, so their control characters are shown escaped, as on every other line.
        .format(|buf, record| {
            use std::io::Write;
            let level = buf.default_level_style(record.level());
            let message = record.args().to_string();
            writeln!(
                buf,
                "[{} {level}{:<5}{level:#} {}] {}",
                buf.timestamp_millis(),
                record.level(),
                record.target(),
                terminal_text::one_line(&message)
            )
        })
        .init();
}

fn run(cli: Cli) -> Result<ExitCode> {
    let model_dir = cli.model_dir.as_deref();
    setup::choose_store(cli.store.clone(), cli.collection.clone());
    // Parsed here, not by clap, so an empty $RAG_INDEX_PRECISION means "unset".
    let precision = cli
        .precision
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(str::parse::<Precision>)
        .transpose()
        .context("invalid --precision")?;
    setup::choose_precision(precision);
    match cli.command {
        // A server over HTTP comes back on the same address; an MCP session cannot be resumed
        // by a new process, so the server ends and its client sees it end.
        Command::Sync(_) | Command::Watch { .. } => runaway::restart_on_runaway_parse(),
        Command::Serve(ref args) if args.http.is_some() => runaway::restart_on_runaway_parse(),
        _ => runaway::exit_on_runaway_parse(),
    }
    match cli.command {
        Command::Sync(flags) => commands::sync::run(model_dir, flags.into_args(cli.verbose > 0)?),
        Command::Query(args) => commands::query::run(model_dir, args),
        Command::Chunks {
            files,
            json,
            target_tokens,
            no_table_records,
        } => {
            let config = index_config(target_tokens, !no_table_records)?;
            commands::chunks::run(model_dir, &files, json, config)
        }
        Command::Dump { index, vectors } => commands::inspect::dump(model_dir, index, vectors),
        Command::Embed { json: _ } => commands::inspect::embed(model_dir),
        Command::Stats {
            index,
            json,
            health: true,
            stale_days,
        } => commands::health::run(model_dir, index, json, stale_days),
        Command::Stats { index, json, .. } => commands::inspect::stats(model_dir, index, json),
        Command::Eval(args) => commands::eval::run(model_dir, args),
        Command::Verify {
            index,
            repair,
            json,
        } => commands::verify::run(model_dir, index, repair, json),
        Command::Watch {
            dir,
            index,
            no_table_records,
            scan_every,
        } => commands::watch::run(model_dir, dir, index, !no_table_records, scan_every),
        Command::Serve(args) => commands::serve::run(model_dir, args),
    }
}
