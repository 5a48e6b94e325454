//! The `rag_index` schema, created and migrated by rag-index itself. Everything rag-index
//! writes lives in that one schema, so nothing else in the database is ever touched.

use postgres::Client;

use crate::PgError;
use crate::store::query_error;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 1;

/// Serialises concurrent migrations across processes (a transaction-level advisory lock).
const MIGRATION_LOCK: i64 = 0x7261_6769_6478_0001;

/// Version 1: collections, their manifests and chunks (vector, labels, `tsvector`), and the
/// vector cache shared by all collections.
const V1: &str = r#"
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE rag_index.collections (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    -- The index meta record (fingerprints, generation), as in the embedded store.
    meta          jsonb,
    -- Metadata keys any chunk ever had, so a filter on an unknown key is an error.
    metadata_keys text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE rag_index.files (
    collection   bigint NOT NULL REFERENCES rag_index.collections (id) ON DELETE CASCADE,
    path         text NOT NULL,
    size         bigint NOT NULL,
    mtime_ns     bigint NOT NULL,
    content_hash text NOT NULL,
    chunk_ids    text[] NOT NULL,
    PRIMARY KEY (collection, path)
);
CREATE TABLE rag_index.embeddings (
    key    text PRIMARY KEY,
    dim    integer NOT NULL,
    vector vector NOT NULL
);
CREATE TABLE rag_index.chunks (
    collection    bigint NOT NULL REFERENCES rag_index.collections (id) ON DELETE CASCADE,
    id            text NOT NULL,
    path          text NOT NULL,
    title         text NOT NULL,
    heading_path  jsonb NOT NULL,
    ordinal       integer NOT NULL,
    byte_start    bigint NOT NULL,
    byte_end      bigint NOT NULL,
    text          text NOT NULL,
    hash          text NOT NULL,
    tokens        integer NOT NULL,
    metadata      jsonb NOT NULL,
    labels        text[] NOT NULL,
    embedding_key text NOT NULL,
    dim           integer NOT NULL,
    embedding     vector NOT NULL,
    lexical       tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (collection, id)
);
CREATE INDEX chunks_by_file ON rag_index.chunks (collection, path, ordinal);
CREATE INDEX chunks_lexical ON rag_index.chunks USING gin (lexical);
-- Filters compare metadata values as text: `jsonb` scalars and list elements, flattened.
CREATE FUNCTION rag_index.scalars(value jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(value)
        WHEN 'array' THEN ARRAY(
            SELECT e #>> '{}' FROM jsonb_array_elements(value) AS e
            WHERE jsonb_typeof(e) IN ('string', 'number', 'boolean'))
        WHEN 'string' THEN ARRAY[value #>> '{}']
        WHEN 'number' THEN ARRAY[value #>> '{}']
        WHEN 'boolean' THEN ARRAY[value #>> '{}']
        ELSE ARRAY[]::text[]
    END
$$;
-- Numbers compare as numbers, anything else as text (so RFC 3339 dates order correctly).
CREATE FUNCTION rag_index.compare(a text, b text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN a ~ '^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$'
         AND b ~ '^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$'
        THEN sign(a::float8 - b::float8)::integer
        WHEN a COLLATE "C" < b COLLATE "C" THEN -1
        WHEN a = b THEN 0
        ELSE 1
    END
$$;
"#;

/// Creates or migrates the schema; safe when several processes do it at once.
pub(crate) fn migrate(client: &mut Client, server: &str) -> Result<(), PgError> {
    let err = |action| move |e| query_error(action, server, e);
    let mut txn = client.transaction().map_err(err("migration"))?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(err("migration lock"))?;
    txn.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS rag_index;
         CREATE TABLE IF NOT EXISTS rag_index.schema_version (version integer NOT NULL);",
    )
    .map_err(err("schema creation"))?;
    let found: Option<i32> = txn
        .query_opt("SELECT max(version) FROM rag_index.schema_version", &[])
        .map_err(err("schema version"))?
        .and_then(|row| row.get(0));
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(PgError::SchemaVersion {
            server: server.to_string(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if found < 1 {
        txn.batch_execute(V1).map_err(err("schema version 1"))?;
        txn.execute("INSERT INTO rag_index.schema_version VALUES (1)", &[])
            .map_err(err("schema version"))?;
        log::info!("created the rag_index schema (version 1) on {server}");
    }
    txn.commit().map_err(err("migration commit"))
}

/// Creates the HNSW index for vectors of `dim` dimensions if missing. pgvector indexes need a
/// fixed dimension, and collections of different models share the table: one partial
/// expression index per dimension.
pub(crate) fn ensure_vector_index(
    client: &mut Client,
    server: &str,
    dim: usize,
) -> Result<(), PgError> {
    let sql = format!(
        "CREATE INDEX IF NOT EXISTS chunks_hnsw_{dim} ON rag_index.chunks \
         USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE dim = {dim}"
    );
    client
        .batch_execute(&sql)
        .map_err(|e| query_error("vector index creation", server, e))
}
