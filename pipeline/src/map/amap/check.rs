//! Every check an .amap file passes on open, in the order of trust: header, table, layout, checksums, presence,
//! contents and metadata.

use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;

use bytemuck::AnyBitPattern;

use super::{
    HEADER_CRC_OFFSET, HEADER_SIZE, Header, MAGIC, MAX_SECTIONS, SECTION_ALIGN, SectionEntry,
    SectionKind, TABLE_ENTRY_SIZE, VERSION_MAJOR,
};
use crate::map::{Bucket, MapMetadata, check_buckets, check_frame};
use crate::{Error, Result};

pub(super) fn slot(kind: SectionKind) -> usize {
    kind.id() as usize - 1
}

type Sections = [Option<Range<usize>>; SectionKind::ALL.len()];

fn place_of(kind: Option<SectionKind>, id: u32, offset: u64, length: u64) -> String {
    match kind {
        Some(k) => format!("section '{}' (offset {offset}, {length} bytes)", k.name()),
        None => format!("section of kind {id} (offset {offset}, {length} bytes)"),
    }
}

/// Check every byte of an .amap file; return the header, the section ranges and the metadata.
///
/// The order is the order of trust: the header's own checksum before any field of it is used, the table's
/// checksum before its entries, the layout (bounds, alignment, overlap, padding) before the section checksums,
/// and those before any section is viewed in place.
pub(super) fn check(path: &Path, bytes: &[u8]) -> Result<(Header, Sections, String, MapMetadata)> {
    let (h, n) = check_header(path, bytes)?;
    let (entries, table_end) = check_table(path, bytes, &h)?;
    let sections = locate_sections(path, bytes, &h, &entries, table_end)?;
    check_section_crcs(path, bytes, &entries)?;
    check_presence(path, &h, &sections)?;
    check_contents(path, bytes, &sections, n)?;
    let (text, metadata) = parse_metadata(path, bytes, &sections)?;
    Ok((h, sections, text, metadata))
}

/// The place named in errors about section `k`: with its offset and length when the file has one.
fn place_for(sections: &Sections, k: SectionKind) -> String {
    match &sections[slot(k)] {
        Some(r) => place_of(Some(k), k.id(), r.start as u64, r.len() as u64),
        None => format!("section '{}'", k.name()),
    }
}

/// The magic bytes, and a major version this build reads.
fn check_version(path: &Path, bytes: &[u8]) -> Result<()> {
    let len = bytes.len();
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(Error::format(
            path,
            "header",
            "not an aerie map: the file does not start with \"AERIEMAP\"",
        ));
    }
    let (Some(&[a, b]), Some(&[c, d])) = (bytes.get(8..10), bytes.get(10..12)) else {
        return Err(Error::format(
            path,
            "header",
            format!(
                "the file is {len} bytes, shorter than the {HEADER_SIZE}-byte header: the file is truncated"
            ),
        ));
    };
    let (major, minor) = (u16::from_le_bytes([a, b]), u16::from_le_bytes([c, d]));
    if major > VERSION_MAJOR {
        return Err(Error::unsupported(
            path,
            format!(
                "map format {major}.x is newer than this aerie (reads {VERSION_MAJOR}.x): update aerie"
            ),
        ));
    }
    if major < VERSION_MAJOR {
        return Err(Error::unsupported(
            path,
            format!(
                "map format {major}.{minor} is older than any this aerie reads ({VERSION_MAJOR}.x)"
            ),
        ));
    }
    Ok(())
}

