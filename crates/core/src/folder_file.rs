//! Reading one file of the indexed folder: only a regular file, and never more than a limit.
//!
//! The folder is not ours and changes under us. A name the walk saw as a file can be a named
//! pipe by the time it is opened (a blocking open waits for a writer, so a sync in cron would
//! hang, holding the index lock), or a link to a device that never ends (`/dev/zero`: reading
//! it whole exhausts memory), or a file still growing. So the file is opened without blocking,
//! checked through the open handle (the name can be swapped between a check and an open), and
//! read through a bound.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::path::Path;

/// Why a file of the folder was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FolderReadError {
    /// Gone, or never there.
    #[error("file not found")]
    NotFound,
    /// A named pipe, socket, device or directory.
    #[error("{0}, not a regular file; not read")]
    NotRegular(&'static str),
    /// Larger than the limit when opened, or grew past it while being read.
    #[error("file is too large ({size} bytes; the limit is {limit} bytes)")]
    TooLarge { size: u64, limit: u64 },
    #[error("{}", io_reason(.0))]
    Io(std::io::Error),
}

/// What was read, with the metadata of the handle it was read from.
pub(crate) struct FolderFile {
    pub bytes: Vec<u8>,
    pub meta: Metadata,
}

/// Reads `path` whole when it is a regular file of at most `limit` bytes.
pub(crate) fn read_folder_file(path: &Path, limit: u64) -> Result<FolderFile, FolderReadError> {
    let file = open_without_blocking(path).map_err(from_io)?;
    let meta = file.metadata().map_err(from_io)?;
    if !meta.is_file() {
        return Err(FolderReadError::NotRegular(kind_of(&meta)));
    }
    if meta.len() > limit {
        return Err(FolderReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    // The capacity comes from the bounded stat, not from what the file may grow to.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(from_io)?;
    if bytes.len() as u64 > limit {
        return Err(FolderReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(FolderFile { bytes, meta })
}

/// Permission problems say so in words: they are the ones a user fixes.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!("permission denied ({e})"),
        _ => e.to_string(),
    }
}

fn from_io(e: std::io::Error) -> FolderReadError {
    if e.kind() == std::io::ErrorKind::NotFound {
        FolderReadError::NotFound
    } else {
        FolderReadError::Io(e)
    }
}

#[cfg(unix)]
fn open_without_blocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK changes nothing for a regular file; for a pipe it makes the open return.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

#[cfg(unix)]
fn kind_of(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn kind_of(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs the read on its own thread: a read that blocks fails the test instead of hanging it.
    fn read_within(path: &Path, limit: u64) -> Result<FolderFile, FolderReadError> {
        let (sender, receiver) = mpsc::channel();
        let path = path.to_owned();
        std::thread::spawn(move || {
            let _ = sender.send(read_folder_file(&path, limit));
        });
        receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("reading a folder file must not block")
    }

    #[test]
    fn a_regular_file_is_read_whole_and_a_larger_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, b"# Title\n\nBody.\n").unwrap();
        let read = read_within(&path, 15).unwrap();
        assert_eq!(read.bytes, b"# Title\n\nBody.\n");
        assert_eq!(read.meta.len(), 15);
        assert!(matches!(
            read_within(&path, 14),
            Err(FolderReadError::TooLarge {
                size: 15,
                limit: 14
            })
        ));
        assert!(matches!(
            read_within(&dir.path().join("gone.md"), 100),
            Err(FolderReadError::NotFound)
        ));
        assert!(matches!(
            read_within(dir.path(), 100),
            Err(FolderReadError::NotRegular("a directory"))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn pipes_and_endless_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.md");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_within(&fifo, 1 << 20).err().unwrap();
        assert!(matches!(err, FolderReadError::NotRegular("a named pipe")));
        assert!(err.to_string().contains("named pipe"), "{err}");

        // A link to a device that never ends: refused before a byte is read.
        let zero = dir.path().join("zero.md");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(
            read_within(&zero, 1 << 20),
            Err(FolderReadError::NotRegular("a device"))
        ));
    }
}
