//! The statements of one commit, all inside the caller's transaction.

use std::collections::BTreeSet;

use postgres::Transaction;

use crate::PgError;
use crate::records::PgCommit;
use crate::store::query_error;

pub(crate) fn apply(
    txn: &mut Transaction<'_>,
    server: &str,
    collection: i64,
    commit: &PgCommit,
) -> Result<(), PgError> {
    let err = |action| move |e| query_error(action, server, e);
    if commit.clear {
        txn.execute(
            "DELETE FROM rag_index.chunks WHERE collection = $1",
            &[&collection],
        )
        .map_err(err("clearing chunks"))?;
        txn.execute(
            "DELETE FROM rag_index.files WHERE collection = $1",
            &[&collection],
        )
        .map_err(err("clearing files"))?;
        txn.execute(
            "UPDATE rag_index.collections SET metadata_keys = '{}' WHERE id = $1",
            &[&collection],
        )
        .map_err(err("clearing keys"))?;
    }
    txn.execute(
        "DELETE FROM rag_index.chunks WHERE collection = $1 AND id = ANY($2)",
        &[&collection, &commit.remove_chunks],
    )
    .map_err(err("chunk deletion"))?;
    txn.execute(
        "DELETE FROM rag_index.files WHERE collection = $1 AND path = ANY($2)",
        &[&collection, &commit.remove_files],
    )
    .map_err(err("file deletion"))?;

    let put_file = txn
        .prepare(
            "INSERT INTO rag_index.files (collection, path, size, mtime_ns, content_hash, chunk_ids) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (collection, path) DO UPDATE SET \
             size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns, \
             content_hash = EXCLUDED.content_hash, chunk_ids = EXCLUDED.chunk_ids",
        )
        .map_err(err("manifest write"))?;
    for (path, file) in &commit.put_files {
        let size = i64::try_from(file.size).unwrap_or(i64::MAX);
        txn.execute(
            &put_file,
            &[
                &collection,
                path,
                &size,
                &file.mtime_ns,
                &file.content_hash,
                &file.chunk_ids,
            ],
        )
        .map_err(err("manifest write"))?;
    }

    // The vector comes from the cache inside the statement: no vector crosses the wire twice,
    // and a chunk without a stored vector inserts nothing, which is caught below.
    let put_chunk = txn
        .prepare(
            "INSERT INTO rag_index.chunks (collection, id, path, title, heading_path, ordinal, \
             byte_start, byte_end, text, hash, tokens, metadata, labels, embedding_key, dim, \
             embedding) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, e.key, e.dim, e.vector \
             FROM rag_index.embeddings e WHERE e.key = $14 \
             ON CONFLICT (collection, id) DO UPDATE SET path = EXCLUDED.path, \
             title = EXCLUDED.title, heading_path = EXCLUDED.heading_path, \
             ordinal = EXCLUDED.ordinal, byte_start = EXCLUDED.byte_start, \
             byte_end = EXCLUDED.byte_end, text = EXCLUDED.text, hash = EXCLUDED.hash, \
             tokens = EXCLUDED.tokens, metadata = EXCLUDED.metadata, labels = EXCLUDED.labels, \
             embedding_key = EXCLUDED.embedding_key, dim = EXCLUDED.dim, \
             embedding = EXCLUDED.embedding",
        )
        .map_err(err("chunk write"))?;
    let mut keys = BTreeSet::new();
    let mut missing = Vec::new();
    for chunk in &commit.put_chunks {
        keys.extend(chunk.metadata.keys().cloned());
        let heading_path = serde_json::json!(chunk.heading_path);
        let metadata = serde_json::Value::Object(chunk.metadata.clone());
        let written = txn
            .execute(
                &put_chunk,
                &[
                    &collection,
                    &chunk.id,
                    &chunk.path,
                    &chunk.title,
                    &heading_path,
                    &(chunk.ordinal as i32),
                    &(chunk.byte_range.0 as i64),
                    &(chunk.byte_range.1 as i64),
                    &chunk.text,
                    &chunk.hash,
                    &(chunk.tokens as i32),
                    &metadata,
                    &chunk.labels,
                    &chunk.embedding_key,
                ],
            )
            .map_err(err("chunk write"))?;
        if written == 0 {
            missing.push(chunk.embedding_key.clone());
        }
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
