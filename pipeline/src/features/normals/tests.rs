//! Tests of normal estimation: the eigen solver, plane fits, orientation and the surface offset.

use super::*;
use crate::progress::NoProgress;

/// `Rz(yaw) Ry(pitch) Rx(roll)` as rows, the layout the solver takes.
fn rotation_from_rpy(rpy: [f64; 3]) -> [[f64; 3]; 3] {
    let r = nalgebra::Rotation3::from_euler_angles(rpy[0], rpy[1], rpy[2]);
    std::array::from_fn(|i| std::array::from_fn(|j| r[(i, j)]))
}

/// Reference for [`sym_eigen3`]: cyclic Jacobi rotations: eigenvalues in decreasing order
/// and the matching unit eigenvectors (`vectors[i]` belongs to `values[i]`). Jacobi keeps the vectors
/// orthonormal even for repeated or nearly equal eigenvalues, where closed-form solvers lose accuracy.
fn sym_eigen3_jacobi(m: [[f64; 3]; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut a = m;
    // Symmetrise: only the upper triangle is trusted.
    a[1][0] = a[0][1];
    a[2][0] = a[0][2];
    a[2][1] = a[1][2];
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let scale: f64 = a.iter().flatten().map(|x| x * x).sum();
    for _sweep in 0..50 {
        let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        if off == 0.0 || off <= scale * 1e-32 || !off.is_finite() {
            break;
        }
        for (p, q) in [(0usize, 1usize), (0, 2), (1, 2)] {
            let apq = a[p][q];
            if apq == 0.0 {
                continue;
            }
            let theta = (a[q][q] - a[p][p]) / (2.0 * apq);
            let t = if theta.abs() > 1e150 {
                0.5 / theta
            } else {
                theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
            };
            let c = 1.0 / (t * t + 1.0).sqrt();
            let s = t * c;
            // A <- J^T A J and V <- V J, with J the rotation in the (p, q) plane.
            for row in a.iter_mut() {
                let akp = row[p];
                let akq = row[q];
                row[p] = c * akp - s * akq;
                row[q] = s * akp + c * akq;
            }
            let (rp, rq) = (a[p], a[q]);
            for k in 0..3 {
                a[p][k] = c * rp[k] - s * rq[k];
                a[q][k] = s * rp[k] + c * rq[k];
            }
            a[p][q] = 0.0;
            a[q][p] = 0.0;
            for row in v.iter_mut() {
                let vp = row[p];
                let vq = row[q];
                row[p] = c * vp - s * vq;
                row[q] = s * vp + c * vq;
            }
        }
    }
    let mut order = [0usize, 1, 2];
    order.sort_by(|&i, &j| a[j][j].total_cmp(&a[i][i]));
    let values = [
        a[order[0]][order[0]],
        a[order[1]][order[1]],
        a[order[2]][order[2]],
    ];
    let col = |j: usize| [v[0][j], v[1][j], v[2][j]];
    (values, [col(order[0]), col(order[1]), col(order[2])])
}

fn check_decomposition(m: [[f64; 3]; 3], tol: f64) {
    let (l, v) = sym_eigen3(m);
    assert!(l[0] >= l[1] && l[1] >= l[2], "{l:?}");
    for i in 0..3 {
        for j in 0..3 {
            let d: f64 = (0..3).map(|k| v[i][k] * v[j][k]).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((d - want).abs() < 1e-12, "not orthonormal: {v:?}");
        }
        let mv: Vec<f64> = (0..3)
            .map(|r| (0..3).map(|c| m[r][c] * v[i][c]).sum())
            .collect();
        for r in 0..3 {
            assert!(
                (mv[r] - l[i] * v[i][r]).abs() < tol,
                "A v != l v for {m:?}: {l:?} {v:?}"
            );
        }
    }
}

#[test]
fn eigen_solver_cases() {
    check_decomposition([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]], 1e-14);
    check_decomposition([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 1e-14);
    check_decomposition([[0.0; 3]; 3], 1e-14);
    // Rank one: u u^T.
    let u = [0.3, -0.5, 0.8];
    let r1 = std::array::from_fn(|i| std::array::from_fn(|j| u[i] * u[j]));
    check_decomposition(r1, 1e-14);
    // A rotated diag(2, 2, 1e-20): repeated top eigenvalue and a tiny one.
    let q = rotation_from_rpy([0.3, -1.1, 2.0]);
    let d = [2.0, 2.0, 1e-20];
    let m: [[f64; 3]; 3] = std::array::from_fn(|i| {
        std::array::from_fn(|j| (0..3).map(|k| q[i][k] * d[k] * q[j][k]).sum())
    });
    check_decomposition(m, 1e-13);
    let (l, v) = sym_eigen3(m);
    assert!(l[2].abs() < 1e-14);
    // The smallest eigenvector is the third column of q.
    let dotp: f64 = (0..3).map(|k| v[2][k] * q[k][2]).sum();
    assert!((dotp.abs() - 1.0).abs() < 1e-12);
    // Nearly equal eigenvalues.
    let d = [1.0, 1.0 + 1e-12, 1.0 - 1e-12];
    let m: [[f64; 3]; 3] = std::array::from_fn(|i| {
        std::array::from_fn(|j| (0..3).map(|k| q[i][k] * d[k] * q[j][k]).sum())
    });
    check_decomposition(m, 1e-13);
}

#[test]
fn closed_form_agrees_with_jacobi() {
    // Covariances of random neighbourhoods: flat with 1 cm noise, lines, blobs; values and the plane
    // normal (for a separated smallest eigenvalue) must agree with the Jacobi reference.
    let mut s = 99u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for case in 0..3000 {
        let spread = match case % 3 {
            0 => [0.15, 0.15, 0.01],
            1 => [0.3, 0.002, 0.002],
            _ => [0.1, 0.08, 0.06],
        };
        let q = rotation_from_rpy([next() * 6.0, next() * 6.0, next() * 6.0]);
        let pts: Vec<[f64; 3]> = (0..16)
            .map(|_| {
                let l = spread.map(|w| w * next());
                std::array::from_fn(|i| (0..3).map(|k| q[i][k] * l[k]).sum())
            })
            .collect();
        let n = pts.len() as f64;
        let mean: [f64; 3] = std::array::from_fn(|k| pts.iter().map(|p| p[k]).sum::<f64>() / n);
        let m: [[f64; 3]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                pts.iter()
                    .map(|p| (p[i] - mean[i]) * (p[j] - mean[j]))
                    .sum::<f64>()
                    / n
            })
        });
        let (l, v) = sym_eigen3(m);
        let (lj, vj) = sym_eigen3_jacobi(m);
        for k in 0..3 {
            assert!((l[k] - lj[k]).abs() <= 1e-12 * lj[0], "{l:?} {lj:?}");
        }
        if lj[1] - lj[2] > 1e-3 * lj[0] {
            let d: f64 = (0..3).map(|k| v[2][k] * vj[2][k]).sum();
            let c = cross3(v[2], vj[2]);
            assert!(
                d.abs() > 0.5 && dot3(c, c).sqrt() < 1e-12,
                "normal differs: {v:?} {vj:?}"
            );
        }
        // Within the near-degenerate pair of a line's two small eigenvalues the closed form's vectors are
        // less exact (residual ~1e-11 of the largest eigenvalue; Jacobi ~1e-15); planes and blobs agree.
        check_decomposition(m, 1e-10 * lj[0]);
    }
}

