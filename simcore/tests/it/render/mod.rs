//! Scan rendering against analytic scenes: each beam's range is compared with exact ray casting.
//!
//! The maps are built here from analytic surfaces (sampled on a grid of spacing r_map, analytic normals,
//! bucketed by a sort on integer bucket coordinates, coarse-to-fine inside each bucket), so these tests do
//! not depend on the pipeline's bucketing or normal estimation. This module builds the scenes and scan
//! patterns; the tests are in the modules beside it.

use aerie_pipeline::map::{Bucket, MapView};
use aerie_simcore::render::{self, Frame, Method, PointsIn, RenderParams, Renderer};
use aerie_simcore::scene::Surface;
use aerie_simcore::sensor::{Beam, Physics};
use aerie_simcore::trajectory::{Isometry3, Static, Trajectory, Tum, pose_from_xyz_rpy};
use nalgebra::{Point3, Vector3};

mod accuracy;
mod agreement;
mod geometry;
mod speed;

type V3 = Vector3<f64>;

// ---------------------------------------------------------------------------------------------------------
// Analytic scenes

/// Samples `surface` on a grid of spacing r: (position, unit normal, grid indices for coarse-to-fine order).
fn sample(surface: &Surface, r: f64, out: &mut Vec<(V3, V3, [i64; 2])>) {
    match *surface {
        Surface::Rect {
            centre,
            e1,
            e2,
            half_a,
            half_b,
        } => {
            let (c, e1, e2) = (V3::from(centre), V3::from(e1), V3::from(e2));
            let n = e1.cross(&e2);
            let (na, nb) = (
                (half_a / r + 1e-9).floor() as i64,
                (half_b / r + 1e-9).floor() as i64,
            );
            for i in -na..=na {
                for j in -nb..=nb {
                    out.push((c + e1 * (i as f64 * r) + e2 * (j as f64 * r), n, [i, j]));
                }
            }
        }
        Surface::Cylinder {
            x,
            y,
            radius,
            z0,
            z1,
        } => {
            let nt = ((std::f64::consts::TAU * radius / r).ceil() as i64).max(3);
            let nz = ((z1 - z0) / r + 1e-9).floor() as i64;
            for k in 0..nt {
                let a = std::f64::consts::TAU * k as f64 / nt as f64;
                let n = V3::new(a.cos(), a.sin(), 0.0);
                for j in 0..=nz {
                    out.push((
                        V3::new(
                            x + radius * a.cos(),
                            y + radius * a.sin(),
                            z0 + j as f64 * r,
                        ),
                        n,
                        [k, j],
                    ));
                }
            }
        }
        _ => unimplemented!("these tests sample rectangles and vertical cylinders only"),
    }
}

/// The scenes of these tests; exact ray casting comes from `aerie_simcore::scene::Surface`.
struct Scene {
    prims: Vec<Surface>,
}

impl Scene {
    fn distance(&self, p: &V3) -> f64 {
        self.prims
            .iter()
            .map(|q| q.distance([p.x, p.y, p.z]))
            .fold(f64::INFINITY, f64::min)
    }

    fn cast(&self, o: &V3, u: &V3) -> Option<f64> {
        self.prims
            .iter()
            .filter_map(|p| p.raycast([o.x, o.y, o.z], [u.x, u.y, u.z]))
            .min_by(f64::total_cmp)
    }

