//! Sensor trajectories: the pose of a sensor as a function of time, so that each LiDAR beam can be rendered
//! from the pose at its own firing time (motion distortion).
//!
//! Poses are `world_from_sensor` rigid transforms in f64 (`nalgebra::Isometry3<f64>`): a world point is
//! `world_from_sensor * sensor_point`. World coordinates can be large (UTM), hence f64.

// `!(a < b)` is deliberate throughout: a NaN must fail the test it is in, which `a >= b` would not do.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::path::Path;

use aerie_pipeline::{Error, Result};
pub use nalgebra::{Isometry3, Translation3, UnitQuaternion};
use nalgebra::{Quaternion, Vector3};

/// The pose of a sensor over time.
pub trait Trajectory: Sync {
    /// Pose of the sensor in the world at time `t_s` (seconds, the trajectory's clock).
    fn world_from_sensor(&self, t_s: f64) -> Isometry3<f64>;
}

/// A sensor that does not move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Static(pub Isometry3<f64>);

impl Trajectory for Static {
    fn world_from_sensor(&self, _t_s: f64) -> Isometry3<f64> {
        self.0
    }
}

/// A piecewise-linear trajectory through timed poses: translation interpolated linearly, rotation by slerp
/// (shortest arc). Before the first sample and after the last one the pose is held.
#[derive(Clone, Debug, PartialEq)]
pub struct Tum {
    times_s: Vec<f64>,
    poses: Vec<Isometry3<f64>>,
}

impl Tum {
    /// A trajectory through `samples` (time in seconds, pose). Times must be finite and strictly increasing,
    /// and there must be at least one sample.
    pub fn from_samples(samples: Vec<(f64, Isometry3<f64>)>) -> Result<Tum> {
        if samples.is_empty() {
            return Err(Error::Parameter {
                name: "trajectory".into(),
                message: "no poses".into(),
            });
        }
        for (i, w) in samples.windows(2).enumerate() {
            if !(w[1].0 > w[0].0) {
                return Err(Error::Parameter {
                    name: "trajectory".into(),
                    message: format!(
                        "times must increase strictly: sample {} has t = {}, sample {} has t = {}",
                        i,
                        w[0].0,
                        i + 1,
                        w[1].0
                    ),
                });
            }
        }
        let (times_s, poses) = samples.into_iter().unzip();
        Ok(Tum { times_s, poses })
    }

    /// Reads a TUM trajectory file (`t x y z qx qy qz qw` per line; `#` comments and blank lines skipped).
    pub fn load(path: impl AsRef<Path>) -> Result<Tum> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            Error::format(
                path,
                format!("line {line}"),
                "not text: expected lines of `t x y z qx qy qz qw` (a TUM trajectory)",
            )
        })?;
        Tum::parse(text, path)
    }

    /// Parses TUM text; `path` only names the source in error messages.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Tum> {
        let path = path.as_ref();
        let mut samples: Vec<(f64, Isometry3<f64>)> = Vec::new();
        for (line_index, line) in text.lines().enumerate() {
            let place = || format!("line {}", line_index + 1);
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut values = [0.0f64; 8];
            let mut fields = line.split_whitespace();
            for (k, value) in values.iter_mut().enumerate() {
                let Some(field) = fields.next() else {
                    return Err(Error::format(
                        path,
                        place(),
                        format!("expected 8 values `t x y z qx qy qz qw`, found {k}"),
                    ));
                };
                *value = match field.parse::<f64>() {
                    Ok(v) if v.is_finite() => v,
                    _ => {
                        return Err(Error::format(
                            path,
                            place(),
                            format!("value {} {field:?} is not a finite number", k + 1),
                        ));
                    }
                };
            }
            if fields.next().is_some() {
                return Err(Error::format(
                    path,
                    place(),
                    "expected 8 values `t x y z qx qy qz qw`, found more",
                ));
            }
            let [t, x, y, z, qx, qy, qz, qw] = values;
            let q = Quaternion::new(qw, qx, qy, qz);
            let norm = q.norm();
            if !(norm > 1e-6) {
                return Err(Error::format(path, place(), "quaternion has zero length"));
            }
            if let Some(&(t_prev, _)) = samples.last()
                && !(t > t_prev)
            {
                return Err(Error::format(
                    path,
                    place(),
                    format!(
                        "time {t} does not follow the previous time {t_prev}; times must increase"
                    ),
                ));
            }
            let rotation = UnitQuaternion::from_quaternion(q);
            samples.push((
                t,
                Isometry3::from_parts(Translation3::new(x, y, z), rotation),
            ));
        }
        if samples.is_empty() {
            return Err(Error::format(path, "file", "no poses found"));
        }
        Tum::from_samples(samples)
    }

    /// The samples as given.
    pub fn samples(&self) -> impl Iterator<Item = (f64, &Isometry3<f64>)> {
        self.times_s.iter().copied().zip(self.poses.iter())
    }

    /// Time span covered by the samples, seconds.
    pub fn span_s(&self) -> (f64, f64) {
        let first = self.times_s.first().copied().unwrap_or(0.0);
        let last = self.times_s.last().copied().unwrap_or(first);
        (first, last)
    }
}

impl Trajectory for Tum {
    fn world_from_sensor(&self, t_s: f64) -> Isometry3<f64> {
        // Index of the first sample with time > t_s.
        let upper = self.times_s.partition_point(|&t| t <= t_s);
        let (Some(&t1), Some(p1)) = (self.times_s.get(upper), self.poses.get(upper)) else {
            return self
                .poses
                .last()
                .copied()
                .unwrap_or_else(Isometry3::identity);
        };
        let Some(lower) = upper.checked_sub(1) else {
            return *p1;
        };
        let (Some(&t0), Some(p0)) = (self.times_s.get(lower), self.poses.get(lower)) else {
            return *p1;
        };
        let f = ((t_s - t0) / (t1 - t0)).clamp(0.0, 1.0);
        interpolate(p0, p1, f)
    }
}

