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

use std::io::Cursor;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use e57::{
    ColorLimits, E57Reader, E57Writer, IntensityLimits, PointCloud, Quaternion, Record,
    RecordDataType, RecordName, RecordValue, Transform, Translation,
};
use nalgebra::{IsometryMatrix3, Point3, Vector3};

use crate::cloud::{Columns, origin_for};
use crate::io::atomic::write_atomic;
use crate::io::{ReadOptions, WriteOptions};
use crate::pose::Isometry3;
use crate::{Cloud, Error, ExtraDim, Result, ScanInfo};

/// Size of the fixed binary header at the start of every E57 file.
const HEADER_SIZE: usize = 48;
/// Step of the scaled-integer coordinates we write: 0.1 mm, well below any scanner's noise.
const COORD_SCALE: f64 = 1e-4;
/// Largest number of coordinate steps we store as a scaled integer (beyond it, ~429 km, we write f64).
const MAX_COORD_STEPS: f64 = 4_294_967_295.0;

/// Read an E57 file held in `data`, merging every scan into one cloud with each scan's pose applied.
/// `meta.scans` gets one entry per scan (its point range and `world_from_scan` pose).
pub fn read_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    let (scans, info) = decode(data, path)?;
    assemble(&scans, &info, path)
}

/// Read an E57 file held in `data` as one cloud per scan (poses applied, each with one [`ScanInfo`]).
pub fn read_scans_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Vec<Cloud>> {
    let (scans, info) = decode(data, path)?;
    scans
        .into_iter()
        .map(|s| assemble(std::slice::from_ref(&s), &info, path))
        .collect()
}

/// File-level facts every cloud read from the file carries.
struct FileInfo {
    format: String,
    crs_wkt: Option<String>,
}

/// One decoded scan: world coordinates in f64 and the attributes its prototype has.
struct ScanData {
    name: String,
    world_from_scan: Isometry3<f64>,
    world: Vec<[f64; 3]>,
    intensity: Option<Vec<f32>>,
    color: Option<Vec<[u16; 3]>>,
    time: Option<Vec<f64>>,
    return_number: Option<Vec<u8>>,
    number_of_returns: Option<Vec<u8>>,
    row: Option<Vec<i32>>,
    column: Option<Vec<i32>>,
}

