//! Whom an export is for: the [`Target`]s, each described by one row of [`Target::spec`].

use crate::io::{Encoding, Format};

/// Whom an export is for: the tool that reads the file, which decides its format, its encoding and what it holds.
/// [`Target::Generic`] writes the format as asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    /// The format as asked, every attribute it can hold.
    #[default]
    Generic,
    /// MARSIM loads binary PCD with x y z only.
    Marsim,
    /// ROS and PCL (`pcl::io::loadPCDFile<PointXYZI>`, pcl_ros) load PCD with float x y z: every attribute, in a
    /// local frame when the map is far from 0.
    Ros,
    /// OctoMap (octomap_server, exploration planners) loads its binary tree (`.bt`): occupied where the map has
    /// points, free along the scanners' rays.
    Octomap,
    /// Gazebo (classic 11 and gz-sim) loads a model folder: model.config, model.sdf (SDF 1.7) with a static link
    /// whose visual is the map's mesh and whose collision a simplified one, COLLADA meshes in metres, and a
    /// world.sdf that includes it.
    Gazebo,
    /// Isaac Sim (and any USD reader) loads a text USD stage (`.usda`): the map's mesh with UsdPhysics collision,
    /// Z up, metres, and its points for viewing.
    Isaac,
    /// Web and GIS viewers (Potree, QGIS, viewer.copc.io, PDAL) load COPC (`.copc.laz`): LAZ 1.4 whose points are
    /// grouped in an octree, every level a uniform subsample of the map.
    Copc,
}

/// What a target asks of the file written for it. Every property of a target is here, so that a target is added
/// in one place: its variant, and its row in [`Target::spec`].
pub(super) struct Spec {
    /// The target's name, as a caller spells it (`marsim`); [`Target::from_name`] reads it.
    pub name: &'static str,
    /// Who reads the file, for messages (`MARSIM`).
    pub reader: &'static str,
    /// What the file is, in a line for a list of targets.
    pub about: &'static str,
    /// The one format the reader loads; `None`: the format asked, or the one the file's name names.
    pub format: Option<Format>,
    /// The extension of the file, for a target with a writer of its own rather than a point-cloud [`Format`]
    /// (`bt`); `None`: the format's.
    pub extension: Option<&'static str>,
    /// The one encoding the reader loads; `None`: the encoding asked, or the format's default.
    pub encoding: Option<Encoding>,
    /// x y z alone, whatever else the map holds (and, by design, no warning of what that leaves out).
    pub xyz_only: bool,
    /// Moved into a local frame when the map is far from 0: the reader holds coordinates as 32-bit floats, which
    /// lose centimetres there.
    pub local_frame: bool,
    /// The output is a folder of files (a Gazebo model), not one file: it is written whole beside its place and
    /// renamed into it, and an existing folder that holds anything is refused.
    pub directory: bool,
}

impl Target {
    /// Every target, [`Target::Generic`] first.
    pub const ALL: [Target; 7] = [
        Target::Generic,
        Target::Marsim,
        Target::Ros,
        Target::Octomap,
        Target::Gazebo,
        Target::Isaac,
        Target::Copc,
    ];

    /// What the target asks of its file: the one description of each target.
    pub(super) fn spec(self) -> Spec {
        match self {
            Target::Generic => Spec {
                name: "generic",
                reader: "any tool",
                about: "The format as asked, every attribute it can hold.",
                format: None,
                extension: None,
                encoding: None,
                xyz_only: false,
                local_frame: false,
                directory: false,
            },
            Target::Marsim => Spec {
                name: "marsim",
                reader: "MARSIM",
                about: "MARSIM loads binary PCD with x y z only.",
                format: Some(Format::Pcd),
                extension: None,
                encoding: Some(Encoding::Binary),
                xyz_only: true,
                local_frame: true,
                directory: false,
            },
            Target::Ros => Spec {
                name: "ros",
                reader: "ROS and PCL",
                about: "ROS and PCL (`pcl::io::loadPCDFile<PointXYZI>`, pcl_ros) load PCD with float x y z: every \
                        attribute, in a local frame when the map is far from 0.",
                format: Some(Format::Pcd),
                extension: None,
                encoding: None,
                xyz_only: false,
                local_frame: true,
                directory: false,
            },
            Target::Octomap => Spec {
                name: "octomap",
                reader: "OctoMap",
                about: "OctoMap's binary tree (.bt) at a chosen resolution: occupied where the map has points, free along \
                        the scanners' rays.",
                format: None,
                extension: Some("bt"),
                encoding: None,
                xyz_only: true,
                // OctoMap's coordinates are floats, and its keys reach 32768 voxels from 0.
                local_frame: true,
                directory: false,
            },
            Target::Gazebo => Spec {
                name: "gazebo",
                reader: "Gazebo",
                about: "A Gazebo model folder (model.sdf, SDF 1.7: the map's mesh to see, a simplified one to collide \
                        with, COLLADA in metres) and a world.sdf that includes it.",
                format: None,
                extension: None,
                encoding: None,
                xyz_only: true,
                // Mesh vertices are 32-bit floats in Gazebo's renderer and physics engines.
                local_frame: true,
                directory: true,
            },
            Target::Isaac => Spec {
                name: "isaac",
                reader: "Isaac Sim",
                about: "A USD stage (.usda) for Isaac Sim: the map's mesh with physics collision, metres, Z up, and \
                        its points to view.",
                format: None,
                extension: Some("usda"),
                encoding: None,
                xyz_only: true,
                // USD's points are 32-bit floats (point3f).
                local_frame: true,
                directory: false,
            },
            Target::Copc => Spec {
                name: "copc",
                reader: "COPC viewers (Potree, QGIS, viewer.copc.io, PDAL)",
                about: "COPC (.copc.laz) for web and GIS viewers: LAZ 1.4 in an octree whose every level is a uniform \
                        subsample of the map.",
                format: None,
                extension: Some(super::copc::EXTENSION),
                encoding: None,
                xyz_only: false,
                // LAS stores integers on an offset near the map's centre: millimetres anywhere on Earth.
                local_frame: false,
                directory: false,
            },
        }
    }

    /// The target's name (`generic`, `marsim`, `ros`), as [`Target::from_name`] reads it.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The target whose [`Target::name`] is `name`, in any case.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// Who reads the file, for messages: `MARSIM`, `ROS and PCL`.
    pub fn reader(self) -> &'static str {
        self.spec().reader
    }

    /// What the file is, in a line (a list of targets shows it).
    pub fn about(self) -> &'static str {
        self.spec().about
    }

    /// The extension of a file written for the target by a writer of its own (`bt` for OctoMap), if it has one.
    pub fn extension(self) -> Option<&'static str> {
        self.spec().extension
    }

    /// Whether the target writes a folder of files (a Gazebo model) rather than one file.
    pub fn is_directory(self) -> bool {
        self.spec().directory
    }

    /// The one format the target's reader loads, if it loads only one.
    pub fn format(self) -> Option<Format> {
        self.spec().format
    }
}
