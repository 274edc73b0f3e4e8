//! Analytic scenes with exact ray casting, the ground truth of the simulator's accuracy reports
//! (docs/accuracy.md, simcore/tests/it/accuracy.rs).
//!
//! A [`Scene`] is a list of [`Surface`]s (rectangles, open cylinders vertical or along any axis, spheres and
//! boxes turned about z) in world coordinates, metres; the demo scene ([`crate::demo`]) is built from them.
//! [`Scene::raycast`] returns the exact range along a ray; [`Scene::distance`] the exact distance from a point to
//! the nearest surface. [`Scene::sample_scanlike`] turns a scene into the kind of cloud a map is prepared from:
//! terrestrial scanners at given positions cast rays on a regular azimuth/elevation grid with Gaussian range
//! noise, so the density falls with the square of the range and with the incidence angle, surfaces are seen only
//! where a scanner sees them (shadows behind cylinders), and nothing is placed on a convenient grid. A map
//! prepared from such a cloud (outlier removal, downsampling, estimated normals) is what the renderers get in
//! practice, unlike maps sampled from the analytic surfaces with analytic normals.

// `!(a < b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::f64::consts::{PI, TAU};
use std::ops::Range;

use aerie_pipeline::{Cloud, Columns, ScanInfo};
use nalgebra::{Isometry3, Vector3};

type V3 = Vector3<f64>;

/// Rays closer to parallel than this (|cos| between ray and plane normal) miss a rectangle.
const PARALLEL_EPS: f64 = 1e-12;
/// Hits nearer than this to the ray origin are ignored (the origin lying on a surface).
const T_MIN: f64 = 1e-9;

/// One analytic surface, world coordinates in metres.
#[derive(Clone, Debug, PartialEq)]
pub enum Surface {
    /// A rectangle centred at `centre`, spanned by the unit axes `e1`, `e2` (perpendicular), with half extents
    /// `half_a` along `e1` and `half_b` along `e2`. Two-sided.
    Rect {
        /// Centre, metres.
        centre: [f64; 3],
        /// First in-plane axis, unit length.
        e1: [f64; 3],
        /// Second in-plane axis, unit length, perpendicular to `e1`; the normal is `e1 x e2`.
        e2: [f64; 3],
        /// Half extent along `e1`, metres.
        half_a: f64,
        /// Half extent along `e2`, metres.
        half_b: f64,
    },
    /// An open vertical cylinder (no caps) of axis (`x`, `y`) from height `z0` to `z1`.
    Cylinder {
        /// Axis x, metres.
        x: f64,
        /// Axis y, metres.
        y: f64,
        /// Radius, metres.
        radius: f64,
        /// Bottom height, metres.
        z0: f64,
        /// Top height, metres (above `z0`).
        z1: f64,
    },
    /// An open cylinder (no caps) of `radius` around the segment from `a` to `b` (a leaning trunk, a wire).
    Tube {
        /// One end of the axis, metres.
        a: [f64; 3],
        /// The other end of the axis, metres.
        b: [f64; 3],
        /// Radius, metres.
        radius: f64,
    },
    /// A sphere.
    Sphere {
        /// Centre, metres.
        centre: [f64; 3],
        /// Radius, metres.
        radius: f64,
    },
    /// A closed box centred at `centre`, turned by `yaw_rad` about the vertical axis, with half extents `half`
    /// along its own x, y and z.
    Cuboid {
        /// Centre, metres.
        centre: [f64; 3],
        /// Turn about the vertical, counter-clockwise from +x, radians.
        yaw_rad: f64,
        /// Half extents along the box's own x, y and z, metres.
        half: [f64; 3],
    },
}

impl Surface {
    /// A rectangle; the axes are normalised and `e2` is made perpendicular to `e1` (Gram-Schmidt).
    pub fn rect(centre: [f64; 3], e1: [f64; 3], e2: [f64; 3], half_a: f64, half_b: f64) -> Surface {
        let a = V3::from(e1).normalize();
        let b = V3::from(e2);
        let b = (b - a * a.dot(&b)).normalize();
        Surface::Rect {
            centre,
            e1: a.into(),
            e2: b.into(),
            half_a,
            half_b,
        }
    }

