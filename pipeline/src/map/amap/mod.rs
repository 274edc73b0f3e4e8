//! The .amap packed map file: writer and memory-mapped reader. Specified in docs/amap-format.md.
//!
//! Layout: a 256-byte header (with its own CRC32C), a section table (32 bytes per section, CRC32C in the
//! header), then sections each starting at a multiple of 64 bytes and each with its own CRC32C. The reader
//! checks everything on open (magic, version, checksums, bounds, alignment, bucket table) and then hands out
//! slices cast straight from the mapped bytes: nothing is parsed or copied per point.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytemuck::{AnyBitPattern, Pod};
use rayon::prelude::*;

use super::{
    Bucket, CloudParts, MapMetadata, MapView, PackedMap, check_buckets, check_frame,
    cloud_from_parts,
};
use crate::io::atomic::{io_err, write_atomic_buffered};
use crate::{Cloud, Error, Result};

/// File magic, bytes 0..8.
pub const MAGIC: [u8; 8] = *b"AERIEMAP";
/// Format version written by this aerie. Readers accept any minor version of their major version.
pub const VERSION_MAJOR: u16 = 1;
/// Minor format version written by this aerie (additions that older readers of the same major version skip).
pub const VERSION_MINOR: u16 = 2;
/// Size of the header, bytes; the section table follows it.
pub const HEADER_SIZE: usize = 256;
/// Size of one section table entry, bytes.
pub const TABLE_ENTRY_SIZE: usize = 32;
/// Every section starts at a multiple of this.
pub const SECTION_ALIGN: usize = 64;
/// Readers refuse tables longer than this (a corrupt count cannot make them walk far).
pub const MAX_SECTIONS: usize = 1024;

/// Byte offset of the header CRC32C (which covers bytes `0..HEADER_CRC_OFFSET`).
const HEADER_CRC_OFFSET: usize = 252;

/// Attribute flags in the header (bit set: the section is present).
pub mod flags {
    /// Per-point unit normals (`f32[3]`).
    pub const NORMALS: u32 = 1 << 0;
    /// Per-point plane thickness (`f32`).
    pub const GAMMA: u32 = 1 << 1;
    /// Per-point intensity as the sources stored it (`f32`).
    pub const INTENSITY: u32 = 1 << 2;
    /// Per-point reflectance in 0..1 for the simulator (`f32`).
    pub const REFLECTANCE: u32 = 1 << 3;
    /// Per-point colour, 16 bits per channel (`u16[3]`).
    pub const COLOR: u32 = 1 << 4;
    /// Per-point classification (`u8`).
    pub const CLASSIFICATION: u32 = 1 << 5;
    /// Per-point sampling spacing of the surface, metres (`f32`); since 1.1.
    pub const SPACING: u32 = 1 << 6;
    /// Per-point offset of the surface along the normal, metres (`f32`); since 1.2.
    pub const SURFACE_OFFSET: u32 = 1 << 7;
}

/// Kinds of section, with their ids in the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// The bucket table ([`Bucket`], 40 bytes each); required.
    Buckets = 1,
    /// Positions relative to the origin (`f32[3]`); required.
    Positions = 2,
    /// Unit normals (`f32[3]`); optional.
    Normals = 3,
    /// Plane thickness, metres (`f32`); optional.
    Gamma = 4,
    /// Intensity as the sources stored it (`f32`); optional.
    Intensity = 5,
    /// Reflectance in 0..1 (`f32`); optional.
    Reflectance = 6,
    /// Colour, 16 bits per channel (`u16[3]`); optional.
    Color = 7,
    /// Classification (`u8`); optional.
    Classification = 8,
    /// The metadata, UTF-8 TOML ([`MapMetadata`]); required.
    Metadata = 9,
    /// Sampling spacing of the surface, metres (`f32`, 0: not inside a surface); optional, since 1.1.
    Spacing = 10,
    /// Offset of the surface along the normal, metres (`f32`, 0: none); optional, since 1.2.
    SurfaceOffset = 11,
}

impl SectionKind {
    /// Every kind, in id order.
    pub const ALL: [SectionKind; 11] = [
        SectionKind::Buckets,
        SectionKind::Positions,
        SectionKind::Normals,
        SectionKind::Gamma,
        SectionKind::Intensity,
        SectionKind::Reflectance,
        SectionKind::Color,
        SectionKind::Classification,
        SectionKind::Metadata,
        SectionKind::Spacing,
        SectionKind::SurfaceOffset,
    ];

