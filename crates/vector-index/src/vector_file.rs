//! The exact f32 vectors of a saved index, read one at a time.
//!
//! A process that only searches walks the code table and needs the f32 vectors of just the
//! candidates it rescores, so it reads those rows with positioned reads instead of loading the
//! whole table (1.6 GB at a million vectors). Each row is checked against its own checksum,
//! stored in the (fully verified) `search.bin`, before a byte of it is used: a damaged row is an
//! error naming the file, never a wrong score.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::IndexError;

/// An open `vectors.bin` with the checksum of every row.
pub(crate) struct VectorFile {
    path: PathBuf,
    file: File,
    dim: usize,
    sums: Vec<u64>,
}

impl std::fmt::Debug for VectorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorFile")
            .field("path", &self.path)
            .finish()
    }
}

impl VectorFile {
    /// Opens `path`, which must hold `sums.len()` rows of `dim` floats.
    pub(crate) fn open(path: &Path, dim: usize, sums: Vec<u64>) -> Result<VectorFile, IndexError> {
        let size = (sums.len() as u64)
            .checked_mul(4 * dim as u64)
            .ok_or_else(|| IndexError::corrupt(path, "too many rows"))?;
        let file = crate::search_file::open_sized(path, size)?;
        Ok(VectorFile {
            path: path.to_path_buf(),
            file,
            dim,
            sums,
        })
    }

    /// Reads the vector of `slot` into `row` (`dim` floats), checked against its checksum.
    pub(crate) fn read_row(&self, slot: usize, row: &mut [f32]) -> Result<(), IndexError> {
        let expected = *self
            .sums
            .get(slot)
            .ok_or_else(|| IndexError::corrupt(&self.path, format!("no row {slot}")))?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut row[..self.dim]);
        read_at(&self.file, bytes, (slot * 4 * self.dim) as u64)
            .map_err(|e| IndexError::io(&self.path, e))?;
        if bytes_sum(bytes) != expected {
            return Err(IndexError::corrupt(
                &self.path,
                format!("vector of slot {slot} does not match its checksum"),
            ));
        }
        #[cfg(target_endian = "big")]
        for x in row.iter_mut() {
            *x = f32::from_bits(u32::from_le(x.to_bits()));
        }
        Ok(())
    }

    /// The vector of `slot`, checked against its checksum.
    #[cfg(test)]
    fn row(&self, slot: usize) -> Result<Vec<f32>, IndexError> {
        let mut row = vec![0.0; self.dim];
        self.read_row(slot, &mut row)?;
        Ok(row)
    }
}

/// Checksum of one row as stored (little-endian floats): its XXH3-64. It guards each row a
/// search reads against damage, not against tampering: `vectors.bin` as a whole is also in the
/// manifest with its BLAKE3, which every sync and `verify` check.
pub(crate) fn row_sum(row: &[f32]) -> u64 {
    #[cfg(target_endian = "little")]
    return bytes_sum(bytemuck::cast_slice(row));
    #[cfg(target_endian = "big")]
    return bytes_sum(
        &row.iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
}

fn bytes_sum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let rows = [[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let bytes: Vec<u8> = rows
            .iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let sums = rows.iter().map(|r| row_sum(r)).collect();
        let file = VectorFile::open(&path, 3, sums).unwrap();
        assert_eq!(file.row(1).unwrap(), rows[1]);
        assert!(file.row(2).is_err());

        let mut damaged = bytes.clone();
        damaged[13] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        let sums = rows.iter().map(|r| row_sum(r)).collect();
        let file = VectorFile::open(&path, 3, sums).unwrap();
        assert_eq!(file.row(0).unwrap(), rows[0]);
        let e = file.row(1).unwrap_err().to_string();
        assert!(e.contains("vectors.bin") && e.contains("checksum"), "{e}");

        let sums = rows.iter().map(|r| row_sum(r)).collect();
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(VectorFile::open(&path, 3, sums).is_err());
    }
}