fn decode(data: &[u8], path: &Path) -> Result<(Vec<ScanData>, FileInfo)> {
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
fn record_bits(dt: &RecordDataType) -> u64 {
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

fn scan_place(si: usize, pc: &PointCloud) -> String {
    match &pc.name {
        Some(n) => format!("data3D[{si}] \"{n}\""),
        None => format!("data3D[{si}]"),
    }
}

/// Where each field sits in a scan's prototype.
#[derive(Default)]
struct Layout {
    cartesian: Option<[usize; 3]>,
    cartesian_state: Option<usize>,
    spherical: Option<[usize; 3]>,
    spherical_state: Option<usize>,
    intensity: Option<usize>,
    intensity_invalid: Option<usize>,
    color: Option<[usize; 3]>,
    color_invalid: Option<usize>,
    time: Option<usize>,
    time_invalid: Option<usize>,
    return_index: Option<usize>,
    return_count: Option<usize>,
    row: Option<usize>,
    column: Option<usize>,
}

impl Layout {
    fn new(proto: &[Record]) -> Layout {
        let find = |name: RecordName| proto.iter().position(|r| r.name == name);
        let three = |a, b, c| match (find(a), find(b), find(c)) {
            (Some(a), Some(b), Some(c)) => Some([a, b, c]),
            _ => None,
        };
        Layout {
            cartesian: three(
                RecordName::CartesianX,
                RecordName::CartesianY,
                RecordName::CartesianZ,
            ),
            cartesian_state: find(RecordName::CartesianInvalidState),
            spherical: three(
                RecordName::SphericalRange,
                RecordName::SphericalAzimuth,
                RecordName::SphericalElevation,
            ),
            spherical_state: find(RecordName::SphericalInvalidState),
            intensity: find(RecordName::Intensity),
            intensity_invalid: find(RecordName::IsIntensityInvalid),
            color: three(
                RecordName::ColorRed,
                RecordName::ColorGreen,
                RecordName::ColorBlue,
            ),
            color_invalid: find(RecordName::IsColorInvalid),
            time: find(RecordName::TimeStamp),
            time_invalid: find(RecordName::IsTimeStampInvalid),
            return_index: find(RecordName::ReturnIndex),
            return_count: find(RecordName::ReturnCount),
            row: find(RecordName::RowIndex),
            column: find(RecordName::ColumnIndex),
        }
    }
}

/// The value of a raw record of the crate as f64 (scale and offset applied for scaled integers).
#[cfg(test)]
fn raw_value(v: &RecordValue, dt: &RecordDataType) -> f64 {
    match (v, dt) {
        (RecordValue::ScaledInteger(i), RecordDataType::ScaledInteger { scale, offset, .. }) => {
            *i as f64 * scale + offset
        }
        (RecordValue::ScaledInteger(i), _) | (RecordValue::Integer(i), _) => *i as f64,
        (RecordValue::Single(s), _) => f64::from(*s),
        (RecordValue::Double(d), _) => *d,
    }
}

/// A limit value as f64 (scaled-integer limits lose their scale in the crate, so they are not usable).
fn limit_value(v: Option<&RecordValue>) -> Option<f64> {
    match v {
        Some(RecordValue::Integer(i)) => Some(*i as f64),
        Some(RecordValue::Single(s)) => Some(f64::from(*s)),
        Some(RecordValue::Double(d)) => Some(*d),
        _ => None,
    }
}

/// Full range of a record's type, as the fallback for missing colour limits.
fn type_range(dt: &RecordDataType) -> (f64, f64) {
    match dt {
        RecordDataType::Single { min, max } => (
            min.map_or(0.0, f64::from),
            max.map_or(f64::from(f32::MAX), f64::from),
        ),
        RecordDataType::Double { min, max } => (min.unwrap_or(0.0), max.unwrap_or(f64::MAX)),
        RecordDataType::ScaledInteger {
            min,
            max,
            scale,
            offset,
        } => (*min as f64 * scale + offset, *max as f64 * scale + offset),
        RecordDataType::Integer { min, max } => (*min as f64, *max as f64),
    }
}

/// Ranges that map each colour channel to 0..1: `colorLimits` when usable, else the record's type range.
fn color_ranges(pc: &PointCloud, idx: [usize; 3]) -> [(f64, f64); 3] {
    let limits = pc.color_limits.as_ref().map(|l| {
        [
            (
                limit_value(l.red_min.as_ref()),
                limit_value(l.red_max.as_ref()),
            ),
            (
                limit_value(l.green_min.as_ref()),
                limit_value(l.green_max.as_ref()),
            ),
            (
                limit_value(l.blue_min.as_ref()),
                limit_value(l.blue_max.as_ref()),
            ),
        ]
    });
    let mut out = [(0.0, 1.0); 3];
    for (c, o) in out.iter_mut().enumerate() {
        let from_limits = limits.and_then(|l| match l[c] {
            // A missing minimum is 0 in files written by the reference library (empty element).
            (lo, Some(hi)) if hi > lo.unwrap_or(0.0) => Some((lo.unwrap_or(0.0), hi)),
            _ => None,
        });
        let from_type = pc
            .prototype
            .get(idx[c])
            .map(|r| type_range(&r.data_type))
            .filter(|(lo, hi)| hi > lo);
        if let Some(r) = from_limits.or(from_type) {
            *o = r;
        }
    }
    out
}

/// Collects one scan's points from per-point field values (by prototype index), applying the pose.
struct Sink<'a> {
    lay: Layout,
    place: String,
    path: &'a Path,
    /// The scan's pose as a rotation matrix, applied to every point.
    world_from_scan: IsometryMatrix3<f64>,
    colors: Option<[(f64, f64); 3]>,
    out: ScanData,
}

impl<'a> Sink<'a> {
    fn new(pc: &PointCloud, si: usize, path: &'a Path) -> Result<Sink<'a>> {
        let place = scan_place(si, pc);
        let name = pc
            .name
            .clone()
            .or_else(|| pc.guid.clone())
            .unwrap_or_else(|| format!("scan {si}"));
        let world_from_scan = match &pc.transform {
            Some(t) => crate::pose::from_wxyz(
                [t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z],
                [t.translation.x, t.translation.y, t.translation.z],
            ),
            None => Some(Isometry3::identity()),
        };
        let Some(world_from_scan) = world_from_scan else {
            return Err(Error::format(
                path,
                format!("{place} pose"),
                "pose has a non-finite rotation or translation",
            ));
        };
        let lay = Layout::new(&pc.prototype);
        if lay.cartesian.is_none() && lay.spherical.is_none() {
            return Err(Error::format(
                path,
                format!("{place} prototype"),
                "expected cartesianX/Y/Z or sphericalRange/Azimuth/Elevation fields",
            ));
        }
        fn with<T>(present: bool, cap: usize) -> Option<Vec<T>> {
            present.then(|| Vec::with_capacity(cap))
        }
        // The counts were checked against the file size, so reserving them is bounded by the data present.
        let cap = usize::try_from(pc.records).unwrap_or(0);
        let has_returns = lay.return_index.is_some() && lay.return_count.is_some();
        let out = ScanData {
            name,
            world_from_scan,
            world: Vec::with_capacity(cap),
            intensity: with(lay.intensity.is_some(), cap),
            color: with(lay.color.is_some(), cap),
            time: with(lay.time.is_some(), cap),
            return_number: with(has_returns, cap),
            number_of_returns: with(has_returns, cap),
            row: with(lay.row.is_some(), cap),
            column: with(lay.column.is_some(), cap),
        };
        Ok(Sink {
            world_from_scan: IsometryMatrix3::from_parts(
                world_from_scan.translation,
                world_from_scan.rotation.to_rotation_matrix(),
            ),
            colors: lay.color.map(|c| color_ranges(pc, c)),
            lay,
            place,
            path,
            out,
        })
    }

    /// Add point `j` whose field `i` has the value `v(i)`; points without a known position are skipped.
    #[inline]
    fn push(&mut self, v: impl Fn(usize) -> f64, j: u64) -> Result<()> {
        let lay = &self.lay;
        // A missing state field means "valid"; any non-zero state means the position is not fully known.
        let valid = |state: Option<usize>| state.is_none_or(|i| v(i) == 0.0);
        let local = if let Some(c) = lay.cartesian.filter(|_| valid(lay.cartesian_state)) {
            [v(c[0]), v(c[1]), v(c[2])]
        } else if let Some(s) = lay.spherical.filter(|_| valid(lay.spherical_state)) {
            let (r, az, el) = (v(s[0]), v(s[1]), v(s[2]));
            let (se, ce) = el.sin_cos();
            let (sa, ca) = az.sin_cos();
            [r * ce * ca, r * ce * sa, r * se]
        } else {
            return Ok(());
        };
        let p: [f64; 3] = (self.world_from_scan * Point3::from(local)).into();
        if !p.iter().all(|x| x.is_finite()) {
            return Err(Error::format(
                self.path,
                format!("{} point {j}", self.place),
                format!("coordinates are not finite: {local:?}"),
            ));
        }
        let out = &mut self.out;
        out.world.push(p);
        let flag = |i: Option<usize>| i.is_some_and(|i| v(i) != 0.0);
        if let (Some(o), Some(i)) = (out.intensity.as_mut(), lay.intensity) {
            o.push(if flag(lay.intensity_invalid) {
                0.0
            } else {
                v(i) as f32
            });
        }
        if let (Some(o), Some(c), Some(ranges)) = (out.color.as_mut(), lay.color, &self.colors) {
            let mut rgb = [0u16; 3];
            if !flag(lay.color_invalid) {
                for k in 0..3 {
                    let (lo, hi) = ranges[k];
                    let n = ((v(c[k]) - lo) / (hi - lo)).clamp(0.0, 1.0);
                    // NaN stays NaN through clamp and `as` turns it into 0.
                    rgb[k] = (n * 65535.0).round() as u16;
                }
            }
            o.push(rgb);
        }
        if let (Some(o), Some(i)) = (out.time.as_mut(), lay.time) {
            o.push(if flag(lay.time_invalid) { 0.0 } else { v(i) });
        }
        if let (Some(rn), Some(nr), Some(ri), Some(rc)) = (
            out.return_number.as_mut(),
            out.number_of_returns.as_mut(),
            lay.return_index,
            lay.return_count,
        ) {
            rn.push((v(ri) + 1.0).clamp(0.0, 255.0) as u8);
            nr.push(v(rc).clamp(0.0, 255.0) as u8);
        }
        if let (Some(o), Some(i)) = (out.row.as_mut(), lay.row) {
            o.push(index_of(v(i)));
        }
        if let (Some(o), Some(i)) = (out.column.as_mut(), lay.column) {
            o.push(index_of(v(i)));
        }
        Ok(())
    }
}

const PAGE_SIZE: u64 = 1024;
/// Payload bytes of a page (the last four hold its CRC-32C).
const PAGE_DATA: u64 = 1020;

/// The file without its page checksums ("logical" offsets), checking each page's CRC the first time it is read.
struct Pages<'a> {
    data: &'a [u8],
    checked: Vec<bool>,
    path: &'a Path,
}

impl<'a> Pages<'a> {
    fn new(data: &'a [u8], path: &'a Path) -> Pages<'a> {
        Pages {
            data,
            checked: vec![false; data.len() / PAGE_SIZE as usize],
            path,
        }
    }

    fn logical(physical: u64) -> u64 {
        physical - physical / PAGE_SIZE * (PAGE_SIZE - PAGE_DATA)
    }

    /// Append `len` logical bytes starting at logical offset `off` to `out`.
    fn read(&mut self, off: u64, len: u64, out: &mut Vec<u8>, place: &str) -> Result<()> {
        let (mut off, mut left) = (off, len);
        while left > 0 {
            let page = off / PAGE_DATA;
            let in_page = (off % PAGE_DATA) as usize;
            let bytes = usize::try_from(page)
                .ok()
                .and_then(|p| p.checked_mul(PAGE_SIZE as usize))
                .and_then(|s| self.data.get(s..s + PAGE_SIZE as usize))
                .ok_or_else(|| {
                    Error::format(
                        self.path,
                        place,
                        format!(
                            "needs logical bytes up to {} but the file ends at page {}",
                            off + left,
                            self.checked.len()
                        ),
                    )
                })?;
            let checked = self.checked.get_mut(page as usize);
            if checked.as_deref() != Some(&true) {
                let (payload, crc) = bytes.split_at(PAGE_DATA as usize);
                if crc32c::crc32c(payload).to_be_bytes() != crc {
                    return Err(Error::format(
                        self.path,
                        format!("{place}, page {page}"),
                        "page checksum (crc-32c) does not match its contents",
                    ));
                }
                if let Some(c) = checked {
                    *c = true;
                }
            }
            let n = left.min(PAGE_DATA - in_page as u64) as usize;
            out.extend_from_slice(bytes.get(in_page..in_page + n).unwrap_or_default());
            off += n as u64;
            left -= n as u64;
        }
        Ok(())
    }
}

