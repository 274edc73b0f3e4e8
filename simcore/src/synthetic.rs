//! Procedural maps of any size for benchmarks and speed tests: a ground square cluttered with walls, pillars
//! and boxes, sampled at r_map spacing with analytic normals, a small plane thickness and a per-surface
//! intensity. The scene grows with the requested number of points (half on the ground, half on the
//! structures), so maps of 1M, 5M and 20M points have the same density and look, only a larger extent.
//!
//! Deterministic: the same (points, resolution, seed) always gives the same map, bit for bit. The middle of
//! the scene (3 m around the origin) is kept free, so a sensor at (0, 0, 1.5) stands on open ground.

use aerie_pipeline::map::PackedMap;
use aerie_pipeline::{Cloud, Columns, Result};

/// splitmix64 (Steele, Lea and Flood 2014): a counter-based hash, enough for placing boxes.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        splitmix64(self.0)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.unit()
    }
}

/// A surface of the scene.
#[derive(Clone, Copy, Debug)]
enum Surface {
    /// Rectangle centred at `c`, spanned by unit axes `e1`, `e2`, half extents `a`, `b`.
    Rect {
        c: [f64; 3],
        e1: [f64; 3],
        e2: [f64; 3],
        a: f64,
        b: f64,
    },
    /// Open vertical cylinder.
    Cyl {
        c: [f64; 2],
        radius: f64,
        z0: f64,
        z1: f64,
    },
}

impl Surface {
    /// Number of samples at spacing `r` (what [`Surface::sample`] emits).
    fn count(&self, r: f64) -> usize {
        match *self {
            Surface::Rect { a, b, .. } => {
                let (na, nb) = ((a / r).floor() as usize, (b / r).floor() as usize);
                (2 * na + 1) * (2 * nb + 1)
            }
            Surface::Cyl { radius, z0, z1, .. } => {
                let nt = ((std::f64::consts::TAU * radius / r).ceil() as usize).max(3);
                nt * ((z1 - z0) / r).floor() as usize + nt
            }
        }
    }

