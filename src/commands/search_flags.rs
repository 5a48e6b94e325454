//! The flags every searching command shares (`query`, `eval`), turned into a core
//! [`SearchRequest`].

use anyhow::{Context, Result};
use rag_index_core::{Access, Condition, Expand, Fusion, PathGlob, SearchMode, SearchRequest};

/// Which signals to search.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ModeArg {
    /// Vectors and BM25, fused.
    Hybrid,
    /// Vectors only.
    Dense,
    /// BM25 only (loads no model).
    Lexical,
}

/// How hybrid search fuses the signals.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FusionArg {
    /// 0.5 / 0.5 of min-max normalised scores (the library's default).
    Convex,
    /// Reciprocal rank fusion, k = 60.
    Rrf,
}

/// What each hit brings along.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ExpandArg {
    /// The hit alone.
    None,
    /// The chunks just before and after it in its section.
    Neighbors,
    /// Its whole section, once, trimmed around the hits to fit.
    Section,
}

/// Results when a budget is given and -k is not: the budget decides.
const BUDGET_RESULTS: usize = 50;

#[derive(clap::Args, Debug)]
pub struct SearchFlags {
    /// The permission labels the caller holds (comma-separated). Without it, only documents
    /// that need no label are searched.
    #[arg(long = "as", value_name = "LABEL[,LABEL]")]
    pub access: Option<String>,
    /// Only chunks whose field KEY equals VALUE (or one of a,b,c; for a list field such as
    /// tags, one of its elements). Also KEY!=V, KEY>=V, KEY>V, KEY<=V, KEY<V. Repeatable: all
    /// must hold. Keys: front-matter fields, tags, path, title.
    #[arg(long = "filter", value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// Only chunks of files matching this glob (`docs/**/*.md`; `*` stays in one folder).
    /// Repeatable: any may match.
    #[arg(long = "path", value_name = "GLOB")]
    pub paths: Vec<String>,
    /// Keep hits whose texts overlap heavily (they are collapsed to the best-ranked one).
    #[arg(long)]
    pub no_dedup: bool,
    /// What each hit brings along from its document.
    #[arg(long, value_enum, default_value_t = ExpandArg::None)]
    pub expand: ExpandArg,
    /// Return results in rank order until this many model tokens are handed back (never
    /// more), instead of a fixed number.
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<usize>,
    /// Which signals to search.
    #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
    pub mode: ModeArg,
    /// How hybrid mode fuses the vector and BM25 rankings.
    #[arg(long, value_enum, default_value_t = FusionArg::Convex)]
    pub fusion: FusionArg,
    /// Brute-force search over every vector instead of the graph.
    #[arg(long)]
    pub exact: bool,
}

impl SearchFlags {
    /// The number of results for an explicit `-k`, or the default: `default` without a
    /// budget, as many as the budget takes with one.
    pub fn results(&self, k: Option<usize>, default: usize) -> usize {
        k.unwrap_or(match self.budget {
            Some(_) => BUDGET_RESULTS,
            None => default,
        })
    }

    /// The request these flags ask for, for `k` results of `query`.
    pub fn request(&self, query: &str, k: usize) -> Result<SearchRequest> {
        let mode = match self.mode {
            ModeArg::Hybrid => SearchMode::Hybrid,
            ModeArg::Dense => SearchMode::Dense,
            ModeArg::Lexical => SearchMode::Lexical,
        };
        let fusion = match self.fusion {
            FusionArg::Rrf => Fusion::RRF,
            FusionArg::Convex => Fusion::CONVEX,
        };
        let expand = match self.expand {
            ExpandArg::None => Expand::None,
            ExpandArg::Neighbors => Expand::Neighbors,
            ExpandArg::Section => Expand::Section,
        };
        let access = match &self.access {
            Some(list) => Access::parse_list(list).context("--as")?,
            None => Access::public(),
        };
        let mut request = SearchRequest::new(query, access)
            .k(k)
            .mode(mode)
            .fusion(fusion)
            .exact(self.exact)
            .dedup(!self.no_dedup)
            .expand(expand);
        for filter in &self.filters {
            let condition: Condition = filter.parse().context("--filter")?;
            request = request.filter(condition);
        }
        for glob in &self.paths {
            request = request.path(PathGlob::new(glob).context("--path")?);
        }
        if let Some(budget) = self.budget {
            request = request.budget(budget);
        }
        Ok(request)
    }
}