/// Magic, version, header checksum, then the header's values; returns the header and the point count.
fn check_header(path: &Path, bytes: &[u8]) -> Result<(Header, usize)> {
    let len = bytes.len();
    check_version(path, bytes)?;
    let Some(head) = bytes.get(..HEADER_SIZE) else {
        return Err(Error::format(
            path,
            "header",
            format!(
                "the file is {len} bytes, shorter than the {HEADER_SIZE}-byte header: the file is truncated"
            ),
        ));
    };
    let mut hb = [0u8; HEADER_SIZE];
    hb.copy_from_slice(head);
    let stored_crc = u32::from_le_bytes([hb[252], hb[253], hb[254], hb[255]]);
    let header_place = format!("header (offset 0, {HEADER_SIZE} bytes)");
    if crc32c::crc32c(&hb[..HEADER_CRC_OFFSET]) != stored_crc {
        return Err(Error::format(
            path,
            header_place,
            "checksum mismatch: the file is corrupted",
        ));
    }
    let header_size = u32::from_le_bytes([hb[12], hb[13], hb[14], hb[15]]);
    if header_size as usize != HEADER_SIZE {
        return Err(Error::format(
            path,
            header_place,
            format!("header size {header_size}, expected {HEADER_SIZE}"),
        ));
    }
    let h = Header::decode(&hb);
    if h.file_size != len as u64 {
        let what = if (len as u64) < h.file_size {
            "the file is truncated"
        } else {
            "the file has extra bytes"
        };
        return Err(Error::format(
            path,
            header_place,
            format!(
                "the header says the file is {} bytes but it is {len}: {what}",
                h.file_size
            ),
        ));
    }
    check_frame(h.origin, h.resolution, h.bucket_size)
        .map_err(|m| Error::format(path, header_place, m))?;
    let n = usize::try_from(h.point_count)
        .ok()
        .filter(|&n| n > 0 && u32::try_from(n).is_ok())
        .ok_or_else(|| {
            Error::format(
                path,
                format!("header (offset 0, {HEADER_SIZE} bytes)"),
                format!("point count {}: expected 1..={}", h.point_count, u32::MAX),
            )
        })?;

    Ok((h, n))
}

/// The section table: inside the file after the header, checksum verified; returns its entries and where it ends.
fn check_table(path: &Path, bytes: &[u8], h: &Header) -> Result<(Vec<SectionEntry>, usize)> {
    let len = bytes.len();
    let count = h.section_count as usize;
    let table_start = usize::try_from(h.section_table_offset).unwrap_or(usize::MAX);
    let table_end = (count <= MAX_SECTIONS)
        .then(|| table_start.checked_add(count * TABLE_ENTRY_SIZE))
        .flatten()
        .filter(|&e| table_start >= HEADER_SIZE && e <= len);
    let table_place = format!(
        "section table (offset {}, {} entries)",
        h.section_table_offset, h.section_count
    );
    let Some(table_end) = table_end else {
        return Err(Error::format(
            path,
            table_place,
            format!(
                "expected at most {MAX_SECTIONS} entries after the header and inside the {len}-byte file"
            ),
        ));
    };
    let table = &bytes[table_start..table_end];
    if crc32c::crc32c(table) != h.section_table_crc {
        return Err(Error::format(
            path,
            table_place,
            "checksum mismatch: the file is corrupted",
        ));
    }
    let entries: Vec<SectionEntry> = table
        .chunks_exact(TABLE_ENTRY_SIZE)
        .map(|c| {
            let mut e = [0u8; TABLE_ENTRY_SIZE];
            e.copy_from_slice(c);
            SectionEntry::decode(&e)
        })
        .collect();
    Ok((entries, table_end))
}

/// Each entry's range inside the file, aligned, of the size its kind and the header imply, one per kind; then
/// every byte after the table is in a section or is zero padding, so any flipped byte is caught.
fn locate_sections(
    path: &Path,
    bytes: &[u8],
    h: &Header,
    entries: &[SectionEntry],
    table_end: usize,
) -> Result<Sections> {
    let mut sections: Sections = Default::default();
    let mut spans: Vec<(usize, usize, String)> = Vec::with_capacity(entries.len());
    for e in entries {
        let (range, place) = locate_entry(path, bytes.len(), h, e, table_end)?;
        if let Some(k) = SectionKind::from_id(e.kind) {
            let s = &mut sections[slot(k)];
            if s.is_some() {
                return Err(Error::format(path, place, "a second section of this kind"));
            }
            *s = Some(range.clone());
        }
        spans.push((range.start, range.end, place));
    }
    check_padding(path, bytes, table_end, spans)?;
    Ok(sections)
}

