//! Shared machinery of the table-like formats (PLY, PCD, delimited text): named fields decoded into f64
//! columns (binary records or text lines, in parallel), assembled into a [`Cloud`]; and the reverse, a cloud's
//! attributes listed as output fields and encoded as binary records or text.
//!
//! Columns go through f64 because it holds every value those formats store (integers up to 32 bits exactly,
//! f32 and f64 exactly) and because world coordinates must be seen in f64 before an origin is chosen.
//!
//! This file holds the reading side; `write.rs` the writing side.

#[cfg(test)]
mod tests;
mod write;

use std::path::Path;

use rayon::prelude::*;

use crate::cloud::{Columns, ExtraDim, ScalarKind, origin_for};
use crate::{Cloud, Error, Result};

pub(crate) use write::{
    OutField, Src, Style, encode_rows, encode_text, needs_f64, out_fields, write_value,
};

/// Records per parallel task: big enough that task overhead vanishes, small enough to balance across cores.
pub(crate) const CHUNK: usize = 16 * 1024;

/// World coordinates at or beyond this magnitude get an origin on reading and are written as f64: f32 spacing
/// there is 1 mm (half a millimetre rounding), so beyond it f32 would lose millimetres.
pub(crate) const LARGE_COORDINATE: f64 = 1.0e4;

/// Where a field's values go in the cloud.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Target {
    X,
    Y,
    Z,
    Intensity,
    Red,
    Green,
    Blue,
    /// PCL's packed colour: the bits of a 4-byte field hold 0x00RRGGBB (or 0xAARRGGBB).
    RgbPacked,
    Nx,
    Ny,
    Nz,
    Gamma,
    Time,
    Ring,
    Class,
    ReturnNumber,
    NumberOfReturns,
    Extra,
    Skip,
}

/// The target of a field called `name` (PLY property, PCD field, text column header).
pub(crate) fn target_for(name: &str) -> Target {
    let lower = name.trim().to_ascii_lowercase();
    let n = lower.strip_prefix("scalar_").unwrap_or(&lower);
    match n {
        "x" => Target::X,
        "y" => Target::Y,
        "z" => Target::Z,
        "intensity" | "reflectance" | "remission" => Target::Intensity,
        "red" | "r" | "diffuse_red" => Target::Red,
        "green" | "g" | "diffuse_green" => Target::Green,
        "blue" | "b" | "diffuse_blue" => Target::Blue,
        "rgb" | "rgba" => Target::RgbPacked,
        "nx" | "normal_x" => Target::Nx,
        "ny" | "normal_y" => Target::Ny,
        "nz" | "normal_z" => Target::Nz,
        "gamma" => Target::Gamma,
        "time" | "timestamp" | "gps_time" | "gpstime" | "t" => Target::Time,
        "ring" | "line" => Target::Ring,
        "class" | "classification" => Target::Class,
        "return_number" => Target::ReturnNumber,
        "number_of_returns" => Target::NumberOfReturns,
        "_" | "" => Target::Skip,
        _ => Target::Extra,
    }
}

/// One decoded field.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub name: String,
    pub target: Target,
    /// How the file stored it (text columns without a declared type say F64).
    pub kind: ScalarKind,
    pub values: Vec<f64>,
}

