//! The statements of one commit, all inside the caller's transaction. Rows go in batches of
//! arrays (`unnest`): one statement per batch instead of one round trip per row.

use std::collections::{BTreeSet, HashMap};

use postgres::Transaction;
use serde_json::{Map, Value};

use crate::PgError;
use crate::records::{PgChunk, PgCommit, PgFile};
use crate::store::query_error;

/// Rows per statement: large enough that round trips vanish, small enough that one
/// statement's arrays stay a few MiB.
const BATCH: usize = 1_000;

pub(crate) fn apply(
    txn: &mut Transaction<'_>,
    server: &str,
    collection: i64,
    commit: &PgCommit,
) -> Result<(), PgError> {
    let err = |action| move |e| query_error(action, server, e);
    for ids in commit.remove_chunks.chunks(BATCH * 10) {
        txn.execute(
            "DELETE FROM rag_index.chunks WHERE collection = $1 AND id = ANY($2)",
            &[&collection, &ids],
        )
        .map_err(err("chunk deletion"))?;
    }
    for paths in commit.remove_files.chunks(BATCH * 10) {
        txn.execute(
            "DELETE FROM rag_index.files WHERE collection = $1 AND path = ANY($2)",
            &[&collection, &paths],
        )
        .map_err(err("file deletion"))?;
    }
    for files in commit.put_files.chunks(BATCH) {
        put_files(txn, collection, files).map_err(err("manifest write"))?;
    }
    // One row per ID, the last one winning, as in the embedded store: an upsert statement may
    // not touch a row twice.
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, chunk) in commit.put_chunks.iter().enumerate() {
        last.insert(chunk.id.as_str(), i);
    }
    let unique: Vec<&PgChunk> = (commit.put_chunks.iter().enumerate())
        .filter(|(i, c)| last.get(c.id.as_str()) == Some(i))
        .map(|(_, c)| c)
        .collect();
    let mut keys = BTreeSet::new();
    let mut missing = Vec::new();
    for chunks in unique.chunks(BATCH) {
        for chunk in chunks {
            keys.extend(chunk.metadata.keys().cloned());
        }
        let written = put_chunks(txn, collection, chunks).map_err(err("chunk write"))?;
        if written < chunks.len() as u64 {
            missing.extend(missing_vectors(txn, chunks).map_err(err("chunk write"))?);
        }
    }
    for rows in commit.put_metadata.chunks(BATCH) {
        for (_, metadata, _) in rows {
            keys.extend(metadata.keys().cloned());
        }
        put_metadata(txn, collection, rows).map_err(err("chunk metadata write"))?;
    }
    if let Some(first) = missing.first() {
        // Returning drops the transaction: nothing of this commit stays.
        return Err(PgError::MissingVectors {
            missing: missing.len(),
            first: first.clone(),
        });
    }
    let keys: Vec<String> = keys.into_iter().collect();
    txn.execute(
        "UPDATE rag_index.collections SET meta = $2, metadata_keys = ARRAY( \
         SELECT DISTINCT k FROM unnest(metadata_keys || $3::text[]) AS k ORDER BY k) \
         WHERE id = $1",
        &[&collection, &commit.meta, &keys],
    )
    .map_err(err("meta write"))?;
    Ok(())
}

fn put_files(
    txn: &mut Transaction<'_>,
    collection: i64,
    files: &[(String, PgFile)],
) -> Result<u64, postgres::Error> {
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let sizes: Vec<i64> = files
        .iter()
        .map(|(_, f)| i64::try_from(f.size).unwrap_or(i64::MAX))
        .collect();
    let mtimes: Vec<i64> = files.iter().map(|(_, f)| f.mtime_ns).collect();
    let hashes: Vec<&str> = files.iter().map(|(_, f)| f.content_hash.as_str()).collect();
    let ctimes: Vec<Option<i64>> = files.iter().map(|(_, f)| f.stamp.map(|s| s.0)).collect();
    let inodes: Vec<Option<i64>> = files.iter().map(|(_, f)| f.stamp.map(|s| s.1)).collect();
    // Arrays of arrays must be rectangular in PostgreSQL: each file's IDs travel as JSON.
    let ids: Vec<Value> = files
        .iter()
        .map(|(_, f)| Value::from(f.chunk_ids.clone()))
        .collect();
    txn.execute(
        "INSERT INTO rag_index.files \
         (collection, path, size, mtime_ns, content_hash, chunk_ids, ctime_ns, inode) \
         SELECT $1, f.path, f.size, f.mtime_ns, f.content_hash, \
                ARRAY(SELECT jsonb_array_elements_text(f.ids)), f.ctime_ns, f.inode \
         FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::jsonb[], \
                     $7::bigint[], $8::bigint[]) \
              AS f(path, size, mtime_ns, content_hash, ids, ctime_ns, inode) \
         ON CONFLICT (collection, path) DO UPDATE SET \
         size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns, \
         content_hash = EXCLUDED.content_hash, chunk_ids = EXCLUDED.chunk_ids, \
         ctime_ns = EXCLUDED.ctime_ns, inode = EXCLUDED.inode",
        &[
            &collection,
            &paths,
            &sizes,
            &mtimes,
            &hashes,
            &ids,
            &ctimes,
            &inodes,
        ],
    )
}

