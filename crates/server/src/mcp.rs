//! The MCP server: tools `search`, `get_chunk`, `get_section` and `status`. Over stdio the
//! caller's labels are fixed when the server starts; over streamable HTTP (`/mcp` beside the
//! JSON API) they are the bearer token's, decided by the HTTP guard. A client never chooses them.

use rag_index_core::Access;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

use crate::params::{ChunkParams, SearchParams, SectionParams};
use crate::server::{Failure, Hits, Server};
use crate::{Result, ServerError};

const INSTRUCTIONS: &str = "Searches a local index of documents that is kept current with its \
folder. Start with `search` (a natural-language question or exact terms); each hit has a \
`chunk_id`, its `path`, its `heading_path` and the chunk `text`. When a hit is relevant but cut \
short, call `get_section` with its chunk_id for the surrounding section, or run `search` with \
`expand: \"section\"`. Use `budget` to cap the tokens returned. Cite `path` and headings.";

/// No parameters.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Clone)]
pub(crate) struct Mcp {
    server: Server,
    // Stdio: the operator's labels. HTTP: `None`, each request carries its token's.
    access: Option<Access>,
    tool_router: ToolRouter<Mcp>,
}

/// A tool's answer: compact JSON text on success (an agent pays for every token); a tool error the agent can read and correct, not a
/// protocol error, when the request was wrong.
fn answer<T: Serialize>(result: std::result::Result<T, Failure>) -> CallToolResult {
    match result.map(|value| serde_json::to_string(&value)) {
        Ok(Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        Err(failure) => CallToolResult::error(vec![ContentBlock::text(failure.message())]),
    }
}

#[tool_router]
impl Mcp {
    pub fn new(server: Server, access: Access) -> Mcp {
        Mcp {
            server,
            access: Some(access),
            tool_router: Self::tool_router(),
        }
    }

    /// A session over streamable HTTP: labels per request, from the HTTP guard.
    pub fn over_http(server: Server) -> Mcp {
        Mcp {
            server,
            access: None,
            tool_router: Self::tool_router(),
        }
    }

    /// The caller's labels: the operator's over stdio; over HTTP those the guard put in the
    /// request (public if absent, which never widens).
    fn caller(&self, context: &RequestContext<RoleServer>) -> Access {
        if let Some(access) = &self.access {
            return access.clone();
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Access>())
            .cloned()
            .unwrap_or_else(Access::public)
    }

    #[tool(
        description = "Search the indexed documents. Returns {\"hits\": [...]} best first; each \
        hit has rank, score, chunk_id, path, title, heading_path (the headings above it), \
        byte_range, text (headings line, blank line, body), tokens and metadata (front matter, \
        tags). Ask a full question for conceptual answers; put exact identifiers (config keys, \
        flags, error messages) in the query as written, or use mode \"lexical\". Narrow with \
        filters (e.g. [\"tags=http2\"]) or paths (e.g. [\"reference/**\"]). A row of a keyed \
        table is also a hit of its own (its header and that row; metadata record \
        \"table_row\", row_key, key_column): to fetch one row by its key, filter \
        [\"row_key=redis.dialTimeout\"]. Results overlap less with dedup (on by default); \
        expand \"neighbors\" or \"section\" brings the surrounding text in `passage` (a part's \
        `repeated` bytes at the start of its body repeat the part before: skip them when \
        joining). Only \
        documents this server may show are searched."
    )]
    async fn search(
        &self,
        Parameters(params): Parameters<SearchParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let result = self.server.search(params, self.caller(&context)).await;
        Ok(match result {
            Ok(hits) => answer::<Hits>(Ok(Hits { hits: &hits })),
            Err(failure) => answer::<Hits>(Err(failure)),
        })
    }

    #[tool(
        description = "Fetch one chunk by the chunk_id of a search hit: its full text, path, \
        headings, byte range and metadata. A chunk that no longer exists (the file changed) or \
        that this server may not show is reported as not found."
    )]
    async fn get_chunk(
        &self,
        Parameters(params): Parameters<ChunkParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(answer(
            self.server.chunk(params, self.caller(&context)).await,
        ))
    }

    #[tool(
        description = "Fetch the whole section a chunk belongs to (every chunk under its \
        heading, sub-headings included, in document order), given the chunk_id of a search \
        hit. Use it when a hit is relevant but the answer continues before or after it. \
        max_tokens (default 4096) caps the size; `truncated` says whether text was left out."
    )]
    async fn get_section(
        &self,
        Parameters(params): Parameters<SectionParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(answer(
            self.server.section(params, self.caller(&context)).await,
        ))
    }

    #[tool(
        description = "How current the index is: the generation served, when it was committed \
        (milliseconds since the Unix epoch), and, when the server follows the folder, changes \
        seen but not yet searchable. Also the labels this server searches with."
    )]
    async fn status(
        &self,
        Parameters(_): Parameters<NoParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        Ok(answer(self.server.status(&self.caller(&context)).await))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rag-index", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

impl Server {
    /// Serves MCP on stdin/stdout until the client closes stdin, searching as `access` (the
    /// labels the operator gave at start; the client cannot change them).
    pub async fn serve_mcp_stdio(&self, access: Access) -> Result<()> {
        let service = Mcp::new(self.clone(), access)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServerError::Mcp(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| ServerError::Mcp(e.to_string()))?;
        Ok(())
    }
}
