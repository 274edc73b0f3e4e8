//! Determinism, renderers agreeing, physics: the same seed gives the same frame on any thread count, the
//! renderers agree, motion distortion follows the per-beam poses, range limits, dropout, noise and intensity.

use super::*;

fn noisy_physics() -> Physics {
    Physics {
        range_sigma_m: 0.02,
        range_sigma_quadratic: 0.0005,
        angular_sigma_rad: 0.001,
        ..physics()
    }
}

fn moving_trajectory() -> Tum {
    let a = pose_from_xyz_rpy(ORIGIN[0] - 1.0, ORIGIN[1], ORIGIN[2] + 1.2, 0.0, 0.0, 0.0);
    let b = pose_from_xyz_rpy(
        ORIGIN[0] + 1.0,
        ORIGIN[1] + 0.5,
        ORIGIN[2] + 1.3,
        0.05,
        0.0,
        0.8,
    );
    Tum::from_samples(vec![(10.0, a), (10.2, b)]).unwrap()
}

#[test]
fn same_seed_same_frame_on_1_and_2_threads() {
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.1, ORIGIN);
    let beams = spinning(32, 512);
    let traj = moving_trajectory();
    for method in [Method::Splat, Method::Beam] {
        let p = RenderParams {
            seed: 42,
            ..params(method, true)
        };
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                render::render_frame(&map.view(), &beams, &noisy_physics(), &traj, 10.05, 3, &p)
                    .unwrap()
            })
        };
        let (one, two) = (run(1), run(2));
        assert!(one.points.len() > beams.len() / 2);
        assert_eq!(one, two, "{method:?}");
        let other_seed = render::render_frame(
            &map.view(),
            &beams,
            &noisy_physics(),
            &traj,
            10.05,
            3,
            &RenderParams {
                seed: 43,
                ..p.clone()
            },
        )
        .unwrap();
        assert_ne!(one.points, other_seed.points);
        // Another frame index draws other noise too.
        let other_frame =
            render::render_frame(&map.view(), &beams, &noisy_physics(), &traj, 10.05, 4, &p)
                .unwrap();
        assert_ne!(one.points, other_frame.points);
    }
}

#[test]
fn renderers_agree_on_a_simple_scene() {
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.1, ORIGIN);
    let beams = random_dirs(8000, 9);
    let pose = sensor_pose();
    let s = render_static(&map, &beams, &params(Method::Splat, true), &pose);
    let b = render_static(&map, &beams, &params(Method::Beam, true), &pose);
    assert_eq!((s.method, b.method), (Method::Splat, Method::Beam));
    let (rs, rb) = (
        &s.debug.as_ref().unwrap().range_m,
        &b.debug.as_ref().unwrap().range_m,
    );
    let mut diffs: Vec<f32> = rs
        .iter()
        .zip(rb)
        .filter_map(|(a, b)| Some((a.as_ref()? - b.as_ref()?).abs()))
        .collect();
    let agree = rs
        .iter()
        .zip(rb)
        .filter(|(a, b)| a.is_some() == b.is_some())
        .count();
    diffs.sort_by(f32::total_cmp);
    let median = diffs[diffs.len() / 2];
    let within = diffs.iter().filter(|&&d| d < 0.01).count() as f64 / diffs.len() as f64;
    println!(
        "splat vs beam: agree {agree}/{}, median diff {median}, within 1 cm {within}",
        beams.len()
    );
    assert!(agree as f64 > 0.995 * beams.len() as f64);
    assert!(median < 1e-3 && within > 0.98);
}

