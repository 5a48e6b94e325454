//! The store boundary: the embedded redb store (with its derived graph and lexical files) or a
//! PostgreSQL collection. Only the lifecycle's storage steps (read the manifest, look up and
//! save vectors, commit, retrieve candidates) look at which one an index has.

use std::collections::{HashMap, HashSet};

use rag_store::{FileRecord, IndexMeta, Store};

use crate::{Error, RagIndex, Result};

/// How to open an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Searching only; works while another process syncs.
    Reader,
    /// Syncing and searching: the one writer. Fails with [`Error::Busy`] while another process
    /// writes, unless `wait` (PostgreSQL only: the embedded store's CLI retries instead).
    Writer {
        /// Wait for the other writer.
        wait: bool,
    },
}

impl From<OpenMode> for rag_pg::OpenMode {
    fn from(mode: OpenMode) -> Self {
        match mode {
            OpenMode::Reader => rag_pg::OpenMode::Reader,
            OpenMode::Writer { wait } => rag_pg::OpenMode::Writer { wait },
        }
    }
}

pub(crate) enum Backend {
    Embedded(Store),
    // Boxed: its parsed connection settings are large, and the embedded case is the common one.
    Postgres(Box<rag_pg::PgStore>),
}

/// What a sync needs to know about the committed state before it plans.
pub(crate) struct CommittedState {
    pub meta: Option<IndexMeta>,
    pub manifest: HashMap<String, FileRecord>,
    /// Live chunks.
    pub live: usize,
    /// The manifest's chunk IDs are not read yet (PostgreSQL): [`RagIndex::load_chunk_ids`]
    /// reads those of the files a sync changes.
    pub chunk_ids_pending: bool,
}

impl RagIndex {
    /// The embedded store; operations only it offers fail with [`Error::Unsupported`] on
    /// PostgreSQL.
    pub(crate) fn store(&self) -> Result<&Store> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store),
            Backend::Postgres(_) => Err(self.unsupported("this operation")),
        }
    }

    pub(crate) fn unsupported(&self, what: &'static str) -> Error {
        Error::Unsupported {
            what,
            location: self.location.to_string(),
        }
    }

    /// The PostgreSQL store, when that is the backend.
    pub(crate) fn pg(&self) -> Option<&rag_pg::PgStore> {
        match &self.backend {
            Backend::Postgres(store) => Some(store),
            Backend::Embedded(_) => None,
        }
    }

    /// Meta record, manifest and live chunk count of the last commit.
    pub(crate) fn committed_state(&self) -> Result<CommittedState> {
        match &self.backend {
            Backend::Embedded(store) => {
                let snapshot = store.read()?;
                Ok(CommittedState {
                    meta: snapshot.meta()?,
                    manifest: snapshot.files()?.into_iter().collect(),
                    live: snapshot.counts()?.chunks as usize,
                    chunk_ids_pending: false,
                })
            }
            Backend::Postgres(store) => store.read(|view| {
                let meta = crate::postgres::meta_from(view.meta()?, &self.dir)?;
                let mut live = 0;
                let mut manifest = HashMap::new();
                for (path, file, ids) in view.file_stats()? {
                    live += ids as usize;
                    manifest.insert(path, crate::postgres::file_record(file));
                }
                Ok::<_, Error>(CommittedState {
                    meta,
                    manifest,
                    live,
                    chunk_ids_pending: true,
                })
            }),
        }
    }

    /// Reads the chunk IDs of `paths` into `manifest` (of a [`CommittedState`] whose IDs are
    /// pending). The writer's lock keeps the manifest as it was read meanwhile.
    pub(crate) fn load_chunk_ids(
        &self,
        manifest: &mut HashMap<String, FileRecord>,
        paths: Vec<String>,
    ) -> Result<()> {
        let Some(store) = self.pg() else {
            return Ok(());
        };
        if paths.is_empty() {
            return Ok(());
        }
        for (path, ids) in store.read(|view| view.file_chunk_ids(&paths))? {
            if let Some(record) = manifest.get_mut(&path) {
                record.chunk_ids = ids;
            }
        }
        Ok(())
    }

    /// Which of `keys` have a stored vector.
    pub(crate) fn stored_vectors(&self, keys: &[String]) -> Result<HashSet<String>> {
        match &self.backend {
            Backend::Embedded(store) => {
                let snapshot = store.read()?;
                let mut stored = HashSet::new();
                for key in keys {
                    if snapshot.has_embedding(key)? {
                        stored.insert(key.clone());
                    }
                }
                Ok(stored)
            }
            Backend::Postgres(store) => Ok(store.stored_embeddings(keys)?),
        }
    }

    /// Gives the store's file back the space earlier commits freed, when no transaction is in
    /// progress here or in another process. Best effort: the sync's result stands either way.
    pub(crate) fn compact_store(&self) {
        let Backend::Embedded(store) = &self.backend else {
            return;
        };
        let started = std::time::Instant::now();
        match store.compact() {
            Ok(true) => log::info!("store compacted in {:?}", started.elapsed()),
            Ok(false) => log::debug!("store not compacted: in use, or nothing to give back"),
            Err(e) => log::warn!("store not compacted: {e}"),
        }
    }

    /// Saves one batch of vectors, committed on its own (a cache, not visible state).
    pub(crate) fn save_vectors(&self, batch: &[(String, Vec<f32>)]) -> Result<()> {
        match &self.backend {
            Backend::Embedded(store) => {
                let mut write = store.write()?;
                for (key, vector) in batch {
                    write.put_embedding(key, vector)?;
                }
                write.commit()?;
                Ok(())
            }
            Backend::Postgres(store) => Ok(store.save_embeddings(batch)?),
        }
    }
}