    /// Exact ray parameter of the first hit in front of `o` along the unit direction `u`.
    pub fn raycast(&self, o: [f64; 3], u: [f64; 3]) -> Option<f64> {
        let (o, u) = (V3::from(o), V3::from(u));
        match *self {
            Surface::Rect {
                centre,
                e1,
                e2,
                half_a,
                half_b,
            } => {
                let (c, e1, e2) = (V3::from(centre), V3::from(e1), V3::from(e2));
                let n = e1.cross(&e2);
                let den = n.dot(&u);
                if den.abs() < PARALLEL_EPS {
                    return None;
                }
                let t = n.dot(&(c - o)) / den;
                if !(t > T_MIN) {
                    return None;
                }
                let p = o + u * t - c;
                (p.dot(&e1).abs() <= half_a && p.dot(&e2).abs() <= half_b).then_some(t)
            }
            Surface::Cylinder {
                x,
                y,
                radius,
                z0,
                z1,
            } => {
                let (dx, dy) = (o.x - x, o.y - y);
                let qa = u.x * u.x + u.y * u.y;
                if qa < 1e-14 {
                    return None;
                }
                let qb = 2.0 * (dx * u.x + dy * u.y);
                let qc = dx * dx + dy * dy - radius * radius;
                let disc = qb * qb - 4.0 * qa * qc;
                if disc < 0.0 {
                    return None;
                }
                let s = disc.sqrt();
                [(-qb - s) / (2.0 * qa), (-qb + s) / (2.0 * qa)]
                    .into_iter()
                    .find(|&t| t > T_MIN && (z0..=z1).contains(&(o.z + t * u.z)))
            }
            Surface::Tube { a, b, radius } => raycast_tube(o, u, V3::from(a), V3::from(b), radius),
            Surface::Sphere { centre, radius } => {
                let w = o - V3::from(centre);
                let qb = w.dot(&u);
                let disc = qb * qb - (w.norm_squared() - radius * radius);
                if disc < 0.0 {
                    return None;
                }
                let s = disc.sqrt();
                [-qb - s, -qb + s].into_iter().find(|&t| t > T_MIN)
            }
            Surface::Cuboid {
                centre,
                yaw_rad,
                half,
            } => {
                let (ol, ul) = (
                    box_frame(o - V3::from(centre), yaw_rad),
                    box_frame(u, yaw_rad),
                );
                let (mut t0, mut t1) = (f64::NEG_INFINITY, f64::INFINITY);
                for k in 0..3 {
                    if ul[k].abs() < PARALLEL_EPS {
                        if ol[k].abs() > half[k] {
                            return None;
                        }
                        continue;
                    }
                    let (ta, tb) = ((-half[k] - ol[k]) / ul[k], (half[k] - ol[k]) / ul[k]);
                    t0 = t0.max(ta.min(tb));
                    t1 = t1.min(ta.max(tb));
                }
                if !(t0 <= t1) {
                    return None;
                }
                [t0, t1].into_iter().find(|&t| t > T_MIN)
            }
        }
    }

    /// Exact distance from `p` to the surface, metres.
    pub fn distance(&self, p: [f64; 3]) -> f64 {
        let p = V3::from(p);
        match *self {
            Surface::Rect {
                centre,
                e1,
                e2,
                half_a,
                half_b,
            } => {
                let (e1, e2) = (V3::from(e1), V3::from(e2));
                let q = p - V3::from(centre);
                let (a, b, h) = (q.dot(&e1), q.dot(&e2), q.dot(&e1.cross(&e2)));
                let (da, db) = (a - a.clamp(-half_a, half_a), b - b.clamp(-half_b, half_b));
                (da * da + db * db + h * h).sqrt()
            }
            Surface::Cylinder {
                x,
                y,
                radius,
                z0,
                z1,
            } => {
                let radial = (p.x - x).hypot(p.y - y) - radius;
                radial.hypot(p.z - p.z.clamp(z0, z1))
            }
            Surface::Tube { a, b, radius } => {
                let (a, b) = (V3::from(a), V3::from(b));
                let len = (b - a).norm();
                let v = if len > 0.0 { (b - a) / len } else { V3::z() };
                let w = p - a;
                let s = w.dot(&v);
                let radial = (w - v * s).norm() - radius;
                radial.hypot(s - s.clamp(0.0, len))
            }
            Surface::Sphere { centre, radius } => ((p - V3::from(centre)).norm() - radius).abs(),
            Surface::Cuboid {
                centre,
                yaw_rad,
                half,
            } => {
                let q = box_frame(p - V3::from(centre), yaw_rad);
                let out = V3::from_fn(|k, _| (q[k].abs() - half[k]).max(0.0));
                if out.norm_squared() > 0.0 {
                    out.norm()
                } else {
                    // Inside: the nearest face.
                    (0..3)
                        .map(|k| half[k] - q[k].abs())
                        .fold(f64::INFINITY, f64::min)
                }
            }
        }
    }

