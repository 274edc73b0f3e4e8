//! E57 (ASTM E2807) reading and writing through the `e57` crate.
//!
//! Reading uses the crate for the header and the XML, and decodes each scan's (`data3D` entry's) compressed
//! vector section itself: the crate's iterators allocate per point and per value (several times slower, see
//! `decode_scan`), and its "simple" reader drops time stamps and always normalises intensity. A unit test checks
//! our decoder against the crate's raw reader value for value on the shared real files. Then:
//! - the scan's pose is applied in f64 (`world = R p + t`; a missing pose is the identity, as the standard
//!   says), then the cloud origin is chosen with [`crate::cloud::origin_for`] before positions become f32;
//! - spherical coordinates are converted to cartesian when a point has no valid cartesian coordinate;
//! - points whose position is not known are skipped: `cartesianInvalidState` other than 0 (1 = direction
//!   only, 2 = no direction) with no valid spherical coordinate, or `sphericalInvalidState` other than 0 with
//!   no valid cartesian one. A direction without a range is no point we can place in a map;
//! - intensity is kept as stored (scale and offset applied, **not** normalised by `intensityLimits`), so it
//!   round-trips exactly; most scanners store 0..1 so this is usually the normalised value anyway. Points
//!   flagged `isIntensityInvalid` get 0;
//! - colour is normalised by `colorLimits` (else the record's range) and widened to 16 bits, so 8-bit colour
//!   becomes `v * 257`; points flagged `isColorInvalid` get black;
//! - `timeStamp` becomes [`Cloud::time`] (seconds since the scan's acquisition start; invalid stamps get 0);
//!   `returnIndex` (0-based) becomes [`Cloud::return_number`] (1-based), `returnCount` becomes
//!   [`Cloud::number_of_returns`]; `rowIndex` / `columnIndex` become extra dimensions `row` / `column` (I32);
//! - when scans are merged an attribute is kept only if every scan has it (like [`Cloud::append`]).
//!
//! Writing puts one `data3D` entry per scan when the cloud's scans partition its points in order (points
//! written in the scan frame, with the pose), else one scan with the identity pose.

//! The files: `read.rs` (the file, its scans and the merged cloud), `section.rs` (a scan's compressed vector
//! section, decoded here), `sink.rs` (one scan's values into its columns, pose applied) and `write.rs`.

mod read;
mod section;
mod sink;
#[cfg(test)]
mod tests;
mod write;

use std::path::Path;

use crate::io::ReadOptions;
use crate::{Cloud, Result};

use read::{assemble, decode};

pub use write::write;

/// Read an E57 file held in `data`, merging every scan into one cloud with each scan's pose applied.
/// `meta.scans` gets one entry per scan (its point range and `world_from_scan` pose).
pub fn read_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    let (scans, info) = decode(data, path)?;
    assemble(&scans, &info, path)
}

/// Read an E57 file held in `data` as one cloud per scan (poses applied, each with one [`ScanInfo`]).
///
/// [`ScanInfo`]: crate::ScanInfo
pub fn read_scans_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Vec<Cloud>> {
    let (scans, info) = decode(data, path)?;
    scans
        .into_iter()
        .map(|s| assemble(std::slice::from_ref(&s), &info, path))
        .collect()
}
