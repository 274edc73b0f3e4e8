//! LAS 1.0–1.4 and LAZ reading and writing.
//!
//! Reading parses the header, VLRs and EVLRs here (every offset and count is checked against the bytes present
//! before anything is allocated from it) and decodes point records with fixed offsets, in parallel, straight
//! into the cloud's arrays, allocated once at their final size (zeroed pages: decoding is the only pass over
//! them). LAZ point data is decompressed with the `laz` crate's record decoders one chunk per parallel job,
//! each chunk a piece of 64 KiB of records at a time into a small buffer that is converted into its place in
//! the arrays while still in cache (no chunk-sized buffer: those stayed resident in the worker threads'
//! allocator arenas); the chunk table, item list and (for LAS 1.4 layered chunks) layer sizes are validated
//! first, because `laz` allocates from them without checking. Extra dimensions are held at their stored width
//! (scan angle i8 or f32, user data u8, point source id u16). Fields that [`ReadOptions`] skips are neither
//! allocated nor decoded (their arrays stay empty and every decode loop runs over its array).
//!
//! Why our own reader and not the `las` crate's (issue 12): measured 2026-11-23 14:53 UTC (load average 3.8,
//! `aerie bench read --repeat 7`, median), a prototype decoding with `las::Reader::read_all` (laz-parallel) into
//! the same columns against this reader: lone_star_tls.laz 220 ms vs 167 ms, the same points as LAS 38.9 ms vs
//! 17.0 ms, autzen_trim.laz 49.8 vs 50.9 ms, las14_fmt8_extra_bytes.laz 365 vs 379 ms (both within noise),
//! autzen_trim.las 3.5 vs 2.2 ms. The crate decodes the whole file into one record buffer before we can
//! convert it (17.6 MB more memory for lone_star) and does not check chunk tables or layer sizes before `laz`
//! allocates from them, which this reader does for the fuzz targets' sake. Kept: this reader; the `las` crate
//! writes.
//!
//! Writing builds the point records here and hands them to the `las` crate's writer in batches (it compresses
//! LAZ in parallel).
//!
//! Attribute mapping (both directions):
//! - intensity <-> `Cloud::intensity` (u16 as f32; written scaled by 65535 when every value is in [0, 1]);
//! - RGB <-> `Cloud::color` (files whose channels never exceed 255 hold 8-bit colour in 16-bit fields, a
//!   common convention: they are widened by 257 so 255 -> 65535);
//! - GPS time <-> `time`; return number, number of returns, classification <-> their fields;
//! - NIR, scan angle (degrees), user data and point source id <-> extra dims `nir` (U16), `scan_angle` (I8 for
//!   formats 0-5, F32 for 6-10), `user_data` (U8), `point_source_id` (U16);
//! - extra-bytes dimensions <-> extra dims by name (scaled ones become F64); normals (`nx`, `ny`, `nz`), `gamma`
//!   and `ring` are written as extra-bytes dimensions.
//!
//! The files, one layer each, in the order a read goes through them (each uses only those before it):
//! `header.rs` (the header and the VLRs), `layout.rs` (where each field lives in a record, and which are read),
//! `decode.rs` (uncompressed records into the columns, and the columns into a cloud), `laz.rs` (compressed
//! points), and `write.rs` (the writer).

mod decode;
mod header;
mod layout;
mod laz;
#[cfg(test)]
mod tests;
mod write;

use std::path::Path;

use crate::io::ReadOptions;
use crate::io::fields::data_after_points;
use crate::{Cloud, Result};

use decode::{Columns, read_las_points};
use header::{Header, le_u32, le_u64, parse_header};
use layout::Layout;
use laz::read_laz_points;

pub use write::write;
pub(crate) use write::{Records, grid_position};

/// Parse a LAS or LAZ file held in `data` (the whole file). `path` names it in errors.
///
/// Handles LAS 1.0–1.4, point formats 0–10, compressed or not (LAZ is recognised by the point format's
/// compression bit, so a `.las` name holding LAZ data reads fine). The cloud's origin is the minimum corner of
/// the header bounds rounded down to whole metres (or the first point, when the bounds do not contain it).
///
/// Columns that `opts` skips ([`ReadOptions::skip`], [`ReadOptions::skip_extras`]) are neither allocated nor
/// decoded; the names of those the file holds go to `meta.dropped`, as [`crate::io::take_skipped`] would record
/// them after reading everything.
pub fn read_bytes(data: &[u8], path: &Path, opts: &ReadOptions) -> Result<Cloud> {
    let header = parse_header(data, path)?;
    let layout = Layout::new(&header, path)?.skipping(opts);
    let cols = if header.count == 0 {
        Columns::zeroed(&layout, 0)
    } else if header.compressed {
        read_laz_points(data, path, &header, &layout)?
    } else {
        read_las_points(data, path, &header, &layout)?
    };
    let mut cloud = cols.into_cloud(&header, &layout, path)?;
    if !header.compressed {
        cloud
            .meta
            .read_warnings
            .extend(records_after_points(data, &header, path));
    }
    Ok(cloud)
}

/// The warning for whole point records between the declared points and what follows them in an uncompressed
/// file (LAS 1.3's internal waveform data or LAS 1.4's extended records, else the end of the file).
fn records_after_points(data: &[u8], header: &Header, path: &Path) -> Option<String> {
    let n = usize::try_from(header.count).ok()?;
    let end_of_points = header
        .offset_to_points
        .checked_add(n.checked_mul(header.record_len)?)?;
    let mut region_end = data.len();
    if header.version >= (1, 3) {
        // Offsets of 0 (or, for waveforms, ones that point before the points: external data) name nothing here.
        let waveforms = le_u64(data, 227).unwrap_or(0);
        let evlrs = if header.version >= (1, 4) && le_u32(data, 243).unwrap_or(0) > 0 {
            le_u64(data, 235).unwrap_or(0)
        } else {
            0
        };
        for at in [waveforms, evlrs] {
            if let Ok(at) = usize::try_from(at)
                && at >= end_of_points
            {
                region_end = region_end.min(at);
            }
        }
    }
    data_after_points(
        path,
        n,
        header.record_len,
        region_end.saturating_sub(end_of_points),
    )
}
