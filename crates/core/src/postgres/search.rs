//! The query pipeline's retrieval step in SQL: both signals, labels and filters inside the
//! queries, all in one read transaction; fusion, dedup and expansion are the shared ones.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use rag_pg::{PgChunk, PgCondition, PgFilter, PgOp, PgStore, PgView};

use super::{PgChunks, indexed_chunk, meta_from, spans_several};
use crate::access::required_labels;
use crate::chunk::{Hit, IndexedChunk, SignalRank, Signals};
use crate::filter::{Filter, Op};
use crate::fusion::fuse;
use crate::points::{VisibleKeys, check_filter_keys};
use crate::request::{SearchMode, SearchRequest};
use crate::search::{hybrid_depth, single, wanted};
use crate::{Error, RagIndex, Result, dedup, expand};

impl RagIndex {
    /// [`search_with`](RagIndex::search_with) on a PostgreSQL collection.
    pub(crate) fn search_pg(&self, store: &PgStore, request: &SearchRequest) -> Result<Vec<Hit>> {
        let filter = pg_filter(request);
        let wanted = wanted(request);
        let vector = match request.mode {
            SearchMode::Lexical => None,
            _ => Some(self.embedder.embed_query(&request.query)?),
        };
        let named = spans_several(store);
        store.read(|view| {
            // Every collection searched must have been embedded by this model.
            let mut synced = 0;
            for (name, meta) in view.metas()? {
                let Some(meta) = meta_from(meta, &self.dir)? else {
                    continue;
                };
                synced += 1;
                let current = self.embedder.fingerprint().id();
                if vector.is_some() && meta.model_fingerprint != current {
                    return Err(Error::ConfigChanged {
                        path: PathBuf::from(format!("{} (collection {name})", self.dir.display())),
                        what: "embedding model",
                        stored: meta.model_fingerprint,
                        current,
                    });
                }
            }
            if synced == 0 {
                return Ok(Vec::new());
            }
            check_filter_keys(
                &request.filter,
                &mut ViewKeys {
                    view: &mut *view,
                    all_keys: None,
                    held_labels: &filter.held_labels,
                },
            )?;
            let mut found = Candidates {
                named,
                ..Candidates::default()
            };
            let depth = match request.mode {
                SearchMode::Hybrid => hybrid_depth(request, wanted),
                _ => wanted,
            };
            let dense = match &vector {
                Some(v) => found.add(view.dense(v, depth, &filter, request.exact)?),
                None => Vec::new(),
            };
            let lexical = match request.mode {
                SearchMode::Dense => Vec::new(),
                _ => found.add(view.lexical(&request.query, depth, &filter)?),
            };
            let mut ranked = match request.mode {
                SearchMode::Dense => single(&dense, |rank| dense_only(Some(rank))),
                SearchMode::Lexical => single(&lexical, |rank| Signals {
                    dense: None,
                    lexical: Some(rank),
                }),
                SearchMode::Hybrid => fuse(&dense, &lexical, request.fusion),
            };
            ranked.truncate(wanted);
            let mut hits = Vec::new();
            for (local, score, signals) in ranked {
                let chunk = found.chunks[local as usize].clone();
                // The SQL applied both already; checked again here, as on the embedded path.
                if !request.access.may_see(&required_labels(&chunk.metadata))
                    || !request
                        .filter
                        .matches(&chunk.path, &chunk.title, &chunk.metadata)
                {
                    continue;
                }
                let mut hit = Hit::new(score, chunk, Some(signals));
                hit.rank = hits.len() + 1;
                hits.push(hit);
            }
            if request.dedup {
                hits = dedup::collapse(hits);
            }
            expand::assemble(
                &mut PgChunks { view, named },
                hits,
                request.expand,
                request.k,
                request.budget,
                &request.access,
            )
        })
    }