    /// The kind's id in the section table.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The kind with this id, if this version knows it (readers skip sections of unknown kinds).
    pub fn from_id(id: u32) -> Option<SectionKind> {
        SectionKind::ALL.into_iter().find(|k| k.id() == id)
    }

    /// Name used in error messages and the specification.
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Buckets => "buckets",
            SectionKind::Positions => "positions",
            SectionKind::Normals => "normals",
            SectionKind::Gamma => "gamma",
            SectionKind::Intensity => "intensity",
            SectionKind::Reflectance => "reflectance",
            SectionKind::Color => "color",
            SectionKind::Classification => "classification",
            SectionKind::Metadata => "metadata",
            SectionKind::Spacing => "spacing",
            SectionKind::SurfaceOffset => "surface_offset",
        }
    }

    /// Size of one element, bytes.
    pub fn element_size(self) -> usize {
        match self {
            SectionKind::Buckets => size_of::<Bucket>(),
            SectionKind::Positions | SectionKind::Normals => 12,
            SectionKind::Gamma
            | SectionKind::Intensity
            | SectionKind::Reflectance
            | SectionKind::Spacing
            | SectionKind::SurfaceOffset => 4,
            SectionKind::Color => 6,
            SectionKind::Classification | SectionKind::Metadata => 1,
        }
    }

    /// The header flag saying the section is present, for optional per-point sections.
    fn flag(self) -> Option<u32> {
        match self {
            SectionKind::Normals => Some(flags::NORMALS),
            SectionKind::Gamma => Some(flags::GAMMA),
            SectionKind::Intensity => Some(flags::INTENSITY),
            SectionKind::Reflectance => Some(flags::REFLECTANCE),
            SectionKind::Color => Some(flags::COLOR),
            SectionKind::Classification => Some(flags::CLASSIFICATION),
            SectionKind::Spacing => Some(flags::SPACING),
            SectionKind::SurfaceOffset => Some(flags::SURFACE_OFFSET),
            _ => None,
        }
    }
}

fn align_up(v: usize) -> Option<usize> {
    v.checked_add(SECTION_ALIGN - 1)
        .map(|x| x / SECTION_ALIGN * SECTION_ALIGN)
}

/// The fixed header fields (everything but magic and the CRCs).
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// Major format version; a reader refuses any other major version.
    pub version_major: u16,
    /// Minor format version; a reader accepts any minor version of its major version.
    pub version_minor: u16,
    /// Total length of the file, bytes (a truncated file is detected before any section is read).
    pub file_size: u64,
    /// Number of points N.
    pub point_count: u64,
    /// Number of buckets B.
    pub bucket_count: u64,
    /// Entries in the section table (at most [`MAX_SECTIONS`]).
    pub section_count: u32,
    /// Which optional per-point sections are present ([`flags`]).
    pub attribute_flags: u32,
    /// Byte offset of the section table ([`HEADER_SIZE`] in version 1.0).
    pub section_table_offset: u64,
    /// CRC32C of the section table's bytes.
    pub section_table_crc: u32,
    /// Map-frame coordinates of the positions' origin, metres.
    pub origin: [f64; 3],
    /// Map resolution r_map, metres.
    pub resolution: f32,
    /// Bucket edge length l, metres.
    pub bucket_size: f32,
    /// Offset from Morton-decoded keys to bucket grid coordinates (see [`super::buckets::bucket_coords`]).
    pub morton_offset: [i64; 3],
    /// Lower corner of the bounds of all positions, relative to `origin`.
    pub bounds_min: [f32; 3],
    /// Upper corner of those bounds.
    pub bounds_max: [f32; 3],
}

