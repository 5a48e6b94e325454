//! Deltas: a save that holds only what changed since a full save beside it.
//!
//! ```text
//! <dir>/delta.bin   "RVIXDELT", u32 version, u32 dim, u64 base slots b, u64 pending n,
//!                   b x u8 live flag of each base slot, n x u64 pending id,
//!                   n x dim x f32 pending vectors, slot-major (all LE)
//! <dir>/MANIFEST    format=rag-vector-index/delta-1, base=<sibling directory name>,
//!                   base_manifest=<blake3 of the base's MANIFEST>, the delta's file line and
//!                   checksum, as in a full save
//! ```
//!
//! A delta is cumulative: it states every base slot's live flag and every live vector inserted
//! since the base, so loading reads one delta, never a chain. Its size is bounded because
//! [`save_incremental`](crate::VectorIndex::save_incremental) folds the pending vectors into a
//! new full save once they pass [`delta_limit`](crate::VectorIndex::delta_limit). The base is
//! named together with the hash of its manifest: a delta never applies to another save that
//! took the same directory name.

use std::fs;
use std::path::{Path, PathBuf};

use crate::persist::{
    FileEntry, Manifest, SavedBase, check_full, hash_file, load_full, prepare_dir,
    publish_manifest, read_manifest, verify_file, write_new_parts,
};
use crate::{IndexError, IndexParams, VectorIndex};

pub(crate) const FORMAT: &str = "rag-vector-index/delta-1";
pub(crate) const DELTA: &str = "delta.bin";
const MAGIC: &[u8; 8] = b"RVIXDELT";
const VERSION: u32 = 1;
/// Magic, version, dim, base slots, pending count.
const HEADER: usize = 8 + 4 + 4 + 8 + 8;

/// Writes the delta of `index` against `base` into `dir`. Returns `false`, writing nothing,
/// when `base` is no longer the save the index was loaded from (the caller saves in full).
pub(crate) fn save(index: &VectorIndex, base: &SavedBase, dir: &Path) -> Result<bool, IndexError> {
    let Some(name) = base.dir.file_name().and_then(|n| n.to_str()) else {
        return Ok(false);
    };
    match read_manifest(&base.dir) {
        Ok(m) if m.hash == base.manifest_hash && m.base.is_none() && m.slots == index.nodes => {}
        Ok(_) => return Ok(false),
        Err(e) => {
            log::warn!("{e}; saving in full instead of as a delta");
            return Ok(false);
        }
    }
    let created = prepare_dir(dir)?;
    let dim = index.dim;
    let pending: Vec<usize> = (index.nodes..index.ids.len())
        .filter(|&slot| index.live[slot])
        .collect();
    let mut head = Vec::with_capacity(HEADER + index.nodes + pending.len() * 8);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&(dim as u32).to_le_bytes());
    head.extend_from_slice(&(index.nodes as u64).to_le_bytes());
    head.extend_from_slice(&(pending.len() as u64).to_le_bytes());
    head.extend(index.live[..index.nodes].iter().map(|&l| u8::from(l)));
    for &slot in &pending {
        head.extend_from_slice(&index.ids[slot].to_le_bytes());
    }
    let mut vectors = Vec::with_capacity(pending.len() * dim);
    for &slot in &pending {
        let p = slot - index.nodes;
        vectors.extend_from_slice(&index.pending[p * dim..(p + 1) * dim]);
    }
    let path = dir.join(DELTA);
    write_new_parts(&path, &[&head], &vectors)?;
    let (size, hash) = hash_file(&path)?;

    let mut manifest = String::new();
    manifest.push_str(&format!("format={FORMAT}\n"));
    manifest.push_str(&format!("dim={dim}\n"));
    manifest.push_str(&format!("slots={}\n", index.nodes + pending.len()));
    manifest.push_str(&format!("live={}\n", index.len()));
    manifest.push_str(&format!("base={name}\n"));
    manifest.push_str(&format!("base_manifest={}\n", base.manifest_hash));
    manifest.push_str(&format!("file={DELTA} {size} {}\n", hash.to_hex()));
    publish_manifest(dir, &mut manifest, created)?;
    Ok(true)
}

/// The base directory a delta in `dir` names.
fn base_dir(dir: &Path, name: &str) -> PathBuf {
    dir.parent().unwrap_or(Path::new("")).join(name)
}

/// The base of the save in `dir`, if it is a delta.
pub(crate) fn saved_base(dir: &Path) -> Result<Option<PathBuf>, IndexError> {
    Ok(read_manifest(dir)?
        .base
        .map(|(name, _)| base_dir(dir, &name)))
}

