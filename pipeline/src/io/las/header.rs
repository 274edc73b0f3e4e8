//! The LAS header and its variable-length records: every offset and count is checked against the bytes present
//! before anything is read or allocated from it.

use std::path::Path;

use crate::{Error, Result};

/// What the file header says, with offsets already checked against the file size.
pub(super) struct Header<'a> {
    pub(super) version: (u8, u8),
    pub(super) offset_to_points: usize,
    pub(super) format: u8,
    pub(super) compressed: bool,
    pub(super) record_len: usize,
    pub(super) count: u64,
    pub(super) scale: [f64; 3],
    pub(super) offset: [f64; 3],
    pub(super) min: [f64; 3],
    pub(super) max: [f64; 3],
    pub(super) vlrs: Vec<Vlr<'a>>,
}

/// A variable length record (or extended one), borrowing its payload from the file.
pub(super) struct Vlr<'a> {
    user_id: &'a [u8],
    record_id: u16,
    pub(super) data: &'a [u8],
    /// Byte offset of the payload in the file, for error messages.
    pub(super) at: usize,
}

impl Vlr<'_> {
    pub(super) fn is(&self, user_id: &str, record_id: u16) -> bool {
        self.user_id == user_id.as_bytes() && self.record_id == record_id
    }
}

pub(super) fn le_u16(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
pub(super) fn le_u32(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
pub(super) fn le_u64(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}
pub(super) fn le_f64(b: &[u8], o: usize) -> Option<f64> {
    Some(f64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// A fixed-size text field up to its first NUL.
pub(super) fn c_str(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

/// Standard record length of a point format and the byte offsets of its optional fields: time, RGB, NIR.
type FormatLayout = (usize, Option<usize>, Option<usize>, Option<usize>);

/// The [`FormatLayout`] of a point format (0-10).
pub(super) fn format_layout(format: u8) -> Option<FormatLayout> {
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

pub(super) fn parse_header<'a>(data: &'a [u8], path: &Path) -> Result<Header<'a>> {
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
