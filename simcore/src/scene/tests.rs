//! Tests of the analytic scenes: exact ray casts and distances for every surface, the stated incidence of the
//! slanted panels, and the scan-like sampling's noise, density and determinism.

use super::*;

#[test]
fn raycast_is_exact() {
    let room = Scene::box_room();
    // From the centre at 1 m height: floor 1 m below, ceiling 2 m above, +x wall 6 m away.
    let o = [0.0, 0.0, 1.0];
    assert!((room.raycast(o, [0.0, 0.0, -1.0]).unwrap() - 1.0).abs() < 1e-12);
    assert!((room.raycast(o, [0.0, 0.0, 2.0]).unwrap() - 2.0).abs() < 1e-12);
    assert!((room.raycast(o, [1.0, 0.0, 0.0]).unwrap() - 6.0).abs() < 1e-12);
    // 45 degrees down toward +y: the floor at 1 m horizontal, sqrt(2) along the ray.
    let t = room.raycast(o, [0.0, 1.0, -1.0]).unwrap();
    assert!((t - 2f64.sqrt()).abs() < 1e-12);
    // A cylinder of radius 0.5 at x = 3 seen along +x from the origin: hit at 2.5 m.
    let s = Scene {
        surfaces: vec![Surface::Cylinder {
            x: 3.0,
            y: 0.0,
            radius: 0.5,
            z0: -1.0,
            z1: 1.0,
        }],
    };
    assert!((s.raycast([0.0; 3], [1.0, 0.0, 0.0]).unwrap() - 2.5).abs() < 1e-12);
    assert!(
        s.raycast([0.0; 3], [1.0, 0.0, 1.0]).is_none(),
        "above the top"
    );
    assert!(s.raycast([0.0; 3], [-1.0, 0.0, 0.0]).is_none(), "behind");
    assert!(s.raycast([0.0; 3], [0.0; 3]).is_none());
    // A hit lies on the surface.
    let g = Scene::ground_with_cylinders();
    for k in 0..200 {
        let a = k as f64 * 0.0314;
        let u = [a.cos(), a.sin(), -0.05 - 0.001 * k as f64];
        if let Some(t) = g.raycast([0.0, 0.0, 1.5], u) {
            let n = V3::from(u).norm();
            let p = [u[0] / n * t, u[1] / n * t, 1.5 + u[2] / n * t];
            assert!(g.distance(p) < 1e-9, "{k}: {p:?}");
        }
    }
}

#[test]
fn tubes_spheres_and_boxes_are_exact() {
    let x = [1.0, 0.0, 0.0];
    type Case = (Surface, [f64; 3], [f64; 3], Option<f64>);
    let cases: [Case; 7] = [
        (
            Surface::Sphere {
                centre: [5.0, 0.0, 0.0],
                radius: 1.0,
            },
            [0.0; 3],
            x,
            Some(4.0),
        ),
        (
            Surface::Sphere {
                centre: [5.0, 0.0, 0.0],
                radius: 1.0,
            },
            [5.0, 0.0, 0.0],
            x,
            Some(1.0),
        ),
        // Turned a quarter about z: 1 m thick along world x, 4 m long along world y.
        (
            Surface::Cuboid {
                centre: [5.0, 0.0, 1.0],
                yaw_rad: PI / 2.0,
                half: [2.0, 0.5, 1.0],
            },
            [0.0, 0.0, 1.0],
            x,
            Some(4.5),
        ),
        (
            Surface::Cuboid {
                centre: [5.0, 0.0, 1.0],
                yaw_rad: PI / 2.0,
                half: [2.0, 0.5, 1.0],
            },
            [5.0, -5.0, 1.0],
            [0.0, 1.0, 0.0],
            Some(3.0),
        ),
        (
            Surface::Tube {
                a: [3.0, -1.0, 0.0],
                b: [3.0, 1.0, 0.0],
                radius: 0.5,
            },
            [0.0; 3],
            x,
            Some(2.5),
        ),
        (
            Surface::Tube {
                a: [3.0, -1.0, 0.0],
                b: [3.0, 1.0, 0.0],
                radius: 0.5,
            },
            [0.0, 2.0, 0.0],
            x,
            None,
        ),
        // Along the axis of an open tube: no wall is met.
        (
            Surface::Tube {
                a: [3.0, -1.0, 0.0],
                b: [3.0, 1.0, 0.0],
                radius: 0.5,
            },
            [3.0, -5.0, 0.0],
            [0.0, 1.0, 0.0],
            None,
        ),
    ];
    for (k, (surface, o, u, want)) in cases.iter().enumerate() {
        let got = surface.raycast(*o, *u);
        match (got, want) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{k}: {g} != {w}"),
            (None, None) => {}
            _ => panic!("{k}: got {got:?}, want {want:?}"),
        }
    }
    // Hits lie on the surface, normals are unit and across the ray's path agree with `distance`.
    let shapes = [
        Surface::Tube {
            a: [1.0, 2.0, 0.0],
            b: [2.0, 3.0, 5.0],
            radius: 0.4,
        },
        Surface::Sphere {
            centre: [1.5, 2.5, 2.0],
            radius: 1.3,
        },
        Surface::Cuboid {
            centre: [1.5, 2.5, 1.0],
            yaw_rad: 0.4,
            half: [1.0, 0.3, 0.8],
        },
    ];
    for (k, shape) in shapes.iter().enumerate() {
        let mut hits = 0;
        for r in 0..400 {
            let a = r as f64 * 0.0157;
            let o = [
                1.5 + 8.0 * a.cos(),
                2.5 + 8.0 * a.sin(),
                0.5 + 0.01 * r as f64,
            ];
            let aim = [
                1.5 + (r % 7) as f64 * 0.1 - 0.3,
                2.5,
                1.0 + (r % 5) as f64 * 0.2,
            ];
            let u = (V3::from(aim) - V3::from(o)).normalize();
            let Some(t) = shape.raycast(o, u.into()) else {
                continue;
            };
            hits += 1;
            let p = V3::from(o) + u * t;
            assert!(shape.distance(p.into()) < 1e-9, "{k}/{r}");
            assert!((V3::from(shape.normal_at(p.into())).norm() - 1.0).abs() < 1e-12);
            // Nothing of the surface lies on the ray before the hit.
            for f in [0.25, 0.5, 0.9, 0.99] {
                assert!(
                    shape.distance((V3::from(o) + u * (t * f)).into()) > 1e-6,
                    "{k}/{r}"
                );
            }
            let (c, radius) = shape.bounding_sphere();
            assert!((p - V3::from(c)).norm() <= radius + 1e-9);
        }
        assert!(hits > 100, "{k}: only {hits} hits");
    }
}