/// One table entry's byte range and the place that names it in errors.
fn locate_entry(
    path: &Path,
    len: usize,
    h: &Header,
    e: &SectionEntry,
    table_end: usize,
) -> Result<(Range<usize>, String)> {
    let kind = SectionKind::from_id(e.kind);
    let place = place_of(kind, e.kind, e.offset, e.length);
    let range = usize::try_from(e.offset)
        .ok()
        .zip(usize::try_from(e.length).ok())
        .and_then(|(o, l)| Some(o..o.checked_add(l)?))
        .filter(|r| r.start >= table_end && r.end <= len);
    let Some(range) = range else {
        return Err(Error::format(
            path,
            place,
            format!(
                "the section lies outside the file's {table_end}..{len} bytes: the file is truncated or corrupted"
            ),
        ));
    };
    if range.start % SECTION_ALIGN != 0 {
        return Err(Error::format(
            path,
            place,
            format!("the section is not aligned to {SECTION_ALIGN} bytes"),
        ));
    }
    let Some(k) = kind else {
        return Ok((range, place));
    };
    if e.element_size as usize != k.element_size() {
        return Err(Error::format(
            path,
            place,
            format!(
                "element size {}, expected {}",
                e.element_size,
                k.element_size()
            ),
        ));
    }
    let expected = match k {
        SectionKind::Buckets => Some(h.bucket_count),
        SectionKind::Metadata => None,
        _ => Some(h.point_count),
    };
    if let Some(expected) = expected
        && Some(e.length) != expected.checked_mul(u64::from(e.element_size))
    {
        return Err(Error::format(
            path,
            place,
            format!(
                "{} bytes where {expected} elements of {} bytes were expected",
                e.length, e.element_size
            ),
        ));
    }
    Ok((range, place))
}

/// Sections do not overlap and the bytes between and after them are zero.
fn check_padding(
    path: &Path,
    bytes: &[u8],
    table_end: usize,
    mut spans: Vec<(usize, usize, String)>,
) -> Result<()> {
    spans.sort_by_key(|s| (s.0, s.1));
    let mut at = table_end;
    for (start, end, place) in &spans {
        if *start < at {
            return Err(Error::format(
                path,
                place.clone(),
                "the section overlaps the one before it",
            ));
        }
        if bytes[at..*start].iter().any(|&b| b != 0) {
            return Err(Error::format(
                path,
                format!("padding before {place}"),
                "non-zero padding: the file is corrupted",
            ));
        }
        at = *end;
    }
    if bytes[at..].iter().any(|&b| b != 0) {
        return Err(Error::format(
            path,
            format!("padding after the last section (offset {at})"),
            "non-zero bytes: the file is corrupted",
        ));
    }
    Ok(())
}

/// Section checksums, in parallel; the first failure in table order is reported.
fn check_section_crcs(path: &Path, bytes: &[u8], entries: &[SectionEntry]) -> Result<()> {
    let bad = entries
        .par_iter()
        .map(|e| {
            let (o, l) = (e.offset as usize, e.length as usize);
            crc32c::crc32c(&bytes[o..o + l]) != e.crc32c
        })
        .collect::<Vec<bool>>();
    if let Some(e) = entries.iter().zip(&bad).find(|(_, b)| **b).map(|(e, _)| e) {
        return Err(Error::format(
            path,
            place_of(SectionKind::from_id(e.kind), e.kind, e.offset, e.length),
            "checksum mismatch: the file is corrupted",
        ));
    }
    Ok(())
}

