//! Sensor poses files: one pose per scan (or per trajectory sample), for the stages that need to know where each
//! point was seen from (`filters.moving`). Every reader returns `world_from_sensor` poses: a point `p` of the
//! scan lies at `R p + t` in the world. Conventions, as each format defines them:
//!
//! - TUM (`timestamp tx ty tz qx qy qz qw`, `#` comments; the TUM RGB-D benchmark): the sensor's position and
//!   orientation in the world, i.e. world_from_sensor; the quaternion is written x y z w (scalar last).
//! - KITTI odometry (12 numbers a line, the 3x4 matrix `[R | t]` row by row, no time): the pose of frame i in
//!   frame 0, world_from_sensor. KITTI's own poses are of the left camera; a LiDAR's are those times the
//!   camera-from-velodyne calibration, which the file does not hold.
//! - balm `poses.csv` (hku-mars BALM's hall sequence as ../shared/data has it: a header, then
//!   `file,stamp_s,tx,ty,tz,r00,r01,r02,r10,r11,r12,r20,r21,r22`): world = R p + t, R row by row.
//!
//! Rotation matrices are projected onto the nearest rotation (files round to 6 digits); a matrix far from a
//! rotation (a transposed or scaled one) is an error naming the line.

use std::path::Path;

use nalgebra::{Isometry3, Matrix3, Quaternion, Rotation3, Translation3, UnitQuaternion};

use crate::{Error, Result};

/// A poses file's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PosesFormat {
    /// `timestamp tx ty tz qx qy qz qw`.
    Tum,
    /// 12 numbers a line: `[R | t]` row by row.
    Kitti,
    /// `file,stamp_s,tx,ty,tz,r00..r22` with a header line.
    BalmCsv,
}

impl PosesFormat {
    /// The format a file's name or first line suggests: `.csv` is balm's, a first data line of 12 numbers
    /// KITTI's, of 8 TUM's.
    pub fn guess(path: &Path, text: &str) -> Option<PosesFormat> {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            return Some(PosesFormat::BalmCsv);
        }
        let line = data_lines(text).next()?.1;
        match line.split_whitespace().count() {
            12 => Some(PosesFormat::Kitti),
            8 => Some(PosesFormat::Tum),
            _ => None,
        }
    }
}

/// One pose of a poses file.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanPose {
    /// The scan's file name, when the format names it (balm's csv).
    pub name: Option<String>,
    /// Time stamp, seconds, when the format has one.
    pub stamp_s: Option<f64>,
    /// Sensor frame to world frame.
    pub world_from_sensor: Isometry3<f64>,
}

/// Read a poses file in `format` (or the one [`PosesFormat::guess`] finds).
pub fn read_poses(path: &Path, format: Option<PosesFormat>) -> Result<Vec<ScanPose>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_poses(&text, path, format)
}

/// [`read_poses`] on text already read; `path` names it in errors.
pub fn parse_poses(text: &str, path: &Path, format: Option<PosesFormat>) -> Result<Vec<ScanPose>> {
    let Some(format) = format.or_else(|| PosesFormat::guess(path, text)) else {
        return Err(Error::format(
            path,
            "line 1",
            "not a poses file: expected TUM (8 numbers a line), KITTI (12) or a balm poses.csv",
        ));
    };
    let mut out = Vec::new();
    for (n, line) in data_lines(text) {
        if format == PosesFormat::BalmCsv && line.starts_with("file") {
            continue;
        }
        let place = || format!("line {n}");
        let pose = parse_line(line, format).map_err(|m| Error::format(path, place(), m))?;
        out.push(pose);
    }
    Ok(out)
}

/// Non-empty lines that are not `#` comments, numbered from 1.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

fn numbers(fields: &[&str]) -> std::result::Result<Vec<f64>, String> {
    fields
        .iter()
        .map(|f| {
            f.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{f:?} is not a finite number"))
        })
        .collect()
}

fn parse_line(line: &str, format: PosesFormat) -> std::result::Result<ScanPose, String> {
    match format {
        PosesFormat::Tum => {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [t, x, y, z, qx, qy, qz, qw] = numbers(&f)?[..] else {
                return Err(format!(
                    "expected 8 numbers (t x y z qx qy qz qw), got {}",
                    f.len()
                ));
            };
            let q = Quaternion::new(qw, qx, qy, qz);
            if !(q.norm() > 0.5 && q.norm() < 1.5) {
                return Err(format!(
                    "quaternion ({qx} {qy} {qz} {qw}) is not of unit length"
                ));
            }
            Ok(ScanPose {
                name: None,
                stamp_s: Some(t),
                world_from_sensor: Isometry3::from_parts(
                    Translation3::new(x, y, z),
                    UnitQuaternion::from_quaternion(q),
                ),
            })
        }
        PosesFormat::Kitti => {
            let f: Vec<&str> = line.split_whitespace().collect();
            let v = numbers(&f)?;
            if v.len() != 12 {
                return Err(format!(
                    "expected 12 numbers (a 3x4 matrix), got {}",
                    v.len()
                ));
            }
            let r = [v[0], v[1], v[2], v[4], v[5], v[6], v[8], v[9], v[10]];
            Ok(ScanPose {
                name: None,
                stamp_s: None,
                world_from_sensor: pose_from(r, [v[3], v[7], v[11]])?,
            })
        }
        PosesFormat::BalmCsv => {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() != 14 {
                return Err(format!(
                    "expected 14 fields (file,stamp_s,tx,ty,tz,r00..r22), got {}",
                    f.len()
                ));
            }
            let v = numbers(&f[1..])?;
            let r = [v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]];
            Ok(ScanPose {
                name: Some(f[0].trim().to_string()),
                stamp_s: Some(v[0]),
                world_from_sensor: pose_from(r, [v[1], v[2], v[3]])?,
            })
        }
    }
}

