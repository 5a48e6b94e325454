//! On-disk format: hnsw_rs's graph file, a slot table, the search structures (which hold the
//! one copy of the vectors), and a manifest written last.
//!
//! ```text
//! <dir>/graph.hnsw.graph   hnsw_rs graph dump (node ids are slots)
//! <dir>/slots.bin          "RVIXSLOT", u32 version, u32 dim, u64 n, n x u64 id, n x u8 live (LE)
//! <dir>/search.bin         "RVIXSRCH", u32 version (3), u32 dim, u64 n, u64 links byte length,
//!                          the links searches walk (`FlatGraph::encode`), n x u32 slots in
//!                          the graph dump's node order, n x u64 row checksums of vectors.bin
//!                          (XXH3-64 of each row's bytes), n x f32 code scales, then the
//!                          code table: n x dim x i8, slot-major (all LE)
//! <dir>/vectors.bin        the vectors: n x dim x f32, slot-major (LE)
//! <dir>/MANIFEST           key=value lines, one `file=<name> <size> <blake3>` per file,
//!                          closed by `checksum=<blake3 of every byte before that line>`
//! ```
//!
//! hnsw_rs also writes a data file (`graph.hnsw.data`) holding every vector again; `save`
//! removes it before it is synced, and loading the graph writes it back from the vector table
//! for hnsw_rs to parse (see `graph.rs`). One f32 copy of each vector is stored, not two.
//!
//! A process that only searches reads `search.bin` whole (the links and a byte per dimension,
//! about a quarter of the f32 table's size) and `vectors.bin` only for the rows it rescores,
//! each checked against its checksum; writers that fold, compact or save read `vectors.bin`
//! whole, verified against the manifest. Version 2 `search.bin` files (the f32 vectors inside,
//! no `vectors.bin`) still load, their codes computed in memory.
//!
//! The manifest is written to a temporary name, fsynced and renamed, so its presence means
//! every other file was complete and synced. Searching needs only `slots.bin`, `search.bin`
//! and rows of `vectors.bin`, so `load` verifies and reads just those: the hnsw_rs dump (which costs seconds and hundreds
//! of megabytes to parse) is verified and parsed only when an insert or `save` needs the graph.
//! Every file is verified against the manifest before a byte of it is interpreted; hnsw_rs's
//! loader in particular asserts, unwraps and even exits on malformed input.
//!
//! Directories written before `search.bin` existed load the old way: every file verified, the
//! hnsw_rs dump parsed and the search structures rebuilt from it. Those written with a version 1
//! `search.bin` (no dump order) list the data file and load the graph from it.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::graph::Graph;
use crate::params::{MAX_DIM, validate_dim};
use crate::search_file::{
    READ_CHUNK, SEARCH_HEADER, SEARCH_MAGIC, SEARCH_VERSION, SearchFile, read_search, read_vectors,
};
use crate::table::VectorTable;
use crate::vector_file::row_sum;
use crate::{IndexError, IndexParams, VectorIndex};

const FORMAT: &str = "rag-vector-index/1";
const MANIFEST: &str = "MANIFEST";
const MANIFEST_TMP: &str = "MANIFEST.tmp";
const SLOTS: &str = "slots.bin";
const SLOTS_MAGIC: &[u8; 8] = b"RVIXSLOT";
const SLOTS_VERSION: u32 = 1;
const SEARCH: &str = "search.bin";
const VECTORS: &str = "vectors.bin";
/// A manifest is a few hundred bytes; anything bigger is not ours.
const MANIFEST_MAX: u64 = 64 * 1024;

fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| IndexError::io(dir, e))
}

pub(crate) fn hash_file(path: &Path) -> Result<(u64, blake3::Hash), IndexError> {
    let mut f = File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| IndexError::io(path, e))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update_rayon(&buf[..n]);
    }
    Ok((size, hasher.finalize()))
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    write_new_parts(path, &[bytes], &[])
}

