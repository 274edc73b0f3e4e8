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

use std::io::{BufWriter, Cursor, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use rayon::prelude::*;

use crate::cloud::{self, ExtraDim, ExtraScalar, ExtraValues, ScalarKind, origin_for};
use crate::io::atomic::write_atomic;
use crate::io::fields::{Target, data_after_points, target_for};
use crate::io::{LasVersion, ReadOptions, WriteOptions};
use crate::{Attribute, Cloud, Error, Result};

/// Points decoded per parallel work item: big enough to amortise scheduling, small enough to stay in cache.
const FILL_GRAIN: usize = 1 << 16;
/// A LAZ chunk claiming more decoded bytes than this multiple of its compressed size (plus a slack) is decoded
/// sequentially in bounded pieces instead of being given a buffer of the claimed size up front.
const LAZ_TRUSTED_RATIO: u64 = 64;
/// Decoded LAZ records are converted this many bytes at a time, from a buffer on the stack that stays in L2
/// between decoding and conversion (at least one record: a record is at most 65,535 bytes).
const LAZ_PIECE_BYTES: usize = 1 << 16;

// ---------------------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------------------

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

/// What the file header says, with offsets already checked against the file size.
struct Header<'a> {
    version: (u8, u8),
    offset_to_points: usize,
    format: u8,
    compressed: bool,
    record_len: usize,
    count: u64,
    scale: [f64; 3],
    offset: [f64; 3],
    min: [f64; 3],
    max: [f64; 3],
    vlrs: Vec<Vlr<'a>>,
}

/// A variable length record (or extended one), borrowing its payload from the file.
struct Vlr<'a> {
    user_id: &'a [u8],
    record_id: u16,
    data: &'a [u8],
    /// Byte offset of the payload in the file, for error messages.
    at: usize,
}

impl Vlr<'_> {
    fn is(&self, user_id: &str, record_id: u16) -> bool {
        self.user_id == user_id.as_bytes() && self.record_id == record_id
    }
}

fn le_u16(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn le_u32(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn le_u64(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}
fn le_f64(b: &[u8], o: usize) -> Option<f64> {
    Some(f64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// A fixed-size text field up to its first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

/// Standard record length of a point format and the byte offsets of its optional fields: time, RGB, NIR.
type FormatLayout = (usize, Option<usize>, Option<usize>, Option<usize>);

/// The [`FormatLayout`] of a point format (0-10).
fn format_layout(format: u8) -> Option<FormatLayout> {
    Some(match format {
        0 => (20, None, None, None),
        1 => (28, Some(20), None, None),
        2 => (26, None, Some(20), None),
        3 => (34, Some(20), Some(28), None),
        4 => (57, Some(20), None, None),
        5 => (63, Some(20), Some(28), None),
        6 => (30, Some(22), None, None),
        7 => (36, Some(22), Some(30), None),
        8 => (38, Some(22), Some(30), Some(36)),
        9 => (59, Some(22), None, None),
        10 => (67, Some(22), Some(30), Some(36)),
        _ => return None,
    })
}

fn parse_header<'a>(data: &'a [u8], path: &Path) -> Result<Header<'a>> {
    let (major, minor, header_size) = check_version(data, path)?;
    let fmt_err = |place: &str, message: String| Error::format(path, place, message);
    let short = || header_ends(path);
    let offset_to_points = le_u32(data, 96).ok_or_else(short)? as usize;
    if offset_to_points < header_size || offset_to_points > data.len() {
        return Err(fmt_err(
            "byte 96 (offset to point data)",
            format!(
                "offset {offset_to_points} must lie between the header size {header_size} and the file size {}",
                data.len()
            ),
        ));
    }
    let raw_format = data[104];
    let format = raw_format & 0x3f;
    let Some((std_len, ..)) = format_layout(format) else {
        return Err(Error::unsupported(
            path,
            format!(
                "point data record format {format} (byte 104 is {raw_format}: the format in its low six bits, \
                 the LAZ flag in the high ones; expected 0 to 10)"
            ),
        ));
    };
    let record_len = usize::from(le_u16(data, 105).ok_or_else(short)?);
    if record_len < std_len {
        return Err(fmt_err(
            "byte 105 (point data record length)",
            format!(
                "record length {record_len} is shorter than the {std_len} bytes of point format {format}"
            ),
        ));
    }
    let legacy_count = u64::from(le_u32(data, 107).ok_or_else(short)?);
    let count = if minor >= 4 && legacy_count == 0 {
        le_u64(data, 247).ok_or_else(short)?
    } else {
        legacy_count
    };
    let [scale, offset, min, max] = read_grid(data, path)?;
    let n_vlrs = le_u32(data, 100).ok_or_else(short)?;
    let mut vlrs = read_vlrs(data, path, header_size, n_vlrs, offset_to_points)?;
    if minor >= 4 {
        read_evlrs(data, path, &mut vlrs)?;
    }
    Ok(Header {
        version: (major, minor),
        offset_to_points,
        format,
        compressed: raw_format & 0x80 != 0,
        record_len,
        count,
        scale,
        offset,
        min,
        max,
        vlrs,
    })
}

fn header_ends(path: &Path) -> Error {
    Error::format(path, "header", "file ends inside the header")
}

/// The signature, a version this reader knows and a header size that fits it; returns major, minor and the
/// header size.
fn check_version(data: &[u8], path: &Path) -> Result<(u8, u8, usize)> {
    let fmt_err = |place: &str, message: String| Error::format(path, place, message);
    if !data.starts_with(b"LASF") {
        return Err(fmt_err(
            "byte 0 (file signature)",
            "expected \"LASF\"; this is not a LAS or LAZ file".into(),
        ));
    }
    if data.len() < 227 {
        return Err(fmt_err(
            "header",
            format!(
                "file is {} bytes, shorter than the 227-byte LAS header",
                data.len()
            ),
        ));
    }
    let major = data[24];
    let minor = data[25];
    if major != 1 || minor > 4 {
        return Err(Error::unsupported(
            path,
            format!("LAS version {major}.{minor} (expected 1.0 to 1.4)"),
        ));
    }
    let min_header = match minor {
        0..=2 => 227,
        3 => 235,
        _ => 375,
    };
    let header_size = usize::from(le_u16(data, 94).ok_or_else(|| header_ends(path))?);
    if header_size < min_header {
        return Err(fmt_err(
            "byte 94 (header size)",
            format!(
                "header size {header_size} is smaller than the {min_header} bytes of LAS 1.{minor}"
            ),
        ));
    }
    if header_size > data.len() {
        return Err(fmt_err(
            "byte 94 (header size)",
            format!(
                "header size {header_size} exceeds the file size {}",
                data.len()
            ),
        ));
    }
    Ok((major, minor, header_size))
}

/// Scale, offset, min and max per axis; the scale must be finite and non-zero, the offset finite.
fn read_grid(data: &[u8], path: &Path) -> Result<[[f64; 3]; 4]> {
    let mut f = [0.0f64; 12];
    for (i, v) in f.iter_mut().enumerate() {
        *v = le_f64(data, 131 + 8 * i).ok_or_else(|| header_ends(path))?;
    }
    let scale = [f[0], f[1], f[2]];
    let offset = [f[3], f[4], f[5]];
    for k in 0..3 {
        if !scale[k].is_finite() || scale[k] == 0.0 || !offset[k].is_finite() {
            return Err(Error::format(
                path,
                format!("byte {} (scale and offset)", 131 + 8 * k),
                format!(
                    "{} scale {} and offset {} must be finite and the scale non-zero",
                    ["x", "y", "z"][k],
                    scale[k],
                    offset[k]
                ),
            ));
        }
    }
    Ok([scale, offset, [f[7], f[9], f[11]], [f[6], f[8], f[10]]])
}

/// The variable-length records between the header and the point data.
fn read_vlrs<'a>(
    data: &'a [u8],
    path: &Path,
    header_size: usize,
    n_vlrs: u32,
    offset_to_points: usize,
) -> Result<Vec<Vlr<'a>>> {
    let fmt_err = |place: &str, message: String| Error::format(path, place, message);
    let mut vlrs = Vec::new();
    let mut pos = header_size;
    for i in 0..n_vlrs {
        let place = format!("vlr {i} at byte {pos}");
        let head = data.get(pos..pos + 54).ok_or_else(|| {
            fmt_err(
                &place,
                "file ends inside the vlr header (54 bytes expected)".into(),
            )
        })?;
        let len = usize::from(le_u16(head, 20).ok_or_else(|| header_ends(path))?);
        let start = pos + 54;
        let payload = data.get(start..start + len).ok_or_else(|| {
            fmt_err(
                &place,
                format!("vlr claims {len} bytes but the file ends first"),
            )
        })?;
        vlrs.push(Vlr {
            user_id: c_str(&head[2..18]),
            record_id: le_u16(head, 18).ok_or_else(|| header_ends(path))?,
            data: payload,
            at: start,
        });
        pos = start + len;
    }
    if pos > offset_to_points {
        return Err(fmt_err(
            "byte 96 (offset to point data)",
            format!("the vlrs end at byte {pos}, after the point data offset {offset_to_points}"),
        ));
    }
    Ok(vlrs)
}

/// LAS 1.4's extended variable-length records (after the point data), appended to `vlrs`.
fn read_evlrs<'a>(data: &'a [u8], path: &Path, vlrs: &mut Vec<Vlr<'a>>) -> Result<()> {
    let short = || header_ends(path);
    let start = le_u64(data, 235).ok_or_else(short)?;
    let n = le_u32(data, 243).ok_or_else(short)?;
    if start == 0 || n == 0 {
        return Ok(());
    }
    let mut pos = usize::try_from(start).unwrap_or(usize::MAX);
    for i in 0..n {
        let place = format!("evlr {i} at byte {pos}");
        let head = data.get(pos..pos.saturating_add(60)).ok_or_else(|| {
            Error::format(path, &place, "evlr header lies beyond the end of the file")
        })?;
        let len = le_u64(head, 20).ok_or_else(short)?;
        let start = pos + 60;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e <= data.len())
            .ok_or_else(|| {
                Error::format(
                    path,
                    &place,
                    format!("evlr claims {len} bytes but the file ends first"),
                )
            })?;
        vlrs.push(Vlr {
            user_id: c_str(&head[2..18]),
            record_id: le_u16(head, 18).ok_or_else(short)?,
            data: &data[start..end],
            at: start,
        });
        pos = end;
    }
    Ok(())
}

