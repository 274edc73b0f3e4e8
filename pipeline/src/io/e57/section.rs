//! A scan's compressed vector section (E57 section 9), decoded here rather than with the crate's iterators: the
//! file's pages (each CRC checked once), the data packets and the bytestreams of every field.

use std::path::Path;

use e57::{PointCloud, RecordDataType};

use super::sink::{ScanData, Sink};
use crate::{Error, Result};

const PAGE_SIZE: u64 = 1024;
/// Payload bytes of a page (the last four hold its CRC-32C).
const PAGE_DATA: u64 = 1020;

/// The file without its page checksums ("logical" offsets), checking each page's CRC the first time it is read.
pub(super) struct Pages<'a> {
    data: &'a [u8],
    checked: Vec<bool>,
    path: &'a Path,
}

impl<'a> Pages<'a> {
    pub(super) fn new(data: &'a [u8], path: &'a Path) -> Pages<'a> {
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
pub(super) fn decode_scan(
    pages: &mut Pages,
    pc: &PointCloud,
    si: usize,
    path: &Path,
) -> Result<ScanData> {
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
