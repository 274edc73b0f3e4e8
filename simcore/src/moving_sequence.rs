//! Simulated scan sequences with moving things in them (walking people, a car, the operator following the
//! sensor) and per-point ground truth from the simulator: which returns hit a moving object. Written in the
//! KTH-RPL DynamicMap_Benchmark's layout ([`aerie_pipeline::dynamic_bench`]), they are the test data of
//! `filters.moving` and of its comparison with DUFOMap (issue 78).
//!
//! The static world is a packed map rendered by the [`Simulator`] (any sensor preset: a Livox Avia, an Ouster
//! OS0-64...); the moving things are [`Occluder`]s placed where they are at each frame's time. A return is
//! dynamic when the ray from the sensor to it meets a moving object no farther than the return (plus a noise
//! margin): the renderer returns from whichever is nearer, so that is exactly the returns the movers won.
//! [`DemoWorld`] is the demo site's static surfaces, ray cast exactly; a real map such as
//! `../shared/data/maps/hall_map_20cm.pcd` is rendered from its points ([`Map::open`](crate::Map::open)), with
//! [`ground_of`] for the ground under a mover.

use std::path::Path;

use aerie_pipeline::map::{MapView, PackedMap};
use aerie_pipeline::{Cloud, dynamic_bench};
use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

use crate::demo::{DemoError, DemoSite, DemoSpec, generate};
use crate::render::Occluder;
use crate::scene::Surface;
use crate::sensor::SensorModel;
use crate::trajectory::Static;
use crate::{SimError, Simulator};

/// How a moving thing moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MoverPath {
    /// Back and forth along the segment from `a` to `b` (x, y in metres) at `speed_m_s`, from time 0.
    Segment {
        /// One end, metres.
        a: [f64; 2],
        /// The other end, metres.
        b: [f64; 2],
        /// Speed, m/s.
        speed_m_s: f64,
    },
    /// Along the sensor's own path, `lead_m` ahead of the sensor (negative: behind it, as the operator of a
    /// hand-held scanner or a vehicle following).
    Follow {
        /// Distance along the path ahead of the sensor, metres.
        lead_m: f64,
    },
}

/// What a moving thing looks like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MoverShape {
    /// A vertical cylinder standing on the ground.
    Person {
        /// Radius, metres.
        radius_m: f64,
        /// Height, metres.
        height_m: f64,
    },
    /// A box (length along its heading, width, height), 0.15 m above the ground.
    Vehicle {
        /// Length, width and height, metres.
        size_m: [f64; 3],
    },
}

/// One moving thing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mover {
    /// Its shape.
    pub shape: MoverShape,
    /// How it moves.
    pub path: MoverPath,
}

/// What to simulate: a sensor moving along a path through a static map while movers move.
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceSpec {
    /// Sensor preset name ([`SensorModel::preset`]).
    pub sensor: String,
    /// The sensor's path: positions (world metres) joined by straight segments; the sensor faces along it.
    pub path_m: Vec<[f64; 3]>,
    /// Sensor speed along the path, m/s.
    pub speed_m_s: f64,
    /// Frames to write.
    pub frames: usize,
    /// Time between written frames, seconds (the benchmark's sequences keep one scan in a few).
    pub frame_spacing_s: f64,
    /// The moving things.
    pub movers: Vec<Mover>,
    /// Seed of the sensor noise.
    pub seed: u64,
}

/// One simulated frame: the returns in the world frame, the sensor pose, and which returns hit a mover.
#[derive(Clone, Debug)]
pub struct SimFrame {
    /// Sensor pose (sensor to world).
    pub world_from_sensor: Isometry3<f64>,
    /// Returns, world frame.
    pub cloud: Cloud,
    /// Per return: it hit a moving object.
    pub dynamic: Vec<bool>,
}

/// Returns whose ray meets a mover no more than this beyond the return are the mover's, metres (several sigma of
/// range noise; nothing static stands this close behind a mover in the generated scenes).
const LABEL_MARGIN_M: f64 = 0.15;