    /// A 20 x 12 x 4 m room with pillars, thin poles and slanted panels at 10-80 deg.
    fn room() -> Scene {
        let mut prims = vec![
            Surface::rect([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], 10.0, 6.0),
            Surface::rect([0.0, 0.0, 4.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], 10.0, 6.0),
            Surface::rect([10.0, 0.0, 2.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], 6.0, 2.0),
            Surface::rect(
                [-10.0, 0.0, 2.0],
                [0.0, 1.0, 0.0],
                [0.0, 0.0, 1.0],
                6.0,
                2.0,
            ),
            Surface::rect([0.0, 6.0, 2.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], 10.0, 2.0),
            Surface::rect(
                [0.0, -6.0, 2.0],
                [1.0, 0.0, 0.0],
                [0.0, 0.0, 1.0],
                10.0,
                2.0,
            ),
            Surface::Cylinder {
                x: 4.0,
                y: 2.0,
                radius: 0.3,
                z0: 0.0,
                z1: 4.0,
            },
            Surface::Cylinder {
                x: -5.0,
                y: -3.0,
                radius: 0.5,
                z0: 0.0,
                z1: 4.0,
            },
            Surface::Cylinder {
                x: 2.0,
                y: -2.5,
                radius: 0.04,
                z0: 0.0,
                z1: 2.6,
            },
            Surface::Cylinder {
                x: -2.0,
                y: 3.0,
                radius: 0.04,
                z0: 0.0,
                z1: 2.6,
            },
        ];
        // Panels facing the sensor near (0, 0, 1.2) at incidences 10..80 deg.
        for (k, inc) in [10.0f64, 30.0, 50.0, 65.0, 80.0].into_iter().enumerate() {
            let az = (-60.0 + 30.0 * k as f64).to_radians();
            let dir = V3::new(az.cos(), az.sin(), 0.0);
            let c = dir * 6.0 + V3::new(0.0, 0.0, 1.2);
            // Normal rotated from -dir by `inc` about z.
            let tilt = az + std::f64::consts::PI + inc.to_radians();
            let n = V3::new(tilt.cos(), tilt.sin(), 0.0);
            let e1 = V3::z().cross(&n).normalize();
            prims.push(Surface::rect(
                c.into(),
                e1.into(),
                [0.0, 0.0, 1.0],
                0.8,
                0.6,
            ));
        }
        Scene { prims }
    }

