//! The JSON shapes of requests, shared by the MCP tools and the HTTP API, and their conversion
//! to a core [`SearchRequest`]. The caller's labels are never part of them: the server decides.

use rag_index_core::{Access, Condition, Expand, Fusion, PathGlob, SearchMode, SearchRequest};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

/// Results when a budget is given and `k` is not: the budget decides.
const BUDGET_RESULTS: usize = 50;
/// Results when neither is given.
const DEFAULT_K: usize = 5;

/// A search. Unknown fields are refused, so a misspelt option is an error, not ignored.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for: a question or keywords in natural language, or an exact identifier
    /// (config key, CLI flag, error message).
    pub query: String,
    /// Number of results (default 5; with `budget`, at most this many, default 50).
    #[serde(default)]
    pub k: Option<usize>,
    /// Return results in rank order until this many model tokens are handed back (never more),
    /// instead of a fixed number. Use it to fill a context window.
    #[serde(default)]
    pub budget: Option<usize>,
    /// Signals: "hybrid" (default: embeddings and BM25 fused), "dense" (embeddings only, for
    /// paraphrased questions) or "lexical" (BM25 only, for exact terms).
    #[serde(default)]
    pub mode: Option<String>,
    /// How hybrid mode fuses the rankings: "convex" (default) or "rrf".
    #[serde(default)]
    pub fusion: Option<String>,
    /// Conditions every result must meet, each `KEY=VALUE` (or `KEY=a,b` for one of several;
    /// also `!=`, `>=`, `>`, `<=`, `<`). Keys: front-matter fields, `tags`, `path`, `title`,
    /// provenance (`modified`, `changed_at`, ...) and, for table row records, `row_key`.
    #[serde(default)]
    pub filters: Vec<String>,
    /// Only files matching one of these globs, relative to the indexed folder
    /// (`docs/**/*.md`; `*` stays within one folder).
    #[serde(default)]
    pub paths: Vec<String>,
    /// What each result brings along: "none" (default), "neighbors" (the chunks just before
    /// and after it) or "section" (its whole section, trimmed to fit).
    #[serde(default)]
    pub expand: Option<String>,
    /// Collapse results whose texts overlap heavily into the best one (default true).
    #[serde(default)]
    pub dedup: Option<bool>,
    /// Scan every vector instead of walking the graph (slower; for checking recall).
    #[serde(default)]
    pub exact: Option<bool>,
}

impl SearchParams {
    /// The core request these parameters ask for, for a caller holding `access`. Errors say
    /// which field is wrong.
    pub fn to_request(&self, access: Access) -> Result<SearchRequest, String> {
        let k = self.k.unwrap_or(match self.budget {
            Some(_) => BUDGET_RESULTS,
            None => DEFAULT_K,
        });
        let mut request = SearchRequest::new(&self.query, access).k(k);
        if let Some(mode) = &self.mode {
            request = request.mode(mode.parse::<SearchMode>().map_err(|e| e.to_string())?);
        }
        if let Some(fusion) = &self.fusion {
            request = request.fusion(fusion.parse::<Fusion>().map_err(|e| e.to_string())?);
        }
        if let Some(expand) = &self.expand {
            request = request.expand(expand.parse::<Expand>().map_err(|e| e.to_string())?);
        }
        for filter in &self.filters {
            let condition: Condition = filter.parse().map_err(|e| format!("filter: {e}"))?;
            request = request.filter(condition);
        }
        for glob in &self.paths {
            request = request.path(PathGlob::new(glob).map_err(|e| format!("path: {e}"))?);
        }
        if let Some(dedup) = self.dedup {
            request = request.dedup(dedup);
        }
        if let Some(exact) = self.exact {
            request = request.exact(exact);
        }
        if let Some(budget) = self.budget {
            request = request.budget(budget);
        }
        request.validate().map_err(|e| e.to_string())?;
        Ok(request)
    }
}

/// One chunk by ID.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkParams {
    /// The `chunk_id` of a search result (32 hex characters).
    pub chunk_id: String,
}

/// The section around a chunk.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionParams {
    /// The `chunk_id` of a search result (32 hex characters).
    pub chunk_id: String,
    /// Most model tokens to return (default 4096); the text nearest the chunk is kept.
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

/// Default and largest `max_tokens` of a section.
pub(crate) const SECTION_TOKENS: usize = 4_096;
pub(crate) const MAX_SECTION_TOKENS: usize = 65_536;

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: &str) -> Result<SearchParams, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn fields_become_a_validated_request() {
        let p = params(r#"{"query":"tls","k":3,"mode":"lexical","expand":"section"}"#).unwrap();
        let r = p.to_request(Access::public()).unwrap();
        assert_eq!((r.hits(), r.search_mode()), (3, SearchMode::Lexical));
        assert_eq!(r.expansion(), Expand::Section);
        assert!(params(r#"{"query":"x","labels":["finance"]}"#).is_err());
        assert!(params(r#"{"k":3}"#).is_err());
        let bad = |json: &str| params(json).unwrap().to_request(Access::public()).is_err();
        assert!(bad(r#"{"query":"x","k":0}"#));
        assert!(bad(r#"{"query":"x","mode":"both"}"#));
        assert!(bad(r#"{"query":"x","filters":["no operator"]}"#));
        let budget = params(r#"{"query":"x","budget":100}"#).unwrap();
        assert_eq!(budget.to_request(Access::public()).unwrap().hits(), 50);
    }
}