/// Simulate `spec` in `map` and the static surfaces `statics` (exact ones, e.g. [`DemoWorld`]); `ground(x, y)`
/// is the height of the ground under a mover.
pub fn simulate(
    map: crate::Map,
    statics: &[&dyn Occluder],
    spec: &SequenceSpec,
    ground: &dyn Fn(f64, f64) -> f64,
) -> Result<Vec<SimFrame>, SimError> {
    let model = SensorModel::preset(&spec.sensor).map_err(|source| SimError::Sensor {
        name: spec.sensor.clone(),
        source,
    })?;
    let mut sim = Simulator::new(map);
    let mut params = sim.params().clone();
    params.seed = spec.seed;
    sim.set_params(params);
    let id = sim.add_sensor(&spec.sensor, model, Isometry3::identity())?;
    let path = Polyline::new(&spec.path_m);
    let mut frames = Vec::with_capacity(spec.frames);
    for k in 0..spec.frames {
        let t = k as f64 * spec.frame_spacing_s;
        let s = t * spec.speed_m_s;
        let pose = path.pose_at(s);
        let movers = Movers::at(&spec.movers, t, s, &path, ground);
        let mut occluders: Vec<&dyn Occluder> = statics.to_vec();
        occluders.push(&movers);
        let frame = sim.render_with(id, &Static(pose), t, k as u64, &occluders)?;
        frames.push(label(&frame.points, &pose, &movers));
    }
    Ok(frames)
}

/// The frame's returns in the world frame, each labelled by whether a mover is where it returned from.
fn label(points: &[crate::render::ScanPoint], pose: &Isometry3<f64>, movers: &Movers) -> SimFrame {
    let o = Point3::from(pose.translation.vector);
    let origin = [o.x.floor(), o.y.floor(), o.z.floor()];
    let mut positions = Vec::with_capacity(points.len());
    let mut dynamic = Vec::with_capacity(points.len());
    for p in points {
        let w = pose
            * Point3::new(
                f64::from(p.xyz[0]),
                f64::from(p.xyz[1]),
                f64::from(p.xyz[2]),
            );
        let d = w - o;
        let range = d.norm();
        let hit = range > 0.0
            && movers
                .raycast(&o, &(d / range), range + LABEL_MARGIN_M)
                .is_some();
        dynamic.push(hit);
        positions.push([0, 1, 2].map(|a| (w[a] - origin[a]) as f32));
    }
    SimFrame {
        world_from_sensor: *pose,
        cloud: Cloud::from_positions(origin, positions),
        dynamic,
    }
}

/// Write `frames` in the benchmark's layout under `dir`: `pcd/NNNNNN.pcd` and `gt_cloud.pcd` (every return of
/// every frame, labelled).
pub fn write_sequence(dir: &Path, frames: &[SimFrame]) -> Result<(), aerie_pipeline::Error> {
    let mut all = Cloud::default();
    let mut labels = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        dynamic_bench::write_frame(dir, k, &f.cloud, &f.world_from_sensor)?;
        if all.is_empty() {
            all = Cloud::with_origin(f.cloud.origin);
        }
        all.append(&f.cloud);
        labels.extend_from_slice(&f.dynamic);
    }
    dynamic_bench::write_ground_truth(dir, &all, &labels)?;
    Ok(())
}

/// The demo site's static surfaces, ray cast exactly (no person): the static world of the demo sequences. A
/// map rendered from points has holes where its points are sparse, through which beams would see what a solid
/// surface hides and "carve" it; exact surfaces have none, so the ground truth is clean.
pub struct DemoWorld {
    /// The generated site.
    pub site: DemoSite,
}

impl DemoWorld {
    /// The shipped demo site laid out from `seed`.
    pub fn new(seed: u64) -> Result<DemoWorld, DemoError> {
        let spec = DemoSpec::builtin();
        spec.validate()?;
        Ok(DemoWorld {
            site: generate(&spec, seed),
        })
    }

    /// Height of the ground at (x, y), metres.
    pub fn ground(&self, x: f64, y: f64) -> f64 {
        self.site.terrain.height(x, y)
    }