/// Every beam is cast from the pose at its own firing time, and its point is given in the frame
/// `RenderParams::points_in` names: the sensor at the frame start or at the last firing (the motion
/// compensated), or at the beam's own firing (the motion distortion left in, as a driver gives it).
#[test]
fn motion_distortion_follows_per_beam_poses() {
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.05, ORIGIN);
    let beams = spinning(32, 1024);
    let traj = moving_trajectory();
    let start = 10.0;
    let last = beams.iter().map(|b| b.time_s).fold(0.0f32, f32::max) as f64;
    for method in [Method::Splat, Method::Beam] {
        for points_in in [PointsIn::FrameStart, PointsIn::FrameEnd, PointsIn::Firing] {
            let p = RenderParams {
                points_in,
                ..params(method, true)
            };
            let frame =
                render::render_frame(&map.view(), &beams, &physics(), &traj, start, 0, &p).unwrap();
            let frame_pose = traj.world_from_sensor(match points_in {
                PointsIn::FrameEnd => start + last,
                PointsIn::FrameStart | PointsIn::Firing => start,
            });
            assert_eq!(
                frame.world_from_sensor, frame_pose,
                "{method:?} {points_in:?}"
            );
            let mut errors = Vec::new();
            let mut moved = 0usize;
            for pt in &frame.points {
                let beam = beams[pt.beam as usize];
                assert_eq!((pt.time_s, pt.ring), (beam.time_s, beam.ring));
                // The exact return of this beam from the pose at its own time.
                let pose = traj.world_from_sensor(start + beam.time_s as f64);
                let dir = V3::new(beam.dir[0] as f64, beam.dir[1] as f64, beam.dir[2] as f64);
                let u = pose.rotation * dir.normalize();
                let o = pose.translation.vector - V3::from(ORIGIN);
                let Some(t) = scene.cast(&o, &u) else {
                    continue;
                };
                let seen_from = if points_in == PointsIn::Firing {
                    pose
                } else {
                    frame_pose
                };
                let want = seen_from.inverse() * Point3::from(pose.translation.vector + u * t);
                let got = V3::new(pt.xyz[0] as f64, pt.xyz[1] as f64, pt.xyz[2] as f64);
                errors.push((got - want.coords).norm());
                // A sensor still at the frame's pose would have put the point elsewhere.
                if (dir.normalize() * pt.range_m as f64 - got).norm() > 0.1 {
                    moved += 1;
                }
            }
            errors.sort_by(f64::total_cmp);
            let median = errors[errors.len() / 2];
            let p90 = errors[errors.len() * 9 / 10];
            let slices = frame.debug.as_ref().unwrap().time_slices;
            println!(
                "motion {method:?} {points_in:?}: {} points, median {median:.5} m, p90 {p90:.5} m, \
                 {moved} moved, slices {slices}",
                errors.len()
            );
            assert!(errors.len() > beams.len() * 9 / 10);
            assert!(
                median < 0.002 && p90 < 0.02,
                "{method:?} {points_in:?}: median {median} p90 {p90}"
            );
            if points_in == PointsIn::Firing {
                assert_eq!(moved, 0, "each point where its own pose saw it");
            } else {
                assert!(moved > errors.len() / 2, "the motion must be compensated");
            }
        }
    }
}

#[test]
fn range_limits_dropout_noise_and_intensity() {
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.1, ORIGIN);
    let beams = spinning(32, 512);
    let pose = sensor_pose();
    let p = params(Method::Splat, true);
    let run = |ph: &Physics| {
        render::render_frame(&map.view(), &beams, ph, &Static(pose), 0.0, 0, &p).unwrap()
    };
    let base = run(&physics());
    let limited = run(&Physics {
        min_range_m: 2.0,
        max_range_m: 6.0,
        ..physics()
    });
    assert!(
        limited
            .points
            .iter()
            .all(|q| q.range_m >= 2.0 && q.range_m <= 6.0)
    );
    let expect = base
        .points
        .iter()
        .filter(|q| q.range_m >= 2.0 && q.range_m <= 6.0)
        .count();
    // Not exactly equal: surfaces far beyond the range are culled, which changes a few edge tests.
    assert!(
        limited.points.len().abs_diff(expect) * 200 < expect,
        "{} vs {expect}",
        limited.points.len()
    );
    assert!(expect > 100 && expect < base.points.len() / 2 + base.points.len() / 3);

    // Detection: a 10% target seen out to 3 m, so reflectance 0.6 * cos(incidence) out to 3 m * sqrt(R / 0.1).
    let limit = |r: f32| 3.0 * (r / 0.1).sqrt();
    let dropout = Physics {
        range_10pct_m: 3.0,
        ..physics()
    };
    let kept = run(&dropout);
    assert!(kept.points.len() < base.points.len() && kept.points.len() > base.points.len() / 4);
    for q in &kept.points {
        assert!(q.range_m <= limit(q.intensity) * (1.0 + 1e-5), "{q:?}");
    }
    let dropped = base
        .points
        .iter()
        .filter(|q| q.range_m > limit(q.intensity))
        .count();
    assert_eq!(kept.points.len() + dropped, base.points.len());
    // Intensity is R0 * cos(incidence) <= R0.
    assert!(
        base.points
            .iter()
            .all(|q| q.intensity > 0.0 && q.intensity <= 0.6 + 1e-6)
    );

    // Range noise: the spread of measured minus noise-free range matches sigma.
    let noisy = run(&Physics {
        range_sigma_m: 0.03,
        ..physics()
    });
    let truth = noisy.debug.as_ref().unwrap();
    let d: Vec<f64> = noisy
        .points
        .iter()
        .map(|q| q.range_m as f64 - truth.range_m[q.beam as usize].unwrap() as f64)
        .collect();
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / d.len() as f64).sqrt();
    assert!(
        mean.abs() < 0.002 && (sd - 0.03).abs() < 0.002,
        "mean {mean} sd {sd}"
    );
    // The point lies along its beam at the measured range (static pose).
    for q in noisy.points.iter().take(50) {
        let n = (q.xyz[0].powi(2) + q.xyz[1].powi(2) + q.xyz[2].powi(2)).sqrt();
        assert!((n - q.range_m).abs() < 1e-3);
    }
}