/// Where each field lives in a point record, and which fields are read: a field not read (absent from the
/// point format, or skipped) has its `*_at` at `None`, its flag false or, for extra bytes, no [`ExtraField`],
/// and its array stays empty (never allocated, never written: every decode loop runs over the array).
struct Layout {
    record_len: usize,
    extended: bool,
    time_at: Option<usize>,
    color_at: Option<usize>,
    nir_at: Option<usize>,
    extras: Vec<ExtraField>,
    /// Whether these fields, which every point format has, are read.
    intensity: bool,
    return_number: bool,
    number_of_returns: bool,
    classification: bool,
    /// Whether scan angle, user data and point source id (held as extra dimensions) are read.
    standard_extras: bool,
    /// Names of the attributes and extra dimensions the file holds but that are not read, as
    /// [`crate::io::take_skipped`] names them, for `meta.dropped`.
    dropped: Vec<String>,
}

/// The `LASF_Projection` records that hold a CRS as GeoTIFF keys: the key directory, its doubles and its ASCII
/// parameters.
const GEOTIFF_RECORDS: [u16; 3] = [crate::crs::GEOTIFF_KEY_DIRECTORY, 34736, 34737];

/// One extra-bytes dimension (or one element of an array dimension).
struct ExtraField {
    name: String,
    /// How the file stores it.
    stored: ScalarKind,
    at: usize,
    /// Scale and offset to apply (`None`: the raw value is the value).
    transform: Option<(f64, f64)>,
    /// The modelled attribute it holds, if any ([`assign_roles`]).
    role: Option<Role>,
}

/// A modelled attribute that LAS has no field for, stored as extra bytes under the names the writer gives it
/// (and PLY and PCD use): `nx ny nz` (or `normal_x ...`), `gamma`, `ring`. The reader takes them back as the
/// attributes they are, so a map exported to LAS reads back with its normals rather than three anonymous
/// dimensions; skipping follows the attribute, not the extras.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Component k of the normal.
    Normal(usize),
    Gamma,
    Ring,
}

impl Role {
    fn attribute(self) -> Attribute {
        match self {
            Role::Normal(_) => Attribute::Normal,
            Role::Gamma => Attribute::Gamma,
            Role::Ring => Attribute::Ring,
        }
    }
}

/// Marks the extra fields that hold a modelled attribute: each name exactly once (all three normal
/// components), a ring only as an unsigned integer of up to 16 bits without scale.
fn assign_roles(extras: &mut [ExtraField]) {
    let only = |extras: &[ExtraField], t: Target| {
        let mut at = (0..extras.len()).filter(|&i| target_for(&extras[i].name) == t);
        match (at.next(), at.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    };
    let normal = [Target::Nx, Target::Ny, Target::Nz].map(|t| only(extras, t));
    if let [Some(x), Some(y), Some(z)] = normal {
        for (k, i) in [x, y, z].into_iter().enumerate() {
            extras[i].role = Some(Role::Normal(k));
        }
    }
    if let Some(i) = only(extras, Target::Gamma) {
        extras[i].role = Some(Role::Gamma);
    }
    if let Some(i) = only(extras, Target::Ring)
        && extras[i].transform.is_none()
        && matches!(extras[i].stored, ScalarKind::U8 | ScalarKind::U16)
    {
        extras[i].role = Some(Role::Ring);
    }
}

const SCALAR_KINDS: [ScalarKind; 10] = [
    ScalarKind::U8,
    ScalarKind::I8,
    ScalarKind::U16,
    ScalarKind::I16,
    ScalarKind::U32,
    ScalarKind::I32,
    ScalarKind::U64,
    ScalarKind::I64,
    ScalarKind::F32,
    ScalarKind::F64,
];

/// The extra-bytes VLR data type code of a scalar kind.
fn extra_bytes_code(kind: ScalarKind) -> u8 {
    SCALAR_KINDS
        .iter()
        .position(|&k| k == kind)
        .map_or(10, |i| i as u8 + 1)
}

impl Layout {
    fn new(header: &Header, path: &Path) -> Result<Layout> {
        let (std_len, time_at, color_at, nir_at) =
            format_layout(header.format).unwrap_or((20, None, None, None));
        let extra_len = header.record_len - std_len;
        let mut extras = Vec::new();
        // Some writers put each descriptor in its own VLR: take them all, in order.
        let mut at = std_len;
        for vlr in header.vlrs.iter().filter(|v| v.is("LASF_Spec", 4)) {
            for (i, d) in vlr.data.chunks(192).enumerate() {
                let place = format!(
                    "extra bytes vlr, descriptor {i} (byte {})",
                    vlr.at + 192 * i
                );
                if d.len() < 192 {
                    return Err(Error::format(
                        path,
                        place,
                        format!("descriptor is {} bytes, expected 192", d.len()),
                    ));
                }
                let data_type = d[2];
                let options = d[3];
                let name = String::from_utf8_lossy(c_str(&d[4..36])).trim().to_string();
                let (kind, n) = match data_type {
                    0 => {
                        // Undocumented bytes: `options` holds their count; skip them.
                        at += usize::from(options);
                        continue;
                    }
                    1..=30 => {
                        let t = usize::from(data_type - 1);
                        (SCALAR_KINDS[t % 10], t / 10 + 1)
                    }
                    _ => {
                        return Err(Error::format(
                            path,
                            place,
                            format!("data type {data_type} (expected 0 to 30)"),
                        ));
                    }
                };
                for e in 0..n {
                    let scale = if options & 8 != 0 {
                        le_f64(d, 112 + 8 * e).unwrap_or(1.0)
                    } else {
                        1.0
                    };
                    let offset = if options & 16 != 0 {
                        le_f64(d, 136 + 8 * e).unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let transform = (options & 24 != 0 && (scale != 1.0 || offset != 0.0))
                        .then_some((scale, offset))
                        .filter(|(s, o)| s.is_finite() && o.is_finite());
                    let base = if name.is_empty() {
                        format!("extra_{i}")
                    } else {
                        name.clone()
                    };
                    let name = if n > 1 { format!("{base}[{e}]") } else { base };
                    extras.push(ExtraField {
                        name,
                        stored: kind,
                        at,
                        transform,
                        role: None,
                    });
                    at += kind.size();
                }
            }
        }
        if at > header.record_len {
            return Err(Error::format(
                path,
                "extra bytes vlrs",
                format!(
                    "descriptors need {} extra bytes per point but records have {extra_len}",
                    at - std_len
                ),
            ));
        }
        assign_roles(&mut extras);
        Ok(Layout {
            record_len: header.record_len,
            extended: header.format >= 6,
            time_at,
            color_at,
            nir_at,
            extras,
            intensity: true,
            return_number: true,
            number_of_returns: true,
            classification: true,
            standard_extras: true,
            dropped: Vec::new(),
        })
    }

    /// The layout reading only what `opts` does not skip, with the names of what the file holds but is not
    /// read in `dropped`: modelled attributes in [`Cloud`]'s field order, then extra dimensions in the order
    /// (and under the names) a full read gives them.
    fn skipping(mut self, opts: &ReadOptions) -> Layout {
        let mut dropped = Vec::new();
        // In `Cloud`'s field order: what a LAS point format holds, and what extra bytes may hold ([`Role`]).
        for &attribute in Attribute::ALL {
            if !opts.skips(attribute) {
                continue;
            }
            let held = match attribute {
                Attribute::Intensity => std::mem::take(&mut self.intensity),
                Attribute::Color => self.color_at.take().is_some(),
                Attribute::Time => self.time_at.take().is_some(),
                Attribute::ReturnNumber => std::mem::take(&mut self.return_number),
                Attribute::NumberOfReturns => std::mem::take(&mut self.number_of_returns),
                Attribute::Classification => std::mem::take(&mut self.classification),
                Attribute::Normal | Attribute::Gamma | Attribute::Ring => {
                    let before = self.extras.len();
                    self.extras
                        .retain(|f| f.role.is_none_or(|r| r.attribute() != attribute));
                    self.extras.len() < before
                }
            };
            if held {
                dropped.push(attribute.name().to_string());
            }
        }
        if opts.skip_extras {
            dropped.extend(self.extra_names());
            self.nir_at = None;
            self.standard_extras = false;
            self.extras.retain(|f| f.role.is_some());
        }
        self.dropped = dropped;
        self
    }

    /// The names of the extra dimensions this layout reads, in the order [`Columns::into_cloud`] adds them and
    /// made unique the same way.
    fn extra_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut add = |name: &str| names.push(unique_name(&names, name));
        if self.nir_at.is_some() {
            add("nir");
        }
        if self.standard_extras {
            for name in ["scan_angle", "user_data", "point_source_id"] {
                add(name);
            }
        }
        for f in self.extras.iter().filter(|f| f.role.is_none()) {
            add(&f.name);
        }
        names
    }
}

/// The decoded arrays. Fields the layout does not read (absent from the point format, or skipped) stay empty.
struct Columns {
    origin: Option<[f64; 3]>,
    positions: Vec<[f32; 3]>,
    intensity: Vec<f32>,
    return_number: Vec<u8>,
    number_of_returns: Vec<u8>,
    classification: Vec<u8>,
    /// Formats 0-5: whole degrees.
    scan_angle_i8: Vec<i8>,
    /// Formats 6-10: degrees (the file stores steps of 0.006).
    scan_angle_f32: Vec<f32>,
    user_data: Vec<u8>,
    point_source_id: Vec<u16>,
    time: Vec<f64>,
    color: Vec<[u16; 3]>,
    nir: Vec<u16>,
    extras: Vec<ExtraValues>,
}

/// Mutable views of the same `n` points in every present array.
struct ColumnsMut<'a> {
    positions: &'a mut [[f32; 3]],
    intensity: &'a mut [f32],
    return_number: &'a mut [u8],
    number_of_returns: &'a mut [u8],
    classification: &'a mut [u8],
    scan_angle_i8: &'a mut [i8],
    scan_angle_f32: &'a mut [f32],
    user_data: &'a mut [u8],
    point_source_id: &'a mut [u16],
    time: &'a mut [f64],
    color: &'a mut [[u16; 3]],
    nir: &'a mut [u16],
    extras: Vec<ExtraMut<'a>>,
}

