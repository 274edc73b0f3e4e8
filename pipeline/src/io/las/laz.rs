//! LAZ point data: the laszip VLR, the chunk table and (LAS 1.4) the layer sizes are checked first, because
//! `laz` allocates from them without checking; then chunks are decoded in parallel, a piece at a time, straight
//! into their place in the columns (or front to back in bounded batches where chunks cannot be trusted).

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use rayon::prelude::*;

use super::decode::{Columns, ColumnsMut, Transform, fill, not_finite};
use super::header::{Header, format_layout, le_u16, le_u32};
use super::layout::Layout;
use crate::{Error, Result};

/// A LAZ chunk claiming more decoded bytes than this multiple of its compressed size (plus a slack) is decoded
/// sequentially in bounded pieces instead of being given a buffer of the claimed size up front.
const LAZ_TRUSTED_RATIO: u64 = 64;
/// Decoded LAZ records are converted this many bytes at a time, from a buffer on the stack that stays in L2
/// between decoding and conversion (at least one record: a record is at most 65,535 bytes).
const LAZ_PIECE_BYTES: usize = 1 << 16;

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

pub(super) fn read_laz_points(
    data: &[u8],
    path: &Path,
    header: &Header,
    layout: &Layout,
) -> Result<Columns> {
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
pub(super) fn read_chunk_table(
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
pub(super) fn read_laz_sequential(
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
