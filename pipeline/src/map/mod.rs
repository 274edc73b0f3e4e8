//! The packed map: voxel buckets (coarse-to-fine inside each) and the memory-mapped .amap file.
//!
//! [`MapView`] is what consumers (the simulator's renderer, exporters) read: borrowed slices, whether they
//! come from a memory-mapped .amap file or from a map built in memory.
//!
//! ```
//! use aerie_pipeline::Cloud;
//! use aerie_pipeline::map::{AmapFile, PackedMap, amap};
//!
//! let positions = (0..1000).map(|i| [(i % 40) as f32 * 0.1, (i / 40) as f32 * 0.1, 0.0]).collect();
//! let cloud = Cloud::from_positions([500_000.0, 4_000_000.0, 100.0], positions);
//! // Bucket at r_map 0.1 m (bucket size chosen from density), write, and map the file back.
//! let map = PackedMap::from_cloud(&cloud, 0.1, None)?;
//! let dir = tempfile::tempdir().map_err(|e| aerie_pipeline::Error::io("tmp", e))?;
//! let path = dir.path().join("floor.amap");
//! amap::write(&map, &path)?;
//! let file = AmapFile::open(&path)?;
//! let view = file.view();
//! assert_eq!(view.positions.len(), 1000);
//! assert_eq!(view.buckets.iter().map(|b| b.count as usize).sum::<usize>(), 1000);
//! // The georeferenced origin is kept in f64; the points come back in bucket order, unchanged.
//! assert_eq!(file.to_cloud().bounds(), cloud.bounds());
//! # Ok::<(), aerie_pipeline::Error>(())
//! ```

pub mod amap;
pub mod buckets;

use bytemuck::{Pod, Zeroable};

/// One bucket of the map: a cube of side `bucket_size` holding points `first..first + count` contiguously,
/// ordered coarse-to-fine. Layout is the on-disk layout of the bucket table (40 bytes, little-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Bucket {
    /// Morton key of the bucket's integer grid coordinates (see docs/amap-format.md).
    pub key: u64,
    /// Index of the bucket's first point in the map's point arrays.
    pub first: u32,
    /// Number of points in the bucket (never zero); they are `first..first + count`.
    pub count: u32,
    /// Lower corner of the tight bounds of the bucket's points, relative to the map origin.
    pub min: [f32; 3],
    /// Upper corner of those bounds.
    pub max: [f32; 3],
}

/// A read-only view of a packed map. All per-point slices have `positions.len()` entries; buckets are
/// sorted by key and partition the points.
#[derive(Clone, Copy, Debug)]
pub struct MapView<'a> {
    /// Origin of positions in the map frame, metres.
    pub origin: [f64; 3],
    /// Map resolution r_map (downsampling cell), metres.
    pub resolution: f32,
    /// Bucket edge length l, metres.
    pub bucket_size: f32,
    /// The buckets, sorted by key, partitioning `0..positions.len()` in order.
    pub buckets: &'a [Bucket],
    /// Positions relative to `origin`.
    pub positions: &'a [[f32; 3]],
    /// Unit surface normal per point, when the map has them.
    pub normals: Option<&'a [[f32; 3]]>,
    /// Plane thickness per point (+inf: no plane).
    pub gamma: Option<&'a [f32]>,
    /// Sampling spacing of the surface around each point, metres (0: not inside a surface), when the map has
    /// it ([`crate::features::spacing`]).
    pub spacing: Option<&'a [f32]>,
    /// Offset of the surface from each point along its normal, metres (0: none), when the map has it
    /// ([`crate::features::normals::SURFACE_OFFSET`]): the renderer draws the point's disk at `p + offset * n`.
    pub surface_offset: Option<&'a [f32]>,
    /// Reflectance R0 in 0..1 per point, for the simulated intensity.
    pub reflectance: Option<&'a [f32]>,
}

