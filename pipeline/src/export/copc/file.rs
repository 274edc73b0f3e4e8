//! The bytes of a COPC file (https://copc.io, COPC 1.0): the LAS 1.4 header, the `copc info` VLR first, the
//! laszip VLR, the records' own VLRs, the point data (each node one variable-size LAZ chunk, then the chunk
//! table), and the hierarchy EVLR; and the hierarchy read back for [`super::CopcSummary`].

use std::io::{Cursor, Write};
use std::path::Path;

use laz::laszip::{ChunkTable, ChunkTableEntry};
use laz::{LasZipCompressor, LazVlr};

use super::octree::Key;
use crate::{Error, Result};

/// Bytes of a LAS 1.4 header.
pub(super) const HEADER_LEN: usize = 375;
/// Bytes of a VLR's header.
const VLR_HEADER_LEN: usize = 54;
/// Bytes of an EVLR's header.
const EVLR_HEADER_LEN: usize = 60;
/// Bytes of the `copc info` VLR's data.
pub(super) const INFO_LEN: usize = 160;
/// Bytes of one hierarchy entry: key (4 x i32), offset (u64), byte size (i32), point count (i32).
pub(super) const ENTRY_LEN: usize = 32;
/// The hierarchy EVLR's record id (user id `copc`).
pub(super) const HIERARCHY_RECORD: u16 = 1000;

/// The octree's geometry and the file's figures, as the `copc info` VLR holds them (metres).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Info {
    /// The root cube's centre.
    pub center: [f64; 3],
    /// Half the root cube's edge.
    pub halfsize: f64,
    /// Distance between points at the root: its edge over the grid's cells.
    pub spacing: f64,
    /// The lowest and highest GPS time (0 and 0 without times).
    pub gps_time: [f64; 2],
}

/// Everything a COPC file is made of, ready to be laid out.
pub(super) struct Parts<'a> {
    /// The header, its counts and offsets filled in by [`write`].
    pub header: las::raw::Header,
    /// The octree's geometry.
    pub info: Info,
    /// The compression's description (variable-size chunks).
    pub laz: &'a LazVlr,
    /// The records' own VLRs (extra bytes, CRS).
    pub vlrs: &'a [las::Vlr],
    /// Each node's key, its point count and its compressed chunk, in file order.
    pub nodes: Vec<(Key, u64, Vec<u8>)>,
}

/// Compresses `records` (whole records of `vlr`'s layout) as one LAZ chunk, alone: the bytes between the chunk
/// table's offset and the chunk table that `laz` writes for them.
pub(super) fn compress_chunk(records: &[u8], vlr: &LazVlr) -> std::io::Result<Vec<u8>> {
    let mut compressor = LasZipCompressor::new(Cursor::new(Vec::new()), vlr.clone())
        .map_err(std::io::Error::other)?;
    compressor.compress_many(records)?;
    compressor.done()?;
    let bytes = compressor.into_inner().into_inner();
    let table_at = bytes
        .get(..8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()))
        .and_then(|t| usize::try_from(t).ok())
        .filter(|&t| (8..=bytes.len()).contains(&t))
        .ok_or_else(|| std::io::Error::other("laz wrote no chunk table offset"))?;
    Ok(bytes[8..table_at].to_vec())
}

/// Writes `parts` to `w` as a COPC file.
pub(super) fn write(w: &mut impl Write, mut parts: Parts<'_>) -> std::io::Result<()> {
    let mut laz_data = Vec::new();
    parts.laz.write_to(&mut laz_data)?;
    let mut vlrs = Vec::new();
    vlr(
        &mut vlrs,
        "laszip encoded",
        22204,
        "lazperf variant",
        &laz_data,
    )?;
    for v in parts.vlrs {
        vlr(&mut vlrs, &v.user_id, v.record_id, &v.description, &v.data)?;
    }
    let points_at = HEADER_LEN + VLR_HEADER_LEN + INFO_LEN + vlrs.len();
    let mut table = ChunkTable::with_capacity(parts.nodes.len());
    let mut entries = Vec::with_capacity(parts.nodes.len() * ENTRY_LEN);
    let mut at = (points_at + 8) as u64;
    for (key, count, chunk) in &parts.nodes {
        let size = chunk.len() as u64;
        table.push(ChunkTableEntry {
            point_count: *count,
            byte_count: size,
        });
        for v in [key.d, key.x, key.y, key.z] {
            entries.extend_from_slice(&v.to_le_bytes());
        }
        entries.extend_from_slice(&at.to_le_bytes());
        entries.extend_from_slice(&(size as i32).to_le_bytes());
        entries.extend_from_slice(&(*count as i32).to_le_bytes());
        at += size;
    }
    let table_at = at;
    let mut table_bytes = Vec::new();
    table.write_to(&mut table_bytes, parts.laz)?;
    let evlr_at = table_at + table_bytes.len() as u64;
    let h = &mut parts.header;
    h.offset_to_point_data = points_at as u32;
    h.number_of_variable_length_records = 2 + parts.vlrs.len() as u32;
    h.evlr = Some(las::raw::header::Evlr {
        start_of_first_evlr: evlr_at,
        number_of_evlrs: 1,
    });
    let mut head = Vec::with_capacity(HEADER_LEN);
    h.write_to(&mut head).map_err(std::io::Error::other)?;
    w.write_all(&head)?;
    let hierarchy_at = evlr_at + EVLR_HEADER_LEN as u64;
    let info = info_bytes(&parts.info, hierarchy_at, entries.len() as u64);
    vlr(w, "copc", 1, "copc info", &info)?;
    w.write_all(&vlrs)?;
    w.write_all(&table_at.to_le_bytes())?;
    for (_, _, chunk) in &parts.nodes {
        w.write_all(chunk)?;
    }
    w.write_all(&table_bytes)?;
    evlr_header(
        w,
        "copc",
        HIERARCHY_RECORD,
        "EPT hierarchy",
        entries.len() as u64,
    )?;
    w.write_all(&entries)
}

