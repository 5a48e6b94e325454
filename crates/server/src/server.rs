//! The one type both front ends share: the index, the bounded blocking pool searches run on,
//! and the status.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rag_index_core::{Access, Error as CoreError, Hit, IndexedChunk, RagIndex, Section};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::params::{ChunkParams, MAX_SECTION_TOKENS, SECTION_TOKENS, SearchParams, SectionParams};

/// Limits that keep one client from stalling the others.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Searches running at once on the blocking pool; more wait for a slot. Search is
    /// CPU-bound, so more than the cores only adds latency.
    pub max_concurrent: usize,
    /// How long a request waits for a slot before it is answered 503.
    pub queue_timeout: Duration,
    /// Largest HTTP request body.
    pub max_body_bytes: usize,
    /// How long an HTTP request body may take to arrive.
    pub body_timeout: Duration,
    /// Host names (without port) HTTP requests may carry in `Host` and `Origin`, besides
    /// `localhost`, `127.0.0.1` and `[::1]`: the defence against DNS rebinding.
    pub extra_hosts: Vec<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_concurrent: std::thread::available_parallelism().map_or(2, |n| n.get()),
            queue_timeout: Duration::from_secs(30),
            max_body_bytes: 64 * 1024,
            body_timeout: Duration::from_secs(10),
            extra_hosts: Vec::new(),
        }
    }
}

/// Why a request was not answered; each front end maps it to its own error form.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The request is malformed or invalid (HTTP 400).
    Invalid(String),
    /// No such chunk, or the caller may not see it: the two are indistinguishable on purpose.
    NotFound,
    /// Every search slot stayed busy for the queue timeout (HTTP 503).
    Overloaded,
    /// The index is not usable now (HTTP 503).
    Unavailable(String),
    /// Anything else (HTTP 500).
    Internal(String),
}

impl Failure {
    pub fn message(&self) -> String {
        match self {
            Failure::Invalid(reason) => reason.clone(),
            Failure::NotFound => "no chunk with this ID (or not visible to this caller)".into(),
            Failure::Overloaded => "the server is busy; retry shortly".into(),
            Failure::Unavailable(reason) | Failure::Internal(reason) => reason.clone(),
        }
    }
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Failure {
        match e {
            CoreError::InvalidRequest { .. } => Failure::Invalid(e.to_string()),
            CoreError::LexicalUnavailable { .. } | CoreError::NoIndex { .. } => {
                Failure::Unavailable(e.to_string())
            }
            other => Failure::Internal(other.to_string()),
        }
    }
}

/// A search answer, serialised straight from the hits (as `query --json` does: going through
/// `serde_json::Value` would widen every f32 score to more digits).
#[derive(serde::Serialize)]
pub(crate) struct Hits<'a> {
    pub hits: &'a [Hit],
}

type StatusFn = dyn Fn() -> Value + Send + Sync;

struct Inner {
    index: Arc<RagIndex>,
    slots: Arc<Semaphore>,
    options: ServeOptions,
    extra_status: OnceLock<Box<StatusFn>>,
}

/// Serves one index: to agents over MCP ([`serve_mcp_stdio`](Self::serve_mcp_stdio)) and to
/// applications over HTTP ([`serve_http`](Self::serve_http)). Cheap to clone; every clone
/// shares the same search slots.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl Server {
    /// A server of `index`. Searches see its last commit, also while it syncs.
    pub fn new(index: Arc<RagIndex>, options: ServeOptions) -> Server {
        Server {
            inner: Arc::new(Inner {
                index,
                slots: Arc::new(Semaphore::new(options.max_concurrent.max(1))),
                options,
                extra_status: OnceLock::new(),
            }),
        }
    }

    /// Adds `status()` to every status answer under `"watch"` (a watcher's freshness). Set
    /// once; later calls are ignored.
    pub fn with_status(self, status: impl Fn() -> Value + Send + Sync + 'static) -> Server {
        let _ = self.inner.extra_status.set(Box::new(status));
        self
    }

    pub(crate) fn options(&self) -> &ServeOptions {
        &self.inner.options
    }

    /// Runs `job` on the blocking pool once a slot is free, so CPU-bound work never blocks the
    /// async threads that read and write other clients' requests.
    async fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&RagIndex) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, Failure> {
        let wait = self.inner.options.queue_timeout;
        let permit = tokio::time::timeout(wait, self.inner.slots.clone().acquire_owned())
            .await
            .map_err(|_| Failure::Overloaded)?
            .map_err(|_| Failure::Internal("the server is shutting down".into()))?;
        let index = self.inner.index.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(&index)
        })
        .await
        .map_err(|e| Failure::Internal(format!("search task failed: {e}")))?
    }

    pub(crate) async fn search(
        &self,
        params: SearchParams,
        access: Access,
    ) -> Result<Vec<Hit>, Failure> {
        let request = params.to_request(access).map_err(Failure::Invalid)?;
        self.blocking(move |index| Ok(index.search_with(&request)?))
            .await
    }

    pub(crate) async fn chunk(
        &self,
        params: ChunkParams,
        access: Access,
    ) -> Result<IndexedChunk, Failure> {
        self.blocking(move |index| {
            index
                .chunk(&params.chunk_id, &access)?
                .ok_or(Failure::NotFound)
        })
        .await
    }

    pub(crate) async fn section(
        &self,
        params: SectionParams,
        access: Access,
    ) -> Result<Section, Failure> {
        let cap = params.max_tokens.unwrap_or(SECTION_TOKENS);
        if !(1..=MAX_SECTION_TOKENS).contains(&cap) {
            return Err(Failure::Invalid(format!(
                "max_tokens must be 1 to {MAX_SECTION_TOKENS}"
            )));
        }
        self.blocking(move |index| {
            index
                .section(&params.chunk_id, &access, cap)?
                .ok_or(Failure::NotFound)
        })
        .await
    }

    /// Freshness and what the caller may see. Reads one small record: cheap enough for
    /// health checks, and never waits for a search slot.
    pub(crate) async fn status(&self, access: &Access) -> Result<Value, Failure> {
        // A store read: off the async threads, as searches are (a PostgreSQL client blocks).
        let commit = self.blocking(|index| Ok(index.last_commit()?)).await?;
        let watch = self.inner.extra_status.get().map(|f| f());
        Ok(json!({
            "index": self.inner.index.dir().display().to_string(),
            "generation": commit.generation,
            "committed_at": commit.committed_at,
            "labels": access.held().collect::<Vec<_>>(),
            "watch": watch,
        }))
    }

    /// Loads the model and the graph before the first request, so it is answered warm.
    pub async fn warm_up(&self) {
        let result = self
            .blocking(|index| Ok(index.search("warm up", &Access::public(), 1)?))
            .await;
        if let Err(e) = result {
            log::warn!("warm-up search failed: {}", e.message());
        }
    }
}
