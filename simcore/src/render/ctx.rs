//! The frame both renderers read ([`Ctx`]): the map, the beams and their jittered directions, the poses over
//! the frame, and the steps every beam shares: its ray, its plane and plain hits, the occluders, and the
//! finishing pass that turns hits into returns (noise, intensity, dropout, range limits, output frame).

use std::borrow::Cow;

use aerie_pipeline::map::MapView;
use nalgebra::{Isometry3, Point3, Vector3};
use rayon::prelude::*;

use super::frame::{Frame, FrameDebug, ScanPoint};
use super::layer::{Hit, gamma_mm};
use super::motion::{BadPose, LocalPose, PoseTable, finite_pose};
use super::occluder::Occluder;
use super::params::{LAYER_DEPTH_MAX, Method, PointsIn, RenderParams};
use super::prepared::Prepared;
use super::vec3::{add, dot, mat_vec, sub, unit};
use crate::rng::FrameStreams;
use crate::sensor::{Beam, Physics};
use crate::trajectory::Trajectory;

/// A ray-plane intersection (see `Ctx::plane_hit`).
#[derive(Clone, Copy, Debug)]
pub(super) struct PlaneHit {
    pub t: f32,
    pub cos: f32,
    /// Distance from the point to the hit, metres.
    pub off: f32,
}

/// Everything a renderer needs for one frame.
pub(super) struct Ctx<'a> {
    pub map: &'a MapView<'a>,
    pub beams: &'a [Beam],
    pub(super) dirs: &'a [[f32; 3]],
    /// Index of the frame, for the per-beam random streams.
    pub(super) frame_index: u64,
    pub physics: &'a Physics,
    pub params: &'a RenderParams,
    pub prepared: &'a Prepared,
    pub poses: PoseTable,
    pub moving: bool,
    pub r_map: f32,
    /// sqrt(3)/2 * r_map: the half-diagonal of a point's cube, the radius of its disk.
    pub rho: f32,
    pub gamma_max: f32,
    /// Plane correction possible (asked for and the map has normals).
    pub planes: bool,
    /// Pose at the frame start: every beam's pose when the sensor does not move.
    pub(super) start: LocalPose,
    /// When (seconds since the frame start) and where the sensor frame the points are given in is
    /// ([`RenderParams::points_in`]; the frame start for [`PointsIn::Firing`], whose points are not in one frame).
    pub(super) output_t: f64,
    pub(super) output: LocalPose,
    /// Per-beam origins in the sensor frame, or empty (all at the sensor origin).
    pub(super) origins: &'a [[f32; 3]],
    /// The largest offset in `origins`, metres ([`farthest_offset`]).
    pub(super) origins_reach: f32,
    /// Noise and range limits apply to the depth along the sensor's +x ([`Renderer::set_depth_axis`](super::Renderer::set_depth_axis)).
    pub(super) depth_axis: bool,
    /// The farthest a return can lie along any beam, metres: `max_range_m`, or for a depth camera that depth
    /// along its widest beam.
    pub reach: f32,
}

/// Below this |cos| between beam and normal (~88.9 deg incidence) the plane is treated as parallel to the beam.
/// The intersection stays well conditioned far beyond 85 deg (ground seen from a vehicle is hit at 85-89 deg);
/// what bounds its error is the check that the hit lands within the point's disk.
pub(super) const MIN_COS_PLANE: f32 = 0.02;