/// How a field's packed values become numbers.
#[derive(Clone, Copy)]
enum Codec {
    F32,
    F64,
    /// `(raw + min) * scale + offset` from `bits`-bit unsigned raw values.
    Int {
        bits: u32,
        min: i64,
        scale: f64,
        offset: f64,
    },
    /// Zero-bit field: every value is this one and the stream holds nothing.
    Const(f64),
}

/// One field's bytestream (its values run on across packets) and the values unpacked from it so far.
struct Column {
    codec: Codec,
    buf: Vec<u8>,
    /// Bits of `buf` already consumed.
    bit: usize,
    values: Vec<f64>,
}

impl Column {
    fn new(dt: &RecordDataType) -> Column {
        let codec = match *dt {
            RecordDataType::Single { .. } => Codec::F32,
            RecordDataType::Double { .. } => Codec::F64,
            RecordDataType::ScaledInteger {
                min,
                max,
                scale,
                offset,
            } => int_codec(min, max, scale, offset),
            RecordDataType::Integer { min, max } => int_codec(min, max, 1.0, 0.0),
        };
        Column {
            codec,
            buf: Vec::new(),
            bit: 0,
            values: Vec::new(),
        }
    }

    /// Add the next piece of the stream and unpack every whole value it completes.
    fn append(&mut self, bytes: &[u8]) {
        let done = self.bit / 8;
        self.buf.drain(..done.min(self.buf.len()));
        self.bit -= done * 8;
        self.buf.extend_from_slice(bytes);
        let bits = match self.codec {
            Codec::F32 => 32,
            Codec::F64 => 64,
            Codec::Int { bits, .. } => bits as usize,
            Codec::Const(_) => return,
        };
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let total = self.buf.len() * 8;
        self.values.reserve((total - self.bit) / bits);
        while self.bit + bits <= total {
            let start = self.bit / 8;
            let w = match self.buf.get(start..start + 16) {
                Some(s) => {
                    let mut w = [0u8; 16];
                    w.copy_from_slice(s);
                    w
                }
                // Near the end of the buffer: pad with zeros (the mask drops them).
                None => {
                    let mut w = [0u8; 16];
                    let tail = self.buf.get(start..).unwrap_or_default();
                    if let Some(dst) = w.get_mut(..tail.len()) {
                        dst.copy_from_slice(tail);
                    }
                    w
                }
            };
            let raw = (u128::from_le_bytes(w) >> (self.bit % 8)) as u64 & mask;
            self.bit += bits;
            self.values.push(match self.codec {
                Codec::F32 => f64::from(f32::from_bits(raw as u32)),
                Codec::F64 => f64::from_bits(raw),
                Codec::Int {
                    min, scale, offset, ..
                // Valid raw values lie in 0..=max-min, so the sum fits; wrapping only touches corrupt data,
                // and avoids the slow i128 -> f64 conversion.
                } => min.wrapping_add(raw as i64) as f64 * scale + offset,
                Codec::Const(c) => c,
            });
        }
    }

