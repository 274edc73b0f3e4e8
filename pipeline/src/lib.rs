//! aerie-pipeline: everything between a raw scan file and a packed map.
//!
//! - [`Cloud`]: the in-memory point cloud (structure of arrays, f32 positions around an f64 origin).
//! - [`io`]: readers and writers for LAS/LAZ, E57, PLY, PCD, delimited text and KITTI .bin.
//! - [`filters`], [`features`]: preparation stages, each a function over `Cloud` with a serde parameter struct
//!   and a [`StageReport`].
//! - [`map`]: voxel buckets and the memory-mapped `.amap` file the simulator reads.
//!
//! Nothing here prints or knows about terminals or GUIs: progress goes through [`Progress`], failures through
//! the typed [`Error`].

// Every public item says what it is and why (the workspace table cannot enable this yet: aerie-simcore still
// lacks docs on some 230 items).
#![warn(missing_docs)]

pub mod cloud;
pub mod error;
pub mod features;
pub mod filters;
pub mod io;
pub mod map;
mod mmap;
pub mod prepare;
pub mod progress;
pub mod report;
pub mod summary;

pub use cloud::{Attribute, Cloud, ExtraDim, Metadata, Pose, ScalarKind, ScanInfo};
pub use error::{Error, Result};
pub use progress::{CancelFlag, NoProgress, Progress};
pub use report::StageReport;
pub use summary::CloudSummary;

#[doc(hidden)]
pub mod testing;
