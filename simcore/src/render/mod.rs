//! Scan rendering from a packed map (docs/algorithms.md, sections 16 to 22).
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
//! range where a per-frame projection of the occupied cells says it can meet the map (`beam/bound.rs`), and no
//! farther than the sensor detects the map's brightest surface ([`Ctx::map_reach`](ctx::Ctx::map_reach)); a beam
//! that returns then visits ~2 occupied blocks and ~6-8 cells (~4 occupied), screens ~80 points and tests ~6
//! exactly, half of it within 0.3 m of its surface. The splat renderer costs about twice as much per frame for
//! Livox patterns and grows with the map.
//!
//! Both take every beam from the pose at its own firing time and express the points where
//! [`RenderParams::points_in`] says: compensated for the motion into the sensor frame at the frame start (the
//! default) or at its last firing, or each in the sensor frame at its own firing (motion distortion left in, as
//! the sensor's driver gives them). Noise, angular jitter, intensity and dropout come from a counter-based hash
//! of (seed, frame, beam), so output is bit-identical for the same seed whatever the number of threads.
//!
//! The modules are layers, from the bottom up; none imports one above it, and none imports this module, which
//! only re-exports the public types and holds the two entry functions: `vec3`, `pages`, `surface`, `disks` and
//! `layer` (the small steps both renderers share); `params`, `occluder`, `frame`, `motion` and `prepared` (the
//! parameters, what beams hit besides the map, the frame and its images, the poses over a frame, what the
//! pattern alone fixes); `ctx` (one frame's context and the steps every beam shares, finishing included);
//! `splat` and `beam` (the two renderers); `renderer` (one sensor's [`Renderer`] across frames).

// `!(a < b)` is deliberate throughout: a NaN must fail the test it is in, which `a >= b` would not do.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod beam;
mod ctx;
mod disks;
mod frame;
mod jitter;
mod layer;
mod motion;
mod occluder;
mod pages;
mod params;
mod prepared;
mod renderer;
mod splat;
mod surface;
mod vec3;

use aerie_pipeline::map::MapView;

use crate::sensor::{Beam, Physics};
use crate::trajectory::Trajectory;

pub use beam::BeamIndex;
pub use frame::{Frame, FrameDebug, Image, ScanPoint};
pub use motion::BadPose;
pub use occluder::Occluder;
pub use params::{LAYER_DEPTH_MAX, Method, PointsIn, RenderParams};
pub use renderer::Renderer;

use prepared::Prepared;
use renderer::choose_with;

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
/// Cost model, fitted to the speed runs on synthetic 1M and 5M-point maps at r_map 0.05 (the `speed` tests in
/// simcore/tests/it/render/; 2 loaded cores): the splat renderer costs about 1 unit per rasterised map point (all
/// points of buckets within range, capped for level of detail at 12 per image pixel) plus 2 per image pixel; the
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
