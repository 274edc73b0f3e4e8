//! Writing a prepared map out of Aerie: for another tool with [`export`], shaped by the [`Target`] that reads it
//! (the app offers the [`PRESETS`]); or as Aerie keeps it, an `.amap` with its [`crate::report::MapReport`] beside
//! it, with [`write_map`].
//!
//! The command line and the desktop app both call these, so the targets, the presets and their [`ExportError`]s
//! are here, in the library's terms: the command line adds its flags to the messages as hints, the app its own
//! words.
//!
//! A target is one variant of [`Target`] and one row of its description (`target.rs`): the format and encoding
//! its reader loads, whether it keeps x y z alone, whether it moves a map far from 0 into a local frame. A target
//! with a writer of its own (a mesh, an octree) adds that writer to [`export`]'s dispatch; to be offered in the
//! app, it adds a [`Preset`]. The mesh targets ([`gazebo`], [`isaac`]) make the map's mesh with
//! [`crate::mesh::reconstruct`] and a collision mesh of it with [`crate::mesh::simplify`]; their writers also take
//! a [`crate::mesh::Mesh`] directly.
//!
//! ```
//! use aerie_pipeline::Cloud;
//! use aerie_pipeline::export::{ExportOptions, Target, export};
//!
//! // A georeferenced map: a float PCD would lose centimetres this far from 0.
//! let map = Cloud::from_positions([500_000.0, 4_000_000.0, 100.0], vec![[0.5, 0.5, 0.0], [1.5, 2.5, 1.0]]);
//! let dir = tempfile::tempdir().map_err(|e| aerie_pipeline::Error::io("tmp", e))?;
//! let options = ExportOptions { target: Target::Marsim, ..ExportOptions::default() };
//! let done = export(&map, &dir.path().join("map.pcd"), &options)?;
//! // MARSIM's PCD is moved into a local frame; adding the shift back returns to the map's frame.
//! assert_eq!(done.shift, Some([500_000.0, 4_000_000.0, 100.0]));
//! assert!(done.warnings.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod copc;
mod error;
pub mod gazebo;
pub mod isaac;
pub mod octomap;
mod output;
mod preset;
mod surface;
mod target;
#[cfg(test)]
mod tests;

pub use error::ExportError;
pub use output::{not_an_input, same_file, write_map};
pub use preset::{PRESETS, Preset};
pub use surface::COLLISION_TRIANGLES;
pub use target::Target;

use std::borrow::Cow;
use std::path::Path;

use crate::Cloud;
use crate::io::{self, Encoding, Format, LasVersion, WriteOptions};

/// How [`export`] writes a map. By default, the format the output's name names, its default encoding and LAS
/// version, every attribute the format holds ([`Target::Generic`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExportOptions {
    /// The format to write. By default, the one the output's extension names.
    pub format: Option<Format>,
    /// The encoding, for formats that offer a choice (PCD, PLY). By default, binary, or the one the target loads.
    pub encoding: Option<Encoding>,
    /// The LAS version, for .las and .laz. By default, 1.2 unless the attributes need 1.4.
    pub las_version: Option<LasVersion>,
    /// Whom the file is for. By default, [`Target::Generic`].
    pub target: Target,
    /// The voxel's edge in metres, for targets that grid the map ([`Target::Octomap`]), and the width the points
    /// of a USD stage are drawn ([`Target::Isaac`]). By default, 0.1 m, the default map resolution; a caller that
    /// knows the map's own resolution passes it.
    pub resolution_m: Option<f64>,
}

/// The voxel's edge of a gridded export when [`ExportOptions::resolution_m`] does not say: the default map
/// resolution, metres.
pub const DEFAULT_RESOLUTION_M: f64 = 0.1;

/// What [`export`] did besides writing: the offset the map was moved by, and what the user should know.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    /// The offset subtracted to move the map into a local frame (metres, map frame), when it was moved.
    pub shift: Option<[f64; 3]>,
    /// What the file does not hold, or holds in a way its reader may not load.
    pub warnings: Vec<ExportWarning>,
}

