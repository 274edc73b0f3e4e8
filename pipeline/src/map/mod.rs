//! The packed map: voxel buckets (coarse-to-fine inside each) and the memory-mapped .amap file.
//!
//! [`MapView`] is what consumers (the simulator's renderer, exporters) read: borrowed slices, whether they
//! come from a memory-mapped .amap file or from a map built in memory.

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
    pub first: u32,
    pub count: u32,
    /// Tight bounds of the bucket's points, relative to the map origin.
    pub min: [f32; 3],
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
    pub buckets: &'a [Bucket],
    /// Positions relative to `origin`.
    pub positions: &'a [[f32; 3]],
    pub normals: Option<&'a [[f32; 3]]>,
    /// Plane thickness per point (+inf: no plane).
    pub gamma: Option<&'a [f32]>,
    /// Reflectance R0 in 0..1 per point, for the simulated intensity.
    pub reflectance: Option<&'a [f32]>,
}
