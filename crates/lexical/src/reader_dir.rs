//! The index directory as a reader opens it: the same files, without needing to write.
//!
//! tantivy takes its meta lock, a file it creates in the index directory, each time a reader
//! opens the segments, so that a writer's garbage collection does not delete a file the reader is
//! about to open. An index on a read-only file system (a read-only volume in a container,
//! read-only media), or searched by a user who may read the directory but not write it, cannot
//! create that file, and every search would lose its lexical side. There the reader goes on
//! without the lock: on a read-only file system no writer can run, and otherwise the race it
//! guards is one where a segment vanishes between reading `meta.json` and opening it, which fails
//! that reload (the previous searcher stays) and never yields wrong hits.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, FileSlice, Lock, META_LOCK, MmapDirectory, WatchCallback,
    WatchHandle, WritePtr,
};

/// An [`MmapDirectory`] whose meta lock is skipped when it cannot be created for want of
/// write access; every other call is the inner directory's.
#[derive(Clone, Debug)]
pub(crate) struct ReaderDirectory {
    inner: MmapDirectory,
}

impl ReaderDirectory {
    pub(crate) fn open(dir: &Path) -> tantivy::Result<ReaderDirectory> {
        Ok(ReaderDirectory {
            inner: MmapDirectory::open(dir)?,
        })
    }
}

/// Whether taking `lock` failed only because the directory cannot be written.
fn cannot_write(lock: &Lock, error: &LockError) -> bool {
    let LockError::IoError(io) = error else {
        return false;
    };
    lock.filepath == META_LOCK.filepath
        && matches!(
            io.kind(),
            ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied
        )
}

impl Directory for ReaderDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn open_read(&self, path: &Path) -> Result<FileSlice, OpenReadError> {
        self.inner.open_read(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        match self.inner.acquire_lock(lock) {
            Err(error) if cannot_write(lock, &error) => Ok(DirectoryLock::from(Box::new(()))),
            other => other,
        }
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