    /// Unit normal at a point on (or near) the surface; for cylinders it points away from the axis.
    pub fn normal_at(&self, p: [f64; 3]) -> [f64; 3] {
        match *self {
            Surface::Rect { e1, e2, .. } => V3::from(e1).cross(&V3::from(e2)).into(),
            Surface::Cylinder { x, y, .. } => unit_or_x(V3::new(p[0] - x, p[1] - y, 0.0)),
            Surface::Tube { a, b, .. } => {
                let (a, b) = (V3::from(a), V3::from(b));
                let v = (b - a).try_normalize(0.0).unwrap_or_else(V3::z);
                let w = V3::from(p) - a;
                unit_or_x(w - v * w.dot(&v))
            }
            Surface::Sphere { centre, .. } => unit_or_x(V3::from(p) - V3::from(centre)),
            Surface::Cuboid {
                centre,
                yaw_rad,
                half,
            } => {
                // The face whose plane the point is nearest to (relative to the box's size).
                let q = box_frame(V3::from(p) - V3::from(centre), yaw_rad);
                let k = (0..3)
                    .min_by(|&i, &j| {
                        (half[i] - q[i].abs())
                            .abs()
                            .total_cmp(&(half[j] - q[j].abs()).abs())
                    })
                    .unwrap_or(2);
                let mut n = V3::zeros();
                n[k] = q[k].signum();
                let (s, c) = yaw_rad.sin_cos();
                [c * n.x - s * n.y, s * n.x + c * n.y, n.z]
            }
        }
    }

    /// A sphere containing the surface: centre and radius (for culling before exact ray casting).
    pub fn bounding_sphere(&self) -> ([f64; 3], f64) {
        match *self {
            Surface::Rect {
                centre,
                half_a,
                half_b,
                ..
            } => (centre, half_a.hypot(half_b)),
            Surface::Cylinder {
                x,
                y,
                radius,
                z0,
                z1,
            } => ([x, y, 0.5 * (z0 + z1)], radius.hypot(0.5 * (z1 - z0))),
            Surface::Tube { a, b, radius } => {
                let (a, b) = (V3::from(a), V3::from(b));
                (((a + b) * 0.5).into(), 0.5 * (b - a).norm() + radius)
            }
            Surface::Sphere { centre, radius } => (centre, radius),
            Surface::Cuboid { centre, half, .. } => (centre, V3::from(half).norm()),
        }
    }
}

/// `v` normalised, or +x when it is zero (a point on the axis has no radial direction).
fn unit_or_x(v: V3) -> [f64; 3] {
    v.try_normalize(0.0).unwrap_or_else(V3::x).into()
}

/// A world vector in the frame of a box turned by `yaw_rad` about z.
fn box_frame(v: V3, yaw_rad: f64) -> V3 {
    let (s, c) = yaw_rad.sin_cos();
    V3::new(c * v.x + s * v.y, -s * v.x + c * v.y, v.z)
}

/// First hit of the unit ray (`o`, `u`) on the open cylinder of `radius` around the segment `a`-`b`.
fn raycast_tube(o: V3, u: V3, a: V3, b: V3, radius: f64) -> Option<f64> {
    let len = (b - a).norm();
    if !(len > 0.0) {
        return None;
    }
    let v = (b - a) / len;
    // Components across the axis: |w_perp + t d_perp| = radius.
    let w = o - a;
    let (wv, uv) = (w.dot(&v), u.dot(&v));
    let (wp, dp) = (w - v * wv, u - v * uv);
    let qa = dp.norm_squared();
    if qa < 1e-14 {
        return None;
    }
    let qb = 2.0 * wp.dot(&dp);
    let qc = wp.norm_squared() - radius * radius;
    let disc = qb * qb - 4.0 * qa * qc;
    if disc < 0.0 {
        return None;
    }
    let s = disc.sqrt();
    [(-qb - s) / (2.0 * qa), (-qb + s) / (2.0 * qa)]
        .into_iter()
        .find(|&t| t > T_MIN && (0.0..=len).contains(&(wv + t * uv)))
}