impl MapView<'_> {
    /// The box of the map's points in the map frame (from the bucket bounds), `None` for an empty map.
    pub fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for b in self.buckets {
            for k in 0..3 {
                lo[k] = lo[k].min(self.origin[k] + f64::from(b.min[k]));
                hi[k] = hi[k].max(self.origin[k] + f64::from(b.max[k]));
            }
        }
        (lo[0] <= hi[0] && lo[1] <= hi[1] && lo[2] <= hi[2]).then_some((lo, hi))
    }

    /// Check what the renderer relies on: a finite origin, 0 < resolution <= bucket size, one value per point
    /// in every present column, and buckets that partition the points in key order. An opened `.amap` and a
    /// map from [`PackedMap::from_cloud`] always pass; a map assembled by hand may not. The message names the
    /// first broken invariant.
    pub fn check(&self) -> std::result::Result<(), String> {
        check_frame(self.origin, self.resolution, self.bucket_size)?;
        let n = self.positions.len();
        check_lengths(
            n,
            &[
                ("normals", self.normals.map(<[_]>::len)),
                ("gamma", self.gamma.map(<[_]>::len)),
                ("spacing", self.spacing.map(<[_]>::len)),
                ("surface_offset", self.surface_offset.map(<[_]>::len)),
                ("reflectance", self.reflectance.map(<[_]>::len)),
            ],
        )?;
        check_buckets(self.buckets, n)
    }
}

/// Check a map's frame: a finite origin and 0 < resolution <= bucket size (the `.amap` reader checks its header
/// with it too).
pub(crate) fn check_frame(
    origin: [f64; 3],
    resolution: f32,
    bucket_size: f32,
) -> std::result::Result<(), String> {
    if origin.iter().all(|v| v.is_finite())
        && resolution.is_finite()
        && resolution > 0.0
        && bucket_size.is_finite()
        && bucket_size >= resolution
    {
        return Ok(());
    }
    Err(format!(
        "origin {origin:?}, resolution {resolution}, bucket size {bucket_size}: expected a finite origin and 0 < resolution <= bucket size"
    ))
}

/// Check that every present column (name, length) has `n` values.
fn check_lengths(n: usize, lens: &[(&str, Option<usize>)]) -> std::result::Result<(), String> {
    if u32::try_from(n).is_err() {
        return Err(format!("{n} points; at most {} fit a map", u32::MAX));
    }
    for &(name, len) in lens {
        if let Some(len) = len
            && len != n
        {
            return Err(format!("{name} has {len} values for {n} points"));
        }
    }
    Ok(())
}

use serde::{Deserialize, Serialize};

pub use amap::AmapFile;
pub use buckets::{morton_decode, morton_encode};

use crate::cloud::{Columns, ScanInfo};
use crate::pose::Isometry3;
use crate::{Cloud, LengthMismatch, Result, StageReport};

/// What the metadata section of a map says (UTF-8 TOML, see docs/amap-format.md). Every field has a default
/// and unknown keys are ignored, so maps written by newer minor versions still read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MapMetadata {
    /// Version of the aerie that wrote the map.
    pub aerie_version: String,
    /// Coordinate reference system of the map frame as OGC WKT, when the sources declared one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs_wkt: Option<String>,
    /// The CRS as a LAS source's GeoTIFF keys, raw ([`crate::cloud::Metadata::las_geotiff`]): many LAS files
    /// declare their CRS only so, and a LAS 1.2 exported from the map carries them on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub crs_geotiff: Vec<GeoTiffRecord>,
    /// Files the map was prepared from.
    pub sources: Vec<MapSource>,
    /// Scanner poses known for the sources (map frame), kept for export and for placing a simulated sensor.
    pub scans: Vec<ScanPose>,
    /// How the bucket size was chosen.
    pub bucketing: BucketingInfo,
    /// How reflectance was derived from intensity; absent when the map has no reflectance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflectance: Option<ReflectanceInfo>,
    /// The rule used to orient normals (set by the normals stage), e.g. "toward-scanner".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normal_orientation: Option<String>,
    /// Attributes of the prepared cloud that the map format does not store (e.g. "time", "ring").
    pub dropped_attributes: Vec<String>,
    /// The preparation recipe, as given (a TOML table of stages and their parameters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipe: Option<toml::Table>,
    /// The preparation report, one entry per stage.
    pub report: Vec<StageReport>,
}

