//! Reading and writing scan files. One module per format; this module picks the format and dispatches.
//!
//! Every reader has the shape `read_bytes(data, path, opts) -> Result<Cloud>`: it parses a byte buffer (the
//! whole file, or a fuzzer's input) and uses `path` only in error messages. Invariants kept by all readers:
//! - never panic on file contents; every error names the file, the place and what was expected;
//! - never allocate from a count in a header before checking it against the bytes actually present;
//! - reject NaN/inf coordinates;
//! - set `Cloud::meta.format` (format and version) and `meta.source`;
//! - build the cloud from [`crate::Columns`] checked once by [`Cloud::from_columns`] (one value per point).
//!
//! Every writer goes through [`atomic::write_atomic`], so a failure never leaves a partial file.
//!
//! [`read()`] and [`write()`] are the entry points; the format comes from the file name unless one is given:
//!
//! ```
//! use aerie_pipeline::io::{self, Encoding, ReadOptions, WriteOptions};
//! use aerie_pipeline::{Cloud, Columns};
//!
//! let columns = Columns {
//!     positions: vec![[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]],
//!     intensity: Some(vec![10.0, 200.0]),
//!     ..Columns::default()
//! };
//! let cloud = Cloud::from_columns([0.0; 3], columns)?;
//! let dir = tempfile::tempdir().map_err(|e| aerie_pipeline::Error::io("tmp", e))?;
//! let path = dir.path().join("two.pcd");
//! let ascii = WriteOptions { encoding: Some(Encoding::Ascii), ..WriteOptions::default() };
//! io::write(&cloud, &path, None, &ascii)?;
//! let back = io::read(&path, None, &ReadOptions::default())?;
//! assert_eq!((back.len(), back.world(1)), (2, [1.0, 2.0, 3.0]));
//! assert_eq!(back.intensity(), cloud.intensity());
//! assert!(back.meta.format.as_deref().is_some_and(|f| f.starts_with("PCD")));
//! # Ok::<(), aerie_pipeline::Error>(())
//! ```

pub mod atomic;
pub mod e57;
pub(crate) mod fields;
pub mod kitti;
pub mod las;
pub mod pcd;
pub mod ply;
pub mod poses;
pub mod xyz;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Attribute, Cloud, Error, Result};

/// A scan file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// ASPRS LAS 1.0-1.4, uncompressed.
    Las,
    /// LAS compressed with LASzip (.laz).
    Laz,
    /// ASTM E57: several scans with their poses, images ignored.
    E57,
    /// Stanford PLY, ascii or binary; the `vertex` element is read, other elements are skipped.
    Ply,
    /// PCL's PCD 0.5-0.7: ascii, binary or binary_compressed.
    Pcd,
    /// Delimited text: .xyz, .txt, .csv, .pts, .asc
    Xyz,
    /// KITTI-style .bin: float32 x y z intensity, nothing else.
    Kitti,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 7] = [
        Format::Las,
        Format::Laz,
        Format::E57,
        Format::Ply,
        Format::Pcd,
        Format::Xyz,
        Format::Kitti,
    ];

    /// The format a file name's extension names, if any.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Format::from_name(&ext)
    }

    /// Parse a format name as given to `--format` (also accepts extensions).
    pub fn from_name(name: &str) -> Option<Format> {
        let name = name.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == name || f.extensions().contains(&name.as_str()))
    }

    /// The file extensions that name the format, lower case; the first is the one a written file takes. File
    /// dialogs offer these, and [`Format::from_path`] reads them.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Las => &["las"],
            Format::Laz => &["laz"],
            Format::E57 => &["e57"],
            Format::Ply => &["ply"],
            Format::Pcd => &["pcd"],
            Format::Xyz => &["xyz", "txt", "csv", "pts", "asc"],
            Format::Kitti => &["bin"],
        }
    }

    /// The extension a file written in the format takes (`.bin` for KITTI).
    pub fn extension(self) -> &'static str {
        self.extensions()[0]
    }

    /// Recognise a format from the first bytes of a file.
    pub fn sniff(head: &[u8]) -> Option<Format> {
        if head.starts_with(b"LASF") {
            // LAS and LAZ share the magic; the reader tells them apart by the point format's compression bit.
            Some(Format::Las)
        } else if head.starts_with(b"ASTM-E57") {
            Some(Format::E57)
        } else if head.starts_with(b"ply\n") || head.starts_with(b"ply\r\n") {
            Some(Format::Ply)
        } else if head.starts_with(b"# .PCD")
            || head.starts_with(b"VERSION")
            || head.starts_with(b"FIELDS")
        {
            Some(Format::Pcd)
        } else {
            None
        }
    }

    /// The format's short name, as `--format` and recipes spell it and as `Format::from_name` reads it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Las => "las",
            Format::Laz => "laz",
            Format::E57 => "e57",
            Format::Ply => "ply",
            Format::Pcd => "pcd",
            Format::Xyz => "xyz",
            Format::Kitti => "kitti",
        }
    }
}