/// Writes `parts` and then `floats` (little-endian) into a new file and syncs it.
pub(crate) fn write_new_parts(
    path: &Path,
    parts: &[&[u8]],
    floats: &[f32],
) -> Result<(), IndexError> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| IndexError::io(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    for bytes in parts {
        w.write_all(bytes).map_err(|e| IndexError::io(path, e))?;
    }
    #[cfg(target_endian = "little")]
    w.write_all(bytemuck::cast_slice(floats))
        .map_err(|e| IndexError::io(path, e))?;
    #[cfg(target_endian = "big")]
    for x in floats {
        w.write_all(&x.to_le_bytes())
            .map_err(|e| IndexError::io(path, e))?;
    }
    let f = w
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?;
    f.sync_all().map_err(|e| IndexError::io(path, e))
}

/// Creates `dir` or checks that it is an empty directory; returns whether it was created.
pub(crate) fn prepare_dir(dir: &Path) -> Result<bool, IndexError> {
    match fs::metadata(dir) {
        Ok(meta) => {
            if !meta.is_dir() {
                return Err(IndexError::TargetNotEmpty { path: dir.into() });
            }
            let mut entries = fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))?;
            if entries.next().is_some() {
                return Err(IndexError::TargetNotEmpty { path: dir.into() });
            }
            Ok(false)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
            Ok(true)
        }
        Err(e) => Err(IndexError::io(dir, e)),
    }
}

/// Writes the whole index (which has no pending slots) into `dir`; returns it as a base for
/// later deltas.
pub(crate) fn save(index: &VectorIndex, dir: &Path) -> Result<SavedBase, IndexError> {
    debug_assert_eq!(
        index.nodes,
        index.ids.len(),
        "save folds pending slots first"
    );
    let created = prepare_dir(dir)?;
    // A graph with no node has no entry point and hnsw_rs cannot dump it; an empty index saves
    // no dump.
    let graph = index.graph()?;
    let basename = if graph.len() > 0 {
        Some(graph.dump(dir).map_err(|reason| IndexError::Graph {
            op: "dump",
            dir: dir.to_owned(),
            reason,
        })?)
    } else {
        None
    };
    let mut files: Vec<String> = Vec::new();
    if let Some(base) = &basename {
        // The vectors are saved once, in `vectors.bin`: a reload writes this file back.
        let data = dir.join(format!("{base}.hnsw.data"));
        fs::remove_file(&data).map_err(|e| IndexError::io(&data, e))?;
        let name = format!("{base}.hnsw.graph");
        let path = dir.join(&name);
        // hnsw_rs flushes but never syncs its files.
        File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| IndexError::io(&path, e))?;
        files.push(name);
    }
    write_new(&dir.join(SLOTS), &encode_slots(index))?;
    files.push(SLOTS.to_string());
    let vectors = index.node_table()?;
    write_new_parts(&dir.join(VECTORS), &[], vectors)?;
    files.push(VECTORS.to_string());
    // The links the index searches with right now, so a reload answers exactly like it.
    let links = index.flat()?.encode();
    let order: Vec<u8> = graph
        .dump_order()
        .into_iter()
        .flat_map(u32::to_le_bytes)
        .collect();
    let mut header = Vec::with_capacity(SEARCH_HEADER);
    header.extend_from_slice(SEARCH_MAGIC);
    header.extend_from_slice(&SEARCH_VERSION.to_le_bytes());
    header.extend_from_slice(&(index.dim as u32).to_le_bytes());
    header.extend_from_slice(&(index.ids.len() as u64).to_le_bytes());
    header.extend_from_slice(&(links.len() as u64).to_le_bytes());
    let dim = index.dim;
    let sums: Vec<u8> = vectors
        .par_chunks_exact(dim)
        .flat_map_iter(|row| row_sum(row).to_le_bytes())
        .collect();
    let codes = index.codes()?;
    let scales: Vec<u8> = codes
        .scales()
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    write_new_parts(
        &dir.join(SEARCH),
        &[
            &header,
            &links,
            &order,
            &sums,
            &scales,
            bytemuck::cast_slice(codes.codes()),
        ],
        &[],
    )?;
    files.push(SEARCH.to_string());

    let (m, ef_c) = graph.build_params();
    let mut manifest = String::new();
    manifest.push_str(&format!("format={FORMAT}\n"));
    manifest.push_str(&format!("dim={}\n", index.dim));
    manifest.push_str(&format!("slots={}\n", index.ids.len()));
    manifest.push_str(&format!("live={}\n", index.len()));
    manifest.push_str(&format!("max_connections={m}\nef_construction={ef_c}\n"));
    manifest.push_str(&format!("graph={}\n", basename.as_deref().unwrap_or("")));
    for name in &files {
        let (size, hash) = hash_file(&dir.join(name))?;
        manifest.push_str(&format!("file={name} {size} {}\n", hash.to_hex()));
    }
    publish_manifest(dir, &mut manifest, created)?;
    Ok(SavedBase {
        dir: dir.to_path_buf(),
        manifest_hash: blake3::hash(manifest.as_bytes()).to_hex().to_string(),
    })
}