/// A mutable view of one extra dimension's values.
enum ExtraMut<'a> {
    U8(&'a mut [u8]),
    I8(&'a mut [i8]),
    U16(&'a mut [u16]),
    I16(&'a mut [i16]),
    U32(&'a mut [u32]),
    I32(&'a mut [i32]),
    U64(&'a mut [u64]),
    I64(&'a mut [i64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Run `$body` once per variant of an [`ExtraValues`] or [`ExtraMut`] (`$e`), with `$v` bound to its values and
/// `$wrap` to the same variant of `ExtraMut`.
macro_rules! per_extra {
    ($ty:ident, $e:expr, $v:ident, $wrap:ident => $body:expr) => {
        match $e {
            $ty::U8($v) => {
                let $wrap = ExtraMut::U8;
                $body
            }
            $ty::I8($v) => {
                let $wrap = ExtraMut::I8;
                $body
            }
            $ty::U16($v) => {
                let $wrap = ExtraMut::U16;
                $body
            }
            $ty::I16($v) => {
                let $wrap = ExtraMut::I16;
                $body
            }
            $ty::U32($v) => {
                let $wrap = ExtraMut::U32;
                $body
            }
            $ty::I32($v) => {
                let $wrap = ExtraMut::I32;
                $body
            }
            $ty::U64($v) => {
                let $wrap = ExtraMut::U64;
                $body
            }
            $ty::I64($v) => {
                let $wrap = ExtraMut::I64;
                $body
            }
            $ty::F32($v) => {
                let $wrap = ExtraMut::F32;
                $body
            }
            $ty::F64($v) => {
                let $wrap = ExtraMut::F64;
                $body
            }
        }
    };
}

impl<'a> ExtraMut<'a> {
    /// The values from `start` on.
    fn from(values: &'a mut ExtraValues, start: usize) -> ExtraMut<'a> {
        per_extra!(ExtraValues, values, v, wrap => wrap(v.get_mut(start..).unwrap_or_default()))
    }

    fn split_at(self, k: usize) -> (ExtraMut<'a>, ExtraMut<'a>) {
        per_extra!(ExtraMut, self, v, wrap => {
            let (a, b) = split(v, k);
            (wrap(a), wrap(b))
        })
    }

    /// Decode `f` from each record into the values.
    fn fill(self, records: std::slice::ChunksExact<'_, u8>, f: &ExtraField) {
        fn run<T: ExtraScalar>(
            out: &mut [T],
            recs: std::slice::ChunksExact<'_, u8>,
            f: &ExtraField,
        ) {
            let (at, kind) = (f.at, f.stored);
            match f.transform {
                Some((s, off)) => {
                    for (o, r) in out.iter_mut().zip(recs) {
                        *o = T::from_f64(rec_scalar(r, at, kind) * s + off);
                    }
                }
                None => {
                    for (o, r) in out.iter_mut().zip(recs) {
                        *o = T::from_f64(rec_scalar(r, at, kind));
                    }
                }
            }
        }
        per_extra!(ExtraMut, self, v, _wrap => run(v, records, f));
    }
}

/// Split a view at `k`; an absent (empty) array stays empty on both sides.
fn split<T>(s: &mut [T], k: usize) -> (&mut [T], &mut [T]) {
    if s.is_empty() {
        (&mut [], s)
    } else {
        s.split_at_mut(k)
    }
}

impl<'a> ColumnsMut<'a> {
    fn split_at(self, k: usize) -> (ColumnsMut<'a>, ColumnsMut<'a>) {
        let (p0, p1) = split(self.positions, k);
        let (i0, i1) = split(self.intensity, k);
        let (r0, r1) = split(self.return_number, k);
        let (n0, n1) = split(self.number_of_returns, k);
        let (c0, c1) = split(self.classification, k);
        let (s0, s1) = split(self.scan_angle_i8, k);
        let (f0, f1) = split(self.scan_angle_f32, k);
        let (u0, u1) = split(self.user_data, k);
        let (q0, q1) = split(self.point_source_id, k);
        let (t0, t1) = split(self.time, k);
        let (k0, k1) = split(self.color, k);
        let (x0, x1) = split(self.nir, k);
        let (e0, e1): (Vec<_>, Vec<_>) = self.extras.into_iter().map(|e| e.split_at(k)).unzip();
        (
            ColumnsMut {
                positions: p0,
                intensity: i0,
                return_number: r0,
                number_of_returns: n0,
                classification: c0,
                scan_angle_i8: s0,
                scan_angle_f32: f0,
                user_data: u0,
                point_source_id: q0,
                time: t0,
                color: k0,
                nir: x0,
                extras: e0,
            },
            ColumnsMut {
                positions: p1,
                intensity: i1,
                return_number: r1,
                number_of_returns: n1,
                classification: c1,
                scan_angle_i8: s1,
                scan_angle_f32: f1,
                user_data: u1,
                point_source_id: q1,
                time: t1,
                color: k1,
                nir: x1,
                extras: e1,
            },
        )
    }
}

#[inline(always)]
fn rec_u16(r: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([r[o], r[o + 1]])
}
#[inline(always)]
fn rec_i32(r: &[u8], o: usize) -> i32 {
    i32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]])
}
#[inline(always)]
fn rec_8(r: &[u8], o: usize) -> [u8; 8] {
    [
        r[o],
        r[o + 1],
        r[o + 2],
        r[o + 3],
        r[o + 4],
        r[o + 5],
        r[o + 6],
        r[o + 7],
    ]
}

/// Decode one stored scalar as f64.
#[inline(always)]
fn rec_scalar(r: &[u8], o: usize, kind: ScalarKind) -> f64 {
    match kind {
        ScalarKind::U8 => f64::from(r[o]),
        ScalarKind::I8 => f64::from(r[o] as i8),
        ScalarKind::U16 => f64::from(rec_u16(r, o)),
        ScalarKind::I16 => f64::from(rec_u16(r, o) as i16),
        ScalarKind::U32 => f64::from(rec_i32(r, o) as u32),
        ScalarKind::I32 => f64::from(rec_i32(r, o)),
        ScalarKind::U64 => u64::from_le_bytes(rec_8(r, o)) as f64,
        ScalarKind::I64 => i64::from_le_bytes(rec_8(r, o)) as f64,
        ScalarKind::F32 => f64::from(f32::from_bits(rec_i32(r, o) as u32)),
        ScalarKind::F64 => f64::from_le_bytes(rec_8(r, o)),
    }
}

/// Coordinate decoding: world = raw * scale + offset; stored = world - origin.
#[derive(Clone, Copy)]
struct Transform {
    scale: [f64; 3],
    /// `offset - origin`, so the subtraction happens once in f64.
    shift: [f64; 3],
}

impl Transform {
    fn new(header: &Header, origin: [f64; 3]) -> Transform {
        Transform {
            scale: header.scale,
            shift: [
                header.offset[0] - origin[0],
                header.offset[1] - origin[1],
                header.offset[2] - origin[2],
            ],
        }
    }
}

/// How a stored extra-bytes field is held: scaled ones as f64, the others at their stored width.
fn held_kind(f: &ExtraField) -> ScalarKind {
    if f.transform.is_some() {
        ScalarKind::F64
    } else {
        f.stored
    }
}

impl Columns {
    /// `n` points of zeros in every array the layout reads (the others empty, not allocated). `vec![0; n]` asks
    /// the allocator for zeroed memory, which for large arrays is fresh pages the kernel zeroes on first touch:
    /// decoding is the only pass over them.
    fn zeroed(layout: &Layout, n: usize) -> Columns {
        let n_if = |present: bool| if present { n } else { 0 };
        let standard_extras = layout.standard_extras;
        Columns {
            origin: None,
            positions: vec![[0.0; 3]; n],
            intensity: vec![0.0; n_if(layout.intensity)],
            return_number: vec![0; n_if(layout.return_number)],
            number_of_returns: vec![0; n_if(layout.number_of_returns)],
            classification: vec![0; n_if(layout.classification)],
            scan_angle_i8: vec![0; n_if(standard_extras && !layout.extended)],
            scan_angle_f32: vec![0.0; n_if(standard_extras && layout.extended)],
            user_data: vec![0; n_if(standard_extras)],
            point_source_id: vec![0; n_if(standard_extras)],
            time: vec![0.0; n_if(layout.time_at.is_some())],
            color: vec![[0; 3]; n_if(layout.color_at.is_some())],
            nir: vec![0; n_if(layout.nir_at.is_some())],
            extras: layout
                .extras
                .iter()
                .map(|f| ExtraValues::zeros(held_kind(f), n))
                .collect(),
        }
    }

    fn len(&self) -> usize {
        self.positions.len()
    }

    /// Room for `n` points in every array the layout reads.
    fn reserve(&mut self, n: usize, layout: &Layout) {
        self.positions.reserve(n);
        if layout.intensity {
            self.intensity.reserve(n);
        }
        if layout.return_number {
            self.return_number.reserve(n);
        }
        if layout.number_of_returns {
            self.number_of_returns.reserve(n);
        }
        if layout.classification {
            self.classification.reserve(n);
        }
        if layout.standard_extras {
            if layout.extended {
                self.scan_angle_f32.reserve(n);
            } else {
                self.scan_angle_i8.reserve(n);
            }
            self.user_data.reserve(n);
            self.point_source_id.reserve(n);
        }
        if layout.time_at.is_some() {
            self.time.reserve(n);
        }
        if layout.color_at.is_some() {
            self.color.reserve(n);
        }
        if layout.nir_at.is_some() {
            self.nir.reserve(n);
        }
    }

    /// Grow every array the layout reads to `n` points (zeros at the end).
    fn grow(&mut self, n: usize, layout: &Layout) {
        self.positions.resize(n, [0.0; 3]);
        if layout.intensity {
            self.intensity.resize(n, 0.0);
        }
        if layout.return_number {
            self.return_number.resize(n, 0);
        }
        if layout.number_of_returns {
            self.number_of_returns.resize(n, 0);
        }
        if layout.classification {
            self.classification.resize(n, 0);
        }
        if layout.standard_extras {
            if layout.extended {
                self.scan_angle_f32.resize(n, 0.0);
            } else {
                self.scan_angle_i8.resize(n, 0);
            }
            self.user_data.resize(n, 0);
            self.point_source_id.resize(n, 0);
        }
        if layout.time_at.is_some() {
            self.time.resize(n, 0.0);
        }
        if layout.color_at.is_some() {
            self.color.resize(n, [0; 3]);
        }
        if layout.nir_at.is_some() {
            self.nir.resize(n, 0);
        }
        for e in &mut self.extras {
            let more = ExtraValues::zeros(e.kind(), n.saturating_sub(e.len()));
            e.extend(&more);
        }
    }

    /// Views of every array from point `start` to the end.
    fn view_from(&mut self, start: usize) -> ColumnsMut<'_> {
        fn tail<T>(v: &mut [T], start: usize) -> &mut [T] {
            v.get_mut(start..).unwrap_or_default()
        }
        ColumnsMut {
            positions: tail(&mut self.positions, start),
            intensity: tail(&mut self.intensity, start),
            return_number: tail(&mut self.return_number, start),
            number_of_returns: tail(&mut self.number_of_returns, start),
            classification: tail(&mut self.classification, start),
            scan_angle_i8: tail(&mut self.scan_angle_i8, start),
            scan_angle_f32: tail(&mut self.scan_angle_f32, start),
            user_data: tail(&mut self.user_data, start),
            point_source_id: tail(&mut self.point_source_id, start),
            time: tail(&mut self.time, start),
            color: tail(&mut self.color, start),
            nir: tail(&mut self.nir, start),
            extras: self
                .extras
                .iter_mut()
                .map(|e| ExtraMut::from(e, start))
                .collect(),
        }
    }

    /// The origin, chosen from `header` and the first record when not chosen yet.
    fn origin(&mut self, header: &Header, first_record: &[u8]) -> [f64; 3] {
        *self
            .origin
            .get_or_insert_with(|| choose_origin(header, first_record))
    }

    /// Decode `records` (whole records, back to back) and append them. `first` is the index of the first one
    /// in the file, for error messages.
    fn append(
        &mut self,
        records: &[u8],
        header: &Header,
        layout: &Layout,
        path: &Path,
        first: u64,
    ) -> Result<()> {
        let rl = layout.record_len;
        let n = records.len() / rl;
        if n == 0 {
            return Ok(());
        }
        let tf = Transform::new(header, self.origin(header, records));
        let start = self.len();
        self.grow(start + n, layout);
        let view = self.view_from(start);
        match fill_parallel(view, &records[..n * rl], layout, tf, n) {
            Some(bad) => Err(not_finite(path, first + bad as u64)),
            None => Ok(()),
        }
    }

    fn into_cloud(self, header: &Header, layout: &Layout, path: &Path) -> Result<Cloud> {
        let origin = self.origin.unwrap_or_else(|| {
            if header.min.iter().all(|v| v.is_finite()) {
                origin_for(header.min)
            } else {
                [0.0; 3]
            }
        });
        let mut cloud = cloud::Columns {
            positions: self.positions,
            intensity: layout.intensity.then_some(self.intensity),
            return_number: layout.return_number.then_some(self.return_number),
            number_of_returns: layout.number_of_returns.then_some(self.number_of_returns),
            classification: layout.classification.then_some(self.classification),
            ..cloud::Columns::default()
        };
        if layout.time_at.is_some() {
            cloud.time = Some(self.time);
        }
        if layout.color_at.is_some() {
            let mut color = self.color;
            let max = color
                .iter()
                .flat_map(|c| c.iter())
                .copied()
                .max()
                .unwrap_or(0);
            if max > 0 && max <= 255 {
                for c in &mut color {
                    for v in c.iter_mut() {
                        *v *= 257;
                    }
                }
            }
            cloud.color = Some(color);
        }
        if layout.nir_at.is_some() {
            push_extra(&mut cloud.extra, "nir", self.nir.into());
        }
        if layout.standard_extras {
            let scan_angle = if layout.extended {
                self.scan_angle_f32.into()
            } else {
                self.scan_angle_i8.into()
            };
            push_extra(&mut cloud.extra, "scan_angle", scan_angle);
            push_extra(&mut cloud.extra, "user_data", self.user_data.into());
            push_extra(
                &mut cloud.extra,
                "point_source_id",
                self.point_source_id.into(),
            );
        }
        let mut normal: [Vec<f64>; 3] = Default::default();
        for (f, values) in layout.extras.iter().zip(self.extras) {
            match f.role {
                None => push_extra(&mut cloud.extra, &f.name, values),
                Some(Role::Normal(k)) => normal[k % 3] = values.to_f64(),
                Some(Role::Gamma) => {
                    cloud.gamma = Some(values.to_f64().into_iter().map(|v| v as f32).collect());
                }
                Some(Role::Ring) => {
                    cloud.ring = Some(values.to_f64().into_iter().map(|v| v as u16).collect());
                }
            }
        }
        if normal.iter().all(|c| !c.is_empty()) {
            let [x, y, z] = normal;
            cloud.normals = Some(
                x.iter()
                    .zip(&y)
                    .zip(&z)
                    .map(|((&x, &y), &z)| [x as f32, y as f32, z as f32])
                    .collect(),
            );
        }
        let mut cloud = Cloud::from_columns(origin, cloud)
            .map_err(|e| Error::format(path, "points", e.to_string()))?;
        cloud.meta.dropped.clone_from(&layout.dropped);
        cloud.meta.format = Some(format!(
            "{} {}.{}, point format {}",
            if header.compressed { "LAZ" } else { "LAS" },
            header.version.0,
            header.version.1,
            header.format
        ));
        cloud.meta.crs_wkt = header
            .vlrs
            .iter()
            .find(|v| v.is("LASF_Projection", 2112))
            .map(|v| String::from_utf8_lossy(c_str(v.data)).trim().to_string())
            .filter(|s| !s.is_empty());
        cloud.meta.las_geotiff = GEOTIFF_RECORDS
            .iter()
            .filter_map(|&id| {
                let vlr = header.vlrs.iter().find(|v| v.is("LASF_Projection", id))?;
                Some((id, vlr.data.to_vec()))
            })
            .collect();
        Ok(cloud)
    }
}

fn not_finite(path: &Path, index: u64) -> Error {
    Error::format(
        path,
        format!("point {index}"),
        "coordinates are not finite (or too far from the others to hold as f32)",
    )
}

/// Add an extra dim, renaming it when the name is taken (a file's extra bytes may reuse our names).
fn push_extra(extra: &mut Vec<ExtraDim>, name: &str, values: ExtraValues) {
    let taken: Vec<&str> = extra.iter().map(|d| d.name.as_str()).collect();
    extra.push(ExtraDim::new(unique_name(&taken, name), values));
}

/// `name`, or `name_2`, `name_3`, ... when the name is taken.
fn unique_name(taken: &[impl AsRef<str>], name: &str) -> String {
    let mut unique = name.to_string();
    let mut k = 2;
    while taken.iter().any(|t| t.as_ref() == unique) {
        unique = format!("{name}_{k}");
        k += 1;
    }
    unique
}

/// The cloud origin: the header's minimum corner (whole metres) when the header bounds are sane and contain
/// the first point, else the first point's position (whole metres).
fn choose_origin(header: &Header, records: &[u8]) -> [f64; 3] {
    let mut first = [0.0f64; 3];
    for (k, v) in first.iter_mut().enumerate() {
        let raw = records
            .get(4 * k..4 * k + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, i32::from_le_bytes);
        *v = f64::from(raw) * header.scale[k] + header.offset[k];
    }
    let sane = (0..3).all(|k| {
        let (lo, hi) = (header.min[k], header.max[k]);
        lo.is_finite() && hi.is_finite() && lo <= hi && first[k] >= lo - 1.0 && first[k] <= hi + 1.0
    });
    if sane {
        origin_for(header.min)
    } else if first.iter().all(|v| v.is_finite()) {
        origin_for(first)
    } else {
        [0.0; 3]
    }
}

/// Decode `n` records into `view`, splitting the work across threads. Returns the index (within this batch)
/// of the first point whose coordinates are not finite, if any.
fn fill_parallel(
    view: ColumnsMut<'_>,
    records: &[u8],
    layout: &Layout,
    tf: Transform,
    n: usize,
) -> Option<usize> {
    if n <= FILL_GRAIN {
        return fill(view, records, layout, tf);
    }
    let k = n / 2;
    let (a, b) = view.split_at(k);
    let (ra, rb) = records.split_at(k * layout.record_len);
    let (left, right) = rayon::join(
        || fill_parallel(a, ra, layout, tf, k),
        || fill_parallel(b, rb, layout, tf, n - k),
    );
    left.or(right.map(|i| i + k))
}

/// Decode records into `view` (single thread). Field by field, so each loop is tight.
fn fill(v: ColumnsMut<'_>, records: &[u8], layout: &Layout, tf: Transform) -> Option<usize> {
    let rl = layout.record_len;
    let recs = || records.chunks_exact(rl);
    let mut bad = None;
    for (i, (p, r)) in v.positions.iter_mut().zip(recs()).enumerate() {
        let x = (f64::from(rec_i32(r, 0)) * tf.scale[0] + tf.shift[0]) as f32;
        let y = (f64::from(rec_i32(r, 4)) * tf.scale[1] + tf.shift[1]) as f32;
        let z = (f64::from(rec_i32(r, 8)) * tf.scale[2] + tf.shift[2]) as f32;
        *p = [x, y, z];
        if bad.is_none() && !(x.is_finite() && y.is_finite() && z.is_finite()) {
            bad = Some(i);
        }
    }
    for (o, r) in v.intensity.iter_mut().zip(recs()) {
        *o = f32::from(rec_u16(r, 12));
    }
    if layout.extended {
        fill_returns(v.return_number, v.number_of_returns, recs, 0x0f, 4, 0x0f);
        for (o, r) in v.classification.iter_mut().zip(recs()) {
            *o = r[16];
        }
        for (o, r) in v.scan_angle_f32.iter_mut().zip(recs()) {
            *o = (f64::from(rec_u16(r, 18) as i16) * 0.006) as f32;
        }
        for (o, r) in v.point_source_id.iter_mut().zip(recs()) {
            *o = rec_u16(r, 20);
        }
    } else {
        fill_returns(v.return_number, v.number_of_returns, recs, 0x07, 3, 0x07);
        for (o, r) in v.classification.iter_mut().zip(recs()) {
            *o = r[15] & 0x1f;
        }
        for (o, r) in v.scan_angle_i8.iter_mut().zip(recs()) {
            *o = r[16] as i8;
        }
        for (o, r) in v.point_source_id.iter_mut().zip(recs()) {
            *o = rec_u16(r, 18);
        }
    }
    for (o, r) in v.user_data.iter_mut().zip(recs()) {
        *o = r[17];
    }
    if let Some(at) = layout.time_at {
        for (o, r) in v.time.iter_mut().zip(recs()) {
            *o = f64::from_le_bytes(rec_8(r, at));
        }
    }
    if let Some(at) = layout.color_at {
        for (o, r) in v.color.iter_mut().zip(recs()) {
            *o = [rec_u16(r, at), rec_u16(r, at + 2), rec_u16(r, at + 4)];
        }
    }
    if let Some(at) = layout.nir_at {
        for (o, r) in v.nir.iter_mut().zip(recs()) {
            *o = rec_u16(r, at);
        }
    }
    for (f, out) in layout.extras.iter().zip(v.extras) {
        out.fill(recs(), f);
    }
    bad
}

/// Return number (`byte & rn_mask`) and number of returns (`(byte >> shift) & nr_mask`) from byte 14 of each
/// record into whichever of the two arrays is read (an array not read is empty): one loop for both when both
/// are read.
#[inline(always)]
fn fill_returns<'r>(
    return_number: &mut [u8],
    number_of_returns: &mut [u8],
    recs: impl Fn() -> std::slice::ChunksExact<'r, u8>,
    rn_mask: u8,
    shift: u32,
    nr_mask: u8,
) {
    if !return_number.is_empty() && !number_of_returns.is_empty() {
        for ((rn, nr), r) in return_number
            .iter_mut()
            .zip(number_of_returns.iter_mut())
            .zip(recs())
        {
            *rn = r[14] & rn_mask;
            *nr = (r[14] >> shift) & nr_mask;
        }
    } else {
        for (rn, r) in return_number.iter_mut().zip(recs()) {
            *rn = r[14] & rn_mask;
        }
        for (nr, r) in number_of_returns.iter_mut().zip(recs()) {
            *nr = (r[14] >> shift) & nr_mask;
        }
    }
}

fn read_las_points(data: &[u8], path: &Path, header: &Header, layout: &Layout) -> Result<Columns> {
    let avail = data.len() - header.offset_to_points;
    let needed = header
        .count
        .checked_mul(header.record_len as u64)
        .filter(|&b| b <= avail as u64)
        .ok_or_else(|| {
            Error::format(
                path,
                "header: number of point records",
                format!(
                    "the header claims {} points of {} bytes but only {avail} bytes follow the point data offset {}",
                    header.count, header.record_len, header.offset_to_points
                ),
            )
        })? as usize;
    let records = &data[header.offset_to_points..header.offset_to_points + needed];
    // The count is checked against the bytes present: allocate every array once, decode once.
    let n = header.count as usize;
    let mut cols = Columns::zeroed(layout, n);
    let tf = Transform::new(header, cols.origin(header, records));
    match fill_parallel(cols.view_from(0), records, layout, tf, n) {
        Some(bad) => Err(not_finite(path, bad as u64)),
        None => Ok(cols),
    }
}

// --- LAZ ---------------------------------------------------------------------------------------------------------

/// Run a `laz` call, turning a panic inside it (on data it did not expect) into a format error.
fn guarded<T>(path: &Path, place: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::format(
            path,
            place,
            "the laz decoder failed on this data (corrupt compressed points)",
        ))
    })
}

fn laz_err(path: &Path, place: impl Into<String>) -> impl Fn(laz::LasZipError) -> Error + '_ {
    let place = place.into();
    move |e| Error::format(path, place.clone(), format!("laz: {e}"))
}