/// Decode `n` values of one field from binary records: value `i` starts at `base + i * stride + off`.
/// `raw_bits` reads a 4-byte field as u32 bits whatever its declared kind (packed colour).
/// Returns `None` when the last value would lie beyond `data`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_column(
    data: &[u8],
    n: usize,
    base: usize,
    stride: usize,
    off: usize,
    kind: ScalarKind,
    big_endian: bool,
    raw_bits: bool,
) -> Option<Vec<f64>> {
    let size = kind.size();
    if n > 0 {
        let last_end = (n - 1)
            .checked_mul(stride)?
            .checked_add(base)?
            .checked_add(off)?
            .checked_add(size)?;
        if last_end > data.len() {
            return None;
        }
    }
    let region = data.get(base..)?;
    let mut out = vec![0.0f64; n];
    macro_rules! run {
        ($len:literal, $conv:expr) => {
            out.par_chunks_mut(CHUNK).enumerate().for_each(|(ci, o)| {
                let mut p = ci * CHUNK * stride + off;
                for v in o.iter_mut() {
                    if let Some(b) = region.get(p..p + $len) {
                        let a: [u8; $len] = b.try_into().unwrap_or([0; $len]);
                        *v = $conv(a);
                    }
                    p += stride;
                }
            })
        };
    }
    use ScalarKind as K;
    match (kind, big_endian, raw_bits && size == 4) {
        (_, false, true) => run!(4, |a| u32::from_le_bytes(a) as f64),
        (_, true, true) => run!(4, |a| u32::from_be_bytes(a) as f64),
        (K::U8, _, _) => run!(1, |a: [u8; 1]| a[0] as f64),
        (K::I8, _, _) => run!(1, |a: [u8; 1]| a[0] as i8 as f64),
        (K::U16, false, _) => run!(2, |a| u16::from_le_bytes(a) as f64),
        (K::U16, true, _) => run!(2, |a| u16::from_be_bytes(a) as f64),
        (K::I16, false, _) => run!(2, |a| i16::from_le_bytes(a) as f64),
        (K::I16, true, _) => run!(2, |a| i16::from_be_bytes(a) as f64),
        (K::U32, false, _) => run!(4, |a| u32::from_le_bytes(a) as f64),
        (K::U32, true, _) => run!(4, |a| u32::from_be_bytes(a) as f64),
        (K::I32, false, _) => run!(4, |a| i32::from_le_bytes(a) as f64),
        (K::I32, true, _) => run!(4, |a| i32::from_be_bytes(a) as f64),
        (K::F32, false, _) => run!(4, |a| f32::from_le_bytes(a) as f64),
        (K::F32, true, _) => run!(4, |a| f32::from_be_bytes(a) as f64),
        (K::U64, false, _) => run!(8, |a| u64::from_le_bytes(a) as f64),
        (K::U64, true, _) => run!(8, |a| u64::from_be_bytes(a) as f64),
        (K::I64, false, _) => run!(8, |a| i64::from_le_bytes(a) as f64),
        (K::I64, true, _) => run!(8, |a| i64::from_be_bytes(a) as f64),
        (K::F64, false, _) => run!(8, f64::from_le_bytes),
        (K::F64, true, _) => run!(8, f64::from_be_bytes),
    }
    Some(out)
}

/// Read one scalar at the start of `b` (for list counts and sequential walks).
pub(crate) fn read_scalar(b: &[u8], kind: ScalarKind, big_endian: bool) -> Option<f64> {
    macro_rules! get {
        ($t:ty, $len:literal) => {{
            let a: [u8; $len] = b.get(..$len)?.try_into().ok()?;
            if big_endian {
                <$t>::from_be_bytes(a) as f64
            } else {
                <$t>::from_le_bytes(a) as f64
            }
        }};
    }
    Some(match kind {
        ScalarKind::U8 => *b.first()? as f64,
        ScalarKind::I8 => *b.first()? as i8 as f64,
        ScalarKind::U16 => get!(u16, 2),
        ScalarKind::I16 => get!(i16, 2),
        ScalarKind::U32 => get!(u32, 4),
        ScalarKind::I32 => get!(i32, 4),
        ScalarKind::U64 => get!(u64, 8),
        ScalarKind::I64 => get!(i64, 8),
        ScalarKind::F32 => get!(f32, 4),
        ScalarKind::F64 => get!(f64, 8),
    })
}

/// Parse a text number (integers and floats alike; Rust's parser is exact and fast).
#[inline]
pub(crate) fn parse_num(tok: &[u8]) -> Option<f64> {
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
}