impl Header {
    fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        let mut w = Cursor { buf: &mut b, at: 0 };
        w.put(&MAGIC);
        w.put(&self.version_major.to_le_bytes());
        w.put(&self.version_minor.to_le_bytes());
        w.put(&(HEADER_SIZE as u32).to_le_bytes());
        w.put(&self.file_size.to_le_bytes());
        w.put(&self.point_count.to_le_bytes());
        w.put(&self.bucket_count.to_le_bytes());
        w.put(&self.section_count.to_le_bytes());
        w.put(&self.attribute_flags.to_le_bytes());
        w.put(&self.section_table_offset.to_le_bytes());
        w.put(&self.section_table_crc.to_le_bytes());
        w.put(&0u32.to_le_bytes());
        for v in self.origin {
            w.put(&v.to_le_bytes());
        }
        w.put(&self.resolution.to_le_bytes());
        w.put(&self.bucket_size.to_le_bytes());
        for v in self.morton_offset {
            w.put(&v.to_le_bytes());
        }
        for v in self.bounds_min.iter().chain(&self.bounds_max) {
            w.put(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[..HEADER_CRC_OFFSET]);
        b[HEADER_CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decode the fields (after the magic, version and CRC have been checked).
    fn decode(b: &[u8; HEADER_SIZE]) -> Header {
        let mut r = Reader { buf: b, at: 8 };
        let version_major = r.u16();
        let version_minor = r.u16();
        let _header_size = r.u32();
        let file_size = r.u64();
        let point_count = r.u64();
        let bucket_count = r.u64();
        let section_count = r.u32();
        let attribute_flags = r.u32();
        let section_table_offset = r.u64();
        let section_table_crc = r.u32();
        let _reserved = r.u32();
        let origin = [r.f64(), r.f64(), r.f64()];
        let resolution = r.f32();
        let bucket_size = r.f32();
        let morton_offset = [r.i64(), r.i64(), r.i64()];
        let bounds_min = [r.f32(), r.f32(), r.f32()];
        let bounds_max = [r.f32(), r.f32(), r.f32()];
        Header {
            version_major,
            version_minor,
            file_size,
            point_count,
            bucket_count,
            section_count,
            attribute_flags,
            section_table_offset,
            section_table_crc,
            origin,
            resolution,
            bucket_size,
            morton_offset,
            bounds_min,
            bounds_max,
        }
    }
}

struct Cursor<'a> {
    buf: &'a mut [u8],
    at: usize,
}
impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
}

/// Reads little-endian fields from a fixed-size buffer whose layout is known to fit (the header).
struct Reader<'a> {
    buf: &'a [u8; HEADER_SIZE],
    at: usize,
}
impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        // The header layout ends at byte 144 < 256, so this never runs past the array.
        if let Some(s) = self.buf.get(self.at..self.at + N) {
            out.copy_from_slice(s);
        }
        self.at += N;
        out
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
}

/// One entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    /// The section's kind id ([`SectionKind::id`]; unknown ids are skipped by readers).
    pub kind: u32,
    /// Bytes per element.
    pub element_size: u32,
    /// Byte offset of the section in the file, a multiple of [`SECTION_ALIGN`].
    pub offset: u64,
    /// Length of the section, bytes, padding excluded.
    pub length: u64,
    /// CRC32C of the section's `length` bytes.
    pub crc32c: u32,
}

impl SectionEntry {
    fn encode(&self) -> [u8; TABLE_ENTRY_SIZE] {
        let mut b = [0u8; TABLE_ENTRY_SIZE];
        b[0..4].copy_from_slice(&self.kind.to_le_bytes());
        b[4..8].copy_from_slice(&self.element_size.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.length.to_le_bytes());
        b[24..28].copy_from_slice(&self.crc32c.to_le_bytes());
        b
    }

    fn decode(b: &[u8; TABLE_ENTRY_SIZE]) -> SectionEntry {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        SectionEntry {
            kind: u32_at(0),
            element_size: u32_at(4),
            offset: u64_at(8),
            length: u64_at(16),
            crc32c: u32_at(24),
        }
    }
}

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

/// Whether `path` names a prepared map: by its extension (`.amap`, any case), else by the magic its first
/// bytes hold, so that a map renamed is still known for one.
pub fn is_map_file(path: &Path) -> bool {
    if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("amap"))
    {
        return true;
    }
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|_| head == MAGIC)
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

/// Where the file's bytes live.
enum Storage {
    /// Memory-mapped (the normal case).
    Mapped(memmap2::Mmap),
    /// Read into an 8-byte-aligned buffer (the fallback): `len` bytes of `words`.
    Owned { words: Vec<u64>, len: usize },
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned { words, len } => {
                let all: &[u8] = bytemuck::cast_slice(words);
                all.get(..*len).unwrap_or(all)
            }
        }
    }
}

