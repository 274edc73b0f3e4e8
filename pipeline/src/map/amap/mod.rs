//! The .amap packed map file: writer and memory-mapped reader. Specified in docs/amap-format.md.
//!
//! Layout: a 256-byte header (with its own CRC32C), a section table (32 bytes per section, CRC32C in the
//! header), then sections each starting at a multiple of 64 bytes and each with its own CRC32C. The reader
//! checks everything on open (magic, version, checksums, bounds, alignment, bucket table) and then hands out
//! slices cast straight from the mapped bytes: nothing is parsed or copied per point.
//!
//! This file holds the format: its constants, section kinds, header and section table entries. Beside it:
//! `write.rs` (the writer), `read.rs` ([`AmapFile`], the reader) and `check.rs` (every check a file passes on
//! open, in the order of trust).

mod check;
mod read;
#[cfg(test)]
mod tests;
mod write;

use std::path::Path;

use super::Bucket;

pub use read::AmapFile;
pub use write::write;

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
    ///
    /// [`MapMetadata`]: super::MapMetadata
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
