//! [`LexicalIndex`]: opening, reloading and searching the index.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, Term};

use crate::analyzer::{ANALYZER_NAME, analyze, analyzer};
use crate::collect::{ChunkIds, Scan, for_each_doc, top_k};
use crate::dir::{self, State};
use crate::error::LexicalError;
use crate::reader_dir::ReaderDirectory;
use crate::schema::{self, Fields};
use crate::statistics::{Scope, ScopeCache, ScopedStatistics};

/// One search hit.
#[derive(Clone, Debug, PartialEq)]
pub struct LexicalHit {
    /// The chunk's numeric id (its point in the vector index).
    pub point: u64,
    /// The chunk's ID.
    pub chunk_id: String,
    /// Its BM25 score; only comparable with other hits of the same query.
    pub score: f32,
}

/// What readers see: one searcher and the generation of the very commit it was opened on.
#[derive(Clone)]
struct View {
    searcher: Searcher,
    generation: Option<u64>,
}

/// A BM25 index over the chunks of a rag-index. See the [crate docs](crate).
pub struct LexicalIndex {
    pub(crate) dir: PathBuf,
    pub(crate) index: Index,
    pub(crate) fields: Fields,
    reader: IndexReader,
    view: RwLock<View>,
    /// `None` when read-only. Inside, `None` after a writer had to be dropped (a failed
    /// rollback); the next [`LexicalIndex::writer`] opens a new one.
    pub(crate) writer: Option<Mutex<Option<IndexWriter>>>,
    /// What each scope searched so far holds of each segment.
    scopes: ScopeCache,
}

/// Runs `f`, turning a tantivy panic (which a damaged file can cause) into an error.
pub(crate) fn guarded<T>(
    dir: &Path,
    what: &str,
    f: impl FnOnce() -> Result<T, LexicalError>,
) -> Result<T, LexicalError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(LexicalError::Corrupt {
            path: dir.into(),
            detail: format!("{what}: {message}"),
        })
    })
}

impl LexicalIndex {
    /// Opens the index in `dir` for writing, creating it (and `dir`) if there is none, and takes
    /// the writer lock for as long as the value lives. For the one writer process.
    ///
    /// Fails with [`LexicalError::NotOurs`] if `dir` has content but neither an index nor our
    /// marker, [`LexicalError::Busy`] if another writer holds the lock, and
    /// [`LexicalError::Corrupt`] if the index is damaged or of another format (then rebuild it
    /// with [`LexicalIndex::create_fresh`]).
    pub fn open_or_create(dir: &Path) -> Result<LexicalIndex, LexicalError> {
        let index = match dir::inspect(dir)? {
            State::Index => open_existing(dir)?,
            State::Vacant => {
                dir::claim(dir)?;
                let (schema, _) = schema::schema();
                guarded(dir, "creating the index", || {
                    Index::create_in_dir(dir, schema).map_err(|e| LexicalError::tantivy(dir, e))
                })?
            }
        };
        Self::finish_open(dir, index, true)
    }

    /// Opens the index in `dir` to search it, without the writer lock, so any number of processes
    /// may do so while one writes. It sees the last commit at opening time and then at each
    /// [`LexicalIndex::reload`]. (Opening briefly takes tantivy's own meta lock file, which keeps
    /// the writer's garbage collection from deleting files a reader is about to open, where the
    /// directory can be written: a read-only one is searched too.)
    pub fn open_read_only(dir: &Path) -> Result<LexicalIndex, LexicalError> {
        if !dir.join(dir::META).exists() {
            return Err(LexicalError::NotFound { path: dir.into() });
        }
        let index = open_existing_to_read(dir)?;
        Self::finish_open(dir, index, false)
    }

    /// Deletes the index in `dir`, if any, and creates an empty one: for an index that cannot be
    /// opened ([`LexicalError::Corrupt`]). Refuses ([`LexicalError::NotOurs`]) unless `dir` is
    /// missing, empty or was created by this crate. Only the writer process may call it. To
    /// rebuild a healthy index, prefer [`LexicalWriter::clear`](crate::LexicalWriter::clear): the
    /// old index stays searchable until the rebuild commits.
    pub fn create_fresh(dir: &Path) -> Result<LexicalIndex, LexicalError> {
        dir::remove(dir)?;
        Self::open_or_create(dir)
    }

