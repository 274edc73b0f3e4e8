//! One sensor's renderer across frames ([`Renderer`]): it keeps what depends only on the scan pattern, the
//! `Auto` choice of method, the beam renderer's map index and the map's points on their surfaces, and runs each
//! frame: the beams' jittered directions, the frame's [`Ctx`], the chosen renderer, the occluders, the
//! finishing pass.

use std::sync::Arc;

use aerie_pipeline::map::MapView;

use super::beam::{self, BeamIndex};
use super::ctx::{Ctx, farthest_offset};
use super::frame::Frame;
use super::motion::BadPose;
use super::occluder::Occluder;
use super::params::{Method, RenderParams};
use super::prepared::Prepared;
use super::{jitter, splat, surface};
use crate::sensor::{Beam, Physics};
use crate::trajectory::Trajectory;

pub(super) fn choose_with(
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
