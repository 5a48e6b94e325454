//! BM25 statistics counted over the documents one caller may see.
//!
//! tantivy scores with index-wide statistics: the number of documents, their mean length and
//! each term's document frequency. A document hidden from a caller still moves those numbers, so
//! the scores and the order of the documents the caller does see would tell it whether hidden
//! documents contain a word it searched for. Counted over the caller's scope instead, nothing a
//! caller is shown depends on a document outside it. Deleted documents not yet merged away are
//! left out too, which tantivy's own statistics do not do.
//!
//! Which documents of a segment are in a scope, and their token counts, take a pass over the
//! segment (~100 ms at a million documents); they are kept per segment version and scope key,
//! so a search pays only for its terms' postings once a scope has been seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tantivy::index::SegmentId;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocSet, Opstamp, Searcher, SegmentReader, TERMINATED, Term};

use crate::schema::POINT;

/// The documents one caller may see: a key naming that set and the test of a point.
///
/// The key must name the same set for as long as the [`LexicalIndex`](crate::LexicalIndex)
/// handle lives (include whatever version of the permissions the test reads), since what a
/// scope holds of a segment is kept under it.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    key: &'a str,
    contains: &'a (dyn Fn(u64) -> bool + Sync),
}

impl<'a> Scope<'a> {
    /// A scope named `key` holding the points `contains` accepts.
    pub fn new(key: &'a str, contains: &'a (dyn Fn(u64) -> bool + Sync)) -> Scope<'a> {
        Scope { key, contains }
    }
}

/// Scope facts kept per (scope key, segment, its deletes); cleared whole past this many. Each
/// holds a bit per document of its segment: at most ~32 MB in all at a million documents.
const MAX_KEPT: usize = 256;

type SegmentKey = (String, SegmentId, Option<Opstamp>);

/// What a scope holds of one segment version.
struct SegmentScope {
    docs: BitSet,
    num_docs: u64,
    /// Tokens of the scoped documents, per field in the order the search gave them.
    num_tokens: Vec<u64>,
}

/// Scope facts of the segments searched so far.
#[derive(Default)]
pub(crate) struct ScopeCache {
    kept: Mutex<HashMap<SegmentKey, Arc<SegmentScope>>>,
}

impl ScopeCache {
    fn segment(
        &self,
        reader: &SegmentReader,
        fields: &[Field],
        scope: Scope<'_>,
    ) -> tantivy::Result<Arc<SegmentScope>> {
        let key = (
            scope.key.to_string(),
            reader.segment_id(),
            reader.delete_opstamp(),
        );
        if let Some(found) = self.kept.lock().expect("scope cache lock").get(&key) {
            return Ok(found.clone());
        }
        let points = reader.fast_fields().u64(POINT)?;
        let alive = reader.alive_bitset();
        let norms = fields
            .iter()
            .map(|field| reader.get_fieldnorms_reader(*field))
            .collect::<tantivy::Result<Vec<_>>>()?;
        let mut docs = BitSet::with_max_value(reader.max_doc());
        let mut num_docs = 0;
        let mut num_tokens = vec![0u64; fields.len()];
        for doc in 0..reader.max_doc() {
            if alive.is_some_and(|a| a.is_deleted(doc))
                || !points.first(doc).is_some_and(scope.contains)
            {
                continue;
            }
            docs.insert(doc);
            num_docs += 1;
            for (tokens, norms) in num_tokens.iter_mut().zip(&norms) {
                *tokens += u64::from(norms.fieldnorm(doc));
            }
        }
        let found = Arc::new(SegmentScope {
            docs,
            num_docs,
            num_tokens,
        });
        let mut kept = self.kept.lock().expect("scope cache lock");
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(key, found.clone());
        Ok(found)
    }
}

/// The statistics of the scoped documents, for the terms of one query.
pub(crate) struct ScopedStatistics {
    num_docs: u64,
    num_tokens: HashMap<Field, u64>,
    doc_freqs: HashMap<Term, u64>,
}

impl ScopedStatistics {
    /// Counts the live documents in `scope`, the tokens of `fields` in them, and how many of
    /// them hold each of `terms`.
    pub fn count(
        searcher: &Searcher,
        cache: &ScopeCache,
        fields: &[Field],
        terms: &[Term],
        scope: Scope<'_>,
    ) -> tantivy::Result<ScopedStatistics> {
        let mut stats = ScopedStatistics {
            num_docs: 0,
            num_tokens: fields.iter().map(|f| (*f, 0)).collect(),
            doc_freqs: terms.iter().map(|t| (t.clone(), 0)).collect(),
        };
        for reader in searcher.segment_readers() {
            let segment = cache.segment(reader, fields, scope)?;
            stats.num_docs += segment.num_docs;
            for (field, tokens) in fields.iter().zip(&segment.num_tokens) {
                *stats.num_tokens.entry(*field).or_default() += tokens;
            }
            for term in terms {
                let inverted = reader.inverted_index(term.field())?;
                let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut found = 0;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    found += u64::from(segment.docs.contains(doc));
                    doc = postings.advance();
                }
                *stats.doc_freqs.entry(term.clone()).or_default() += found;
            }
        }
        Ok(stats)
    }

    /// Whether the scope holds no live document (BM25's mean length is then undefined).
    pub fn is_empty(&self) -> bool {
        self.num_docs == 0
    }
}

impl Bm25StatisticsProvider for ScopedStatistics {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.num_tokens.get(&field).copied().unwrap_or(0))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.num_docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.doc_freqs.get(term).copied().unwrap_or(0))
    }
}