/// Expected LAZ item types for a point format: (type code, size) in order, extra bytes last.
fn expected_items(format: u8, extra: usize) -> Vec<(u16, usize)> {
    let mut v = Vec::new();
    if format < 6 {
        v.push((6, 20));
        if matches!(format, 1 | 3 | 4 | 5) {
            v.push((7, 8));
        }
        if matches!(format, 2 | 3 | 5) {
            v.push((8, 6));
        }
        if matches!(format, 4 | 5) {
            v.push((9, 29));
        }
        if extra > 0 {
            v.push((0, extra));
        }
    } else {
        v.push((10, 30));
        match format {
            7 => v.push((11, 6)),
            8 => v.push((12, 8)),
            10 => v.push((12, 8)),
            _ => {}
        }
        if matches!(format, 9 | 10) {
            v.push((13, 29));
        }
        if extra > 0 {
            v.push((14, extra));
        }
    }
    v
}

/// Number of compressed layers each LAZ 1.4 item has in a layered chunk.
fn layer_count(code: u16, size: usize) -> usize {
    match code {
        10 => 9,
        12 => 2,
        14 => size,
        _ => 1,
    }
}

/// What the laszip VLR says of a compressed file's points, checked before `laz` reads it.
struct Laszip {
    compressor: u16,
    /// (type, size, version) of each compressed item.
    items: Vec<(u16, usize, u16)>,
    /// LAZ 1.4's layered items (versions 3 and 4), which need a chunk table.
    layered: bool,
    vlr: laz::LazVlr,
}

