//! Integration tests of the map-preparation stages on synthetic clouds with known answers.

use aerie_pipeline::features::{NormalsParams, estimate_normals};
use aerie_pipeline::filters::{
    CropParams, DownsampleMethod, DownsampleParams, RadiusParams, SorParams, TransformParams, crop,
    downsample, merge, radius_outliers, sor, sor_mask,
};
use aerie_pipeline::{Cloud, Error, NoProgress, Progress};

/// splitmix64: a tiny seeded generator, enough for test data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn unit(v: [f64; 3]) -> [f64; 3] {
    let l = dot(v, v).sqrt();
    [v[0] / l, v[1] / l, v[2] / l]
}

/// A tilted plane through `centre` with unit normal `n`, sampled on a jittered grid of `spacing` over
/// `side` x `side` metres, with Gaussian noise `sigma` along the normal.
fn noisy_plane(rng: &mut Rng, n: [f64; 3], side: f64, spacing: f64, sigma: f64) -> Vec<[f32; 3]> {
    let a = unit(if n[0].abs() < 0.9 {
        [n[2], 0.0, -n[0]]
    } else {
        [0.0, n[2], -n[1]]
    });
    let b = [
        n[1] * a[2] - n[2] * a[1],
        n[2] * a[0] - n[0] * a[2],
        n[0] * a[1] - n[1] * a[0],
    ];
    let steps = (side / spacing) as usize;
    let mut out = Vec::new();
    for i in 0..steps {
        for j in 0..steps {
            let u = (i as f64 + 0.8 * rng.uniform()) * spacing - side / 2.0;
            let v = (j as f64 + 0.8 * rng.uniform()) * spacing - side / 2.0;
            let h = sigma * rng.normal();
            out.push([
                (a[0] * u + b[0] * v + n[0] * h) as f32,
                (a[1] * u + b[1] * v + n[1] * h) as f32,
                (a[2] * u + b[2] * v + n[2] * h + 10.0) as f32,
            ]);
        }
    }
    out
}

fn cloud_of(origin: [f64; 3], positions: Vec<[f32; 3]>) -> Cloud {
    let n = positions.len();
    let mut c = Cloud::from_positions(origin, positions);
    c.set_intensity(Some((0..n).map(|i| i as f32).collect()))
        .unwrap();
    c
}

fn figure(r: &aerie_pipeline::StageReport, name: &str) -> f64 {
    r.figures
        .iter()
        .find(|f| f.0 == name)
        .map(|f| f.1)
        .expect(name)
}

#[test]
fn noisy_plane_normals_and_gamma() {
    let mut rng = Rng(1);
    let n = unit([0.2, -0.3, 0.9]);
    // 0.5 mm noise on a 4 cm grid: the normal's expected error is about sigma / (sqrt(k) * rms extent)
    // = 0.0005 / (4 * 0.045) rad = 0.16 deg, so the worst of 10k points stays below 1 deg.
    let sigma = 0.0005;
    let mut c = cloud_of(
        [500_000.0, 4_000_000.0, 0.0],
        noisy_plane(&mut rng, n, 4.0, 0.04, sigma),
    );
    let p = NormalsParams {
        resolution_m: Some(0.05),
        ..Default::default()
    };
    let r = estimate_normals(&mut c, &p, &NoProgress).unwrap();
    assert_eq!(figure(&r, "radius_m"), (3.0 * 0.05f64) as f32 as f64);
    assert_eq!(figure(&r, "no_normal"), 0.0);
    // Near-horizontal: the "up" rule orients every normal to +z, the same side as n.
    assert_eq!(figure(&r, "oriented_up"), c.len() as f64);
    let cos1 = 1f64.to_radians().cos();
    let mut worst: f64 = 1.0;
    for m in c.normals().unwrap() {
        worst = worst.min(dot([m[0] as f64, m[1] as f64, m[2] as f64], n));
    }
    assert!(
        worst > cos1,
        "worst normal is {:.3} deg off",
        worst.acos().to_degrees()
    );
    let g = c.gamma().unwrap();
    let mean_g = g.iter().map(|&x| x as f64).sum::<f64>() / g.len() as f64;
    assert!(
        (mean_g - sigma).abs() < 0.2 * sigma,
        "mean gamma {mean_g} vs sigma {sigma}"
    );
}

