//! Which folder a watch is attached to, so a replaced root is noticed.
//!
//! inotify watches inodes, not paths. A deploy that switches a symlink (`docs -> releases/v42`)
//! or moves a new folder into place leaves the watch on the old folder, which then reports
//! nothing; the walk of each sync follows the path and would only see the new folder at the
//! next periodic reconcile. Comparing the root's resolved path and inode now and then catches
//! both.

use std::path::{Path, PathBuf};

/// The folder `root` names right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RootIdentity {
    /// `root` with every symlink resolved: what the watch is set on.
    pub(crate) canonical: PathBuf,
    /// Device and inode (zero where the platform has none), so a folder removed and made again
    /// under the same path differs too.
    device: u64,
    inode: u64,
}

impl RootIdentity {
    /// The folder `root` names, or `None` while nothing (or no folder) is there.
    pub(crate) fn of(root: &Path) -> Option<RootIdentity> {
        let canonical = root.canonicalize().ok()?;
        let metadata = std::fs::metadata(&canonical).ok()?;
        if !metadata.is_dir() {
            return None;
        }
        let (device, inode) = device_and_inode(&metadata);
        Some(RootIdentity {
            canonical,
            device,
            inode,
        })
    }
}

#[cfg(unix)]
fn device_and_inode(metadata: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

#[cfg(not(unix))]
fn device_and_inode(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switched_symlink_or_a_recreated_folder_is_another_root() {
        let tmp = tempfile::tempdir().unwrap();
        let (v1, v2, link) = (
            tmp.path().join("v1"),
            tmp.path().join("v2"),
            tmp.path().join("docs"),
        );
        std::fs::create_dir(&v1).unwrap();
        std::fs::create_dir(&v2).unwrap();
        std::os::unix::fs::symlink(&v1, &link).unwrap();
        let first = RootIdentity::of(&link).unwrap();
        assert_eq!(RootIdentity::of(&link), Some(first.clone()));
        std::fs::remove_file(&link).unwrap();
        assert_eq!(RootIdentity::of(&link), None);
        std::os::unix::fs::symlink(&v2, &link).unwrap();
        assert_ne!(RootIdentity::of(&link), Some(first));

        let before = RootIdentity::of(&v1).unwrap();
        std::fs::remove_dir(&v1).unwrap();
        std::fs::create_dir(&v1).unwrap();
        let after = RootIdentity::of(&v1).unwrap();
        assert_eq!(before.canonical, after.canonical);
        // The kernel may hand a freed inode straight back; then the two are the same folder to
        // every observer, and the watch on the new one is what matters.
        if before.inode != after.inode {
            assert_ne!(before, after);
        }
    }
}
