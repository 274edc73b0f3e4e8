//! PCD (PCL's Point Cloud Data), versions 0.5 to 0.7: `ascii`, `binary` and `binary_compressed` (LZF).
//!
//! Reading decodes each field straight from the record bytes into a column, in parallel over chunks of points;
//! nothing is allocated per point. Conventions:
//! - `COUNT > 1` fields (descriptors such as a 33-float FPFH) are kept as extra dimensions `name_0`,
//!   `name_1`, ...; `_` padding fields are skipped.
//! - Packed `rgb`/`rgba` (4 bytes, float or integer, holding 0x00RRGGBB) becomes the colour; `intensity`,
//!   `normal_x/y/z`, `ring`, `t`/`time`/`timestamp` map to the modelled attributes; anything else (e.g.
//!   `curvature`) is an extra dimension with its stored type.
//! - Organised clouds (`HEIGHT > 1`) mark missing returns with NaN coordinates: those points are dropped (the
//!   grid is not kept). In an unorganised cloud a NaN coordinate is an error.
//! - A non-identity `VIEWPOINT` is kept as the pose of one [`ScanInfo`] covering all points and is not
//!   applied: PCL's convention is that points are already expressed in the cloud's frame.
//! - Bytes after the declared data are read past with a warning (is the header's count short?), except the
//!   zeros PCL's binary writers leave: they size the file as one memory page plus the data, so a file PCL
//!   wrote ends in page size minus header length zero bytes ([`pcl_page_padding`]).
//!
//! Writing: `x y z` as float (`F 4`), or as double (`F 8`) when a world coordinate reaches 1e4 m, where
//! float spacing would lose millimetres (PCD users expect world coordinates, so no offset is used). Then
//! `intensity`, packed `rgb`, `normal_x/y/z` and the other attributes, each when `WriteOptions::wants` it.

use std::io::Write;
use std::path::Path;

use crate::cloud::{ScalarKind, ScanInfo};
use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::io::fields::{
    Column, OutField, Src, Style, Target, as_kind, assemble, data_after_points, decode_column,
    encode_rows, encode_text, out_fields, parse_num, parse_rows, quote, retain_rows, target_for,
    write_value,
};
use crate::io::{Encoding, ReadOptions, WriteOptions};
use crate::pose::Isometry3;
use crate::{Cloud, Error, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Data {
    Ascii,
    Binary,
    Compressed,
}

impl Data {
    fn name(self) -> &'static str {
        match self {
            Data::Ascii => "ascii",
            Data::Binary => "binary",
            Data::Compressed => "binary_compressed",
        }
    }
}

/// One value of a record: a field, or one element of a `COUNT > 1` field.
#[derive(Clone, Debug)]
struct Sub {
    name: String,
    kind: ScalarKind,
    target: Target,
    /// Byte offset in a row-major record.
    offset: usize,
    /// Index of the field it belongs to and its element within that field.
    field: usize,
    element: usize,
}

#[derive(Debug)]
struct Header {
    version: String,
    subs: Vec<Sub>,
    /// Bytes per point of each field (size * count), in field order.
    field_bytes: Vec<usize>,
    record: usize,
    height: usize,
    points: usize,
    viewpoint: [f64; 7],
    data: Data,
    data_start: usize,
    /// Number of header lines, for line numbers in data errors.
    lines: usize,
}

fn kind_of(t: &str, size: usize) -> Option<ScalarKind> {
    Some(match (t, size) {
        ("F", 4) => ScalarKind::F32,
        ("F", 8) => ScalarKind::F64,
        ("U", 1) => ScalarKind::U8,
        ("U", 2) => ScalarKind::U16,
        ("U", 4) => ScalarKind::U32,
        ("U", 8) => ScalarKind::U64,
        ("I", 1) => ScalarKind::I8,
        ("I", 2) => ScalarKind::I16,
        ("I", 4) => ScalarKind::I32,
        ("I", 8) => ScalarKind::I64,
        _ => return None,
    })
}