/// Closes `manifest` with its checksum, writes it under a temporary name, syncs it and renames
/// it into place: from then on `dir` is a complete save.
pub(crate) fn publish_manifest(
    dir: &Path,
    manifest: &mut String,
    created: bool,
) -> Result<(), IndexError> {
    let checksum = blake3::hash(manifest.as_bytes());
    manifest.push_str(&format!("checksum={}\n", checksum.to_hex()));
    let tmp = dir.join(MANIFEST_TMP);
    write_new(&tmp, manifest.as_bytes())?;
    let dst = dir.join(MANIFEST);
    fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))?;
    sync_dir(dir)?;
    if created && let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(())
}

/// A full save that deltas refer to: its directory and the BLAKE3 of its manifest, so a delta
/// never applies to another save that took the same name.
#[derive(Debug, Clone)]
pub(crate) struct SavedBase {
    pub(crate) dir: PathBuf,
    pub(crate) manifest_hash: String,
}

impl SavedBase {
    /// Whether a delta in `dir` can name this base by its file name alone.
    pub(crate) fn is_sibling_of(&self, dir: &Path) -> bool {
        self.dir.parent() == dir.parent() && self.dir.file_name().is_some() && self.dir != dir
    }
}

/// Where a deferred load reads the graph nodes' links, codes and vectors from.
#[derive(Debug)]
pub(crate) struct SearchSource {
    dir: PathBuf,
    entry: FileEntry,
    /// `vectors.bin` (from `search.bin` version 3).
    vectors: Option<FileEntry>,
}

impl SearchSource {
    /// Reads and verifies `search.bin` for `n` slots of `dim` floats.
    pub(crate) fn read(&self, dim: usize, n: usize) -> Result<SearchFile, IndexError> {
        read_search(
            &self.dir.join(SEARCH),
            &self.entry,
            &self.dir.join(VECTORS),
            dim,
            n,
        )
    }

    /// Reads and verifies the whole of `vectors.bin`.
    pub(crate) fn read_vectors(&self, dim: usize, n: usize) -> Result<VectorTable, IndexError> {
        let path = self.dir.join(VECTORS);
        let entry = self
            .vectors
            .as_ref()
            .ok_or_else(|| IndexError::corrupt(&path, "vectors not in manifest"))?;
        read_vectors(&path, entry, dim, n)
    }
}

/// Whether `name` is a file [`save`] or a delta save writes (hnsw_rs may pick another dump
/// basename).
fn is_saved_file_name(name: &str) -> bool {
    matches!(
        name,
        MANIFEST | MANIFEST_TMP | SLOTS | SEARCH | VECTORS | crate::delta::DELTA
    ) || name.ends_with(".hnsw.graph")
        || name.ends_with(".hnsw.data")
}