    /// A dense search with a vector already made, on a PostgreSQL collection.
    pub(crate) fn search_vector_pg(
        &self,
        store: &PgStore,
        vector: &[f32],
        access: &crate::Access,
        k: usize,
        exact: bool,
    ) -> Result<Vec<Hit>> {
        let filter = PgFilter {
            held_labels: access.held().map(str::to_string).collect(),
            ..PgFilter::default()
        };
        let named = spans_several(store);
        store.read(|view: &mut PgView<'_, '_>| {
            let rows = view.dense(vector, k, &filter, exact)?;
            Ok::<_, Error>(
                rows.into_iter()
                    .filter(|(c, _)| access.may_see(&c.labels))
                    .enumerate()
                    .map(|(i, (chunk, score))| {
                        let mut hit = Hit::new(
                            score,
                            indexed_chunk(chunk, named),
                            Some(dense_only(Some(SignalRank { rank: i + 1, score }))),
                        );
                        hit.rank = i + 1;
                        hit
                    })
                    .collect(),
            )
        })
    }
}

fn dense_only(rank: Option<SignalRank>) -> Signals {
    Signals {
        dense: rank,
        lexical: None,
    }
}

/// The chunks both signals returned, each once, under a request-local number (what fusion
/// ranks by).
#[derive(Default)]
struct Candidates {
    chunks: Vec<IndexedChunk>,
    // By collection and chunk ID: an ID is unique within one collection only.
    by_id: HashMap<(String, String), u64>,
    named: bool,
}

impl Candidates {
    fn add(&mut self, rows: Vec<(PgChunk, f32)>) -> Vec<(u64, f32)> {
        rows.into_iter()
            .map(|(chunk, score)| {
                let key = (chunk.collection.clone(), chunk.id.clone());
                let local = match self.by_id.get(&key) {
                    Some(&local) => local,
                    None => {
                        let local = self.chunks.len() as u64;
                        self.by_id.insert(key, local);
                        self.chunks.push(indexed_chunk(chunk, self.named));
                        local
                    }
                };
                (local, score)
            })
            .collect()
    }
}

/// The request's labels and filter as SQL conditions.
fn pg_filter(request: &SearchRequest) -> PgFilter {
    let filter: &Filter = &request.filter;
    PgFilter {
        held_labels: request.access.held().map(str::to_string).collect(),
        conditions: filter
            .conditions
            .iter()
            .map(|c| PgCondition {
                key: c.key().to_string(),
                op: match c.op() {
                    Op::Eq => PgOp::Eq,
                    Op::Ne => PgOp::Ne,
                    Op::Ge => PgOp::Ge,
                    Op::Gt => PgOp::Gt,
                    Op::Le => PgOp::Le,
                    Op::Lt => PgOp::Lt,
                },
                values: c.values().to_vec(),
            })
            .collect(),
        path_patterns: filter.paths.iter().map(|g| g.posix_regex()).collect(),
    }
}

/// The metadata keys of the collections read that one caller may see. The collections list
/// every key their chunks ever had, read once and only when a filter names a key (a search
/// without one reads nothing here); whether a visible chunk has a key is asked only for the
/// keys a filter names (stopping at the first such chunk), and the full list only for an error.
struct ViewKeys<'v, 'a, 't> {
    view: &'v mut PgView<'a, 't>,
    all_keys: Option<BTreeSet<String>>,
    held_labels: &'v [String],
}

impl VisibleKeys for ViewKeys<'_, '_, '_> {
    fn has(&mut self, key: &str) -> Result<bool> {
        let all_keys = match &mut self.all_keys {
            Some(keys) => keys,
            empty => empty.insert(self.view.metadata_keys()?.into_iter().collect()),
        };
        if !all_keys.contains(key) {
            return Ok(false);
        }
        Ok(self.view.has_visible_metadata_key(key, self.held_labels)?)
    }

    fn list(&mut self) -> Result<Vec<String>> {
        Ok(self.view.visible_metadata_keys(self.held_labels)?)
    }
}