/// A text value as the declared type holds it (a float field's decimal rounded to f32), so text and binary
/// encodings of the same file give the same values; `None` when an integer type cannot hold it (a fraction, or
/// out of range: `300` for a `uchar`), which the binary encoding could not have written either.
#[inline]
pub(crate) fn as_kind(v: f64, kind: ScalarKind) -> Option<f64> {
    let range = |lo: f64, hi: f64| (v.fract() == 0.0 && v >= lo && v <= hi).then_some(v);
    match kind {
        ScalarKind::F32 => Some(v as f32 as f64),
        ScalarKind::F64 => Some(v),
        ScalarKind::U8 => range(0.0, 255.0),
        ScalarKind::I8 => range(-128.0, 127.0),
        ScalarKind::U16 => range(0.0, 65535.0),
        ScalarKind::I16 => range(-32768.0, 32767.0),
        ScalarKind::U32 => range(0.0, 4294967295.0),
        ScalarKind::I32 => range(-2147483648.0, 2147483647.0),
        ScalarKind::U64 => range(0.0, 18446744073709551615.0),
        ScalarKind::I64 => range(-9223372036854775808.0, 9223372036854775807.0),
    }
}

/// Quote a token for an error message, shortened.
pub(crate) fn quote(tok: &[u8]) -> String {
    let s = String::from_utf8_lossy(tok);
    let s: String = s.chars().take(40).collect();
    format!("{s:?}")
}

/// The lines of `text` (without `\n` or a trailing `\r`), the last one even without a newline.
pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(p) => (&rest[..p], &rest[p + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    })
}

/// A failure while parsing text rows: the 0-based line index within the parsed text and a message.
pub(crate) type RowError = (usize, String);

/// One piece's result: its line count and its columns or its first error.
type PieceRows = (usize, std::result::Result<Vec<Vec<f64>>, RowError>);

/// Parse the lines of `text` into `ncols` f64 columns, in parallel over chunks of lines (results are in line
/// order whatever the thread timing). `parse` handles one line, pushing one value onto every column, or
/// nothing for a line it skips (blank, comment); it returns an error message naming the column.
pub(crate) fn parse_rows<F>(
    text: &[u8],
    ncols: usize,
    parse: F,
) -> std::result::Result<Vec<Vec<f64>>, RowError>
where
    F: Fn(&[u8], &mut [Vec<f64>]) -> std::result::Result<(), String> + Sync,
{
    let pieces = split_at_lines(text, 1 << 18);
    let results: Vec<PieceRows> = pieces
        .par_iter()
        .map(|piece| {
            let mut cols: Vec<Vec<f64>> = (0..ncols)
                .map(|_| Vec::with_capacity(piece.len() / 16))
                .collect();
            let mut count = 0usize;
            for line in lines(piece) {
                if let Err(m) = parse(line, &mut cols) {
                    return (count, Err((count, m)));
                }
                count += 1;
            }
            (count, Ok(cols))
        })
        .collect();
    let mut out: Vec<Vec<f64>> = (0..ncols).map(|_| Vec::new()).collect();
    let mut before = 0usize;
    for (count, r) in results {
        match r {
            Ok(cols) => {
                for (o, c) in out.iter_mut().zip(cols) {
                    if o.is_empty() {
                        *o = c;
                    } else {
                        o.extend_from_slice(&c);
                    }
                }
            }
            Err((line, m)) => return Err((before + line, m)),
        }
        before += count;
    }
    Ok(out)
}