impl<'a> Ctx<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        map: &'a MapView<'a>,
        beams: &'a [Beam],
        dirs: &'a [[f32; 3]],
        frame_index: u64,
        physics: &'a Physics,
        params: &'a RenderParams,
        prepared: &'a Prepared,
        trajectory: &dyn Trajectory,
        frame_start_s: f64,
    ) -> Result<Ctx<'a>, BadPose> {
        let (t_lo, t_hi) = beams.iter().fold((0.0f64, 0.0f64), |(lo, hi), b| {
            let t = if b.time_s.is_finite() {
                b.time_s as f64
            } else {
                0.0
            };
            (lo.min(t), hi.max(t))
        });
        let map_origin = Vector3::from(map.origin);
        let poses = PoseTable::new(trajectory, map_origin, frame_start_s, t_lo, t_hi)?;
        let moving = !poses.is_static();
        let local = |t: f64| {
            let iso = finite_pose(trajectory, frame_start_s + t)?;
            Ok(LocalPose::from_rotation(
                &iso.rotation,
                iso.translation.vector - map_origin,
            ))
        };
        let start = local(0.0)?;
        let (output_t, output) = match params.points_in {
            PointsIn::FrameEnd => (t_hi, local(t_hi)?),
            PointsIn::FrameStart | PointsIn::Firing => (0.0, start),
        };
        let r_map = r_map_or_default(map);
        let gamma_max = gamma_max_of(params, map);
        Ok(Ctx {
            map,
            beams,
            dirs,
            frame_index,
            physics,
            params,
            prepared,
            poses,
            moving,
            r_map,
            rho: 0.5 * 3f32.sqrt() * r_map,
            gamma_max,
            planes: params.plane_correction && map.normals.is_some(),
            start,
            output_t,
            output,
            origins: &[],
            origins_reach: 0.0,
            depth_axis: false,
            reach: physics.max_range_m.max(0.0),
        })
    }

    /// The sensor's origin at the frame's first firing (map-relative) and how far from it any beam of the
    /// frame leaves, metres: the sensor's travel over the frame plus the largest beam-origin offset.
    pub fn origin_spread(&self) -> ([f32; 3], f32) {
        let o = self.poses.origins.first().unwrap_or(&self.start.origin);
        // Beam origins are interpolated linearly between the knots: none lies farther than the farthest knot.
        let (travel, _) = self.poses.motion();
        (
            [o.x as f32, o.y as f32, o.z as f32],
            travel as f32 + self.origins_reach,
        )
    }

    /// The farthest a return from the map can lie along a beam when no point of the map reflects more than
    /// `r0_max` (`None`: the map has no reflectance; its points, and the occluders, take the sensor's default):
    /// no surface is detected beyond the detection range of the brightest one, and the range noise moves a
    /// return by at most its largest draw. [`Ctx::reach`] where nothing bounds the detection or the noise grows
    /// with range. A beam marched only this far returns the same points: in a map without reflectance an
    /// OS1-128 (40 m at 10%, 120 m at 80%) sees nothing beyond 94 m.
    pub fn map_reach(&self, r0_max: Option<f32>) -> f32 {
        let ph = self.physics;
        if self.depth_axis || ph.range_sigma_quadratic != 0.0 {
            return self.reach;
        }
        let brightest = r0_max.map_or(ph.default_reflectance, |r| r.max(ph.default_reflectance));
        match ph.detection_limit_m(brightest) {
            Some(limit) => {
                let noise = ph.range_sigma_m.abs() * crate::rng::NORMAL_DRAW_MAX as f32;
                self.reach.min(limit + noise)
            }
            None => self.reach,
        }
    }

    /// Depth behind the nearest hit within which hits count as the same surface layer, metres.
    pub fn layer_window(&self) -> (f32, f32) {
        let k = self.params.surface_layer;
        if k > 0.0 && k.is_finite() {
            (k, LAYER_DEPTH_MAX * self.r_map)
        } else {
            (0.0, 0.0)
        }
    }

    /// Plane thickness of point `idx` in millimetres as the beam index stores it (`u16::MAX`: no plane).
    #[inline]
    pub fn gamma_mm(&self, idx: u32) -> u16 {
        gamma_mm(
            self.map
                .gamma
                .and_then(|g| g.get(idx as usize))
                .copied()
                .unwrap_or(f32::INFINITY),
        )
    }

    /// Number of time slices for the splat renderer.
    pub fn time_slices(&self) -> u32 {
        if let Some(k) = self.params.time_slices {
            return k.clamp(1, 1024);
        }
        if !self.moving {
            return 1;
        }
        let (trans, _rot) = self.poses.motion();
        ((trans / self.r_map as f64).ceil() as u32).clamp(1, 8)
    }

    /// The jittered unit direction of beam `i` in the sensor frame (computed once per frame by
    /// [`jittered_dirs`](super::jitter::jittered_dirs)).
    #[inline]
    pub fn beam_dir(&self, i: usize) -> [f32; 3] {
        self.dirs.get(i).copied().unwrap_or([1.0, 0.0, 0.0])
    }

    /// Ray of beam `i` in map-relative coordinates: origin, unit direction, and the pose it was cast from.
    #[inline(always)]
    pub fn ray(&self, i: usize) -> ([f32; 3], [f32; 3]) {
        let b = self.beam_dir(i);
        let t = self.beams.get(i).map_or(0.0, |b| b.time_s as f64);
        let pose = self.pose_at(t);
        let o = pose.origin32();
        match self.origins.get(i) {
            Some(&offset) => (
                add(o, mat_vec(&pose.rot, offset)),
                unit(mat_vec(&pose.rot, b)),
            ),
            None => (o, unit(mat_vec(&pose.rot, b))),
        }
    }

    /// Pose of the sensor at beam time `t` (seconds since the frame start).
    #[inline]
    pub fn pose_at(&self, t: f64) -> Cow<'_, LocalPose> {
        // Borrowed when static: a copy of the pose is a 132-byte memcpy per beam.
        if self.moving {
            Cow::Owned(self.poses.at(t))
        } else {
            Cow::Borrowed(&self.start)
        }
    }

    /// Position of point `idx` (map-relative).
    #[inline]
    pub fn point(&self, idx: u32) -> [f32; 3] {
        self.map
            .positions
            .get(idx as usize)
            .copied()
            .unwrap_or([f32::NAN; 3])
    }

    /// Intersection of the ray (o, u) with the plane of point `idx`: `None` when the point is not on a plane
    /// (no normal, gamma >= gamma_max, plane correction off) or the ray is near-parallel to it; else the ray
    /// parameter (NaN or <= 0 when the plane is behind), cos(incidence), and the distance from the point to
    /// the hit (the caller checks it against the disk radius).
    #[inline]
    pub fn plane_hit(&self, idx: u32, o: [f32; 3], u: [f32; 3]) -> Option<PlaneHit> {
        if !self.planes {
            return None;
        }
        let gamma = self
            .map
            .gamma
            .and_then(|g| g.get(idx as usize))
            .copied()
            .unwrap_or(0.0);
        if !(gamma < self.gamma_max) {
            return None;
        }
        let n = *self.map.normals?.get(idx as usize)?;
        let denom = dot(n, u);
        if !(denom.abs() >= MIN_COS_PLANE) {
            return None;
        }
        let rel = sub(self.point(idx), o);
        let t = dot(n, rel) / denom;
        let miss = [t * u[0] - rel[0], t * u[1] - rel[1], t * u[2] - rel[2]];
        Some(PlaneHit {
            t,
            cos: denom.abs().min(1.0),
            off: dot(miss, miss).sqrt(),
        })
    }

    /// The plain range: the point projected on the ray, with cos(incidence) from its normal if any.
    #[inline]
    pub fn plain_hit(&self, idx: u32, o: [f32; 3], u: [f32; 3]) -> Option<(f32, f32)> {
        let t = dot(sub(self.point(idx), o), u);
        (t > 0.0).then(|| (t, self.cos_incidence(idx, u)))
    }

    #[inline]
    pub fn cos_incidence(&self, idx: u32, u: [f32; 3]) -> f32 {
        match self.map.normals.and_then(|n| n.get(idx as usize)) {
            Some(&n) => dot(n, u).abs().min(1.0),
            None => 1.0,
        }
    }

    /// Replaces each beam's map hit by an occluder's where the occluder is nearer. Occluder hits carry the
    /// point index `u32::MAX` (no map point: default reflectance).
    pub(super) fn occlude(&self, hits: &mut [Option<Hit>], occluders: &[&dyn Occluder]) {
        if occluders.is_empty() {
            return;
        }
        hits.par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each(|(i, hit)| *hit = self.occlude_beam(self.ray(i), *hit, occluders));
    }

    /// `hit` on the ray `(o, u)` (map-relative), or an occluder's hit where one is nearer.
    #[inline]
    pub fn occlude_beam(
        &self,
        (o, u): ([f32; 3], [f32; 3]),
        mut hit: Option<Hit>,
        occluders: &[&dyn Occluder],
    ) -> Option<Hit> {
        if occluders.is_empty() {
            return hit;
        }
        let o = Point3::new(o[0] as f64, o[1] as f64, o[2] as f64) + Vector3::from(self.map.origin);
        let u = Vector3::new(u[0] as f64, u[1] as f64, u[2] as f64);
        let mut max_t = hit.map_or(self.reach as f64, |h| h.t as f64);
        for occ in occluders {
            if let Some((t, n)) = occ.raycast(&o, &u, max_t) {
                max_t = t;
                hit = Some(Hit {
                    t: t as f32,
                    point: u32::MAX,
                    cos_incidence: n.dot(&u).abs().min(1.0) as f32,
                });
            }
        }
        hit
    }

    /// Turns per-beam hits into the frame: range noise, intensity, dropout, range limits, output frame.
    pub(super) fn finish(&self, hits: &[Option<Hit>]) -> Frame {
        let ph = self.physics;
        let output_rot_t = self.output.rot64.transpose();
        let streams = FrameStreams::new(self.params.seed, self.frame_index);
        let points: Vec<ScanPoint> = hits
            .par_iter()
            .enumerate()
            .with_min_len(1024)
            .filter_map(|(i, hit)| {
                let hit = hit.as_ref()?;
                let beam = self.beams.get(i)?;
                let b = self.beam_dir(i);
                let d_true = hit.t as f64;
                // What the sensor measures per metre of range: 1 along the beam, the beam's cosine to the
                // optical axis for a depth camera (its noise and limits are in depth, z = d cos).
                let per_m = if self.depth_axis {
                    f64::from(b[0]).max(1e-6)
                } else {
                    1.0
                };
                let z_true = d_true * per_m;
                let sigma = (ph.range_sigma_m as f64
                    + ph.range_sigma_quadratic as f64 * z_true * z_true)
                    / per_m;
                // The range sample is the first draw of the beam's stream (the direction jitter the next two),
                // drawn here so that beams that hit nothing pay nothing for it.
                let d = d_true
                    + if sigma > 0.0 {
                        sigma * streams.beam(i as u64).normal()
                    } else {
                        0.0
                    };
                if !(d * per_m >= ph.min_range_m as f64 && d * per_m <= ph.max_range_m as f64) {
                    return None;
                }
                let r0 = self
                    .map
                    .reflectance
                    .and_then(|r| r.get(hit.point as usize))
                    .copied()
                    .unwrap_or(ph.default_reflectance);
                let reflectivity = r0 * hit.cos_incidence;
                if !ph.detects(reflectivity, d) {
                    return None;
                }
                let pose = self.pose_at(beam.time_s as f64);
                let mut u_map = pose.rot64 * Vector3::new(b[0] as f64, b[1] as f64, b[2] as f64);
                if self.moving {
                    // An interpolated rotation (`PoseTable::at`) shortens vectors by ~1e-7.
                    u_map.normalize_mut();
                }
                let beam_origin = match self.origins.get(i) {
                    Some(o) => {
                        pose.origin
                            + pose.rot64 * Vector3::new(o[0] as f64, o[1] as f64, o[2] as f64)
                    }
                    None => pose.origin,
                };
                let q = beam_origin + u_map * d;
                let xyz = match self.params.points_in {
                    PointsIn::Firing => pose.rot64.transpose() * (q - pose.origin),
                    PointsIn::FrameStart | PointsIn::FrameEnd => {
                        output_rot_t * (q - self.output.origin)
                    }
                };
                Some(ScanPoint {
                    xyz: [xyz.x as f32, xyz.y as f32, xyz.z as f32],
                    range_m: d as f32,
                    intensity: reflectivity.clamp(0.0, 1.0),
                    time_s: beam.time_s,
                    ring: beam.ring,
                    beam: i as u32,
                })
            })
            .collect();
        Frame {
            points,
            beams: self.beams.len(),
            start_s: 0.0,
            world_from_sensor: Isometry3::identity(),
            method: Method::Splat,
            debug: self.params.debug.then(|| FrameDebug {
                range_m: hits.iter().map(|h| h.map(|h| h.t)).collect(),
                time_slices: 1,
                points_rasterised: 0,
            }),
        }
    }
}