#[test]
fn degenerate_neighbourhoods_have_no_normal() {
    let mut positions = vec![[1.0, 2.0, 3.0]; 20];
    positions.extend((0..10).map(|i| [10.0 + i as f32, 0.0, 0.0]));
    positions.push([100.0, 100.0, 100.0]);
    let mut c = Cloud::from_positions([0.0; 3], positions);
    let p = NormalsParams {
        k: 8,
        radius_m: Some(3.0),
        curvature: true,
        ..Default::default()
    };
    let r = estimate_normals(&mut c, &p, &NoProgress).unwrap();
    assert!(c.normals().unwrap().iter().all(|n| *n == [0.0; 3]));
    assert!(c.gamma().unwrap().iter().all(|g| g.is_infinite()));
    assert_eq!(c.extra("curvature").unwrap().values.get(0).unwrap(), -1.0);
    assert_eq!(
        r.figures.iter().find(|f| f.0 == "no_normal").unwrap().1,
        31.0
    );
}

/// A thick layer (points of a tilted plane spread about it with a standard deviation of 2 cm, densest in
/// the middle, as a map fused from many scans holds a wall): the stored offsets move the points onto the
/// plane, to within what the few dozen points under the kernel tell.
#[test]
fn surface_offsets_put_a_thick_layer_on_its_middle() {
    let mut uniform = lcg(12345);
    // The sum of four uniforms: nearly normal, standard deviation 0.02 m.
    let moved = layer_offsets(|| (0..4).map(|_| uniform()).sum::<f32>() * 0.02 * 3f32.sqrt());
    let (before, after) = (
        mean_rms(moved.iter().map(|m| m.0)),
        mean_rms(moved.iter().map(|m| m.1)),
    );
    assert!(before.1 > 0.018, "{before:?}");
    assert!(after.1 < 0.4 * before.1, "{before:?} -> {after:?}");
    assert!(after.0.abs() < 0.003, "{after:?}");
}