/// Split `text` into pieces of about `target` bytes, each ending just after a newline (the last at the end).
fn split_at_lines(text: &[u8], target: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > target {
        let cut = match rest
            .get(target..)
            .and_then(|t| t.iter().position(|&b| b == b'\n'))
        {
            Some(p) => target + p + 1,
            None => rest.len(),
        };
        let (a, b) = rest.split_at(cut);
        out.push(a);
        rest = b;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Scale colour columns to 16 bits: 8-bit integer kinds are widened by 257, 16-bit kept; floats and text are
/// taken as 0..1 when no value exceeds 1 and has a fraction, as 8-bit when all are integers up to 255, else
/// clamped as 16-bit. Floats and text are judged over the three channels together: a blue channel of 0 and 1
/// beside red and green in 0..1 is 0..1 too, and one of 100 and 200 beside 16-bit red is 16-bit.
fn colour_scales(channels: [&Option<Column>; 3]) -> [f64; 3] {
    let floats = channels
        .iter()
        .flat_map(|c| c.iter())
        .filter(|c| matches!(c.kind, ScalarKind::F32 | ScalarKind::F64));
    let (mut max, mut integral) = (0.0f64, true);
    for c in floats {
        max = c.values.iter().fold(max, |m, v| m.max(*v));
        integral &= c.values.iter().all(|v| v.fract() == 0.0);
    }
    let float_scale = if integral && max <= 255.0 {
        257.0
    } else if max <= 1.0 {
        65535.0
    } else {
        1.0
    };
    channels.map(|c| match c.as_ref().map(|c| c.kind) {
        None => 0.0,
        Some(ScalarKind::U8 | ScalarKind::I8) => 257.0,
        Some(ScalarKind::F32 | ScalarKind::F64) => float_scale,
        Some(_) => 1.0,
    })
}

/// Build a cloud from decoded columns of `n` values each. Requires x, y and z; rejects non-finite
/// coordinates (naming the point); picks an origin when coordinates are large. A modelled attribute that
/// appears twice keeps its first column; the second becomes an extra dimension.
/// Positions decoded straight from a binary file's records and the origin they are relative to.
pub(crate) type Positions = ([f64; 3], Vec<[f32; 3]>);

/// Where one coordinate sits in fixed-size binary records: byte offset in the record, stored type, name.
pub(crate) struct CoordField<'a> {
    pub off: usize,
    pub kind: ScalarKind,
    pub name: &'a str,
}

/// Decodes x, y and z of `n` records of `stride` bytes starting at `base` straight into positions relative
/// to the cloud's origin (see [`assemble`] for how it is chosen). Going through f64 columns instead would
/// hold 24 bytes per point beside the mapped file and the positions: for a file of doubles that doubled the
/// reader's peak memory. The caller has checked that the records lie within `data`.
pub(crate) fn decode_positions(
    data: &[u8],
    path: &Path,
    n: usize,
    (base, stride): (usize, usize),
    xyz: &[CoordField; 3],
    big_endian: bool,
) -> Result<Positions> {
    let value = |i: usize, k: usize| -> f64 {
        let at = base + i * stride + xyz[k].off;
        data.get(at..)
            .and_then(|b| read_scalar(b, xyz[k].kind, big_endian))
            .unwrap_or(f64::NAN)
    };
    // Bounds and the first non-finite coordinate; min/max and the first index are order-independent.
    type Scan = ([f64; 3], [f64; 3], Option<(usize, usize)>);
    let empty = || -> Scan { ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3], None) };
    let (lo, hi, bad) = (0..n)
        .into_par_iter()
        .with_min_len(CHUNK)
        .fold(empty, |(mut lo, mut hi, bad), i| {
            let mut bad = bad;
            for k in 0..3 {
                let v = value(i, k);
                if !v.is_finite() {
                    bad = bad.or(Some((i, k)));
                }
                lo[k] = lo[k].min(v);
                hi[k] = hi[k].max(v);
            }
            (lo, hi, bad)
        })
        .reduce(empty, |a, b| {
            (
                [0, 1, 2].map(|k| a.0[k].min(b.0[k])),
                [0, 1, 2].map(|k| a.1[k].max(b.1[k])),
                match (a.2, b.2) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
            )
        });
    if let Some((i, k)) = bad {
        return Err(Error::format(
            path,
            format!("point {i}"),
            format!(
                "{} is {}; expected a finite coordinate",
                xyz[k].name,
                value(i, k)
            ),
        ));
    }
    let origin = origin_of(n, lo, hi);
    let names = [xyz[0].name, xyz[1].name, xyz[2].name];
    check_f32_span(path, origin, (lo, hi), n, value, names)?;
    let positions = (0..n)
        .into_par_iter()
        .with_min_len(CHUNK)
        .map(|i| [0, 1, 2].map(|k| (value(i, k) - origin[k]) as f32))
        .collect();
    Ok((origin, positions))
}

