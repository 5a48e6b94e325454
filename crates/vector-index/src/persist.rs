//! On-disk format: hnsw_rs's two dump files, a slot table, and a manifest written last.
//!
//! ```text
//! <dir>/graph.hnsw.graph   hnsw_rs graph dump (node ids are slots)
//! <dir>/graph.hnsw.data    hnsw_rs vector dump
//! <dir>/slots.bin          "RVIXSLOT", u32 version, u32 dim, u64 n, n x u64 id, n x u8 live (LE)
//! <dir>/MANIFEST           key=value lines, one `file=<name> <size> <blake3>` per file,
//!                          closed by `checksum=<blake3 of every byte before that line>`
//! ```
//!
//! The manifest is written to a temporary name, fsynced and renamed, so its presence means
//! every other file was complete and synced. `load` verifies sizes and hashes before hnsw_rs
//! parses a byte: its loader asserts, unwraps and even exits on malformed input.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::graph::Graph;
use crate::params::{MAX_DIM, validate_dim};
use crate::table::VectorTable;
use crate::{IndexError, IndexParams, VectorIndex};

const FORMAT: &str = "rag-vector-index/1";
const MANIFEST: &str = "MANIFEST";
const MANIFEST_TMP: &str = "MANIFEST.tmp";
const SLOTS: &str = "slots.bin";
const SLOTS_MAGIC: &[u8; 8] = b"RVIXSLOT";
const SLOTS_VERSION: u32 = 1;
/// A manifest is a few hundred bytes; anything bigger is not ours.
const MANIFEST_MAX: u64 = 64 * 1024;

fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| IndexError::io(dir, e))
}

fn hash_file(path: &Path) -> Result<(u64, blake3::Hash), IndexError> {
    let mut f = File::open(path).map_err(|e| IndexError::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| IndexError::io(path, e))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((size, hasher.finalize()))
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| IndexError::io(path, e))?;
    let mut w = BufWriter::new(f);
    w.write_all(bytes).map_err(|e| IndexError::io(path, e))?;
    let f = w
        .into_inner()
        .map_err(|e| IndexError::io(path, e.into_error()))?;
    f.sync_all().map_err(|e| IndexError::io(path, e))
}

/// Creates `dir` or checks that it is an empty directory; returns whether it was created.
fn prepare_dir(dir: &Path) -> Result<bool, IndexError> {
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

pub(crate) fn save(index: &VectorIndex, dir: &Path) -> Result<(), IndexError> {
    let created = prepare_dir(dir)?;
    // A graph with no node has no entry point and hnsw_rs cannot dump it; an empty index saves
    // the slot table and manifest only.
    let basename = if index.graph.len() > 0 {
        Some(
            index
                .graph
                .dump(dir)
                .map_err(|reason| IndexError::Graph { op: "dump", reason })?,
        )
    } else {
        None
    };
    let mut files: Vec<String> = Vec::new();
    if let Some(base) = &basename {
        for ext in ["hnsw.graph", "hnsw.data"] {
            let name = format!("{base}.{ext}");
            let path = dir.join(&name);
            // hnsw_rs flushes but never syncs its files.
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| IndexError::io(&path, e))?;
            files.push(name);
        }
    }
    write_new(&dir.join(SLOTS), &encode_slots(index))?;
    files.push(SLOTS.to_string());

    let (m, ef_c) = index.graph.build_params();
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

struct Manifest {
    dim: usize,
    slots: usize,
    live: usize,
    graph: Option<String>,
    files: Vec<(String, u64, String)>,
}

fn read_manifest(dir: &Path) -> Result<Manifest, IndexError> {
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
    };
    let mut format_ok = false;
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
                if value != FORMAT {
                    return Err(bad(format!("unsupported format {value:?}")));
                }
                format_ok = true;
            }
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
    if !format_ok {
        return Err(bad("manifest has no format line".into()));
    }
    Ok(m)
}

pub(crate) fn load(dir: &Path, params: IndexParams) -> Result<VectorIndex, IndexError> {
    params.validate()?;
    let manifest = read_manifest(dir)?;
    if !(1..=MAX_DIM).contains(&manifest.dim) {
        return Err(IndexError::corrupt(dir.join(MANIFEST), "bad dimension"));
    }
    for (name, size, hash) in &manifest.files {
        let path = dir.join(name);
        let (actual_size, actual_hash) = match hash_file(&path) {
            Ok(v) => v,
            Err(IndexError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::corrupt(
                    &path,
                    "file listed in manifest is missing",
                ));
            }
            Err(e) => return Err(e),
        };
        if actual_size != *size {
            return Err(IndexError::corrupt(
                &path,
                format!("size {actual_size}, manifest says {size}"),
            ));
        }
        if actual_hash.to_hex().as_str() != hash {
            return Err(IndexError::corrupt(&path, "checksum mismatch"));
        }
    }
    let listed = |name: &str| manifest.files.iter().any(|(n, _, _)| n == name);
    let slots_path = dir.join(SLOTS);
    if !listed(SLOTS) {
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

    let mut index = VectorIndex::new(table.dim, params)?;
    index.vectors = VectorTable::zeroed(n * table.dim);
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

    match &manifest.graph {
        None if n == 0 => {}
        None => return Err(IndexError::corrupt(dir.join(MANIFEST), "graph missing")),
        Some(base) => {
            for ext in ["hnsw.graph", "hnsw.data"] {
                let name = format!("{base}.{ext}");
                if !listed(&name) {
                    return Err(IndexError::corrupt(
                        dir.join(&name),
                        "graph file not in manifest",
                    ));
                }
            }
            let graph = Graph::load(dir, base)
                .map_err(|reason| IndexError::Graph { op: "load", reason })?;
            fill_vectors(&mut index, &graph, dir.join(format!("{base}.hnsw.data")))?;
            index.graph = graph;
        }
    }
    Ok(index)
}

/// Copies every node's vector into the slot table, checking that nodes and slots match one to one.
fn fill_vectors(index: &mut VectorIndex, graph: &Graph, path: PathBuf) -> Result<(), IndexError> {
    let n = index.ids.len();
    let dim = index.dim;
    if graph.len() != n {
        return Err(IndexError::corrupt(
            &path,
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
        } else if v.len() != dim {
            problem = Some(format!("graph vector of dimension {}", v.len()));
        } else {
            seen[slot] = true;
            index.vectors[slot * dim..(slot + 1) * dim].copy_from_slice(v);
        }
    });
    match problem {
        Some(reason) => Err(IndexError::corrupt(&path, reason)),
        None if seen.iter().all(|&s| s) => Ok(()),
        None => Err(IndexError::corrupt(&path, "graph is missing nodes")),
    }
}
