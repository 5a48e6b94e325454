//! Opening the database file: one writer process, any number of readers that follow its commits,
//! recovery after an interrupted writer, and refusal of files that are not ours.

use std::path::Path;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use redb::{
    CompactionError, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase,
};

use crate::Result;
use crate::batch::WriteBatch;
use crate::error::{StoreError, guarded, open_error};
use crate::snapshot::Snapshot;
use crate::tables::{self, CHUNKS, EMBEDDINGS, FILES, META, POINTS};

/// How long a reader waits for a writer that is recovering the file before giving up.
const RECOVERY_WAIT: Duration = Duration::from_secs(10);

enum Handle {
    /// Behind a lock only so that [`Store::compact`] can hold it alone: transactions are begun
    /// under a shared hold and outlive it.
    Writer(RwLock<Database>),
    Reader(ReadOnlyDatabase),
}

/// The index database. See the crate documentation.
pub struct Store {
    /// Always `Some` until dropped: taken in `drop` so that closing a damaged file cannot panic.
    handle: Option<Handle>,
    path: Arc<Path>,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let path = self.path.clone();
            let _ = guarded(&path, move || {
                drop(handle);
                Ok(())
            });
        }
    }
}

fn builder() -> redb::Builder {
    let mut builder = Database::builder();
    // One writer process with readers that follow its commits: `query` keeps working while a
    // cron `sync` runs, and a second `sync` is refused.
    builder.set_concurrency_mode(ConcurrencyMode::SingleWriter);
    builder
}

impl Store {
    /// Opens (creating if needed) the database for writing. Fails with [`StoreError::Busy`]
    /// when another process is writing, [`StoreError::Damaged`] when the file is damaged and
    /// [`StoreError::NotAnIndex`] when it is another program's redb file (which is not touched).
    pub fn open_writer(path: &Path) -> Result<Store> {
        let existed = path.exists();
        if existed {
            refuse_foreign(path)?;
        }
        let open = || {
            if existed {
                builder().open(path)
            } else {
                builder().create(path)
            }
        };
        let db = guarded(path, || open().map_err(|e| open_error(path, e)))?;
        let store = Store {
            handle: Some(Handle::Writer(RwLock::new(db))),
            path: Arc::from(path),
        };
        store.ensure_tables(existed)?;
        store.read()?.check_format()?;
        Ok(store)
    }