/// The origin of a cloud with coordinates in `[lo, hi]`: zero unless a coordinate is large enough that f32
/// would lose millimetres.
fn origin_of(n: usize, lo: [f64; 3], hi: [f64; 3]) -> [f64; 3] {
    let large = n > 0 && (0..3).any(|k| lo[k].abs().max(hi[k].abs()) >= LARGE_COORDINATE);
    if large { origin_for(lo) } else { [0.0; 3] }
}

/// Refuses coordinates too far from `origin` for an f32 position (beyond 3.4e38 m; only a corrupt file has
/// them), naming the first such point, where they would otherwise become infinite positions.
fn check_f32_span(
    path: &Path,
    origin: [f64; 3],
    (lo, hi): ([f64; 3], [f64; 3]),
    n: usize,
    coord: impl Fn(usize, usize) -> f64 + Sync,
    names: [&str; 3],
) -> Result<()> {
    let fits = |v: f64, k: usize| ((v - origin[k]) as f32).is_finite();
    if (0..3).all(|k| fits(lo[k], k) && fits(hi[k], k)) {
        return Ok(());
    }
    let bad = (0..n)
        .into_par_iter()
        .find_map_first(|i| (0..3).find(|&k| !fits(coord(i, k), k)).map(|k| (i, k)));
    match bad {
        Some((i, k)) => Err(Error::format(
            path,
            format!("point {i}"),
            format!(
                "{name} is {:e}, and the points' {name} spans {:e}..{:e}: wider than positions can hold \
                 (about 3e38); expected coordinates of one place",
                coord(i, k),
                lo[k],
                hi[k],
                name = names[k],
            ),
        )),
        None => Ok(()),
    }
}

/// The values of an integer attribute (ring, classification, return numbers) stored in a float or text column,
/// each checked to be a whole number from 0 to `max`: a class of 300 or a ring of -5 is a fault of the file,
/// which a clamp would hide.
fn integers(path: &Path, c: &Column, max: f64) -> Result<Vec<u32>> {
    match c
        .values
        .iter()
        .position(|&v| !(v.fract() == 0.0 && (0.0..=max).contains(&v)))
    {
        Some(i) => Err(Error::format(
            path,
            format!("point {i}"),
            format!(
                "{} is {}: expected a whole number from 0 to {max}",
                c.name, c.values[i]
            ),
        )),
        None => Ok(c.values.iter().map(|&v| v as u32).collect()),
    }
}

/// The warning for `extra` bytes after the `n` records a header declares, when they could hold at least one more
/// record of `record` bytes (a line break or padding after the data is not worth a word).
pub(crate) fn data_after_points(
    path: &Path,
    n: usize,
    record: usize,
    extra: usize,
) -> Option<String> {
    (record > 0 && extra >= record).then(|| {
        format!(
            "{}: {extra} bytes follow the {n} points the header declares (room for {} more); only the declared \
             points were read: is the header's point count right?",
            path.display(),
            extra / record
        )
    })
}