/// The laszip VLR of a compressed file: its item list must match the point format and its compressor the
/// items' versions (`laz` panics on an empty list and sums sizes in u16).
fn laszip_vlr(path: &Path, header: &Header) -> Result<Laszip> {
    let rl = header.record_len;
    let vlr = header
        .vlrs
        .iter()
        .find(|v| v.is("laszip encoded", 22204))
        .ok_or_else(|| {
            Error::format(
                path,
                "vlrs",
                "the point format is marked compressed but there is no laszip vlr",
            )
        })?;
    let vlr_place = format!("laszip vlr (byte {})", vlr.at);
    let compressor = le_u16(vlr.data, 0).unwrap_or(u16::MAX);
    let items = laszip_items(vlr.data, path, &vlr_place)?;
    let (std_len, ..) = format_layout(header.format).unwrap_or((rl, None, None, None));
    let expected = expected_items(header.format, rl - std_len);
    let got: Vec<(u16, usize)> = items.iter().map(|&(t, s, _)| (t, s)).collect();
    if got != expected {
        return Err(Error::format(
            path,
            vlr_place,
            format!(
                "compressed items {got:?} (type, size) do not match point format {} with {rl}-byte records \
                 (expected {expected:?})",
                header.format
            ),
        ));
    }
    let layered = items.iter().all(|&(_, _, v)| v == 3 || v == 4);
    let sequential_items = items.iter().all(|&(_, _, v)| v == 1 || v == 2);
    let compressor_ok = match compressor {
        1 | 2 => sequential_items,
        3 => layered,
        _ => false,
    };
    if !compressor_ok {
        return Err(Error::unsupported(
            path,
            format!(
                "laz compressor {compressor} with item versions {:?}",
                items.iter().map(|i| i.2).collect::<Vec<_>>()
            ),
        ));
    }
    let laz_vlr = guarded(path, &vlr_place, || {
        laz::LazVlr::from_buffer(vlr.data).map_err(laz_err(path, vlr_place.clone()))
    })?;
    Ok(Laszip {
        compressor,
        items,
        layered,
        vlr: laz_vlr,
    })
}

/// The laszip VLR's item list: (type, size, version) of each item.
fn laszip_items(vlr: &[u8], path: &Path, place: &str) -> Result<Vec<(u16, usize, u16)>> {
    let n_items = usize::from(le_u16(vlr, 32).unwrap_or(0));
    (0..n_items)
        .map(|i| {
            let o = 34 + 6 * i;
            match (le_u16(vlr, o), le_u16(vlr, o + 2), le_u16(vlr, o + 4)) {
                (Some(t), Some(s), Some(v)) => Ok((t, usize::from(s), v)),
                _ => Err(Error::format(
                    path,
                    place,
                    "the item list is longer than the vlr",
                )),
            }
        })
        .collect()
}

fn read_laz_points(data: &[u8], path: &Path, header: &Header, layout: &Layout) -> Result<Columns> {
    let rl = header.record_len;
    let Laszip {
        compressor,
        items,
        layered,
        vlr: laz_vlr,
    } = laszip_vlr(path, header)?;
    let start = header.offset_to_points;
    let count = header.count;
    // Points the compressed bytes could plausibly hold: arrays are sized from the header's count only up to
    // this, and grow as points are actually decoded beyond it.
    let trusted = (data.len() - start) as u64 * LAZ_TRUSTED_RATIO / rl as u64;

    if compressor == 1 {
        return read_laz_sequential(data, path, header, layout, laz_vlr, trusted);
    }
    let table = read_chunk_table(data, path, header, &laz_vlr)?;
    let Some(table) = table else {
        if layered {
            return Err(Error::unsupported(
                path,
                "LAZ 1.4 (layered) data without a chunk table",
            ));
        }
        if laz_vlr.uses_variable_size_chunks() {
            return Err(Error::format(
                path,
                format!("byte {start} (chunk table offset)"),
                "variable-size chunks need a chunk table but none was found",
            ));
        }
        return read_laz_sequential(data, path, header, layout, laz_vlr, trusted);
    };
    let (entries, chunk_starts) = table;
    if layered {
        for (i, (e, &at)) in entries.iter().zip(&chunk_starts).enumerate() {
            check_layers(data, path, at, e.byte_count as usize, rl, &items, i)?;
        }
    }
    // A chunk claiming far more points than its bytes could hold gets no up-front buffer: decode sequentially.
    let implausible = entries.iter().any(|e| {
        e.point_count.saturating_mul(rl as u64)
            > e.byte_count.saturating_mul(LAZ_TRUSTED_RATIO) + (1 << 24)
    });
    if implausible || count > trusted {
        return read_laz_sequential(data, path, header, layout, laz_vlr, trusted);
    }
    read_laz_chunks(
        data,
        path,
        header,
        layout,
        &laz_vlr,
        &entries,
        &chunk_starts,
    )
}

/// Decode every chunk straight into its place in the arrays, chunks in parallel. The chunk table is checked
/// ([`read_chunk_table`]): its counts add up to the header's, each chunk lies inside the file, and the total
/// is plausible for the compressed bytes.
fn read_laz_chunks(
    data: &[u8],
    path: &Path,
    header: &Header,
    layout: &Layout,
    laz_vlr: &laz::LazVlr,
    entries: &[laz::laszip::ChunkTableEntry],
    chunk_starts: &[usize],
) -> Result<Columns> {
    let mut cols = Columns::zeroed(layout, header.count as usize);
    // The first point of a chunk is stored uncompressed: the origin comes from it as from a decoded record.
    let first_record = entries
        .iter()
        .zip(chunk_starts)
        .find(|(e, _)| e.point_count > 0)
        .and_then(|(_, &at)| data.get(at..))
        .unwrap_or_default();
    let tf = Transform::new(header, cols.origin(header, first_record));
    let mut jobs = Vec::with_capacity(entries.len());
    let mut rest = cols.view_from(0);
    let mut first = 0u64;
    for (c, (e, &from)) in entries.iter().zip(chunk_starts).enumerate() {
        let (view, tail) = rest.split_at(e.point_count as usize);
        jobs.push((c, from, first, view));
        rest = tail;
        first += e.point_count;
    }
    let results: Vec<Result<()>> = jobs
        .into_par_iter()
        .map(|(c, from, first, view)| {
            let e = &entries[c];
            let points = e.point_count;
            let to = from + e.byte_count as usize;
            let place = format!("compressed chunk {c} (bytes {from} to {to})");
            guarded(path, &place, || {
                decode_chunk(
                    &data[from..to],
                    laz_vlr,
                    view,
                    layout,
                    tf,
                    e.point_count as usize,
                )
                .map_err(|fault| match fault {
                    // The chunk's bytes ran out before its points did: most often a header that declares more
                    // points than the file holds.
                    ChunkFault::Laz(e) if e.contains("fill whole buffer") => Error::format(
                        path,
                        place.clone(),
                        format!(
                            "laz: {e}: the chunk ends before the {points} points it should hold (does the \
                             header declare more points than the file has?)"
                        ),
                    ),
                    ChunkFault::Laz(e) => Error::format(path, place.clone(), format!("laz: {e}")),
                    ChunkFault::NotFinite(i) => not_finite(path, first + i as u64),
                })
            })
        })
        .collect();
    results.into_iter().collect::<Result<()>>()?;
    Ok(cols)
}

/// Why a chunk could not be decoded: the `laz` decoder's error, or the index (within the chunk) of a point
/// whose coordinates are not finite.
enum ChunkFault {
    Laz(String),
    NotFinite(usize),
}