/// Checks the files a search load reads (manifest, slot table, search structures) against the
/// manifest's sizes and hashes, without keeping them in memory.
pub(crate) fn check_full(dir: &Path, manifest: &Manifest) -> Result<(), IndexError> {
    let mut checked = 0;
    for entry in &manifest.files {
        if entry.0 == SLOTS || entry.0 == SEARCH {
            verify_file(dir, entry)?;
            checked += 1;
        } else if entry.0 == VECTORS {
            verify_file(dir, entry)?;
        }
    }
    if checked < 2 && manifest.graph.is_some() {
        // An old-format directory: everything it lists is needed to load it.
        for entry in &manifest.files {
            verify_file(dir, entry)?;
        }
    }
    Ok(())
}

/// Removes a directory [`save`] wrote (complete or interrupted), file by file, and only when it
/// holds nothing but such files: anything else in it (or a link) means it is not ours, and it
/// is left alone. Returns whether it was removed.
pub(crate) fn remove_saved(dir: &Path) -> Result<bool, IndexError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| IndexError::io(dir, e))?;
    if !meta.is_dir() {
        return Ok(false);
    }
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))? {
        let entry = entry.map_err(|e| IndexError::io(dir, e))?;
        let kind = entry.file_type().map_err(|e| IndexError::io(dir, e))?;
        let name = entry.file_name();
        match name.to_str() {
            Some(n) if kind.is_file() && is_saved_file_name(n) => files.push(entry.path()),
            _ => return Ok(false),
        }
    }
    for file in files {
        fs::remove_file(&file).map_err(|e| IndexError::io(&file, e))?;
    }
    // Fails, leaving it, if something appeared meanwhile.
    fs::remove_dir(dir).map_err(|e| IndexError::io(dir, e))?;
    Ok(true)
}