/// Builds a cloud from decoded columns: x, y and z become positions (unless `positions` were decoded
/// already, see [`decode_positions`]), known names their attributes, the rest extra dimensions.
pub(crate) fn assemble(
    path: &Path,
    positions: Option<Positions>,
    mut cols: Vec<Column>,
    n: usize,
) -> Result<Cloud> {
    // Skipped fields need not be decoded at all.
    cols.retain(|c| c.target != Target::Skip);
    let mut seen: Vec<Target> = Vec::new();
    for c in cols.iter_mut() {
        if c.values.len() != n {
            return Err(Error::format(
                path,
                format!("field {}", c.name),
                format!("has {} values, expected {n}", c.values.len()),
            ));
        }
        match c.target {
            Target::Extra | Target::Skip => {}
            ref t if seen.contains(t) => c.target = Target::Extra,
            ref t => seen.push(t.clone()),
        }
    }
    cols.retain(|c| c.target != Target::Skip);
    let take = |cols: &mut Vec<Column>, t: Target| -> Option<Column> {
        let i = cols.iter().position(|c| c.target == t)?;
        Some(cols.remove(i))
    };
    let (origin, positions) = match positions {
        Some(positions) => positions,
        None => positions_from_columns(path, &mut cols)?,
    };
    if positions.len() != n {
        return Err(Error::format(
            path,
            "positions",
            format!("has {} points, expected {n}", positions.len()),
        ));
    }
    let mut columns = Columns {
        positions,
        ..Columns::default()
    };
    let f32s = |c: Column| -> Vec<f32> { c.values.par_iter().map(|&v| v as f32).collect() };
    columns.intensity = take(&mut cols, Target::Intensity).map(f32s);

    columns.gamma = take(&mut cols, Target::Gamma).map(f32s);
    columns.time = take(&mut cols, Target::Time).map(|c| c.values);
    columns.ring = take(&mut cols, Target::Ring)
        .map(|c| integers(path, &c, 65535.0))
        .transpose()?
        .map(|v| v.into_iter().map(|x| x as u16).collect());
    let u8s = |c: Option<Column>| -> Result<Option<Vec<u8>>> {
        c.map(|c| integers(path, &c, 255.0))
            .transpose()
            .map(|v| v.map(|v| v.into_iter().map(|x| x as u8).collect()))
    };
    columns.classification = u8s(take(&mut cols, Target::Class))?;
    columns.return_number = u8s(take(&mut cols, Target::ReturnNumber))?;
    columns.number_of_returns = u8s(take(&mut cols, Target::NumberOfReturns))?;
    let nx = take(&mut cols, Target::Nx);
    let ny = take(&mut cols, Target::Ny);
    let nz = take(&mut cols, Target::Nz);
    columns.normals = normals_of(&[nx, ny, nz], n);
    let packed = take(&mut cols, Target::RgbPacked);
    let rgb = [
        take(&mut cols, Target::Red),
        take(&mut cols, Target::Green),
        take(&mut cols, Target::Blue),
    ];
    columns.color = match packed {
        Some(p) => {
            // Separate channels, if the file also has them, are kept as extras rather than lost.
            for c in rgb.into_iter().flatten() {
                cols.push(Column {
                    target: Target::Extra,
                    ..c
                });
            }
            Some(unpacked_colours(&p))
        }
        None => colours_of(&rgb, n),
    };
    columns.extra = cols
        .into_iter()
        .map(|c| {
            // `scalar_` is CloudCompare's prefix for scalar fields in PLY files, not part of the name.
            let name = match c.name.strip_prefix("scalar_") {
                Some(rest) if !rest.is_empty() => rest.to_string(),
                _ => c.name,
            };
            // Held at the declared width: a text value the type cannot hold converts as `as` does.
            ExtraDim::from_f64(name, c.kind, &c.values)
        })
        .collect();
    Cloud::from_columns(origin, columns).map_err(|e| Error::format(path, "fields", e.to_string()))
}

/// Normals from their three columns (a missing one reads 0), or `None` when the file has none of them.
fn normals_of(xyz: &[Option<Column>; 3], n: usize) -> Option<Vec<[f32; 3]>> {
    if xyz.iter().all(Option::is_none) {
        return None;
    }
    let get = |c: &Option<Column>, i: usize| {
        c.as_ref()
            .and_then(|c| c.values.get(i))
            .copied()
            .unwrap_or(0.0) as f32
    };
    let [x, y, z] = xyz;
    Some(
        (0..n)
            .into_par_iter()
            .map(|i| [get(x, i), get(y, i), get(z, i)])
            .collect(),
    )
}

