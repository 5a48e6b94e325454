//! The sync plan: from the classified files of a walk and the manifest, exactly what the commit
//! will do. Pure (no I/O, no model), so `--dry-run` reports the same arithmetic `apply` executes.

use std::collections::{HashMap, HashSet};

use rag_store::FileRecord;

use super::classify::{Outcome, Stat, Touch};
use super::{FileCounts, FileError};
use crate::Result;
use crate::walk::WalkProblem;

/// A file whose content is new or different: its chunks replace the ones the manifest lists.
pub(crate) struct ChangedFile {
    pub path: String,
    pub stat: Stat,
    pub content_hash: String,
    pub chunks: Vec<rag_chunker::Chunk>,
    /// The chunk IDs the manifest lists for it (none when new, or on a reindex).
    pub old_ids: Vec<String>,
}

impl ChangedFile {
    /// Old chunk IDs that the new chunks no longer have.
    pub fn dropped_ids(&self) -> impl Iterator<Item = &str> {
        let new: HashSet<&str> = self.chunks.iter().map(|c| c.id.as_str()).collect();
        self.old_ids
            .iter()
            .map(String::as_str)
            .filter(move |id| !new.contains(id))
    }

    /// New chunks whose ID the file did not have (they get new points and maybe new vectors).
    fn added_chunks(&self) -> usize {
        let old: HashSet<&str> = self.old_ids.iter().map(String::as_str).collect();
        self.chunks
            .iter()
            .filter(|c| !old.contains(c.id.as_str()))
            .count()
    }
}

/// Everything one sync changes.
pub(crate) struct SyncPlan {
    pub changed: Vec<ChangedFile>,
    /// Same content, new stat: the manifest entry is rewritten, and the chunks' provenance
    /// when it moved.
    pub touched: Vec<(String, Touch)>,
    /// Files gone from the folder, with the chunk IDs they had.
    pub removed: Vec<(String, Vec<String>)>,
    /// Every stored chunk is stale (model or chunker changed): all are replaced.
    pub reindex: bool,
    pub files: FileCounts,
    /// Files that failed (their chunks are kept) and walk problems.
    pub errors: Vec<FileError>,
    /// Non-fatal problems of files that were indexed.
    pub warnings: Vec<FileError>,
}

impl SyncPlan {
    /// Builds the plan. `found` is every file the walk listed with what it needs; a manifest
    /// entry not found is removed unless a walk problem says it may exist unlisted (a folder
    /// that could not be read is not a deletion).
    pub fn new(
        found: Vec<(String, Outcome)>,
        manifest: &HashMap<String, FileRecord>,
        problems: Vec<WalkProblem>,
        reindex: bool,
    ) -> Result<SyncPlan> {
        let mut plan = SyncPlan {
            changed: Vec::new(),
            touched: Vec::new(),
            removed: Vec::new(),
            reindex,
            files: FileCounts::default(),
            errors: Vec::new(),
            warnings: Vec::new(),
        };
        let unlisted: Vec<String> = problems.iter().filter_map(|p| p.unlisted.clone()).collect();
        for problem in problems {
            plan.errors.push(FileError::new(problem.rel, problem.error));
        }
        // Paths that keep their place in the index, and how many of them the manifest lists:
        // when that is all of it (the usual case), nothing was removed and no set is built.
        let mut seen: Vec<String> = Vec::with_capacity(found.len());
        let mut seen_listed = 0;
        for (path, outcome) in found {
            let listed = match outcome {
                Outcome::Vanished => continue,
                Outcome::Unchanged => {
                    plan.files.unchanged += 1;
                    true
                }
                Outcome::Touched(touch) => {
                    plan.files.unchanged += 1;
                    plan.touched.push((path.clone(), touch));
                    true
                }
                Outcome::Changed {
                    stat,
                    content_hash,
                    chunks,
                    warnings,
                } => {
                    let previous = manifest.get(&path);
                    let old_ids = match previous {
                        Some(record) if !reindex => {
                            plan.files.modified += 1;
                            record.chunk_ids.clone()
                        }
                        _ => {
                            plan.files.added += 1;
                            Vec::new()
                        }
                    };
                    plan.warnings.extend(
                        warnings
                            .into_iter()
                            .map(|w| FileError::new(path.clone(), w)),
                    );
                    plan.changed.push(ChangedFile {
                        path: path.clone(),
                        stat,
                        content_hash,
                        chunks,
                        old_ids,
                    });
                    previous.is_some()
                }
                Outcome::Failed(error) => {
                    plan.errors.push(FileError::new(path.clone(), error));
                    manifest.contains_key(&path)
                }
                Outcome::Withheld(error) => {
                    // Not marked seen: its chunks are removed like a deleted file's.
                    plan.errors.push(FileError::new(path, error));
                    continue;
                }
                Outcome::NoChunker(e) => return Err(e),
            };
            seen_listed += usize::from(listed);
            seen.push(path);
        }
        let mut removed: Vec<(String, Vec<String>)> = Vec::new();
        if seen_listed < manifest.len() {
            let seen: HashSet<&str> = seen.iter().map(String::as_str).collect();
            removed = manifest
                .iter()
                .filter(|(path, _)| !seen.contains(path.as_str()) && !is_unlisted(path, &unlisted))
                .map(|(path, record)| (path.clone(), record.chunk_ids.clone()))
                .collect();
        }
        removed.sort();
        plan.files.removed = removed.len();
        plan.removed = removed;
        plan.errors.sort_by(|a, b| a.path.cmp(&b.path));
        plan.files.failed = plan.errors.len();
        Ok(plan)
    }