#[test]
fn sphere_and_cylinder_normals_are_radial() {
    let mut rng = Rng(2);
    // Sphere of radius 2 about (0, 0, 0), 20k uniform points.
    let mut pts = Vec::new();
    for _ in 0..20_000 {
        let v = unit([rng.normal(), rng.normal(), rng.normal()]);
        pts.push([
            (2.0 * v[0]) as f32,
            (2.0 * v[1]) as f32,
            (2.0 * v[2]) as f32,
        ]);
    }
    let mut s = cloud_of([0.0; 3], pts);
    // Facing the centre (a scanner inside the sphere): every normal points inward.
    let p = NormalsParams {
        viewpoint: Some([0.0; 3]),
        ..Default::default()
    };
    estimate_normals(&mut s, &p, &NoProgress).unwrap();
    let cos3 = 3f64.to_radians().cos();
    for (q, m) in s.positions().iter().zip(s.normals().unwrap()) {
        let radial = unit([q[0] as f64, q[1] as f64, q[2] as f64]);
        let d = dot([m[0] as f64, m[1] as f64, m[2] as f64], radial);
        assert!(
            d < -cos3,
            "normal {m:?} at {q:?} is not radial inward ({d})"
        );
    }
    // Cylinder of radius 1 about the z axis, height 4: vertical walls, oriented outward from the centroid.
    let mut pts = Vec::new();
    for _ in 0..20_000 {
        let a = rng.uniform() * std::f64::consts::TAU;
        let z = rng.uniform() * 4.0;
        pts.push([a.cos() as f32, a.sin() as f32, z as f32]);
    }
    let mut c = cloud_of([0.0; 3], pts);
    let r = estimate_normals(&mut c, &NormalsParams::default(), &NoProgress).unwrap();
    assert_eq!(figure(&r, "oriented_outward"), c.len() as f64);
    for (q, m) in c.positions().iter().zip(c.normals().unwrap()) {
        let radial = unit([q[0] as f64, q[1] as f64, 0.0]);
        let d = dot([m[0] as f64, m[1] as f64, m[2] as f64], radial);
        assert!(
            d > cos3,
            "normal {m:?} at {q:?} is not radial outward ({d})"
        );
    }
}

/// A noisy plane of ~10k points with `count` far outliers scattered 1..6 m off it.
fn plane_with_outliers(count: usize) -> (Cloud, usize) {
    let mut rng = Rng(3);
    let mut pts = noisy_plane(&mut rng, [0.0, 0.0, 1.0], 5.0, 0.05, 0.003);
    let surface = pts.len();
    for _ in 0..count {
        let side = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
        pts.push([
            (rng.uniform() * 10.0 - 5.0) as f32,
            (rng.uniform() * 10.0 - 5.0) as f32,
            (10.0 + side * (1.0 + 5.0 * rng.uniform())) as f32,
        ]);
    }
    (cloud_of([100.0, 200.0, 0.0], pts), surface)
}

#[test]
fn far_outliers_are_removed_and_the_surface_kept() {
    let (c, surface) = plane_with_outliers(30);
    let mut out = c.clone();
    let r = sor(&mut out, &SorParams::default(), &NoProgress).unwrap();
    // Intensity holds the original index: exactly the surface points survive.
    let kept = out.intensity().unwrap();
    assert_eq!(kept.len(), surface, "{r:?}");
    assert!(kept.iter().all(|&i| (i as usize) < surface));
    assert_eq!(r.removed[0].1, 30);
    assert!(figure(&r, "threshold") > figure(&r, "mu"));

    let rp = RadiusParams {
        radius_m: 0.2,
        min_neighbors: 3,
    };
    let (out, _) = radius_outliers(&c, &rp, &NoProgress).unwrap();
    assert_eq!(out.len(), surface);
}

