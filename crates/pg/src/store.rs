//! [`PgStore`]: one collection in a PostgreSQL database, opened for reading or for syncing.

use std::collections::HashSet;
use std::sync::Mutex;

use pgvector::Vector;
use postgres::{Client, IsolationLevel};
use serde_json::Value;

use crate::PgError;
use crate::connect::Server;
use crate::pool::{Pool, Session, Sessions};
use crate::records::{PgCommit, PgCounts, PgFile};
use crate::schema::{drop_orphan_vector_indexes, ensure_vector_index, migrate};
use crate::view::PgView;

/// How to open a collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only: never blocks and is never blocked by a sync.
    Reader,
    /// The one writer of the collection: fails with [`PgError::Busy`] while another process
    /// syncs it, or waits for it when `wait` is set.
    Writer {
        /// Wait for the other writer instead of failing.
        wait: bool,
    },
}

/// One collection of a rag-index schema in PostgreSQL (or, for reading, several).
pub struct PgStore {
    server: Server,
    collection: String,
    // Every collection a reader searches, `collection` first; a writer's is just its own.
    collections: Vec<String>,
    writer: bool,
    sessions: Sessions,
}

pub(crate) fn query_error(action: &'static str, server: &str, source: postgres::Error) -> PgError {
    PgError::Query {
        action,
        server: server.to_string(),
        source,
    }
}

/// The advisory lock key of a collection (stable across processes and versions).
fn lock_key(collection: &str) -> i64 {
    // FNV-1a: tiny, stable, and only needs to spread names over the key space.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in b"rag-index:".iter().chain(collection.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_be_bytes(hash.to_be_bytes())
}

/// At a writer's open: drops the indexes of replaced collections and rebuilds this one's index
/// if a crash left it missing or half-built.
fn repair_vector_index(client: &mut Client, server: &str, collection: &str) -> Result<(), PgError> {
    drop_orphan_vector_indexes(client, server)?;
    let row = client
        .query_opt(
            "SELECT id, dim FROM rag_index.collections WHERE name = $1",
            &[&collection],
        )
        .map_err(|e| query_error("collection lookup", server, e))?;
    if let Some((id, Some(dim))) =
        row.map(|row| (row.get::<_, i64>(0), row.get::<_, Option<i32>>(1)))
    {
        ensure_vector_index(client, server, id, dim.max(0) as usize)?;
    }
    Ok(())
}

impl PgStore {
    /// Connects to `url`, creates or migrates the schema, and opens `collection` (created on the
    /// first commit of a writer; a reader of a collection never synced sees it empty).
    pub fn open(url: &str, collection: &str, mode: OpenMode) -> Result<PgStore, PgError> {
        Self::open_with(url, collection, &[], mode)
    }

    /// Opens several collections for reading: searches rank their chunks together, and each
    /// chunk names its collection ([`PgChunk::collection`](crate::PgChunk::collection)).
    pub fn open_readers(url: &str, collections: &[String]) -> Result<PgStore, PgError> {
        let Some((first, rest)) = collections.split_first() else {
            return Err(PgError::InvalidUrl {
                reason: "no collection named".into(),
            });
        };
        Self::open_with(url, first, rest, OpenMode::Reader)
    }

    fn open_with(
        url: &str,
        collection: &str,
        more: &[String],
        mode: OpenMode,
    ) -> Result<PgStore, PgError> {
        let server = Server::parse(url)?;
        let mut client = server.connect()?;
        migrate(&mut client, &server.label)?;
        let writer = match mode {
            OpenMode::Reader => false,
            OpenMode::Writer { wait } => {
                let key = lock_key(collection);
                let err = |e| query_error("collection lock", &server.label, e);
                if wait {
                    client
                        .execute("SELECT pg_advisory_lock($1)", &[&key])
                        .map_err(err)?;
                } else {
                    let got: bool = client
                        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                        .map_err(err)?
                        .get(0);
                    if !got {
                        return Err(PgError::Busy {
                            collection: collection.to_string(),
                            server: server.label.clone(),
                        });
                    }
                }
                true
            }
        };
        if writer {
            repair_vector_index(&mut client, &server.label, collection)?;
        }
        let mut collections = vec![collection.to_string()];
        for name in more {
            if !collections.contains(name) {
                collections.push(name.clone());
            }
        }
        let sessions = match writer {
            true => Sessions::Writer(Mutex::new(client)),
            false => Sessions::Readers(Pool::new(server.clone(), client)),
        };
        Ok(PgStore {
            server,
            collection: collection.to_string(),
            collections,
            writer,
            sessions,
        })
    }

    /// `host:port/database` of the server (no password).
    pub fn server(&self) -> &str {
        &self.server.label
    }

    /// The collection's name (a reader of several: the first).
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// Every collection this store reads.
    pub fn collections(&self) -> &[String] {
        &self.collections
    }