/// One source file of a map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MapSource {
    /// The file as it was named when the map was prepared (empty for a cloud built in memory).
    pub path: String,
    /// Its format and version as the reader described it, e.g. "LAS 1.2, point format 3".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// One `LASF_Projection` record of GeoTIFF keys (record id 34735, 34736 or 34737) as the source stored it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeoTiffRecord {
    /// The record id: 34735 (key directory), 34736 (doubles) or 34737 (ASCII).
    pub record_id: u16,
    /// The record's bytes, unchanged.
    pub data: Vec<u8>,
}

/// A scan with a known scanner pose.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScanPose {
    /// The scan's name in its source (an E57 data3D name).
    pub name: String,
    /// Pose of the scanner in the map frame (not relative to the map's origin), stored as
    /// `{ rotation_wxyz, translation }` (see [`crate::pose`]). Default: the identity.
    #[serde(with = "crate::pose::serde_wxyz")]
    pub world_from_scan: Isometry3<f64>,
}

/// How the bucket size was chosen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BucketingInfo {
    /// "auto" or "fixed".
    pub rule: String,
    /// Mean number of points per occupied bucket in the written map.
    pub mean_points_per_bucket: f64,
    /// Largest bucket, in points.
    pub max_points_per_bucket: u64,
}

/// How reflectance was derived: `reflectance = clamp(intensity / scale, 0, 1)`, non-finite intensity -> 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReflectanceInfo {
    /// The percentile of the finite intensities used as the scale (99).
    pub percentile: f64,
    /// The intensity that maps to reflectance 1.
    pub scale: f64,
}

/// A packed map held in memory: points in bucket order (buckets sorted by Morton key, coarse-to-fine inside
/// each bucket), with the attributes the map format stores. Built by [`PackedMap::from_cloud`], written by
/// [`amap::write`], read back by [`AmapFile`].
///
/// Invariants (checked by [`PackedMap::check`] and by the writer): every present attribute has one entry per
/// point; buckets have increasing keys, non-zero counts, and partition `0..positions.len()` in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PackedMap {
    /// Origin of positions in the map frame, metres (the prepared cloud's origin, unchanged).
    pub origin: [f64; 3],
    /// Map resolution r_map, metres.
    pub resolution: f32,
    /// Bucket edge length l, metres.
    pub bucket_size: f32,
    /// Offset added to the key's bucket coordinates to get the bucket grid coordinates (see
    /// [`buckets::bucket_coords`]).
    pub morton_offset: [i64; 3],
    /// The buckets, sorted by key, partitioning `0..positions.len()` in order.
    pub buckets: Vec<Bucket>,
    /// Positions relative to `origin`.
    pub positions: Vec<[f32; 3]>,
    /// Unit surface normal per point, when the recipe computed them.
    pub normals: Option<Vec<[f32; 3]>>,
    /// Plane thickness, metres (+inf: no plane).
    pub gamma: Option<Vec<f32>>,
    /// Sampling spacing of the surface around each point, metres (0: not inside a surface; see
    /// [`crate::features::spacing`]), when the normals stage found it.
    pub spacing: Option<Vec<f32>>,
    /// Offset of the surface from each point along its normal, metres (0: none; see
    /// [`crate::features::normals::SURFACE_OFFSET`]), when the normals stage found it.
    pub surface_offset: Option<Vec<f32>>,
    /// Intensity as the source stored it, kept for export.
    pub intensity: Option<Vec<f32>>,
    /// Reflectance in 0..1 for the simulator: intensity divided by its 99th percentile, clamped (see
    /// [`ReflectanceInfo`]).
    pub reflectance: Option<Vec<f32>>,
    /// Colour, 16 bits per channel.
    pub color: Option<Vec<[u16; 3]>>,
    /// Classification (ASPRS codes for LAS sources).
    pub classification: Option<Vec<u8>>,
    /// The metadata section, UTF-8 TOML (a serialised [`MapMetadata`]); written byte for byte.
    pub metadata_toml: String,
}