/// The required sections exist, and the header's attribute flags list exactly the sections present.
fn check_presence(path: &Path, h: &Header, sections: &Sections) -> Result<()> {
    for k in [
        SectionKind::Buckets,
        SectionKind::Positions,
        SectionKind::Metadata,
    ] {
        if sections[slot(k)].is_none() {
            return Err(Error::format(
                path,
                place_for(sections, k),
                "the section is missing",
            ));
        }
    }
    for k in SectionKind::ALL {
        if let Some(f) = k.flag() {
            let flagged = h.attribute_flags & f != 0;
            let present = sections[slot(k)].is_some();
            if flagged != present {
                return Err(Error::format(
                    path,
                    place_for(sections, k),
                    if flagged {
                        "the header flags say the section is present but it is missing"
                    } else {
                        "the section is present but the header flags do not list it"
                    },
                ));
            }
        }
    }
    Ok(())
}

/// Every section can be viewed in place at its element type, the buckets are consistent, and every point is
/// finite and inside its bucket's bounds.
fn check_contents(path: &Path, bytes: &[u8], sections: &Sections, n: usize) -> Result<()> {
    fn cast<'a, T: AnyBitPattern>(
        path: &Path,
        place: String,
        bytes: &'a [u8],
        r: Option<&Range<usize>>,
    ) -> Result<&'a [T]> {
        let r = r.cloned().unwrap_or(0..0);
        bytemuck::try_cast_slice(&bytes[r]).map_err(|e| {
            Error::format(
                path,
                place,
                format!("cannot view the section in place: {e:?}"),
            )
        })
    }
    let buckets: &[Bucket] = cast(
        path,
        place_for(sections, SectionKind::Buckets),
        bytes,
        sections[slot(SectionKind::Buckets)].as_ref(),
    )?;
    let positions: &[[f32; 3]] = cast(
        path,
        place_for(sections, SectionKind::Positions),
        bytes,
        sections[slot(SectionKind::Positions)].as_ref(),
    )?;
    // Casts of the other sections are checked too, so views never come out short.
    for k in [
        SectionKind::Normals,
        SectionKind::Gamma,
        SectionKind::Intensity,
        SectionKind::Reflectance,
    ] {
        cast::<f32>(
            path,
            place_for(sections, k),
            bytes,
            sections[slot(k)].as_ref(),
        )?;
    }
    cast::<[u16; 3]>(
        path,
        place_for(sections, SectionKind::Color),
        bytes,
        sections[slot(SectionKind::Color)].as_ref(),
    )?;
    check_buckets(buckets, n)
        .map_err(|m| Error::format(path, place_for(sections, SectionKind::Buckets), m))?;
    for (i, b) in buckets.iter().enumerate() {
        let r = b.first as usize..b.first as usize + b.count as usize;
        for (j, p) in positions[r.clone()].iter().enumerate() {
            let inside = (0..3).all(|a| p[a].is_finite() && b.min[a] <= p[a] && p[a] <= b.max[a]);
            if !inside {
                return Err(Error::format(
                    path,
                    place_for(sections, SectionKind::Positions),
                    format!(
                        "point {} ({p:?}) lies outside the bounds of bucket {i} ({:?}..{:?})",
                        r.start + j,
                        b.min,
                        b.max
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The metadata section: UTF-8 TOML in the map metadata schema.
fn parse_metadata(path: &Path, bytes: &[u8], sections: &Sections) -> Result<(String, MapMetadata)> {
    let meta_bytes = &bytes[sections[slot(SectionKind::Metadata)]
        .clone()
        .unwrap_or(0..0)];
    let text = std::str::from_utf8(meta_bytes).map_err(|e| {
        Error::format(
            path,
            place_for(sections, SectionKind::Metadata),
            format!("not UTF-8 (at byte {})", e.valid_up_to()),
        )
    })?;
    let metadata: MapMetadata = toml::from_str(text).map_err(|e| {
        Error::format(
            path,
            place_for(sections, SectionKind::Metadata),
            format!("not valid map metadata TOML: {}", e.message()),
        )
    })?;
    Ok((text.to_string(), metadata))
}
