//! The closed choices of the command line (`--format`, `--encoding`, ...) as clap `ValueEnum`s.
//!
//! The library enums they stand for stay free of clap (pipeline and simcore do not depend on it), so each choice
//! here mirrors one and converts into it with `From`. Value names, aliases and case-insensitivity are those the
//! hand-written parsers accepted before, so scripts keep working; clap lists the values in `--help` and in its
//! error for an unknown one.

use aerie_pipeline::filters::{DownsampleMethod, SorCompat};
use aerie_pipeline::io::{Encoding, Format, LasVersion};
use aerie_simcore::render::{Method, PointsIn, RenderParams};
use clap::ValueEnum;

/// A scan file format (`--format`, `--input-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// ASPRS LAS.
    Las,
    /// LAS compressed with LASzip.
    Laz,
    /// ASTM E57.
    E57,
    /// Stanford PLY.
    Ply,
    /// PCL's PCD.
    Pcd,
    /// Delimited text (.xyz .txt .csv .pts .asc).
    #[value(aliases = ["txt", "csv", "pts", "asc"])]
    Xyz,
    /// KITTI .bin: float32 x y z intensity.
    #[value(alias = "bin")]
    Kitti,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Las => Format::Las,
            FormatArg::Laz => Format::Laz,
            FormatArg::E57 => Format::E57,
            FormatArg::Ply => Format::Ply,
            FormatArg::Pcd => Format::Pcd,
            FormatArg::Xyz => Format::Xyz,
            FormatArg::Kitti => Format::Kitti,
        }
    }
}

/// How a format stores its payload (`--encoding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EncodingArg {
    /// Text (PCD ascii, PLY ascii).
    #[value(alias = "text")]
    Ascii,
    /// Binary little-endian (PCD binary, PLY binary_little_endian).
    #[value(aliases = ["binary-little-endian", "binary_little_endian"])]
    Binary,
    /// Binary big-endian (PLY only).
    #[value(aliases = ["binary_big_endian", "big-endian"])]
    BinaryBigEndian,
    /// Compressed (PCD binary_compressed).
    #[value(aliases = ["binary_compressed", "binary-compressed"])]
    Compressed,
}

impl From<EncodingArg> for Encoding {
    fn from(e: EncodingArg) -> Encoding {
        match e {
            EncodingArg::Ascii => Encoding::Ascii,
            EncodingArg::Binary => Encoding::Binary,
            EncodingArg::BinaryBigEndian => Encoding::BinaryBigEndian,
            EncodingArg::Compressed => Encoding::Compressed,
        }
    }
}

/// LAS minor version to write (`--las-version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LasVersionArg {
    /// LAS 1.2 (the default unless the attributes need 1.4).
    #[value(name = "1.2")]
    V1_2,
    /// LAS 1.4.
    #[value(name = "1.4")]
    V1_4,
}

impl From<LasVersionArg> for LasVersion {
    fn from(v: LasVersionArg) -> LasVersion {
        match v {
            LasVersionArg::V1_2 => LasVersion::V1_2,
            LasVersionArg::V1_4 => LasVersion::V1_4,
        }
    }
}

/// Whose definition of statistical outlier removal's k and sigma to follow (`--sor-compat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SorCompatArg {
    /// PCL's StatisticalOutlierRemoval (the default).
    Pcl,
    /// CloudCompare's -SOR.
    #[value(name = "cloudcompare", alias = "cc")]
    CloudCompare,
    /// Open3D's remove_statistical_outlier.
    Open3d,
}

impl From<SorCompatArg> for SorCompat {
    fn from(c: SorCompatArg) -> SorCompat {
        match c {
            SorCompatArg::Pcl => SorCompat::Pcl,
            SorCompatArg::CloudCompare => SorCompat::CloudCompare,
            SorCompatArg::Open3d => SorCompat::Open3d,
        }
    }
}

/// How downsampling reduces each occupied cell (`--downsample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DownsampleArg {
    /// Keep the original point nearest each cell's centre (the default).
    VoxelNearest,
    /// One point at the mean of each cell.
    VoxelCentroid,
    /// Original points with no two closer than the resolution.
    MinDistance,
}

