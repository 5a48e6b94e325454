//! Reading a save's search structures: `search.bin` (links, dump order, and the walk table)
//! and, when a process needs all of them, the f32 rows of `vectors.bin`.
//!
//! Every byte is hashed as it lands in its final place (the tables straight into memory) and
//! nothing is interpreted beyond the header's sizes, which are checked against the manifest
//! first, until size and hash match the manifest.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::IndexError;
use crate::codes::CodeTable;
use crate::persist::{FileEntry, check_entry, missing};
use crate::table::VectorTable;
use crate::vector_file::VectorFile;
use crate::walk::FlatGraph;

pub(crate) const SEARCH_MAGIC: &[u8; 8] = b"RVIXSRCH";
/// Version 1 had no dump order (its directories keep hnsw_rs's data file); version 2 held the
/// f32 vectors; version 3 holds codes and row checksums, the f32 vectors being in `vectors.bin`.
pub(crate) const SEARCH_VERSION: u32 = 3;
/// Magic, version, dim, slot count, links byte length.
pub(crate) const SEARCH_HEADER: usize = 8 + 4 + 4 + 8 + 8;
/// Read (and hash) size while loading a table.
pub(crate) const READ_CHUNK: usize = 4 << 20;

/// What `search.bin` holds.
pub(crate) struct SearchFile {
    pub(crate) table: SearchTable,
    pub(crate) flat: FlatGraph,
    /// The graph dump's node order (from version 2).
    pub(crate) dump_order: Option<Vec<u32>>,
}

/// The table a search walks.
pub(crate) enum SearchTable {
    /// Versions 1 and 2: the f32 vectors themselves.
    Vectors(VectorTable),
    /// Version 3: codes, and the f32 rows on disk with their checksums.
    Codes(CodeTable, VectorFile),
}

