//! The search pipeline: candidates from each signal with labels and filters applied inside the
//! signal, fusion, near-duplicate collapse, then expansion and the token budget.
//!
//! Dense retrieval finds paraphrases but misses exact identifiers (`maxConcurrentStreams`, a
//! flag, an error code), which BM25 finds at once; hybrid search asks both for a deep candidate
//! list and fuses them. Every candidate is mapped through the searcher's store snapshot, so only
//! live chunks of exactly that commit are returned, each once, and only those the caller may see.

use rag_lexical::Scope;

use crate::chunk::{Hit, SignalRank, Signals};
use crate::fusion::fuse;
use crate::lexical::LexicalView;
use crate::request::{Expand, SearchMode, SearchRequest};
use crate::source::SnapshotChunks;
use crate::{Error, RagIndex, Result, Searcher, dedup, expand};

/// Candidates each signal contributes to a hybrid search, at least: fusion can only promote a
/// chunk that one of the lists holds.
const MIN_CANDIDATES: usize = 50;
/// Candidates fetched beyond `k` when dedup, expansion or a budget may pass some over.
const SPARE_CANDIDATES: usize = 20;
/// Results a budgeted search considers at most, however large the budget.
const MAX_BUDGET_CANDIDATES: usize = 200;

/// A point filter, checked inside each signal's search.
type Allow<'a> = Option<&'a (dyn Fn(u64) -> bool + Sync)>;

/// What the signals may return, and what BM25 counts its statistics over.
#[derive(Clone, Copy)]
struct Admitted<'a> {
    /// Points a signal may return (all if `None`).
    allow: Allow<'a>,
    /// Points the caller may see, when not all: BM25's statistics come from these only.
    scope: Option<Scope<'a>>,
}

/// One signal's ranked candidates: (point, score), best first.
type Ranked = Vec<(u64, f32)>;

/// The query's embedding when it was computed ahead of the search (see `search_with`).
type QueryVector = std::result::Result<Vec<f32>, rag_embed::EmbedError>;

impl RagIndex {
    /// Runs `request` against the last commit. Lexical and hybrid searches need the lexical
    /// index at the store's generation: lexical mode fails with [`Error::LexicalUnavailable`]
    /// without it, hybrid mode falls back to dense (with a warning) so an index made before the
    /// lexical index existed stays searchable until its next sync.
    ///
    /// A chunk is returned only when the request's [`Access`](crate::Access) holds every label
    /// it requires and it meets the filter; both are checked inside the graph walk and the BM25
    /// scan, so `k` results come back whenever `k` such chunks match. Unknown filter keys are an
    /// [`Error::InvalidRequest`].
    pub fn search_with(&self, request: &SearchRequest) -> Result<Vec<Hit>> {
        request.validate()?;
        if let Some(store) = self.pg() {
            return self.search_pg(store, request);
        }
        let cold = self.searcher.read().expect("searcher lock").is_none();
        let (searcher, query_vector) = if cold && !matches!(request.mode, SearchMode::Lexical) {
            // The first search of a process reads the graph and loads the model: one does not
            // wait for the other (on 2 cores a third of a one-shot `query` at 100k chunks).
            let (searcher, vector) = rayon::join(
                || self.searcher(),
                || self.embedder.embed_query(&request.query),
            );
            (searcher?, Some(vector))
        } else {
            (self.searcher()?, None)
        };
        let points = searcher.points_for(&request.filter)?;
        if let Some(points) = points {
            points.check_keys(&request.filter, &request.access)?;
        }
        let check =
            |point: u64| points.is_none_or(|p| p.allows(point, &request.access, &request.filter));
        let allow: Allow<'_> = match points {
            Some(p) if !p.passes_all(&request.filter) => Some(&check),
            _ => None,
        };
        // BM25 counts its statistics over the chunks the caller may see when that is not all of
        // them: a hidden chunk holding a word would otherwise move the scores and the order of
        // the visible ones, and so tell the caller it exists.
        let visible = |point: u64| points.is_some_and(|p| p.visible(point, &request.access));
        // Names what `visible` accepts for as long as the lexical handle lives: the labels held
        // and the version of the labels the points carry. Only built for a restricted caller.
        let scope_key = points
            .filter(|p| !p.all_visible_to(&request.access))
            .map(|_| {
                let held = request.access.held().collect::<Vec<_>>().join("\n");
                format!("{}/{}/{held}", searcher.generation, searcher.epoch)
            });
        let scope = scope_key.as_deref().map(|key| Scope::new(key, &visible));
        let k = request.k;
        let wanted = wanted(request);
        let admitted = Admitted { allow, scope };
        let ranked = self.ranked(&searcher, request, wanted, admitted, query_vector)?;
        // The signals already applied the check; `hits` applies it again, a second lock.
        let mut hits = searcher.hits(
            ranked
                .into_iter()
                .map(|(point, score, signals)| (point, score, Some(signals))),
            &check,
        )?;
        if request.dedup {
            hits = dedup::collapse(hits);
        }
        expand::assemble(
            &mut SnapshotChunks(&searcher.snapshot),
            hits,
            request.expand,
            k,
            request.budget,
            &request.access,
        )
    }

    /// The fused (or single-signal) candidates, best first, at most `wanted` of them.
    fn ranked(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
        wanted: usize,
        admitted: Admitted<'_>,
        query_vector: Option<QueryVector>,
    ) -> Result<Vec<(u64, f32, Signals)>> {
        let allow = admitted.allow;
        // One view for the whole request, even if a retry replaces it meanwhile.
        let lexical = searcher.lexical();
        let lexical_problem = match &lexical {
            LexicalView::Ready(_) => None,
            LexicalView::Unavailable(reason) => Some(reason.clone()),
        };
        let mode = match (request.mode, lexical_problem) {
            (SearchMode::Lexical | SearchMode::Hybrid, Some(_)) if searcher.is_empty()? => {
                return Ok(Vec::new());
            }
            (SearchMode::Lexical, Some(reason)) => {
                return Err(Error::LexicalUnavailable {
                    path: self.dir.clone(),
                    reason,
                });
            }
            (SearchMode::Hybrid, Some(reason)) => {
                log::warn!("lexical index unavailable ({reason}); searching vectors only");
                SearchMode::Dense
            }
            (mode, _) => mode,
        };
        Ok(match mode {
            SearchMode::Dense => {
                let dense =
                    self.dense_candidates(searcher, request, wanted, allow, query_vector)?;
                single(&dense, |rank| Signals {
                    dense: Some(rank),
                    lexical: None,
                })
            }
            SearchMode::Lexical => {
                let lexical =
                    lexical_candidates(searcher, &lexical, &request.query, wanted, admitted)?;
                single(&lexical, |rank| Signals {
                    dense: None,
                    lexical: Some(rank),
                })
            }
            SearchMode::Hybrid => {
                // The depth follows k, not `wanted`: min-max normalisation depends on how deep
                // each list goes, and the fused order should not change with dedup or a budget.
                let depth = hybrid_depth(request, wanted);
                // BM25 needs no vector: it runs while the query is embedded.
                let (dense, lexical) = rayon::join(
                    || self.dense_candidates(searcher, request, depth, allow, query_vector),
                    || lexical_candidates(searcher, &lexical, &request.query, depth, admitted),
                );
                let (dense, lexical) = (dense?, lexical?);
                let mut fused = fuse(&dense, &lexical, request.fusion);
                fused.truncate(wanted);
                fused
            }
        })
    }

    fn dense_candidates(
        &self,
        searcher: &Searcher,
        request: &SearchRequest,
        n: usize,
        allow: Allow<'_>,
        query_vector: Option<QueryVector>,
    ) -> Result<Ranked> {
        self.check_query_model(searcher)?;
        let vector = match query_vector {
            Some(vector) => vector?,
            None => self.embedder.embed_query(&request.query)?,
        };
        Ok(if request.exact {
            searcher.vectors.search_exact(&vector, n, allow)?
        } else {
            searcher.vectors.search(&vector, n, allow)?
        })
    }
}

