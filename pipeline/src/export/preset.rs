//! The export choices a user picks from (the app's list): each a [`Preset`], all in [`PRESETS`].

use std::path::Path;

use super::{ExportOptions, Target};
use crate::io::{Encoding, Format};

/// One choice of export: a label, and the format, encoding and target it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// What the user picks, naming the format and whom it is for (`MARSIM map (binary PCD, x y z)`).
    pub label: &'static str,
    /// The point-cloud format written; `None` for a target with a writer of its own ([`Target::extension`]).
    pub format: Option<Format>,
    /// The encoding written; `None`: the format's default (binary where there is a choice).
    pub encoding: Option<Encoding>,
    /// Whom the file is for.
    pub target: Target,
}

impl Preset {
    /// The options [`super::export`] writes the preset with.
    pub fn options(&self) -> ExportOptions {
        ExportOptions {
            format: self.format,
            encoding: self.encoding,
            las_version: None,
            target: self.target,
            resolution_m: None,
        }
    }

    /// The extension of a file written with the preset (`pcd`, `bin` for KITTI, `bt` for OctoMap); empty for a
    /// folder.
    pub fn extension(&self) -> &'static str {
        match (self.target.extension(), self.format) {
            (Some(own), _) => own,
            (None, Some(format)) => format.extension(),
            (None, None) => "",
        }
    }

    /// Whether the preset writes a folder (a Gazebo model) rather than a file: its path takes no extension.
    pub fn is_folder(&self) -> bool {
        self.target.is_directory()
    }

    /// Whether `path`'s extension is one a file of the preset takes (any of its format's, in any case); for a
    /// folder preset, whether `path` has no extension.
    pub fn names(&self, path: &Path) -> bool {
        if self.is_folder() {
            return path.file_name().is_some() && path.extension().is_none();
        }
        match self.format {
            Some(format) => Format::from_path(path) == Some(format),
            // An extension of the target's own, which may hold a dot (`copc.laz`).
            None => super::has_extension(path, self.extension()),
        }
    }
}

/// The export choices, in the order they are offered: the tools' own first, then every format.
pub const PRESETS: [Preset; 13] = [
    Preset {
        label: "MARSIM map (binary PCD, x y z)",
        format: Some(Format::Pcd),
        encoding: Some(Encoding::Binary),
        target: Target::Marsim,
    },
    Preset {
        label: "PCD binary (ROS, PCL: float x y z)",
        format: Some(Format::Pcd),
        encoding: Some(Encoding::Binary),
        target: Target::Ros,
    },
    Preset {
        label: "OctoMap tree (.bt: occupied and free voxels, for planners)",
        format: None,
        encoding: None,
        target: Target::Octomap,
    },
    Preset {
        label: "Gazebo model (folder: SDF and COLLADA meshes, with a world)",
        format: None,
        encoding: None,
        target: Target::Gazebo,
    },
    Preset {
        label: "Isaac Sim stage (.usda: mesh with collision, and the points)",
        format: None,
        encoding: None,
        target: Target::Isaac,
    },
    Preset {
        label: "COPC (.copc.laz: octree LAZ for web and GIS viewers)",
        format: None,
        encoding: None,
        target: Target::Copc,
    },
    Preset {
        label: "PCD compressed",
        format: Some(Format::Pcd),
        encoding: Some(Encoding::Compressed),
        target: Target::Generic,
    },
    Preset {
        label: "PLY binary (with normals)",
        format: Some(Format::Ply),
        encoding: Some(Encoding::Binary),
        target: Target::Generic,
    },
    generic("LAS", Format::Las),
    generic("LAZ", Format::Laz),
    generic("E57", Format::E57),
    generic("XYZ text", Format::Xyz),
    generic("KITTI .bin (x y z intensity)", Format::Kitti),
];

/// A preset of `format` in its default encoding, for any tool.
const fn generic(label: &'static str, format: Format) -> Preset {
    Preset {
        label,
        format: Some(format),
        encoding: None,
        target: Target::Generic,
    }
}
