//! The redb tables of a store.

use redb::TableDefinition;

pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(crate) const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
pub(crate) const CHUNKS: TableDefinition<&str, &[u8]> = TableDefinition::new("chunks");
pub(crate) const POINTS: TableDefinition<u64, &str> = TableDefinition::new("points");
pub(crate) const EMBEDDINGS: TableDefinition<&str, &[u8]> = TableDefinition::new("embeddings");
pub(crate) const META_KEY: &str = "meta";

/// Names of every table, to tell a rag-index store from another program's redb file.
pub(crate) fn names() -> [&'static str; 5] {
    use redb::TableHandle;
    [
        META.name(),
        FILES.name(),
        CHUNKS.name(),
        POINTS.name(),
        EMBEDDINGS.name(),
    ]
}
