//! Provenance stamped on every chunk's metadata, so a caller can ask for "only what changed
//! since the release" (`--filter changed_at>=2026-06-01`) and see how old a source is:
//!
//! - `modified`, `size`: the source file's modification time and size when last synced;
//! - `source_hash`: blake3 of the source file's bytes;
//! - `indexed_at`: when the file was first indexed;
//! - `changed_at`: when this chunk's text first appeared in the file (an edit elsewhere in the
//!   file keeps it).
//!
//! Times are RFC 3339 UTC, to the second, so they compare as text. These fields overwrite
//! front-matter fields of the same name. None of them is embedded: they change without touching
//! vectors.

use serde_json::{Map, Value};

/// Metadata keys written here.
pub const PROVENANCE_KEYS: [&str; 5] = [
    "modified",
    "size",
    "source_hash",
    "indexed_at",
    "changed_at",
];

/// RFC 3339 UTC (seconds) for nanoseconds since the Unix epoch; the epoch itself when out of
/// range.
pub(crate) fn rfc3339(ns: i128) -> String {
    let format = time::format_description::well_known::Rfc3339;
    let seconds = ns.div_euclid(1_000_000_000);
    time::OffsetDateTime::from_unix_timestamp(seconds as i64)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .format(&format)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The source file's facts at this sync.
pub(crate) struct SourceFacts<'a> {
    pub size: u64,
    pub modified_ns: i128,
    pub content_hash: &'a str,
}

/// Sets the file-level fields (`modified`, `size`, `source_hash`).
pub(crate) fn stamp_source(metadata: &mut Map<String, Value>, source: &SourceFacts<'_>) {
    metadata.insert("modified".into(), Value::from(rfc3339(source.modified_ns)));
    metadata.insert("size".into(), Value::from(source.size));
    metadata.insert("source_hash".into(), Value::from(source.content_hash));
}

/// Sets `indexed_at` and `changed_at`.
pub(crate) fn stamp_times(metadata: &mut Map<String, Value>, indexed_at: &str, changed_at: &str) {
    metadata.insert("indexed_at".into(), Value::from(indexed_at));
    metadata.insert("changed_at".into(), Value::from(changed_at));
}

/// A stored chunk's metadata, parsed.
pub(crate) fn metadata_of(record: &rag_store::ChunkRecord) -> Map<String, Value> {
    match serde_json::from_str(&record.metadata_json) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A string field of stored metadata.
pub(crate) fn field(metadata: &Map<String, Value>, key: &str) -> Option<String> {
    metadata.get(key).and_then(Value::as_str).map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc_seconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_600_500_000_000), "2026-01-01T00:00:00Z");
        assert!(rfc3339(now_ns()).as_str() > "2026-01-01");
    }
}