#[test]
fn voxel_nearest_keeps_original_points_and_ignores_input_order() {
    let mut rng = Rng(4);
    let pts: Vec<[f32; 3]> = (0..30_000)
        .map(|_| {
            [
                (rng.uniform() * 6.0) as f32,
                (rng.uniform() * 6.0) as f32,
                (rng.uniform() * 1.0) as f32,
            ]
        })
        .collect();
    let c = cloud_of([1000.0, -50.0, 3.0], pts);
    // Fisher-Yates shuffle of the whole cloud (intensity follows its point).
    let mut perm: Vec<usize> = (0..c.len()).collect();
    for i in (1..perm.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        perm.swap(i, j);
    }
    let shuffled = c.select(&perm);
    let p = DownsampleParams {
        method: DownsampleMethod::VoxelNearest,
        resolution_m: 0.25,
    };
    let (a, r) = downsample(&c, &p, &NoProgress).unwrap();
    let (b, _) = downsample(&shuffled, &p, &NoProgress).unwrap();
    assert_eq!(a, b, "output depends on input order");
    assert!(figure(&r, "reduction_ratio") > 1.0);
    // Every output point is an original point, bit for bit, with its own attributes.
    for (q, i) in a.positions().iter().zip(a.intensity().unwrap()) {
        assert_eq!(
            c.positions()[*i as usize].map(f32::to_bits),
            q.map(f32::to_bits)
        );
    }
    // One point per occupied cell of the world-anchored grid.
    let mut cells: Vec<[i64; 3]> = c
        .positions()
        .iter()
        .map(|p| std::array::from_fn(|k| ((c.origin[k] + p[k] as f64) / 0.25).floor() as i64))
        .collect();
    cells.sort();
    cells.dedup();
    assert_eq!(a.len(), cells.len());
}

#[test]
fn downsampling_two_tiles_agrees_with_the_whole() {
    // Tiles with different origins put points in the same world-anchored cells.
    let mut rng = Rng(5);
    let pts: Vec<[f32; 3]> = (0..5000)
        .map(|_| {
            [
                (rng.uniform() * 4.0) as f32,
                (rng.uniform() * 2.0) as f32,
                0.5,
            ]
        })
        .collect();
    let whole = cloud_of([10.0, 0.0, 0.0], pts);
    let p = DownsampleParams::default();
    let (dw, _) = downsample(&whole, &p, &NoProgress).unwrap();
    let left = crop(
        &whole,
        &CropParams {
            max: [12.0, f64::INFINITY, f64::INFINITY],
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap()
    .0;
    let mut right = crop(
        &whole,
        &CropParams {
            min: [12.0, f64::NEG_INFINITY, f64::NEG_INFINITY],
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap()
    .0;
    right.set_origin([12.0, 0.0, 0.0]);
    let (dl, _) = downsample(&left, &p, &NoProgress).unwrap();
    let (dr, _) = downsample(&right, &p, &NoProgress).unwrap();
    let mut ids: Vec<f32> = dl
        .intensity()
        .unwrap()
        .iter()
        .chain(dr.intensity().unwrap())
        .copied()
        .collect();
    ids.sort_by(f32::total_cmp);
    let mut want = dw.intensity().unwrap().to_vec();
    want.sort_by(f32::total_cmp);
    assert_eq!(ids, want);
}

/// Every stage's output under a pool of `threads` threads.
fn run_all(c: &Cloud, threads: usize) -> Vec<Cloud> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut out = Vec::new();
        let mut s = c.clone();
        sor(&mut s, &SorParams::default(), &NoProgress).unwrap();
        out.push(s);
        for method in [
            DownsampleMethod::VoxelNearest,
            DownsampleMethod::VoxelCentroid,
            DownsampleMethod::MinDistance,
        ] {
            let p = DownsampleParams {
                method,
                resolution_m: 0.1,
            };
            out.push(downsample(c, &p, &NoProgress).unwrap().0);
        }
        let mut n = c.clone();
        let p = NormalsParams {
            curvature: true,
            resolution_m: Some(0.05),
            ..Default::default()
        };
        estimate_normals(&mut n, &p, &NoProgress).unwrap();
        out.push(n);
        out.push(
            radius_outliers(c, &RadiusParams::default(), &NoProgress)
                .unwrap()
                .0,
        );
        out
    })
}

#[test]
fn results_identical_for_one_and_many_threads() {
    let (mut c, _) = plane_with_outliers(50);
    c.set_time(Some((0..c.len()).map(|i| i as f64 * 1e-5).collect()))
        .unwrap();
    c.take_normals();
    let one = run_all(&c, 1);
    let many = run_all(&c, 4);
    for (a, b) in one.iter().zip(&many) {
        // Compare bit patterns so that -0.0 / NaN differences would show.
        let bits = |c: &Cloud| -> Vec<u32> {
            c.positions()
                .iter()
                .flat_map(|p| p.map(f32::to_bits))
                .collect()
        };
        assert_eq!(bits(a), bits(b));
        assert_eq!(a, b);
    }
}

#[test]
fn transform_merge_crop_chain() {
    // Two scans of one 1 m square, the second taken from a scanner yawed by 90 degrees and 10 m east.
    let square: Vec<[f32; 3]> = (0..11)
        .flat_map(|i| (0..11).map(move |j| [i as f32 * 0.1, j as f32 * 0.1, 0.0]))
        .collect();
    let a = cloud_of([0.0; 3], square.clone());
    let b = cloud_of([0.0; 3], square);
    let t = TransformParams {
        translation: [10.0, 0.0, 0.0],
        rotation_rpy: [0.0, 0.0, std::f64::consts::FRAC_PI_2],
        ..Default::default()
    };
    let (m, r) = merge(vec![(a, None), (b, Some(t))], &NoProgress).unwrap();
    assert_eq!(r.points_out, 242);
    // The yawed square spans x in [9, 10], y in [0, 1].
    let box_b = CropParams {
        min: [8.95, -0.05, -1.0],
        max: [10.05, 1.05, 1.0],
        invert: false,
    };
    let (only_b, _) = crop(&m, &box_b, &NoProgress).unwrap();
    assert_eq!(only_b.len(), 121);
    assert!(only_b.intensity().unwrap().iter().all(|&i| i < 121.0));
}

struct CancelAfter(std::sync::atomic::AtomicUsize);
impl Progress for CancelAfter {
    fn is_cancelled(&self) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0
    }
}

