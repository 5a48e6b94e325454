//! `rag-index`: keep a local vector index of a docs folder in step with it, and query it.
//!
//! A thin command line over the `rag-index-core` library. stdout carries only results; progress,
//! logs and errors go to stderr. Exit codes: 0 success; 1 finished but some files failed; 2 usage
//! or fatal error; 75 the index is busy (another process is writing to it).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use rag_index_core::{
    Embedder, EmbedderConfig, Error as CoreError, IndexConfig, RagIndex, SyncOptions, SyncProgress,
};

/// Exit code for "the index is busy": EX_TEMPFAIL, so cron wrappers can retry.
const EXIT_BUSY: u8 = 75;
/// Environment variable naming the index for commands other than `sync`.
const INDEX_ENV: &str = "RAG_INDEX_PATH";
/// Name of the default index directory inside the synced folder.
const DEFAULT_INDEX_DIR: &str = ".rag-index";

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index *.md, *.markdown and *.txt under DIR, re-embedding only what changed.
    Sync {
        /// The folder to index.
        dir: PathBuf,
        /// Index directory (default: DIR/.rag-index).
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Print one JSON report on stdout.
        #[arg(long)]
        json: bool,
        /// Show what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Rebuild everything after a model or chunker change.
        #[arg(long)]
        reindex: bool,
        /// Wait for another sync to finish instead of exiting with code 75.
        #[arg(long)]
        wait: bool,
        /// Merge target for chunk sizes, in model tokens (changing it needs --reindex).
        #[arg(long, value_name = "N")]
        target_tokens: Option<usize>,
    },
    /// Search the index.
    Query {
        /// The query (or use --queries).
        text: Option<String>,
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Number of hits.
        #[arg(short, default_value_t = 5)]
        k: usize,
        /// One JSON object per query, one per line.
        #[arg(long)]
        json: bool,
        /// A file with one query per line.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// Brute-force search over every vector instead of the graph.
        #[arg(long)]
        exact: bool,
    },
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
    },
    /// Print every live chunk as one JSON object per line.
    Dump {
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Include each chunk's stored vector.
        #[arg(long)]
        vectors: bool,
    },
    /// Embed texts from stdin, one per line (a line starting with `"` is a JSON string).
    Embed {
        /// Accepted for symmetry; output is always one JSON array per line.
        #[arg(long)]
        json: bool,
    },
    /// Files, chunks, dimensions, model and sizes on disk.
    Stats {
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Retrieval quality over a question set (questions.jsonl format).
    Eval {
        /// The question set.
        questions: PathBuf,
        #[arg(long, value_name = "PATH")]
        index: Option<PathBuf>,
        /// Hits retrieved per question.
        #[arg(short, default_value_t = 10)]
        k: usize,
        #[arg(long)]
        json: bool,
        /// Brute-force search instead of the graph.
        #[arg(long)]
        exact: bool,
    },
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let busy = err.chain().any(|cause| {
                matches!(
                    cause.downcast_ref::<CoreError>(),
                    Some(CoreError::Busy { .. })
                )
            });
            eprintln!("rag-index: error: {err:#}");
            ExitCode::from(if busy { EXIT_BUSY } else { 2 })
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
        .init();
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    let model_dir = cli.model_dir.as_deref();
    let verbose = cli.verbose > 0;
    match cli.command {
        Command::Sync {
            dir,
            index,
            json,
            dry_run,
            reindex,
            wait,
            target_tokens,
        } => {
            let index = index.unwrap_or_else(|| dir.join(DEFAULT_INDEX_DIR));
            let how = SyncHow {
                json,
                options: SyncOptions { dry_run, reindex },
                wait,
                verbose,
                config: index_config(target_tokens),
            };
            cmd_sync(model_dir, &dir, &index, how)
        }
        Command::Query {
            text,
            index,
            k,
            json,
            queries,
            exact,
        } => {
            let queries = match (text, queries) {
                (Some(text), None) => vec![text],
                (None, Some(file)) => std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read queries file {}", file.display()))?
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect(),
                (Some(_), Some(_)) => bail!("give either a query TEXT or --queries FILE, not both"),
                (None, None) => bail!("give a query TEXT or --queries FILE"),
            };
            if k == 0 {
                bail!("-k must be at least 1");
            }
            let index = open_for_reading(model_dir, index)?;
            let mut out = std::io::stdout().lock();
            for query in &queries {
                let hits = index.search(query, k, exact)?;
                if json {
                    let hits: Vec<Value> = hits.iter().map(hit_json).collect();
                    writeln!(out, "{}", json!({ "query": query, "hits": hits }))?;
                } else {
                    writeln!(out, "query: {query}")?;
                    for hit in &hits {
                        writeln!(
                            out,
                            "{:>2}. {:.3}  {}  [{}]",
                            hit.rank,
                            hit.score,
                            hit.chunk.path,
                            hit.chunk.heading_path.join(" > ")
                        )?;
                        let body = hit.chunk.text.split_once("\n\n").map_or("", |(_, b)| b);
                        for line in body.lines().filter(|l| !l.trim().is_empty()).take(3) {
                            writeln!(out, "      {}", truncate(line, 110))?;
                        }
                    }
                    writeln!(out)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Chunks {
            files,
            json,
            target_tokens,
        } => cmd_chunks(model_dir, &files, json, index_config(target_tokens)),
        Command::Dump { index, vectors } => {
            let index = open_for_reading(model_dir, index)?;
            let mut out = std::io::stdout().lock();
            for (id, chunk) in index.dump()? {
                let mut record = json!({
                    "chunk_id": id,
                    "path": chunk.path,
                    "text": chunk.text,
                    "hash": chunk.hash,
                    "heading_path": chunk.heading_path,
                    "byte_range": [chunk.byte_range.0, chunk.byte_range.1],
                    "tokens": chunk.tokens,
                    "metadata": metadata_value(&chunk.metadata_json),
                });
                if vectors {
                    record["vector"] = json!(index.vector_of(&chunk.hash)?);
                }
                writeln!(out, "{record}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Embed { json: _ } => {
            let embedder = load_embedder(model_dir)?;
            let stdin = std::io::stdin().lock();
            let mut texts = Vec::new();
            for (n, line) in stdin.lines().enumerate() {
                let line = line.context("cannot read stdin")?;
                if line.starts_with('"') {
                    let text: String = serde_json::from_str(&line)
                        .with_context(|| format!("line {}: not a valid JSON string", n + 1))?;
                    texts.push(text);
                } else {
                    texts.push(line);
                }
            }
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = embedder.embed_documents(&refs)?;
            let mut out = std::io::stdout().lock();
            for vector in vectors {
                writeln!(out, "{}", serde_json::to_string(&vector)?)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { index, json } => {
            let index = open_for_reading(model_dir, index)?;
            let stats = index.stats()?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string(&stats)?)?;
            } else {
                writeln!(out, "index:       {}", index.dir().display())?;
                writeln!(out, "files:       {}", stats.files)?;
                writeln!(
                    out,
                    "chunks:      {} (mean {:.1} tokens)",
                    stats.chunks, stats.mean_chunk_tokens
                )?;
                writeln!(
                    out,
                    "vectors:     {} x {} dims",
                    stats.vectors, stats.dimensions
                )?;
                writeln!(out, "model:       {}", stats.model)?;
                writeln!(out, "generation:  {}", stats.generation)?;
                writeln!(
                    out,
                    "disk:        {} total ({} store, {} graph)",
                    human_bytes(stats.total_bytes),
                    human_bytes(stats.db_bytes),
                    human_bytes(stats.graph_bytes)
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval {
            questions,
            index,
            k,
            json,
            exact,
        } => {
            let text = std::fs::read_to_string(&questions)
                .with_context(|| format!("cannot read {}", questions.display()))?;
            let parsed = rag_index_core::eval::parse_questions(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", questions.display()))?;
            let index = open_for_reading(model_dir, index)?;
            let report = index.evaluate(&parsed, k.max(1), exact)?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string(&report)?)?;
            } else {
                writeln!(
                    out,
                    "{:<10} {:>4} {:>6} {:>6} {:>6} {:>7}",
                    "pattern", "n", "R@1", "R@5", "R@10", "MRR@10"
                )?;
                let rows = std::iter::once(("overall".to_string(), &report.overall))
                    .chain(report.per_pattern.iter().map(|(p, m)| (p.clone(), m)));
                for (name, m) in rows {
                    writeln!(
                        out,
                        "{:<10} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3}",
                        name,
                        m.questions,
                        m.recall_at_1,
                        m.recall_at_5,
                        m.recall_at_10,
                        m.mrr_at_10
                    )?;
                }
                writeln!(
                    out,
                    "mean tokens per returned chunk: {:.1}",
                    report.mean_tokens_per_chunk
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify {
            index,
            repair,
            json,
        } => {
            let dir = find_index(index)?;
            let embedder = load_embedder(model_dir)?;
            let index = if repair {
                RagIndex::open(&dir, embedder, IndexConfig::default())?
            } else {
                RagIndex::open_read_only(&dir, embedder, IndexConfig::default())?
            };
            let report = index.verify(repair)?;
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({
                        "ok": report.ok(),
                        "files": report.files,
                        "chunks": report.chunks,
                        "vectors": report.vectors,
                        "problems": report.problems,
                        "repaired": report.repaired,
                    })
                )?;
            } else {
                for line in &report.repaired {
                    writeln!(out, "repaired: {line}")?;
                }
                for line in &report.problems {
                    writeln!(out, "problem: {line}")?;
                }
                writeln!(
                    out,
                    "{}: {} files, {} chunks, {} vectors, {} problems",
                    if report.ok() { "ok" } else { "FAILED" },
                    report.files,
                    report.chunks,
                    report.vectors,
                    report.problems.len()
                )?;
            }
            Ok(if report.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// How `sync` runs and reports.
struct SyncHow {
    json: bool,
    options: SyncOptions,
    wait: bool,
    verbose: bool,
    config: IndexConfig,
}

fn cmd_sync(
    model_dir: Option<&Path>,
    dir: &Path,
    index_dir: &Path,
    how: SyncHow,
) -> Result<ExitCode> {
    let SyncHow {
        json,
        options,
        wait,
        verbose,
        config,
    } = how;
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    let embedder = load_embedder(model_dir)?;
    let index = loop {
        match RagIndex::open(index_dir, embedder.clone(), config.clone()) {
            Err(CoreError::Busy { .. }) if wait => std::thread::sleep(Duration::from_millis(500)),
            other => break other,
        }
    }
    .with_context(|| format!("cannot open index {}", index_dir.display()))?;

    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} ({eta})")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar
    });
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
    let report = index.sync(dir, &options, &progress, &AtomicBool::new(false));
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = report.with_context(|| format!("sync of {} failed", dir.display()))?;

    for error in &report.errors {
        eprintln!("rag-index: {}: {}", error.path, error.error);
    }
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else if verbose || std::io::stderr().is_terminal() || options.dry_run {
        let f = &report.files;
        let c = &report.chunks;
        eprintln!(
            "{}files: {} added, {} modified, {} removed, {} unchanged, {} failed; chunks: {} embedded, {} reused, {} deleted, {} total ({} ms)",
            if options.dry_run { "dry run: " } else { "" },
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
        );
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn cmd_chunks(
    model_dir: Option<&Path>,
    files: &[PathBuf],
    json: bool,
    config: IndexConfig,
) -> Result<ExitCode> {
    let embedder = load_embedder(model_dir)?;
    let chunker = rag_index_core::chunker_for(&embedder, config.chunker)?;
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for file in files {
        let path = file.to_string_lossy().replace('\\', "/");
        let text = match std::fs::read(file) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!(
                        "rag-index: {path}: invalid UTF-8 at byte {}",
                        e.utf8_error().valid_up_to()
                    );
                    failed = true;
                    continue;
                }
            },
            Err(e) => {
                eprintln!("rag-index: {path}: {e}");
                failed = true;
                continue;
            }
        };
        let document = chunker.chunk(&path, &text)?;
        for warning in &document.warnings {
            log::warn!("{path}: {warning}");
        }
        for chunk in &document.chunks {
            if json {
                let record = json!({
                    "chunk_id": chunk.id,
                    "path": chunk.path,
                    "title": chunk.title,
                    "heading_path": chunk.heading_path,
                    "ordinal": chunk.ordinal,
                    "text": chunk.text,
                    "byte_range": [chunk.byte_range.start, chunk.byte_range.end],
                    "tokens": chunk.tokens,
                    "hash": chunk.hash,
                    "metadata": chunk.metadata,
                });
                writeln!(out, "{record}")?;
            } else {
                writeln!(
                    out,
                    "--- {} #{} {} tokens, bytes {}..{}",
                    chunk.path,
                    chunk.ordinal,
                    chunk.tokens,
                    chunk.byte_range.start,
                    chunk.byte_range.end
                )?;
                writeln!(out, "{}\n", chunk.text)?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn hit_json(hit: &rag_index_core::Hit) -> Value {
    json!({
        "rank": hit.rank,
        "score": hit.score,
        "chunk_id": hit.chunk_id,
        "path": hit.chunk.path,
        "heading_path": hit.chunk.heading_path,
        "text": hit.chunk.text,
        "byte_range": [hit.chunk.byte_range.0, hit.chunk.byte_range.1],
        "metadata": metadata_value(&hit.chunk.metadata_json),
    })
}

fn metadata_value(metadata_json: &str) -> Value {
    serde_json::from_str(metadata_json).unwrap_or_else(|_| json!({}))
}

/// Where to look for `models/all-MiniLM-L6-v2`: next to the binary and its ancestors (a source
/// checkout's target/release/rag-index finds the checkout's models/), then the working directory
/// and its ancestors, then the checkout the binary was built from.
fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut push_ancestors = |start: &Path| {
        for dir in start.ancestors() {
            let candidate = dir.join("models");
            if candidate.is_dir() && !dirs.contains(&candidate) {
                dirs.push(candidate);
            }
        }
    };
    if let Ok(exe) = std::env::current_exe()
        && let Some(parent) = exe.parent()
    {
        push_ancestors(parent);
    }
    if let Ok(cwd) = std::env::current_dir() {
        push_ancestors(&cwd);
    }
    // A binary built from a checkout finds that checkout's models/ even when its target
    // directory lives elsewhere (CARGO_TARGET_DIR) and it runs from another folder.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    if checkout.is_dir() && !dirs.contains(&checkout) {
        dirs.push(checkout);
    }
    dirs
}

fn load_embedder(model_dir: Option<&Path>) -> Result<Arc<Embedder>> {
    let dir = rag_index_core::resolve_model_dir(model_dir, &model_search_dirs())?;
    log::info!("model: {}", dir.display());
    let embedder = Embedder::open(&dir, EmbedderConfig::default())
        .with_context(|| format!("cannot load the model from {}", dir.display()))?;
    Ok(Arc::new(embedder))
}

/// `--index`, then `$RAG_INDEX_PATH`, then `.rag-index` in the working directory or a parent.
fn find_index(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    if let Some(path) = std::env::var_os(INDEX_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    for dir in cwd.ancestors() {
        let candidate = dir.join(DEFAULT_INDEX_DIR);
        if candidate.join(rag_index_core::DB_FILE).is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "no index found: pass --index PATH, set {INDEX_ENV}, or run from a folder synced with `rag-index sync`"
    )
}

fn open_for_reading(model_dir: Option<&Path>, index: Option<PathBuf>) -> Result<RagIndex> {
    let dir = find_index(index)?;
    let embedder = load_embedder(model_dir)?;
    RagIndex::open_read_only(&dir, embedder, IndexConfig::default())
        .with_context(|| format!("cannot open index {}", dir.display()))
}

fn index_config(target_tokens: Option<usize>) -> IndexConfig {
    let mut config = IndexConfig::default();
    if let Some(target) = target_tokens {
        config.chunker.target_tokens = target;
    }
    config
}

fn truncate(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", units[unit])
}