impl Exported {
    /// What the user must know when the export was moved into a local frame: by how much, and why.
    pub fn shift_note(&self) -> Option<String> {
        self.shift.map(|s| {
            format!(
                "moved by ({}, {}, {}) m into a local frame: the reader holds float coordinates (PCL's point \
                 types, OctoMap, Gazebo's and USD's meshes), which would lose centimetres this far from 0; add the offset back to return to \
                 the map's frame",
                -s[0], -s[1], -s[2]
            )
        })
    }
}

/// Something an export wrote that the user should know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportWarning {
    /// A PCD of a map far from 0 holds x y z as 64-bit floats (`F 8`), which PCL's point types do not load;
    /// [`Target::Ros`] writes 32-bit ones in a local frame.
    DoubleCoordinates,
    /// An attribute the format cannot hold, in [`io::write_losses`]' words.
    Loss(String),
    /// The map keeps no scanner's pose, so an occupancy tree knows its occupied voxels only and no free space.
    NoScannerPose,
}

impl ExportWarning {
    /// The problem alone, without the library's way around it: a caller with a way of its own (the CLI's flag)
    /// adds it.
    pub fn problem(&self) -> &str {
        match self {
            ExportWarning::DoubleCoordinates => {
                "x y z are written as 64-bit floats (F 8) to keep millimetres this far from 0, and PCL's point types \
                 (ROS, pcl_viewer, MARSIM) load only 32-bit ones"
            }
            ExportWarning::Loss(loss) => loss,
            ExportWarning::NoScannerPose => {
                "the map keeps no scanner's pose (E57 scans and a PCD's VIEWPOINT give one), so the tree holds \
                 occupied voxels only: a planner sees no known free space"
            }
        }
    }
}

impl std::fmt::Display for ExportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.problem())?;
        match self {
            ExportWarning::DoubleCoordinates => {
                f.write_str(": an export for ROS writes them in a local frame")
            }
            ExportWarning::Loss(_) | ExportWarning::NoScannerPose => Ok(()),
        }
    }
}

