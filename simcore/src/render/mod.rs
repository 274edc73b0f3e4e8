//! Scan rendering from a packed map (ALGORITHMS.md section 5).
//!
//! Two renderers produce the same output from a [`MapView`], a scan pattern (`&[Beam]`), the sensor physics
//! and a [`Trajectory`]:
//! - [`Method::Splat`]: MARSIM's point rendering, completed. Map points are rasterised into an angular depth
//!   image (nearest wins, each point covering the angle of its cube), then each beam reads the image along its
//!   exact direction and intersects the winning points' planes (plane correction). Cost grows with the visible
//!   points (far buckets are read at the density their pixels need, level of detail) and the image size; best
//!   for dense patterns.
//! - [`Method::Beam`]: each beam is marched front to back through a two-level grid over the map and intersected
//!   with oriented disks (points with a normal and a small plane thickness) or disks facing the beam (other
//!   points), stopping at the first cell that holds a hit. Cost grows with the beams and barely with the map;
//!   best for sparse patterns. Needs a per-map index ([`BeamIndex`]: 22 bytes per point and cell it reaches,
//!   in packs of four, and a few tables per cell; ~45 bytes per point of the tiled lone_star map), built once
//!   by [`Renderer`] and reused (or shared: [`Renderer::set_index`]).
//!
//! Speed (docs/benchmarks.md, 2026-11-29, a 2-core Xeon): on the real lone_star TLS scan (tiled 4x4, 5.8M
//! points at r_map 0.05) the beam renderer takes ~0.6 us of CPU per Avia beam (7.3-7.8 ms a frame on both
//! cores, of which ~1.5 ms is the frame's own: pattern, jitter, bound, finishing) and ~0.5 us per OS1-128 beam
//! (74-75 ms), set by the arithmetic of the march, not by memory (a map that fits in
//! cache is only ~25% faster; about three instructions per cycle). Each beam is marched only over the span of
//! range where a per-frame projection of the occupied cells says it can meet the map (`bound.rs`), and no
//! farther than the sensor detects the map's brightest surface ([`Ctx::map_reach`]); a beam
//! that returns then visits ~2 occupied blocks and ~6-8 cells (~4 occupied), screens ~80 points and tests ~6
//! exactly, half of it within 0.3 m of its surface. The splat renderer costs about twice as much per frame for
//! Livox patterns and grows with the map.
//!
//! Both take every beam from the pose at its own firing time and express the points where
//! [`RenderParams::points_in`] says: compensated for the motion into the sensor frame at the frame start (the
//! default) or at its last firing, or each in the sensor frame at its own firing (motion distortion left in, as
//! the sensor's driver gives them). Noise, angular jitter, intensity and dropout come from a counter-based hash
//! of (seed, frame, beam), so output is bit-identical for the same seed whatever the number of threads.

// `!(a < b)` is deliberate throughout: a NaN must fail the test it is in, which `a >= b` would not do.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod beam;
mod bound;
mod disks;
mod frame;
mod jitter;
mod layer;
mod motion;
mod pages;
mod splat;
mod surface;
mod vec3;

use std::borrow::Cow;
use std::sync::Arc;

use aerie_pipeline::map::MapView;
use nalgebra::{Isometry3, Point3, Vector3};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::rng::FrameStreams;
use crate::sensor::{Beam, Physics};
use crate::trajectory::Trajectory;

pub use beam::BeamIndex;
pub use frame::Image;
pub(crate) use layer::{Hit, Layer, gamma_mm};
pub(crate) use motion::{LocalPose, PoseTable};
pub(crate) use vec3::{add, cross, dot, mat_vec, max_of, min_of, sub, unit};

/// Something the map does not hold that beams can hit: a dynamic obstacle, another vehicle. Coordinates are
/// in the map (world) frame.
pub trait Occluder: Sync {
    /// The nearest intersection of the ray `origin + t * dir` (`dir` unit) with `0 < t <= max_t`: the ray
    /// parameter and the unit surface normal there.
    fn raycast(
        &self,
        origin: &Point3<f64>,
        dir: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)>;

    /// True when there is nothing to hit (no obstacle, no other vehicle): the renderer skips the occluder
    /// instead of testing every beam against it.
    fn is_empty(&self) -> bool {
        false
    }
}

