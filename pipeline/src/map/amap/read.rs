//! The reader: an .amap file memory-mapped (or read into an aligned buffer), checked once on open, then viewed
//! in place.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytemuck::AnyBitPattern;

use super::check::{check, slot};
use super::{Header, SectionKind};
use crate::map::{CloudParts, MapMetadata, MapView, PackedMap, cloud_from_parts};
use crate::{Cloud, Error, Result};

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
