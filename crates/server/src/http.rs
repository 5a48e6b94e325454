//! The HTTP JSON API: `POST /search`, `GET /chunks/{id}`, `GET /status`, `GET /health`, and
//! MCP over streamable HTTP at `/mcp`. Every request passes the Host/Origin check
//! (DNS-rebinding defence) and, with a tokens file, the bearer check, which decides the
//! caller's labels.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::BodyExt;
use rag_index_core::{Access, quoted};
use serde_json::json;
use tokio::net::TcpListener;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::mcp::Mcp;
use crate::params::{ChunkParams, SearchParams};
use crate::server::{Failure, Server};
use crate::tokens::Tokens;
use crate::{Result, ServerError};

/// Names a loopback server answers to: a page on another site that rebinds its own name to
/// 127.0.0.1 still sends its own name in `Host`, and is refused.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

#[derive(Clone)]
struct App {
    server: Server,
    tokens: Option<Arc<Tokens>>,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = axum::Json(json!({ "error": message.into() }));
    (status, body).into_response()
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = match &self {
            Failure::Invalid(_) => StatusCode::BAD_REQUEST,
            Failure::NotFound => StatusCode::NOT_FOUND,
            Failure::Overloaded | Failure::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        error(status, self.message())
    }
}

impl Server {
    /// The API as an axum router (for embedding it in another server, or testing it).
    /// `tokens`: `None` serves every caller as public; `Some` requires a valid bearer token.
    pub fn http_router(&self, tokens: Option<Tokens>) -> Router {
        self.router(tokens, CancellationToken::new())
    }

    fn router(&self, tokens: Option<Tokens>, stop: CancellationToken) -> Router {
        let app = App {
            server: self.clone(),
            tokens: tokens.map(Arc::new),
        };
        let server = self.clone();
        // Host and Origin are checked by `guard` for every route, against the same allowed
        // names; the SDK's own loopback-only check would refuse `--allow-host` names.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_max_request_body_bytes(self.options().max_body_bytes)
            .with_cancellation_token(stop);
        let mcp = StreamableHttpService::new(
            move || Ok(Mcp::over_http(server.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        Router::new()
            .route("/search", post(search))
            .route("/chunks/{id}", get(chunk))
            .route("/status", get(status))
            .route("/health", get(health))
            .route_service("/mcp", mcp)
            .fallback(|| async { error(StatusCode::NOT_FOUND, "no such endpoint") })
            .layer(middleware::from_fn_with_state(app.clone(), guard))
            .with_state(app)
    }

    /// Serves the API on `listener` until `shutdown` completes.
    pub async fn serve_http(
        &self,
        listener: TcpListener,
        tokens: Option<Tokens>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        // Open MCP event streams end when the server stops, or the graceful shutdown would wait
        // for clients to hang up.
        let stop = CancellationToken::new();
        let router = self.router(tokens, stop.clone());
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                stop.cancel();
            })
            .await
            .map_err(ServerError::Http)
    }
}

/// The host name of a `Host` value or an origin's authority, without port, lower-cased.
fn host_name(authority: &str) -> String {
    let authority = authority.trim().to_ascii_lowercase();
    if let Some(end) = authority.strip_prefix('[').and_then(|rest| rest.find(']')) {
        return authority[..end + 2].to_string();
    }
    match authority.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => authority,
    }
}

fn allowed_host(server: &Server, name: &str) -> bool {
    LOOPBACK_HOSTS.contains(&name)
        || server
            .options()
            .extra_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(name))
}

/// Whether the request's `Host` and (if any) `Origin` name this server.
fn check_origin(server: &Server, headers: &HeaderMap) -> std::result::Result<(), String> {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return Err("a Host header is required".into());
    };
    if !allowed_host(server, &host_name(host)) {
        return Err(format!("host {} is not served here", quoted(host)));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        match authority {
            Some(authority) if allowed_host(server, &host_name(authority)) => {}
            _ => return Err(format!("origin {} is not allowed", quoted(origin))),
        }
    }
    Ok(())
}

/// The labels of the caller: public without a tokens file, the token's with one.
fn caller(app: &App, headers: &HeaderMap) -> std::result::Result<Access, ()> {
    let Some(tokens) = &app.tokens else {
        return Ok(Access::public());
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    presented.and_then(|t| tokens.access(t)).cloned().ok_or(())
}

async fn guard(State(app): State<App>, mut request: Request, next: Next) -> Response {
    if let Err(reason) = check_origin(&app.server, request.headers()) {
        return error(StatusCode::FORBIDDEN, reason);
    }
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    match caller(&app, request.headers()) {
        Ok(access) => {
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Err(()) => {
            let mut response = error(
                StatusCode::UNAUTHORIZED,
                "a valid bearer token is required (Authorization: Bearer TOKEN)",
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

fn access_of(request: &Request) -> Access {
    // Set by `guard` for every route but /health; public is only a fallback that never widens.
    request
        .extensions()
        .get::<Access>()
        .cloned()
        .unwrap_or_else(Access::public)
}

/// Reads the whole body within the size and time limits.
async fn read_body(server: &Server, body: Body) -> std::result::Result<Vec<u8>, Response> {
    let options = server.options();
    let limit = options.max_body_bytes;
    match tokio::time::timeout(options.body_timeout, read_within(body, limit)).await {
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            "the request body took too long to arrive",
        )),
        Ok(Err(())) => Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {limit} bytes (or was cut off)"),
        )),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// The body if it is at most `limit` bytes. A larger one is still read on (and dropped) up to
/// a bound: answering while the client is still sending makes the connection close with
/// unread data, which resets it, and the client never sees the 413.
async fn read_within(mut body: Body, limit: usize) -> std::result::Result<Vec<u8>, ()> {
    let drain_up_to = limit.saturating_mul(16).max(1 << 20);
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(());
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len();
        if seen > drain_up_to {
            return Err(());
        }
        if seen <= limit {
            bytes.extend_from_slice(&data);
        }
    }
    match seen <= limit {
        true => Ok(bytes),
        false => Err(()),
    }
}

async fn search(State(app): State<App>, request: Request) -> Response {
    let access = access_of(&request);
    let bytes = match read_body(&app.server, request.into_body()).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let params: SearchParams = match serde_json::from_slice(&bytes) {
        Ok(params) => params,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("bad search request: {e}")),
    };
    match app.server.search(params, access).await {
        Ok(hits) => axum::Json(crate::server::Hits { hits: &hits }).into_response(),
        Err(failure) => failure.into_response(),
    }
}

async fn chunk(State(app): State<App>, Path(id): Path<String>, request: Request) -> Response {
    let access = access_of(&request);
    match app.server.chunk(ChunkParams { chunk_id: id }, access).await {
        Ok(chunk) => axum::Json(chunk).into_response(),
        Err(failure) => failure.into_response(),
    }
}

async fn status(State(app): State<App>, request: Request) -> Response {
    match app.server.status(&access_of(&request)).await {
        Ok(status) => axum::Json(status).into_response(),
        Err(failure) => failure.into_response(),
    }
}

async fn health() -> Response {
    axum::Json(json!({ "ok": true })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_drop_the_port() {
        assert_eq!(host_name("LocalHost:7341"), "localhost");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("evil.example:80"), "evil.example");
        assert_eq!(
            host_name("localhost.evil.example"),
            "localhost.evil.example"
        );
    }
}