#[test]
fn slanted_panels_have_the_stated_incidence() {
    let s = Scene::slanted_planes();
    let o = V3::new(0.0, 0.0, 1.2);
    for (k, panel) in s.surfaces.iter().skip(1).enumerate() {
        let Surface::Rect { centre, .. } = panel else {
            panic!("panel {k} is not a rectangle");
        };
        let u = (V3::from(*centre) - o).normalize();
        let n = V3::from(panel.normal_at(*centre));
        let incidence = n.dot(&u).abs().acos().to_degrees();
        assert!(
            (incidence - (10.0 + 10.0 * k as f64)).abs() < 1e-9,
            "{k}: {incidence}"
        );
        assert!((panel.raycast(o.into(), u.into()).unwrap() - 6.0).abs() < 1e-9);
    }
}

#[test]
fn scanlike_sampling_is_noisy_denser_near_and_deterministic() {
    let scene = Scene::box_room();
    let origin = [100.0, 200.0, 10.0];
    let scanner = Scanner::new([0.5, 0.3, 1.4], 0.01);
    let a = scene.sample_scanlike(std::slice::from_ref(&scanner), origin, 7);
    let b = scene.sample_scanlike(std::slice::from_ref(&scanner), origin, 7);
    assert_eq!(a.positions(), b.positions());
    assert!(a.len() > 20_000, "{}", a.len());
    assert_eq!(a.meta.scans.len(), 1);
    assert_eq!(a.meta.scans[0].points, 0..a.len());
    // Every point is within a few sigma of a surface; the spread is about sigma.
    let world: Vec<[f64; 3]> = a
        .positions()
        .iter()
        .map(|p| [0, 1, 2].map(|k| p[k] as f64 + origin[k]))
        .collect();
    let d: Vec<f64> = world.iter().map(|&p| scene.distance(p)).collect();
    assert!(
        d.iter().all(|&x| x < 0.07),
        "{}",
        d.iter().copied().fold(0.0, f64::max)
    );
    let rms = (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
    assert!(rms > 0.005 && rms < 0.015, "{rms}");
    // The floor under the scanner is denser than the far wall.
    let count = |f: &dyn Fn(&[f64; 3]) -> bool| world.iter().filter(|p| f(p)).count();
    let near =
        count(&|p| p[2].abs() < 0.05 && (p[0] - 0.5).abs() < 0.5 && (p[1] - 0.3).abs() < 0.5);
    let far = count(&|p| (p[0] + 6.0).abs() < 0.05 && p[1].abs() < 0.5 && (p[2] - 1.5).abs() < 0.5);
    assert!(near > 4 * far, "near {near}, far {far}");
}
