//! Dynamic obstacles (the MARSIM paper's three kinds): drones flying straight at constant velocity, spheres
//! falling under real gravity, cubes in a random walk. Each respawns at a random place inside the map's bounds
//! when it leaves them. All randomness comes from counter-based streams of (seed, obstacle, respawn or step), so
//! a flight is the same for a seed whatever else happens.

use nalgebra::{Point3, Vector3};
use serde::{Deserialize, Serialize};

use crate::render::Occluder;
use crate::rng::BeamRng;
use crate::vehicle::GRAVITY;

/// Which kind of obstacle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObstacleKind {
    /// A sphere flying straight at constant velocity.
    Drone,
    /// A sphere falling under gravity from the top of the map.
    FallingSphere,
    /// An axis-aligned cube whose velocity changes at random every second.
    Cube,
}

/// A group of obstacles of one kind, as a mission lists them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObstacleConfig {
    /// Which kind.
    pub kind: ObstacleKind,
    /// How many. By default, 1.
    #[serde(default = "one")]
    pub count: u32,
    /// Diameter (spheres) or edge (cubes), metres (at least 0.01). By default, 0.5.
    #[serde(default = "half_metre")]
    pub size_m: f64,
    /// Speed, m/s (drones and cubes; falling spheres start at rest). By default, 1.
    #[serde(default = "one_f")]
    pub speed_m_s: f64,
}

/// The most obstacles a mission may hold in all: each one is tested against every LiDAR beam and every vehicle
/// at every step, so a flight's cost grows with their number.
pub const MAX_OBSTACLES: u32 = 1000;

impl ObstacleConfig {
    /// Checks what the TOML parser cannot: the size and speed in range.
    pub fn check(&self) -> Result<(), String> {
        if !(self.size_m >= 0.01 && self.size_m <= 100.0) {
            return Err(format!(
                "size_m must be between 0.01 and 100 m, got {}",
                self.size_m
            ));
        }
        if !(self.speed_m_s >= 0.0 && self.speed_m_s <= 100.0) {
            return Err(format!(
                "speed_m_s must be between 0 and 100 m/s, got {}",
                self.speed_m_s
            ));
        }
        if self.count > MAX_OBSTACLES {
            return Err(format!(
                "count {} is more than the {MAX_OBSTACLES} obstacles a mission may hold",
                self.count
            ));
        }
        Ok(())
    }
}

fn one() -> u32 {
    1
}
fn half_metre() -> f64 {
    0.5
}
fn one_f() -> f64 {
    1.0
}

/// An obstacle's current shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// A sphere: a drone, a falling sphere, or another vehicle in [`Spheres`].
    Sphere {
        /// Centre, map frame, metres.
        centre: Point3<f64>,
        /// Radius, metres.
        radius: f64,
    },
    /// Axis-aligned box.
    Cube {
        /// Centre, map frame, metres.
        centre: Point3<f64>,
        /// Half the edge, metres.
        half: f64,
    },
}

impl Shape {
    /// The nearest surface point within `radius` of `p`, if the sphere of `radius` around `p` touches it.
    pub fn touches(&self, p: &Point3<f64>, radius: f64) -> Option<Point3<f64>> {
        let q = match *self {
            Shape::Sphere { centre, radius: r } => {
                let d = p - centre;
                let n = d.norm();
                if n > radius + r {
                    return None;
                }
                centre
                    + if n > 0.0 {
                        d * (r / n)
                    } else {
                        Vector3::z() * r
                    }
            }
            Shape::Cube { centre, half } => {
                let lo = centre - Vector3::repeat(half);
                let hi = centre + Vector3::repeat(half);
                let q = Point3::from(p.coords.sup(&lo.coords).inf(&hi.coords));
                if (q - p).norm() > radius {
                    return None;
                }
                q
            }
        };
        Some(q)
    }

