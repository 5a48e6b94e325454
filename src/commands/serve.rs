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

pub struct ServeArgs {
    pub http: Option<String>,
    pub index: Option<PathBuf>,
    pub access: Option<String>,
    pub tokens: Option<PathBuf>,
    pub watch: Option<PathBuf>,
    pub allow_hosts: Vec<String>,
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
            let watcher = super::watch::watcher(model_dir, dir, args.index.clone())?;
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
        let thread = std::thread::spawn(move || watcher.run());
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