/// An open, checked .amap file. Per-point arrays are borrowed from the file's bytes (memory-mapped, or read
/// into an aligned buffer by [`AmapFile::read`]).
pub struct AmapFile {
    path: PathBuf,
    storage: Storage,
    header: Header,
    /// Byte ranges of the known sections, by kind.
    sections: [Option<Range<usize>>; SectionKind::ALL.len()],
    metadata_text: String,
    metadata: MapMetadata,
}

impl std::fmt::Debug for AmapFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmapFile")
            .field("path", &self.path)
            .field("mapped", &self.is_mapped())
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

fn slot(kind: SectionKind) -> usize {
    kind.id() as usize - 1
}

impl AmapFile {
    /// Open and check `path`, memory-mapping it; when the system cannot map the file, read it instead
    /// (see [`AmapFile::read`]). Fails on any corruption, naming the section.
    pub fn open(path: &Path) -> Result<AmapFile> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        match crate::mmap::map_file(&file) {
            Ok(mmap) => Self::from_storage(path, Storage::Mapped(mmap)),
            Err(_) => Self::read(path),
        }
    }

    /// Open and check `path` by reading it whole into an aligned buffer (no memory map): for filesystems or
    /// platforms where mapping fails, or when the file may change while open.
    pub fn read(path: &Path) -> Result<AmapFile> {
        let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let len = usize::try_from(len).map_err(|_| {
            Error::format(path, "file", format!("{len} bytes is too large to read"))
        })?;
        let mut words = vec![0u64; len.div_ceil(8)];
        {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
            let dst = bytes.get_mut(..len).unwrap_or_default();
            file.read_exact(dst).map_err(|e| Error::io(path, e))?;
        }
        Self::from_storage(path, Storage::Owned { words, len })
    }

    /// Check bytes already in memory (a download, a fuzzer's input); `path` is used only in error messages.
    /// The bytes are copied into an aligned buffer.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<AmapFile> {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        if let Some(d) = dst.get_mut(..bytes.len()) {
            d.copy_from_slice(bytes);
        }
        Self::from_storage(
            path,
            Storage::Owned {
                words,
                len: bytes.len(),
            },
        )
    }

    /// True when the bytes are memory-mapped (false after the read fallback).
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(_))
    }

    /// The path the map was opened from (the name used in error messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header, checked on open.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    fn from_storage(path: &Path, storage: Storage) -> Result<AmapFile> {
        let (header, sections, metadata_text, metadata) = check(path, storage.bytes())?;
        Ok(AmapFile {
            path: path.to_path_buf(),
            storage,
            header,
            sections,
            metadata_text,
            metadata,
        })
    }

    /// The section of `kind` as a slice of `T`. Checked on open, so the cast cannot fail here; an absent or
    /// (impossibly) misaligned section gives `None`.
    fn section<T: AnyBitPattern>(&self, kind: SectionKind) -> Option<&[T]> {
        let r = self.sections.get(slot(kind))?.clone()?;
        bytemuck::try_cast_slice(self.bytes().get(r)?).ok()
    }

    /// The map as the renderer reads it, borrowed from the file.
    pub fn view(&self) -> MapView<'_> {
        MapView {
            origin: self.header.origin,
            resolution: self.header.resolution,
            bucket_size: self.header.bucket_size,
            buckets: self.section(SectionKind::Buckets).unwrap_or_default(),
            positions: self.section(SectionKind::Positions).unwrap_or_default(),
            normals: self.section(SectionKind::Normals),
            gamma: self.section(SectionKind::Gamma),
            spacing: self.section(SectionKind::Spacing),
            surface_offset: self.section(SectionKind::SurfaceOffset),
            reflectance: self.section(SectionKind::Reflectance),
        }
    }

    /// Raw intensity as the sources stored it, if the map has it.
    pub fn intensity(&self) -> Option<&[f32]> {
        self.section(SectionKind::Intensity)
    }

    /// Colour, 16 bits per channel, if the map has it.
    pub fn color(&self) -> Option<&[[u16; 3]]> {
        self.section(SectionKind::Color)
    }

    /// Classification, if the map has it.
    pub fn classification(&self) -> Option<&[u8]> {
        self.section(SectionKind::Classification)
    }

    /// The metadata section, UTF-8 TOML.
    pub fn metadata(&self) -> &str {
        &self.metadata_text
    }

    /// The metadata, parsed (checked on open).
    pub fn map_metadata(&self) -> &MapMetadata {
        &self.metadata
    }

    /// Bucket grid offset of the Morton keys (see `buckets::bucket_coords`).
    pub fn morton_offset(&self) -> [i64; 3] {
        self.header.morton_offset
    }

    /// The map as a cloud, for export (see [`PackedMap::to_cloud`]).
    pub fn to_cloud(&self) -> Cloud {
        let v = self.view();
        // Opening checked that every section holds one entry per point (the `amap_sealed` fuzz target reaches
        // this with every section layout that passes the checks).
        cloud_from_parts(
            CloudParts {
                origin: v.origin,
                positions: v.positions,
                normals: v.normals,
                gamma: v.gamma,
                intensity: self.intensity(),
                color: self.color(),
                classification: self.classification(),
            },
            &self.metadata,
        )
        .expect("an opened map has one entry per point in every section")
    }

    /// An owned copy of the whole map.
    pub fn to_packed_map(&self) -> PackedMap {
        let v = self.view();
        PackedMap {
            origin: v.origin,
            resolution: v.resolution,
            bucket_size: v.bucket_size,
            morton_offset: self.header.morton_offset,
            buckets: v.buckets.to_vec(),
            positions: v.positions.to_vec(),
            normals: v.normals.map(<[_]>::to_vec),
            gamma: v.gamma.map(<[_]>::to_vec),
            spacing: v.spacing.map(<[_]>::to_vec),
            surface_offset: v.surface_offset.map(<[_]>::to_vec),
            intensity: self.intensity().map(<[_]>::to_vec),
            reflectance: v.reflectance.map(<[_]>::to_vec),
            color: self.color().map(<[_]>::to_vec),
            classification: self.classification().map(<[_]>::to_vec),
            metadata_toml: self.metadata_text.clone(),
        }
    }
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
fn check(path: &Path, bytes: &[u8]) -> Result<(Header, Sections, String, MapMetadata)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let h = Header {
            version_major: 1,
            version_minor: 0,
            file_size: 12345,
            point_count: 77,
            bucket_count: 3,
            section_count: 4,
            attribute_flags: flags::GAMMA | flags::COLOR,
            section_table_offset: 256,
            section_table_crc: 0xdead_beef,
            origin: [637_000.5, -1.25, 1e-3],
            resolution: 0.1,
            bucket_size: 5.0,
            morton_offset: [-3, 0, 1 << 40],
            bounds_min: [-1.0, 2.0, f32::MIN_POSITIVE],
            bounds_max: [9.0, 8.0, 7.5],
        };
        let b = h.encode();
        assert_eq!(&b[..8], b"AERIEMAP");
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 256);
        assert!(
            b[144..252].iter().all(|&x| x == 0),
            "reserved bytes must be zero"
        );
        assert_eq!(
            u32::from_le_bytes(b[252..256].try_into().unwrap()),
            crc32c::crc32c(&b[..252])
        );
        assert_eq!(Header::decode(&b), h);
    }

    #[test]
    fn section_kinds_have_stable_ids_and_sizes() {
        let table: Vec<(u32, &str, usize)> = SectionKind::ALL
            .iter()
            .map(|k| (k.id(), k.name(), k.element_size()))
            .collect();
        assert_eq!(
            table,
            vec![
                (1, "buckets", 40),
                (2, "positions", 12),
                (3, "normals", 12),
                (4, "gamma", 4),
                (5, "intensity", 4),
                (6, "reflectance", 4),
                (7, "color", 6),
                (8, "classification", 1),
                (9, "metadata", 1),
                (10, "spacing", 4),
                (11, "surface_offset", 4),
            ]
        );
        for k in SectionKind::ALL {
            assert_eq!(SectionKind::from_id(k.id()), Some(k));
        }
        assert_eq!(SectionKind::from_id(0), None);
        assert_eq!(size_of::<Bucket>(), 40);
    }

    #[test]
    fn crc_is_castagnoli() {
        // The check value the specification quotes.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn entry_round_trips() {
        let e = SectionEntry {
            kind: 7,
            element_size: 6,
            offset: 1 << 33,
            length: 600,
            crc32c: 42,
        };
        assert_eq!(SectionEntry::decode(&e.encode()), e);
    }
}
