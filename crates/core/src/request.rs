//! What one search asks for: [`SearchRequest`], a builder whose defaults are the safe choice and
//! which [`RagIndex::search_with`](crate::RagIndex::search_with) validates as a whole.

use std::str::FromStr;

use serde::Serialize;

use crate::access::Access;
use crate::filter::{Condition, Filter, PathGlob};
use crate::fusion::Fusion;
use crate::quoted::quoted;
use crate::{Error, Result};

/// Most hits one request may ask for.
pub const MAX_K: usize = 10_000;
/// Longest query accepted, in bytes: the model reads only its first 256 tokens (about a kilobyte
/// of text), and BM25 over thousands of terms is slow for nothing.
pub const MAX_QUERY_BYTES: usize = 16 * 1024;
/// Largest token budget accepted.
pub const MAX_BUDGET: usize = 1 << 20;

/// Which signals a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Embedding similarity only.
    Dense,
    /// BM25 over the chunk text and path only; needs no model.
    Lexical,
    /// Both, fused (see [`Fusion`]). The default: it answers more of the dev question set than
    /// either signal alone.
    #[default]
    Hybrid,
}

impl FromStr for SearchMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "dense" => Ok(SearchMode::Dense),
            "lexical" => Ok(SearchMode::Lexical),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(Error::InvalidRequest {
                reason: format!(
                    "unknown search mode {} (dense, lexical or hybrid)",
                    quoted(other)
                ),
            }),
        }
    }
}

/// What a hit brings along from its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expand {
    /// The hit alone.
    #[default]
    None,
    /// The chunks just before and after the hit in the same section.
    Neighbors,
    /// The hit's whole section (the chunks under its deepest heading), in document order, once
    /// however many hits fall in it; trimmed around the hits to fit the budget.
    Section,
}

impl FromStr for Expand {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Expand::None),
            "neighbors" | "neighbours" => Ok(Expand::Neighbors),
            "section" => Ok(Expand::Section),
            other => Err(Error::InvalidRequest {
                reason: format!(
                    "unknown expansion {} (none, neighbors or section)",
                    quoted(other)
                ),
            }),
        }
    }
}

/// One search: the query, who asks, and everything that shapes the answer. The caller's labels
/// are part of the constructor: there is no search without them ([`Access::public`] sees only
/// documents that need no label).
///
/// ```
/// use rag_index_core::{Access, Expand, SearchMode, SearchRequest};
/// let request = SearchRequest::new("maxConcurrentStreams", Access::public())
///     .k(5)
///     .mode(SearchMode::Lexical)
///     .filter("tags=http2".parse().unwrap())
///     .expand(Expand::Section)
///     .budget(1024);
/// assert!(request.validate().is_ok());
/// assert!(SearchRequest::new("x", Access::public()).k(0).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub(crate) query: String,
    pub(crate) access: Access,
    pub(crate) k: usize,
    pub(crate) mode: SearchMode,
    pub(crate) exact: bool,
    pub(crate) fusion: Fusion,
    pub(crate) filter: Filter,
    pub(crate) dedup: bool,
    pub(crate) expand: Expand,
    pub(crate) budget: Option<usize>,
}

