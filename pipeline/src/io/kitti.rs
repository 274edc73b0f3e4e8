//! KITTI Velodyne `.bin`: a bare array of float32 little-endian `x y z intensity` records, nothing else.

use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::io::fields::{CHUNK, Column, Target, assemble, decode_column};
use crate::io::{ReadOptions, WriteOptions};
use crate::{Cloud, Error, Result, ScalarKind};

const RECORD: usize = 16;

/// Parse a KITTI `.bin` buffer. The size must be a multiple of 16 bytes; coordinates must be finite.
pub fn read_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    if !data.len().is_multiple_of(RECORD) {
        return Err(Error::format(
            path,
            format!("byte {}", data.len() - data.len() % RECORD),
            format!(
                "file size {} is not a multiple of 16 (float32 x y z intensity records)",
                data.len()
            ),
        ));
    }
    let n = data.len() / RECORD;
    let mut cols = Vec::with_capacity(4);
    for (k, name) in ["x", "y", "z", "intensity"].into_iter().enumerate() {
        let values = decode_column(data, n, 0, RECORD, 4 * k, ScalarKind::F32, false, false)
            .ok_or_else(|| Error::format(path, "records", "records run past the end"))?;
        cols.push(Column {
            name: name.to_string(),
            target: [Target::X, Target::Y, Target::Z, Target::Intensity][k].clone(),
            kind: ScalarKind::F32,
            values,
        });
    }
    let mut cloud = assemble(path, None, cols, n)?;
    cloud.meta.format = Some("KITTI bin".to_string());
    Ok(cloud)
}

/// Write `cloud` as KITTI `.bin` (world coordinates as float32; intensity 0 when absent). Other attributes
/// cannot be stored and are dropped.
pub fn write(cloud: &Cloud, path: &Path, _opts: &WriteOptions) -> Result<()> {
    let n = cloud.len();
    let mut buf = vec![0u8; n * RECORD];
    buf.par_chunks_mut(CHUNK * RECORD)
        .enumerate()
        .for_each(|(ci, chunk)| {
            for (j, r) in chunk.chunks_exact_mut(RECORD).enumerate() {
                let i = ci * CHUNK + j;
                let Some(p) = cloud.positions().get(i) else {
                    continue;
                };
                let inten = cloud
                    .intensity()
                    .and_then(|v| v.get(i))
                    .copied()
                    .unwrap_or(0.0);
                let vals = [
                    (cloud.origin[0] + p[0] as f64) as f32,
                    (cloud.origin[1] + p[1] as f64) as f32,
                    (cloud.origin[2] + p[2] as f64) as f32,
                    inten,
                ];
                for (dst, v) in r.chunks_exact_mut(4).zip(vals) {
                    dst.copy_from_slice(&v.to_le_bytes());
                }
            }
        });
    write_atomic_buffered(path, |w| w.write_all(&buf).map_err(io_err(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_must_be_a_multiple_of_16() {
        let e = read_bytes(&[0u8; 17], Path::new("a.bin"), &ReadOptions::default()).unwrap_err();
        assert!(e.to_string().contains("17"), "{e}");
        let c = read_bytes(&[0u8; 32], Path::new("a.bin"), &ReadOptions::default()).unwrap();
        assert_eq!(c.len(), 2);
        assert!(c.intensity().is_some());
    }
}