/// Writes a map's cloud to `path` for another tool: the one export path of the command line, the demo and the app.
///
/// The target decides what it can: MARSIM and ROS read PCD only, MARSIM binary x y z alone. For them, a map far
/// from the origin (georeferenced) is moved into a local frame, since PCL's point types (`PointXYZ`,
/// `PointXYZI`) load only float coordinates, and a PCD of doubles, which a generic export writes there, does not
/// match their fields; the offset subtracted is returned, with what the export loses.
pub fn export(
    cloud: &Cloud,
    path: &Path,
    options: &ExportOptions,
) -> Result<Exported, ExportError> {
    let spec = options.target.spec();
    if spec.extension.is_some() || spec.directory {
        return export_own(cloud, path, options);
    }
    let format = format_for(path, options)?;
    let write_options = WriteOptions {
        encoding: encoding_for(path, options)?,
        las_version: options.las_version,
        fields: spec.xyz_only.then(Vec::new),
    };
    let shift = if spec.local_frame {
        local_frame(cloud)
    } else {
        None
    };
    let written = match shift {
        Some(shift) => {
            let mut local = cloud.clone();
            local.origin = std::array::from_fn(|k| cloud.origin[k] - shift[k]);
            Cow::Owned(local)
        }
        None => Cow::Borrowed(cloud),
    };
    io::write(&written, path, format, &write_options).map_err(|source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let warnings = format
        .or_else(|| Format::from_path(path))
        .map(|f| warnings(&written, f, options.target))
        .unwrap_or_default();
    Ok(Exported { shift, warnings })
}

/// An export by a target's own writer (not a point-cloud format of `io`): the file's name must take the
/// target's extension, if it has one; a folder target checks its folder before any work.
fn export_own(
    cloud: &Cloud,
    path: &Path,
    options: &ExportOptions,
) -> Result<Exported, ExportError> {
    let spec = options.target.spec();
    if let Some(extension) = spec.extension
        && !has_extension(path, extension)
    {
        return Err(ExportError::WrongExtension {
            path: path.to_path_buf(),
            target: options.target,
            extension,
        });
    }
    let shift = if spec.local_frame {
        local_frame(cloud)
    } else {
        None
    };
    let to_local = shift.unwrap_or([0.0; 3]);
    let resolution_m = options.resolution_m.unwrap_or(DEFAULT_RESOLUTION_M);
    match options.target {
        Target::Octomap => octomap::write(cloud, path, resolution_m, to_local)?,
        Target::Gazebo => {
            // The folder's name and place are checked before the mesh is made.
            gazebo::model_name(path)?;
            gazebo::check_folder(path)?;
            let (visual, collision) = surface::meshes_of(cloud, path)?;
            gazebo::write_model(&visual, &collision, path, to_local)?;
        }
        Target::Isaac => {
            let (visual, collision) = surface::meshes_of(cloud, path)?;
            isaac::write_stage(&visual, &collision, cloud, resolution_m, path, to_local)?;
        }
        Target::Copc => copc::write(cloud, path, copc::scale_for(options.resolution_m))?,
        Target::Generic | Target::Marsim | Target::Ros => {}
    }
    let posed = cloud.meta.scans.iter().any(|s| s.world_from_scan.is_some());
    let warnings = if options.target == Target::Octomap && !posed {
        vec![ExportWarning::NoScannerPose]
    } else {
        Vec::new()
    };
    Ok(Exported { shift, warnings })
}

/// Whether `path`'s file name ends in `.extension` (any case; `extension` may hold dots: `copc.laz`).
pub(crate) fn has_extension(path: &Path, extension: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (name, extension) = (name.to_ascii_lowercase(), extension.to_ascii_lowercase());
    name.len() > extension.len() + 1 && name.ends_with(&format!(".{extension}"))
}

/// The format to write: the target's own, when the output's name or the format asked is it; else the format
/// asked (`None`: the writer takes the name's).
fn format_for(path: &Path, options: &ExportOptions) -> Result<Option<Format>, ExportError> {
    let Some(format) = options.target.format() else {
        return Ok(options.format);
    };
    if Format::from_path(path) == Some(format) || options.format == Some(format) {
        Ok(Some(format))
    } else {
        Err(ExportError::WrongFormat {
            path: path.to_path_buf(),
            target: options.target,
            format,
        })
    }
}

/// The encoding to write: the target's own (another asked is an error), else the one asked.
fn encoding_for(path: &Path, options: &ExportOptions) -> Result<Option<Encoding>, ExportError> {
    let spec = options.target.spec();
    match (spec.encoding, options.encoding) {
        (Some(required), Some(asked)) if asked != required => Err(ExportError::WrongEncoding {
            path: path.to_path_buf(),
            target: options.target,
            format: spec.format.unwrap_or(Format::Pcd),
            required,
            asked,
        }),
        (Some(required), _) => Ok(Some(required)),
        (None, asked) => Ok(asked),
    }
}

/// The offset that moves a cloud far from 0 (a coordinate beyond 1e4 m, where floats lose millimetres) into a
/// local frame, its minimum corner rounded down to whole metres; `None` near 0.
fn local_frame(cloud: &Cloud) -> Option<[f64; 3]> {
    let (lo, hi) = cloud.bounds()?;
    lo.iter()
        .chain(&hi)
        .any(|v| v.abs() >= 1e4)
        .then(|| lo.map(f64::floor))
}

/// What an export writes that the user should know: what the format loses (an x y z export keeps x y z alone,
/// by design, and says nothing), and that a PCD of a map far from 0 written without a local frame holds doubles.
fn warnings(cloud: &Cloud, format: Format, target: Target) -> Vec<ExportWarning> {
    let spec = target.spec();
    let mut warnings = Vec::new();
    if !spec.local_frame && format == Format::Pcd && local_frame(cloud).is_some() {
        warnings.push(ExportWarning::DoubleCoordinates);
    }
    if !spec.xyz_only {
        warnings.extend(
            io::write_losses(cloud, format)
                .into_iter()
                .map(ExportWarning::Loss),
        );
    }
    warnings
}