/// How a format stores its payload, for formats that offer a choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// Text (PCD ascii, PLY ascii).
    Ascii,
    /// Binary little-endian (PCD binary, PLY binary_little_endian).
    Binary,
    /// Binary big-endian (PLY only).
    BinaryBigEndian,
    /// Compressed (PCD binary_compressed; for LAS, name the file .laz: LAZ is a format of its own).
    Compressed,
}

/// Options for reading. The default reads every point of every scan into one cloud.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// E57: return one cloud per scan instead of merging them (poses are applied either way).
    pub separate_scans: bool,
    /// Delimited text: column names in order (`x`, `y`, `z`, `intensity`, `r`, `g`, `b`, `nx`, `ny`, `nz`,
    /// `time`, `ring`, `class`, or any other name for an extra dimension; `_` skips a column). By default
    /// they are detected from a header line or from the number of columns.
    pub columns: Option<Vec<String>>,
    /// Attributes not to read: the cloud comes back without them, as if they had been taken out after reading
    /// everything (see [`take_skipped`]). LAS and LAZ never allocate or decode them, which is what makes this
    /// worth asking for (`time` alone is 8 bytes a point); other formats read them and take them out.
    /// Default: none.
    pub skip: Vec<Attribute>,
    /// Read no extra dimensions (LAS scan angle, user data, point source id, NIR and extra bytes; PLY/PCD/text
    /// fields we do not model; E57 row/column), under the same rules as `skip`. Default: false.
    pub skip_extras: bool,
}

impl ReadOptions {
    /// Whether `attribute` is to be skipped.
    pub fn skips(&self, attribute: Attribute) -> bool {
        self.skip.contains(&attribute)
    }
}

/// Take out of `cloud` the columns `opts` skips ([`ReadOptions::skip`], and every extra dimension when
/// [`ReadOptions::skip_extras`]), and append the name of each one that was present to `cloud.meta.dropped`:
/// modelled attributes first, in [`Cloud`]'s field order, then extra dimensions in the cloud's order. A column
/// already absent is not named again, so applying the same options twice changes nothing.
///
/// [`read_bytes`] applies it after every format's reader, so every format gives the same cloud for the same
/// options; the LAS reader skips the columns while decoding instead and records the same names itself.
pub fn take_skipped(cloud: &mut Cloud, opts: &ReadOptions) {
    for &attribute in Attribute::ALL {
        if opts.skips(attribute) && cloud.take_attribute(attribute) {
            cloud.meta.dropped.push(attribute.name().to_string());
        }
    }
    if opts.skip_extras {
        let names = cloud.take_extras().into_iter().map(|d| d.name);
        cloud.meta.dropped.extend(names);
    }
}

/// LAS minor version to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LasVersion {
    /// LAS 1.2 (point formats 0-3): read by nearly every tool.
    V1_2,
    /// LAS 1.4 (point formats 6-8): needed for NIR, classes above 31, more than 5 returns or 2^32 points.
    V1_4,
}

/// Options for writing. The default picks each format's most common choice (binary; LAS 1.2 unless the
/// attributes need 1.4).
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Payload encoding for formats that offer a choice (PCD, PLY); `None` picks binary.
    pub encoding: Option<Encoding>,
    /// LAS version; `None` picks 1.2 unless the attributes need 1.4.
    pub las_version: Option<LasVersion>,
    /// Write only these fields (besides x y z), e.g. MARSIM wants plain `x y z`: `Some(vec![])`.
    pub fields: Option<Vec<String>>,
}

