//! The sensor's pose over one frame, sampled once and read per beam: every beam is cast from the pose at its
//! own firing time.

use nalgebra::{Isometry3, Matrix3, UnitQuaternion, Vector3};

use crate::trajectory::Trajectory;

/// Sensor poses over a frame: the trajectory sampled at knots (relative to the map origin), interpolated per
/// beam. The rotation is interpolated entrywise between the knots' matrices: a vector it turns is the linear
/// blend of the two knots' images, which only the length tells from the slerped one (short by about
/// theta^2 / 8 for theta between knots: 3e-7 at 1 rad/s, the 64 knots of a 10 Hz frame), and beam directions are
/// normalised where they are used. It costs a tenth of building a matrix from a blended quaternion per beam,
/// which was ~10% of a flight's rendering.
pub(super) struct PoseTable {
    /// Beam time of the first knot and knot spacing, seconds (relative to the frame start).
    t0: f64,
    dt: f64,
    rotations: Vec<UnitQuaternion<f64>>,
    /// The knots' rotations as matrices.
    matrices: Vec<Matrix3<f64>>,
    /// Sensor origins relative to the map origin.
    pub(super) origins: Vec<Vector3<f64>>,
}

/// The pose of the sensor at one instant, relative to the map origin.
#[derive(Clone, Copy, Debug)]
pub(super) struct LocalPose {
    /// Row-major map_from_sensor rotation.
    pub rot: [[f32; 3]; 3],
    pub rot64: Matrix3<f64>,
    pub origin: Vector3<f64>,
}

impl LocalPose {
    pub(super) fn from_rotation(q: &UnitQuaternion<f64>, origin: Vector3<f64>) -> LocalPose {
        LocalPose::from_matrix(q.to_rotation_matrix().into_inner(), origin)
    }

    fn from_matrix(m: Matrix3<f64>, origin: Vector3<f64>) -> LocalPose {
        let mut rot = [[0.0f32; 3]; 3];
        for (r, row) in rot.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = m[(r, c)] as f32;
            }
        }
        LocalPose {
            rot,
            rot64: m,
            origin,
        }
    }

    /// Origin as f32 (map-relative coordinates, where map points live).
    pub fn origin32(&self) -> [f32; 3] {
        [
            self.origin.x as f32,
            self.origin.y as f32,
            self.origin.z as f32,
        ]
    }

    /// Transposed rotation (sensor_from_map), row-major.
    pub fn rot_t(&self) -> [[f32; 3]; 3] {
        let r = &self.rot;
        [
            [r[0][0], r[1][0], r[2][0]],
            [r[0][1], r[1][1], r[2][1]],
            [r[0][2], r[1][2], r[2][2]],
        ]
    }
}

const KNOTS: usize = 64;

impl PoseTable {
    pub(super) fn new(
        trajectory: &dyn Trajectory,
        map_origin: Vector3<f64>,
        frame_start_s: f64,
        t_lo: f64,
        t_hi: f64,
    ) -> Result<PoseTable, BadPose> {
        let span = (t_hi - t_lo).max(0.0);
        let n = if span > 0.0 { KNOTS } else { 0 };
        let dt = if n > 0 { span / n as f64 } else { 0.0 };
        let mut rotations = Vec::with_capacity(n + 1);
        let mut origins = Vec::with_capacity(n + 1);
        for k in 0..=n {
            let pose = finite_pose(trajectory, frame_start_s + t_lo + k as f64 * dt)?;
            rotations.push(pose.rotation);
            origins.push(pose.translation.vector - map_origin);
        }
        let matrices = rotations
            .iter()
            .map(|q| q.to_rotation_matrix().into_inner())
            .collect();
        Ok(PoseTable {
            t0: t_lo,
            dt,
            rotations,
            matrices,
            origins,
        })
    }

    /// True when the pose is the same at every knot (no motion over the frame).
    pub(super) fn is_static(&self) -> bool {
        let (Some(q0), Some(o0)) = (self.rotations.first(), self.origins.first()) else {
            return true;
        };
        self.rotations.iter().all(|q| q.angle_to(q0) < 1e-9)
            && self.origins.iter().all(|o| (o - o0).norm() < 1e-9)
    }

    /// Largest translation (metres) and rotation (radians) from the first knot.
    pub(super) fn motion(&self) -> (f64, f64) {
        let (Some(q0), Some(o0)) = (self.rotations.first(), self.origins.first()) else {
            return (0.0, 0.0);
        };
        let trans = self
            .origins
            .iter()
            .map(|o| (o - o0).norm())
            .fold(0.0, f64::max);
        let rot = self
            .rotations
            .iter()
            .map(|q| q.angle_to(q0))
            .fold(0.0, f64::max);
        (trans, rot)
    }

    /// Pose at beam time `t` (seconds since the frame start).
    pub fn at(&self, t: f64) -> LocalPose {
        let last = self.matrices.len().saturating_sub(1);
        let (i, f) = if self.dt > 0.0 {
            let x = ((t - self.t0) / self.dt).clamp(0.0, last as f64);
            // x >= 0 after the clamp, so truncation is the floor (f64::floor is a libm call on x86-64).
            let i = (x as usize).min(last.saturating_sub(1));
            (i, x - i as f64)
        } else {
            (0, 0.0)
        };
        let (Some(m0), Some(o0)) = (self.matrices.get(i), self.origins.get(i)) else {
            return LocalPose::from_matrix(Matrix3::identity(), Vector3::zeros());
        };
        match (self.matrices.get(i + 1), self.origins.get(i + 1)) {
            (Some(m1), Some(o1)) if f > 0.0 => {
                LocalPose::from_matrix(m0 + (m1 - m0) * f, o0.lerp(o1, f))
            }
            _ => LocalPose::from_matrix(*m0, *o0),
        }
    }
}

/// A frame cannot be placed: the trajectory gave a pose that is not finite at a time the frame needs.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error(
    "the trajectory's pose at t = {t_s} s is not finite (NaN or infinite position or rotation); check the poses \
     it is made from"
)]
pub struct BadPose {
    /// When, on the trajectory's clock, seconds.
    pub t_s: f64,
}

/// The pose at `t_s`, or [`BadPose`] when any of its numbers is not finite (a NaN would otherwise give a frame
/// with no returns and no word why).
pub(super) fn finite_pose(
    trajectory: &dyn Trajectory,
    t_s: f64,
) -> Result<Isometry3<f64>, BadPose> {
    let pose = trajectory.world_from_sensor(t_s);
    let q = pose.rotation.coords;
    let finite = pose
        .translation
        .vector
        .iter()
        .chain(q.iter())
        .all(|v| v.is_finite());
    if finite {
        Ok(pose)
    } else {
        Err(BadPose { t_s })
    }
}