/// The base's manifest, checked to be the full save the delta in `dir` was written against.
fn base_manifest(dir: &Path, name: &str, hash: &str) -> Result<(PathBuf, Manifest), IndexError> {
    let base = base_dir(dir, name);
    let manifest = read_manifest(&base)?;
    if manifest.hash != hash || manifest.base.is_some() {
        return Err(IndexError::corrupt(
            dir.join("MANIFEST"),
            format!("base {name} is not the full save this delta was written against"),
        ));
    }
    Ok((base, manifest))
}

fn delta_entry<'a>(dir: &Path, manifest: &'a Manifest) -> Result<&'a FileEntry, IndexError> {
    manifest
        .files
        .iter()
        .find(|(name, _, _)| name == DELTA)
        .ok_or_else(|| IndexError::corrupt(dir.join(DELTA), "delta not in manifest"))
}

/// Checks a save (a delta together with its base) without loading it.
pub(crate) fn check_saved(dir: &Path) -> Result<(), IndexError> {
    let manifest = read_manifest(dir)?;
    let Some((name, hash)) = &manifest.base else {
        return check_full(dir, &manifest);
    };
    verify_file(dir, delta_entry(dir, &manifest)?)?;
    let (base, base_manifest) = base_manifest(dir, name, hash)?;
    check_full(&base, &base_manifest)
}

/// Loads the save in `dir`: a full one directly, a delta as its base with the delta applied.
pub(crate) fn load(dir: &Path, params: IndexParams) -> Result<VectorIndex, IndexError> {
    let manifest = read_manifest(dir)?;
    let Some((name, hash)) = manifest.base.clone() else {
        return load_full(dir, manifest, params);
    };
    let entry = delta_entry(dir, &manifest)?.clone();
    let (base, base_manifest) = base_manifest(dir, &name, &hash)?;
    let mut index = load_full(&base, base_manifest, params)?;
    let path = dir.join(DELTA);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(IndexError::corrupt(
                &path,
                "file listed in manifest is missing",
            ));
        }
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    if bytes.len() as u64 != entry.1 || blake3::hash(&bytes).to_hex().as_str() != entry.2 {
        return Err(IndexError::corrupt(
            &path,
            "does not match its manifest entry",
        ));
    }
    apply(&path, &bytes, &mut index)?;
    if index.len() != manifest.live || index.ids.len() != manifest.slots {
        return Err(IndexError::corrupt(
            &path,
            "counts disagree with the manifest",
        ));
    }
    Ok(index)
}

/// Applies a verified delta file to its freshly loaded base.
fn apply(path: &Path, bytes: &[u8], index: &mut VectorIndex) -> Result<(), IndexError> {
    let bad = |reason: &str| IndexError::corrupt(path, reason);
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(bad("not a delta file"));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    if u32_at(8) != VERSION {
        return Err(bad("unknown delta version"));
    }
    let dim = index.dim;
    if u32_at(12) as usize != dim || u64_at(16) != index.nodes as u64 {
        return Err(bad("delta disagrees with its base"));
    }
    let base_slots = index.nodes;
    let n = u64_at(24);
    let expected = (HEADER + base_slots) as u128 + n as u128 * (8 + 4 * dim as u128);
    if expected != bytes.len() as u128 {
        return Err(bad("delta length does not match its counts"));
    }
    let n = n as usize;
    let flags = &bytes[HEADER..HEADER + base_slots];
    for (slot, &flag) in flags.iter().enumerate() {
        match (flag, index.live[slot]) {
            (1, true) | (0, false) => {}
            (0, true) => {
                index.live[slot] = false;
                index.slot_of.remove(&index.ids[slot]);
            }
            (1, false) => return Err(bad("delta revives a deleted base slot")),
            _ => return Err(bad("bad live flag")),
        }
    }
    let ids_at = HEADER + base_slots;
    let floats_at = ids_at + n * 8;
    let vectors: &[u8] = &bytes[floats_at..];
    index.pending.reserve(n * dim);
    for i in 0..n {
        let id = u64_at(ids_at + i * 8);
        if index.slot_of.contains_key(&id) {
            return Err(IndexError::corrupt(path, format!("id {id} live twice")));
        }
        let row = &vectors[i * dim * 4..(i + 1) * dim * 4];
        let v: Vec<f32> = row
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(IndexError::corrupt(
                path,
                format!("id {id}: non-finite vector"),
            ));
        }
        index.pending.extend_from_slice(&v);
        index.push_slot(id);
    }
    Ok(())
}