    /// Open ground (30 x 30 m) with cylinders and poles; beams into the sky miss.
    fn ground() -> Scene {
        let mut prims = vec![Surface::rect(
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            15.0,
            15.0,
        )];
        for k in 0..8 {
            let a = k as f64 * 0.8;
            let d = 4.0 + 1.3 * k as f64;
            let radius = if k % 3 == 0 {
                0.05
            } else {
                0.25 + 0.1 * k as f64
            };
            prims.push(Surface::Cylinder {
                x: d * a.cos(),
                y: d * a.sin(),
                radius,
                z0: 0.0,
                z1: 3.0,
            });
        }
        Scene { prims }
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An owned packed map built from an analytic scene.
struct TestMap {
    origin: [f64; 3],
    resolution: f32,
    bucket_size: f32,
    buckets: Vec<Bucket>,
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    gamma: Vec<f32>,
    reflectance: Vec<f32>,
}

impl TestMap {
    /// Samples `scene` at spacing `r`, world positions shifted by `origin` (map points live at
    /// `origin + position`; the scene is given relative to the origin).
    fn build(scene: &Scene, r: f64, origin: [f64; 3]) -> TestMap {
        let mut samples = Vec::new();
        for p in &scene.prims {
            sample(p, r, &mut samples);
        }
        let bucket_size = (30.0 * r).max(2.0);
        // Coarse-to-fine: points on coarser sub-grids (more trailing zero bits of both indices) first,
        // shuffled within a level so that every prefix is spread over the bucket.
        let level = |ij: [i64; 2]| ij[0].trailing_zeros().min(ij[1].trailing_zeros()).min(10);
        let mut keyed: Vec<([i64; 3], u32, u64, usize)> = samples
            .iter()
            .enumerate()
            .map(|(k, (p, _, ij))| {
                let b = [
                    (p.x / bucket_size).floor() as i64,
                    (p.y / bucket_size).floor() as i64,
                    (p.z / bucket_size).floor() as i64,
                ];
                (b, 16 - level(*ij), splitmix64(k as u64), k)
            })
            .collect();
        keyed.sort_unstable();
        let mut map = TestMap {
            origin,
            resolution: r as f32,
            bucket_size: bucket_size as f32,
            buckets: Vec::new(),
            positions: Vec::with_capacity(keyed.len()),
            normals: Vec::with_capacity(keyed.len()),
            gamma: Vec::with_capacity(keyed.len()),
            reflectance: Vec::with_capacity(keyed.len()),
        };
        let mut prev: Option<[i64; 3]> = None;
        for (b, _, _, k) in keyed {
            let (p, n, _) = samples[k];
            let pf = [p.x as f32, p.y as f32, p.z as f32];
            if prev != Some(b) {
                prev = Some(b);
                map.buckets.push(Bucket {
                    key: map.buckets.len() as u64,
                    first: map.positions.len() as u32,
                    count: 0,
                    min: pf,
                    max: pf,
                });
            }
            let bucket = map.buckets.last_mut().unwrap();
            bucket.count += 1;
            for (a, v) in pf.iter().enumerate() {
                bucket.min[a] = bucket.min[a].min(*v);
                bucket.max[a] = bucket.max[a].max(*v);
            }
            map.positions.push(pf);
            map.normals.push([n.x as f32, n.y as f32, n.z as f32]);
            map.gamma.push(0.0);
            map.reflectance.push(0.6);
        }
        map
    }

    fn view(&self) -> MapView<'_> {
        MapView {
            origin: self.origin,
            resolution: self.resolution,
            bucket_size: self.bucket_size,
            buckets: &self.buckets,
            positions: &self.positions,
            normals: Some(&self.normals),
            gamma: Some(&self.gamma),
            spacing: None,
            surface_offset: None,
            reflectance: Some(&self.reflectance),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Scan patterns

/// A spinning LiDAR: `rows` lasers from -25 to +15 deg, `cols` azimuth steps over 0.1 s.
fn spinning(rows: usize, cols: usize) -> Vec<Beam> {
    let mut beams = Vec::with_capacity(rows * cols);
    for c in 0..cols {
        let az = std::f64::consts::TAU * c as f64 / cols as f64;
        for r in 0..rows {
            let el = (-25.0 + 40.0 * r as f64 / (rows - 1).max(1) as f64).to_radians();
            beams.push(Beam {
                dir: [
                    (el.cos() * az.cos()) as f32,
                    (el.cos() * az.sin()) as f32,
                    el.sin() as f32,
                ],
                time_s: (0.1 * c as f64 / cols as f64) as f32,
                ring: r as u16,
            });
        }
    }
    beams
}

/// `n` directions uniform on the sphere, fired over 0.1 s.
fn random_dirs(n: usize, seed: u64) -> Vec<Beam> {
    (0..n)
        .map(|i| {
            let h1 = splitmix64(seed ^ (2 * i as u64));
            let h2 = splitmix64(seed ^ (2 * i as u64 + 1));
            let z = 2.0 * (h1 >> 11) as f64 / (1u64 << 53) as f64 - 1.0;
            let phi = std::f64::consts::TAU * (h2 >> 11) as f64 / (1u64 << 53) as f64;
            let s = (1.0 - z * z).max(0.0).sqrt();
            Beam {
                dir: [(s * phi.cos()) as f32, (s * phi.sin()) as f32, z as f32],
                time_s: (0.1 * i as f64 / n as f64) as f32,
                ring: (i % 6) as u16,
            }
        })
        .collect()
}

fn physics() -> Physics {
    Physics {
        min_range_m: 0.0,
        max_range_m: 200.0,
        range_sigma_m: 0.0,
        range_sigma_quadratic: 0.0,
        angular_sigma_rad: 0.0,
        default_reflectance: 0.5,
        range_10pct_m: 0.0,
        range_80pct_m: 0.0,
    }
}

fn params(method: Method, plane: bool) -> RenderParams {
    RenderParams {
        method,
        plane_correction: plane,
        debug: true,
        ..RenderParams::default()
    }
}

// ---------------------------------------------------------------------------------------------------------
// The sensor's pose, off the origin so that large coordinates are exercised

const ORIGIN: [f64; 3] = [5000.0, -3000.0, 100.0];

fn sensor_pose() -> Isometry3<f64> {
    pose_from_xyz_rpy(
        ORIGIN[0] + 0.7,
        ORIGIN[1] - 0.4,
        ORIGIN[2] + 1.2,
        0.02,
        -0.03,
        0.4,
    )
}

fn render_static(map: &TestMap, beams: &[Beam], p: &RenderParams, pose: &Isometry3<f64>) -> Frame {
    render::render_frame(&map.view(), beams, &physics(), &Static(*pose), 0.0, 0, p).unwrap()
}
