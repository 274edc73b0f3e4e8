//! The export choices a user picks from (the app's list): each a [`Preset`], all in [`PRESETS`].

use super::{ExportOptions, Target};
use crate::io::{Encoding, Format};

/// One choice of export: a label, and the format, encoding and target it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// What the user picks, naming the format and whom it is for (`MARSIM map (binary PCD, x y z)`).
    pub label: &'static str,
    /// The format written.
    pub format: Format,
    /// The encoding written; `None`: the format's default (binary where there is a choice).
    pub encoding: Option<Encoding>,
    /// Whom the file is for.
    pub target: Target,
}

impl Preset {
    /// The options [`super::export`] writes the preset with.
    pub fn options(&self) -> ExportOptions {
        ExportOptions {
            format: Some(self.format),
            encoding: self.encoding,
            las_version: None,
            target: self.target,
        }
    }

    /// The extension of a file written with the preset (`pcd`, `bin` for KITTI).
    pub fn extension(&self) -> &'static str {
        self.format.extension()
    }
}

/// The export choices, in the order they are offered: the tools' own first, then every format.
pub const PRESETS: [Preset; 9] = [
    Preset {
        label: "MARSIM map (binary PCD, x y z)",
        format: Format::Pcd,
        encoding: Some(Encoding::Binary),
        target: Target::Marsim,
    },
    Preset {
        label: "PCD binary (ROS, PCL: float x y z)",
        format: Format::Pcd,
        encoding: Some(Encoding::Binary),
        target: Target::Ros,
    },
    Preset {
        label: "PCD compressed",
        format: Format::Pcd,
        encoding: Some(Encoding::Compressed),
        target: Target::Generic,
    },
    Preset {
        label: "PLY binary (with normals)",
        format: Format::Ply,
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
        format,
        encoding: None,
        target: Target::Generic,
    }
}