impl From<DownsampleArg> for DownsampleMethod {
    fn from(m: DownsampleArg) -> DownsampleMethod {
        match m {
            DownsampleArg::VoxelNearest => DownsampleMethod::VoxelNearest,
            DownsampleArg::VoxelCentroid => DownsampleMethod::VoxelCentroid,
            DownsampleArg::MinDistance => DownsampleMethod::MinDistance,
        }
    }
}

/// Which renderer simulates a scan (`--method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// Angular depth image with plane correction.
    Splat,
    /// Per-beam marching against oriented disks.
    Beam,
    /// Chosen per sensor from a cost model (the default).
    Auto,
    /// MARSIM's method (nearest point wins, 0.2 deg pixels), for comparisons.
    Marsim,
}

impl MethodArg {
    /// The rendering parameters for this choice, keeping `base`'s seed, plane correction and debug output.
    pub fn params(self, base: &RenderParams) -> RenderParams {
        let method = match self {
            MethodArg::Splat => Method::Splat,
            MethodArg::Beam => Method::Beam,
            MethodArg::Auto => Method::Auto,
            MethodArg::Marsim => {
                return RenderParams {
                    seed: base.seed,
                    plane_correction: base.plane_correction,
                    debug: base.debug,
                    points_in: base.points_in,
                    ..RenderParams::marsim()
                };
            }
        };
        RenderParams {
            method,
            ..base.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value name and alias the hand-written parsers accepted still parses, to the same library value
    /// (clap's `ignore_case` on the arguments covers the upper-case spellings they also took).
    #[test]
    fn the_former_spellings_still_parse() {
        let format = |s| FormatArg::from_str(s, true).map(Format::from);
        for (s, f) in [
            ("las", Format::Las),
            ("LAZ", Format::Laz),
            ("e57", Format::E57),
            ("ply", Format::Ply),
            ("pcd", Format::Pcd),
            ("xyz", Format::Xyz),
            ("txt", Format::Xyz),
            ("csv", Format::Xyz),
            ("pts", Format::Xyz),
            ("asc", Format::Xyz),
            ("bin", Format::Kitti),
            ("kitti", Format::Kitti),
        ] {
            assert_eq!(format(s), Ok(f), "{s}");
        }
        let encoding = |s| EncodingArg::from_str(s, true).map(Encoding::from);
        for (s, e) in [
            ("ascii", Encoding::Ascii),
            ("text", Encoding::Ascii),
            ("binary", Encoding::Binary),
            ("binary-little-endian", Encoding::Binary),
            ("binary_little_endian", Encoding::Binary),
            ("binary-big-endian", Encoding::BinaryBigEndian),
            ("binary_big_endian", Encoding::BinaryBigEndian),
            ("big-endian", Encoding::BinaryBigEndian),
            ("compressed", Encoding::Compressed),
            ("binary_compressed", Encoding::Compressed),
            ("binary-compressed", Encoding::Compressed),
        ] {
            assert_eq!(encoding(s), Ok(e), "{s}");
        }
        let las = |s| LasVersionArg::from_str(s, false).map(LasVersion::from);
        assert_eq!(las("1.2"), Ok(LasVersion::V1_2));
        assert_eq!(las("1.4"), Ok(LasVersion::V1_4));
        assert!(las("1.3").is_err());
        let sor = |s| SorCompatArg::from_str(s, true).map(SorCompat::from);
        assert_eq!(sor("pcl"), Ok(SorCompat::Pcl));
        assert_eq!(sor("cloudcompare"), Ok(SorCompat::CloudCompare));
        assert_eq!(sor("cc"), Ok(SorCompat::CloudCompare));
        assert_eq!(sor("Open3D"), Ok(SorCompat::Open3d));
        let down = |s| DownsampleArg::from_str(s, true).map(DownsampleMethod::from);
        assert_eq!(down("voxel-nearest"), Ok(DownsampleMethod::VoxelNearest));
        assert_eq!(down("voxel-centroid"), Ok(DownsampleMethod::VoxelCentroid));
        assert_eq!(down("min-distance"), Ok(DownsampleMethod::MinDistance));
        let base = RenderParams {
            seed: 7,
            ..RenderParams::default()
        };
        let method = |s| MethodArg::from_str(s, false).map(|m| m.params(&base));
        assert_eq!(
            method("splat").map(|p| (p.method, p.seed)),
            Ok((Method::Splat, 7))
        );
        assert_eq!(method("beam").map(|p| p.method), Ok(Method::Beam));
        assert_eq!(method("auto").map(|p| p.method), Ok(Method::Auto));
        let marsim = method("marsim").unwrap();
        assert_eq!((marsim.method, marsim.seed), (Method::Splat, 7));
        assert_eq!(marsim.surface_layer, 0.0);
        assert!(!marsim.neighbours);
    }

    /// The value names `--help` lists, which scripts rely on.
    #[test]
    fn value_names_are_stable() {
        fn names<T: ValueEnum>() -> String {
            let names: Vec<String> = T::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value)
                .map(|p| p.get_name().to_string())
                .collect();
            names.join(" ")
        }
        assert_eq!(names::<FormatArg>(), "las laz e57 ply pcd xyz kitti");
        assert_eq!(
            names::<EncodingArg>(),
            "ascii binary binary-big-endian compressed"
        );
        assert_eq!(names::<LasVersionArg>(), "1.2 1.4");
        assert_eq!(names::<SorCompatArg>(), "pcl cloudcompare open3d");
        assert_eq!(
            names::<DownsampleArg>(),
            "voxel-nearest voxel-centroid min-distance"
        );
        assert_eq!(names::<MethodArg>(), "splat beam auto marsim");
    }

    /// Each library value has a command-line value: the exhaustive matches stop compiling when a variant is
    /// added to a library enum, and the round trip checks that the two sides pair up one to one.
    #[test]
    fn every_library_value_has_a_name() {
        fn round_trip<A: ValueEnum + PartialEq + std::fmt::Debug, L: From<A>>(
            back: impl Fn(L) -> A,
        ) {
            for a in A::value_variants() {
                assert_eq!(&back(L::from(a.clone())), a);
            }
        }
        round_trip(|f: Format| match f {
            Format::Las => FormatArg::Las,
            Format::Laz => FormatArg::Laz,
            Format::E57 => FormatArg::E57,
            Format::Ply => FormatArg::Ply,
            Format::Pcd => FormatArg::Pcd,
            Format::Xyz => FormatArg::Xyz,
            Format::Kitti => FormatArg::Kitti,
        });
        round_trip(|e: Encoding| match e {
            Encoding::Ascii => EncodingArg::Ascii,
            Encoding::Binary => EncodingArg::Binary,
            Encoding::BinaryBigEndian => EncodingArg::BinaryBigEndian,
            Encoding::Compressed => EncodingArg::Compressed,
        });
        round_trip(|v: LasVersion| match v {
            LasVersion::V1_2 => LasVersionArg::V1_2,
            LasVersion::V1_4 => LasVersionArg::V1_4,
        });
        round_trip(|c: SorCompat| match c {
            SorCompat::Pcl => SorCompatArg::Pcl,
            SorCompat::CloudCompare => SorCompatArg::CloudCompare,
            SorCompat::Open3d => SorCompatArg::Open3d,
        });
        round_trip(|m: DownsampleMethod| match m {
            DownsampleMethod::VoxelNearest => DownsampleArg::VoxelNearest,
            DownsampleMethod::VoxelCentroid => DownsampleArg::VoxelCentroid,
            DownsampleMethod::MinDistance => DownsampleArg::MinDistance,
        });
        // Every renderer has a name (the round trip through `params` keeps the method).
        let base = RenderParams::default();
        for m in [Method::Splat, Method::Beam, Method::Auto] {
            let arg = match m {
                Method::Splat => MethodArg::Splat,
                Method::Beam => MethodArg::Beam,
                Method::Auto => MethodArg::Auto,
            };
            assert_eq!(arg.params(&base).method, m);
        }
    }
}

/// The frame a moving sensor's points are written in (`aerie scan --points-in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PointsInArg {
    /// The sensor frame at the frame start, the motion during the frame compensated.
    Start,
    /// The sensor frame at the frame's last firing, the motion compensated (an undistorted scan, as
    /// LiDAR-inertial front-ends such as FAST-LIO publish it).
    End,
    /// Each point in the sensor frame at its own firing time: the motion distortion left in, as the sensor's
    /// driver gives it.
    Firing,
}

impl From<PointsInArg> for PointsIn {
    fn from(p: PointsInArg) -> PointsIn {
        match p {
            PointsInArg::Start => PointsIn::FrameStart,
            PointsInArg::End => PointsIn::FrameEnd,
            PointsInArg::Firing => PointsIn::Firing,
        }
    }
}