/// Decode one chunk's `n` records into `view`, a piece of [`LAZ_PIECE_BYTES`] at a time: each piece is decoded
/// into a small buffer and converted while it is still in cache, so no chunk-sized buffer is ever live (one per
/// worker thread of about 1.7 MB each on lone_star, which glibc kept resident for the rest of a prepare).
fn decode_chunk(
    chunk: &[u8],
    laz_vlr: &laz::LazVlr,
    view: ColumnsMut<'_>,
    layout: &Layout,
    tf: Transform,
    n: usize,
) -> std::result::Result<(), ChunkFault> {
    use laz::record::{
        LayeredPointRecordDecompressor, RecordDecompressor, SequentialPointRecordDecompressor,
    };
    let src = Cursor::new(chunk);
    // The item versions were checked to be all sequential (1, 2) or all layered (3, 4).
    let layered = laz_vlr.items().iter().all(|i| i.version() >= 3);
    let mut dec: Box<dyn RecordDecompressor<Cursor<&[u8]>> + Send + Sync> = if layered {
        Box::new(LayeredPointRecordDecompressor::new(src))
    } else {
        Box::new(SequentialPointRecordDecompressor::new(src))
    };
    dec.set_fields_from(laz_vlr.items())
        .map_err(|e| ChunkFault::Laz(e.to_string()))?;
    let rl = layout.record_len;
    let per_piece = (LAZ_PIECE_BYTES / rl).max(1);
    // On the stack: a heap buffer freed in a worker thread is handed back to the kernel by its arena and
    // faulted in again by the next read (measured: 9 page faults more per read of a one-chunk file).
    let mut buf = [0u8; LAZ_PIECE_BYTES];
    let mut rest = view;
    let mut done = 0;
    while done < n {
        let m = per_piece.min(n - done);
        let (piece, tail) = rest.split_at(m);
        rest = tail;
        let records = &mut buf[..m * rl];
        dec.decompress_many(records)
            .map_err(|e| ChunkFault::Laz(e.to_string()))?;
        if let Some(bad) = fill(piece, records, layout, tf) {
            return Err(ChunkFault::NotFinite(done + bad));
        }
        done += m;
    }
    Ok(())
}

/// The chunk table (entries with their point counts filled in, and each chunk's byte offset in the file), or
/// `None` when the file has none. Every count is checked against the header and the bytes present.
#[allow(clippy::type_complexity)]
fn read_chunk_table(
    data: &[u8],
    path: &Path,
    header: &Header,
    vlr: &laz::LazVlr,
) -> Result<Option<(Vec<laz::laszip::ChunkTableEntry>, Vec<usize>)>> {
    let start = header.offset_to_points;
    let Some((table_at, n_chunks)) = chunk_table_place(data, path, start)? else {
        return Ok(None);
    };
    // The table follows the 8-byte offset itself; an offset inside those bytes would make the length wrap
    // around and lift the bound below.
    let compressed_len = table_at.checked_sub(start + 8).ok_or_else(|| {
        Error::format(
            path,
            format!("byte {start} (chunk table offset)"),
            format!(
                "chunk table offset {table_at} points inside the offset itself (bytes {start}..{})",
                start + 8
            ),
        )
    })?;
    // Every chunk holds at least its first point uncompressed; bound the table before `laz` allocates it.
    if n_chunks > compressed_len / header.record_len.max(1) + 1 {
        return Err(Error::format(
            path,
            format!("byte {table_at} (chunk table)"),
            format!("{n_chunks} chunks cannot fit in {compressed_len} bytes of compressed points"),
        ));
    }
    let variable = vlr.uses_variable_size_chunks();
    let table_place = format!("byte {table_at} (chunk table)");
    let table = guarded(path, &table_place, || {
        let mut cur = Cursor::new(data);
        cur.set_position(table_at as u64);
        laz::laszip::ChunkTable::read(&mut cur, variable)
            .map_err(|e| Error::format(path, table_place.clone(), format!("{e}")))
    })?;
    let mut entries: Vec<laz::laszip::ChunkTableEntry> = table.as_ref().to_vec();
    let bad = |m: String| Error::format(path, table_place.clone(), m);
    let chunk_size = (!variable).then(|| u64::from(vlr.chunk_size()));
    fill_point_counts(&mut entries, chunk_size, header.count).map_err(bad)?;
    let starts = chunk_starts(&entries, start + 8, table_at).map_err(bad)?;
    Ok(Some((entries, starts)))
}

/// Where the chunk table lies and how many chunks it lists, from the offset before the compressed points (or,
/// from a writer that could not seek back, at the end of the file); `None` when neither points past `start`.
fn chunk_table_place(data: &[u8], path: &Path, start: usize) -> Result<Option<(usize, usize)>> {
    let place = format!("byte {start} (chunk table offset)");
    let Some(first) = data.get(start..start + 8) else {
        return Err(Error::format(
            path,
            place,
            "file ends before the compressed point data",
        ));
    };
    let mut table_at = i64::from_le_bytes(first.try_into().unwrap_or([0; 8]));
    if table_at <= start as i64 {
        table_at = data
            .len()
            .checked_sub(8)
            .and_then(|e| data.get(e..))
            .and_then(|b| b.try_into().ok())
            .map_or(-1, i64::from_le_bytes);
        if table_at <= start as i64 {
            return Ok(None);
        }
    }
    let table_at = table_at as u64;
    let n_chunks = usize::try_from(table_at)
        .ok()
        .and_then(|t| le_u32(data, t.checked_add(4)?))
        .ok_or_else(|| {
            Error::format(
                path,
                place,
                format!(
                    "chunk table offset {table_at} lies beyond the end of the file ({} bytes)",
                    data.len()
                ),
            )
        })? as usize;
    Ok(Some((table_at as usize, n_chunks)))
}

/// Each chunk's point count: a table of variable-size chunks lists them, and they must add up to the header's
/// `count`; with fixed-size chunks (`chunk_size`) every chunk but the last holds that many.
fn fill_point_counts(
    entries: &mut [laz::laszip::ChunkTableEntry],
    chunk_size: Option<u64>,
    count: u64,
) -> std::result::Result<(), String> {
    let Some(cs) = chunk_size else {
        let total = entries
            .iter()
            .try_fold(0u64, |a, e| a.checked_add(e.point_count));
        if total != Some(count) {
            return Err(format!(
                "chunks hold {total:?} points but the header says {count}"
            ));
        }
        return Ok(());
    };
    let n = entries.len() as u64;
    if n == 0 || cs == 0 || (n - 1).saturating_mul(cs) >= count || n.saturating_mul(cs) < count {
        return Err(format!(
            "{n} chunks of {cs} points do not match the header's {count} points"
        ));
    }
    for e in entries.iter_mut() {
        e.point_count = cs;
    }
    if let Some(last) = entries.last_mut() {
        last.point_count = count - (n - 1) * cs;
    }
    Ok(())
}

/// Each chunk's first byte, the chunks laid end to end from `first` and all before the table at `table_at`.
fn chunk_starts(
    entries: &[laz::laszip::ChunkTableEntry],
    first: usize,
    table_at: usize,
) -> std::result::Result<Vec<usize>, String> {
    let mut starts = Vec::with_capacity(entries.len());
    let mut at = first;
    for (i, e) in entries.iter().enumerate() {
        starts.push(at);
        let next = usize::try_from(e.byte_count)
            .ok()
            .and_then(|b| at.checked_add(b))
            .filter(|&x| x <= table_at);
        match next {
            Some(x) if e.byte_count > 0 || e.point_count == 0 => at = x,
            _ => {
                return Err(format!(
                    "chunk {i} ({} bytes at byte {at}) does not fit before the chunk table",
                    e.byte_count
                ));
            }
        }
    }
    Ok(starts)
}

/// Check a layered (LAZ 1.4) chunk's layer sizes against its byte count: `laz` allocates each layer's size
/// before reading it.
fn check_layers(
    data: &[u8],
    path: &Path,
    at: usize,
    len: usize,
    rl: usize,
    items: &[(u16, usize, u16)],
    chunk: usize,
) -> Result<()> {
    let chunk_bytes = data.get(at..at + len).unwrap_or(&[]);
    let n_layers: usize = items.iter().map(|&(t, s, _)| layer_count(t, s)).sum();
    let sizes_at = rl + 4;
    let payload = len.saturating_sub(sizes_at + 4 * n_layers);
    let mut total = 0u64;
    for l in 0..n_layers {
        match le_u32(chunk_bytes, sizes_at + 4 * l) {
            Some(s) => total += u64::from(s),
            None => {
                return Err(Error::format(
                    path,
                    format!("chunk {chunk} at byte {at}"),
                    "chunk is too short for its layer sizes",
                ));
            }
        }
    }
    if total > payload as u64 {
        return Err(Error::format(
            path,
            format!("chunk {chunk} at byte {at}"),
            format!("layers claim {total} bytes but the chunk holds {payload}"),
        ));
    }
    Ok(())
}

/// Decode LAZ data front to back in bounded batches (no chunk table, point-wise compression, or chunks whose
/// claimed sizes we do not trust for an up-front buffer).
fn read_laz_sequential(
    data: &[u8],
    path: &Path,
    header: &Header,
    layout: &Layout,
    vlr: laz::LazVlr,
    trusted: u64,
) -> Result<Columns> {
    let mut cols = Columns::zeroed(layout, 0);
    cols.reserve(header.count.min(trusted) as usize, layout);
    let rl = header.record_len;
    let place = format!("compressed points (byte {})", header.offset_to_points);
    let mut cur = Cursor::new(data);
    cur.set_position(header.offset_to_points as u64);
    let mut dec = guarded(path, &place, || {
        laz::LasZipDecompressor::new(cur, vlr).map_err(laz_err(path, place.clone()))
    })?;
    let batch = (LAZ_PIECE_BYTES / rl).max(1) as u64;
    let mut buf = [0u8; LAZ_PIECE_BYTES];
    let mut done = 0u64;
    while done < header.count {
        let n = (header.count - done).min(batch) as usize;
        let records = &mut buf[..n * rl];
        let place = format!("compressed points {done} to {}", done + n as u64 - 1);
        guarded(path, &place, || {
            dec.decompress_many(records)
                .map_err(|e| Error::format(path, place.clone(), format!("laz: {e}")))
        })?;
        cols.append(records, header, layout, path, done)?;
        done += n as u64;
    }
    Ok(cols)
}

// ---------------------------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------------------------

