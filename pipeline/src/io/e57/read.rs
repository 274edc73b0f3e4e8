//! Reading an E57 file: the header and XML through the `e57` crate (record counts checked against the file
//! size), each scan decoded, and the scans merged into clouds.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use e57::{E57Reader, PointCloud, RecordDataType};

use super::section::{Pages, decode_scan};
use super::sink::{ScanData, scan_place};
use crate::cloud::{Columns, origin_for};
use crate::{Cloud, Error, ExtraDim, Result, ScanInfo};

/// Size of the fixed binary header at the start of every E57 file.
const HEADER_SIZE: usize = 48;

/// File-level facts every cloud read from the file carries.
pub(super) struct FileInfo {
    format: String,
    crs_wkt: Option<String>,
}

pub(super) fn decode(data: &[u8], path: &Path) -> Result<(Vec<ScanData>, FileInfo)> {
    if data.len() < HEADER_SIZE {
        return Err(Error::format(
            path,
            "file header",
            format!(
                "file is {} bytes, an e57 header needs {HEADER_SIZE}",
                data.len()
            ),
        ));
    }
    if !data.starts_with(b"ASTM-E57") {
        return Err(Error::format(
            path,
            "file header, byte 0",
            "expected the signature \"ASTM-E57\"",
        ));
    }
    // The e57 crate is written to avoid panics, and so is our section decoder, but both handle untrusted bytes
    // and a panic there must not take the caller down: any panic becomes a format error naming the file.
    match catch_unwind(AssertUnwindSafe(|| decode_unchecked(data, path))) {
        Ok(r) => r,
        Err(_) => Err(Error::format(
            path,
            "e57 decoder",
            "the decoder failed on corrupt contents",
        )),
    }
}

fn decode_unchecked(data: &[u8], path: &Path) -> Result<(Vec<ScanData>, FileInfo)> {
    let reader =
        E57Reader::new(Cursor::new(data)).map_err(|e| crate_err(path, "header and xml", &e))?;
    let header = reader.header();
    let clouds = reader.pointclouds();
    check_record_counts(&clouds, data.len(), path)?;
    let crs_wkt = reader
        .coordinate_metadata()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let mut pages = Pages::new(data, path);
    let mut scans = Vec::with_capacity(clouds.len());
    for (si, pc) in clouds.iter().enumerate() {
        scans.push(decode_scan(&mut pages, pc, si, path)?);
    }
    let n = scans.len();
    let info = FileInfo {
        format: format!(
            "E57 {}.{} ({n} scan{})",
            header.major,
            header.minor,
            if n == 1 { "" } else { "s" }
        ),
        crs_wkt,
    };
    Ok((scans, info))
}

/// Bits one value of a record takes in the packed streams (the same rule the standard and the crate use).
pub(super) fn record_bits(dt: &RecordDataType) -> u64 {
    match dt {
        RecordDataType::Single { .. } => 32,
        RecordDataType::Double { .. } => 64,
        RecordDataType::ScaledInteger { min, max, .. } | RecordDataType::Integer { min, max } => {
            let range = *max as i128 - *min as i128;
            if range > 0 {
                u64::from(range.ilog2()) + 1
            } else {
                0
            }
        }
    }
}

