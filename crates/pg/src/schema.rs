//! The `rag_index` schema, created and migrated by rag-index itself. Everything rag-index
//! writes lives in that one schema, so nothing else in the database is ever touched.

use postgres::Client;

use crate::PgError;
use crate::store::query_error;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 4;

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

/// Version 2: one HNSW index per collection and dimension instead of one per dimension, so a
/// collection's first load inserts without maintaining a graph and builds its index once
/// afterwards (about 20x faster than row-by-row graph inserts), and a search walks only its
/// own collection's graph.
const V2: &str = r#"
-- The dimension of the collection's vectors, so a writer can check its index at open.
ALTER TABLE rag_index.collections ADD COLUMN dim integer;
UPDATE rag_index.collections k SET dim = (SELECT max(c.dim) FROM rag_index.chunks c
    WHERE c.collection = k.id);
-- The pairs and names are gathered first: a loop over a query of `chunks` holds it open, and
-- CREATE INDEX on a table this session is reading is refused.
DO $$
DECLARE
    collections bigint[];
    dims integer[];
    stale text[];
BEGIN
    SELECT array_agg(p.collection), array_agg(p.dim) INTO collections, dims
    FROM (SELECT DISTINCT collection, dim FROM rag_index.chunks) AS p;
    FOR i IN 1 .. coalesce(array_length(collections, 1), 0) LOOP
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON rag_index.chunks USING hnsw '
            '((embedding::vector(%s)) vector_cosine_ops) WHERE collection = %s AND dim = %s',
            'chunks_hnsw_c' || collections[i] || '_d' || dims[i], dims[i], collections[i],
            dims[i]);
    END LOOP;
    SELECT array_agg(c.relname) INTO stale FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'rag_index' AND c.relkind = 'i' AND c.relname ~ '^chunks_hnsw_[0-9]+$';
    FOR i IN 1 .. coalesce(array_length(stale, 1), 0) LOOP
        EXECUTE format('DROP INDEX rag_index.%I', stale[i]);
    END LOOP;
END
$$;
"#;

/// Version 3: chunk pages keep a quarter free. An edit rewrites the metadata of a file's
/// unchanged chunks (its size, hash and time), and an `UPDATE` that finds room on the row's page
/// is HOT: no new entry in any index, above all none in the HNSW graph, whose inserts made up
/// most of an edit's commit. Measured on 115,720 chunks: 75% of those updates HOT instead of
/// 14%, the commit's metadata update 50 ms instead of 96 ms, for 44% more heap pages. Applies to
/// pages written from now on (a reindex rewrites a collection's rows).
const V3: &str = r#"
ALTER TABLE rag_index.chunks SET (fillfactor = 75);
"#;

/// Version 4: the manifest keeps each file's status-change time and inode, so a file rewritten
/// with its size kept and its modification time set back is read again. Rows from before have
/// none: their files are hashed once by the next sync, which records them.
const V4: &str = r#"
ALTER TABLE rag_index.files ADD COLUMN ctime_ns bigint, ADD COLUMN inode bigint;
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
    let steps = [
        (1, V1, "schema version 1"),
        (2, V2, "schema version 2"),
        (3, V3, "schema version 3"),
        (4, V4, "schema version 4"),
    ];
    for (version, sql, action) in steps {
        if found >= version {
            continue;
        }
        txn.batch_execute(sql).map_err(err(action))?;
        txn.execute(
            "INSERT INTO rag_index.schema_version VALUES ($1)",
            &[&version],
        )
        .map_err(err("schema version"))?;
        match found {
            0 if version == 1 => {
                log::info!("created the rag_index schema (version 1) on {server}")
            }
            0 => {}
            _ => log::info!("migrated the rag_index schema on {server} to version {version}"),
        }
    }
    txn.commit().map_err(err("migration commit"))
}