/// Write `cloud` as LAS (or LAZ when `compress`) at `path`, atomically.
///
/// Version: `opts.las_version`, else 1.2 unless the attributes need 1.4 (NIR, return numbers above 5,
/// classes above 31, more than 2^32-1 points). Point format: the smallest that holds the attributes present
/// (GPS time, RGB, NIR). Coordinates keep 0.1 mm (scale 0.0001) when the extent allows, else 1 mm; an extent
/// too large for 1 mm in 32-bit integers is an error. Fields not modelled by LAS (normals, gamma, ring, other
/// extra dims) become extra-bytes dimensions. `opts.fields`, when given, limits which optional fields are
/// written.
pub fn write(cloud: &Cloud, path: &Path, compress: bool, opts: &WriteOptions) -> Result<()> {
    let plan = Plan::new(cloud, opts)?;
    let header = plan.header(cloud, compress)?;
    write_atomic(path, |file| {
        let f = file.try_clone().map_err(|e| Error::io(path, e))?;
        // A failed write (disk full) is the system's error, not the cloud's.
        let las_err = |e: las::Error| match e {
            las::Error::Io(io) | las::Error::LasZipError(laz::LasZipError::IoError(io)) => {
                Error::io(path, io)
            }
            e => Error::format(path, "las writer", format!("{e}")),
        };
        let mut writer =
            las::Writer::new(BufWriter::with_capacity(1 << 20, f), header).map_err(las_err)?;
        let format = *writer.header().point_format();
        let transforms = *writer.header().transforms();
        let batch = 1 << 20;
        let mut start = 0;
        let mut result = Ok(());
        while start < cloud.len() && result.is_ok() {
            let end = (start + batch).min(cloud.len());
            let bytes = plan.encode(cloud, start..end);
            result = las::PointDataBuilder::new()
                .with_format(format)
                .with_transforms(transforms)
                .build_from_bytes(bytes)
                .and_then(|pd| writer.write_points(&pd));
            start = end;
        }
        if let Err(e) = result.and_then(|()| writer.close()) {
            // The las writer closes itself on drop and panics if that fails; the output is a temporary file
            // that is deleted anyway, so let the writer go without dropping it.
            std::mem::forget(writer);
            return Err(las_err(e));
        }
        let mut inner = writer.into_inner().map_err(las_err)?;
        inner.flush().map_err(|e| Error::io(path, e))?;
        Ok(())
    })
}

/// An extra-bytes dimension to write: its name, storage and where its values come from.
struct OutExtra<'a> {
    name: String,
    kind: ScalarKind,
    source: ExtraSource<'a>,
}

enum ExtraSource<'a> {
    Values(&'a ExtraValues),
    Normal(usize),
    Gamma,
    Ring,
}

/// What to write and how: decided once from the cloud and the options.
struct Plan<'a> {
    minor: u8,
    format: u8,
    std_len: usize,
    record_len: usize,
    scale: f64,
    offset: [f64; 3],
    intensity_scale: Option<f32>,
    intensity: Option<&'a [f32]>,
    color: Option<&'a [[u16; 3]]>,
    time: Option<&'a [f64]>,
    return_number: Option<&'a [u8]>,
    number_of_returns: Option<&'a [u8]>,
    classification: Option<&'a [u8]>,
    nir: Option<&'a ExtraValues>,
    scan_angle: Option<&'a ExtraValues>,
    user_data: Option<&'a ExtraValues>,
    point_source_id: Option<&'a ExtraValues>,
    extras: Vec<OutExtra<'a>>,
}

/// What the written points need of the LAS version and point format.
struct Needs {
    points: usize,
    /// The largest return number or number of returns.
    max_return: u8,
    max_return_number: u8,
    max_class: u8,
}

impl Needs {
    fn of(
        points: usize,
        return_number: Option<&[u8]>,
        number_of_returns: Option<&[u8]>,
        classification: Option<&[u8]>,
    ) -> Needs {
        let max = |v: Option<&[u8]>| v.and_then(|v| v.iter().copied().max()).unwrap_or(0);
        let max_return_number = max(return_number);
        Needs {
            points,
            max_return: max_return_number.max(max(number_of_returns)),
            max_return_number,
            max_class: max(classification),
        }
    }

    /// The LAS minor version: the one asked for if it can hold the points, else the smallest that can.
    fn minor(&self, asked: Option<LasVersion>, nir: bool) -> Result<u8> {
        let too_many = self.points as u64 > u64::from(u32::MAX);
        match asked {
            Some(LasVersion::V1_2) => {
                let why = if too_many {
                    Some(format!("{} points", self.points))
                } else if self.max_class > 31 {
                    Some(format!("classification {}", self.max_class))
                } else if self.max_return_number > 5 {
                    Some(format!("return number {}", self.max_return_number))
                } else if self.max_return > 7 {
                    Some(format!("number of returns {}", self.max_return))
                } else {
                    None
                };
                match why {
                    Some(why) => Err(Error::parameter(
                        "las version",
                        format!("LAS 1.2 cannot hold {why}; write LAS 1.4"),
                    )),
                    None => Ok(2),
                }
            }
            Some(LasVersion::V1_4) => Ok(4),
            None if nir || self.max_return > 5 || self.max_class > 31 || too_many => Ok(4),
            None => Ok(2),
        }
    }

    /// The point data format: the smallest that holds the fields written.
    fn format(&self, minor: u8, time: bool, color: bool, nir: bool) -> u8 {
        let extended = minor == 4 && (time || nir || self.max_class > 31 || self.max_return > 7);
        match (extended, time, color, nir) {
            (false, false, false, _) => 0,
            (false, true, false, _) => 1,
            (false, false, true, _) => 2,
            (false, true, true, _) => 3,
            (true, _, false, _) => 6,
            (true, _, true, false) => 7,
            (true, _, true, true) => 8,
        }
    }
}

/// The extra-bytes dimensions: normals, gamma, ring, then the cloud's other extra dimensions that have no
/// standard field (`nir_standard`: NIR is written in its standard field).
fn extra_dims<'a>(
    cloud: &'a Cloud,
    opts: &WriteOptions,
    nir_standard: bool,
) -> Result<Vec<OutExtra<'a>>> {
    let mut extras = Vec::new();
    if let Some(normals) = &cloud.normals()
        && wants_any(opts, &["normal", "normals", "nx", "ny", "nz"])
        && normals.len() == cloud.len()
    {
        for (i, name) in ["nx", "ny", "nz"].into_iter().enumerate() {
            extras.push(OutExtra {
                name: name.into(),
                kind: ScalarKind::F32,
                source: ExtraSource::Normal(i),
            });
        }
    }
    if cloud.gamma().is_some() && opts.wants("gamma") {
        extras.push(OutExtra {
            name: "gamma".into(),
            kind: ScalarKind::F32,
            source: ExtraSource::Gamma,
        });
    }
    if cloud.ring().is_some() && opts.wants("ring") {
        extras.push(OutExtra {
            name: "ring".into(),
            kind: ScalarKind::U16,
            source: ExtraSource::Ring,
        });
    }
    for d in cloud.extras() {
        let standard = match d.name.as_str() {
            "nir" => nir_standard,
            "scan_angle" | "user_data" | "point_source_id" => true,
            _ => false,
        };
        if standard || !opts.wants(&d.name) || extras.iter().any(|e| e.name == d.name) {
            continue;
        }
        if d.name.len() > 32 {
            return Err(Error::parameter(
                "extra dimension",
                format!("name {:?} is longer than the 32 bytes LAS allows", d.name),
            ));
        }
        extras.push(OutExtra {
            name: d.name.clone(),
            kind: d.kind(),
            source: ExtraSource::Values(&d.values),
        });
    }
    Ok(extras)
}

/// Coordinates: the offset at the (rounded) origin, the scale as fine as the extent allows (0.1 mm, else 1 mm).
fn coordinate_grid(cloud: &Cloud) -> Result<(f64, [f64; 3])> {
    let offset = cloud.origin.map(f64::round);
    let mut reach = 0.0f64;
    if let Some((lo, hi)) = cloud.bounds() {
        for k in 0..3 {
            reach = reach
                .max((lo[k] - offset[k]).abs())
                .max((hi[k] - offset[k]).abs());
        }
    }
    if !reach.is_finite() || cloud.origin.iter().any(|v| !v.is_finite()) {
        return Err(Error::parameter("cloud", "coordinates are not finite"));
    }
    let limit = f64::from(i32::MAX) - 16.0;
    if reach / 0.0001 < limit {
        Ok((0.0001, offset))
    } else if reach / 0.001 < limit {
        Ok((0.001, offset))
    } else {
        Err(Error::parameter(
            "cloud extent",
            format!(
                "points lie up to {reach:.0} m from the origin; LAS 32-bit coordinates at 1 mm reach only \
                 {:.0} m",
                limit * 0.001
            ),
        ))
    }
}

/// Intensities all within 0..1 (and not all zero) are a normalised return strength: written scaled to 0..65535.
fn intensity_scale(v: &[f32]) -> f32 {
    if v.iter().all(|&x| (0.0..=1.0).contains(&x)) && v.iter().any(|&x| x > 0.0) {
        65535.0
    } else {
        1.0
    }
}

fn wants_any(opts: &WriteOptions, names: &[&str]) -> bool {
    opts.fields.is_none() || names.iter().any(|n| opts.wants(n))
}

