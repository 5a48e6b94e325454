//! What filters and permission labels need to know about each point of one committed
//! generation, in memory, so the check inside a graph walk or a BM25 scan costs a hash lookup.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::access::{Access, required_labels};
use crate::filter::{BUILT_IN_KEYS, Filter};
use crate::quoted::quoted;
use crate::{Error, Result};

/// How many known keys an unknown-key error names.
const SHOWN_KEYS: usize = 20;

struct PointFacts {
    path: String,
    title: String,
    labels: Vec<String>,
    metadata: Map<String, Value>,
}

/// The facts of every live point of a snapshot.
pub(crate) struct PointTable {
    facts: HashMap<u64, PointFacts>,
    /// Metadata keys by the labels their chunks require (few distinct sets), so a caller is
    /// told only of keys of chunks they may see.
    keys_by_labels: HashMap<Vec<String>, BTreeSet<String>>,
    labelled: bool,
}

impl PointTable {
    /// Builds the table from a snapshot's live chunks.
    pub fn build(chunks: Vec<(String, rag_store::ChunkRecord)>) -> PointTable {
        let mut keys_by_labels: HashMap<Vec<String>, BTreeSet<String>> = HashMap::new();
        let mut labelled = false;
        let mut facts = HashMap::with_capacity(chunks.len());
        for (_, record) in chunks {
            let metadata = match serde_json::from_str(&record.metadata_json) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            };
            let labels = required_labels(&metadata);
            labelled |= !labels.is_empty();
            keys_by_labels
                .entry(labels.clone())
                .or_default()
                .extend(metadata.keys().cloned());
            facts.insert(
                record.point,
                PointFacts {
                    path: record.path,
                    title: record.title,
                    labels,
                    metadata,
                },
            );
        }
        PointTable {
            facts,
            keys_by_labels,
            labelled,
        }
    }

    /// Fails with [`Error::InvalidRequest`] naming a filter key no chunk `access` may see has:
    /// a typo must not look like "no matching documents".
    pub fn check_keys(&self, filter: &Filter, access: &Access) -> Result<()> {
        check_filter_keys(
            filter,
            &mut TableKeys {
                table: self,
                access,
            },
        )
    }

    /// Whether every point passes for this caller and filter without looking (no chunk needs a
    /// label and there is no filter), so the search can skip the check.
    pub fn passes_all(&self, filter: &Filter) -> bool {
        filter.is_empty() && !self.labelled
    }

    /// Whether `access` may see every live point.
    pub fn all_visible_to(&self, access: &Access) -> bool {
        self.keys_by_labels
            .keys()
            .all(|labels| access.may_see(labels))
    }

    /// Whether `point` is live and visible to `access`, whatever a filter says.
    pub fn visible(&self, point: u64, access: &Access) -> bool {
        self.facts
            .get(&point)
            .is_some_and(|f| access.may_see(&f.labels))
    }

    /// Whether `point` is live, visible to `access` and meets `filter`.
    pub fn allows(&self, point: u64, access: &Access, filter: &Filter) -> bool {
        self.facts.get(&point).is_some_and(|f| {
            access.may_see(&f.labels) && filter.matches(&f.path, &f.title, &f.metadata)
        })
    }
}

/// The metadata keys of the chunks one caller may see, as a backend knows them.
pub(crate) trait VisibleKeys {
    /// Whether a chunk the caller may see has `key`.
    fn has(&mut self, key: &str) -> Result<bool>;
    /// Every such key, sorted.
    fn list(&mut self) -> Result<Vec<String>>;
}

/// Fails with [`Error::InvalidRequest`] naming a filter key that is neither built in nor a
/// metadata key of a chunk the caller may see. A key only labelled chunks have is unknown to a
/// caller without the labels, exactly like a key no chunk has: the answer must not tell them
/// that such documents exist.
pub(crate) fn check_filter_keys(filter: &Filter, keys: &mut impl VisibleKeys) -> Result<()> {
    for condition in &filter.conditions {
        let key = condition.key();
        if BUILT_IN_KEYS.contains(&key) || keys.has(key)? {
            continue;
        }
        // Front matter may bring thousands of keys: name the first few.
        let known: Vec<String> = BUILT_IN_KEYS
            .iter()
            .map(|k| k.to_string())
            .chain(keys.list()?)
            .collect();
        let more = match known.len().saturating_sub(SHOWN_KEYS) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let shown: Vec<String> = known
            .iter()
            .take(SHOWN_KEYS)
            .map(|k| quoted(k).to_string())
            .collect();
        return Err(Error::InvalidRequest {
            reason: format!(
                "unknown filter key {}: no chunk you may see has it (known keys: {}{more})",
                quoted(key),
                shown.join(", ")
            ),
        });
    }
    Ok(())
}

/// The keys of a [`PointTable`] one caller may see.
struct TableKeys<'a> {
    table: &'a PointTable,
    access: &'a Access,
}

impl TableKeys<'_> {
    fn visible(&self) -> impl Iterator<Item = &BTreeSet<String>> {
        self.table
            .keys_by_labels
            .iter()
            .filter(|(labels, _)| self.access.may_see(labels))
            .map(|(_, keys)| keys)
    }
}

impl VisibleKeys for TableKeys<'_> {
    fn has(&mut self, key: &str) -> Result<bool> {
        Ok(self.visible().any(|keys| keys.contains(key)))
    }

    fn list(&mut self) -> Result<Vec<String>> {
        let all: BTreeSet<&String> = self.visible().flatten().collect();
        Ok(all.into_iter().cloned().collect())
    }
}