#[test]
fn cancellation_is_reported() {
    let (c, _) = plane_with_outliers(0);
    let cancel = || CancelAfter(std::sync::atomic::AtomicUsize::new(0));
    assert!(matches!(
        sor(&mut c.clone(), &SorParams::default(), &cancel()),
        Err(Error::Cancelled)
    ));
    let mut n = c.clone();
    assert!(matches!(
        estimate_normals(&mut n, &NormalsParams::default(), &cancel()),
        Err(Error::Cancelled)
    ));
    assert!(matches!(
        downsample(&c, &DownsampleParams::default(), &cancel()),
        Err(Error::Cancelled)
    ));
}

#[test]
fn sor_keeps_the_input_order_only_where_scan_ranges_need_it() {
    let (c, surface) = plane_with_outliers(30);
    let ids =
        |c: &Cloud| -> Vec<usize> { c.intensity().unwrap().iter().map(|&i| i as usize).collect() };
    // One scan (or none): the points come back in the search's spatial order, the same set.
    let mut one = c.clone();
    sor(&mut one, &SorParams::default(), &NoProgress).unwrap();
    let mut got = ids(&one);
    assert_ne!(
        got,
        (0..surface).collect::<Vec<_>>(),
        "expected a spatial order"
    );
    got.sort_unstable();
    assert_eq!(got, (0..surface).collect::<Vec<_>>());
    // Two scans' ranges: the input order stays and the ranges are renumbered.
    let mut two = c.clone();
    let half = c.len() / 2;
    two.meta.scans = [0..half, half..c.len()]
        .into_iter()
        .map(|points| aerie_pipeline::cloud::ScanInfo {
            name: format!("{points:?}"),
            points,
            world_from_scan: None,
        })
        .collect();
    sor(&mut two, &SorParams::default(), &NoProgress).unwrap();
    assert_eq!(ids(&two), (0..surface).collect::<Vec<_>>());
    let first = (0..half).filter(|&i| i < surface).count();
    assert_eq!(two.meta.scans[0].points, 0..first);
    assert_eq!(two.meta.scans[1].points, first..surface);
}