/// Which renderer to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Angular depth image (MARSIM's method with plane correction and level of detail).
    Splat,
    /// Per-beam marching through the bucket grid against oriented disks.
    Beam,
    /// Chosen per sensor from a cost model (see [`choose_method`]); a [`Renderer`] decides on its first frame
    /// and keeps the choice, so a run does not switch renderer half-way.
    #[default]
    Auto,
}

/// The deepest surface layer, in r_map ([`RenderParams::surface_layer`]). Where a map is thicker than its
/// planes allow (plane thickness gamma above half r_map: corners, clutter, surfaces seen from many scans at a
/// grazing angle), the layer of 2 gamma / cos reaches past r_map; a cap of r_map kept only its front, and the
/// beam read short. Measured in the hall's fused map (docs/accuracy.md, section 4): 2 r_map took the median
/// error along the real scans' own beams from 2.74 to 2.71 cm and their share within 10 cm from 0.832 to 0.848.
pub const LAYER_DEPTH_MAX: f32 = 2.0;

/// Rendering parameters. Every field has a default (`#[serde(default)]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenderParams {
    /// Renderer. By default, [`Method::Auto`].
    pub method: Method,
    /// Intersect beams with the winning point's plane where its plane thickness is below `gamma_max_m`.
    /// By default, true.
    pub plane_correction: bool,
    /// Plane thickness below which a point is treated as lying on a plane, metres. By default, `None`:
    /// 0.5 * r_map.
    pub gamma_max_m: Option<f32>,
    /// Read far buckets only to the density their pixels need (splat renderer). By default, true.
    pub lod: bool,
    /// Seed of the noise. By default, 0.
    pub seed: u64,
    /// Number of time slices per frame for motion (splat renderer: one depth image per slice, from the
    /// slice's mid pose). By default, `None`: 1 when the pose does not change over the frame, else one slice
    /// per r_map of travel, at most 8. Beams are always cast from their own exact pose.
    pub time_slices: Option<u32>,
    /// Splat renderer: also test the winners of the 8 neighbouring pixels and take the nearest valid plane
    /// hit, which removes most of the error at footprint edges. By default, true.
    pub neighbours: bool,
    /// Angular pixel size of the depth image, radians. By default, `None`: half the mean angular spacing of
    /// the beams.
    pub pixel_rad: Option<f32>,
    /// Keep each beam's geometric range before noise and dropout in [`Frame::debug`]. By default, false.
    pub debug: bool,
    /// Depth of a surface's layer behind the nearest hit, in plane thicknesses (gamma of the nearest point)
    /// along the beam, at most [`LAYER_DEPTH_MAX`] r_map: the beam's range is the footprint-weighted mean of
    /// the hits in that layer (where a real sensor sees a surface that a map fused from many scans holds
    /// several centimetres thick). 0: the nearest hit wins (MARSIM). By default, 2 (a layer's full depth is
    /// about 2-3.5 gamma; measured on real scans in docs/accuracy.md).
    pub surface_layer: f32,
    /// Draw each point on the middle of its surface's layer, where the map stores that offset (see
    /// `render/surface.rs`): a real sensor sees a fused map's thick layer near its middle. By default, true;
    /// MARSIM's method draws the points where they are.
    pub on_surface: bool,
    /// The frame the points of a moving sensor are given in. By default, [`PointsIn::FrameStart`].
    pub points_in: PointsIn,
}

/// The frame a moving sensor's points are given in ([`RenderParams::points_in`]). For a sensor that does not
/// move during the frame all three are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointsIn {
    /// The sensor frame at the frame start, the motion during the frame compensated: every point where it lies
    /// in the world, seen from the start pose.
    #[default]
    FrameStart,
    /// The sensor frame at the frame's last firing, the motion compensated: what LiDAR-inertial front-ends
    /// (FAST-LIO and others) publish as an undistorted scan. The shared hall scan is given this way
    /// (docs/accuracy.md, section 3).
    FrameEnd,
    /// Each point in the sensor frame at its own firing time, as the sensor's driver gives it: the motion
    /// distortion left in, for testing a deskewing step.
    Firing,
}

impl Default for RenderParams {
    fn default() -> Self {
        RenderParams {
            method: Method::Auto,
            plane_correction: true,
            gamma_max_m: None,
            lod: true,
            seed: 0,
            time_slices: None,
            neighbours: true,
            pixel_rad: None,
            debug: false,
            surface_layer: 2.0,
            on_surface: true,
            points_in: PointsIn::FrameStart,
        }
    }
}