/// The map's resolution, or 0.1 m where it is not a positive number.
fn r_map_or_default(map: &MapView) -> f32 {
    if map.resolution.is_finite() && map.resolution > 0.0 {
        map.resolution
    } else {
        0.1
    }
}

/// The plane thickness below which a point counts as lying on a plane: [`RenderParams::gamma_max_m`], by
/// default half of r_map.
fn gamma_max_of(params: &RenderParams, map: &MapView) -> f32 {
    params
        .gamma_max_m
        .filter(|g| !g.is_nan())
        .unwrap_or(0.5 * r_map_or_default(map))
}

/// The largest length among beam-origin offsets, metres (0 for none).
pub(super) fn farthest_offset(origins: &[[f32; 3]]) -> f32 {
    origins
        .iter()
        .map(|v| dot(*v, *v).sqrt())
        .fold(0.0f32, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spread by which the range bound grows its boxes covers every beam's origin over a moving, turning
    /// frame with beam-origin offsets (travel plus the largest offset), and is not much more.
    #[test]
    fn every_beam_leaves_within_the_frames_spread() {
        struct Turning;
        impl Trajectory for Turning {
            fn world_from_sensor(&self, t: f64) -> Isometry3<f64> {
                crate::trajectory::pose_from_xyz_rpy(
                    10.0 + 5.0 * t,
                    2.0 - 3.0 * t,
                    1.5,
                    0.1,
                    0.0,
                    4.0 * t,
                )
            }
        }
        let positions = [[0.0f32, 0.0, 0.0], [1.0, 1.0, 1.0]];
        let map = MapView {
            origin: [100.0, -50.0, 0.0],
            resolution: 0.1,
            bucket_size: 20.0,
            buckets: &[],
            positions: &positions,
            normals: None,
            gamma: None,
            spacing: None,
            surface_offset: None,
            reflectance: None,
        };
        let beams: Vec<Beam> = (0..1000)
            .map(|i| Beam {
                dir: [1.0, (i % 7) as f32 * 0.1, (i % 5) as f32 * -0.1],
                time_s: i as f32 * 1e-4,
                ring: (i % 16) as u16,
            })
            .collect();
        let dirs: Vec<[f32; 3]> = beams.iter().map(|b| unit(b.dir)).collect();
        let offsets: Vec<[f32; 3]> = (0..1000)
            .map(|i| [0.015, 0.0, 0.03 * (i % 3) as f32])
            .collect();
        let physics = crate::sensor::SensorModel::preset("os0_64")
            .expect("a shipped preset")
            .physics;
        let params = RenderParams::default();
        let prepared = Prepared::empty();
        let ctx = Ctx::new(
            &map, &beams, &dirs, 0, &physics, &params, &prepared, &Turning, 3.0,
        )
        .expect("finite poses");
        let ctx = Ctx {
            origins: &offsets,
            origins_reach: farthest_offset(&offsets),
            ..ctx
        };
        let (origin, spread) = ctx.origin_spread();
        let mut farthest = 0.0f32;
        for i in 0..beams.len() {
            let (o, _) = ctx.ray(i);
            let d = sub(o, origin);
            farthest = farthest.max(dot(d, d).sqrt());
        }
        // 0.1 s at 5.83 m/s, and offsets up to 6.2 cm.
        assert!(
            farthest <= spread && spread < farthest + 0.1,
            "{farthest} {spread}"
        );
        assert!(farthest > 0.5, "{farthest}");
    }
}