    /// Values ready to be consumed (unbounded for a constant field).
    fn ready(&self) -> usize {
        match self.codec {
            Codec::Const(_) => usize::MAX,
            _ => self.values.len(),
        }
    }

    #[inline]
    fn at(&self, j: usize) -> f64 {
        match self.codec {
            Codec::Const(c) => c,
            _ => self.values.get(j).copied().unwrap_or(f64::NAN),
        }
    }
}

fn int_codec(min: i64, max: i64, scale: f64, offset: f64) -> Codec {
    let range = max as i128 - min as i128;
    if range > 0 {
        Codec::Int {
            bits: range.ilog2() + 1,
            min,
            scale,
            offset,
        }
    } else {
        Codec::Const(min as f64 * scale + offset)
    }
}

fn u16_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 2)
        .map_or(0, |s| u64::from(u16::from_le_bytes([s[0], s[1]])))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

/// Decode one scan's compressed vector section (E57 section 9: a section header, then data packets whose
/// bytestreams, one per prototype field, continue from packet to packet). Done here rather than with the
/// crate's iterator because that one allocates per point and per value and runs several times slower.
fn decode_scan(pages: &mut Pages, pc: &PointCloud, si: usize, path: &Path) -> Result<ScanData> {
    let mut sink = Sink::new(pc, si, path)?;
    let place = sink.place.clone();
    let mut buf = Vec::new();
    let section = Pages::logical(pc.file_offset);
    pages.read(section, 32, &mut buf, &place)?;
    if buf.first() != Some(&1) {
        return Err(Error::format(
            path,
            format!("{place}, section at byte {}", pc.file_offset),
            "expected a compressed vector section (id 1)",
        ));
    }
    let section_end = section.saturating_add(u64_at(&buf, 8));
    let data_offset = u64_at(&buf, 16);
    if data_offset < pc.file_offset || data_offset >= pages.data.len() as u64 {
        return Err(Error::format(
            path,
            format!("{place}, section at byte {}", pc.file_offset),
            format!("data offset {data_offset} lies outside the section and the file"),
        ));
    }
    let mut pos = Pages::logical(data_offset);
    let mut columns: Vec<Column> = pc
        .prototype
        .iter()
        .map(|r| Column::new(&r.data_type))
        .collect();
    let fields = columns.len() as u64;
    let mut done: u64 = 0;
    while done < pc.records {
        let here = || format!("{place}, packet at logical byte {pos}, point {done}");
        if pos >= section_end {
            return Err(Error::format(
                path,
                here(),
                format!(
                    "section ends after {done} of {} points (recordCount)",
                    pc.records
                ),
            ));
        }
        buf.clear();
        pages.read(pos, 4, &mut buf, &place)?;
        let kind = buf.first().copied().unwrap_or(u8::MAX);
        let len = u16_at(&buf, 2) + 1;
        match kind {
            1 => {
                buf.clear();
                pages.read(pos, len, &mut buf, &place)?;
                if u16_at(&buf, 4) != fields {
                    return Err(Error::format(
                        path,
                        here(),
                        format!(
                            "data packet has {} bytestreams, the prototype {fields} fields",
                            u16_at(&buf, 4)
                        ),
                    ));
                }
                let mut at = 6 + 2 * fields as usize;
                for (i, col) in columns.iter_mut().enumerate() {
                    let n = u16_at(&buf, 6 + 2 * i) as usize;
                    let bytes = buf.get(at..at + n).ok_or_else(|| {
                        Error::format(
                            path,
                            here(),
                            format!("bytestream {i} runs past the packet's {len} bytes"),
                        )
                    })?;
                    col.append(bytes);
                    at += n;
                }
            }
            // Index and empty packets carry no points.
            0 | 2 => {}
            k => {
                return Err(Error::format(
                    path,
                    here(),
                    format!("unknown packet type {k}, expected 0, 1 or 2"),
                ));
            }
        }
        pos += len;
        let ready = columns.iter().map(Column::ready).min().unwrap_or(0);
        let take = (ready as u64).min(pc.records - done) as usize;
        for j in 0..take {
            sink.push(
                |i| columns.get(i).map_or(f64::NAN, |c| c.at(j)),
                done + j as u64,
            )?;
        }
        for c in &mut columns {
            c.values.drain(..take.min(c.values.len()));
        }
        done += take as u64;
    }
    Ok(sink.out)
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

fn assemble(scans: &[ScanData], info: &FileInfo, path: &Path) -> Result<Cloud> {
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

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Writing

/// Write `cloud` as an E57 file: one scan per [`ScanInfo`] when the scans partition the points in order
/// (points in the scan frame, with the scan's pose), else one scan with the identity pose. Coordinates are
/// scaled integers with a 0.1 mm step (f64 when a scan spans more than ~429 km); intensity is f32 with
/// `intensityLimits` 0..1 when the values fit, colour 8-bit when every value is an 8-bit value widened by 257
/// (else 16-bit), time as f64 `timeStamp`, extras `row` / `column` as `rowIndex` / `columnIndex`, return
/// number / count as `returnIndex` / `returnCount`. `opts.fields` selects among `intensity`, `color`,
/// `time`, `row`, `column`, `return_number`.
pub fn write(cloud: &Cloud, path: &Path, opts: &WriteOptions) -> Result<()> {
    let groups = scan_groups(cloud, path);
    write_atomic(path, |file| {
        let mut w = E57Writer::new(file, &guid(cloud, u64::MAX))
            .map_err(|e| write_err(path, "file header", &e))?;
        if let Some(wkt) = &cloud.meta.crs_wkt {
            w.set_coordinate_metadata(Some(wkt.clone()));
        }
        for (k, g) in groups.iter().enumerate() {
            write_scan(&mut w, cloud, g, k, path, opts)?;
        }
        w.finalize().map_err(|e| write_err(path, "xml section", &e))
    })
}

/// A run of points written as one E57 scan.
struct Group {
    name: String,
    points: Range<usize>,
    world_from_scan: Isometry3<f64>,
}

fn scan_groups(cloud: &Cloud, path: &Path) -> Vec<Group> {
    let n = cloud.len();
    let scans = &cloud.meta.scans;
    let partitions = !scans.is_empty()
        && scans.first().is_some_and(|s| s.points.start == 0)
        && scans.last().is_some_and(|s| s.points.end == n)
        && scans.iter().all(|s| s.points.start <= s.points.end)
        && scans
            .windows(2)
            .all(|w| w[0].points.end == w[1].points.start)
        && scans.iter().any(|s| s.world_from_scan.is_some());
    if partitions {
        scans
            .iter()
            .map(|s| Group {
                name: s.name.clone(),
                points: s.points.clone(),
                world_from_scan: s.world_from_scan.unwrap_or_default(),
            })
            .collect()
    } else {
        let name = path
            .file_stem()
            .map_or_else(|| "scan".to_owned(), |s| s.to_string_lossy().into_owned());
        vec![Group {
            name,
            points: 0..n,
            world_from_scan: Isometry3::identity(),
        }]
    }
}

/// A deterministic GUID-shaped identifier derived from the points (E57 requires one per file and scan).
fn guid(cloud: &Cloud, salt: u64) -> String {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut h = mix(salt ^ cloud.len() as u64);
    for o in cloud.origin {
        h = mix(h ^ o.to_bits());
    }
    let step = (cloud.len() / 4096).max(1);
    for p in cloud.positions().iter().step_by(step) {
        h = mix(h ^ (u64::from(p[0].to_bits()) << 32 | u64::from(p[1].to_bits())));
        h = mix(h ^ u64::from(p[2].to_bits()));
    }
    let a = h;
    let b = mix(h ^ 0x9e37_79b9_7f4a_7c15);
    format!(
        "{{{:08x}-{:04x}-{:04x}-{:04x}-{:012x}}}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// How one coordinate axis is stored.
#[derive(Clone, Copy)]
enum Axis {
    Scaled { offset: f64, max: i64 },
    Double,
}

impl Axis {
    fn for_range(lo: f64, hi: f64) -> Axis {
        if !(lo.is_finite() && hi.is_finite()) {
            // No points: any valid type will do.
            return Axis::Scaled {
                offset: 0.0,
                max: 1,
            };
        }
        let offset = lo.floor();
        let steps = ((hi - offset) / COORD_SCALE).ceil() + 1.0;
        if steps <= MAX_COORD_STEPS {
            // At least one step so the field never has zero bits (the crate divides by the point size).
            Axis::Scaled {
                offset,
                max: (steps as i64).max(1),
            }
        } else {
            Axis::Double
        }
    }

    fn record(self, name: RecordName) -> Record {
        let data_type = match self {
            Axis::Scaled { offset, max } => RecordDataType::ScaledInteger {
                min: 0,
                max,
                scale: COORD_SCALE,
                offset,
            },
            Axis::Double => RecordDataType::Double {
                min: None,
                max: None,
            },
        };
        Record { name, data_type }
    }

    #[inline]
    fn value(self, x: f64) -> RecordValue {
        match self {
            Axis::Scaled { offset, max } => {
                // Clamped so the packed value always lies inside the declared range.
                let q = ((x - offset) / COORD_SCALE).round().clamp(0.0, max as f64);
                RecordValue::ScaledInteger(q as i64)
            }
            Axis::Double => RecordValue::Double(x),
        }
    }
}

/// An integer field with the range of its values (at least one step wide, so it never packs to zero bits).
fn int_record(name: RecordName, values: impl Iterator<Item = i64>) -> (Record, i64, i64) {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        (lo, hi) = (0, 1);
    }
    let hi = hi.max(lo.saturating_add(1));
    let lo = lo.min(hi - 1);
    (
        Record {
            name,
            data_type: RecordDataType::Integer { min: lo, max: hi },
        },
        lo,
        hi,
    )
}

/// An f64 extra value as an integer index (NaN -> 0, out of i32 range clamped).
/// A row or column index: rounded, saturated to i32.
fn index_of(v: f64) -> i32 {
    v.round().clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}

fn write_scan<F: std::io::Read + std::io::Write + std::io::Seek>(
    w: &mut E57Writer<F>,
    cloud: &Cloud,
    g: &Group,
    k: usize,
    path: &Path,
    opts: &WriteOptions,
) -> Result<()> {
    let place = format!("scan {k} \"{}\"", g.name);
    let range = g.points.clone();
    let positions = cloud.positions().get(range.clone()).ok_or_else(|| {
        Error::parameter(
            "cloud",
            format!("scan {} covers points {range:?} of {}", g.name, cloud.len()),
        )
    })?;
    let local = scan_frame(cloud.origin, positions, &g.world_from_scan);
    let axes = axes_for(&local);
    let (columns, records) = ScanColumns::new(cloud, range, opts);
    let mut proto = vec![
        axes[0].record(RecordName::CartesianX),
        axes[1].record(RecordName::CartesianY),
        axes[2].record(RecordName::CartesianZ),
    ];
    proto.extend(records);

    let mut pw = w
        .add_pointcloud(&guid(cloud, k as u64), proto)
        .map_err(|e| write_err(path, &place, &e))?;
    pw.set_name(Some(g.name.clone()));
    pw.set_transform(Some(e57_transform(&g.world_from_scan)));
    if let Some(limits) = columns.intensity_limits() {
        pw.set_intensity_limits(Some(limits));
    }
    if let Some(limits) = columns.color_limits() {
        pw.set_color_limits(Some(limits));
    }
    for (i, p) in local.iter().enumerate() {
        pw.add_point(columns.values(i, p, &axes))
            .map_err(|e| write_err(path, &format!("{place} point {i}"), &e))?;
    }
    pw.finalize().map_err(|e| write_err(path, &place, &e))
}

/// Scan-frame coordinates: p = R^T (world - t), the difference first so georeferenced values keep their digits.
fn scan_frame(
    origin: [f64; 3],
    positions: &[[f32; 3]],
    world_from_scan: &Isometry3<f64>,
) -> Vec<[f64; 3]> {
    let r = world_from_scan.rotation.to_rotation_matrix();
    let t = world_from_scan.translation.vector;
    let o = Vector3::from(origin);
    positions
        .iter()
        .map(|p| {
            r.inverse_transform_vector(&(o + Vector3::from(*p).cast::<f64>() - t))
                .into()
        })
        .collect()
}

/// The coordinate encoding of each axis, from the scan's extent on it.
fn axes_for(local: &[[f64; 3]]) -> [Axis; 3] {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in local {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    [0, 1, 2].map(|a| Axis::for_range(lo[a], hi[a]))
}

/// The scan's pose in E57's form (a w-first quaternion and a translation).
fn e57_transform(world_from_scan: &Isometry3<f64>) -> Transform {
    let q = crate::pose::rotation_wxyz(world_from_scan);
    let t = world_from_scan.translation.vector;
    Transform {
        rotation: Quaternion {
            w: q[0],
            x: q[1],
            y: q[2],
            z: q[3],
        },
        translation: Translation {
            x: t[0],
            y: t[1],
            z: t[2],
        },
    }
}

/// The attribute columns of one scan that the writer stores, cut to the scan's points, with the value ranges
/// their records declare. Record order: intensity, colour, time stamp, return index and count, row and column.
struct ScanColumns<'a> {
    intensity: Option<&'a [f32]>,
    /// Intensity limits: 0..1 when the values fit, so readers that normalise by the limits see the same values.
    intensity_range: (f64, f64),
    color: Option<&'a [[u16; 3]]>,
    /// 257 when every colour is 8-bit widened (stored as 0..255), else 1.
    color_div: u16,
    color_max: i64,
    time: Option<&'a [f64]>,
    returns: Option<(&'a [u8], &'a [u8])>,
    return_ranges: [(i64, i64); 2],
    index_fields: Vec<Vec<i32>>,
}

impl<'a> ScanColumns<'a> {
    /// The columns `opts` asks for that the cloud has, and the records that describe them.
    fn new(cloud: &'a Cloud, range: Range<usize>, opts: &WriteOptions) -> (Self, Vec<Record>) {
        fn cut<'a, T>(v: Option<&'a [T]>, wanted: bool, r: &Range<usize>) -> Option<&'a [T]> {
            v.filter(|_| wanted).and_then(|v| v.get(r.clone()))
        }
        let intensity = cut(cloud.intensity(), opts.wants("intensity"), &range);
        let color = cut(cloud.color(), opts.wants("color"), &range);
        let time = cut(cloud.time(), opts.wants("time"), &range);
        let wants_returns = opts.wants("return_number");
        let returns = cut(cloud.return_number(), wants_returns, &range).zip(cut(
            cloud.number_of_returns(),
            wants_returns,
            &range,
        ));
        let eight_bit = color.is_some_and(|c| c.iter().flatten().all(|v| v % 257 == 0));
        let mut c = ScanColumns {
            intensity,
            intensity_range: intensity.map_or((0.0, 1.0), intensity_range),
            color,
            color_div: if eight_bit { 257 } else { 1 },
            color_max: if eight_bit { 255 } else { 65535 },
            time,
            returns,
            return_ranges: [(0, 1); 2],
            index_fields: Vec::new(),
        };
        let records = c.records(cloud, range, opts);
        (c, records)
    }

    /// The records after x, y and z; fills the integer ranges the values are clamped to.
    fn records(&mut self, cloud: &Cloud, range: Range<usize>, opts: &WriteOptions) -> Vec<Record> {
        let mut proto = Vec::new();
        if self.intensity.is_some() {
            proto.push(Record {
                name: RecordName::Intensity,
                data_type: RecordDataType::Single {
                    min: None,
                    max: None,
                },
            });
        }
        if self.color.is_some() {
            for name in [
                RecordName::ColorRed,
                RecordName::ColorGreen,
                RecordName::ColorBlue,
            ] {
                proto.push(Record {
                    name,
                    data_type: RecordDataType::Integer {
                        min: 0,
                        max: self.color_max,
                    },
                });
            }
        }
        if self.time.is_some() {
            proto.push(Record {
                name: RecordName::TimeStamp,
                data_type: RecordDataType::Double {
                    min: None,
                    max: None,
                },
            });
        }
        if let Some((rn, nr)) = self.returns {
            let (ri, ri_lo, ri_hi) = int_record(
                RecordName::ReturnIndex,
                rn.iter().map(|&v| i64::from(v.saturating_sub(1))),
            );
            let (rc, rc_lo, rc_hi) =
                int_record(RecordName::ReturnCount, nr.iter().map(|&v| i64::from(v)));
            proto.push(ri);
            proto.push(rc);
            self.return_ranges = [(ri_lo, ri_hi), (rc_lo, rc_hi)];
        }
        for (extra_name, record_name) in [
            ("row", RecordName::RowIndex),
            ("column", RecordName::ColumnIndex),
        ] {
            let Some(d) = cloud.extra(extra_name).filter(|_| opts.wants(extra_name)) else {
                continue;
            };
            let Some(vals) = range
                .clone()
                .map(|i| d.values.get(i).map(index_of))
                .collect::<Option<Vec<i32>>>()
            else {
                continue;
            };
            let (rec, _, _) = int_record(record_name, vals.iter().map(|&v| i64::from(v)));
            proto.push(rec);
            self.index_fields.push(vals);
        }
        proto
    }

    fn intensity_limits(&self) -> Option<IntensityLimits> {
        let (a, b) = self.intensity_range;
        self.intensity.map(|_| IntensityLimits {
            intensity_min: Some(RecordValue::Double(a)),
            intensity_max: Some(RecordValue::Double(b)),
        })
    }

    fn color_limits(&self) -> Option<ColorLimits> {
        self.color?;
        let (lo, hi) = (
            Some(RecordValue::Integer(0)),
            Some(RecordValue::Integer(self.color_max)),
        );
        Some(ColorLimits {
            red_min: lo.clone(),
            red_max: hi.clone(),
            green_min: lo.clone(),
            green_max: hi.clone(),
            blue_min: lo,
            blue_max: hi,
        })
    }

    /// Point `i`'s values in record order.
    fn values(&self, i: usize, p: &[f64; 3], axes: &[Axis; 3]) -> Vec<RecordValue> {
        // The crate takes one Vec per point; there is no way around that allocation in its API.
        let mut values = Vec::with_capacity(16);
        values.extend((0..3).map(|a| axes[a].value(p[a])));
        if let Some(v) = self.intensity.and_then(|v| v.get(i)) {
            values.push(RecordValue::Single(*v));
        }
        if let Some(c) = self.color.and_then(|v| v.get(i)) {
            for ch in c {
                values.push(RecordValue::Integer(i64::from(ch / self.color_div)));
            }
        }
        if let Some(v) = self.time.and_then(|v| v.get(i)) {
            values.push(RecordValue::Double(*v));
        }
        if let Some((rn, nr)) = self.returns {
            let [(a_lo, a_hi), (b_lo, b_hi)] = self.return_ranges;
            let ri = rn.get(i).map_or(0, |&v| i64::from(v.saturating_sub(1)));
            let rc = nr.get(i).map_or(0, |&v| i64::from(v));
            values.push(RecordValue::Integer(ri.clamp(a_lo, a_hi)));
            values.push(RecordValue::Integer(rc.clamp(b_lo, b_hi)));
        }
        for vals in &self.index_fields {
            values.push(RecordValue::Integer(
                vals.get(i).map_or(0, |&v| i64::from(v)),
            ));
        }
        values
    }
}

/// Intensity limits for the values: 0..1 when they fit (or none is finite), widened when they are all equal.
fn intensity_range(vals: &[f32]) -> (f64, f64) {
    let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.iter().filter(|v| v.is_finite()) {
        a = a.min(f64::from(*v));
        b = b.max(f64::from(*v));
    }
    if a >= 0.0 && b <= 1.0 || a > b {
        (0.0, 1.0)
    } else if a == b {
        (a, a + 1.0)
    } else {
        (a, b)
    }
}

/// Errors while writing are the disk's (the crate wraps io errors) or a bug in the values we hand over.
fn write_err(path: &Path, place: &str, e: &e57::Error) -> Error {
    Error::io(
        path,
        std::io::Error::other(format!("{place}: {}", lowercase_first(&e.to_string()))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate's own (slower) raw iterator feeding the same sink: the reference for our section decoder.
    fn decode_with_crate(data: &[u8], path: &Path) -> Vec<ScanData> {
        let mut reader = E57Reader::new(Cursor::new(data)).unwrap();
        let mut out = Vec::new();
        for (si, pc) in reader.pointclouds().iter().enumerate() {
            let mut sink = Sink::new(pc, si, path).unwrap();
            let proto = pc.prototype.clone();
            for (j, values) in reader.pointcloud_raw(pc).unwrap().enumerate() {
                let values = values.unwrap();
                sink.push(|i| raw_value(&values[i], &proto[i].data_type), j as u64)
                    .unwrap();
            }
            out.push(sink.out);
        }
        out
    }

    #[test]
    #[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
    fn section_decoder_matches_the_crate() {
        for f in [
            "e57/pumpA_tls.e57",
            "e57/tinyCartesianFloatRgb.e57",
            "e57/bunnyDouble.e57",
        ] {
            // The shared data folder, as the build script found it (tests/support/build_cfg.rs).
            let path = std::path::Path::new(env!("AERIE_SHARED_DATA_DIR")).join(f);
            let data = std::fs::read(&path).unwrap();
            let want = decode_with_crate(&data, &path);
            let (got, _) = decode(&data, &path).unwrap();
            assert_eq!(want.len(), got.len());
            for (w, g) in want.iter().zip(&got) {
                assert!(!w.world.is_empty());
                assert_eq!(w.world, g.world, "{f}");
                assert_eq!(w.intensity, g.intensity, "{f}");
                assert_eq!(w.color, g.color, "{f}");
                assert_eq!(w.time, g.time, "{f}");
                assert_eq!(w.row, g.row, "{f}");
                assert_eq!(w.column, g.column, "{f}");
                assert_eq!(w.return_number, g.return_number, "{f}");
            }
        }
    }

    #[test]
    fn record_bits_match_the_standard() {
        let int = |min, max| RecordDataType::Integer { min, max };
        assert_eq!(record_bits(&int(0, 0)), 0);
        assert_eq!(record_bits(&int(0, 1)), 1);
        assert_eq!(record_bits(&int(0, 255)), 8);
        assert_eq!(record_bits(&int(0, 256)), 9);
        assert_eq!(record_bits(&int(i64::MIN, i64::MAX)), 64);
    }

    #[test]
    fn axis_scaled_keeps_tenth_millimetres() {
        let a = Axis::for_range(-3.25, 12.5);
        let Axis::Scaled { offset, max } = a else {
            panic!("expected a scaled axis");
        };
        assert_eq!(offset, -4.0);
        let RecordValue::ScaledInteger(q) = a.value(1.23456) else {
            panic!("expected a scaled value");
        };
        assert!((q as f64 * COORD_SCALE + offset - 1.23456).abs() <= 0.5e-4 + 1e-12);
        assert!(q <= max);
        assert!(matches!(Axis::for_range(0.0, 1e6), Axis::Double));
    }

    #[test]
    fn guid_is_deterministic_and_salted() {
        let c = Cloud::from_positions([0.0; 3], vec![[1.0, 2.0, 3.0]]);
        assert_eq!(guid(&c, 0), guid(&c, 0));
        assert_ne!(guid(&c, 0), guid(&c, 1));
        assert_eq!(guid(&c, 0).len(), 38);
    }
}
