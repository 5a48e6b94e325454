//! The changes seen but not yet committed, in bounded memory.

use std::collections::HashSet;
use std::path::PathBuf;

/// Changed paths since the last sync started, collapsed to "everything" past a cap. Syncs
/// rescan the whole folder, so the set is only for reporting; the cap keeps a `git checkout`
/// of a million files from growing it without bound.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    paths: HashSet<PathBuf>,
    overflow: bool,
    cap: usize,
}

impl Pending {
    pub fn new(cap: usize) -> Pending {
        Pending {
            paths: HashSet::new(),
            overflow: false,
            cap,
        }
    }

    pub fn add(&mut self, path: PathBuf) {
        if self.overflow {
            return;
        }
        if self.paths.len() >= self.cap && !self.paths.contains(&path) {
            self.mark_all();
            return;
        }
        self.paths.insert(path);
    }

    /// Everything may have changed (lost events, or too many to remember).
    pub fn mark_all(&mut self) {
        self.overflow = true;
        self.paths = HashSet::new();
    }

    #[cfg(test)]
    pub fn nothing_pending(&self) -> bool {
        !self.overflow && self.paths.is_empty()
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Takes the current changes (a sync is starting), leaving the set empty.
    pub fn take(&mut self) -> Pending {
        std::mem::replace(self, Pending::new(self.cap))
    }

    /// Puts back the changes of a sync that failed.
    pub fn merge(&mut self, other: Pending) {
        if other.overflow {
            self.mark_all();
        }
        for path in other.paths {
            self.add(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_past_the_cap() {
        let mut p = Pending::new(2);
        p.add("a".into());
        p.add("a".into());
        p.add("b".into());
        assert_eq!((p.len(), p.overflowed()), (2, false));
        p.add("c".into());
        assert!(p.overflowed() && p.len() == 0 && !p.nothing_pending());
        let taken = p.take();
        assert!(p.nothing_pending());
        p.add("d".into());
        p.merge(taken);
        assert!(p.overflowed());
    }
}