    fn raycast(
        &self,
        o: &Point3<f64>,
        u: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)> {
        match *self {
            Shape::Sphere { centre, radius } => {
                ray_sphere(o, u, &centre, radius, max_t).map(|t| (t, (o + u * t - centre) / radius))
            }
            Shape::Cube { centre, half } => {
                let (mut t0, mut t1, mut axis) = (f64::NEG_INFINITY, f64::INFINITY, 0);
                for k in 0..3 {
                    let inv = 1.0 / u[k];
                    let a = (centre[k] - half - o[k]) * inv;
                    let b = (centre[k] + half - o[k]) * inv;
                    let (a, b) = if a <= b { (a, b) } else { (b, a) };
                    if a > t0 {
                        t0 = a;
                        axis = k;
                    }
                    t1 = t1.min(b);
                }
                if !(t0 <= t1 && t0 > 0.0 && t0 <= max_t) {
                    return None;
                }
                let mut n = Vector3::zeros();
                n[axis] = -u[axis].signum();
                Some((t0, n))
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Obstacle {
    kind: ObstacleKind,
    size: f64,
    speed: f64,
    centre: Point3<f64>,
    velocity: Vector3<f64>,
    respawns: u64,
    /// Time until a random-walk cube picks a new velocity, seconds.
    turn_in: f64,
    turns: u64,
}

/// Every dynamic obstacle of a flight, inside the bounds of the map.
#[derive(Clone, Debug)]
pub struct Obstacles {
    list: Vec<Obstacle>,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    seed: u64,
    shapes: Vec<Shape>,
}

impl Obstacles {
    /// No obstacles.
    pub fn none() -> Obstacles {
        Obstacles {
            list: Vec::new(),
            lo: Vector3::zeros(),
            hi: Vector3::zeros(),
            seed: 0,
            shapes: Vec::new(),
        }
    }

    /// Obstacles of `configs` placed at random inside the box `lo..hi` (map frame).
    pub fn new(
        configs: &[ObstacleConfig],
        lo: Vector3<f64>,
        hi: Vector3<f64>,
        seed: u64,
    ) -> Obstacles {
        let mut o = Obstacles {
            list: Vec::new(),
            lo,
            hi,
            seed,
            shapes: Vec::new(),
        };
        for c in configs {
            for _ in 0..c.count {
                let mut ob = Obstacle {
                    kind: c.kind,
                    size: c.size_m.max(0.01),
                    speed: c.speed_m_s.max(0.0),
                    centre: Point3::origin(),
                    velocity: Vector3::zeros(),
                    respawns: 0,
                    turn_in: 1.0,
                    turns: 0,
                };
                o.respawn(o.list.len(), &mut ob);
                o.list.push(ob);
            }
        }
        o.update_shapes();
        o
    }

    fn rng(&self, i: usize, stream: u64) -> BeamRng {
        BeamRng::new(self.seed ^ 0x4F42_5300_0000_0000, i as u64, stream)
    }

    /// A random place and velocity for obstacle `i` (its `respawns`-th).
    fn respawn(&self, i: usize, ob: &mut Obstacle) {
        let mut rng = self.rng(i, ob.respawns << 32);
        ob.respawns += 1;
        let mut u = || rng.uniform_open0();
        let r = 0.5 * ob.size;
        let span = |k: usize, u: f64| {
            let (a, b) = (self.lo[k] + r, self.hi[k] - r);
            if b > a {
                a + u * (b - a)
            } else {
                0.5 * (a + b)
            }
        };
        let (x, y) = (span(0, u()), span(1, u()));
        let z = match ob.kind {
            ObstacleKind::FallingSphere => self.hi.z - r,
            _ => span(2, 0.3 + 0.5 * u()),
        };
        ob.centre = Point3::new(x, y, z);
        ob.velocity = match ob.kind {
            ObstacleKind::FallingSphere => Vector3::zeros(),
            _ => random_direction(u(), u()) * ob.speed,
        };
    }

    /// Advances every obstacle by `dt` seconds.
    pub fn step(&mut self, dt: f64) {
        let mut list = std::mem::take(&mut self.list);
        for (i, ob) in list.iter_mut().enumerate() {
            match ob.kind {
                ObstacleKind::FallingSphere => {
                    // Exact for constant gravity over the step.
                    ob.centre += ob.velocity * dt - Vector3::new(0.0, 0.0, 0.5 * GRAVITY * dt * dt);
                    ob.velocity.z -= GRAVITY * dt;
                }
                ObstacleKind::Cube => {
                    ob.turn_in -= dt;
                    if ob.turn_in <= 0.0 {
                        ob.turn_in += 1.0;
                        ob.turns += 1;
                        let mut rng = self.rng(i, (1 << 63) | ob.turns);
                        let (a, b) = (rng.uniform_open0(), rng.uniform_open0());
                        ob.velocity = random_direction(a, b) * ob.speed;
                    }
                    ob.centre += ob.velocity * dt;
                }
                ObstacleKind::Drone => ob.centre += ob.velocity * dt,
            }
            let r = 0.5 * ob.size;
            let outside =
                (0..3).any(|k| ob.centre[k] < self.lo[k] - r || ob.centre[k] > self.hi[k] + r);
            if outside {
                self.respawn(i, ob);
            }
        }
        self.list = list;
        self.update_shapes();
    }

    fn update_shapes(&mut self) {
        self.shapes = self
            .list
            .iter()
            .map(|ob| match ob.kind {
                ObstacleKind::Cube => Shape::Cube {
                    centre: ob.centre,
                    half: 0.5 * ob.size,
                },
                _ => Shape::Sphere {
                    centre: ob.centre,
                    radius: 0.5 * ob.size,
                },
            })
            .collect();
    }

    /// Current shapes, in the order of the configuration.
    pub fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// Current velocities.
    pub fn velocities(&self) -> Vec<Vector3<f64>> {
        self.list.iter().map(|o| o.velocity).collect()
    }

    /// How many times each obstacle has respawned (its first placement included).
    pub fn respawns(&self) -> Vec<u64> {
        self.list.iter().map(|o| o.respawns).collect()
    }
}

/// A unit vector from two uniform numbers, mostly horizontal (obstacles cross the vehicle's path).
fn random_direction(a: f64, b: f64) -> Vector3<f64> {
    let phi = std::f64::consts::TAU * a;
    let z = 0.4 * (2.0 * b - 1.0);
    let h = (1.0 - z * z).sqrt();
    Vector3::new(h * phi.cos(), h * phi.sin(), z)
}

impl Occluder for Obstacles {
    fn raycast(
        &self,
        o: &Point3<f64>,
        u: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)> {
        let mut best: Option<(f64, Vector3<f64>)> = None;
        for s in &self.shapes {
            let limit = best.map_or(max_t, |b| b.0);
            if let Some(hit) = s.raycast(o, u, limit) {
                best = Some(hit);
            }
        }
        best
    }

    fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }
}

/// Where the ray `o + t u` (`u` unit) enters the sphere, for `0 < t <= max_t` (nothing when it starts inside).
#[inline(always)]
fn ray_sphere(
    o: &Point3<f64>,
    u: &Vector3<f64>,
    centre: &Point3<f64>,
    radius: f64,
    max_t: f64,
) -> Option<f64> {
    let oc = o - centre;
    let b = oc.dot(u);
    let c = oc.norm_squared() - radius * radius;
    let disc = b * b - c;
    if disc < 0.0 {
        return None;
    }
    let t = -b - disc.sqrt();
    (t > 0.0 && t <= max_t).then_some(t)
}

/// Spheres standing in for other vehicles, seen by LiDARs. Centres and radii lie in arrays of their own
/// rather than as [`Shape`]s: every beam of every frame tests all of them, in one tight loop.
#[derive(Clone, Debug, Default)]
pub struct Spheres {
    centres: Vec<Point3<f64>>,
    radii: Vec<f64>,
}

impl Spheres {
    /// Adds a sphere (map frame, metres).
    pub fn push(&mut self, centre: Point3<f64>, radius: f64) {
        self.centres.push(centre);
        self.radii.push(radius);
    }
}

impl FromIterator<(Point3<f64>, f64)> for Spheres {
    fn from_iter<I: IntoIterator<Item = (Point3<f64>, f64)>>(iter: I) -> Spheres {
        let mut s = Spheres::default();
        for (centre, radius) in iter {
            s.push(centre, radius);
        }
        s
    }
}

impl Occluder for Spheres {
    fn raycast(
        &self,
        o: &Point3<f64>,
        u: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)> {
        let mut best: Option<(f64, usize)> = None;
        for (k, (centre, &radius)) in self.centres.iter().zip(&self.radii).enumerate() {
            let limit = best.map_or(max_t, |b| b.0);
            if let Some(t) = ray_sphere(o, u, centre, radius, limit) {
                best = Some((t, k));
            }
        }
        let (t, k) = best?;
        Some((t, (o + u * t - self.centres[k]) / self.radii[k]))
    }

    fn is_empty(&self) -> bool {
        self.radii.is_empty()
    }
}