    /// Whether the set of live chunks changes (a new generation is committed).
    pub fn changes_chunks(&self) -> bool {
        self.reindex || !self.changed.is_empty() || !self.removed.is_empty()
    }

    /// Chunks of changed files, every one (reused or not).
    pub fn changed_chunks(&self) -> usize {
        self.changed.iter().map(|f| f.chunks.len()).sum()
    }

    /// (chunks deleted, live chunks after) when applied to an index holding `live` chunks.
    pub fn chunk_delta(&self, live: usize) -> (usize, usize) {
        if self.reindex {
            return (live, self.changed_chunks());
        }
        let deleted: usize = self.removed.iter().map(|(_, ids)| ids.len()).sum::<usize>()
            + self
                .changed
                .iter()
                .map(|f| f.dropped_ids().count())
                .sum::<usize>();
        let added: usize = self.changed.iter().map(ChangedFile::added_chunks).sum();
        (deleted, (live + added).saturating_sub(deleted))
    }
}

fn is_unlisted(path: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| {
        p.is_empty()
            || path == p
            || (path.len() > p.len()
                && path.starts_with(p.as_str())
                && path.as_bytes()[p.len()] == b'/')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ids: &[&str]) -> FileRecord {
        FileRecord {
            size: 1,
            mtime_ns: 1,
            content_hash: "h".into(),
            chunk_ids: ids.iter().map(|s| s.to_string()).collect(),
            stamp: None,
        }
    }

    fn chunk(id: &str) -> rag_chunker::Chunk {
        rag_chunker::Chunk {
            id: id.into(),
            path: String::new(),
            title: String::new(),
            heading_path: vec![],
            ordinal: 0,
            byte_range: 0..0,
            text: id.into(),
            tokens: 3,
            hash: id.into(),
            metadata: Default::default(),
        }
    }

    fn changed(ids: &[&str]) -> Outcome {
        Outcome::Changed {
            stat: Stat {
                size: 2,
                mtime_ns: 2,
                modified_ns: 2,
                stamp: None,
            },
            content_hash: "h2".into(),
            chunks: ids.iter().map(|id| chunk(id)).collect(),
            warnings: vec![],
        }
    }

    fn manifest() -> HashMap<String, FileRecord> {
        [
            ("a.md", record(&["a1", "a2"])),
            ("gone.md", record(&["g1"])),
            ("locked/x.md", record(&["x1", "x2"])),
            ("lockedness.md", record(&["l1"])),
            ("same.md", record(&["s1"])),
        ]
        .into_iter()
        .map(|(p, r)| (p.to_string(), r))
        .collect()
    }

    #[test]
    fn deletions_and_totals_come_from_one_diff() {
        let found = vec![
            ("a.md".to_string(), changed(&["a1", "a3", "a4"])),
            ("new.md".to_string(), changed(&["n1"])),
            ("same.md".to_string(), Outcome::Unchanged),
            ("locked/x.md".to_string(), Outcome::Unchanged),
            ("lockedness.md".to_string(), Outcome::Unchanged),
        ];
        let plan = SyncPlan::new(found, &manifest(), vec![], false).unwrap();
        assert_eq!(plan.files.modified, 1);
        assert_eq!(plan.files.added, 1);
        assert_eq!(
            plan.removed,
            [("gone.md".to_string(), vec!["g1".to_string()])]
        );
        let dropped: Vec<&str> = plan.changed[0].dropped_ids().collect();
        assert_eq!(dropped, ["a2"]);
        // 7 live: a2 and g1 go; a3, a4 and n1 come.
        assert_eq!(plan.chunk_delta(7), (2, 8));
        assert!(plan.changes_chunks());
    }

    #[test]
    fn an_unreadable_folder_is_not_a_deletion() {
        let found = vec![
            ("a.md".to_string(), Outcome::Unchanged),
            (
                "same.md".to_string(),
                Outcome::Failed("permission denied".into()),
            ),
        ];
        let problems = vec![WalkProblem {
            rel: "locked".into(),
            error: "permission denied".into(),
            unlisted: Some("locked".into()),
        }];
        let plan = SyncPlan::new(found, &manifest(), problems, false).unwrap();
        let removed: Vec<&str> = plan.removed.iter().map(|(p, _)| p.as_str()).collect();
        // locked/x.md is kept; lockedness.md is merely a name that shares the prefix.
        assert_eq!(removed, ["gone.md", "lockedness.md"]);
        assert_eq!(plan.files.failed, 2);
        let everything = vec![WalkProblem {
            rel: "/root".into(),
            error: "walk failed".into(),
            unlisted: Some(String::new()),
        }];
        let plan = SyncPlan::new(vec![], &manifest(), everything, false).unwrap();
        assert!(plan.removed.is_empty());
        assert!(!plan.changes_chunks());
    }

    #[test]
    fn an_added_file_does_not_hide_a_removed_one() {
        // As many files found as listed, one of them new: gone.md is still removed.
        let found = vec![
            ("a.md".to_string(), Outcome::Unchanged),
            ("new.md".to_string(), changed(&["n1"])),
            ("same.md".to_string(), Outcome::Failed("busy".into())),
            ("locked/x.md".to_string(), Outcome::Unchanged),
            ("lockedness.md".to_string(), Outcome::Unchanged),
        ];
        let plan = SyncPlan::new(found, &manifest(), vec![], false).unwrap();
        let removed: Vec<&str> = plan.removed.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(removed, ["gone.md"]);
        // Every listed file found: nothing is removed.
        let found = ["a.md", "gone.md", "locked/x.md", "lockedness.md", "same.md"]
            .map(|p| (p.to_string(), Outcome::Unchanged))
            .into_iter()
            .collect();
        let plan = SyncPlan::new(found, &manifest(), vec![], false).unwrap();
        assert!(plan.removed.is_empty());
        // A vanished file is removed even though the walk listed it.
        let mut found: Vec<(String, Outcome)> = ["a.md", "locked/x.md", "lockedness.md", "same.md"]
            .map(|p| (p.to_string(), Outcome::Unchanged))
            .into_iter()
            .collect();
        found.push(("gone.md".to_string(), Outcome::Vanished));
        let plan = SyncPlan::new(found, &manifest(), vec![], false).unwrap();
        assert_eq!(plan.removed.len(), 1);
    }

    #[test]
    fn a_reindex_replaces_every_chunk() {
        let found = vec![("a.md".to_string(), changed(&["a1"]))];
        let plan = SyncPlan::new(found, &manifest(), vec![], true).unwrap();
        assert_eq!(plan.files.added, 1);
        assert!(plan.changed[0].old_ids.is_empty());
        assert_eq!(plan.chunk_delta(7), (7, 1));
    }
}