impl RenderParams {
    /// MARSIM's method as the paper and its code describe it, for side-by-side comparisons: the splat
    /// renderer with 0.2 deg pixels, the nearest point winning each pixel (no surface layer, no neighbouring
    /// winners), plane correction of every point with a normal (MARSIM skips the plane thickness test) and no
    /// level of detail. Differences that remain: footprints of points on planes are their oriented disks
    /// rather than MARSIM's circles of 1.1 times the cube's half-angle, and near-parallel or behind-the-sensor
    /// plane hits are rejected. Noise and detection come from the sensor model as for every renderer (MARSIM
    /// adds none: use a sensor file with `range_sigma_m = 0` and no detection ranges for its exact output).
    pub fn marsim() -> RenderParams {
        RenderParams {
            method: Method::Splat,
            plane_correction: true,
            gamma_max_m: Some(f32::INFINITY),
            lod: false,
            neighbours: false,
            pixel_rad: Some(0.2f32.to_radians()),
            surface_layer: 0.0,
            on_surface: false,
            ..RenderParams::default()
        }
    }
}

/// One return of a rendered scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanPoint {
    /// Position, metres, in the sensor frame that [`RenderParams::points_in`] names (by default at the frame
    /// start, the motion during the frame compensated).
    pub xyz: [f32; 3],
    /// Measured range along the beam, metres (noise included).
    pub range_m: f32,
    /// Simulated reflectivity R0 * cos(incidence), 0..1.
    pub intensity: f32,
    /// Firing time since the frame start, seconds.
    pub time_s: f32,
    /// The beam's ring: laser of a spinning LiDAR (numbered from the end its `ring_zero` says), line of a Livox,
    /// row of a depth camera ([`Beam::ring`]).
    pub ring: u16,
    /// Index of the beam in the scan pattern.
    pub beam: u32,
}

/// A rendered frame. Conversions to a point cloud and to range and depth images live in `frame.rs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    /// Returns, in beam order.
    pub points: Vec<ScanPoint>,
    /// Number of beams fired (returned or not).
    pub beams: usize,
    /// Start of the frame on the trajectory's clock, seconds.
    pub start_s: f64,
    /// Pose of the sensor in whose frame `points` are given: at the frame start, or at its last firing with
    /// [`PointsIn::FrameEnd`]. With [`PointsIn::Firing`] the pose at the frame start, though each point is in
    /// the sensor frame at its own firing.
    pub world_from_sensor: Isometry3<f64>,
    /// The renderer that produced the frame (never `Auto`).
    pub method: Method,
    /// Present when [`RenderParams::debug`] is set.
    pub debug: Option<FrameDebug>,
}