/// Reject `recordCount`s the file cannot hold before anything is allocated from them. Sections of different
/// scans cannot overlap, so the sum over all scans must fit in the file too (this also stops a crafted XML
/// from listing the same section thousands of times).
fn check_record_counts(clouds: &[PointCloud], file_len: usize, path: &Path) -> Result<()> {
    let file_bits = (file_len as u128) * 8;
    let mut total_bits: u128 = 0;
    for (si, pc) in clouds.iter().enumerate() {
        let place = || scan_place(si, pc);
        for r in &pc.prototype {
            if let RecordDataType::ScaledInteger { scale, .. } = r.data_type
                && !(scale.is_finite() && scale != 0.0)
            {
                return Err(Error::format(
                    path,
                    format!("{} prototype {:?}", place(), r.name),
                    format!("scale is {scale}; expected a finite, non-zero step"),
                ));
            }
        }
        let bits: u64 = pc.prototype.iter().map(|r| record_bits(&r.data_type)).sum();
        if bits == 0 && pc.records > 0 {
            // The crate would generate constant values without end: the count cannot be checked against data.
            return Err(Error::format(
                path,
                place(),
                format!(
                    "recordCount is {} but every field of the prototype is constant, so the file holds no \
                     data for them",
                    pc.records
                ),
            ));
        }
        total_bits += u128::from(pc.records) * u128::from(bits);
        if total_bits > file_bits {
            return Err(Error::format(
                path,
                place(),
                format!(
                    "recordCount {} at {bits} bits per point needs more data than the {file_len}-byte file \
                     holds",
                    pc.records
                ),
            ));
        }
    }
    Ok(())
}

/// Concatenate an attribute over scans when every scan has it.
fn join<T: Clone>(
    scans: &[ScanData],
    get: impl Fn(&ScanData) -> &Option<Vec<T>>,
) -> Option<Vec<T>> {
    if scans.is_empty() || scans.iter().any(|s| get(s).is_none()) {
        return None;
    }
    let n = scans.iter().map(|s| s.world.len()).sum();
    let mut out = Vec::with_capacity(n);
    for s in scans {
        if let Some(v) = get(s) {
            out.extend_from_slice(v);
        }
    }
    Some(out)
}

pub(super) fn assemble(scans: &[ScanData], info: &FileInfo, path: &Path) -> Result<Cloud> {
    let mut min = [f64::INFINITY; 3];
    for p in scans.iter().flat_map(|s| &s.world) {
        for k in 0..3 {
            min[k] = min[k].min(p[k]);
        }
    }
    let origin = if min[0].is_finite() {
        origin_for(min)
    } else {
        [0.0; 3]
    };
    let n: usize = scans.iter().map(|s| s.world.len()).sum();
    let mut positions = Vec::with_capacity(n);
    let mut meta_scans = Vec::with_capacity(scans.len());
    for s in scans {
        let start = positions.len();
        positions.extend(s.world.iter().map(|p| {
            [
                (p[0] - origin[0]) as f32,
                (p[1] - origin[1]) as f32,
                (p[2] - origin[2]) as f32,
            ]
        }));
        meta_scans.push(ScanInfo {
            name: s.name.clone(),
            points: start..positions.len(),
            world_from_scan: Some(s.world_from_scan),
        });
    }
    let mut extra = Vec::new();
    for (name, values) in [
        ("row", join(scans, |s| &s.row)),
        ("column", join(scans, |s| &s.column)),
    ] {
        if let Some(values) = values {
            extra.push(ExtraDim::new(name, values));
        }
    }
    let columns = Columns {
        positions,
        intensity: join(scans, |s| &s.intensity),
        color: join(scans, |s| &s.color),
        time: join(scans, |s| &s.time),
        return_number: join(scans, |s| &s.return_number),
        number_of_returns: join(scans, |s| &s.number_of_returns),
        extra,
        ..Columns::default()
    };
    let mut cloud = Cloud::from_columns(origin, columns)
        .map_err(|e| Error::format(path, "points", e.to_string()))?;
    cloud.meta.format = Some(info.format.clone());
    cloud.meta.crs_wkt.clone_from(&info.crs_wkt);
    cloud.meta.scans = meta_scans;
    Ok(cloud)
}

/// Map an error of the `e57` crate: unsupported features stay "unsupported", everything else is a format
/// error (we read from memory, so a read failure means the file is truncated or corrupt).
fn crate_err(path: &Path, place: &str, e: &e57::Error) -> Error {
    let msg = lowercase_first(&e.to_string());
    match e {
        e57::Error::NotImplemented { .. } => Error::unsupported(path, msg),
        _ => Error::format(path, place, msg),
    }
}

pub(super) fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