/// The `copc info` VLR's data: centre, half-size, spacing, the root hierarchy page, the GPS time range.
fn info_bytes(info: &Info, hierarchy_at: u64, hierarchy_len: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(INFO_LEN);
    for v in info.center.iter().chain([&info.halfsize, &info.spacing]) {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&hierarchy_at.to_le_bytes());
    b.extend_from_slice(&hierarchy_len.to_le_bytes());
    for v in info.gps_time {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.resize(INFO_LEN, 0);
    b
}

/// `text` in a fixed field of `len` bytes, padded with zeros.
fn fixed(text: &str, len: usize) -> Vec<u8> {
    let mut b = text.as_bytes()[..text.len().min(len)].to_vec();
    b.resize(len, 0);
    b
}

/// Writes a VLR: its 54-byte header and `data`.
fn vlr(
    w: &mut impl Write,
    user: &str,
    record: u16,
    about: &str,
    data: &[u8],
) -> std::io::Result<()> {
    let len =
        u16::try_from(data.len()).map_err(|_| std::io::Error::other("a VLR over 65535 bytes"))?;
    w.write_all(&[0, 0])?;
    w.write_all(&fixed(user, 16))?;
    w.write_all(&record.to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&fixed(about, 32))?;
    w.write_all(data)
}

/// Writes an EVLR's 60-byte header, for `len` bytes of data.
fn evlr_header(
    w: &mut impl Write,
    user: &str,
    record: u16,
    about: &str,
    len: u64,
) -> std::io::Result<()> {
    w.write_all(&[0, 0])?;
    w.write_all(&fixed(user, 16))?;
    w.write_all(&record.to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&fixed(about, 32))
}

/// One node as the hierarchy lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// Where it is.
    pub key: Key,
    /// Its points.
    pub points: u64,
}

/// Reads a COPC file's `copc info` VLR and its whole hierarchy (every page, depth first); `None` when `data` is
/// not a COPC file (not LAS 1.4 whose first VLR is `copc` 1). `path` names the file in errors.
pub(super) fn read(data: &[u8], path: &Path) -> Result<Option<(Info, Vec<Entry>)>> {
    let first = HEADER_LEN + VLR_HEADER_LEN;
    let is_copc = data.len() >= first + INFO_LEN
        && data.starts_with(b"LASF")
        && data[24..26] == [1, 4]
        && data[HEADER_LEN + 2..HEADER_LEN + 6] == *b"copc"
        && data[HEADER_LEN + 6..HEADER_LEN + 18]
            .iter()
            .all(|&b| b == 0)
        && data[HEADER_LEN + 18..HEADER_LEN + 20] == 1u16.to_le_bytes();
    if !is_copc {
        return Ok(None);
    }
    let f64_at = |o: usize| f64::from_le_bytes(data[o..o + 8].try_into().unwrap_or_default());
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().unwrap_or_default());
    let info = Info {
        center: std::array::from_fn(|k| f64_at(first + 8 * k)),
        halfsize: f64_at(first + 24),
        spacing: f64_at(first + 32),
        gps_time: [f64_at(first + 56), f64_at(first + 64)],
    };
    let mut entries = Vec::new();
    page(
        data,
        path,
        u64_at(first + 40),
        u64_at(first + 48),
        &mut entries,
        0,
    )?;
    Ok(Some((info, entries)))
}

/// Reads the hierarchy page at `at` (`len` bytes) into `out`, and the pages its entries point to.
fn page(
    data: &[u8],
    path: &Path,
    at: u64,
    len: u64,
    out: &mut Vec<Entry>,
    depth: u32,
) -> Result<()> {
    let place = format!("copc hierarchy page at byte {at}");
    let end = at.checked_add(len).filter(|&e| e <= data.len() as u64);
    let (Some(end), true) = (end, len.is_multiple_of(ENTRY_LEN as u64) && depth < 64) else {
        return Err(Error::format(
            path,
            place,
            format!(
                "{len} bytes of 32-byte entries do not fit in the file's {} bytes",
                data.len()
            ),
        ));
    };
    for e in data[at as usize..end as usize].chunks_exact(ENTRY_LEN) {
        let i32_at = |o: usize| i32::from_le_bytes(e[o..o + 4].try_into().unwrap_or_default());
        let key = Key {
            d: i32_at(0),
            x: i32_at(4),
            y: i32_at(8),
            z: i32_at(12),
        };
        let offset = u64::from_le_bytes(e[16..24].try_into().unwrap_or_default());
        let (size, count) = (i32_at(24), i32_at(28));
        match count {
            -1 => page(data, path, offset, size.max(0) as u64, out, depth + 1)?,
            c if c >= 0 => out.push(Entry {
                key,
                points: c as u64,
            }),
            c => {
                return Err(Error::format(
                    path,
                    place,
                    format!("node {key:?} has {c} points"),
                ));
            }
        }
    }
    Ok(())
}
