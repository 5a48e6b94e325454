//! Top-k collection with the caller's filter applied inside the scan, plus the per-document
//! reads (point, chunk ID) that hits and verification need.
//!
//! This does not go through tantivy's `Collector` trait: its segment collectors must be
//! `'static`, so they cannot borrow the caller's `allow` closure. Instead it drives the query's
//! [`Weight`] over each segment itself, as tantivy's own top-docs collector does, and keeps one
//! heap across segments so block-WAND pruning uses the k-th best *allowed* score found so far.
//! A document that is not allowed never enters the heap, so k allowed hits come back whenever k
//! allowed matching documents exist, however rare.
//!
//! Scores are recomputed for the documents that may enter the heap, each term's BM25 score added
//! in a fixed order: tantivy's own sums follow the posting lists, so their last bits would tell
//! a caller about documents hidden from it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use tantivy::columnar::StrColumn;
use tantivy::query::{Scorer, Weight};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader};

use crate::schema::{CHUNK_ID, POINT};

/// A candidate hit: its score, where it is, and its point.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    pub score: Score,
    pub segment: u32,
    pub doc: DocId,
    pub point: u64,
}

impl Candidate {
    /// Better is a higher score, then a lower point: a deterministic order among the hits kept.
    /// (Which of several docs tied at the k-th score are kept depends on segment order, as
    /// pruning admits only scores above the threshold.)
    fn better(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.point.cmp(&self.point))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.better(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.better(other)
    }
}

/// How [`top_k`] walks the matching documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Block-WAND: skips blocks of postings whose best score cannot enter the top k. Their
    /// best scores were chosen when each segment was written, with that segment's statistics,
    /// so under other statistics a skip is a close guess, not a bound.
    Pruning,
    /// Every matching document. For scoped statistics, where a guess would depend on how the
    /// hidden documents fill the posting blocks.
    Every,
}

/// The best `k` live, allowed documents matching `query`, best first.
///
/// `terms` holds one weight per term clause of `query`, in a fixed order: each hit's score is
/// their sum in that order. `query`'s own scores add the terms in an order that depends on
/// where each posting list stands, so on the documents around a hit, hidden ones included; they
/// are used only to pass over documents that cannot come close to the top k.
pub(crate) fn top_k(
    searcher: &Searcher,
    query: &dyn Weight,
    terms: &[Box<dyn Weight>],
    k: usize,
    allow: Option<&(dyn Fn(u64) -> bool + Sync)>,
    scan: Scan,
) -> tantivy::Result<Vec<Candidate>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    // A min-heap of the best k so far: its top is the worst kept, whose score is the threshold.
    let mut heap: BinaryHeap<Reverse<Candidate>> = BinaryHeap::with_capacity(k + 1);
    for (segment, reader) in searcher.segment_readers().iter().enumerate() {
        let points = reader.fast_fields().u64(POINT)?;
        let alive = reader.alive_bitset();
        let mut scores = TermScores::new(terms, reader)?;
        let mut failed = None;
        let start = threshold_of(&heap, k);
        let mut threshold = start;
        let mut consider = |doc: DocId, rough: Score| {
            if rough <= threshold || alive.is_some_and(|alive| alive.is_deleted(doc)) {
                return threshold;
            }
            let Some(point) = points.first(doc) else {
                return threshold;
            };
            if allow.is_some_and(|allow| !allow(point)) {
                return threshold;
            }
            let score = match scores.score(doc) {
                Ok(score) => score,
                Err(error) => {
                    failed.get_or_insert(error);
                    return threshold;
                }
            };
            heap.push(Reverse(Candidate {
                score,
                segment: segment as u32,
                doc,
                point,
            }));
            if heap.len() > k {
                heap.pop();
            }
            threshold = threshold_of(&heap, k);
            threshold
        };
        match scan {
            Scan::Pruning => query.for_each_pruning(start, reader, &mut consider)?,
            Scan::Every => query.for_each(reader, &mut |doc, rough| {
                consider(doc, rough);
            })?,
        }
        if let Some(error) = failed {
            return Err(error);
        }
    }
    let mut best: Vec<Candidate> = heap.into_iter().map(|Reverse(c)| c).collect();
    best.sort_by(|a, b| b.better(a));
    Ok(best)
}