/// Per-beam results before noise, dropout and range limits, for analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameDebug {
    /// Geometric range of each beam (index as in the pattern), `None` where the beam hit nothing.
    pub range_m: Vec<Option<f32>>,
    /// Number of time slices (splat renderer) used.
    pub time_slices: u32,
    /// Number of map points rasterised (splat renderer, after culling and level of detail).
    pub points_rasterised: u64,
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
fn finite_pose(trajectory: &dyn Trajectory, t_s: f64) -> Result<Isometry3<f64>, BadPose> {
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

/// Renders one frame of the beams given, with no state kept between calls: the renderer's own entry, for tests
/// that give their own beams. A program scanning with a sensor model wants [`crate::Simulator`], which also sets
/// each beam's origin (Ouster's beam-origin offset), a depth camera's depth axis and the Livox patterns' change
/// from frame to frame.
pub fn render_frame(
    map: &MapView,
    beams: &[Beam],
    physics: &Physics,
    trajectory: &dyn Trajectory,
    frame_start_s: f64,
    frame_index: u64,
    params: &RenderParams,
) -> Result<Frame, BadPose> {
    let mut renderer = Renderer::new(beams, physics, params);
    renderer.render(map, trajectory, frame_start_s, frame_index)
}

/// Estimated relative cost of each method for this map and pattern, and the cheaper one.
///
/// Cost model, fitted to the speed runs on synthetic 1M and 5M-point maps at r_map 0.05 (the `speed` test in
/// tests/render.rs; 2 loaded cores): the splat renderer costs about 1 unit per rasterised map point (all points
/// of buckets within range, capped for level of detail at 12 per image pixel) plus 2 per image pixel; the
/// beam renderer about 3 units per beam (coarse and fine marching plus the disk tests). With the default pixel
/// size (4 pixels per beam) the beam renderer wins on CPU; the splat renderer wins with coarse pixels on small
/// maps. Only the bucket table is read, so the estimate is cheap and, unlike timing both renderers,
/// deterministic: the same inputs always pick the same renderer.
pub fn choose_method(
    map: &MapView,
    beams: &[Beam],
    physics: &Physics,
    params: &RenderParams,
) -> Method {
    let prepared = Prepared::new(beams, params);
    choose_with(map, &prepared, physics, params)
}

fn choose_with(
    map: &MapView,
    prepared: &Prepared,
    physics: &Physics,
    params: &RenderParams,
) -> Method {
    let beam_cost = 3.0 * prepared.n_beams() as f64;
    if prepared.n_beams() == 0 {
        return Method::Splat;
    }
    let pix = prepared.pixel_rad as f64;
    let fov = &prepared.fov_all;
    let pixels = fov.width_rad() as f64 * (fov.el_max - fov.el_min) as f64 / (pix * pix);
    // Points within range of the bucket-table centroid of beams' origin are unknown here (no pose); use all
    // points, capped by the level-of-detail budget of ~3 points per pixel per depth layer (4 layers).
    let max_range = physics.max_range_m.max(0.0) as f64;
    let mut points = 0.0;
    for b in map.buckets {
        let extent: f64 = (0..3)
            .map(|k| (b.max[k] - b.min[k]) as f64)
            .fold(0.0, f64::max);
        if extent > 2.0 * max_range + map.bucket_size as f64 * 2.0 {
            continue;
        }
        points += b.count as f64;
    }
    if params.lod {
        points = points.min(12.0 * pixels);
    }
    let splat_cost = points + 2.0 * pixels;
    if splat_cost <= beam_cost {
        Method::Splat
    } else {
        Method::Beam
    }
}

/// A renderer for one sensor: keeps what depends only on the scan pattern (beam angles, image field of view,
/// pixel size), the `Auto` choice made on the first frame, and the beam renderer's map index. [`crate::Simulator`]
/// holds one per sensor and sets it up from the sensor's model; use it directly only with beams of your own.
pub struct Renderer {
    beams: Vec<Beam>,
    physics: Physics,
    params: RenderParams,
    /// Computed when first needed: the beam renderer does not use it, and Livox patterns change every frame.
    prepared: Option<Prepared>,
    chosen: Option<Method>,
    index: Option<(MapKey, Arc<BeamIndex>)>,
    /// The splat renderer's points on their surfaces (`surface.rs`), for the map of that key; `None` inside
    /// when the map stores no offsets.
    surface: Option<KeptSurface>,
    /// Per-frame buffer of jittered beam directions, reused between frames.
    dirs: Vec<[f32; 3]>,
    /// The frame `dirs` hold the directions of (`None` after new beams). Without direction jitter they are the
    /// same for every frame and are kept (an OS1-128's 262,144 directions cost 1.5 ms a frame).
    dirs_frame: Option<u64>,
    /// Where each beam leaves the sensor, in the sensor frame (Ouster beam-origin offsets, the lidar origin's
    /// height above the sensor frame); empty when every beam leaves from the sensor origin.
    origins: Vec<[f32; 3]>,
    /// The largest of `origins`' offsets, metres (kept with them: the range bound reads it every frame).
    origins_reach: f32,
    /// The sensor measures depth along its +x axis (a depth camera), not range along the beam.
    depth_axis: bool,
}

/// Points moved onto their surfaces (`None` when the map stores no offsets), for the map of a key.
type KeptSurface = (MapKey, Option<Arc<[[f32; 3]]>>);

/// Identity of a map view (addresses and lengths of its slices), to know when a cached index is stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MapKey([usize; 4]);

impl MapKey {
    fn of(map: &MapView) -> MapKey {
        MapKey([
            map.positions.as_ptr() as usize,
            map.positions.len(),
            map.buckets.as_ptr() as usize,
            map.buckets.len(),
        ])
    }
}

impl Renderer {
    /// A renderer for the scan pattern `beams` (the beams of a frame, in firing order) with the sensor's `physics`
    /// and `params`; what depends on the map is built on the first frame.
    pub fn new(beams: &[Beam], physics: &Physics, params: &RenderParams) -> Renderer {
        Renderer {
            beams: beams.to_vec(),
            physics: physics.clone(),
            params: params.clone(),
            prepared: None,
            chosen: match params.method {
                Method::Auto => None,
                m => Some(m),
            },
            index: None,
            surface: None,
            dirs: Vec::new(),
            dirs_frame: None,
            origins: Vec::new(),
            origins_reach: 0.0,
            depth_axis: false,
        }
    }

    /// Say whether the sensor measures depth along its +x axis, as a stereo or time-of-flight depth camera does,
    /// rather than range along each beam: then its range noise grows with that depth (sigma_z = a + b z^2) and
    /// its range limits bound the depth, as the camera's datasheet gives them.
    pub fn set_depth_axis(&mut self, on: bool) {
        self.depth_axis = on;
    }

    /// Set where each beam leaves the sensor, in the sensor frame, one entry per beam
    /// (`SensorModel::beam_origins_m`). An empty slice, or one whose length does not match the beams, means
    /// every beam leaves from the sensor origin. The splat renderer still builds its depth image from the sensor
    /// origin and re-reads it where each beam's hit appears from that origin, which is exact for offsets of
    /// centimetres (Ouster) but can miss at the edge of a narrow field of view when the offset is a sizeable
    /// part of the range.
    pub fn set_beam_origins(&mut self, origins: &[[f32; 3]]) {
        self.origins.clear();
        if origins.iter().any(|o| *o != [0.0; 3]) {
            self.origins.extend_from_slice(origins);
        }
        self.origins_reach = farthest_offset(&self.origins);
    }

    /// Replace the scan pattern (Livox patterns differ from frame to frame), keeping the `Auto` choice and
    /// the beam renderer's map index.
    pub fn set_beams(&mut self, beams: &[Beam]) {
        self.beams.clear();
        self.beams.extend_from_slice(beams);
        self.prepared = None;
        self.dirs_frame = None;
    }

    /// Use `index` as the beam renderer's index of `map` (built by [`BeamIndex::build`] on that same map), so
    /// that several renderers on one map share it and its build can be timed on its own. An index built for
    /// another plane thickness limit than this renderer's is rebuilt on the first frame.
    pub fn set_index(&mut self, map: &MapView, index: Arc<BeamIndex>) {
        self.index = Some((MapKey::of(map), index));
    }

    /// The method in use (`None` until the first `Auto` frame).
    pub fn method(&self) -> Option<Method> {
        self.chosen
    }

    /// The method this renderer uses on `map`: the one asked for, or the `Auto` choice, made now if needed.
    pub fn choose(&mut self, map: &MapView) -> Method {
        match self.chosen {
            Some(m) => m,
            None => {
                let prepared = self
                    .prepared
                    .get_or_insert_with(|| Prepared::new(&self.beams, &self.params));
                let m = choose_with(map, prepared, &self.physics, &self.params);
                self.chosen = Some(m);
                m
            }
        }
    }

    /// Renders frame `frame_index` whose beam times count from `frame_start_s` (trajectory clock); an error when
    /// the trajectory's pose is not finite at a time the frame needs.
    pub fn render(
        &mut self,
        map: &MapView,
        trajectory: &dyn Trajectory,
        frame_start_s: f64,
        frame_index: u64,
    ) -> Result<Frame, BadPose> {
        self.render_with(map, trajectory, frame_start_s, frame_index, &[])
    }

    /// [`Renderer::render`] with occluders: each beam returns from the nearer of the map and the occluders.
    pub fn render_with(
        &mut self,
        map: &MapView,
        trajectory: &dyn Trajectory,
        frame_start_s: f64,
        frame_index: u64,
        occluders: &[&dyn Occluder],
    ) -> Result<Frame, BadPose> {
        let method = self.choose(map);
        // The splat renderer reads the map's positions: with the points of planes moved onto their surfaces
        // (the beam renderer's index packs them there itself).
        let surface = (method != Method::Beam && self.params.on_surface)
            .then(|| self.surface_positions(map))
            .flatten();
        let on_surface;
        let map = match &surface {
            Some(positions) => {
                on_surface = MapView { positions, ..*map };
                &on_surface
            }
            None => map,
        };
        let empty;
        let prepared = if method == Method::Beam {
            empty = Prepared::empty();
            &empty
        } else {
            self.prepared
                .get_or_insert_with(|| Prepared::new(&self.beams, &self.params))
        };
        refresh_dirs(
            &self.beams,
            &self.physics,
            self.params.seed,
            frame_index,
            (&mut self.dirs, &mut self.dirs_frame),
        );
        let ctx = Ctx::new(
            map,
            &self.beams,
            &self.dirs,
            frame_index,
            &self.physics,
            &self.params,
            prepared,
            trajectory,
            frame_start_s,
        )?;
        let offsets = self.origins.len() == self.beams.len();
        let ctx = Ctx {
            origins: if offsets { &self.origins } else { &[] },
            origins_reach: if offsets { self.origins_reach } else { 0.0 },
            depth_axis: self.depth_axis,
            reach: reach(&self.beams, &self.physics, self.depth_axis),
            ..ctx
        };
        // Occluders with nothing to hit are skipped; the beam renderer tests the others on each beam's ray as it
        // marches it.
        let occluders: Vec<&dyn Occluder> = occluders
            .iter()
            .copied()
            .filter(|o| !o.is_empty())
            .collect();
        let (hits, slices, rasterised) = match method {
            Method::Beam => {
                let index = index_for(
                    &mut self.index,
                    map,
                    (ctx.gamma_max, self.params.on_surface),
                );
                (beam::render(&ctx, &index, &occluders), 1, 0)
            }
            _ => {
                let (mut hits, slices, rasterised) = splat::render(&ctx);
                ctx.occlude(&mut hits, &occluders);
                (hits, slices, rasterised)
            }
        };
        let mut frame = ctx.finish(&hits);
        frame.start_s = frame_start_s;
        // The pose at `output_t` (the frame's start or end) was checked when `ctx` was made.
        frame.world_from_sensor = trajectory.world_from_sensor(frame_start_s + ctx.output_t);
        frame.method = if method == Method::Beam {
            Method::Beam
        } else {
            Method::Splat
        };
        if let Some(debug) = frame.debug.as_mut() {
            debug.time_slices = slices;
            debug.points_rasterised = rasterised;
        }
        Ok(frame)
    }
}

impl Renderer {
    /// The map's points on their surfaces for the splat renderer, made once per map and kept.
    fn surface_positions(&mut self, map: &MapView) -> Option<Arc<[[f32; 3]]>> {
        let key = MapKey::of(map);
        match &self.surface {
            Some((k, kept)) if *k == key => kept.clone(),
            _ => {
                let made: Option<Arc<[[f32; 3]]>> = surface::surface_positions(map).map(Arc::from);
                self.surface = Some((key, made.clone()));
                made
            }
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

/// Brings the beams' jittered directions (`dirs`, made for frame `made_for`) up to `frame_index`. Without
/// angular noise they are the same every frame, and are kept.
fn refresh_dirs(
    beams: &[Beam],
    physics: &Physics,
    seed: u64,
    frame_index: u64,
    (dirs, made_for): (&mut Vec<[f32; 3]>, &mut Option<u64>),
) {
    let sigma = physics.angular_sigma_rad;
    let current = made_for.is_some_and(|f| f == frame_index || !(sigma > 0.0));
    if !current || dirs.len() != beams.len() {
        jitter::jittered_dirs(beams, seed, frame_index, sigma, dirs);
        *made_for = Some(frame_index);
    }
}

/// The farthest a return can lie along a beam: the range limit, or with the depth along the sensor's axis
/// (a depth camera) the depth limit over the widest beam's cosine.
fn reach(beams: &[Beam], physics: &Physics, depth_axis: bool) -> f32 {
    if depth_axis {
        let min_cos = beams.iter().fold(1.0f32, |m, b| m.min(b.dir[0]));
        physics.max_range_m.max(0.0) / min_cos.max(1e-3)
    } else {
        physics.max_range_m.max(0.0)
    }
}

/// The beam index of `map` for a layer cap of `gamma_max`, with the points on their surfaces or not: the one
/// `kept` from an earlier frame when all three are the same, otherwise one built now and kept.
fn index_for(
    kept: &mut Option<(MapKey, Arc<BeamIndex>)>,
    map: &MapView,
    (gamma_max, on_surface): (f32, bool),
) -> Arc<BeamIndex> {
    let key = MapKey::of(map);
    match kept {
        Some((k, index))
            if *k == key
                && index.gamma_max().to_bits() == gamma_max.to_bits()
                && index.on_surface() == on_surface =>
        {
            index.clone()
        }
        _ => {
            let index = Arc::new(BeamIndex::build_with(map, gamma_max, on_surface));
            *kept = Some((key, index.clone()));
            index
        }
    }
}

/// A ray-plane intersection (see `Ctx::plane_hit`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlaneHit {
    pub t: f32,
    pub cos: f32,
    /// Distance from the point to the hit, metres.
    pub off: f32,
}

/// An angular window of the sensor frame: azimuth centre and width, elevation bounds (radians).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fov {
    pub full_circle: bool,
    pub az_centre: f32,
    pub az_width: f32,
    pub el_min: f32,
    pub el_max: f32,
}

impl Fov {
    pub fn width_rad(&self) -> f32 {
        if self.full_circle {
            std::f32::consts::TAU
        } else {
            self.az_width
        }
    }

    /// The window covering directions with the given azimuths/elevations, widened by `margin` radians.
    pub fn of(az_el: impl Iterator<Item = (f32, f32)>, margin: f32) -> Fov {
        const BINS: usize = 720;
        let mut occupied = [false; BINS];
        let (mut el_min, mut el_max) = (f32::INFINITY, f32::NEG_INFINITY);
        let mut any = false;
        for (az, el) in az_el {
            any = true;
            let b = (((az + std::f32::consts::PI) / std::f32::consts::TAU) * BINS as f32) as usize;
            if let Some(slot) = occupied.get_mut(b.min(BINS - 1)) {
                *slot = true;
            }
            el_min = el_min.min(el);
            el_max = el_max.max(el);
        }
        if !any {
            return Fov {
                full_circle: false,
                az_centre: 0.0,
                az_width: 0.0,
                el_min: 0.0,
                el_max: 0.0,
            };
        }
        // Largest circular run of empty bins: the azimuths outside the window.
        let (mut best_len, mut best_end) = (0usize, 0usize);
        let mut run = 0usize;
        for i in 0..2 * BINS {
            if occupied[i % BINS] {
                run = 0;
            } else {
                run += 1;
                if run > best_len && run <= BINS {
                    best_len = run;
                    best_end = i % BINS;
                }
            }
        }
        let bin = std::f32::consts::TAU / BINS as f32;
        let half_pi = std::f32::consts::FRAC_PI_2;
        let el_min = (el_min - margin).max(-half_pi);
        let el_max = (el_max + margin).min(half_pi);
        let gap = best_len as f32 * bin;
        let width = std::f32::consts::TAU - gap + 2.0 * margin;
        // Small gaps are not worth a partial image; polar windows need the full circle too.
        if gap < 20f32.to_radians()
            || width >= std::f32::consts::TAU * 0.95
            || el_max > 1.4
            || el_min < -1.4
        {
            return Fov {
                full_circle: true,
                az_centre: 0.0,
                az_width: std::f32::consts::TAU,
                el_min,
                el_max,
            };
        }
        // The window starts right after the gap.
        let start = -std::f32::consts::PI + (best_end + 1) as f32 * bin - margin;
        Fov {
            full_circle: false,
            az_centre: wrap_pi(start + 0.5 * width),
            az_width: width,
            el_min,
            el_max,
        }
    }
}

/// Angle wrapped to [-pi, pi).
#[inline]
pub(crate) fn wrap_pi(a: f32) -> f32 {
    let tau = std::f32::consts::TAU;
    let w = (a + std::f32::consts::PI).rem_euclid(tau) - std::f32::consts::PI;
    if w >= std::f32::consts::PI {
        w - tau
    } else {
        w
    }
}

/// What depends only on the pattern: beam angles, beams sorted by time, the whole pattern's window, pixel size.
pub(crate) struct Prepared {
    /// (azimuth, elevation) of each beam's nominal direction in the sensor frame.
    pub az_el: Vec<(f32, f32)>,
    /// Beam indices sorted by (time, index).
    pub by_time: Vec<u32>,
    pub fov_all: Fov,
    pub pixel_rad: f32,
}

impl Prepared {
    fn new(beams: &[Beam], params: &RenderParams) -> Prepared {
        let az_el: Vec<(f32, f32)> = beams
            .par_iter()
            .map(|b| {
                let [x, y, z] = unit(b.dir);
                (y.atan2(x), z.clamp(-1.0, 1.0).asin())
            })
            .collect();
        let mut by_time: Vec<u32> = (0..beams.len() as u32).collect();
        by_time.sort_by(|&a, &b| {
            let ta = beams.get(a as usize).map_or(0.0, |x| x.time_s);
            let tb = beams.get(b as usize).map_or(0.0, |x| x.time_s);
            ta.total_cmp(&tb).then(a.cmp(&b))
        });
        let fov_all = Fov::of(az_el.iter().copied(), 0.0);
        let area = (fov_all.width_rad() * (fov_all.el_max - fov_all.el_min).max(1e-3)).max(1e-6);
        let spacing = (area / beams.len().max(1) as f32).sqrt();
        let pixel_rad = params
            .pixel_rad
            .filter(|p| p.is_finite() && *p > 0.0)
            .unwrap_or(0.5 * spacing)
            .clamp(2e-4, 0.1);
        Prepared {
            az_el,
            by_time,
            fov_all,
            pixel_rad,
        }
    }

    /// Nothing prepared (the beam renderer needs none of it).
    fn empty() -> Prepared {
        Prepared {
            az_el: Vec::new(),
            by_time: Vec::new(),
            fov_all: Fov::of(std::iter::empty(), 0.0),
            pixel_rad: 0.0,
        }
    }

    fn n_beams(&self) -> usize {
        self.az_el.len()
    }
}

/// Everything a renderer needs for one frame.
pub(crate) struct Ctx<'a> {
    pub map: &'a MapView<'a>,
    pub beams: &'a [Beam],
    dirs: &'a [[f32; 3]],
    /// Index of the frame, for the per-beam random streams.
    frame_index: u64,
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
    start: LocalPose,
    /// When (seconds since the frame start) and where the sensor frame the points are given in is
    /// ([`RenderParams::points_in`]; the frame start for [`PointsIn::Firing`], whose points are not in one frame).
    output_t: f64,
    output: LocalPose,
    /// Per-beam origins in the sensor frame, or empty (all at the sensor origin).
    origins: &'a [[f32; 3]],
    /// The largest offset in `origins`, metres ([`farthest_offset`]).
    origins_reach: f32,
    /// Noise and range limits apply to the depth along the sensor's +x ([`Renderer::set_depth_axis`]).
    depth_axis: bool,
    /// The farthest a return can lie along any beam, metres: `max_range_m`, or for a depth camera that depth
    /// along its widest beam.
    pub reach: f32,
}

/// Below this |cos| between beam and normal (~88.9 deg incidence) the plane is treated as parallel to the beam.
/// The intersection stays well conditioned far beyond 85 deg (ground seen from a vehicle is hit at 85-89 deg);
/// what bounds its error is the check that the hit lands within the point's disk.
pub(crate) const MIN_COS_PLANE: f32 = 0.02;

impl<'a> Ctx<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
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
    /// [`jittered_dirs`]).
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
    fn occlude(&self, hits: &mut [Option<Hit>], occluders: &[&dyn Occluder]) {
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
    fn finish(&self, hits: &[Option<Hit>]) -> Frame {
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

/// The largest length among beam-origin offsets, metres (0 for none).
fn farthest_offset(origins: &[[f32; 3]]) -> f32 {
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

    #[test]
    fn fov_of_partial_and_full_patterns() {
        // A 70 deg wide window centred at 0.
        let dirs: Vec<(f32, f32)> = (0..100)
            .map(|i| ((-35.0 + 0.7 * i as f32).to_radians(), 0.1))
            .collect();
        let f = Fov::of(dirs.iter().copied(), 0.0);
        assert!(!f.full_circle);
        assert!(f.az_centre.abs() < 0.02, "{f:?}");
        assert!((f.az_width - 70f32.to_radians()).abs() < 0.03, "{f:?}");
        // A window straddling +-180 deg.
        let dirs: Vec<(f32, f32)> = (0..100)
            .map(|i| (wrap_pi((145.0 + 0.7 * i as f32).to_radians()), 0.0))
            .collect();
        let f = Fov::of(dirs.iter().copied(), 0.0);
        assert!(!f.full_circle);
        assert!(
            (wrap_pi(f.az_centre - 180f32.to_radians())).abs() < 0.02,
            "{f:?}"
        );
        // Spinning: full circle.
        let dirs: Vec<(f32, f32)> = (0..1024)
            .map(|i| (wrap_pi(i as f32 * std::f32::consts::TAU / 1024.0), 0.0))
            .collect();
        assert!(Fov::of(dirs.iter().copied(), 0.0).full_circle);
    }

    #[test]
    fn params_serde_defaults() {
        let p: RenderParams = toml::from_str("method = \"splat\"\nseed = 3\n").unwrap();
        assert_eq!(p.method, Method::Splat);
        assert_eq!(p.seed, 3);
        assert!(p.plane_correction && p.lod && p.neighbours);
        assert!(toml::from_str::<RenderParams>("bogus = 1").is_err());
    }
}