impl SearchRequest {
    /// A request for the 5 best chunks for `query` that `access` may see, in the default mode,
    /// with near-duplicates collapsed.
    pub fn new(query: impl Into<String>, access: Access) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            access,
            k: 5,
            mode: SearchMode::default(),
            exact: false,
            fusion: Fusion::default(),
            filter: Filter::default(),
            dedup: true,
            expand: Expand::None,
            budget: None,
        }
    }

    /// The same request for another query (to run one setting over a question set).
    pub fn with_query(&self, query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            ..self.clone()
        }
    }

    /// Number of results, 1 to [`MAX_K`]; with a [`budget`](Self::budget), the most results.
    pub fn k(mut self, k: usize) -> SearchRequest {
        self.k = k;
        self
    }

    /// Which signals to use.
    pub fn mode(mut self, mode: SearchMode) -> SearchRequest {
        self.mode = mode;
        self
    }

    /// Scan every vector instead of walking the graph (for checking recall).
    pub fn exact(mut self, exact: bool) -> SearchRequest {
        self.exact = exact;
        self
    }

    /// How hybrid search fuses the signals (ignored by the other modes).
    pub fn fusion(mut self, fusion: Fusion) -> SearchRequest {
        self.fusion = fusion;
        self
    }

    /// Adds a condition every result must meet (conditions add up: all must hold).
    pub fn filter(mut self, condition: Condition) -> SearchRequest {
        self.filter.conditions.push(condition);
        self
    }

    /// Adds a path glob; results must match one of them.
    pub fn path(mut self, glob: PathGlob) -> SearchRequest {
        self.filter.paths.push(glob);
        self
    }

    /// Whether hits whose texts overlap heavily are collapsed to the best-ranked one.
    pub fn dedup(mut self, dedup: bool) -> SearchRequest {
        self.dedup = dedup;
        self
    }

    /// What each hit brings along.
    pub fn expand(mut self, expand: Expand) -> SearchRequest {
        self.expand = expand;
        self
    }

    /// Returns results in rank order until `tokens` model tokens (of everything returned, after
    /// dedup and expansion) are spent; never more.
    pub fn budget(mut self, tokens: usize) -> SearchRequest {
        self.budget = Some(tokens);
        self
    }

    /// The query text.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The caller's labels.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The mode.
    pub fn search_mode(&self) -> SearchMode {
        self.mode
    }

    /// The fusion rule.
    pub fn fusion_rule(&self) -> Fusion {
        self.fusion
    }

    /// The filter.
    pub fn filters(&self) -> &Filter {
        &self.filter
    }

    /// The expansion.
    pub fn expansion(&self) -> Expand {
        self.expand
    }

    /// Whether dedup is on.
    pub fn dedups(&self) -> bool {
        self.dedup
    }

    /// The token budget, if any.
    pub fn token_budget(&self) -> Option<usize> {
        self.budget
    }

    /// Number of results asked for.
    pub fn hits(&self) -> usize {
        self.k
    }

    /// Checks every setting; [`Error::InvalidRequest`] says which is wrong. (Filter keys are
    /// checked against the index when the search runs.)
    pub fn validate(&self) -> Result<()> {
        let invalid = |reason: String| Err(Error::InvalidRequest { reason });
        if self.k == 0 || self.k > MAX_K {
            return invalid(format!("k must be 1 to {MAX_K}, not {}", self.k));
        }
        if self.query.len() > MAX_QUERY_BYTES {
            return invalid(format!("the query is longer than {MAX_QUERY_BYTES} bytes"));
        }
        // A search for nothing would return arbitrary chunks with made-up scores.
        if self.query.trim().is_empty() {
            return invalid("the query is empty".into());
        }
        if let Some(budget) = self.budget
            && !(1..=MAX_BUDGET).contains(&budget)
        {
            return invalid(format!("the budget must be 1 to {MAX_BUDGET} tokens"));
        }
        if let Fusion::Convex { dense_weight } = self.fusion
            && !(0.0..=1.0).contains(&dense_weight)
        {
            return invalid(format!(
                "dense_weight must be in [0, 1], not {dense_weight}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_validated() {
        let q = || SearchRequest::new("q", Access::public());
        assert!(q().validate().is_ok());
        assert!(q().k(MAX_K + 1).validate().is_err());
        assert!(q().budget(0).validate().is_err());
        assert!(q().with_query(" \t").validate().is_err());
        assert!(
            SearchRequest::new("x".repeat(MAX_QUERY_BYTES + 1), Access::public())
                .validate()
                .is_err()
        );
        let bad = Fusion::Convex { dense_weight: 1.5 };
        assert!(q().fusion(bad).validate().is_err());
        assert_eq!(
            "lexical".parse::<SearchMode>().unwrap(),
            SearchMode::Lexical
        );
        assert!("both".parse::<SearchMode>().is_err());
        assert_eq!("convex".parse::<Fusion>().unwrap(), Fusion::CONVEX);
        assert_eq!("section".parse::<Expand>().unwrap(), Expand::Section);
        assert!("page".parse::<Expand>().is_err());
    }
}