/// Each document's score as the sum of its terms' BM25 scores in the order of the clauses,
/// so that it depends on nothing but the document and the statistics.
struct TermScores<'a> {
    terms: &'a [Box<dyn Weight>],
    reader: &'a SegmentReader,
    scorers: Vec<Box<dyn Scorer>>,
    /// The last document scored: scorers only move forward.
    last: Option<DocId>,
}

impl<'a> TermScores<'a> {
    fn new(terms: &'a [Box<dyn Weight>], reader: &'a SegmentReader) -> tantivy::Result<Self> {
        Ok(TermScores {
            terms,
            reader,
            scorers: Self::scorers(terms, reader)?,
            last: None,
        })
    }

    fn scorers(
        terms: &[Box<dyn Weight>],
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<Box<dyn Scorer>>> {
        terms.iter().map(|term| term.scorer(reader, 1.0)).collect()
    }

    fn score(&mut self, doc: DocId) -> tantivy::Result<Score> {
        // Scans hand documents over in increasing order; should one not, start the lists again.
        if self.last.is_some_and(|last| doc < last) {
            self.scorers = Self::scorers(self.terms, self.reader)?;
        }
        self.last = Some(doc);
        let mut sum = 0f64;
        for scorer in &mut self.scorers {
            if scorer.doc() < doc {
                scorer.seek(doc);
            }
            if scorer.doc() == doc {
                sum += f64::from(scorer.score());
            }
        }
        Ok(sum as Score)
    }
}

/// Documents whose rough score is at or below this cannot enter a full heap. It is the k-th
/// best exact score less a margin far wider than the rounding that separates a rough score
/// from an exact one, so no document that could tie or beat it is passed over.
fn threshold_of(heap: &BinaryHeap<Reverse<Candidate>>, k: usize) -> Score {
    match heap.peek() {
        Some(Reverse(worst)) if heap.len() >= k => worst.score - worst.score.abs() * 1e-3,
        _ => Score::MIN,
    }
}

/// Reads the chunk ID of documents of one segment.
pub(crate) struct ChunkIds {
    column: Option<StrColumn>,
    buffer: String,
}

impl ChunkIds {
    pub(crate) fn new(reader: &SegmentReader) -> tantivy::Result<Self> {
        Ok(ChunkIds {
            column: reader.fast_fields().str(CHUNK_ID)?,
            buffer: String::new(),
        })
    }

    /// The chunk ID of `doc`, or `None` if the segment has none for it (only in a damaged index).
    pub(crate) fn get(&mut self, doc: DocId) -> std::io::Result<Option<String>> {
        let Some(column) = &self.column else {
            return Ok(None);
        };
        let Some(ord) = column.ords().first(doc) else {
            return Ok(None);
        };
        Ok(column
            .ord_to_str(ord, &mut self.buffer)?
            .then(|| self.buffer.clone()))
    }
}

/// Calls `each(chunk_id, point)` for every live document of the searcher.
pub(crate) fn for_each_doc(
    searcher: &Searcher,
    mut each: impl FnMut(String, u64),
) -> tantivy::Result<()> {
    for reader in searcher.segment_readers() {
        let points = reader.fast_fields().u64(POINT)?;
        let mut ids = ChunkIds::new(reader)?;
        let alive = reader.alive_bitset();
        for doc in 0..reader.max_doc() {
            if alive.is_some_and(|alive| alive.is_deleted(doc)) {
                continue;
            }
            if let (Some(id), Some(point)) = (ids.get(doc)?, points.first(doc)) {
                each(id, point);
            }
        }
    }
    Ok(())
}