impl PackedMap {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the map has no points.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Borrow the map as a [`MapView`], the form the renderer reads.
    pub fn view(&self) -> MapView<'_> {
        MapView {
            origin: self.origin,
            resolution: self.resolution,
            bucket_size: self.bucket_size,
            buckets: &self.buckets,
            positions: &self.positions,
            normals: self.normals.as_deref(),
            gamma: self.gamma.as_deref(),
            spacing: self.spacing.as_deref(),
            surface_offset: self.surface_offset.as_deref(),
            reflectance: self.reflectance.as_deref(),
        }
    }

    /// The metadata, parsed.
    pub fn metadata(&self) -> Result<MapMetadata> {
        toml::from_str(&self.metadata_toml)
            .map_err(|e| crate::Error::parameter("map metadata", e.to_string()))
    }

    /// Replace the metadata (e.g. to add the recipe and report after building the map).
    pub fn set_metadata(&mut self, meta: &MapMetadata) -> Result<()> {
        self.metadata_toml = toml::to_string(meta)
            .map_err(|e| crate::Error::parameter("map metadata", e.to_string()))?;
        Ok(())
    }

    /// The map as a cloud, for export: points in map order, with normals, gamma, intensity, colour and
    /// classification as attributes; CRS and scanner poses from the metadata. Reflectance is not exported (it is
    /// derived from intensity).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Parameter`] when `metadata_toml` does not parse: the cloud would silently lose its CRS and
    /// scanner poses; or when an attribute does not have one value per point. (An opened [`amap::AmapFile`]
    /// checked both on open, so its `to_cloud` cannot fail.)
    pub fn to_cloud(&self) -> Result<Cloud> {
        let meta = self.metadata()?;
        Ok(cloud_from_parts(
            CloudParts {
                origin: self.origin,
                positions: &self.positions,
                normals: self.normals.as_deref(),
                gamma: self.gamma.as_deref(),
                intensity: self.intensity.as_deref(),
                color: self.color.as_deref(),
                classification: self.classification.as_deref(),
            },
            &meta,
        )?)
    }

    /// Check the invariants; the message names the first broken one.
    pub fn check(&self) -> std::result::Result<(), String> {
        check_lengths(
            self.positions.len(),
            &[
                ("intensity", self.intensity.as_ref().map(Vec::len)),
                ("color", self.color.as_ref().map(Vec::len)),
                ("classification", self.classification.as_ref().map(Vec::len)),
            ],
        )?;
        self.view().check()
    }
}

/// Check that `buckets` have strictly increasing keys that fit 63 bits, non-zero counts, and partition
/// `0..n` in order.
pub(crate) fn check_buckets(buckets: &[Bucket], n: usize) -> std::result::Result<(), String> {
    let mut next: u64 = 0;
    let mut prev_key: Option<u64> = None;
    for (i, b) in buckets.iter().enumerate() {
        if b.key >> 63 != 0 {
            return Err(format!(
                "bucket {i}: key {:#x} has bits above the 63 of a 3x21-bit morton key",
                b.key
            ));
        }
        if let Some(p) = prev_key
            && b.key <= p
        {
            return Err(format!(
                "bucket {i}: key {:#x} does not follow {p:#x} (keys must increase)",
                b.key
            ));
        }
        prev_key = Some(b.key);
        if b.count == 0 {
            return Err(format!("bucket {i}: empty (count 0)"));
        }
        if u64::from(b.first) != next {
            return Err(format!(
                "bucket {i}: first point {} where {next} was expected (buckets must partition the points)",
                b.first
            ));
        }
        next += u64::from(b.count);
    }
    if next != n as u64 {
        return Err(format!("buckets cover {next} points but the map has {n}"));
    }
    Ok(())
}