/// Reads `search.bin` at `path` for `n` slots of `dim` floats; a version 3 file opens
/// `vectors` for row reads.
pub(crate) fn read_search(
    path: &Path,
    (_, size, hash): &FileEntry,
    vectors: &Path,
    dim: usize,
    n: usize,
) -> Result<SearchFile, IndexError> {
    let bad = |reason: String| IndexError::corrupt(path, reason);
    let (mut f, mut hasher) = (open_sized(path, *size)?, blake3::Hasher::new());
    let read_err = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => bad("file ends early".into()),
        _ => IndexError::io(path, e),
    };
    let mut header = [0u8; SEARCH_HEADER];
    f.read_exact(&mut header).map_err(read_err)?;
    hasher.update(&header);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let u64_at =
        |b: &[u8], at: usize| u64::from(u32_at(b, at)) | (u64::from(u32_at(b, at + 4)) << 32);
    if &header[..8] != SEARCH_MAGIC {
        return Err(bad("not a search file".into()));
    }
    let version = u32_at(&header, 8);
    if !(1..=SEARCH_VERSION).contains(&version) {
        return Err(bad("unknown search file version".into()));
    }
    if u32_at(&header, 12) as usize != dim || u64_at(&header, 16) != n as u64 {
        return Err(bad("search file disagrees with manifest".into()));
    }
    // Per slot after the links: dump order (u32), then in version 3 a row checksum (u64) and
    // a scale (f32). The table: f32 per dimension, or one code byte in version 3.
    let (per_slot, table_width) = match version {
        1 => (0u64, 4u64),
        2 => (4, 4),
        _ => (16, 1),
    };
    let links_len = u64_at(&header, 24);
    let table_bytes = (n as u64)
        .checked_mul(dim as u64)
        .and_then(|x| x.checked_mul(table_width))
        .filter(|&b| b.checked_mul(4).is_some());
    let middle_bytes = (n as u64)
        .checked_mul(per_slot)
        .and_then(|x| x.checked_add(links_len));
    let expected = table_bytes
        .zip(middle_bytes)
        .and_then(|(t, m)| t.checked_add(m)?.checked_add(SEARCH_HEADER as u64));
    if expected != Some(*size) {
        return Err(bad("links length disagrees with file size".into()));
    }
    let (table_bytes, middle_bytes) = (table_bytes.unwrap_or(0), middle_bytes.unwrap_or(0));
    let mut middle = vec![0u8; usize::try_from(middle_bytes).map_err(|_| bad("too large".into()))?];
    f.read_exact(&mut middle).map_err(read_err)?;
    hasher.update(&middle);
    let table_len = usize::try_from(table_bytes).map_err(|_| bad("too large".into()))?;
    let table = if version < 3 {
        let mut vectors = VectorTable::zeroed(table_len / 4);
        read_hashed(&mut f, bytemuck::cast_slice_mut(&mut vectors), &mut hasher)
            .map_err(read_err)?;
        Loaded::Vectors(vectors)
    } else {
        let mut codes = vec![0i8; table_len];
        read_hashed(&mut f, bytemuck::cast_slice_mut(&mut codes), &mut hasher).map_err(read_err)?;
        Loaded::Codes(codes)
    };
    finish(&mut f, path, hasher, *size, hash)?;

    let links_end = links_len as usize;
    let flat = FlatGraph::decode(&middle[..links_end], n).map_err(bad)?;
    let words = |from: usize, width: usize| middle[from..from + width * n].chunks_exact(width);
    let dump_order = (version >= 2).then(|| {
        words(links_end, 4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    });
    let table = match table {
        Loaded::Vectors(vectors) => {
            #[cfg(target_endian = "big")]
            let vectors = {
                let mut vectors = vectors;
                for x in vectors.iter_mut() {
                    *x = f32::from_bits(u32::from_le(x.to_bits()));
                }
                vectors
            };
            vectors.advise_huge_pages();
            SearchTable::Vectors(vectors)
        }
        Loaded::Codes(codes) => {
            let sums_at = links_end + 4 * n;
            let sums = words(sums_at, 8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect();
            let scales = words(sums_at + 8 * n, 4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let codes = CodeTable::from_parts(dim, codes, scales)
                .ok_or_else(|| bad("code table disagrees with its scales".into()))?;
            SearchTable::Codes(codes, VectorFile::open(vectors, dim, sums)?)
        }
    };
    Ok(SearchFile {
        table,
        flat,
        dump_order,
    })
}

/// Reads the whole f32 table of `vectors.bin` (`n` rows of `dim`), verified like `search.bin`.
pub(crate) fn read_vectors(
    path: &Path,
    (_, size, hash): &FileEntry,
    dim: usize,
    n: usize,
) -> Result<VectorTable, IndexError> {
    let bad = |reason: String| IndexError::corrupt(path, reason);
    if Some(*size) != (n as u64).checked_mul(4 * dim as u64) {
        return Err(bad(format!("manifest size {size} is not {n} rows")));
    }
    let (mut f, mut hasher) = (open_sized(path, *size)?, blake3::Hasher::new());
    let mut vectors = VectorTable::zeroed(n * dim);
    read_hashed(&mut f, bytemuck::cast_slice_mut(&mut vectors), &mut hasher).map_err(
        |e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad("file ends early".into()),
            _ => IndexError::io(path, e),
        },
    )?;
    finish(&mut f, path, hasher, *size, hash)?;
    vectors.advise_huge_pages();
    #[cfg(target_endian = "big")]
    for x in vectors.iter_mut() {
        *x = f32::from_bits(u32::from_le(x.to_bits()));
    }
    Ok(vectors)
}

enum Loaded {
    Vectors(VectorTable),
    Codes(Vec<i8>),
}

/// Opens `path`, a file the manifest lists, checking that it holds `size` bytes.
pub(crate) fn open_sized(path: &Path, size: u64) -> Result<File, IndexError> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing(path)),
        Err(e) => return Err(IndexError::io(path, e)),
    };
    let actual = f.metadata().map_err(|e| IndexError::io(path, e))?.len();
    if actual != size {
        return Err(IndexError::corrupt(
            path,
            format!("size {actual}, expected {size}"),
        ));
    }
    Ok(f)
}

/// Fills `buf` from `f`, hashing on all cores (hashing a 1.7 GB table on one thread was a
/// quarter of a query process at a million chunks).
fn read_hashed(f: &mut File, buf: &mut [u8], hasher: &mut blake3::Hasher) -> std::io::Result<()> {
    for chunk in buf.chunks_mut(READ_CHUNK) {
        f.read_exact(chunk)?;
        hasher.update_rayon(chunk);
    }
    Ok(())
}

/// Checks that `f` ends here and that everything read hashes as the manifest says.
fn finish(
    f: &mut File,
    path: &Path,
    hasher: blake3::Hasher,
    size: u64,
    hash: &str,
) -> Result<(), IndexError> {
    let mut rest = [0u8; 1];
    if f.read(&mut rest).map_err(|e| IndexError::io(path, e))? != 0 {
        return Err(IndexError::corrupt(
            path,
            format!("longer than the manifest's {size} bytes"),
        ));
    }
    check_entry(path, size, hasher.finalize(), size, hash)
}