/// A pose from a row-major rotation matrix (projected onto the nearest rotation) and a translation.
fn pose_from(r: [f64; 9], t: [f64; 3]) -> std::result::Result<Isometry3<f64>, String> {
    let m = Matrix3::from_row_slice(&r);
    let err = (m.transpose() * m - Matrix3::identity()).abs().max();
    if err > 1e-2 || m.determinant() < 0.0 {
        return Err(format!(
            "the matrix {r:?} is not a rotation (R^T R differs from I by {err:.3}, det {:.3})",
            m.determinant()
        ));
    }
    let rot = Rotation3::from_matrix_eps(&m, 1e-12, 100, Rotation3::identity());
    Ok(Isometry3::from_parts(
        Translation3::new(t[0], t[1], t[2]),
        UnitQuaternion::from_rotation_matrix(&rot),
    ))
}

/// The text of a balm `poses.csv` holding `poses` (what [`parse_poses`] reads back): a header, then one line per
/// pose, `name` (empty when none), stamp (0 when none), translation and rotation row by row, 9 decimals.
pub fn balm_csv(poses: &[ScanPose]) -> String {
    let mut out = String::from("file,stamp_s,tx,ty,tz,r00,r01,r02,r10,r11,r12,r20,r21,r22\n");
    for p in poses {
        let t = p.world_from_sensor.translation.vector;
        let r = p.world_from_sensor.rotation.to_rotation_matrix();
        let m = r.matrix();
        let mut fields = vec![
            p.name.clone().unwrap_or_default(),
            format!("{:.6}", p.stamp_s.unwrap_or(0.0)),
        ];
        fields.extend(t.iter().map(|v| format!("{v:.9}")));
        fields.extend((0..3).flat_map(|i| (0..3).map(move |j| format!("{:.9}", m[(i, j)]))));
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// The scan number in a file name such as `full12.pcd` or `000012.pcd` (its last run of digits), for matching
/// poses to a per-point scan index (LAS `point_source_id`).
pub fn scan_number(name: &str) -> Option<u32> {
    let stem = name.rsplit(['/', '\\']).next()?.split('.').next()?;
    let digits: String = stem
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Point3;

    fn apply(p: &ScanPose, x: [f64; 3]) -> [f64; 3] {
        let w = p.world_from_sensor * Point3::from(x);
        [w.x, w.y, w.z]
    }

    #[test]
    fn the_three_formats_give_the_same_pose() {
        // A turn of 90 degrees about z, then (1, 2, 3): (1, 0, 0) goes to (1, 3, 3).
        let path = Path::new("p");
        let tum = "# t x y z qx qy qz qw\n5.0 1 2 3 0 0 0.7071067811865476 0.7071067811865476\n";
        let kitti = "0 -1 0 1 1 0 0 2 0 0 1 3\n";
        let csv = "file,stamp_s,tx,ty,tz,r00,r01,r02,r10,r11,r12,r20,r21,r22\nfull7.pcd,5.0,1,2,3,0,-1,0,1,0,0,0,0,1\n";
        let csv_path = Path::new("poses.csv");
        for (text, p) in [(tum, path), (kitti, path), (csv, csv_path)] {
            let poses = parse_poses(text, p, None).unwrap();
            assert_eq!(poses.len(), 1);
            let w = apply(&poses[0], [1.0, 0.0, 0.0]);
            for (a, b) in w.iter().zip([1.0, 3.0, 3.0]) {
                assert!((a - b).abs() < 1e-9, "{text}: {w:?}");
            }
        }
        let csv = parse_poses(csv, csv_path, None).unwrap();
        assert_eq!(csv[0].name.as_deref(), Some("full7.pcd"));
        let back = parse_poses(&balm_csv(&csv), csv_path, None).unwrap();
        assert_eq!(back[0].name, csv[0].name);
        let d = back[0].world_from_sensor.inverse() * csv[0].world_from_sensor;
        assert!(d.translation.vector.norm() < 1e-8 && d.rotation.angle() < 1e-8);
        assert_eq!(scan_number("full7.pcd"), Some(7));
        assert_eq!(scan_number("pcd/000012.pcd"), Some(12));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_poses("0 1 0 0 0 1 0 0 0 0 2 0\n", Path::new("k.txt"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("not a rotation"), "{e}");
        let e = parse_poses("1 2 3\n", Path::new("k.txt"), Some(PosesFormat::Tum))
            .unwrap_err()
            .to_string();
        assert!(e.contains("8 numbers"), "{e}");
    }
}