/// A surface with a sparse layer behind it (a third of the points 10 to 20 cm back, as a wall holds what a
/// few scans registered off left): the surface's points stay on it, where a real beam returns, and are not
/// drawn back to the centroid plane, 5 cm behind.
#[test]
fn surface_offsets_keep_the_dense_surface_where_it_is() {
    let mut uniform = lcg(777);
    let moved = layer_offsets(|| {
        let (pick, d) = (uniform(), uniform());
        if pick < -1.0 / 6.0 {
            -0.10 - (d + 0.5) * 0.10
        } else {
            d * 0.02
        }
    });
    let centroid = mean_rms(moved.iter().map(|m| m.0)).0;
    let surface = mean_rms(moved.iter().filter(|m| m.0 > -0.05).map(|m| m.1));
    assert!(centroid < -0.04, "{centroid}");
    assert!(surface.0.abs() < 0.003 && surface.1 < 0.01, "{surface:?}");
}

/// A seeded uniform draw in -0.5..0.5.
fn lcg(mut state: u64) -> impl FnMut() -> f32 {
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// The mean and the root mean square.
fn mean_rms(d: impl Iterator<Item = f32>) -> (f64, f64) {
    let (s, s2, k) = d.fold((0.0f64, 0.0f64, 0usize), |(s, s2, k), x| {
        (s + x as f64, s2 + (x as f64).powi(2), k + 1)
    });
    (s / k as f64, (s2 / k as f64).sqrt())
}

/// Points of a tilted plane 5 cm apart, each moved `across()` along the plane's normal; the normals stage at
/// resolution 0.1 m. Each point's distance from the plane before and after it is moved by its stored
/// offset, away from the edges (two search radii), where the neighbourhood surrounds the point.
fn layer_offsets(mut across: impl FnMut() -> f32) -> Vec<(f32, f32)> {
    let normal = [0.0f32, -0.6, 0.8];
    let (u, v) = ([1.0f32, 0.0, 0.0], [0.0f32, 0.8, 0.6]);
    let n = 80;
    let positions: Vec<[f32; 3]> = (0..n * n)
        .map(|i| {
            let d = across();
            let (a, b) = ((i % n) as f32 * 0.05, (i / n) as f32 * 0.05);
            [0, 1, 2].map(|k| a * u[k] + b * v[k] + d * normal[k])
        })
        .collect();
    let mut c = Cloud::from_positions([0.0; 3], positions);
    let p = NormalsParams {
        resolution_m: Some(0.1),
        ..Default::default()
    };
    estimate_normals(&mut c, &p, &NoProgress).unwrap();
    let offsets = match &c.extra(SURFACE_OFFSET).unwrap().values {
        crate::cloud::ExtraValues::F32(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    let (pos, normals) = (c.positions(), c.normals().unwrap());
    let inner = |q: &[f32; 3]| {
        let (a, b) = (dot(q, &u), dot(q, &v));
        (0.6..3.35).contains(&a) && (0.6..3.35).contains(&b)
    };
    pos.iter()
        .zip(normals)
        .zip(&offsets)
        .filter(|((q, _), _)| inner(q))
        .map(|((q, nv), s)| (dot(q, &normal), dot(q, &normal) + s * dot(nv, &normal)))
        .collect()
}

fn dot(a: &[f32; 3], b: &[f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A lattice of `n` x `n` points `step` apart in the plane z = 0.
fn lattice(n: usize, step: f32) -> Cloud {
    let positions = (0..n * n)
        .map(|i| [(i % n) as f32 * step, (i / n) as f32 * step, 0.0])
        .collect();
    Cloud::from_positions([0.0; 3], positions)
}

#[test]
fn a_scan_sparser_than_the_radius_is_told_which_resolution_fits() {
    let at = |resolution_m: f64, radius_m: Option<f32>, step: f32| {
        let p = NormalsParams {
            resolution_m: Some(resolution_m),
            radius_m,
            ..Default::default()
        };
        let r = estimate_normals(&mut lattice(40, step), &p, &NoProgress).unwrap();
        r.warnings.into_iter().find(|w| w.contains("too sparse"))
    };
    // An airborne-like spacing of 1.9 m under the default 0.1 m resolution: no point finds a plane.
    let w = at(0.1, None, 1.9).expect("a hint");
    assert!(w.starts_with("100% of the points have no plane"), "{w}");
    assert!(w.contains("about 1.90 m apart"), "{w}");
    assert!(w.contains("a resolution of about 1.9 m"), "{w}");
    assert!(w.contains("radius_m of at least 5.7 m"), "{w}");
    // Points 1.9 apart in a file without a coordinate system may be millimetres.
    assert!(
        w.ends_with("(`aerie prepare --scale 0.001` or `0.01`)"),
        "{w}"
    );
    // An explicit radius is what to raise.
    let w = at(0.1, Some(0.5), 1.9).expect("a hint");
    assert!(!w.contains("resolution of about"), "{w}");
    // Below a metre apart, or in a declared coordinate system (an airborne survey), no word of millimetres.
    let w = at(0.1, None, 0.5).expect("a hint");
    assert!(
        w.contains("about 0.50 m apart") && !w.contains("millimetres"),
        "{w}"
    );
    let mut survey = lattice(40, 1.9);
    survey.meta.crs_wkt = Some("PROJCS[\"UTM\",UNIT[\"metre\",1]]".into());
    let p = NormalsParams {
        resolution_m: Some(0.1),
        ..Default::default()
    };
    let r = estimate_normals(&mut survey, &p, &NoProgress).unwrap();
    let w = r
        .warnings
        .iter()
        .find(|w| w.contains("too sparse"))
        .expect("a hint");
    assert!(!w.contains("millimetres"), "{w}");
    // Sampled as finely as the resolution, or given a radius that holds the neighbours: no hint.
    assert_eq!(at(0.1, None, 0.1), None);
    assert_eq!(at(2.0, None, 1.9), None);
}

#[test]
fn rounding_up_to_two_digits() {
    assert_eq!(round_up_2(1.885), 1.9);
    assert_eq!(round_up_2(5.655), 5.7);
    assert_eq!(round_up_2(0.2345), 0.24);
    assert_eq!(round_up_2(2.0), 2.0);
    assert_eq!(round_up_2(12.01), 13.0);
}

#[test]
fn bad_parameters_and_tiny_clouds() {
    let mut c = Cloud::default();
    assert!(estimate_normals(&mut c, &NormalsParams::default(), &NoProgress).is_ok());
    let mut c = Cloud::from_positions(
        [0.0; 3],
        vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
    );
    let r = estimate_normals(&mut c, &NormalsParams::default(), &NoProgress).unwrap();
    assert!(r.warnings.iter().any(|w| w.contains("k = 16")));
    assert_eq!(c.normals().unwrap()[0], [0.0, 0.0, 1.0]);
    assert_eq!(c.gamma().unwrap()[0], 0.0);
    for bad in [
        NormalsParams {
            k: 2,
            ..Default::default()
        },
        NormalsParams {
            radius_m: Some(0.0),
            ..Default::default()
        },
        NormalsParams {
            resolution_m: Some(-1.0),
            ..Default::default()
        },
        NormalsParams {
            viewpoint: Some([f64::NAN, 0.0, 0.0]),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            estimate_normals(&mut c, &bad, &NoProgress),
            Err(Error::Parameter { .. })
        ));
    }
}

#[test]
fn orientation_toward_scanner_and_viewpoint() {
    // A vertical wall x = 5 (normal +-x); a scanner at the origin must make normals face -x.
    let mut positions = Vec::new();
    for i in 0..10 {
        for j in 0..10 {
            positions.push([5.0, i as f32 * 0.1, j as f32 * 0.1]);
        }
    }
    let mut c = Cloud::from_positions([0.0; 3], positions);
    c.meta.scans.push(crate::cloud::ScanInfo {
        name: "s".into(),
        points: 0..100,
        world_from_scan: Some(nalgebra::Isometry3::identity()),
    });
    let r = estimate_normals(&mut c, &NormalsParams::default(), &NoProgress).unwrap();
    assert!(c.normals().unwrap().iter().all(|n| n[0] < -0.999));
    assert_eq!(
        r.figures
            .iter()
            .find(|f| f.0 == "oriented_to_scanner")
            .unwrap()
            .1,
        100.0
    );
    // After a voxel downsampling the scans keep their poses but not their points: the nearest scanner.
    c.meta.scans = vec![
        crate::cloud::ScanInfo {
            name: "far".into(),
            points: 0..0,
            world_from_scan: Some(nalgebra::Isometry3::translation(30.0, 0.0, 0.0)),
        },
        crate::cloud::ScanInfo {
            name: "near".into(),
            points: 0..0,
            world_from_scan: Some(nalgebra::Isometry3::identity()),
        },
    ];
    let r = estimate_normals(&mut c, &NormalsParams::default(), &NoProgress).unwrap();
    assert!(c.normals().unwrap().iter().all(|n| n[0] < -0.999));
    let figure = |name: &str| r.figures.iter().find(|f| f.0 == name).unwrap().1;
    assert_eq!(figure("oriented_to_nearest_scanner"), 100.0);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    c.meta.scans.clear();
    let p = NormalsParams {
        viewpoint: Some([10.0, 0.0, 0.0]),
        ..Default::default()
    };
    estimate_normals(&mut c, &p, &NoProgress).unwrap();
    assert!(c.normals().unwrap().iter().all(|n| n[0] > 0.999));
}