fn encode_slots(index: &VectorIndex) -> Vec<u8> {
    let n = index.ids.len();
    let mut out = Vec::with_capacity(24 + n * 9);
    out.extend_from_slice(SLOTS_MAGIC);
    out.extend_from_slice(&SLOTS_VERSION.to_le_bytes());
    out.extend_from_slice(&(index.dim as u32).to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    for id in &index.ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out.extend(index.live.iter().map(|&l| u8::from(l)));
    out
}

struct SlotTable {
    dim: usize,
    ids: Vec<u64>,
    live: Vec<bool>,
}

fn decode_slots(path: &Path, bytes: &[u8]) -> Result<SlotTable, IndexError> {
    let bad = |reason: &str| IndexError::corrupt(path, reason);
    if bytes.len() < 24 || &bytes[..8] != SLOTS_MAGIC {
        return Err(bad("not a slot table"));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    if u32_at(8) != SLOTS_VERSION {
        return Err(bad("unknown slot table version"));
    }
    let dim = u32_at(12) as usize;
    let n = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or([0; 8]));
    let expected = (n as u128) * 9 + 24;
    if expected != bytes.len() as u128 {
        return Err(bad("slot table length does not match its count"));
    }
    let n = n as usize;
    let ids: Vec<u64> = bytes[24..24 + n * 8]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let mut live = Vec::with_capacity(n);
    for &b in &bytes[24 + n * 8..] {
        match b {
            0 => live.push(false),
            1 => live.push(true),
            _ => return Err(bad("bad live flag")),
        }
    }
    Ok(SlotTable { dim, ids, live })
}

pub(crate) struct Manifest {
    pub(crate) dim: usize,
    pub(crate) slots: usize,
    pub(crate) live: usize,
    graph: Option<String>,
    pub(crate) files: Vec<FileEntry>,
    /// A delta's base: its directory name beside this one and the BLAKE3 of its manifest.
    pub(crate) base: Option<(String, String)>,
    /// BLAKE3 of the whole manifest file, as a delta of this save records it.
    pub(crate) hash: String,
}

pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest, IndexError> {
    let path = dir.join(MANIFEST);
    let bad = |reason: String| IndexError::corrupt(&path, reason);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(bad("manifest missing (save never completed?)".into()));
        }
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let mut text = String::new();
    f.take(MANIFEST_MAX)
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => bad("manifest is not UTF-8".into()),
            _ => IndexError::io(&path, e),
        })?;
    let body_end = text
        .rfind("checksum=")
        .ok_or_else(|| bad("manifest has no checksum".into()))?;
    let (body, tail) = text.split_at(body_end);
    let stated = tail
        .strip_prefix("checksum=")
        .and_then(|t| t.strip_suffix('\n'))
        .ok_or_else(|| bad("malformed checksum line".into()))?;
    if blake3::hash(body.as_bytes()).to_hex().as_str() != stated {
        return Err(bad("manifest checksum mismatch".into()));
    }
    let mut m = Manifest {
        dim: 0,
        slots: 0,
        live: 0,
        graph: None,
        files: Vec::new(),
        base: None,
        hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
    };
    let mut format: Option<&str> = None;
    let (mut base, mut base_manifest) = (None, None);
    let num = |v: &str| {
        v.parse::<usize>()
            .map_err(|_| IndexError::corrupt(&path, format!("bad number {v:?}")))
    };
    for line in body.lines() {
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| bad(format!("bad line {line:?}")))?;
        match key {
            "format" => {
                if value != FORMAT && value != crate::delta::FORMAT {
                    return Err(bad(format!("unsupported format {value:?}")));
                }
                format = Some(value);
            }
            "base" => base = Some(value.to_string()),
            "base_manifest" => base_manifest = Some(value.to_string()),
            "dim" => m.dim = num(value)?,
            "slots" => m.slots = num(value)?,
            "live" => m.live = num(value)?,
            "graph" => m.graph = Some(value.to_string()).filter(|v| !v.is_empty()),
            "file" => {
                let mut parts = value.split(' ');
                let (Some(name), Some(size), Some(hash), None) =
                    (parts.next(), parts.next(), parts.next(), parts.next())
                else {
                    return Err(bad(format!("bad file line {line:?}")));
                };
                // Names come from our own writer; refuse anything that could leave `dir`.
                if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                    return Err(bad(format!("bad file name {name:?}")));
                }
                let size = size
                    .parse::<u64>()
                    .map_err(|_| bad(format!("bad size in {line:?}")))?;
                m.files.push((name.to_string(), size, hash.to_string()));
            }
            // Informational keys (build parameters) and future additions.
            _ => {}
        }
    }
    match (format, base, base_manifest) {
        (None, _, _) => return Err(bad("manifest has no format line".into())),
        (Some(FORMAT), None, None) => {}
        (Some(f), Some(name), Some(hash)) if f == crate::delta::FORMAT => {
            if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
                return Err(bad(format!("bad base name {name:?}")));
            }
            m.base = Some((name, hash));
        }
        _ => return Err(bad("base lines disagree with the format".into())),
    }
    Ok(m)
}

/// Checks `dir/name` against its manifest entry.
pub(crate) fn verify_file(dir: &Path, (name, size, hash): &FileEntry) -> Result<(), IndexError> {
    let path = dir.join(name);
    let (actual_size, actual_hash) = match hash_file(&path) {
        Ok(v) => v,
        Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(missing(&path));
        }
        Err(e) => return Err(e),
    };
    check_entry(&path, actual_size, actual_hash, *size, hash)
}

pub(crate) fn missing(path: &Path) -> IndexError {
    IndexError::corrupt(path, "file listed in manifest is missing")
}