    fn lock(&self) -> Result<Session<'_>, PgError> {
        self.sessions.get()
    }

    fn err(&self, action: &'static str) -> impl Fn(postgres::Error) -> PgError + '_ {
        move |e| query_error(action, &self.server.label, e)
    }

    /// Runs `read` in one read-only, repeatable-read transaction: every query in it sees the
    /// same committed state, whatever commits meanwhile.
    pub fn read<T, E: From<PgError>>(
        &self,
        read: impl FnOnce(&mut PgView<'_, '_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut client = self.lock()?;
        let mut txn = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(self.err("read transaction"))?;
        // Looked up in the transaction, not cached: a reindex gives a collection a new ID.
        // Collections never synced are absent (and read as empty).
        let rows = txn
            .query(
                "SELECT k.id, k.name FROM unnest($1::text[]) WITH ORDINALITY AS n(name, at) \
                 JOIN rag_index.collections k ON k.name = n.name ORDER BY n.at",
                &[&self.collections],
            )
            .map_err(self.err("collection lookup"))?;
        let collections = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        let mut view = PgView::new(&mut txn, &self.server.label, collections, &self.collection);
        let out = read(&mut view)?;
        txn.commit().map_err(self.err("read transaction"))?;
        Ok(out)
    }

    /// The collection's meta record, if it was ever committed.
    pub fn meta(&self) -> Result<Option<Value>, PgError> {
        self.read(|view| view.meta())
    }

    /// The manifest: every indexed file.
    pub fn files(&self) -> Result<Vec<(String, PgFile)>, PgError> {
        self.read(|view| view.files())
    }

    /// Which of `keys` have a stored vector.
    pub fn stored_embeddings(&self, keys: &[String]) -> Result<HashSet<String>, PgError> {
        let rows = self
            .lock()?
            .query(
                "SELECT key FROM rag_index.embeddings WHERE key = ANY($1)",
                &[&keys],
            )
            .map_err(self.err("vector lookup"))?;
        Ok(rows.into_iter().map(|row| row.get(0)).collect())
    }

    /// The stored vector of `key`.
    pub fn embedding(&self, key: &str) -> Result<Option<Vec<f32>>, PgError> {
        let row = self
            .lock()?
            .query_opt(
                "SELECT vector FROM rag_index.embeddings WHERE key = $1",
                &[&key],
            )
            .map_err(self.err("vector lookup"))?;
        Ok(row.map(|row| row.get::<_, Vector>(0).to_vec()))
    }

    /// Saves vectors to the shared cache in one transaction of their own (they are a cache,
    /// not visible state: a crash after it loses nothing, one before it loses this batch).
    pub fn save_embeddings(&self, batch: &[(String, Vec<f32>)]) -> Result<(), PgError> {
        self.require_writer()?;
        let mut client = self.lock()?;
        let mut txn = client.transaction().map_err(self.err("vector save"))?;
        for part in batch.chunks(1_000) {
            let keys: Vec<&str> = part.iter().map(|(k, _)| k.as_str()).collect();
            let dims: Vec<i32> = part.iter().map(|(_, v)| v.len() as i32).collect();
            let vectors: Vec<Vector> = part.iter().map(|(_, v)| Vector::from(v.clone())).collect();
            txn.execute(
                "INSERT INTO rag_index.embeddings (key, dim, vector) \
                 SELECT * FROM unnest($1::text[], $2::int[], $3::vector[]) \
                 ON CONFLICT (key) DO NOTHING",
                &[&keys, &dims, &vectors],
            )
            .map_err(self.err("vector save"))?;
        }
        txn.commit().map_err(self.err("vector save"))
    }

    fn require_writer(&self) -> Result<(), PgError> {
        match self.writer {
            true => Ok(()),
            false => Err(PgError::Busy {
                collection: self.collection.clone(),
                server: self.server.label.clone(),
            }),
        }
    }

    /// Applies `commit` in one transaction: readers see the collection before it or after it,
    /// and a failure (the server going away included) leaves the previous state.
    ///
    /// A first sync, and a reindex (`clear`), write a new collection row that replaces the old
    /// one when the transaction commits: its chunks go in without a vector index to maintain,
    /// and the index is built once afterwards (see [`ensure_vector_index`]).
    pub fn commit(&self, commit: &PgCommit, dim: usize) -> Result<(), PgError> {
        self.require_writer()?;
        let mut client = self.lock()?;
        let mut txn = client.transaction().map_err(self.err("commit"))?;
        let existing: Option<i64> = txn
            .query_opt(
                "SELECT id FROM rag_index.collections WHERE name = $1",
                &[&self.collection],
            )
            .map_err(self.err("collection lookup"))?
            .map(|row| row.get(0));
        let (id, replaced) = match existing {
            Some(id) if !commit.clear => (id, false),
            old => {
                if let Some(old) = old {
                    // Its files and chunks go with it (ON DELETE CASCADE), in this transaction.
                    txn.execute("DELETE FROM rag_index.collections WHERE id = $1", &[&old])
                        .map_err(self.err("collection replacement"))?;
                }
                let id: i64 = txn
                    .query_one(
                        "INSERT INTO rag_index.collections (name) VALUES ($1) RETURNING id",
                        &[&self.collection],
                    )
                    .map_err(self.err("collection creation"))?
                    .get(0);
                (id, old.is_some())
            }
        };
        txn.execute(
            "UPDATE rag_index.collections SET dim = $2 WHERE id = $1",
            &[&id, &(dim as i32)],
        )
        .map_err(self.err("collection creation"))?;
        crate::write::apply(&mut txn, &self.server.label, id, commit)?;
        txn.commit().map_err(self.err("commit"))?;
        // Committed: what follows only speeds searches up, and a crash here is repaired when
        // the next writer opens.
        if replaced {
            drop_orphan_vector_indexes(&mut client, &self.server.label)?;
        }
        if ensure_vector_index(&mut client, &self.server.label, id, dim)? {
            // A new collection's words change the table's statistics, which text searches
            // read to tell common words from rare ones (autovacuum would, later).
            client
                .batch_execute("ANALYZE rag_index.chunks")
                .map_err(self.err("statistics"))?;
        }
        Ok(())
    }

    /// Live chunks, from the manifest (cheap; see [`PgView::live_chunks`]).
    pub fn live_chunks(&self) -> Result<u64, PgError> {
        self.read(|view| view.live_chunks())
    }

    /// Row counts and sizes.
    pub fn counts(&self) -> Result<PgCounts, PgError> {
        self.read(|view| view.counts())
    }
}