impl<'a> Plan<'a> {
    fn new(cloud: &'a Cloud, opts: &WriteOptions) -> Result<Plan<'a>> {
        let intensity = cloud.intensity().filter(|_| opts.wants("intensity"));
        let color = cloud.color().filter(|_| wants_any(opts, &["color", "rgb"]));
        let time = cloud
            .time()
            .filter(|_| wants_any(opts, &["time", "gps_time"]));
        let return_number = cloud
            .return_number()
            .filter(|_| opts.wants("return_number"));
        let number_of_returns = cloud
            .number_of_returns()
            .filter(|_| opts.wants("number_of_returns"));
        let classification = cloud
            .classification()
            .filter(|_| wants_any(opts, &["classification", "class"]));
        let standard_extra = |name: &str| {
            cloud
                .extra(name)
                .filter(|_| opts.wants(name))
                .map(|d| &d.values)
        };
        let nir_values = standard_extra("nir");
        let needs = Needs::of(
            cloud.len(),
            return_number,
            number_of_returns,
            classification,
        );
        let minor = needs.minor(opts.las_version, nir_values.is_some())?;
        // NIR has a standard field only next to RGB in formats 8 and 10; without colour it is an extra dim.
        let nir = nir_values.filter(|_| minor == 4 && color.is_some());
        let format = needs.format(minor, time.is_some(), color.is_some(), nir.is_some());
        let (std_len, ..) = format_layout(format).unwrap_or((20, None, None, None));
        let extras = extra_dims(cloud, opts, nir.is_some())?;
        let extra_len: usize = extras.iter().map(|e| e.kind.size()).sum();
        let record_len = std_len + extra_len;
        if record_len > usize::from(u16::MAX) || extras.len() > 65535 / 192 {
            return Err(Error::parameter(
                "extra dimensions",
                format!(
                    "{} extra dimensions ({extra_len} bytes per point) are too many for LAS",
                    extras.len()
                ),
            ));
        }
        let (scale, offset) = coordinate_grid(cloud)?;
        Ok(Plan {
            minor,
            format,
            std_len,
            record_len,
            scale,
            offset,
            intensity_scale: intensity.map(intensity_scale),
            intensity,
            color,
            time,
            return_number,
            number_of_returns,
            classification,
            nir,
            scan_angle: standard_extra("scan_angle"),
            user_data: standard_extra("user_data"),
            point_source_id: standard_extra("point_source_id"),
            extras,
        })
    }

    fn header(&self, cloud: &Cloud, compress: bool) -> Result<las::Header> {
        let err = |e: las::Error| Error::parameter("las header", format!("{e}"));
        let mut b = las::Builder::from((1, self.minor));
        let mut fmt = las::point::Format::new(self.format).map_err(err)?;
        fmt.extra_bytes = (self.record_len - self.std_len) as u16;
        fmt.is_compressed = compress;
        b.point_format = fmt;
        b.generating_software = "aerie".into();
        b.system_identifier = "aerie".into();
        let t = |k: usize| las::Transform {
            scale: self.scale,
            offset: self.offset[k],
        };
        b.transforms = las::Vector {
            x: t(0),
            y: t(1),
            z: t(2),
        };
        if !self.extras.is_empty() {
            let mut data = Vec::with_capacity(192 * self.extras.len());
            for e in &self.extras {
                let mut d = [0u8; 192];
                d[2] = extra_bytes_code(e.kind);
                let name = e.name.as_bytes();
                d[4..4 + name.len().min(32)].copy_from_slice(&name[..name.len().min(32)]);
                let desc = b"aerie";
                d[160..160 + desc.len()].copy_from_slice(desc);
                data.extend_from_slice(&d);
            }
            b.vlrs.push(las::Vlr {
                user_id: "LASF_Spec".into(),
                record_id: 4,
                description: "extra bytes".into(),
                data,
            });
        }
        if let Some(wkt) = &cloud.meta.crs_wkt {
            let mut data = wkt.as_bytes().to_vec();
            data.push(0);
            let vlr = las::Vlr {
                user_id: "LASF_Projection".into(),
                record_id: 2112,
                description: "OGC WKT".into(),
                data,
            };
            if self.minor == 4 {
                b.has_wkt_crs = true;
            }
            b.vlrs.push(vlr);
        }
        // LAS 1.4 files written here use point formats 6-8, whose CRS must be WKT: GeoTIFF keys only go into 1.2.
        if self.minor == 2 {
            for (id, data) in &cloud.meta.las_geotiff {
                b.vlrs.push(las::Vlr {
                    user_id: "LASF_Projection".into(),
                    record_id: *id,
                    description: "GeoTIFF keys".into(),
                    data: data.clone(),
                });
            }
        }
        b.into_header().map_err(err)
    }

    /// Encode points `range` as raw records.
    fn encode(&self, cloud: &Cloud, range: std::ops::Range<usize>) -> Vec<u8> {
        let rl = self.record_len;
        let mut out = vec![0u8; range.len() * rl];
        let inv = 1.0 / self.scale;
        let shift = [
            cloud.origin[0] - self.offset[0],
            cloud.origin[1] - self.offset[1],
            cloud.origin[2] - self.offset[2],
        ];
        let extended = self.format >= 6;
        let (_, time_at, color_at, nir_at) =
            format_layout(self.format).unwrap_or((20, None, None, None));
        for (r, i) in out.chunks_exact_mut(rl).zip(range) {
            let p = cloud.positions()[i];
            for k in 0..3 {
                let v = ((f64::from(p[k]) + shift[k]) * inv).round() as i32;
                r[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
            if let (Some(v), Some(s)) = (self.intensity, self.intensity_scale) {
                let x = (v[i] * s).round().clamp(0.0, 65535.0) as u16;
                r[12..14].copy_from_slice(&x.to_le_bytes());
            }
            let rn = self.return_number.map_or(1, |v| v[i]);
            let nr = self.number_of_returns.map_or(1, |v| v[i]);
            let class = self.classification.map_or(0, |v| v[i]);
            let value = |v: &ExtraValues| v.get(i).unwrap_or(0.0);
            let user = self
                .user_data
                .map_or(0, |v| value(v).round().clamp(0.0, 255.0) as u8);
            let psid = self
                .point_source_id
                .map_or(0, |v| value(v).round().clamp(0.0, 65535.0) as u16);
            let angle = self.scan_angle.map_or(0.0, value);
            if extended {
                r[14] = rn.min(15) | (nr.min(15) << 4);
                r[16] = class;
                r[17] = user;
                let a = (angle / 0.006).round().clamp(-30000.0, 30000.0) as i16;
                r[18..20].copy_from_slice(&a.to_le_bytes());
                r[20..22].copy_from_slice(&psid.to_le_bytes());
            } else {
                r[14] = rn.min(7) | (nr.min(7) << 3);
                r[15] = class.min(31);
                r[16] = angle.round().clamp(-90.0, 90.0) as i8 as u8;
                r[17] = user;
                r[18..20].copy_from_slice(&psid.to_le_bytes());
            }
            if let (Some(at), Some(t)) = (time_at, self.time) {
                r[at..at + 8].copy_from_slice(&t[i].to_le_bytes());
            }
            if let (Some(at), Some(c)) = (color_at, self.color) {
                for (k, v) in c[i].iter().enumerate() {
                    r[at + 2 * k..at + 2 * k + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
            if let (Some(at), Some(v)) = (nir_at, self.nir) {
                let x = value(v).round().clamp(0.0, 65535.0) as u16;
                r[at..at + 2].copy_from_slice(&x.to_le_bytes());
            }
            let mut at = self.std_len;
            for e in &self.extras {
                let value = match e.source {
                    ExtraSource::Values(v) => value(v),
                    ExtraSource::Normal(k) => cloud.normals().map_or(0.0, |n| f64::from(n[i][k])),
                    ExtraSource::Gamma => cloud.gamma().map_or(0.0, |g| f64::from(g[i])),
                    ExtraSource::Ring => cloud.ring().map_or(0.0, |g| f64::from(g[i])),
                };
                put_scalar(&mut r[at..at + e.kind.size()], e.kind, value);
                at += e.kind.size();
            }
        }
        out
    }
}

/// Store `v` as `kind` (integers rounded and saturated).
fn put_scalar(out: &mut [u8], kind: ScalarKind, v: f64) {
    let r = v.round();
    match kind {
        ScalarKind::U8 => out.copy_from_slice(&(r as u8).to_le_bytes()),
        ScalarKind::I8 => out.copy_from_slice(&(r as i8).to_le_bytes()),
        ScalarKind::U16 => out.copy_from_slice(&(r as u16).to_le_bytes()),
        ScalarKind::I16 => out.copy_from_slice(&(r as i16).to_le_bytes()),
        ScalarKind::U32 => out.copy_from_slice(&(r as u32).to_le_bytes()),
        ScalarKind::I32 => out.copy_from_slice(&(r as i32).to_le_bytes()),
        ScalarKind::U64 => out.copy_from_slice(&(r as u64).to_le_bytes()),
        ScalarKind::I64 => out.copy_from_slice(&(r as i64).to_le_bytes()),
        ScalarKind::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        ScalarKind::F64 => out.copy_from_slice(&v.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::take_skipped;

    /// A LAZ file (LAS 1.4 point format 8 when `nir`, else 1.2 format 3) of `n` points with time, colour,
    /// returns, class and an extra-bytes dimension.
    fn laz_bytes(n: usize, nir: bool) -> Vec<u8> {
        let mut columns = cloud::Columns {
            positions: (0..n)
                .map(|i| [i as f32 * 0.01, (i % 7) as f32, (i % 13) as f32 * 0.1])
                .collect(),
            intensity: Some((0..n).map(|i| (i % 1000) as f32).collect()),
            color: Some((0..n).map(|i| [i as u16, (2 * i) as u16, 300]).collect()),
            time: Some((0..n).map(|i| 1.0e5 + i as f64 * 1e-3).collect()),
            return_number: Some((0..n).map(|i| 1 + (i % 2) as u8).collect()),
            number_of_returns: Some(vec![2; n]),
            classification: Some((0..n).map(|i| (i % 20) as u8).collect()),
            ..cloud::Columns::default()
        };
        columns.extra.push(ExtraDim::new(
            "range",
            (0..n).map(|i| i as f32 * 0.5).collect::<Vec<f32>>(),
        ));
        if nir {
            columns.extra.push(ExtraDim::new("nir", vec![700u16; n]));
        }
        let cloud = Cloud::from_columns([1000.0, 2000.0, 10.0], columns).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.laz");
        crate::io::write(&cloud, &path, None, &WriteOptions::default()).unwrap();
        std::fs::read(&path).unwrap()
    }

    /// The sequential LAZ decoder (files without a chunk table, point-wise compression, implausible chunks)
    /// grows its arrays batch by batch: it must skip the same columns as the chunked one, which sizes them once.
    #[test]
    fn sequential_laz_decoding_skips_what_chunked_decoding_skips() {
        let path = Path::new("t.laz");
        for (n, nir) in [(3_000, false), (70_000, true)] {
            let data = laz_bytes(n, nir);
            let header = parse_header(&data, path).unwrap();
            assert!(header.compressed);
            let vlr = header
                .vlrs
                .iter()
                .find(|v| v.is("laszip encoded", 22204))
                .unwrap();
            let laz_vlr = laz::LazVlr::from_buffer(vlr.data).unwrap();
            // `read_bytes` takes the chunked path: the file has a chunk table.
            let table = read_chunk_table(&data, path, &header, &laz_vlr).unwrap();
            assert!(table.is_some_and(|(entries, _)| !entries.is_empty()));
            let full = read_bytes(&data, path, &ReadOptions::default()).unwrap();
            for opts in [
                ReadOptions::default(),
                crate::prepare::map_read_options(),
                ReadOptions {
                    skip: vec![Attribute::NumberOfReturns, Attribute::Color],
                    ..ReadOptions::default()
                },
                ReadOptions {
                    skip: vec![Attribute::Intensity, Attribute::ReturnNumber],
                    skip_extras: true,
                    ..ReadOptions::default()
                },
            ] {
                let layout = Layout::new(&header, path).unwrap().skipping(&opts);
                let laz_vlr = laz::LazVlr::from_buffer(vlr.data).unwrap();
                let sequential =
                    read_laz_sequential(&data, path, &header, &layout, laz_vlr, u64::MAX)
                        .unwrap()
                        .into_cloud(&header, &layout, path)
                        .unwrap();
                let chunked = read_bytes(&data, path, &opts).unwrap();
                let mut want = full.clone();
                take_skipped(&mut want, &opts);
                let what = format!(
                    "{n} points, skip {:?} extras {}",
                    opts.skip, opts.skip_extras
                );
                assert!(sequential == want, "{what}: sequential read");
                assert!(chunked == want, "{what}: chunked read");
                for a in &opts.skip {
                    assert!(!sequential.attributes().contains(a), "{what}: {a:?}");
                }
            }
        }
    }
}