    /// A map the renderer can hold while [`DemoWorld`] gives every return: three points far below the site.
    pub fn placeholder_map() -> Result<crate::Map, SimError> {
        let far = [[0.0, 0.0, -1e4], [1.0, 0.0, -1e4], [0.0, 1.0, -1e4]];
        let cloud = Cloud::from_positions([0.0; 3], far.to_vec());
        crate::Map::try_from(PackedMap::from_cloud(&cloud, 0.1, None)?)
    }
}

impl Occluder for DemoWorld {
    fn raycast(
        &self,
        origin: &Point3<f64>,
        dir: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)> {
        // A time before the scan: the demo's own walker is absent.
        let hit = self.site.raycast(
            [origin.x, origin.y, origin.z],
            [dir.x, dir.y, dir.z],
            max_t,
            -1.0,
        )?;
        Some((hit.range_m, Vector3::from(hit.normal)))
    }
}

/// The ground height under each place of a map: the lowest point of each 1 m column (the map's own lowest
/// point where a column is empty).
pub fn ground_of(map: &MapView) -> impl Fn(f64, f64) -> f64 + use<> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    let world = |p: &[f32; 3]| [0, 1, 2].map(|a| map.origin[a] + f64::from(p[a]));
    for p in map.positions {
        let w = world(p);
        for a in 0..3 {
            lo[a] = lo[a].min(w[a]);
            hi[a] = hi[a].max(w[a]);
        }
    }
    let nx = ((hi[0] - lo[0]).max(0.0) as usize) + 1;
    let ny = ((hi[1] - lo[1]).max(0.0) as usize) + 1;
    let mut min_z = vec![f64::INFINITY; nx * ny];
    for p in map.positions {
        let w = world(p);
        let i = ((w[0] - lo[0]) as usize).min(nx - 1) + nx * ((w[1] - lo[1]) as usize).min(ny - 1);
        min_z[i] = min_z[i].min(w[2]);
    }
    let floor = lo[2];
    move |x: f64, y: f64| {
        let ix = ((x - lo[0]).max(0.0) as usize).min(nx - 1);
        let iy = ((y - lo[1]).max(0.0) as usize).min(ny - 1);
        let z = min_z[ix + nx * iy];
        if z.is_finite() { z } else { floor }
    }
}

/// A path of straight segments, measured by arc length.
struct Polyline {
    points: Vec<Vector3<f64>>,
    /// Arc length at each point.
    at: Vec<f64>,
}

impl Polyline {
    fn new(points: &[[f64; 3]]) -> Polyline {
        let points: Vec<Vector3<f64>> = points.iter().map(|&p| Vector3::from(p)).collect();
        let mut at = vec![0.0];
        for w in points.windows(2) {
            at.push(at.last().copied().unwrap_or(0.0) + (w[1] - w[0]).norm());
        }
        Polyline { points, at }
    }

    /// Position and unit heading at arc length `s` (clamped to the path).
    fn at(&self, s: f64) -> (Vector3<f64>, Vector3<f64>) {
        if self.points.len() < 2 {
            let p = self.points.first().copied().unwrap_or_default();
            return (p, Vector3::x());
        }
        let total = self.at.last().copied().unwrap_or(0.0);
        let s = s.clamp(0.0, total);
        let i = self
            .at
            .partition_point(|&a| a <= s)
            .clamp(1, self.points.len() - 1);
        let (a, b) = (self.points[i - 1], self.points[i]);
        let len = self.at[i] - self.at[i - 1];
        let f = if len > 0.0 {
            (s - self.at[i - 1]) / len
        } else {
            0.0
        };
        let dir = if len > 0.0 {
            (b - a) / len
        } else {
            Vector3::x()
        };
        (a + (b - a) * f, dir)
    }

    /// The sensor's pose at `s`: at the path, x axis along the horizontal heading, z up.
    fn pose_at(&self, s: f64) -> Isometry3<f64> {
        let (p, dir) = self.at(s);
        let yaw = dir.y.atan2(dir.x);
        Isometry3::from_parts(
            Translation3::from(p),
            UnitQuaternion::from_euler_angles(0.0, 0.0, yaw),
        )
    }
}

/// The movers' surfaces at one time.
struct Movers {
    surfaces: Vec<Surface>,
}