    fn finish_open(dir: &Path, index: Index, writable: bool) -> Result<LexicalIndex, LexicalError> {
        let Some(fields) = schema::check(&index.schema()) else {
            return Err(LexicalError::Corrupt {
                path: dir.into(),
                detail: "the index has another schema".into(),
            });
        };
        index.tokenizers().register(ANALYZER_NAME, analyzer());
        let writer = if writable {
            let writer = crate::writer::new_writer(dir, &index)?;
            Some(Mutex::new(Some(writer)))
        } else {
            None
        };
        let reader = guarded(dir, "opening the index", || {
            index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()
                .map_err(|e| LexicalError::opening(dir, e))
        })?;
        let view = RwLock::new(View {
            searcher: reader.searcher(),
            generation: None,
        });
        let lexical = LexicalIndex {
            dir: dir.into(),
            index,
            fields,
            reader,
            view,
            writer,
            scopes: ScopeCache::default(),
        };
        lexical.reload()?;
        Ok(lexical)
    }

    /// The directory of the index.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves this handle to the last commit (made by this or another process). Returns whether
    /// the generation changed.
    pub fn reload(&self) -> Result<bool, LexicalError> {
        let dir = &self.dir;
        // The searcher and the payload come from two reads of meta.json; a commit or a merge in
        // between would pair them wrongly, so retry until both saw the same segments.
        for _ in 0..50 {
            let view = guarded(dir, "reloading the index", || {
                let metas = self
                    .index
                    .load_metas()
                    .map_err(|e| LexicalError::opening(dir, e))?;
                self.reader
                    .reload()
                    .map_err(|e| LexicalError::opening(dir, e))?;
                let searcher = self.reader.searcher();
                let same = metas.segments.len() == searcher.generation().segments().len()
                    && metas.segments.iter().all(|meta| {
                        searcher.generation().segments().get(&meta.id())
                            == Some(&meta.delete_opstamp())
                    });
                let generation = dir::parse_payload(dir, metas.payload.as_deref())?;
                Ok(same.then_some(View {
                    searcher,
                    generation,
                }))
            })?;
            if let Some(view) = view {
                let mut current = self.view.write().unwrap_or_else(|p| p.into_inner());
                let changed = current.generation != view.generation;
                *current = view;
                return Ok(changed);
            }
            std::thread::yield_now();
        }
        Err(LexicalError::Busy { path: dir.clone() })
    }

    fn view(&self) -> View {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The generation given to the commit this handle sees, `None` if it was never committed.
    pub fn generation(&self) -> Option<u64> {
        self.view().generation
    }

    /// The number of (live) documents, one per chunk.
    pub fn num_docs(&self) -> u64 {
        self.view().searcher.num_docs()
    }

    /// The number of segments this handle sees (merges keep it bounded).
    pub fn num_segments(&self) -> usize {
        self.view().searcher.segment_readers().len()
    }

    /// The best `k` chunks for `query`, best first, among those whose point `allow` accepts (all
    /// if `None`). The query is analyzed like the documents and its terms are OR-ed and scored
    /// by BM25 over the text and the path; it has no syntax, so any user text is a valid query.
    /// The filter runs inside the scan: k allowed hits come back whenever k allowed matches exist.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        allow: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Result<Vec<LexicalHit>, LexicalError> {
        self.search_within(query, k, allow, None)
    }

