//! Chunk lookups by ID and by file, over one committed state: what expansion and sections
//! read, whichever backend holds the chunks.

use rag_store::Snapshot;

use crate::Result;
use crate::chunk::IndexedChunk;

/// Chunks of one committed state.
pub(crate) trait ChunkSource {
    /// A live chunk.
    fn chunk(&mut self, chunk_id: &str) -> Result<Option<IndexedChunk>>;
    /// Every live chunk of the file `of` comes from, in document order.
    fn file_chunks(&mut self, of: &IndexedChunk) -> Result<Vec<IndexedChunk>>;
}

/// The embedded store's snapshot as a [`ChunkSource`].
pub(crate) struct SnapshotChunks<'a>(pub &'a Snapshot);

impl ChunkSource for SnapshotChunks<'_> {
    fn chunk(&mut self, chunk_id: &str) -> Result<Option<IndexedChunk>> {
        Ok(self
            .0
            .chunk(chunk_id)?
            .map(|record| IndexedChunk::from_record(chunk_id.to_string(), record)))
    }

    fn file_chunks(&mut self, of: &IndexedChunk) -> Result<Vec<IndexedChunk>> {
        let mut chunks = Vec::new();
        if let Some(file) = self.0.file(&of.path)? {
            for id in file.chunk_ids {
                if let Some(record) = self.0.chunk(&id)? {
                    chunks.push(IndexedChunk::from_record(id, record));
                }
            }
        }
        Ok(chunks)
    }
}