impl Movers {
    fn at(
        movers: &[Mover],
        t: f64,
        sensor_s: f64,
        path: &Polyline,
        ground: &dyn Fn(f64, f64) -> f64,
    ) -> Movers {
        let surfaces = movers
            .iter()
            .map(|m| {
                let (xy, yaw) = match m.path {
                    MoverPath::Segment { a, b, speed_m_s } => segment_at(a, b, speed_m_s * t),
                    MoverPath::Follow { lead_m } => {
                        let (p, d) = path.at(sensor_s + lead_m);
                        ([p.x, p.y], d.y.atan2(d.x))
                    }
                };
                let z = ground(xy[0], xy[1]);
                match m.shape {
                    MoverShape::Person { radius_m, height_m } => Surface::Cylinder {
                        x: xy[0],
                        y: xy[1],
                        radius: radius_m,
                        z0: z + 0.02,
                        z1: z + height_m,
                    },
                    MoverShape::Vehicle { size_m } => Surface::Cuboid {
                        centre: [xy[0], xy[1], z + 0.15 + size_m[2] / 2.0],
                        yaw_rad: yaw,
                        half: size_m.map(|v| v / 2.0),
                    },
                }
            })
            .collect();
        Movers { surfaces }
    }
}

/// Position and heading after walking `walked` metres back and forth along `a`-`b`.
fn segment_at(a: [f64; 2], b: [f64; 2], walked: f64) -> ([f64; 2], f64) {
    let length = (b[0] - a[0]).hypot(b[1] - a[1]);
    if length <= 0.0 {
        return (a, 0.0);
    }
    let s = walked.rem_euclid(2.0 * length) / length;
    let (f, sign) = if s <= 1.0 { (s, 1.0) } else { (2.0 - s, -1.0) };
    let yaw = (sign * (b[1] - a[1])).atan2(sign * (b[0] - a[0]));
    ([a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f], yaw)
}

impl Occluder for Movers {
    fn raycast(
        &self,
        origin: &Point3<f64>,
        dir: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)> {
        let o = [origin.x, origin.y, origin.z];
        let u = [dir.x, dir.y, dir.z];
        self.surfaces
            .iter()
            .filter_map(|s| s.raycast(o, u).map(|t| (t, s)))
            .filter(|&(t, _)| t > 0.0 && t <= max_t)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(t, s)| {
                let p = [0, 1, 2].map(|a| o[a] + u[a] * t);
                (t, Vector3::from(s.normal_at(p)))
            })
    }

    fn is_empty(&self) -> bool {
        self.surfaces.is_empty()
    }
}

/// The demo sequence: the sensor drives east along the site's south side at 1.5 m/s, a person walks the demo's
/// path across its view, a car drives back and forth south of it, and the operator walks 1.2 m behind the
/// sensor. `frames` frames 0.5 s apart.
pub fn demo_spec(sensor: &str, frames: usize) -> SequenceSpec {
    SequenceSpec {
        sensor: sensor.to_string(),
        path_m: vec![[-8.0, -5.5, 1.6], [14.0, -6.5, 1.6]],
        speed_m_s: 1.5,
        frames,
        frame_spacing_s: 0.5,
        movers: vec![
            person(MoverPath::Segment {
                a: [-6.0, -10.5],
                b: [12.0, -11.5],
                speed_m_s: 1.3,
            }),
            Mover {
                shape: MoverShape::Vehicle {
                    size_m: [4.5, 1.8, 1.5],
                },
                path: MoverPath::Segment {
                    a: [-4.0, -16.0],
                    b: [12.0, -16.0],
                    speed_m_s: 4.0,
                },
            },
            person(MoverPath::Segment {
                a: [3.0, -14.0],
                b: [5.0, -8.5],
                speed_m_s: 1.0,
            }),
            person(MoverPath::Follow { lead_m: -1.2 }),
        ],
        seed: 1,
    }
}

/// A person 0.25 m in radius and 1.75 m tall moving along `path`.
pub fn person(path: MoverPath) -> Mover {
    Mover {
        shape: MoverShape::Person {
            radius_m: 0.25,
            height_m: 1.75,
        },
        path,
    }
}