pub(crate) fn check_entry(
    path: &Path,
    actual_size: u64,
    actual_hash: blake3::Hash,
    size: u64,
    hash: &str,
) -> Result<(), IndexError> {
    if actual_size != size {
        return Err(IndexError::corrupt(
            path,
            format!("size {actual_size}, manifest says {size}"),
        ));
    }
    if actual_hash.to_hex().as_str() != hash {
        return Err(IndexError::corrupt(path, "checksum mismatch"));
    }
    Ok(())
}

/// `(name, size, blake3 hex)` of one file, as the manifest lists it.
pub(crate) type FileEntry = (String, u64, String);

/// The saved hnsw_rs dump of a directory loaded for searching, read when the graph is needed.
#[derive(Debug)]
pub(crate) struct GraphSource {
    dir: PathBuf,
    basename: String,
    /// The manifest's entries for the dump's files: the graph file, and the data file in
    /// directories saved before the vectors were stored once.
    files: Vec<FileEntry>,
    /// The dump's node order from `search.bin`, set when that is read; needed to write the
    /// data file back when the directory has none.
    pub(crate) dump_order: OnceLock<Vec<u32>>,
}

impl GraphSource {
    /// Verifies the dump against the manifest, parses it and checks that its nodes are exactly
    /// the slots of the (already verified) `vectors` table, vector for vector.
    pub(crate) fn load(&self, dim: usize, vectors: &[f32], n: usize) -> Result<Graph, IndexError> {
        for entry in &self.files {
            verify_file(&self.dir, entry)?;
        }
        let data_name = format!("{}.hnsw.data", self.basename);
        let path = self.dir.join(&data_name);
        let graph = if self.files.iter().any(|(name, _, _)| *name == data_name) {
            Graph::load(&self.dir, &self.basename).map_err(|reason| IndexError::Graph {
                op: "load",
                dir: self.dir.clone(),
                reason,
            })?
        } else {
            self.load_writing_data(&path, dim, vectors)?
        };
        check_points(&graph, n, &path, |slot, v| {
            if v.len() != dim {
                Err(format!("graph vector of dimension {}", v.len()))
            } else if v != &vectors[slot * dim..(slot + 1) * dim] {
                Err(format!(
                    "graph vector of slot {slot} differs from the saved vectors"
                ))
            } else {
                Ok(())
            }
        })?;
        Ok(graph)
    }
}

impl GraphSource {
    /// Writes the data file hnsw_rs reads back from the vector table, parses the dump and
    /// removes the file again, whatever happened.
    fn load_writing_data(
        &self,
        path: &Path,
        dim: usize,
        vectors: &[f32],
    ) -> Result<Graph, IndexError> {
        let order = self.dump_order.get().ok_or_else(|| {
            IndexError::corrupt(self.dir.join(SEARCH), "no dump order for the graph")
        })?;
        // Left by a load that was killed: unlisted, so ours to replace.
        match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(IndexError::io(path, e));
            }
            _ => {}
        }
        let written = crate::graph::write_dump_data(path, dim, order, vectors)
            .map_err(|e| IndexError::io(path, e));
        let loaded = written.and_then(|()| {
            Graph::load(&self.dir, &self.basename).map_err(|reason| IndexError::Graph {
                op: "load",
                dir: self.dir.clone(),
                reason,
            })
        });
        let removed = fs::remove_file(path).map_err(|e| IndexError::io(path, e));
        let graph = loaded?;
        removed?;
        Ok(graph)
    }
}