#[test]
fn sor_mask_matches_sor() {
    let (c, _) = plane_with_outliers(10);
    let (mask, stats) = sor_mask(&c, &SorParams::default(), &NoProgress).unwrap();
    let mut out = c.clone();
    let r = sor(&mut out, &SorParams::default(), &NoProgress).unwrap();
    assert_eq!(stats.outliers, r.removed[0].1);
    // The same points (intensity holds each one's input index), whatever order `sor` leaves them in.
    let mut kept: Vec<usize> = out
        .intensity()
        .unwrap()
        .iter()
        .map(|&i| i as usize)
        .collect();
    kept.sort_unstable();
    let want: Vec<usize> = (0..c.len()).filter(|&i| mask[i]).collect();
    assert_eq!(kept, want);
    assert_eq!(figure(&r, "mu"), stats.mu);
}

/// One-off speed check on a synthetic 1M-point cloud; run with
/// `cargo test --release -p aerie-pipeline --test it stages:: -- --ignored --nocapture speed`.
#[test]
#[ignore = "a timing, not a check: run it in release with --ignored --nocapture"]
fn speed_one_million_points() {
    let mut rng = Rng(6);
    // A 100 x 100 m floor and four walls, ~1M points at about 1.2 cm noise.
    let mut pts = Vec::with_capacity(1_000_000);
    while pts.len() < 1_000_000 {
        let u = rng.uniform() * 100.0;
        let v = rng.uniform() * 100.0;
        let h = rng.uniform() * 5.0;
        let e = 0.012 * rng.normal();
        pts.push(
            match pts.len() % 5 {
                0 | 1 => [u, v, e],
                2 => [e, u, h],
                3 => [100.0 + e, u, h],
                _ => [u, 100.0 + e, h],
            }
            .map(|x| x as f32),
        );
    }
    let c = cloud_of([300_000.0, 5_000_000.0, 100.0], pts);
    let n = c.len() as f64;
    let time = |name: &str, f: &mut dyn FnMut() -> usize| {
        let t = std::time::Instant::now();
        let out = f();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name:<28} {:>8.3} s  {:>8.3} us/point  -> {out} points",
            s,
            s * 1e6 / n
        );
    };
    println!("threads: {}", rayon::current_num_threads());
    time("crop", &mut || {
        crop(
            &c,
            &CropParams {
                max: [300_050.0, f64::INFINITY, f64::INFINITY],
                ..Default::default()
            },
            &NoProgress,
        )
        .unwrap()
        .0
        .len()
    });
    time("transform", &mut || {
        let mut d = c.clone();
        aerie_pipeline::filters::transform(
            &mut d,
            &TransformParams {
                rotation_rpy: [0.1, 0.2, 0.3],
                ..Default::default()
            },
            &NoProgress,
        )
        .unwrap();
        d.len()
    });
    time("neighbour tree build", &mut || {
        aerie_pipeline::features::Neighbors::new(c.positions())
            .unwrap()
            .len()
    });
    time("sor k=16", &mut || {
        let mut s = c.clone();
        sor(&mut s, &SorParams::default(), &NoProgress).unwrap();
        s.len()
    });
    time("radius r=0.2 m", &mut || {
        radius_outliers(
            &c,
            &RadiusParams {
                radius_m: 0.2,
                min_neighbors: 3,
            },
            &NoProgress,
        )
        .unwrap()
        .0
        .len()
    });
    for method in [
        DownsampleMethod::VoxelNearest,
        DownsampleMethod::VoxelCentroid,
        DownsampleMethod::MinDistance,
    ] {
        time(&format!("downsample {method:?} 0.1 m"), &mut || {
            downsample(
                &c,
                &DownsampleParams {
                    method,
                    resolution_m: 0.1,
                },
                &NoProgress,
            )
            .unwrap()
            .0
            .len()
        });
    }
    time("normals k=16 r=0.3 m", &mut || {
        let mut d = c.clone();
        estimate_normals(
            &mut d,
            &NormalsParams {
                resolution_m: Some(0.1),
                ..Default::default()
            },
            &NoProgress,
        )
        .unwrap();
        d.len()
    });
}