    /// Appends samples on a grid of spacing `r` jittered by up to a quarter of `r` within the surface:
    /// positions, unit normals, plane thickness in [0, 0.1 r), intensity around `intensity`.
    fn sample(&self, r: f64, intensity: f32, salt: u64, cloud: &mut Columns) {
        let mut k = 0u64;
        let mut emit = |p: [f64; 3], n: [f64; 3], cloud: &mut Columns| {
            let h = splitmix64(salt ^ k.wrapping_mul(0x2545_F491_4F6C_DD1D));
            k += 1;
            let u = |shift: u32| ((h >> shift) & 0xFFFF) as f32 / 65536.0;
            cloud
                .positions
                .push([p[0] as f32, p[1] as f32, p[2] as f32]);
            if let Some(v) = cloud.normals.as_mut() {
                v.push([n[0] as f32, n[1] as f32, n[2] as f32]);
            }
            if let Some(v) = cloud.gamma.as_mut() {
                v.push(0.1 * r as f32 * u(32));
            }
            if let Some(v) = cloud.intensity.as_mut() {
                v.push(intensity * (0.9 + 0.2 * u(48)));
            }
            h
        };
        let jitter =
            |h: u64, shift: u32| (((h >> shift) & 0xFFFF) as f64 / 65536.0 - 0.5) * 0.5 * r;
        match *self {
            Surface::Rect { c, e1, e2, a, b } => {
                let n = cross(e1, e2);
                let (na, nb) = ((a / r).floor() as i64, (b / r).floor() as i64);
                for i in -na..=na {
                    for j in -nb..=nb {
                        let h = splitmix64(salt.wrapping_add(((i as u64) << 32) ^ j as u64));
                        // Jitter stays inside the rectangle so edges remain where the surface says.
                        let x = (i as f64 * r + jitter(h, 0)).clamp(-a, a);
                        let y = (j as f64 * r + jitter(h, 16)).clamp(-b, b);
                        let p = [
                            c[0] + e1[0] * x + e2[0] * y,
                            c[1] + e1[1] * x + e2[1] * y,
                            c[2] + e1[2] * x + e2[2] * y,
                        ];
                        emit(p, n, cloud);
                    }
                }
            }
            Surface::Cyl { c, radius, z0, z1 } => {
                let nt = ((std::f64::consts::TAU * radius / r).ceil() as usize).max(3);
                let nz = ((z1 - z0) / r).floor() as usize;
                for t in 0..nt {
                    let ang = std::f64::consts::TAU * t as f64 / nt as f64;
                    let n = [ang.cos(), ang.sin(), 0.0];
                    for j in 0..=nz {
                        let p = [
                            c[0] + radius * n[0],
                            c[1] + radius * n[1],
                            (z0 + j as f64 * r).min(z1),
                        ];
                        emit(p, n, cloud);
                    }
                }
            }
        }
    }
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The surfaces of a box standing on the ground: four sides and the top.
fn box_surfaces(c: [f64; 2], yaw: f64, w: f64, d: f64, h: f64) -> [Surface; 5] {
    let (ca, sa) = (yaw.cos(), yaw.sin());
    let ex = [ca, sa, 0.0];
    let ey = [-sa, ca, 0.0];
    let z = [0.0, 0.0, 1.0];
    let side =
        |s: f64, e: [f64; 3], along: [f64; 3], half_along: f64, half_out: f64| Surface::Rect {
            c: [
                c[0] + s * half_out * e[0],
                c[1] + s * half_out * e[1],
                0.5 * h,
            ],
            // Axes ordered so that the normal e1 x e2 points out of the box.
            e1: if s > 0.0 { along } else { neg(along) },
            e2: z,
            a: half_along,
            b: 0.5 * h,
        };
    [
        side(1.0, ex, ey, 0.5 * d, 0.5 * w),
        side(-1.0, ex, ey, 0.5 * d, 0.5 * w),
        side(1.0, ey, neg(ex), 0.5 * w, 0.5 * d),
        side(-1.0, ey, neg(ex), 0.5 * w, 0.5 * d),
        Surface::Rect {
            c: [c[0], c[1], h],
            e1: ex,
            e2: ey,
            a: 0.5 * w,
            b: 0.5 * d,
        },
    ]
}

fn neg(v: [f64; 3]) -> [f64; 3] {
    [-v[0], -v[1], -v[2]]
}

/// The scene as a cloud (origin at 0; z up; the ground at z = 0): about `points` points (within one structure
/// of it; more when `points` is too few to cover the smallest scene, a 9 m square) at spacing `resolution`,
/// with normals, plane thickness and intensity. An invalid resolution (not a positive finite length) or zero
/// points gives an empty cloud.
pub fn synthetic_cloud(points: usize, resolution: f32, seed: u64) -> Cloud {
    let r = f64::from(resolution);
    if !(r.is_finite() && r > 0.0) || points == 0 {
        return Cloud::with_origin([0.0; 3]);
    }
    let mut cloud = Columns {
        normals: Some(Vec::new()),
        gamma: Some(Vec::new()),
        intensity: Some(Vec::new()),
        ..Columns::default()
    };
    // Half the points on the ground square, half on the structures. The square is at least 9 m wide, so that
    // structures fit outside the free middle (a smaller one could never place any, and the loop below would
    // not end).
    let free = 3.0;
    let area = points as f64 * r * r;
    let half = ((0.5 * area).sqrt() * 0.5).max(free + 1.5);
    let mut surfaces: Vec<(Surface, f32)> = vec![(
        Surface::Rect {
            c: [0.0, 0.0, 0.0],
            e1: [1.0, 0.0, 0.0],
            e2: [0.0, 1.0, 0.0],
            a: half,
            b: half,
        },
        0.3,
    )];
    let mut total = surfaces[0].0.count(r);
    let mut rng = Rng(splitmix64(seed ^ 0x05EE_D0F5_CE7E));
    let margin = 1.0;
    while total < points {
        let Some(add) = random_structure(&mut rng, half - margin, free) else {
            continue;
        };
        for s in add {
            total += s.0.count(r);
            surfaces.push(s);
        }
    }
    cloud.positions.reserve(total);
    if let Some(v) = cloud.normals.as_mut() {
        v.reserve(total);
    }
    for (k, (s, intensity)) in surfaces.iter().enumerate() {
        s.sample(
            r,
            *intensity,
            splitmix64(seed.wrapping_add(k as u64)),
            &mut cloud,
        );
    }
    Cloud::from_columns([0.0; 3], cloud).expect("every sample pushes one value onto each column")
}

/// One structure at a random place within `reach` of the middle on both axes (a wall, a pole or a box, with
/// its intensity), or `None` when it would stand within `free` of the middle (the draws are made either way, so
/// the sequence does not depend on which are kept).
fn random_structure(rng: &mut Rng, reach: f64, free: f64) -> Option<Vec<(Surface, f32)>> {
    let x = rng.range(-reach, reach);
    let y = rng.range(-reach, reach);
    let kind = rng.unit();
    let yaw = rng.range(0.0, std::f64::consts::PI);
    let mut add: Vec<(Surface, f32)> = Vec::new();
    if kind < 0.45 {
        // Wall: 2-10 m long, 2.5-4 m high.
        let len = rng.range(2.0, 10.0);
        let h = rng.range(2.5, 4.0);
        add.push((
            Surface::Rect {
                c: [x, y, 0.5 * h],
                e1: [yaw.cos(), yaw.sin(), 0.0],
                e2: [0.0, 0.0, 1.0],
                a: 0.5 * len,
                b: 0.5 * h,
            },
            0.6,
        ));
        if x.hypot(y) < free + 0.5 * len {
            return None;
        }
    } else if kind < 0.7 {
        let radius = rng.range(0.1, 0.5);
        add.push((
            Surface::Cyl {
                c: [x, y],
                radius,
                z0: 0.0,
                z1: rng.range(3.0, 5.0),
            },
            0.5,
        ));
        if x.hypot(y) < free + radius {
            return None;
        }
    } else {
        let (w, d, h) = (
            rng.range(0.5, 2.5),
            rng.range(0.5, 2.5),
            rng.range(0.5, 1.8),
        );
        add.extend(box_surfaces([x, y], yaw, w, d, h).map(|s| (s, 0.8)));
        if x.hypot(y) < free + 0.5 * w.hypot(d) {
            return None;
        }
    }
    Some(add)
}

/// [`synthetic_cloud`] packed into a map at r_map `resolution` (automatic bucket size). Errors: those of
/// [`PackedMap::from_cloud`] (an invalid resolution or no points).
pub fn synthetic_map(points: usize, resolution: f32, seed: u64) -> Result<PackedMap> {
    let cloud = synthetic_cloud(points, resolution, seed);
    PackedMap::from_cloud(&cloud, resolution, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_determinism_and_attributes() {
        let a = synthetic_cloud(200_000, 0.05, 1);
        let n = a.len();
        assert!((200_000..230_000).contains(&n), "{n}");
        assert_eq!(a, synthetic_cloud(200_000, 0.05, 1));
        assert_ne!(a.positions(), synthetic_cloud(200_000, 0.05, 2).positions());
        let normals = a.normals().unwrap();
        let gamma = a.gamma().unwrap();
        assert_eq!((normals.len(), gamma.len()), (n, n));
        assert!(normals.iter().all(|v| {
            let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            (l - 1.0).abs() < 1e-5
        }));
        assert!(gamma.iter().all(|&g| (0.0..0.005).contains(&g)));
        // The middle stays free above the ground: nothing within 2.5 m of the origin higher than 1 cm.
        assert!(
            a.positions()
                .iter()
                .all(|p| p[2] < 0.01 || p[0].hypot(p[1]) > 2.5)
        );
        // About half the points on the ground.
        let ground = a.positions().iter().filter(|p| p[2].abs() < 1e-6).count();
        assert!(ground > n / 3 && ground < 2 * n / 3, "{ground} of {n}");
        assert!(synthetic_cloud(1000, f32::NAN, 1).is_empty());
        // Too few points for the free middle and a structure beside it: the smallest scene (its 9 m ground
        // square), not a hang.
        let small = synthetic_cloud(100, 0.1, 1);
        assert!((7_000..20_000).contains(&small.len()), "{}", small.len());
        let map = synthetic_map(50_000, 0.1, 3).unwrap();
        assert_eq!(map.positions.len(), synthetic_cloud(50_000, 0.1, 3).len());
        assert!(map.normals.is_some() && map.gamma.is_some() && map.reflectance.is_some());
    }
}