impl WriteOptions {
    /// Refuses what would otherwise be silently ignored: an encoding for a format without a choice of one, a LAS
    /// version for another format, and a field in `fields` that `cloud` does not have.
    fn check(&self, cloud: &Cloud, format: Format) -> Result<()> {
        if self.las_version.is_some() && !matches!(format, Format::Las | Format::Laz) {
            return Err(Error::parameter(
                "las_version",
                format!(
                    "a LAS version applies to .las and .laz output only, not to {} files",
                    format.name()
                ),
            ));
        }
        // PCD and PLY check theirs; the other formats have one encoding each.
        if self.encoding.is_some() && !matches!(format, Format::Pcd | Format::Ply) {
            return Err(Error::parameter(
                "encoding",
                format!(
                    "{} files have one encoding; a choice applies to .pcd and .ply only",
                    format.name()
                ),
            ));
        }
        let Some(fields) = &self.fields else {
            return Ok(());
        };
        let present = present_fields(cloud);
        for name in fields {
            let xyz = ["x", "y", "z"].contains(&name.as_str());
            let field = present
                .iter()
                .find(|(aliases, shown)| shown == name || aliases.contains(&name.as_str()));
            // A field asked for by name that the format has no place for is not left out quietly.
            if let (Some((_, shown)), Some((label, kept))) = (field, kept_fields(format))
                && !kept.contains(shown)
            {
                return Err(Error::parameter(
                    "fields",
                    format!(
                        "{label} has no place for {shown}; it holds x y z {}",
                        kept.join(" ")
                    ),
                ));
            }
            if !xyz && field.is_none() {
                let have: Vec<&str> = present.iter().map(|(_, shown)| *shown).collect();
                return Err(Error::parameter(
                    "fields",
                    format!(
                        "the cloud has no field {name:?}; it has x y z{}{}",
                        if have.is_empty() { "" } else { " " },
                        have.join(" ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether an optional field called `name` should be written.
    pub fn wants(&self, name: &str) -> bool {
        self.fields
            .as_ref()
            .is_none_or(|f| f.iter().any(|n| n == name))
    }
}

/// The optional fields `cloud` has: the names a writer accepts for each in `fields` (see
/// [`WriteOptions::wants`]), and the one messages show.
fn present_fields(cloud: &Cloud) -> Vec<(&'static [&'static str], &str)> {
    let mut out: Vec<(&'static [&'static str], &str)> = cloud
        .attributes()
        .into_iter()
        .map(|a| (field_names(a), a.name()))
        .collect();
    out.extend(cloud.extras().iter().map(|d| (&[][..], d.name.as_str())));
    out
}

/// The fields a format has a place for besides x y z, with its name for messages; `None` for the formats that keep
/// every field.
fn kept_fields(format: Format) -> Option<(&'static str, &'static [&'static str])> {
    Some(match format {
        Format::E57 => (
            "E57",
            &[
                "intensity",
                "color",
                "time",
                "return_number",
                "number_of_returns",
                "row",
                "column",
            ],
        ),
        Format::Kitti => ("KITTI .bin", &["intensity"]),
        _ => return None,
    })
}

/// What writing `cloud` as `format` loses, one sentence each, for the program to show as warnings (the writers
/// leave out what their format has no place for without a word): the attributes E57 and KITTI have no field
/// for, and the millimetres KITTI's f32 coordinates cannot hold far from 0. Empty for the formats that keep
/// everything (LAS and LAZ keep the rest as extra bytes; PLY, PCD and XYZ as columns).
pub fn write_losses(cloud: &Cloud, format: Format) -> Vec<String> {
    let mut losses = Vec::new();
    // PCD's packed rgb, PLY's uchar channels and text hold 8 bits a channel: 16-bit colour keeps its high byte.
    let eight_bit = matches!(format, Format::Pcd | Format::Ply | Format::Xyz);
    if eight_bit
        && cloud
            .color()
            .is_some_and(|c| c.iter().flatten().any(|v| v % 257 != 0))
    {
        losses.push(format!(
            "{} stores colour as 8 bits a channel: the 16-bit colour keeps its high byte (LAS, LAZ and E57 keep \
             16 bits)",
            format.name().to_uppercase()
        ));
    }
    if let Some(crs) = crs_loss(cloud, format) {
        losses.push(crs);
    }
    let Some((label, kept)) = kept_fields(format) else {
        return losses;
    };
    let dropped: Vec<&str> = present_fields(cloud)
        .into_iter()
        .map(|(_, name)| name)
        .filter(|name| !kept.contains(name))
        .collect();
    if !dropped.is_empty() {
        losses.push(format!(
            "{label} has no place for {}: left out",
            dropped.join(", ")
        ));
    }
    if format == Format::Kitti
        && let Some((lo, hi)) = cloud.bounds().filter(|_| fields::needs_f64(cloud))
    {
        let far = lo
            .iter()
            .chain(hi.iter())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        // Half the spacing of f32 values at that magnitude.
        let step = 2f64.powi(far.log2().floor() as i32 - 24);
        losses.push(format!(
            "{label} stores coordinates as f32, which round to within {step:.3} m this far from 0 (up to {far:.0} \
             m): write PCD, PLY, LAS or E57 to keep them, or move the points to a local frame first"
        ));
    }
    losses
}

/// The coordinate system a format without a place for one leaves out (PCD, PLY, text, KITTI; E57 for a CRS
/// given only as GeoTIFF keys): worth a word, since the coordinates are written as they are and may count in
/// feet.
fn crs_loss(cloud: &Cloud, format: Format) -> Option<String> {
    // E57 stores a CRS as WKT only, so keys without WKT are lost there too.
    let keeps = match format {
        Format::Las | Format::Laz => true,
        Format::E57 => cloud.meta.crs_wkt.is_some(),
        _ => false,
    };
    if keeps || !crate::crs::declared(&cloud.meta) {
        return None;
    }
    let units = crate::crs::linear_units(&cloud.meta);
    let units = if units.is_empty() {
        String::new()
    } else {
        format!(
            ", and the coordinates are written in its {}",
            crate::crs::units_phrase(&units)
        )
    };
    Some(format!(
        "{} has no place for the coordinate system ({}): left out{units}",
        format.name().to_uppercase(),
        crate::crs::name(&cloud.meta).unwrap_or_default()
    ))
}

/// The names the writers take for an attribute in `fields`, besides [`Attribute::name`].
fn field_names(a: Attribute) -> &'static [&'static str] {
    match a {
        Attribute::Color => &["rgb", "colour", "red", "r"],
        Attribute::Normal => &["normals", "nx", "normal_x"],
        Attribute::Time => &["gps_time"],
        Attribute::Classification => &["class"],
        Attribute::Intensity
        | Attribute::Gamma
        | Attribute::ReturnNumber
        | Attribute::NumberOfReturns
        | Attribute::Ring => &[],
    }
}

/// The format of `path`: from its extension, else from its first bytes.
pub fn detect(path: &Path, head: &[u8]) -> Result<Format> {
    if let Some(f) = Format::from_path(path) {
        return Ok(f);
    }
    Format::sniff(head).ok_or_else(|| Error::UnknownFormat {
        path: path.to_path_buf(),
        looked_inside: true,
    })
}

/// The bytes of a whole input file: memory-mapped (no copy, no fresh pages to fault in), or read into memory
/// where mapping fails (pipes, some network filesystems, empty files).
pub enum FileBytes {
    /// The file, mapped read-only (see the crate's `mmap` module for the contract).
    Mapped(memmap2::Mmap),
    /// The file, read into memory.
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

/// Map or read a whole file, naming it in the error.
pub fn read_file(path: &Path) -> Result<FileBytes> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let is_file = file
        .metadata()
        .map(|m| m.is_file() && m.len() > 0)
        .unwrap_or(false);
    if is_file && let Ok(map) = crate::mmap::map_file(&file) {
        return Ok(FileBytes::Mapped(map));
    }
    std::fs::read(path)
        .map(FileBytes::Read)
        .map_err(|e| Error::io(path, e))
}

/// Read `path` in the given format (or the detected one) into one cloud.
pub fn read(path: &Path, format: Option<Format>, opts: &ReadOptions) -> Result<Cloud> {
    let data = read_file(path)?;
    let format = match format {
        Some(f) => f,
        None => detect(path, &data)?,
    };
    read_bytes(&data, path, format, opts)
}

/// Parse a buffer holding a whole file of the given format. `path` names it in messages.
pub fn read_bytes(data: &[u8], path: &Path, format: Format, opts: &ReadOptions) -> Result<Cloud> {
    let mut cloud = match format {
        Format::Las | Format::Laz => las::read_bytes(data, path, opts)?,
        Format::E57 => e57::read_bytes(data, path, opts)?,
        Format::Ply => ply::read_bytes(data, path, opts)?,
        Format::Pcd => pcd::read_bytes(data, path, opts)?,
        Format::Xyz => xyz::read_bytes(data, path, opts)?,
        Format::Kitti => kitti::read_bytes(data, path, opts)?,
    };
    take_skipped(&mut cloud, opts);
    cloud.meta.source = Some(path.to_path_buf());
    debug_assert!(cloud.validate().is_ok());
    Ok(cloud)
}

/// Read `path` as separate scans where the format has them (E57 with `separate_scans`), else as one cloud.
pub fn read_scans(path: &Path, format: Option<Format>, opts: &ReadOptions) -> Result<Vec<Cloud>> {
    let data = read_file(path)?;
    let format = match format {
        Some(f) => f,
        None => detect(path, &data)?,
    };
    if format == Format::E57 && opts.separate_scans {
        let mut scans = e57::read_scans_bytes(&data, path, opts)?;
        for s in &mut scans {
            take_skipped(s, opts);
            s.meta.source = Some(path.to_path_buf());
        }
        return Ok(scans);
    }
    Ok(vec![read_bytes(&data, path, format, opts)?])
}

/// Write `cloud` to `path` in `format` (or the one its extension names).
pub fn write(
    cloud: &Cloud,
    path: &Path,
    format: Option<Format>,
    opts: &WriteOptions,
) -> Result<()> {
    let Some(format) = format.or_else(|| Format::from_path(path)) else {
        return Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            looked_inside: false,
        });
    };
    opts.check(cloud, format)?;
    match format {
        Format::Las => las::write(cloud, path, false, opts),
        Format::Laz => las::write(cloud, path, true, opts),
        Format::E57 => e57::write(cloud, path, opts),
        Format::Ply => ply::write(cloud, path, opts),
        Format::Pcd => pcd::write(cloud, path, opts),
        Format::Xyz => xyz::write(cloud, path, opts),
        Format::Kitti => kitti::write(cloud, path, opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a writer would silently ignore is refused before any file is made: a field the cloud lacks (a typo
    /// in `--fields`), an encoding for a format that has one.
    #[test]
    fn write_options_a_writer_would_ignore_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut cols = crate::Columns {
            positions: vec![[1.0, 2.0, 3.0]],
            ..crate::Columns::default()
        };
        cols.intensity = Some(vec![0.5]);
        let cloud = Cloud::from_columns([0.0; 3], cols).unwrap();
        let out = dir.path().join("o.pcd");
        let fields = |f: &[&str]| WriteOptions {
            fields: Some(f.iter().map(ToString::to_string).collect()),
            ..WriteOptions::default()
        };
        let e = write(&cloud, &out, None, &fields(&["intensity", "bogus"])).unwrap_err();
        assert!(
            e.to_string().contains("\"bogus\"") && e.to_string().contains("x y z intensity"),
            "{e}"
        );
        assert!(write(&cloud, &out, None, &fields(&["ring"])).is_err());
        write(&cloud, &out, None, &fields(&["x", "intensity"])).unwrap();
        let las = dir.path().join("o.las");
        let ascii = WriteOptions {
            encoding: Some(Encoding::Ascii),
            ..WriteOptions::default()
        };
        let e = write(&cloud, &las, None, &ascii).unwrap_err();
        assert!(e.to_string().contains("las files have one encoding"), "{e}");
        assert!(!las.exists());
        let v14 = WriteOptions {
            las_version: Some(LasVersion::V1_4),
            ..WriteOptions::default()
        };
        let pcd = dir.path().join("v.pcd");
        let e = write(&cloud, &pcd, None, &v14).unwrap_err();
        assert!(e.to_string().contains("applies to .las and .laz"), "{e}");
        assert!(!pcd.exists());
        write(&cloud, &las, None, &v14).unwrap();
        // A field asked for by name that the format cannot hold.
        let mut classified = cloud.clone();
        classified.set_classification(Some(vec![2])).unwrap();
        let e57 = dir.path().join("c.e57");
        let e = write(&classified, &e57, None, &fields(&["classification"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("E57 has no place for classification"),
            "{e}"
        );
        assert!(!e57.exists());
        write(&classified, &e57, None, &fields(&["intensity"])).unwrap();
    }

    /// What E57 and KITTI have no place for is named, and so is the step KITTI's f32 coordinates round to far
    /// from 0; the formats that keep everything say nothing.
    #[test]
    fn write_losses_name_what_a_format_drops() {
        let cols = crate::Columns {
            positions: vec![[0.25, 0.5, 0.75]],
            intensity: Some(vec![0.5]),
            normals: Some(vec![[0.0, 0.0, 1.0]]),
            classification: Some(vec![2]),
            ..crate::Columns::default()
        };
        let near = Cloud::from_columns([0.0; 3], cols.clone()).unwrap();
        let far = Cloud::from_columns([515_368.0, 4_918_340.0, 0.0], cols).unwrap();
        let e57 = write_losses(&near, Format::E57);
        assert_eq!(
            e57,
            ["E57 has no place for normal, classification: left out"]
        );
        assert_eq!(write_losses(&near, Format::Kitti).len(), 1);
        let kitti = write_losses(&far, Format::Kitti);
        assert_eq!(kitti.len(), 2, "{kitti:?}");
        // 4.9e6 m lies in [2^22, 2^23): f32 values there are 0.5 m apart.
        assert!(kitti[1].contains("within 0.250 m"), "{kitti:?}");
        for format in [
            Format::Las,
            Format::Laz,
            Format::Ply,
            Format::Pcd,
            Format::Xyz,
        ] {
            assert!(write_losses(&far, format).is_empty(), "{format:?}");
        }
        // 16-bit colour in the 8-bit formats; 8-bit colour widened by 257 loses nothing.
        let mut coloured = near.clone();
        coloured.set_color(Some(vec![[65535, 1000, 0]])).unwrap();
        assert!(write_losses(&coloured, Format::Ply)[0].contains("8 bits a channel"));
        assert!(write_losses(&coloured, Format::Las).is_empty());
        coloured.set_color(Some(vec![[65535, 257 * 3, 0]])).unwrap();
        assert!(write_losses(&coloured, Format::Pcd).is_empty());
        // A coordinate system: kept by LAS, LAZ and E57, named where it is left out, with its unit.
        let mut georeferenced = near.clone();
        georeferenced.meta.crs_wkt = Some("PROJCS[\"Oregon (ft)\",UNIT[\"foot\",0.3048]]".into());
        assert_eq!(
            write_losses(&georeferenced, Format::Pcd),
            [
                "PCD has no place for the coordinate system (Oregon (ft)): left out, and the coordinates are \
              written in its foot (0.3048 m)"
            ]
        );
        for format in [Format::Las, Format::Laz, Format::E57] {
            assert!(
                write_losses(&georeferenced, format)
                    .iter()
                    .all(|w| !w.contains("coordinate system"))
            );
        }
        // E57 takes WKT only: a CRS given as GeoTIFF keys alone is lost there.
        georeferenced.meta.crs_wkt = None;
        georeferenced.meta.las_geotiff = vec![(34735, vec![1, 0, 1, 0, 0, 0, 0, 0])];
        let e57 = write_losses(&georeferenced, Format::E57);
        assert!(e57.iter().any(|w| w.starts_with("E57 has no place for the coordinate system (GeoTIFF keys)")), "{e57:?}");
        assert!(
            write_losses(&georeferenced, Format::Las)
                .iter()
                .all(|w| !w.contains("coordinate system"))
        );
    }

    /// A format that neither the name nor the bytes give is its own error, worded without any caller's flags
    /// (the CLI adds those), and counted as the user's input.
    #[test]
    fn an_unknown_format_is_said_in_the_library_s_terms() {
        let e = detect(Path::new("scan.dat"), b"1 2 3\n").unwrap_err();
        assert!(matches!(
            e,
            Error::UnknownFormat {
                looked_inside: true,
                ..
            }
        ));
        let text = e.to_string();
        assert!(
            text.starts_with("scan.dat: cannot tell the format from the extension or the contents")
        );
        assert!(!text.contains("--"), "{text}");
        assert!(e.is_bad_input());
        let cloud = Cloud::default();
        let e = write(&cloud, Path::new("out.dat"), None, &WriteOptions::default()).unwrap_err();
        assert!(matches!(
            e,
            Error::UnknownFormat {
                looked_inside: false,
                ..
            }
        ));
        assert!(!e.to_string().contains("--"), "{e}");
        assert_eq!(
            detect(Path::new("scan.dat"), b"ply\n").unwrap(),
            Format::Ply
        );
    }
}