    /// As [`search`](Self::search), with BM25's statistics counted over the documents in
    /// `scope` (the index's if `None`): a caller who may see only those gets scores, and an
    /// order, that no document outside them affects. `allow` should accept no point `scope`
    /// refuses. The first search of a scope takes a pass over the index's points (about 100 ms
    /// at a million chunks), kept for later searches of the same scope. A scoped search scores
    /// every match, without block-WAND's skips, so that which hits it finds, and each score to
    /// the last bit, depend on nothing outside the scope: about twice the time of an unscoped
    /// one (`benches/lexical.rs`).
    pub fn search_within(
        &self,
        query: &str,
        k: usize,
        allow: Option<&(dyn Fn(u64) -> bool + Sync)>,
        scope: Option<Scope<'_>>,
    ) -> Result<Vec<LexicalHit>, LexicalError> {
        let terms: BTreeSet<String> = analyze(query).into_iter().collect();
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let fields = [self.fields.text, self.fields.path];
        let terms: Vec<Term> = terms
            .iter()
            .flat_map(|term| fields.map(|field| Term::from_field_text(field, term)))
            .collect();
        // One query per term, in a fixed order: OR-ed for the scan, and one by one to score each
        // hit the same way whatever the documents around it (see `collect`).
        let term_queries: Vec<TermQuery> = terms
            .iter()
            .map(|term| TermQuery::new(term.clone(), IndexRecordOption::WithFreqs))
            .collect();
        let clauses: Vec<(Occur, Box<dyn Query>)> = term_queries
            .iter()
            .map(|term| -> (Occur, Box<dyn Query>) { (Occur::Should, Box::new(term.clone())) })
            .collect();
        let query = BooleanQuery::new(clauses);
        let searcher = self.view().searcher;
        let dir = &self.dir;
        guarded(dir, "searching", || {
            let tantivy = |e| LexicalError::tantivy(dir, e);
            let scoped = match scope {
                Some(scope) => Some(
                    ScopedStatistics::count(&searcher, &self.scopes, &fields, &terms, scope)
                        .map_err(tantivy)?,
                ),
                None => None,
            };
            if scoped.as_ref().is_some_and(ScopedStatistics::is_empty) {
                return Ok(Vec::new());
            }
            let scoring = match &scoped {
                Some(stats) => EnableScoring::enabled_from_statistics_provider(stats, &searcher),
                None => EnableScoring::enabled_from_searcher(&searcher),
            };
            let weight = query.weight(scoring).map_err(tantivy)?;
            let term_weights = term_queries
                .iter()
                .map(|term| term.weight(scoring))
                .collect::<tantivy::Result<Vec<_>>>()
                .map_err(tantivy)?;
            // Block-WAND skips by per-block best scores fixed when each segment was written,
            // with that segment's statistics: under a scope's they are guesses, whose misses
            // depend on where hidden documents sit. So a scoped search scans every match.
            let scan = if scoped.is_some() {
                Scan::Every
            } else {
                Scan::Pruning
            };
            let best = top_k(&searcher, weight.as_ref(), &term_weights, k, allow, scan)
                .map_err(tantivy)?;
            best.into_iter()
                .map(|c| {
                    let reader = searcher.segment_reader(c.segment);
                    let id = ChunkIds::new(reader)
                        .map_err(tantivy)?
                        .get(c.doc)
                        .map_err(|e| LexicalError::io(dir, e))?;
                    let chunk_id = id.ok_or_else(|| LexicalError::Corrupt {
                        path: dir.clone(),
                        detail: format!("point {} has no chunk ID", c.point),
                    })?;
                    Ok(LexicalHit {
                        point: c.point,
                        chunk_id,
                        score: c.score,
                    })
                })
                .collect()
        })
    }

    /// Every indexed chunk as `(chunk_id, point)`, in index order: to compare with the store's
    /// live chunks (verify, reconcile).
    pub fn chunk_ids(&self) -> Result<Vec<(String, u64)>, LexicalError> {
        let searcher = self.view().searcher;
        let dir = &self.dir;
        guarded(dir, "listing chunk IDs", || {
            let mut out = Vec::with_capacity(searcher.num_docs() as usize);
            for_each_doc(&searcher, |id, point| out.push((id, point)))
                .map_err(|e| LexicalError::tantivy(dir, e))?;
            Ok(out)
        })
    }

    /// The point of the live document of `chunk_id`, if it is indexed: a cheap look-up of one
    /// term, for sampling checks.
    pub fn point_of(&self, chunk_id: &str) -> Result<Option<u64>, LexicalError> {
        let searcher = self.view().searcher;
        let dir = &self.dir;
        let term = Term::from_field_text(self.fields.chunk_id, chunk_id);
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        guarded(dir, "looking up a chunk ID", || {
            let tantivy = |e| LexicalError::tantivy(dir, e);
            let weight = query
                .weight(EnableScoring::disabled_from_searcher(&searcher))
                .map_err(tantivy)?;
            let mut found = None;
            for reader in searcher.segment_readers() {
                let points = reader.fast_fields().u64(schema::POINT).map_err(tantivy)?;
                let alive = reader.alive_bitset();
                weight
                    .for_each_no_score(reader, &mut |docs| {
                        for &doc in docs {
                            if !alive.is_some_and(|a| a.is_deleted(doc)) {
                                found = found.or(points.first(doc));
                            }
                        }
                    })
                    .map_err(tantivy)?;
            }
            Ok(found)
        })
    }

    /// The terms `text` is indexed (and queried) as, to see why something does or does not match.
    pub fn analyze(text: &str) -> Vec<String> {
        analyze(text)
    }

    /// After this handle's writer committed: show the commit to this handle's searches.
    pub(crate) fn after_commit(&self) -> Result<(), LexicalError> {
        self.reload().map(|_| ())
    }
}

/// Opens the tantivy index in `dir`, which has a `meta.json`, for its writer.
fn open_existing(dir: &Path) -> Result<Index, LexicalError> {
    guarded(dir, "opening the index", || {
        Index::open_in_dir(dir).map_err(|e| LexicalError::opening(dir, e))
    })
}

/// Opens it for a reader, who may have no right to write in `dir` (see [`ReaderDirectory`]).
fn open_existing_to_read(dir: &Path) -> Result<Index, LexicalError> {
    guarded(dir, "opening the index", || {
        ReaderDirectory::open(dir)
            .and_then(Index::open)
            .map_err(|e| LexicalError::opening(dir, e))
    })
}