fn type_of(kind: ScalarKind) -> &'static str {
    match kind {
        ScalarKind::F32 | ScalarKind::F64 => "F",
        ScalarKind::U8 | ScalarKind::U16 | ScalarKind::U32 | ScalarKind::U64 => "U",
        _ => "I",
    }
}

/// The header's keys as written, before they are checked against each other.
#[derive(Default)]
struct Keys {
    version: Option<String>,
    names: Option<Vec<String>>,
    sizes: Option<Vec<usize>>,
    types: Option<Vec<String>>,
    counts: Option<Vec<usize>>,
    width: Option<usize>,
    height: Option<usize>,
    points: Option<usize>,
    viewpoint: Option<[f64; 7]>,
    data: Option<Data>,
}

fn parse_header(data: &[u8], path: &Path) -> Result<Header> {
    let (keys, data_start, lines) = read_keys(data, path)?;
    let missing = |k: &str| Error::format(path, "header", format!("missing {k} line"));
    let names = keys.names.ok_or_else(|| missing("FIELDS"))?;
    let sizes = keys.sizes.ok_or_else(|| missing("SIZE"))?;
    let types = keys.types.ok_or_else(|| missing("TYPE"))?;
    let counts = keys.counts.unwrap_or_else(|| vec![1; names.len()]);
    if sizes.len() != names.len() || types.len() != names.len() || counts.len() != names.len() {
        return Err(Error::format(
            path,
            "header",
            format!(
                "FIELDS has {} entries but SIZE {}, TYPE {}, COUNT {}; expected the same number",
                names.len(),
                sizes.len(),
                types.len(),
                counts.len()
            ),
        ));
    }
    let height = keys.height.unwrap_or(1);
    let points = point_count(keys.points, keys.width, height, path)?;
    let (subs, field_bytes, record) = layout(&names, &sizes, &types, &counts, path)?;
    Ok(Header {
        version: keys.version.unwrap_or_else(|| "0.7".to_string()),
        subs,
        field_bytes,
        record,
        height,
        points,
        viewpoint: keys
            .viewpoint
            .unwrap_or([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),
        data: keys.data.unwrap_or(Data::Binary),
        data_start,
        lines,
    })
}

/// Reads header lines up to and including DATA: the keys, the offset of the first data byte and the number of
/// header lines.
fn read_keys(data: &[u8], path: &Path) -> Result<(Keys, usize, usize)> {
    let mut keys = Keys::default();
    let mut pos = 0usize;
    let mut line_no = 0usize;
    while keys.data.is_none() {
        if pos >= data.len() {
            return Err(Error::format(
                path,
                format!("byte {pos}"),
                "header ended without a DATA line",
            ));
        }
        let rest = data.get(pos..).unwrap_or_default();
        let len = rest.iter().position(|&b| b == b'\n');
        let raw = &rest[..len.unwrap_or(rest.len())];
        line_no += 1;
        let place = format!("header line {line_no}");
        let line = std::str::from_utf8(raw)
            .map_err(|_| Error::format(path, &place, "expected a text header line"))?
            .trim();
        pos += len.map_or(rest.len(), |l| l + 1);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut toks = line.split_ascii_whitespace();
        let key = toks.next().unwrap_or_default().to_ascii_uppercase();
        let vals: Vec<&str> = toks.collect();
        keys.set(&key, &vals, path, &place)?;
    }
    Ok((keys, pos, line_no))
}

impl Keys {
    /// Takes one header line's key and values; `place` names the line in errors.
    fn set(&mut self, key: &str, vals: &[&str], path: &Path, place: &str) -> Result<()> {
        let num = || -> Result<usize> {
            match vals {
                [one] => one.parse::<usize>().map_err(|_| {
                    Error::format(
                        path,
                        place,
                        format!("{key}: expected a non-negative integer, found {one:?}"),
                    )
                }),
                _ => Err(Error::format(
                    path,
                    place,
                    format!("{key}: expected one integer"),
                )),
            }
        };
        let ints = |what: &str| -> Result<Vec<usize>> {
            vals.iter()
                .map(|s| s.parse::<usize>())
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| Error::format(path, place, format!("{key}: expected {what}")))
        };
        match key {
            "VERSION" => self.version = Some(version(vals.first().copied(), path)?),
            "FIELDS" | "COLUMNS" => {
                self.names = Some(vals.iter().map(ToString::to_string).collect());
            }
            "SIZE" => self.sizes = Some(ints("integers 1, 2, 4 or 8")?),
            "TYPE" => self.types = Some(vals.iter().map(|s| s.to_ascii_uppercase()).collect()),
            "COUNT" => self.counts = Some(ints("positive integers")?),
            "WIDTH" => self.width = Some(num()?),
            "HEIGHT" => self.height = Some(num()?),
            "POINTS" => self.points = Some(num()?),
            "VIEWPOINT" => {
                let v: Vec<f64> = vals.iter().filter_map(|s| s.parse::<f64>().ok()).collect();
                match <[f64; 7]>::try_from(v) {
                    Ok(a) if a.iter().all(|x| x.is_finite()) => self.viewpoint = Some(a),
                    _ => {
                        return Err(Error::format(
                            path,
                            place,
                            "VIEWPOINT: expected 7 finite numbers tx ty tz qw qx qy qz",
                        ));
                    }
                }
            }
            "DATA" => self.data = Some(encoding(vals.first().copied(), path)?),
            other => {
                return Err(Error::format(
                    path,
                    place,
                    format!(
                        "unknown header key {:?}; expected VERSION, FIELDS, SIZE, TYPE, COUNT, \
                         WIDTH, HEIGHT, VIEWPOINT, POINTS or DATA",
                        other.chars().take(20).collect::<String>()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The VERSION value, normalised to "0.x".
fn version(v: Option<&str>, path: &Path) -> Result<String> {
    match v.unwrap_or_default() {
        v @ ("0.7" | ".7" | "0.6" | ".6" | "0.5" | ".5") => Ok(format!(
            "0.{}",
            v.trim_start_matches('0').trim_start_matches('.')
        )),
        other => Err(Error::unsupported(
            path,
            format!("pcd version {other:?}; expected 0.5, 0.6 or 0.7"),
        )),
    }
}

/// The DATA value.
fn encoding(v: Option<&str>, path: &Path) -> Result<Data> {
    match v.unwrap_or_default() {
        "ascii" => Ok(Data::Ascii),
        "binary" => Ok(Data::Binary),
        "binary_compressed" => Ok(Data::Compressed),
        other => Err(Error::unsupported(
            path,
            format!("pcd DATA {other:?}; expected ascii, binary or binary_compressed"),
        )),
    }
}

/// Number of points from POINTS, or WIDTH * HEIGHT where POINTS is missing; the two must agree.
fn point_count(
    points: Option<usize>,
    width: Option<usize>,
    height: usize,
    path: &Path,
) -> Result<usize> {
    let points = match (points, width) {
        (Some(p), _) => p,
        (None, Some(w)) => w
            .checked_mul(height)
            .ok_or_else(|| Error::format(path, "header", "WIDTH * HEIGHT overflows"))?,
        (None, None) => {
            return Err(Error::format(
                path,
                "header",
                "missing POINTS or WIDTH line",
            ));
        }
    };
    if let Some(w) = width
        && w.checked_mul(height) != Some(points)
    {
        return Err(Error::format(
            path,
            "header",
            format!("WIDTH {w} * HEIGHT {height} != POINTS {points}"),
        ));
    }
    Ok(points)
}

/// The record layout: one [`Sub`] per scalar (fields with COUNT > 1 give one per element), the bytes of each
/// field, and the record size.
fn layout(
    names: &[String],
    sizes: &[usize],
    types: &[String],
    counts: &[usize],
    path: &Path,
) -> Result<(Vec<Sub>, Vec<usize>, usize)> {
    let mut subs = Vec::new();
    let mut field_bytes = Vec::new();
    let mut offset = 0usize;
    for (f, (((name, &size), t), &count)) in
        names.iter().zip(sizes).zip(types).zip(counts).enumerate()
    {
        let kind = kind_of(t, size).ok_or_else(|| {
            Error::format(
                path,
                format!("field {name}"),
                format!("TYPE {t} with SIZE {size}; expected F 4/8, U or I 1/2/4/8"),
            )
        })?;
        if count == 0 {
            return Err(Error::format(
                path,
                format!("field {name}"),
                "COUNT 0; expected at least 1",
            ));
        }
        let bytes = size
            .checked_mul(count)
            .filter(|b| *b <= 1 << 20)
            .ok_or_else(|| Error::format(path, format!("field {name}"), "COUNT is too large"))?;
        for element in 0..count {
            let (sub_name, target) = if name == "_" {
                (name.clone(), Target::Skip)
            } else if count == 1 {
                let t = match target_for(name) {
                    Target::RgbPacked if size != 4 => Target::Extra,
                    t => t,
                };
                (name.clone(), t)
            } else {
                (format!("{name}_{element}"), Target::Extra)
            };
            subs.push(Sub {
                name: sub_name,
                kind,
                target,
                offset: offset + element * size,
                field: f,
                element,
            });
        }
        field_bytes.push(bytes);
        offset += bytes;
    }
    Ok((subs, field_bytes, offset))
}

/// Parse a PCD buffer (see the module documentation for the conventions).
pub fn read_bytes(data: &[u8], path: &Path, _opts: &ReadOptions) -> Result<Cloud> {
    let h = parse_header(data, path)?;
    let n = h.points;
    let body = data.get(h.data_start..).unwrap_or_default();
    // Bytes after the data the header declares (ASCII counts its lines and refuses a mismatch).
    let mut extra = 0;
    let mut cols = match h.data {
        Data::Binary => {
            let need = n.checked_mul(h.record).filter(|&b| b <= body.len());
            if need.is_none() {
                return Err(Error::format(
                    path,
                    format!("byte {}", h.data_start),
                    format!(
                        "POINTS {n} of {} bytes need {} bytes of data; the file has {}",
                        h.record,
                        n.saturating_mul(h.record),
                        body.len()
                    ),
                ));
            }
            extra = body.len() - n * h.record;
            decode_binary(body, path, &h, false)?
        }
        Data::Compressed => {
            let (raw, used) = decompress(body, path, &h)?;
            extra = body.len() - used;
            decode_binary(&raw, path, &h, true)?
        }
        Data::Ascii => decode_ascii(body, path, &h)?,
    };
    if h.height > 1 {
        let nan_at = |t: Target| cols.iter().position(|c| c.target == t);
        let axes = [nan_at(Target::X), nan_at(Target::Y), nan_at(Target::Z)];
        let keep: Vec<bool> = (0..n)
            .map(|i| {
                axes.iter().all(|a| {
                    a.and_then(|a| cols.get(a))
                        .and_then(|c| c.values.get(i))
                        .is_none_or(|v| !v.is_nan())
                })
            })
            .collect();
        if keep.iter().any(|k| !k) {
            retain_rows(&mut cols, &keep);
        }
    }
    let kept = cols.first().map_or(0, |c| c.values.len());
    let mut cloud = assemble(path, None, cols, kept)?;
    let v = h.viewpoint;
    let identity = v[0] == 0.0
        && v[1] == 0.0
        && v[2] == 0.0
        && v[3].abs() == 1.0
        && v[4] == 0.0
        && v[5] == 0.0
        && v[6] == 0.0;
    if !identity {
        cloud.meta.scans.push(ScanInfo {
            name: "viewpoint".to_string(),
            points: 0..cloud.len(),
            // The header parser accepts only finite values.
            world_from_scan: crate::pose::from_wxyz([v[3], v[4], v[5], v[6]], [v[0], v[1], v[2]]),
        });
    }
    cloud.meta.format = Some(format!("PCD {} {}", h.version, h.data.name()));
    let tail = body
        .get(body.len().saturating_sub(extra)..)
        .unwrap_or_default();
    if !pcl_page_padding(h.data_start, tail) {
        cloud
            .meta
            .read_warnings
            .extend(data_after_points(path, n, h.record, extra));
    }
    Ok(cloud)
}

/// True when `tail`, the bytes after the data of a file whose header is `header_len` bytes long, is the
/// padding of PCL's `binary` and `binary_compressed` writers: they stretch the file to `getpagesize()` plus
/// the data's size before mapping it (pcl/io/src/pcd_io.cpp), so the file ends in zeros that fill the header's
/// page (4 KiB on x86, up to 64 KiB on some ARM kernels). Warning about them would flag every PCD PCL writes.
fn pcl_page_padding(header_len: usize, tail: &[u8]) -> bool {
    let page = header_len + tail.len();
    !tail.is_empty()
        && page.is_power_of_two()
        && (4096..=65536).contains(&page)
        && tail.iter().all(|&b| b == 0)
}

/// Decode row-major (`binary`) or column-major (`binary_compressed`, after decompression) records.
fn decode_binary(body: &[u8], path: &Path, h: &Header, column_major: bool) -> Result<Vec<Column>> {
    let n = h.points;
    let mut cols = Vec::new();
    for s in &h.subs {
        if s.target == Target::Skip {
            continue;
        }
        let (base, stride, off) = if column_major {
            let before: usize = h.field_bytes.iter().take(s.field).sum();
            let fb = h.field_bytes.get(s.field).copied().unwrap_or(0);
            (n.saturating_mul(before), fb, s.element * s.kind.size())
        } else {
            (0, h.record, s.offset)
        };
        let values = decode_column(
            body,
            n,
            base,
            stride,
            off,
            s.kind,
            false,
            s.target == Target::RgbPacked,
        )
        .ok_or_else(|| {
            Error::format(
                path,
                format!("field {}", s.name),
                "values run past the end of the data",
            )
        })?;
        cols.push(Column {
            name: s.name.clone(),
            target: s.target.clone(),
            kind: s.kind,
            values,
        });
    }
    Ok(cols)
}

/// Unpack a `binary_compressed` body: u32 compressed size, u32 uncompressed size, LZF data. Sizes are checked
/// against the file and the header before anything is allocated. Returns the data and the bytes of `body` used.
fn decompress(body: &[u8], path: &Path, h: &Header) -> Result<(Vec<u8>, usize)> {
    let place = format!("byte {}", h.data_start);
    let word = |k: usize| -> Result<usize> {
        body.get(4 * k..4 * k + 4)
            .and_then(|b| b.try_into().ok())
            .map(|b| u32::from_le_bytes(b) as usize)
            .ok_or_else(|| {
                Error::format(
                    path,
                    &place,
                    "expected the compressed and uncompressed sizes (two u32)",
                )
            })
    };
    let comp = word(0)?;
    let uncomp = word(1)?;
    let expected = h.points.checked_mul(h.record);
    if expected != Some(uncomp) {
        return Err(Error::format(
            path,
            &place,
            format!(
                "uncompressed size {uncomp}; expected POINTS {} * {} bytes",
                h.points, h.record
            ),
        ));
    }
    let Some(payload) = body.get(8..).and_then(|b| b.get(..comp)) else {
        return Err(Error::format(
            path,
            &place,
            format!(
                "compressed size {comp} but only {} bytes follow",
                body.len().saturating_sub(8)
            ),
        ));
    };
    if uncomp == 0 {
        return Ok((Vec::new(), 8 + comp));
    }
    // One LZF back-reference of 3 bytes yields at most 264 bytes: anything claiming more is corrupt.
    if uncomp / 88 > comp + 1 {
        return Err(Error::format(
            path,
            &place,
            format!("uncompressed size {uncomp} is impossible from {comp} compressed bytes"),
        ));
    }
    let raw = lzf::decompress(payload, uncomp).map_err(|e| {
        Error::format(
            path,
            format!("byte {}", h.data_start + 8),
            format!("lzf data is corrupt: {e}"),
        )
    })?;
    if raw.len() != uncomp {
        return Err(Error::format(
            path,
            format!("byte {}", h.data_start + 8),
            format!("lzf data expands to {} bytes; expected {uncomp}", raw.len()),
        ));
    }
    Ok((raw, 8 + comp))
}

fn decode_ascii(body: &[u8], path: &Path, h: &Header) -> Result<Vec<Column>> {
    let used: Vec<&Sub> = h.subs.iter().filter(|s| s.target != Target::Skip).collect();
    let total = h.subs.len();
    let rows = parse_rows(body, used.len(), |line, cols| {
        let mut toks = line
            .split(u8::is_ascii_whitespace)
            .filter(|t| !t.is_empty())
            .peekable();
        match toks.peek() {
            None => return Ok(()),
            Some(t) if t.starts_with(b"#") => return Ok(()),
            _ => {}
        }
        let mut c = 0usize;
        for (k, s) in h.subs.iter().enumerate() {
            let Some(tok) = toks.next() else {
                return Err(format!("expected {total} values, found {k}"));
            };
            if s.target == Target::Skip {
                continue;
            }
            let v = if s.target == Target::RgbPacked {
                // PCL writes packed colour as an unsigned integer; older files hold the float's value.
                std::str::from_utf8(tok)
                    .ok()
                    .and_then(|t| {
                        t.parse::<u32>()
                            .ok()
                            .or_else(|| t.parse::<f32>().ok().map(f32::to_bits))
                    })
                    .map(f64::from)
            } else {
                parse_num(tok)
            };
            let Some(v) = v else {
                return Err(format!(
                    "column {} ({}): expected a number, found {}",
                    k + 1,
                    s.name,
                    quote(tok)
                ));
            };
            let Some(v) = as_kind(v, s.kind) else {
                return Err(format!(
                    "column {} ({}): {} does not fit its type {}",
                    k + 1,
                    s.name,
                    quote(tok),
                    s.kind.name()
                ));
            };
            if let Some(col) = cols.get_mut(c) {
                col.push(v);
            }
            c += 1;
        }
        if toks.next().is_some() {
            return Err(format!("expected {total} values, found more"));
        }
        Ok(())
    })
    .map_err(|(line, m)| Error::format(path, format!("line {}", h.lines + line + 1), m))?;
    let found = rows.first().map_or(0, Vec::len);
    if found != h.points {
        return Err(Error::format(
            path,
            "data",
            format!("POINTS {} but {found} data lines", h.points),
        ));
    }
    Ok(used
        .into_iter()
        .zip(rows)
        .map(|(s, values)| Column {
            name: s.name.clone(),
            target: s.target.clone(),
            kind: s.kind,
            values,
        })
        .collect())
}

/// Write `cloud` as PCD 0.7 (see the module documentation). `opts.encoding`: `Binary` (default), `Ascii`,
/// or `Compressed` (binary_compressed); big-endian is refused.
pub fn write(cloud: &Cloud, path: &Path, opts: &WriteOptions) -> Result<()> {
    let data = match opts.encoding {
        None | Some(Encoding::Binary) => Data::Binary,
        Some(Encoding::Ascii) => Data::Ascii,
        Some(Encoding::Compressed) => Data::Compressed,
        Some(Encoding::BinaryBigEndian) => {
            return Err(Error::parameter(
                "encoding",
                "pcd has no big-endian encoding; use binary, ascii or compressed",
            ));
        }
    };
    let fields = out_fields(cloud, opts, Style::Pcd);
    let n = cloud.len();
    let header = header_text(cloud, &fields, data);
    let body = match data {
        Data::Binary => encode_rows(cloud, &fields, false),
        Data::Ascii => encode_text(cloud, &fields, ' ', write_value),
        Data::Compressed => {
            let mut raw =
                Vec::with_capacity(n * fields.iter().map(|f| f.kind.size()).sum::<usize>());
            for f in &fields {
                raw.extend_from_slice(&encode_rows(cloud, std::slice::from_ref(f), false));
            }
            let comp = compress(&raw);
            let too_big =
                |_| Error::parameter("cloud", "too many points for pcd binary_compressed");
            let mut out = Vec::with_capacity(comp.len() + 8);
            out.extend_from_slice(&u32::try_from(comp.len()).map_err(too_big)?.to_le_bytes());
            out.extend_from_slice(&u32::try_from(raw.len()).map_err(too_big)?.to_le_bytes());
            out.extend_from_slice(&comp);
            out
        }
    };
    write_atomic_buffered(path, |w| {
        w.write_all(header.as_bytes()).map_err(io_err(path))?;
        w.write_all(&body).map_err(io_err(path))
    })
}

/// LZF-compress `raw`; data LZF cannot shrink is stored as literal runs, which every LZF decoder accepts.
fn compress(raw: &[u8]) -> Vec<u8> {
    if raw.is_empty() {
        return Vec::new();
    }
    if let Ok(c) = lzf::compress(raw) {
        return c;
    }
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 32 + 1);
    for run in raw.chunks(32) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
    out
}

fn header_text(cloud: &Cloud, fields: &[OutField], data: Data) -> String {
    let n = cloud.len();
    let list = |f: &dyn Fn(&OutField) -> String| -> String {
        fields.iter().map(f).collect::<Vec<_>>().join(" ")
    };
    let world_from_viewpoint = match cloud.meta.scans.as_slice() {
        [s] if s.points == (0..n) => s.world_from_scan.unwrap_or_default(),
        _ => Isometry3::identity(),
    };
    let [tx, ty, tz]: [f64; 3] = world_from_viewpoint.translation.vector.into();
    let [qw, qx, qy, qz] = crate::pose::rotation_wxyz(&world_from_viewpoint);
    format!(
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS {}\nSIZE {}\nTYPE {}\nCOUNT {}\n\
         WIDTH {n}\nHEIGHT 1\nVIEWPOINT {tx} {ty} {tz} {qw} {qx} {qy} {qz}\nPOINTS {n}\nDATA {}\n",
        list(&|f| f.name.clone()),
        list(&|f| f.kind.size().to_string()),
        // PCL declares packed colour as a float holding the bits.
        list(&|f| if f.src == Src::RgbPacked {
            "F".to_string()
        } else {
            type_of(f.kind).to_string()
        }),
        list(&|_| "1".to_string()),
        data.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Result<Cloud> {
        read_bytes(text, Path::new("t.pcd"), &ReadOptions::default())
    }

    #[test]
    fn ascii_with_packed_colour_padding_and_descriptor() {
        let text = b"VERSION .7\nFIELDS x y z rgb _ fpfh\nSIZE 4 4 4 4 1 4\nTYPE F F F U U F\n\
                     COUNT 1 1 1 1 2 3\nWIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n\
                     1 2 3 16711680 0 0 0.5 0.25 1\n4 5 6 255 0 0 1 2 3\n";
        let c = read(text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.color().unwrap()[0], [65535, 0, 0]);
        assert_eq!(c.color().unwrap()[1], [0, 0, 65535]);
        assert_eq!(c.extra("fpfh_1").unwrap().values.to_f64(), vec![0.25, 2.0]);
        assert_eq!(c.meta.format.as_deref(), Some("PCD 0.7 ascii"));
    }

    #[test]
    fn organised_nan_points_are_dropped_and_viewpoint_kept() {
        let text = b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 2\nHEIGHT 2\n\
                     VIEWPOINT 1 2 3 1 0 0 0\nPOINTS 4\nDATA ascii\n1 2 3\nnan nan nan\n4 5 6\n7 8 9\n";
        let c = read(text).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(
            c.meta.scans[0].world_from_scan.unwrap().translation.vector,
            nalgebra::Vector3::new(1.0, 2.0, 3.0)
        );
        let unorganised =
            String::from_utf8_lossy(text).replace("WIDTH 2\nHEIGHT 2", "WIDTH 4\nHEIGHT 1");
        assert!(read(unorganised.as_bytes()).is_err());
    }

    #[test]
    fn unsupported_version_and_encoding() {
        let e = read(b"VERSION 0.8\nFIELDS x y z\n").unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        let e = read(
            b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nPOINTS 1\nDATA zip\n",
        )
        .unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    }
}
