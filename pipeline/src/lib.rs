//! aerie-pipeline: everything between a raw scan file and a packed map.
//!
//! - [`Cloud`]: the in-memory point cloud (structure of arrays, f32 positions around an f64 origin), built
//!   from [`Columns`] whose lengths it checks once, so every attribute has one value per point.
//! - [`io`]: readers and writers for LAS/LAZ, E57, PLY, PCD, delimited text and KITTI .bin.
//! - [`filters`], [`features`]: preparation stages, each a function over `Cloud` with a serde parameter struct
//!   and a [`StageReport`].
//! - [`map`]: voxel buckets and the memory-mapped `.amap` file the simulator reads.
//! - [`export`]: a map written for another tool (its [`export::Target`]s and the app's [`export::PRESETS`]), or
//!   saved as `.amap` with its [`MapReport`] beside it.
//! - [`pose`]: poses are nalgebra's `Isometry3<f64>`, named by frames (`world_from_scan`), stored in the
//!   `{ rotation_wxyz, translation }` form.
//!
//! Nothing here prints or knows about terminals or GUIs: progress goes through [`Progress`], failures through
//! the typed [`Error`].
//!
//! [`prepare::prepare`] is the entry point that turns scans into a map; each stage is also a function of its own.
//! A 1 m x 1 m floor sampled every 2 cm, with three stray points above and below it:
//!
//! ```
//! use aerie_pipeline::filters::{DownsampleParams, SorParams, downsample, sor};
//! use aerie_pipeline::prepare::{Recipe, prepare};
//! use aerie_pipeline::{Cloud, NoProgress};
//!
//! let mut positions = Vec::new();
//! for i in 0..50 {
//!     for j in 0..50 {
//!         // Cell centres never fall on a multiple of the 0.1 m voxel edge, so the voxel counts are exact.
//!         positions.push([0.01 + 0.02 * i as f32, 0.01 + 0.02 * j as f32, 0.0]);
//!     }
//! }
//! positions.extend([[0.5, 0.5, 5.0], [-3.0, 0.0, 2.0], [4.0, 4.0, -3.0]]);
//! let cloud = Cloud::from_positions([0.0; 3], positions);
//!
//! // Statistical outlier removal (PCL's definition, 16 neighbours, 2 sigma) finds the three strays and
//! // removes them in place...
//! let mut clean = cloud.clone();
//! let report = sor(&mut clean, &SorParams::default(), &NoProgress)?;
//! assert_eq!((report.points_in, report.points_out), (2503, 2500));
//! // ...and voxel downsampling at 0.1 m keeps one original point per occupied cell: 10 x 10.
//! let (thinned, _) = downsample(&clean, &DownsampleParams::default(), &NoProgress)?;
//! assert_eq!(thinned.len(), 100);
//!
//! // The default recipe runs both, then estimates normals and packs the map (write it with `map::amap::write`).
//! let prepared = prepare(vec![(cloud, None)], &Recipe::default(), &NoProgress)?;
//! assert_eq!(prepared.map.len(), 100);
//! let normals = prepared.map.normals.as_deref().expect("the default recipe computes normals");
//! assert!(normals.iter().all(|n| n[2].abs() > 0.99), "a floor's normals are vertical");
//! # Ok::<(), aerie_pipeline::Error>(())
//! ```

pub mod cloud;
pub mod crs;
pub mod dynamic_bench;
pub mod error;
pub mod export;
pub mod features;
pub mod filters;
mod grid;
pub mod io;
pub mod lanes;
pub mod map;
pub mod memory;
pub mod mesh;
mod mmap;
pub mod pose;
pub mod prepare;
pub mod progress;
pub mod report;
pub mod summary;
pub mod tiles;

pub use cloud::{
    Attribute, Cloud, Columns, ExtraDim, ExtraScalar, ExtraValues, Metadata, PointIndex, Returned,
    ScalarKind, ScanInfo,
};
pub use error::{Error, LengthMismatch, NotFinite, Result, is_bad_path};
pub use progress::{CancelFlag, NoProgress, Progress};
pub use report::{MapReport, StageReport};
pub use summary::CloudSummary;