/// Loads a full save, leaving `search.bin` to be read (and verified) when first needed.
pub(crate) fn load_full(
    dir: &Path,
    manifest: Manifest,
    params: IndexParams,
) -> Result<VectorIndex, IndexError> {
    params.validate()?;
    if !(1..=MAX_DIM).contains(&manifest.dim) {
        return Err(IndexError::corrupt(dir.join(MANIFEST), "bad dimension"));
    }
    let entry = |name: &str| manifest.files.iter().find(|(n, _, _)| n == name);
    let search = entry(SEARCH);
    let graph_files: Vec<FileEntry> = match &manifest.graph {
        None => Vec::new(),
        Some(base) => {
            let name = format!("{base}.hnsw.graph");
            let graph = entry(&name).cloned().ok_or_else(|| {
                IndexError::corrupt(dir.join(&name), "graph file not in manifest")
            })?;
            let name = format!("{base}.hnsw.data");
            match entry(&name) {
                Some(data) => vec![graph, data.clone()],
                // Only `search.bin` (from version 2) can stand in for the data file.
                None if search.is_some() => vec![graph],
                None => {
                    return Err(IndexError::corrupt(
                        dir.join(&name),
                        "graph file not in manifest",
                    ));
                }
            }
        }
    };
    // Verify what is read now; a new-format directory leaves its hnsw_rs dump to `GraphSource`,
    // and `read_search` hashes `search.bin` as it reads it.
    for file in &manifest.files {
        let deferred = search.is_some() && graph_files.contains(file);
        if !deferred && file.0 != SEARCH && file.0 != VECTORS {
            verify_file(dir, file)?;
        }
    }
    let slots_path = dir.join(SLOTS);
    if entry(SLOTS).is_none() {
        return Err(IndexError::corrupt(
            &slots_path,
            "slot table not in manifest",
        ));
    }
    let bytes = fs::read(&slots_path).map_err(|e| IndexError::io(&slots_path, e))?;
    let table = decode_slots(&slots_path, &bytes)?;
    drop(bytes);
    let n = table.ids.len();
    if table.dim != manifest.dim || n != manifest.slots {
        return Err(IndexError::corrupt(
            &slots_path,
            "slot table disagrees with manifest",
        ));
    }
    validate_dim(table.dim)?;
    if manifest.graph.is_none() && n > 0 {
        return Err(IndexError::corrupt(dir.join(MANIFEST), "graph missing"));
    }

    let mut index = VectorIndex::new(table.dim, params)?;
    index.slot_of.reserve(manifest.live);
    for (slot, (&id, &live)) in table.ids.iter().zip(&table.live).enumerate() {
        if live && index.slot_of.insert(id, slot).is_some() {
            return Err(IndexError::corrupt(
                &slots_path,
                format!("id {id} live twice"),
            ));
        }
    }
    if index.slot_of.len() != manifest.live {
        return Err(IndexError::corrupt(
            &slots_path,
            "live count disagrees with manifest",
        ));
    }
    index.ids = table.ids;
    index.live = table.live;
    index.nodes = n;
    index.base = Some(SavedBase {
        dir: dir.to_path_buf(),
        manifest_hash: manifest.hash.clone(),
    });

    if let Some(search) = search {
        index.search_source = Some(SearchSource {
            dir: dir.to_path_buf(),
            entry: search.clone(),
            vectors: entry(VECTORS).cloned(),
        });
        index.node_vectors = OnceLock::new();
        index.flat = OnceLock::new();
        index.graph = OnceLock::new();
        index.graph_source = manifest.graph.map(|basename| GraphSource {
            dir: dir.to_path_buf(),
            basename,
            files: graph_files,
            dump_order: OnceLock::new(),
        });
        return Ok(index);
    }
    // A directory saved before `search.bin` existed: everything comes from the hnsw_rs dump.
    let mut vectors = VectorTable::zeroed(n * index.dim);
    if let Some(base) = &manifest.graph {
        let graph = Graph::load(dir, base).map_err(|reason| IndexError::Graph {
            op: "load",
            dir: dir.to_owned(),
            reason,
        })?;
        let dim = index.dim;
        let vectors = &mut vectors;
        check_points(
            &graph,
            n,
            &dir.join(format!("{base}.hnsw.data")),
            |slot, v| {
                if v.len() != dim {
                    return Err(format!("graph vector of dimension {}", v.len()));
                }
                vectors[slot * dim..(slot + 1) * dim].copy_from_slice(v);
                Ok(())
            },
        )?;
        index.graph = OnceLock::from(graph);
    }
    index.node_vectors = OnceLock::from(vectors);
    Ok(index)
}

