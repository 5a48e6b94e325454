//! `rag-index serve`: answer searches from a warm process, over MCP (stdio) or HTTP, optionally
//! following the folder in the same process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rag_index_core::Access;
use rag_server::{ServeOptions, Server, Tokens};

use crate::setup::open_for_reading;

/// `rag-index serve`'s arguments.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Serve MCP over stdin/stdout.
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    pub mcp: bool,
    /// Serve HTTP on ADDR (default 127.0.0.1:7341).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7341")]
    pub http: Option<String>,
    #[arg(long, value_name = "PATH")]
    pub index: Option<PathBuf>,
    /// The permission labels MCP searches hold (comma-separated); default public.
    #[arg(long = "as", value_name = "LABEL[,LABEL]", requires = "mcp")]
    pub access: Option<String>,
    /// Bearer tokens for HTTP, one `TOKEN [LABEL,LABEL]` per line: a request without a
    /// listed token gets 401 and each token sees only its labels.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub tokens: Option<PathBuf>,
    /// Also follow DIR and keep its index current (the index defaults to DIR/.rag-index).
    #[arg(long, value_name = "DIR")]
    pub watch: Option<PathBuf>,
    /// With --watch, for an index synced with `--no-table-records`.
    #[arg(long, requires = "watch")]
    pub no_table_records: bool,
    /// Another host name HTTP clients may use in Host/Origin (besides loopback names).
    #[arg(long = "allow-host", value_name = "NAME", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// Searches run at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    pub max_concurrent: Option<usize>,
}

pub fn run(model_dir: Option<&Path>, args: ServeArgs) -> Result<ExitCode> {
    let access = match &args.access {
        Some(list) => Access::parse_list(list).context("--as")?,
        None => Access::public(),
    };
    let tokens = match &args.tokens {
        Some(file) => Some(Tokens::load(file)?),
        None => None,
    };
    let addr: Option<SocketAddr> = match &args.http {
        Some(addr) => Some(addr.parse().with_context(|| format!("--http {addr}"))?),
        None => None,
    };
    if let Some(addr) = addr
        && !addr.ip().is_loopback()
        && tokens.is_none()
    {
        bail!(
            "--http {addr} is not a loopback address: serving beyond this machine needs --tokens"
        );
    }

    // With --watch this process is the index's writer; otherwise it only reads, and a cron
    // `sync` may run meanwhile (searches follow its commits).
    let (index, watcher) = match &args.watch {
        Some(dir) => {
            let watcher = super::watch::watcher(
                model_dir,
                dir,
                args.index.clone(),
                !args.no_table_records,
                rag_watch::WatchOptions::default(),
            )?;
            (watcher.index().clone(), Some(watcher))
        }
        None => (
            Arc::new(open_for_reading(model_dir, args.index.clone())?),
            None,
        ),
    };
    let mut options = ServeOptions {
        extra_hosts: args.allow_hosts.clone(),
        ..ServeOptions::default()
    };
    if let Some(n) = args.max_concurrent {
        options.max_concurrent = n.max(1);
    }
    let mut server = Server::new(index, options);
    let watching = watcher.map(|watcher| {
        let handle = watcher.handle();
        let status = watcher.status();
        server = server.clone().with_status(move || {
            serde_json::to_value(status.get()).unwrap_or(serde_json::Value::Null)
        });
        let thread = std::thread::spawn(move || super::watch::run_publishing(watcher));
        (handle, thread)
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async {
        server.warm_up().await;
        match addr {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                log::info!("serving HTTP on {}", listener.local_addr()?);
                server
                    .serve_http(listener, tokens, shutdown_signal())
                    .await?;
            }
            None => {
                tokio::select! {
                    served = server.serve_mcp_stdio(access) => served?,
                    () = shutdown_signal() => {}
                }
            }
        }
        anyhow::Ok(())
    });
    // Blocking reads of stdin must not keep the process alive once serving ended.
    runtime.shutdown_background();
    if let Some((handle, thread)) = watching {
        handle.stop();
        match thread.join() {
            Ok(result) => result.context("watching failed")?,
            Err(_) => bail!("the watcher thread panicked"),
        }
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