/// A terrestrial scanner for [`Scene::sample_scanlike`]: rays on a regular azimuth/elevation grid from
/// `position`, with Gaussian range noise.
#[derive(Clone, Debug, PartialEq)]
pub struct Scanner {
    /// Where the rays start, world coordinates, metres.
    pub position: [f64; 3],
    /// Angle between neighbouring rays in azimuth and in elevation, radians (> 0).
    pub step_rad: f64,
    /// Elevations covered, radians, within [-pi/2, pi/2].
    pub elevation_rad: Range<f64>,
    /// Range noise, 1 sigma, metres.
    pub range_sigma_m: f64,
    /// Returns farther than this are not recorded, metres.
    pub max_range_m: f64,
}

impl Scanner {
    /// The ray grid as (columns in azimuth, rows in elevation): a whole turn in azimuth, the elevation range from
    /// its bottom, both in steps of `step_rad`. `None` when the step is not positive and finite, the range is
    /// empty, or the grid would exceed [`MAX_RAYS_PER_SCANNER`] rays.
    pub fn grid(&self) -> Option<(u64, u64)> {
        let step = self.step_rad;
        let (el_lo, el_hi) = self.elevation_limits();
        if !(step > 0.0 && step.is_finite() && el_hi >= el_lo) {
            return None;
        }
        let n_az = (TAU / step).round().max(1.0);
        let n_el = ((el_hi - el_lo) / step).floor() + 1.0;
        (n_az * n_el <= MAX_RAYS_PER_SCANNER as f64).then_some((n_az as u64, n_el as u64))
    }

    /// Unit direction, in the scanner's frame, of the ray in column `i` of `n_az` (azimuth `i * 2 pi / n_az` from
    /// +x toward +y) and row `j` (elevation `j * step_rad` above the bottom of the range).
    pub fn direction(&self, n_az: u64, i: u64, j: u64) -> [f64; 3] {
        let el = self.elevation_limits().0 + j as f64 * self.step_rad;
        let (sin_el, cos_el) = el.sin_cos();
        let az = i as f64 * TAU / n_az as f64;
        let (sin_az, cos_az) = az.sin_cos();
        [cos_el * cos_az, cos_el * sin_az, sin_el]
    }

    /// The elevation range clamped to [-pi/2, pi/2].
    fn elevation_limits(&self) -> (f64, f64) {
        let half_pi = 0.5 * PI;
        (
            self.elevation_rad.start.clamp(-half_pi, half_pi),
            self.elevation_rad.end.clamp(-half_pi, half_pi),
        )
    }

    /// A scanner at `position` covering elevations -80..+80 degrees with `step_rad` between rays, 1 cm range
    /// noise and a 60 m range.
    pub fn new(position: [f64; 3], step_rad: f64) -> Scanner {
        Scanner {
            position,
            step_rad,
            elevation_rad: (-80f64).to_radians()..80f64.to_radians(),
            range_sigma_m: 0.01,
            max_range_m: 60.0,
        }
    }
}

/// Most rays a scanner may cast (a guard against a tiny `step_rad`).
pub const MAX_RAYS_PER_SCANNER: u64 = 50_000_000;

/// A set of analytic surfaces, world coordinates in metres.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scene {
    /// The surfaces; a ray hits the nearest of them.
    pub surfaces: Vec<Surface>,
}

impl Scene {
    /// Exact range of the first surface hit from `origin` along `dir` (need not be unit length; the range is in
    /// metres along the unit direction), `None` when the ray hits nothing or `dir` is zero or not finite.
    pub fn raycast(&self, origin: [f64; 3], dir: [f64; 3]) -> Option<f64> {
        let d = V3::from(dir);
        let norm = d.norm();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        let u: [f64; 3] = (d / norm).into();
        self.raycast_surface(origin, u).map(|(t, _)| t)
    }