/// Calls `each(slot, vector)` for every graph node, checking that nodes and slots `0..n` match
/// one to one; the first problem found (by the check or by `each`) makes `path` corrupt.
fn check_points(
    graph: &Graph,
    n: usize,
    path: &Path,
    mut each: impl FnMut(usize, &[f32]) -> Result<(), String>,
) -> Result<(), IndexError> {
    if graph.len() != n {
        return Err(IndexError::corrupt(
            path,
            format!("graph has {} nodes, slot table {n}", graph.len()),
        ));
    }
    let mut seen = vec![false; n];
    let mut problem: Option<String> = None;
    graph.for_each_point(|slot, v| {
        if problem.is_some() {
            return;
        }
        if slot >= n || seen[slot] {
            problem = Some(format!("graph node id {slot} out of range or repeated"));
        } else {
            seen[slot] = true;
            problem = each(slot, v).err();
        }
    });
    match problem {
        Some(reason) => Err(IndexError::corrupt(path, reason)),
        None if seen.iter().all(|&s| s) => Ok(()),
        None => Err(IndexError::corrupt(path, "graph is missing nodes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(dir: &Path) -> VectorIndex {
        let items = (0..300u64)
            .map(|i| {
                let v: Vec<f32> = (0..8)
                    .map(|d| ((i * 31 + d * 7) % 17) as f32 + 1.0)
                    .collect();
                (i, v)
            })
            .collect();
        let mut index = VectorIndex::build(8, IndexParams::default(), items).unwrap();
        index.save(dir).unwrap();
        index
    }

    #[test]
    fn deferred_dump_is_verified_before_hnsw_rs_parses_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("g");
        saved(&dir);
        let loaded = VectorIndex::load(&dir, IndexParams::default()).unwrap();
        assert!(loaded.graph.get().is_none(), "load parsed the hnsw_rs dump");
        let source = loaded.graph_source.as_ref().unwrap();
        let n = loaded.ids.len();
        let vectors = loaded.node_table().unwrap();
        // The vectors are saved once: hnsw_rs's data file is written back for its loader and
        // removed again.
        let data = dir.join("graph.hnsw.data");
        assert!(!data.exists());
        assert!(source.load(8, vectors, n).is_ok());
        assert!(!data.exists());
        // A data file left by a killed load is replaced.
        fs::write(&data, b"left over").unwrap();
        assert!(source.load(8, vectors, n).is_ok());
        assert!(!data.exists());
        {
            let path = dir.join("graph.hnsw.graph");
            let original = fs::read(&path).unwrap();
            let mut bytes = original.clone();
            bytes[original.len() / 2] ^= 1;
            fs::write(&path, &bytes).unwrap();
            let err = source.load(8, vectors, n).err().unwrap();
            assert!(matches!(err, IndexError::Corrupt { .. }), "{err:?}");
            fs::remove_file(&path).unwrap();
            let err = source.load(8, vectors, n).err().unwrap();
            assert!(matches!(err, IndexError::Corrupt { .. }), "{err:?}");
            fs::write(&path, &original).unwrap();
        }
        // A dump order that is not the graph file's is an error (hnsw_rs's assertion, caught),
        // and the written file is still removed.
        let mut order = source.dump_order.get().unwrap().clone();
        order.swap(0, n - 1);
        let wrong = GraphSource {
            dir: source.dir.clone(),
            basename: source.basename.clone(),
            files: source.files.clone(),
            dump_order: OnceLock::from(order),
        };
        assert!(wrong.load(8, vectors, n).is_err());
        assert!(!data.exists());
    }
}
