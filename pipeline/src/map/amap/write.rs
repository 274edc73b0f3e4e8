//! Writing an .amap file: the sections laid out and checksummed, the header and table last; the bytes depend
//! only on the map.

use std::io::Write;
use std::path::Path;

use bytemuck::Pod;
use rayon::prelude::*;

use super::{
    HEADER_SIZE, Header, SECTION_ALIGN, SectionEntry, SectionKind, TABLE_ENTRY_SIZE, VERSION_MAJOR,
    VERSION_MINOR, align_up,
};
use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::map::PackedMap;
use crate::{Error, Result};

fn section_bytes(map: &PackedMap) -> Vec<(SectionKind, &[u8])> {
    fn bytes<T: Pod>(v: &[T]) -> &[u8] {
        bytemuck::cast_slice(v)
    }
    let mut out: Vec<(SectionKind, &[u8])> = vec![
        (SectionKind::Buckets, bytes(&map.buckets)),
        (SectionKind::Positions, bytes(&map.positions)),
    ];
    if let Some(v) = &map.normals {
        out.push((SectionKind::Normals, bytes(v)));
    }
    if let Some(v) = &map.gamma {
        out.push((SectionKind::Gamma, bytes(v)));
    }
    if let Some(v) = &map.spacing {
        out.push((SectionKind::Spacing, bytes(v)));
    }
    if let Some(v) = &map.surface_offset {
        out.push((SectionKind::SurfaceOffset, bytes(v)));
    }
    if let Some(v) = &map.intensity {
        out.push((SectionKind::Intensity, bytes(v)));
    }
    if let Some(v) = &map.reflectance {
        out.push((SectionKind::Reflectance, bytes(v)));
    }
    if let Some(v) = &map.color {
        out.push((SectionKind::Color, bytes(v)));
    }
    if let Some(v) = &map.classification {
        out.push((SectionKind::Classification, v.as_slice()));
    }
    out.push((SectionKind::Metadata, map.metadata_toml.as_bytes()));
    out
}

/// Write `map` to `path` as an .amap file (atomically: a temporary file renamed into place).
///
/// The output depends only on the map: two writes of equal maps give identical bytes.
pub fn write(map: &PackedMap, path: &Path) -> Result<()> {
    map.check().map_err(|m| Error::parameter("map", m))?;
    if map.is_empty() {
        return Err(Error::parameter("map", "the map has no points"));
    }
    let sections = section_bytes(map);
    let crcs: Vec<u32> = sections
        .par_iter()
        .map(|(_, b)| crc32c::crc32c(b))
        .collect();
    let table_offset = HEADER_SIZE;
    let table_len = sections.len() * TABLE_ENTRY_SIZE;
    let mut at = table_offset + table_len;
    let mut entries = Vec::with_capacity(sections.len());
    let mut attribute_flags = 0;
    for ((kind, bytes), crc) in sections.iter().zip(&crcs) {
        at = align_up(at).ok_or_else(|| Error::parameter("map", "too large"))?;
        entries.push(SectionEntry {
            kind: kind.id(),
            element_size: kind.element_size() as u32,
            offset: at as u64,
            length: bytes.len() as u64,
            crc32c: *crc,
        });
        attribute_flags |= kind.flag().unwrap_or(0);
        at += bytes.len();
    }
    let file_size = at;
    let mut table = Vec::with_capacity(table_len);
    for e in &entries {
        table.extend_from_slice(&e.encode());
    }
    let (bounds_min, bounds_max) = crate::cloud::position_bounds(&map.positions);
    let header = Header {
        version_major: VERSION_MAJOR,
        version_minor: VERSION_MINOR,
        file_size: file_size as u64,
        point_count: map.len() as u64,
        bucket_count: map.buckets.len() as u64,
        section_count: sections.len() as u32,
        attribute_flags,
        section_table_offset: table_offset as u64,
        section_table_crc: crc32c::crc32c(&table),
        origin: map.origin,
        resolution: map.resolution,
        bucket_size: map.bucket_size,
        morton_offset: map.morton_offset,
        bounds_min,
        bounds_max,
    }
    .encode();
    write_atomic_buffered(path, |w| {
        let err = io_err(path);
        w.write_all(&header).map_err(&err)?;
        w.write_all(&table).map_err(&err)?;
        let mut pos = table_offset + table_len;
        let zeros = [0u8; SECTION_ALIGN];
        for ((_, bytes), e) in sections.iter().zip(&entries) {
            let pad = e.offset as usize - pos;
            w.write_all(&zeros[..pad]).map_err(&err)?;
            w.write_all(bytes).map_err(&err)?;
            pos = e.offset as usize + bytes.len();
        }
        Ok(())
    })
}