    /// First hit along the unit direction `u`: range and the index of the surface hit.
    fn raycast_surface(&self, origin: [f64; 3], u: [f64; 3]) -> Option<(f64, usize)> {
        self.surfaces
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.raycast(origin, u).map(|t| (t, i)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Exact distance from `p` to the nearest surface, metres (+inf for an empty scene).
    pub fn distance(&self, p: [f64; 3]) -> f64 {
        self.surfaces
            .iter()
            .map(|s| s.distance(p))
            .fold(f64::INFINITY, f64::min)
    }

    /// This scene moved by `offset` metres (to place it at large world coordinates).
    pub fn translated(&self, offset: [f64; 3]) -> Scene {
        let shift = |c: [f64; 3]| [c[0] + offset[0], c[1] + offset[1], c[2] + offset[2]];
        Scene {
            surfaces: self
                .surfaces
                .iter()
                .map(|s| match *s {
                    Surface::Rect {
                        centre,
                        e1,
                        e2,
                        half_a,
                        half_b,
                    } => Surface::Rect {
                        centre: shift(centre),
                        e1,
                        e2,
                        half_a,
                        half_b,
                    },
                    Surface::Cylinder {
                        x,
                        y,
                        radius,
                        z0,
                        z1,
                    } => Surface::Cylinder {
                        x: x + offset[0],
                        y: y + offset[1],
                        radius,
                        z0: z0 + offset[2],
                        z1: z1 + offset[2],
                    },
                    Surface::Tube { a, b, radius } => Surface::Tube {
                        a: shift(a),
                        b: shift(b),
                        radius,
                    },
                    Surface::Sphere { centre, radius } => Surface::Sphere {
                        centre: shift(centre),
                        radius,
                    },
                    Surface::Cuboid {
                        centre,
                        yaw_rad,
                        half,
                    } => Surface::Cuboid {
                        centre: shift(centre),
                        yaw_rad,
                        half,
                    },
                })
                .collect(),
        }
    }

    /// A closed box room, 12 x 8 x 3 m, floor at z = 0, centred on the z axis: seen from inside, every beam
    /// hits a wall, the floor or the ceiling.
    pub fn box_room() -> Scene {
        let (hx, hy, h) = (6.0, 4.0, 3.0);
        Scene {
            surfaces: vec![
                Surface::rect([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], hx, hy),
                Surface::rect([0.0, 0.0, h], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], hx, hy),
                Surface::rect(
                    [hx, 0.0, h / 2.0],
                    [0.0, 1.0, 0.0],
                    [0.0, 0.0, 1.0],
                    hy,
                    h / 2.0,
                ),
                Surface::rect(
                    [-hx, 0.0, h / 2.0],
                    [0.0, 1.0, 0.0],
                    [0.0, 0.0, 1.0],
                    hy,
                    h / 2.0,
                ),
                Surface::rect(
                    [0.0, hy, h / 2.0],
                    [1.0, 0.0, 0.0],
                    [0.0, 0.0, 1.0],
                    hx,
                    h / 2.0,
                ),
                Surface::rect(
                    [0.0, -hy, h / 2.0],
                    [1.0, 0.0, 0.0],
                    [0.0, 0.0, 1.0],
                    hx,
                    h / 2.0,
                ),
            ],
        }
    }

    /// Open ground (40 x 40 m at z = 0) with eight 3 m cylinders of radius 0.2..0.9 m at 3..12 m from the z axis;
    /// beams above the horizon miss.
    pub fn ground_with_cylinders() -> Scene {
        let mut surfaces = vec![ground(20.0)];
        for k in 0..8 {
            let a = 0.3 + k as f64 * TAU / 8.0;
            let d = 3.0 + 1.3 * k as f64;
            surfaces.push(Surface::Cylinder {
                x: d * a.cos(),
                y: d * a.sin(),
                radius: 0.2 + 0.1 * k as f64,
                z0: 0.0,
                z1: 3.0,
            });
        }
        Scene { surfaces }
    }

    /// Ground (30 x 30 m) and eight vertical 2 x 1.6 m panels 6 m from (0, 0, 1.2), each turned so that a ray from
    /// that point to its centre meets it at 10, 20, ..., 80 degrees of incidence.
    pub fn slanted_planes() -> Scene {
        let mut surfaces = vec![ground(15.0)];
        for k in 0..8 {
            let incidence = (10.0 + 10.0 * k as f64).to_radians();
            let az = -PI + (k as f64 + 0.5) * TAU / 8.0;
            let toward = V3::new(az.cos(), az.sin(), 0.0);
            let centre = toward * 6.0 + V3::new(0.0, 0.0, 1.2);
            // The normal faces back toward the viewpoint, turned by `incidence` about z.
            let tilt = az + PI + incidence;
            let n = V3::new(tilt.cos(), tilt.sin(), 0.0);
            let e1 = V3::z().cross(&n);
            surfaces.push(Surface::rect(
                centre.into(),
                e1.into(),
                [0.0, 0.0, 1.0],
                1.0,
                0.8,
            ));
        }
        Scene { surfaces }
    }

    /// Ground (30 x 30 m) and twelve 3 m poles of radius 5 cm (every third one 2.5 cm) at 2..10 m from the z
    /// axis: thinner than a map cell at r_map 0.1 and 0.2.
    pub fn thin_poles() -> Scene {
        let mut surfaces = vec![ground(15.0)];
        for k in 0..12 {
            let a = 0.2 + k as f64 * TAU / 12.0;
            let d = 2.0 + 8.0 * k as f64 / 11.0;
            surfaces.push(Surface::Cylinder {
                x: d * a.cos(),
                y: d * a.sin(),
                radius: if k % 3 == 2 { 0.025 } else { 0.05 },
                z0: 0.0,
                z1: 3.0,
            });
        }
        Scene { surfaces }
    }

    /// The surfaces as a real scan would sample them: each scanner casts rays on its azimuth/elevation grid
    /// (azimuth from 0, elevation from the bottom of its range, both in steps of `step_rad`), and every ray that
    /// hits a surface within `max_range_m` gives a point at the exact range plus Gaussian noise of
    /// `range_sigma_m` along the ray. Density therefore falls with range squared and with the cosine of the
    /// incidence, as in a real scan. Positions are stored relative to `origin` (world coordinates); the
    /// intensity is 100 * cos(incidence); each scanner is a [`ScanInfo`] with its position, so normals can be
    /// oriented toward it. Noise is seeded by (`seed`, scanner, ray): the same arguments give the same cloud.
    /// A scanner whose step is not positive and finite, or whose grid would exceed [`MAX_RAYS_PER_SCANNER`]
    /// rays, contributes nothing.
    pub fn sample_scanlike(&self, scanners: &[Scanner], origin: [f64; 3], seed: u64) -> Cloud {
        let mut positions = Vec::new();
        let mut intensity = Vec::new();
        let mut scans = Vec::new();
        for (s_index, scanner) in scanners.iter().enumerate() {
            let first = positions.len();
            let Some((n_az, n_el)) = scanner.grid() else {
                continue;
            };
            let o = scanner.position;
            for j in 0..n_el {
                for i in 0..n_az {
                    let u = scanner.direction(n_az, i, j);
                    let Some((t, surface)) = self.raycast_surface(o, u) else {
                        continue;
                    };
                    if t > scanner.max_range_m {
                        continue;
                    }
                    let ray = ((s_index as u64) << 40) ^ (j * n_az + i);
                    let d = t + scanner.range_sigma_m * gaussian(seed, ray);
                    let p = [o[0] + u[0] * d, o[1] + u[1] * d, o[2] + u[2] * d];
                    let cos = self
                        .surfaces
                        .get(surface)
                        .map(|s| {
                            let hit = [o[0] + u[0] * t, o[1] + u[1] * t, o[2] + u[2] * t];
                            V3::from(s.normal_at(hit)).dot(&V3::from(u)).abs()
                        })
                        .unwrap_or(1.0);
                    positions.push([
                        (p[0] - origin[0]) as f32,
                        (p[1] - origin[1]) as f32,
                        (p[2] - origin[2]) as f32,
                    ]);
                    intensity.push((100.0 * cos) as f32);
                }
            }
            scans.push(ScanInfo {
                name: format!("scanner {s_index}"),
                points: first..positions.len(),
                world_from_scan: Some(Isometry3::translation(o[0], o[1], o[2])),
            });
        }
        let columns = Columns {
            positions,
            intensity: Some(intensity),
            ..Columns::default()
        };
        let mut cloud = Cloud::from_columns(origin, columns)
            .expect("every hit pushes a position and an intensity");
        cloud.meta.scans = scans;
        cloud
    }
}

fn ground(half: f64) -> Surface {
    Surface::rect(
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        half,
        half,
    )
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A standard normal sample from a hash of (seed, key) (Box-Muller).
fn gaussian(seed: u64, key: u64) -> f64 {
    let h1 = splitmix64(seed ^ splitmix64(key.wrapping_mul(2)));
    let h2 = splitmix64(seed ^ splitmix64(key.wrapping_mul(2).wrapping_add(1)));
    // Uniforms in (0, 1]: 53 random bits, shifted away from zero so ln() is finite.
    let u1 = ((h1 >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (h2 >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos()
}

#[cfg(test)]
mod tests;