/// The name of the HNSW index of one collection's vectors of `dim` dimensions.
pub(crate) fn vector_index_name(collection: i64, dim: usize) -> String {
    format!("chunks_hnsw_c{collection}_d{dim}")
}

/// The most memory a vector index build takes unless the server's own `maintenance_work_mem`
/// is larger: rag-index does not know the server's RAM, so beyond this it follows the
/// administrator's setting rather than its own estimate.
const DEFAULT_BUILD_CAP_MIB: u64 = 2048;
/// pgvector's in-memory graph per row beyond the vector itself (element, heap TIDs and the
/// neighbour lists at the default m = 16). Measured: a 64 MB build of 384-dimension rows stopped
/// fitting after 29,807 tuples (2,252 bytes each); this leaves a margin.
const BUILD_BYTES_PER_ROW: u64 = 768;

/// `maintenance_work_mem` for one HNSW build. pgvector builds in memory while the graph fits;
/// past that it inserts the remaining rows on disk, about 4x slower per row (measured at 115k
/// rows: 380 s for a build that overflowed after 26% of them against 117 s in memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BuildMemory {
    /// What the whole graph needs, by the estimate above.
    pub(crate) needed_mib: u64,
    /// What the build is given: the need, at least 64 MiB, at most the cap.
    pub(crate) granted_mib: u64,
}

impl BuildMemory {
    pub(crate) fn for_rows(rows: u64, dim: usize, server_mib: u64) -> BuildMemory {
        let per_row = (dim as u64) * 4 + BUILD_BYTES_PER_ROW;
        let needed_mib = rows.saturating_mul(per_row).div_ceil(1 << 20);
        let cap = DEFAULT_BUILD_CAP_MIB.max(server_mib);
        BuildMemory {
            needed_mib,
            granted_mib: needed_mib.clamp(64, cap),
        }
    }

    pub(crate) fn fits(&self) -> bool {
        self.granted_mib >= self.needed_mib
    }
}

/// The server's (or role's, or database's) `maintenance_work_mem`, in MiB.
fn server_maintenance_mib(client: &mut Client) -> Result<u64, postgres::Error> {
    let row = client.query_one(
        "SELECT setting::bigint, unit FROM pg_settings WHERE name = 'maintenance_work_mem'",
        &[],
    )?;
    let (value, unit): (i64, Option<String>) = (row.get(0), row.get(1));
    let bytes_per_unit: u64 = match unit.as_deref() {
        Some("kB") => 1 << 10,
        Some("MB") => 1 << 20,
        Some("GB") => 1 << 30,
        _ => 1,
    };
    Ok((value.max(0) as u64).saturating_mul(bytes_per_unit) >> 20)
}