#[test]
fn auto_picks_a_renderer_and_keeps_it() {
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.1, ORIGIN);
    let dense = spinning(64, 1024);
    let sparse = random_dirs(500, 1);
    let ph = physics();
    let p = RenderParams::default();
    // Coarse pixels on a small map: one image is cheaper than marching 65k beams.
    let coarse = RenderParams {
        pixel_rad: Some(0.03),
        lod: false,
        ..p.clone()
    };
    assert_eq!(
        render::choose_method(&map.view(), &dense, &ph, &coarse),
        Method::Splat
    );
    // Default pixels (4 per beam): marching is cheaper, and all the more for a sparse pattern.
    assert_eq!(
        render::choose_method(&map.view(), &dense, &ph, &p),
        Method::Beam
    );
    assert_eq!(
        render::choose_method(&map.view(), &sparse, &ph, &p),
        Method::Beam
    );
    let mut r = Renderer::new(&sparse, &ph, &p);
    assert_eq!(r.method(), None);
    let f = r
        .render(&map.view(), &Static(sensor_pose()), 0.0, 0)
        .unwrap();
    assert_eq!((f.method, r.method()), (Method::Beam, Some(Method::Beam)));
    assert!(f.points.len() > 450);
    let mut r = Renderer::new(&dense, &ph, &coarse);
    let f = r
        .render(&map.view(), &Static(sensor_pose()), 0.0, 0)
        .unwrap();
    assert_eq!((f.method, r.method()), (Method::Splat, Some(Method::Splat)));
    // The choice is kept for the sensor, even on a map where the model would pick the other.
    let big = TestMap::build(&scene, 0.025, ORIGIN);
    assert_eq!(
        render::choose_method(&big.view(), &dense, &ph, &coarse),
        Method::Beam
    );
    assert_eq!(
        r.render(&big.view(), &Static(sensor_pose()), 0.0, 1)
            .unwrap()
            .method,
        Method::Splat
    );
}

#[test]
fn a_renderer_kept_between_frames_renders_what_a_fresh_one_does() {
    // The renderer keeps each frame's beam directions for the next when they carry no jitter; with jitter, or
    // once the pattern changes (Livox), it must draw them again.
    let scene = Scene::room();
    let map = TestMap::build(&scene, 0.1, ORIGIN);
    // As many beams in both patterns: only the change of pattern can tell the kept directions stale.
    let (a, b) = (spinning(16, 256), random_dirs(16 * 256, 9));
    let traj = moving_trajectory();
    let p = RenderParams {
        seed: 7,
        ..params(Method::Beam, true)
    };
    for ph in [physics(), noisy_physics()] {
        let mut r = Renderer::new(&a, &ph, &p);
        let mut kept = |k: u64, beams: Option<&[Beam]>| {
            if let Some(beams) = beams {
                r.set_beams(beams);
            }
            r.render(&map.view(), &traj, 10.05, k).unwrap()
        };
        let fresh = |beams: &[Beam], k: u64| {
            render::render_frame(&map.view(), beams, &ph, &traj, 10.05, k, &p).unwrap()
        };
        for (k, beams, change) in [
            (3, &a, false),
            (4, &a, false),
            (5, &b, true),
            (5, &b, false),
        ] {
            let frame = kept(k, change.then_some(beams.as_slice()));
            assert!(frame.points.len() > beams.len() / 3);
            assert_eq!(
                frame,
                fresh(beams, k),
                "frame {k}, jitter {}",
                ph.angular_sigma_rad
            );
        }
    }
}