/// Colours from a packed `rgb` column (0x00RRGGBB, PCL's convention), 8 bits a channel widened to 16.
fn unpacked_colours(packed: &Column) -> Vec<[u16; 3]> {
    packed
        .values
        .iter()
        .map(|&v| {
            let bits = v as u32;
            [
                ((bits >> 16) & 0xff) as u16 * 257,
                ((bits >> 8) & 0xff) as u16 * 257,
                (bits & 0xff) as u16 * 257,
            ]
        })
        .collect()
}

/// Colours from separate red, green and blue columns at their detected scale ([`colour_scales`]; a missing
/// channel reads 0), or `None` when the file has none of them.
fn colours_of(rgb: &[Option<Column>; 3], n: usize) -> Option<Vec<[u16; 3]>> {
    if rgb.iter().all(Option::is_none) {
        return None;
    }
    let [r, g, b] = rgb;
    let s = colour_scales([r, g, b]);
    let get = |c: &Option<Column>, i: usize, s: f64| {
        (c.as_ref()
            .and_then(|c| c.values.get(i))
            .copied()
            .unwrap_or(0.0)
            * s)
            .round()
            .clamp(0.0, 65535.0) as u16
    };
    Some(
        (0..n)
            .into_par_iter()
            .map(|i| [get(r, i, s[0]), get(g, i, s[1]), get(b, i, s[2])])
            .collect(),
    )
}

/// Positions from the x, y and z columns (removed from `cols`) and the origin they are relative to.
fn positions_from_columns(path: &Path, cols: &mut Vec<Column>) -> Result<Positions> {
    let take = |cols: &mut Vec<Column>, t: Target| -> Option<Column> {
        let i = cols.iter().position(|c| c.target == t)?;
        Some(cols.remove(i))
    };
    let names: Vec<String> = cols.iter().map(|c| c.name.clone()).collect();
    let (Some(x), Some(y), Some(z)) = (
        take(cols, Target::X),
        take(cols, Target::Y),
        take(cols, Target::Z),
    ) else {
        return Err(Error::format(
            path,
            "header",
            format!("expected fields x, y and z; found {}", names.join(" ")),
        ));
    };
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for (k, c) in [&x, &y, &z].into_iter().enumerate() {
        if let Some(i) = c.values.iter().position(|v| !v.is_finite()) {
            return Err(Error::format(
                path,
                format!("point {i}"),
                format!(
                    "{} is {}; expected a finite coordinate",
                    c.name,
                    c.values.get(i).copied().unwrap_or(f64::NAN)
                ),
            ));
        }
        let (l, h) = c
            .values
            .par_iter()
            .fold(
                || (f64::INFINITY, f64::NEG_INFINITY),
                |(l, h), &v| (l.min(v), h.max(v)),
            )
            .reduce(
                || (f64::INFINITY, f64::NEG_INFINITY),
                |a, b| (a.0.min(b.0), a.1.max(b.1)),
            );
        lo[k] = l;
        hi[k] = h;
    }
    let origin = origin_of(x.values.len(), lo, hi);
    let xyz = [&x, &y, &z];
    let coord = |i: usize, k: usize| xyz[k].values.get(i).copied().unwrap_or(f64::NAN);
    let names = [x.name.as_str(), y.name.as_str(), z.name.as_str()];
    check_f32_span(path, origin, (lo, hi), x.values.len(), coord, names)?;
    let positions = x
        .values
        .par_iter()
        .zip(y.values.par_iter())
        .zip(z.values.par_iter())
        .map(|((a, b), c)| {
            [
                (a - origin[0]) as f32,
                (b - origin[1]) as f32,
                (c - origin[2]) as f32,
            ]
        })
        .collect();
    Ok((origin, positions))
}

/// Keep only the values whose `keep` flag is set, in every column.
pub(crate) fn retain_rows(cols: &mut [Column], keep: &[bool]) {
    for c in cols.iter_mut() {
        let mut it = keep.iter();
        c.values.retain(|_| it.next().copied().unwrap_or(false));
    }
}