/// Borrowed per-point arrays from which a cloud is rebuilt.
#[derive(Clone, Copy)]
pub(crate) struct CloudParts<'a> {
    pub origin: [f64; 3],
    pub positions: &'a [[f32; 3]],
    pub normals: Option<&'a [[f32; 3]]>,
    pub gamma: Option<&'a [f32]>,
    pub intensity: Option<&'a [f32]>,
    pub color: Option<&'a [[u16; 3]]>,
    pub classification: Option<&'a [u8]>,
}

/// The cloud of a map's arrays (copied) and metadata; fails when an attribute does not have one value per point.
pub(crate) fn cloud_from_parts(
    p: CloudParts<'_>,
    meta: &MapMetadata,
) -> std::result::Result<Cloud, LengthMismatch> {
    let columns = Columns {
        positions: p.positions.to_vec(),
        normals: p.normals.map(<[_]>::to_vec),
        gamma: p.gamma.map(<[_]>::to_vec),
        intensity: p.intensity.map(<[_]>::to_vec),
        color: p.color.map(<[_]>::to_vec),
        classification: p.classification.map(<[_]>::to_vec),
        ..Columns::default()
    };
    let mut cloud = Cloud::from_columns(p.origin, columns)?;
    cloud.meta.format = Some(format!(
        "aerie map {}.{}",
        amap::VERSION_MAJOR,
        amap::VERSION_MINOR
    ));
    cloud.meta.crs_wkt.clone_from(&meta.crs_wkt);
    cloud.meta.las_geotiff = meta
        .crs_geotiff
        .iter()
        .map(|g| (g.record_id, g.data.clone()))
        .collect();
    cloud.meta.scans = meta
        .scans
        .iter()
        .map(|s| ScanInfo {
            name: s.name.clone(),
            points: 0..0,
            world_from_scan: Some(s.world_from_scan),
        })
        .collect();
    Ok(cloud)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata as maps written before poses were nalgebra's (`tiny_rgb.amap` of the fuzz seeds, plus a rotated
    /// scan): it reads, and writes back byte for byte.
    const OLD_METADATA: &str = r#"aerie_version = "0.1.0"
normal_orientation = "up: 59, outward: 81"
dropped_attributes = []
report = []

[[sources]]
path = "/work/shared/data/e57/tinyCartesianFloatRgb.e57"
format = "E57 1.0 (1 scan)"

[[scans]]
name = "exp2.fls.subsampled"

[scans.world_from_scan]
rotation_wxyz = [1.0, 0.0, 0.0, 0.0]
translation = [0.0, 0.0, 0.0]

[[scans]]
name = "north"

[scans.world_from_scan]
rotation_wxyz = [0.7071067811865476, 0.0, 0.0, 0.7071067811865476]
translation = [500010.0, 4000005.0, 101.5]

[bucketing]
rule = "auto"
mean_points_per_bucket = 140.0
max_points_per_bucket = 140
"#;

    #[test]
    fn metadata_of_older_maps_reads_and_writes_back_unchanged() {
        let meta: MapMetadata = toml::from_str(OLD_METADATA).unwrap();
        assert_eq!(meta.scans.len(), 2);
        let north = meta.scans[1].world_from_scan;
        let p = north * nalgebra::Point3::new(1.0, 0.0, 0.0);
        assert!(
            (p - nalgebra::Point3::new(500_010.0, 4_000_006.0, 101.5)).norm() < 1e-9,
            "{p:?}"
        );
        assert_eq!(toml::to_string(&meta).unwrap(), OLD_METADATA);
    }

    #[test]
    fn denormalised_stored_quaternion_is_normalised() {
        let text = OLD_METADATA.replace(
            "[0.7071067811865476, 0.0, 0.0, 0.7071067811865476]",
            "[2.0, 0.0, 0.0, 2.0]",
        );
        let meta: MapMetadata = toml::from_str(&text).unwrap();
        let q = crate::pose::rotation_wxyz(&meta.scans[1].world_from_scan);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!(
            (q[0] - h).abs() < 1e-15 && q[1] == 0.0 && q[2] == 0.0 && (q[3] - h).abs() < 1e-15,
            "{q:?}"
        );
    }
}