/// Pose between `a` (f = 0) and `b` (f = 1): linear translation, slerp rotation along the shortest arc.
pub fn interpolate(a: &Isometry3<f64>, b: &Isometry3<f64>, f: f64) -> Isometry3<f64> {
    let translation = a.translation.vector.lerp(&b.translation.vector, f);
    let rotation = a
        .rotation
        .try_slerp(&b.rotation, f, 1e-12)
        .unwrap_or(if f < 0.5 { a.rotation } else { b.rotation });
    Isometry3::from_parts(Translation3::from(translation), rotation)
}

/// A pose from a position and roll/pitch/yaw (radians): R = Rz(yaw) * Ry(pitch) * Rx(roll).
pub fn pose_from_xyz_rpy(
    x: f64,
    y: f64,
    z: f64,
    roll: f64,
    pitch: f64,
    yaw: f64,
) -> Isometry3<f64> {
    let rotation = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), yaw)
        * UnitQuaternion::from_axis_angle(&Vector3::y_axis(), pitch)
        * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), roll);
    Isometry3::from_parts(Translation3::new(x, y, z), rotation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Point3;

    #[test]
    fn rpy_convention() {
        // Yaw 90 deg maps x to y; pitch 90 deg maps x to -z; roll 90 deg maps y to z.
        let p = pose_from_xyz_rpy(1.0, 2.0, 3.0, 0.0, 0.0, std::f64::consts::FRAC_PI_2);
        let q = p * Point3::new(1.0, 0.0, 0.0);
        assert!((q - Point3::new(1.0, 3.0, 3.0)).norm() < 1e-12);
        let p = pose_from_xyz_rpy(0.0, 0.0, 0.0, 0.0, std::f64::consts::FRAC_PI_2, 0.0);
        assert!((p * Point3::new(1.0, 0.0, 0.0) - Point3::new(0.0, 0.0, -1.0)).norm() < 1e-12);
        let p = pose_from_xyz_rpy(0.0, 0.0, 0.0, std::f64::consts::FRAC_PI_2, 0.0, 0.0);
        assert!((p * Point3::new(0.0, 1.0, 0.0) - Point3::new(0.0, 0.0, 1.0)).norm() < 1e-12);
        // Composition order: roll first, then pitch, then yaw (all about fixed axes).
        let (r, pi, y) = (0.3, -0.2, 1.1);
        let p = pose_from_xyz_rpy(0.0, 0.0, 0.0, r, pi, y);
        let (r2, p2, y2) = p.rotation.euler_angles();
        assert!((r - r2).abs() < 1e-12 && (pi - p2).abs() < 1e-12 && (y - y2).abs() < 1e-12);
    }

    #[test]
    fn tum_parse_and_interpolate() {
        let text = "# t x y z qx qy qz qw\n\n0 0 0 0 0 0 0 1\n1.0 2 0 0 0 0 0.7071067811865476 0.7071067811865476\n";
        let tum = Tum::parse(text, "traj.txt").unwrap();
        let mid = tum.world_from_sensor(0.5);
        assert!((mid.translation.vector - Vector3::new(1.0, 0.0, 0.0)).norm() < 1e-12);
        assert!((mid.rotation.angle() - std::f64::consts::FRAC_PI_4).abs() < 1e-9);
        // Held outside the span.
        assert_eq!(tum.world_from_sensor(-1.0), tum.world_from_sensor(0.0));
        assert!((tum.world_from_sensor(5.0).translation.vector.x - 2.0).abs() < 1e-12);
        assert_eq!(tum.span_s(), (0.0, 1.0));
    }

    #[test]
    fn tum_errors_name_the_line() {
        let cases = [
            ("0 0 0 0 0 0 0 1\n1 0 0 0 0 0 0\n", "line 2", "found 7"),
            ("0 0 0 0 0 0 0 1 9\n", "line 1", "found more"),
            ("# c\n0 0 x 0 0 0 0 1\n", "line 2", "\"x\""),
            (
                "0 0 0 0 0 0 0 1\n0 0 0 0 0 0 0 1\n",
                "line 2",
                "must increase",
            ),
            ("0 0 0 0 0 0 0 0\n", "line 1", "zero length"),
            ("0 0 0 0 0 0 nan 1\n", "line 1", "finite"),
            ("# only comments\n", "file", "no poses"),
        ];
        for (text, place, what) in cases {
            let err = Tum::parse(text, "t.txt").unwrap_err().to_string();
            assert!(err.contains(place) && err.contains(what), "{text:?}: {err}");
            assert!(err.contains("t.txt"), "{err}");
        }
    }

    #[test]
    fn slerp_takes_shortest_arc() {
        let a = pose_from_xyz_rpy(0.0, 0.0, 0.0, 0.0, 0.0, 3.0);
        let mut b = pose_from_xyz_rpy(0.0, 0.0, 0.0, 0.0, 0.0, -3.0);
        // Same rotation with the opposite quaternion sign must interpolate identically.
        let mid = interpolate(&a, &b, 0.5);
        b.rotation = UnitQuaternion::new_unchecked(-b.rotation.into_inner());
        let mid2 = interpolate(&a, &b, 0.5);
        assert!(mid.rotation.angle_to(&mid2.rotation) < 1e-9);
        // Through yaw = pi, not through yaw = 0.
        assert!((mid.rotation.euler_angles().2.abs() - std::f64::consts::PI).abs() < 1e-9);
    }
}