/// Inserts or replaces `chunks`, taking each vector from the cache inside the statement (no
/// vector crosses the wire twice). A chunk without a stored vector inserts nothing: returns
/// the rows written.
fn put_chunks(
    txn: &mut Transaction<'_>,
    collection: i64,
    chunks: &[&PgChunk],
) -> Result<u64, postgres::Error> {
    let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let paths: Vec<&str> = chunks.iter().map(|c| c.path.as_str()).collect();
    let titles: Vec<&str> = chunks.iter().map(|c| c.title.as_str()).collect();
    let headings: Vec<Value> = chunks
        .iter()
        .map(|c| Value::from(c.heading_path.clone()))
        .collect();
    let ordinals: Vec<i32> = chunks.iter().map(|c| c.ordinal as i32).collect();
    let starts: Vec<i64> = chunks.iter().map(|c| c.byte_range.0 as i64).collect();
    let ends: Vec<i64> = chunks.iter().map(|c| c.byte_range.1 as i64).collect();
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let hashes: Vec<&str> = chunks.iter().map(|c| c.hash.as_str()).collect();
    let tokens: Vec<i32> = chunks.iter().map(|c| c.tokens as i32).collect();
    let metadata: Vec<Value> = chunks
        .iter()
        .map(|c| Value::Object(c.metadata.clone()))
        .collect();
    let labels: Vec<Value> = chunks
        .iter()
        .map(|c| Value::from(c.labels.clone()))
        .collect();
    let keys: Vec<&str> = chunks.iter().map(|c| c.embedding_key.as_str()).collect();
    txn.execute(
        "INSERT INTO rag_index.chunks (collection, id, path, title, heading_path, ordinal, \
         byte_start, byte_end, text, hash, tokens, metadata, labels, embedding_key, dim, \
         embedding) \
         SELECT $1, c.id, c.path, c.title, c.heading_path, c.ordinal, c.byte_start, c.byte_end, \
                c.text, c.hash, c.tokens, c.metadata, \
                ARRAY(SELECT jsonb_array_elements_text(c.labels)), e.key, e.dim, e.vector \
         FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[], $6::int[], $7::bigint[], \
                     $8::bigint[], $9::text[], $10::text[], $11::int[], $12::jsonb[], \
                     $13::jsonb[], $14::text[]) \
              AS c(id, path, title, heading_path, ordinal, byte_start, byte_end, text, hash, \
                   tokens, metadata, labels, key) \
         JOIN rag_index.embeddings e ON e.key = c.key \
         ON CONFLICT (collection, id) DO UPDATE SET path = EXCLUDED.path, \
         title = EXCLUDED.title, heading_path = EXCLUDED.heading_path, \
         ordinal = EXCLUDED.ordinal, byte_start = EXCLUDED.byte_start, \
         byte_end = EXCLUDED.byte_end, text = EXCLUDED.text, hash = EXCLUDED.hash, \
         tokens = EXCLUDED.tokens, metadata = EXCLUDED.metadata, labels = EXCLUDED.labels, \
         embedding_key = EXCLUDED.embedding_key, dim = EXCLUDED.dim, \
         embedding = EXCLUDED.embedding",
        &[
            &collection,
            &ids,
            &paths,
            &titles,
            &headings,
            &ordinals,
            &starts,
            &ends,
            &texts,
            &hashes,
            &tokens,
            &metadata,
            &labels,
            &keys,
        ],
    )
}

/// Rewrites the metadata and labels of stored chunks, leaving their text and vector as they are.
fn put_metadata(
    txn: &mut Transaction<'_>,
    collection: i64,
    rows: &[(String, Map<String, Value>, Vec<String>)],
) -> Result<u64, postgres::Error> {
    let ids: Vec<&str> = rows.iter().map(|(id, _, _)| id.as_str()).collect();
    let metadata: Vec<Value> = rows
        .iter()
        .map(|(_, m, _)| Value::Object(m.clone()))
        .collect();
    let labels: Vec<Value> = rows
        .iter()
        .map(|(_, _, l)| Value::from(l.clone()))
        .collect();
    txn.execute(
        "UPDATE rag_index.chunks c SET metadata = u.metadata, \
         labels = ARRAY(SELECT jsonb_array_elements_text(u.labels)) \
         FROM unnest($2::text[], $3::jsonb[], $4::jsonb[]) AS u(id, metadata, labels) \
         WHERE c.collection = $1 AND c.id = u.id",
        &[&collection, &ids, &metadata, &labels],
    )
}

/// The embedding keys of `chunks` that have no stored vector.
fn missing_vectors(
    txn: &mut Transaction<'_>,
    chunks: &[&PgChunk],
) -> Result<Vec<String>, postgres::Error> {
    let keys: Vec<&str> = chunks.iter().map(|c| c.embedding_key.as_str()).collect();
    let rows = txn.query(
        "SELECT k FROM unnest($1::text[]) AS k \
         WHERE NOT EXISTS (SELECT 1 FROM rag_index.embeddings e WHERE e.key = k)",
        &[&keys],
    )?;
    Ok(rows.into_iter().map(|row| row.get(0)).collect())
}