    /// Opens an existing database read-only. When an interrupted writer left the file needing
    /// recovery and no writer is running, recovers it first (as the next writer would), so
    /// readers always see the last committed state.
    pub fn open_reader(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::NotFound {
                path: path.to_owned(),
            });
        }
        let started = std::time::Instant::now();
        let db = loop {
            match guarded(path, || {
                builder()
                    .open_read_only(path)
                    .map_err(|e| open_error(path, e))
            }) {
                Err(StoreError::Open {
                    source: DatabaseError::RepairAborted,
                    ..
                }) => {
                    if !recover(path)? && started.elapsed() > RECOVERY_WAIT {
                        return Err(StoreError::NeedsRecovery {
                            path: path.to_owned(),
                            reason: "a writer holds it but did not finish recovering it".into(),
                        });
                    }
                }
                other => break other?,
            }
        };
        let store = Store {
            handle: Some(Handle::Reader(db)),
            path: Arc::from(path),
        };
        if !store.has_tables(&tables::names())? {
            return Err(StoreError::NotAnIndex {
                path: path.to_owned(),
            });
        }
        store.read()?.check_format()?;
        Ok(store)
    }

    /// Creates every table up front so readers never meet a missing one (only when one is
    /// missing: a write transaction costs several fsyncs, too much for every no-op sync).
    fn ensure_tables(&self, existed: bool) -> Result<()> {
        let names = tables::names();
        if self.has_tables(&names)? {
            return Ok(());
        }
        if existed && !self.table_names()?.is_empty() && !self.has_tables(&[names[0]])? {
            return Err(StoreError::NotAnIndex {
                path: self.path.to_path_buf(),
            });
        }
        let db = self.writer()?;
        guarded(&self.path, || {
            let txn = db.begin_write()?;
            txn.open_table(META)?;
            txn.open_table(FILES)?;
            txn.open_table(CHUNKS)?;
            txn.open_table(POINTS)?;
            txn.open_table(EMBEDDINGS)?;
            txn.commit()?;
            Ok(())
        })
    }

    fn table_names(&self) -> Result<Vec<String>> {
        use redb::TableHandle;
        guarded(&self.path, || {
            let txn = match self.handle() {
                Handle::Writer(db) => shared(db).begin_read()?,
                Handle::Reader(db) => db.begin_read()?,
            };
            Ok(txn.list_tables()?.map(|t| t.name().to_string()).collect())
        })
    }

    fn has_tables(&self, wanted: &[&str]) -> Result<bool> {
        let names = self.table_names()?;
        Ok(wanted.iter().all(|w| names.iter().any(|n| n == w)))
    }

    fn handle(&self) -> &Handle {
        self.handle
            .as_ref()
            .expect("a store's handle lives until it is dropped")
    }

    fn writer(&self) -> Result<RwLockReadGuard<'_, Database>> {
        match self.handle() {
            Handle::Writer(db) => Ok(shared(db)),
            Handle::Reader(_) => Err(StoreError::ReadOnly {
                path: self.path.to_path_buf(),
            }),
        }
    }

    /// A consistent snapshot of the last commit.
    pub fn read(&self) -> Result<Snapshot> {
        let txn = guarded(&self.path, || {
            Ok(match self.handle() {
                Handle::Writer(db) => shared(db).begin_read()?,
                Handle::Reader(db) => db.begin_read()?,
            })
        })?;
        Ok(Snapshot {
            txn,
            path: self.path.clone(),
        })
    }

    /// Gives the file back the space earlier commits freed: redb reuses freed pages but never
    /// shrinks the file, so after a big sync (vectors committed in many batches of random keys)
    /// it can hold twice what its tables use. Best effort: `Ok(false)` when nothing was
    /// compacted, or a transaction here or in another process is in progress (a reader's query
    /// keeps its snapshot). While it runs, other processes wait to begin a transaction. Like
    /// any commit, an interruption leaves the last committed state for the next open to repair.
    pub fn compact(&self) -> Result<bool> {
        let Handle::Writer(lock) = self.handle() else {
            return Err(StoreError::ReadOnly {
                path: self.path.to_path_buf(),
            });
        };
        let mut db = lock
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guarded(&self.path, || match db.compact() {
            Ok(compacted) => Ok(compacted),
            Err(
                CompactionError::TransactionInProgress
                | CompactionError::PersistentSavepointExists
                | CompactionError::EphemeralSavepointExists,
            ) => Ok(false),
            Err(other) => Err(redb::Error::from(other).into()),
        })
    }

    /// Starts the (only) write transaction. Nothing is visible to readers until
    /// [`WriteBatch::commit`], which is durable when it returns.
    pub fn write(&self) -> Result<WriteBatch> {
        let db = self.writer()?;
        let txn = guarded(&self.path, || Ok(db.begin_write()?))?;
        Ok(WriteBatch {
            txn,
            path: self.path.clone(),
        })
    }
}

/// A shared hold on the writer's database, to begin a transaction (a poisoned lock still
/// guards a sound database: no code panics while holding it alone but redb's compaction, and
/// its interruption is what a crash is).
fn shared(db: &RwLock<Database>) -> RwLockReadGuard<'_, Database> {
    db.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Looks at an existing file read-only (a writer's open rewrites the header) and refuses one
/// that holds tables, none of them ours. A file that needs recovery is left to the writer.
fn refuse_foreign(path: &Path) -> Result<()> {
    use redb::TableHandle;
    let names: Vec<String> = match guarded(path, || {
        let db = builder()
            .open_read_only(path)
            .map_err(|e| open_error(path, e))?;
        let txn = db.begin_read()?;
        let names = txn.list_tables()?.map(|t| t.name().to_string()).collect();
        Ok(names)
    }) {
        Ok(names) => names,
        Err(StoreError::Open {
            source: DatabaseError::RepairAborted,
            ..
        }) => return Ok(()),
        Err(e) => return Err(e),
    };
    if !names.is_empty() && !names.iter().any(|n| n == tables::names()[0]) {
        return Err(StoreError::NotAnIndex {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Recovers a file an interrupted writer left needing repair, by opening it as the writer
/// (which repairs) and closing it again. `Ok(false)`: a writer is running, wait for it.
fn recover(path: &Path) -> Result<bool> {
    match guarded(path, || {
        builder().open(path).map_err(|e| open_error(path, e))
    }) {
        Ok(db) => {
            drop(db);
            log::info!("{}: recovered after an interrupted write", path.display());
            Ok(true)
        }
        Err(StoreError::Busy { .. }) => {
            std::thread::sleep(Duration::from_millis(50));
            Ok(false)
        }
        Err(StoreError::Open { source, .. }) => Err(StoreError::NeedsRecovery {
            path: path.to_owned(),
            reason: source.to_string(),
        }),
        Err(other) => Err(other),
    }
}
