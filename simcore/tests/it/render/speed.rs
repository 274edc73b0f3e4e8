//! Speed (one-off: `cargo test --release -p aerie-simcore --test it render::speed -- --ignored --nocapture`;
//! the per-sensor table with presets is `aerie bench scan`).

use super::*;

#[test]
#[ignore = "a timing, not a check: run it in release with --ignored --nocapture"]
fn speed() {
    let ph = Physics {
        max_range_m: 100.0,
        ..physics()
    };
    let sizes: Vec<usize> = std::env::var("AERIE_SPEED_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or(vec![1_000_000, 5_000_000]);
    for n in sizes {
        // The procedural scene `aerie bench scan` uses (ground, walls, pillars, boxes; the middle kept free).
        let map = aerie_simcore::synthetic::synthetic_map(n, 0.05, 1).expect("synthetic map");
        let pose = pose_from_xyz_rpy(0.0, 0.0, 1.5, 0.0, 0.0, 0.3);
        let t = std::time::Instant::now();
        let index = render::BeamIndex::build(&map.view());
        println!(
            "map {} points, {} buckets; beam index {:.0} ms, {} MB",
            map.positions.len(),
            map.buckets.len(),
            t.elapsed().as_secs_f64() * 1e3,
            index.memory_bytes() >> 20
        );
        for (name, beams) in [
            ("64x1024", spinning(64, 1024)),
            ("128x2048", spinning(128, 2048)),
            ("random 24k", random_dirs(24_000, 3)),
        ] {
            for method in [Method::Splat, Method::Beam] {
                if std::env::var("AERIE_SPEED_METHOD")
                    .is_ok_and(|m| !format!("{method:?}").eq_ignore_ascii_case(&m))
                {
                    continue;
                }
                let p = RenderParams {
                    method,
                    debug: true,
                    ..RenderParams::default()
                };
                let mut renderer = Renderer::new(&beams, &ph, &p);
                let mut frame = renderer.render(&map.view(), &Static(pose), 0.0, 0).unwrap();
                let t = std::time::Instant::now();
                let reps = 5;
                for f in 0..reps {
                    frame = renderer.render(&map.view(), &Static(pose), 0.0, f).unwrap();
                }
                let ms = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
                let auto =
                    render::choose_method(&map.view(), &beams, &ph, &RenderParams::default());
                println!(
                    "{n:>8} pts  {name:<11} {method:?}: {ms:8.1} ms/frame, {} points, {} rasterised (auto picks {auto:?})",
                    frame.points.len(),
                    frame.debug.as_ref().map_or(0, |d| d.points_rasterised)
                );
            }
        }
    }
}
