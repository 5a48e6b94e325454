//! The flags every searching command shares (`query`, `eval`), turned into a core
//! [`SearchRequest`].

use rag_index_core::{Fusion, SearchMode, SearchRequest};

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

#[derive(clap::Args, Debug)]
pub struct SearchFlags {
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
    /// The request these flags ask for, for `k` hits of `query`.
    pub fn request(&self, query: &str, k: usize) -> SearchRequest {
        let mode = match self.mode {
            ModeArg::Hybrid => SearchMode::Hybrid,
            ModeArg::Dense => SearchMode::Dense,
            ModeArg::Lexical => SearchMode::Lexical,
        };
        let fusion = match self.fusion {
            FusionArg::Rrf => Fusion::RRF,
            FusionArg::Convex => Fusion::CONVEX,
        };
        SearchRequest::new(query)
            .k(k)
            .mode(mode)
            .fusion(fusion)
            .exact(self.exact)
    }
}