/// Makes sure `collection` has a valid HNSW index for `dim`, building it if missing (a new
/// collection) or invalid (a build that was killed). Runs outside any transaction:
/// `CREATE INDEX CONCURRENTLY` blocks neither readers nor other collections' writers, and
/// until it is ready the planner scans the collection exactly, which is slower but not wrong.
pub(crate) fn ensure_vector_index(
    client: &mut Client,
    server: &str,
    collection: i64,
    dim: usize,
) -> Result<bool, PgError> {
    let err = |action| move |e| query_error(action, server, e);
    let name = vector_index_name(collection, dim);
    let valid: Option<bool> = client
        .query_opt(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'rag_index' AND c.relname = $1",
            &[&name],
        )
        .map_err(err("vector index check"))?
        .map(|row| row.get(0));
    match valid {
        Some(true) => return Ok(false),
        Some(false) => client
            .batch_execute(&format!(
                "DROP INDEX CONCURRENTLY IF EXISTS rag_index.{name}"
            ))
            .map_err(err("invalid vector index removal"))?,
        None => {}
    }
    let rows: i64 = client
        .query_one(
            "SELECT count(*) FROM rag_index.chunks WHERE collection = $1",
            &[&collection],
        )
        .map_err(err("vector index build"))?
        .get(0);
    let rows = rows.max(0) as u64;
    let server_mib = server_maintenance_mib(client).map_err(err("vector index build"))?;
    let memory = BuildMemory::for_rows(rows, dim, server_mib);
    if !memory.fits() {
        log::warn!(
            "{server}: the HNSW graph of {rows} chunks needs ~{} MiB to build in memory; the \
             build gets {} MiB (the larger of {DEFAULT_BUILD_CAP_MIB} MiB and the server's \
             maintenance_work_mem) and inserts the rest on disk, several times slower. Raise \
             maintenance_work_mem on the server to at least {} MB for a faster first sync",
            memory.needed_mib,
            memory.granted_mib,
            memory.needed_mib
        );
    }
    let memory_mib = memory.granted_mib;
    let started = std::time::Instant::now();
    client
        .batch_execute(&format!("SET maintenance_work_mem = '{memory_mib}MB'"))
        .map_err(err("vector index build"))?;
    // One statement per call: several in one simple query form an implicit transaction,
    // which CONCURRENTLY refuses.
    let built = client.batch_execute(&format!(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON rag_index.chunks \
         USING hnsw ((embedding::vector({dim})) vector_cosine_ops) \
         WHERE collection = {collection} AND dim = {dim}"
    ));
    let reset = client.batch_execute("RESET maintenance_work_mem");
    built.map_err(err("vector index build"))?;
    reset.map_err(err("vector index build"))?;
    log::info!(
        "built the vector index of {rows} chunk(s) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(true)
}

/// Drops the vector indexes of collections that no longer exist (a reindex gives a collection
/// a new ID; a crash can leave the old index behind). Outside any transaction.
pub(crate) fn drop_orphan_vector_indexes(client: &mut Client, server: &str) -> Result<(), PgError> {
    let err = |action| move |e| query_error(action, server, e);
    let rows = client
        .query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'rag_index' AND c.relkind = 'i' \
               AND c.relname ~ '^chunks_hnsw_c[0-9]+_d[0-9]+$' \
               AND NOT EXISTS (SELECT 1 FROM rag_index.collections k \
                   WHERE k.id = substring(c.relname from 'c([0-9]+)_d')::bigint)",
            &[],
        )
        .map_err(err("vector index listing"))?;
    for row in rows {
        let name: String = row.get(0);
        client
            .batch_execute(&format!(
                "DROP INDEX CONCURRENTLY IF EXISTS rag_index.{name}"
            ))
            .map_err(err("stale vector index removal"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_memory_covers_the_graph_up_to_the_larger_of_the_cap_and_the_server_setting() {
        // 115,713 rows of 384 dimensions: ~255 MiB, granted whole.
        let small = BuildMemory::for_rows(115_713, 384, 64);
        assert_eq!((small.needed_mib, small.granted_mib), (255, 255));
        assert!(small.fits());
        // A handful of rows still gets pgvector's usual 64 MiB.
        assert_eq!(BuildMemory::for_rows(10, 384, 64).granted_mib, 64);
        // 1.16M rows need ~2.6 GiB: under a default server the build is capped (and warned
        // about); a server configured with 4 GB gives it all.
        let big = BuildMemory::for_rows(1_159_207, 384, 64);
        assert_eq!(big.needed_mib, 2_548);
        assert_eq!(big.granted_mib, DEFAULT_BUILD_CAP_MIB);
        assert!(!big.fits());
        let configured = BuildMemory::for_rows(1_159_207, 384, 4096);
        assert_eq!(configured.granted_mib, 2_548);
        assert!(configured.fits());
        // The estimate is at least what pgvector was measured to take per row (2^20 rows: MiB
        // read as bytes per row).
        let per_row = BuildMemory::for_rows(1 << 20, 384, 0).needed_mib;
        assert!(per_row >= 2_252, "{per_row} bytes per row");
    }
}