/// On a real TLS scan: the all-points k-nearest search (grid, cell order, shared blocks) gives exactly the
/// brute-force neighbours of sampled points, the single-query search agrees, and SOR and normals do not depend
/// on the thread count.
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn real_scan_neighbours_exact_and_thread_independent() {
    use aerie_pipeline::features::Neighbors;
    let path = crate::shared_data("las/lone_star_tls.laz");
    let full = aerie_pipeline::io::read(&path, None, &Default::default()).unwrap();
    // A contiguous third of the scan keeps the test quick while keeping its density contrasts.
    let n = full.len() / 3;
    let c = cloud_of(full.origin, full.positions()[..n].to_vec());
    let pos = c.positions();
    let k = 17;
    let nb = Neighbors::new(pos).unwrap();
    let sample: Vec<usize> = (0..n).step_by(n / 40).collect();
    for radius in [None, Some(0.15f32)] {
        let found = nb
            .knn_all(
                k,
                radius,
                &NoProgress,
                || (),
                |_, _, _, nbrs, _| nbrs.len() as u32,
            )
            .unwrap();
        let mut one = Vec::new();
        for &i in &sample {
            let q = pos[i];
            let r2 = radius.map_or(f32::INFINITY, |r| r * r);
            let mut all: Vec<(f32, u32)> = pos
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    let d = (p[0] - q[0]) * (p[0] - q[0])
                        + (p[1] - q[1]) * (p[1] - q[1])
                        + (p[2] - q[2]) * (p[2] - q[2]);
                    (d, j as u32)
                })
                .filter(|x| x.0 <= r2)
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            all.truncate(k);
            nb.knn(q, k, radius, &mut one);
            let got: Vec<(f32, u32)> = one.iter().map(|x| (x.dist2, x.index)).collect();
            assert_eq!(got, all, "point {i}, radius {radius:?}");
            assert_eq!(found[i] as usize, all.len());
        }
    }
    // The batch path itself against brute force for the sampled points.
    let checked = nb
        .knn_all(
            k,
            None,
            &NoProgress,
            || (),
            |_, i, _, nbrs, near| {
                if i % (n / 40) != 0 {
                    return 0u32;
                }
                let q = pos[i];
                let mut all: Vec<(f32, u32)> = pos
                    .iter()
                    .enumerate()
                    .map(|(j, p)| {
                        let d = (p[0] - q[0]) * (p[0] - q[0])
                            + (p[1] - q[1]) * (p[1] - q[1])
                            + (p[2] - q[2]) * (p[2] - q[2]);
                        (d, j as u32)
                    })
                    .collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                all.truncate(k);
                let got: Vec<(f32, u32)> = nbrs.iter().map(|x| (x.dist2, x.index)).collect();
                assert_eq!(got, all, "batch, point {i}");
                for (x, p) in nbrs.iter().zip(near) {
                    assert_eq!(pos[x.index as usize], *p);
                }
                1
            },
        )
        .unwrap();
    assert_eq!(checked.iter().sum::<u32>() as usize, sample.len());
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut s = c.clone();
            sor(&mut s, &SorParams::default(), &NoProgress).unwrap();
            let mut d = c.clone();
            let p = NormalsParams {
                resolution_m: Some(0.05),
                curvature: true,
                ..Default::default()
            };
            estimate_normals(&mut d, &p, &NoProgress).unwrap();
            (s, d)
        })
    };
    let (s1, d1) = run(1);
    let (s3, d3) = run(3);
    assert!(
        s1.len() < n && s1.len() > n / 2,
        "sor kept {} of {n}",
        s1.len()
    );
    assert_eq!(s1, s3);
    assert_eq!(d1, d3);
}