/// BM25 candidates that are live chunks of the searcher's snapshot, under the point the snapshot
/// gives them.
impl RagIndex {
    /// A query vector from another model (or precision) than the stored vectors' would rank
    /// nonsense: refused, as a sync would be.
    pub(crate) fn check_query_model(&self, searcher: &Searcher) -> Result<()> {
        let Some(meta) = searcher.snapshot.meta()? else {
            return Ok(());
        };
        let current = self.embedder.fingerprint().id();
        if meta.model_fingerprint != current {
            return Err(Error::ConfigChanged {
                path: self.dir.clone(),
                what: "embedding model",
                stored: meta.model_fingerprint,
                current,
            });
        }
        Ok(())
    }
}

fn lexical_candidates(
    searcher: &Searcher,
    lexical: &LexicalView,
    query: &str,
    n: usize,
    admitted: Admitted<'_>,
) -> Result<Ranked> {
    let Some(lexical) = lexical.handle() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for hit in lexical.search_within(query, n, admitted.allow, admitted.scope)? {
        let live = searcher.snapshot.chunk_id_for_point(hit.point)?;
        if live.as_deref() == Some(hit.chunk_id.as_str()) {
            out.push((hit.point, hit.score));
        } else {
            log::debug!("lexical hit {} is not live; dropped", hit.chunk_id);
        }
    }
    Ok(out)
}

/// Results to rank before dedup, expansion and the budget pick the final `k`.
pub(crate) fn wanted(request: &SearchRequest) -> usize {
    let k = request.k;
    let reshapes = request.dedup || request.expand != Expand::None || request.budget.is_some();
    match (reshapes, request.budget) {
        (_, Some(_)) => (k + SPARE_CANDIDATES).min(MAX_BUDGET_CANDIDATES.max(k)),
        (true, None) => k * 2 + SPARE_CANDIDATES,
        (false, None) => k,
    }
}

/// How deep each signal's list goes in a hybrid search.
pub(crate) fn hybrid_depth(request: &SearchRequest, wanted: usize) -> usize {
    (request.k * 4).max(MIN_CANDIDATES).max(wanted)
}

/// One list's candidates as final results, with their own scores and ranks.
pub(crate) fn single(
    list: &[(u64, f32)],
    signals: impl Fn(SignalRank) -> Signals,
) -> Vec<(u64, f32, Signals)> {
    list.iter()
        .enumerate()
        .map(|(i, &(point, score))| (point, score, signals(SignalRank { rank: i + 1, score })))
        .collect()
}
