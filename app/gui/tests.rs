//! The app driven through its workflow with egui's test harness, as a person would: import a shared real scan,
//! preview and run the cleaning, read the counts, save the map, click a goal in the viewport, fly a few seconds
//! with a Mid-360, export a MARSIM PCD. The viewport runs on its CPU path here (the harness has no GPU); the
//! screenshot test in tests/gui/main.rs covers the wgpu path in a real window.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use aerie_simcore::record::Compression;
use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::Launch;
use super::action::Step;
use super::app::AerieApp;

fn harness(files: Vec<PathBuf>) -> Harness<'static, AerieApp> {
    Harness::builder()
        .with_size(egui::vec2(1400.0, 900.0))
        .build_eframe(move |cc| {
            AerieApp::new(
                cc,
                Launch {
                    files,
                    ..Launch::default()
                },
            )
        })
}

/// Steps the app until `done` holds (background work finishes between frames), at most `limit`.
fn run_until(
    h: &mut Harness<'static, AerieApp>,
    limit: Duration,
    done: impl Fn(&AerieApp) -> bool,
) {
    let t0 = Instant::now();
    // Input given before this call is handled in the next frame.
    h.step();
    while !done(h.state()) {
        assert!(
            t0.elapsed() < limit,
            "the app did not get there within {limit:?}; log: {:?}",
            log(h.state())
        );
        h.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    h.step();
}

fn log(app: &AerieApp) -> Vec<String> {
    app.log
        .iter()
        .map(|l| format!("{}{}", if l.error { "ERROR " } else { "" }, l.text))
        .collect()
}

fn click_at(h: &Harness<'static, AerieApp>, pos: egui::Pos2) {
    for pressed in [true, false] {
        h.event(egui::Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn import_clean_fly_and_export_lone_star() {
    // The shared data folder, as the build script found it (tests/support/build_cfg.rs).
    let scan = std::path::Path::new(env!("AERIE_SHARED_DATA_DIR")).join("las/lone_star_tls.laz");
    let out = tempfile::tempdir().unwrap();
    let mut h = harness(vec![scan]);
    let long = Duration::from_secs(300);
    run_until(&mut h, long, |a| !a.busy());
    assert_eq!(h.state().doc.files().len(), 1, "{:?}", log(h.state()));
    h.get_by_label("lone_star_tls.laz");

    // Clean: preview what outlier removal drops, then run the recipe.
    h.get_by_label("2  Clean").click();
    h.step();
    h.get_by_label("Preview outliers").click();
    run_until(&mut h, long, |a| {
        a.panels.clean.preview_counts(&a.doc).is_some()
    });
    let (removed, total) = h
        .state()
        .panels
        .clean
        .preview_counts(&h.state().doc)
        .unwrap();
    assert!(removed > 0 && removed < total / 10, "{removed} of {total}");
    h.get_by_label_contains("would remove");
    h.get_by_label("Run cleaning").click();
    run_until(&mut h, long, |a| a.doc.map().is_some() && !a.busy());
    assert_eq!(h.state().step, Step::Map);
    let m = h.state().doc.map().unwrap();
    assert_eq!(m.points_in, total);
    let points_out = m.packed.len();
    assert!(points_out > 10_000 && points_out < total);

    // The counts are on screen (the Clean panel shows them).
    h.get_by_label("2  Clean").click();
    h.step();
    h.get_by_label(&format!("points in {total} -> points out {points_out}"));

    // Save the map, as `aerie prepare` would.
    h.get_by_label("3  Map").click();
    let amap = out.path().join("lone.amap");
    h.state_mut().panels.map.save_path = amap.display().to_string();
    h.step();
    h.get_by_label("Save .amap").click();
    run_until(&mut h, long, |a| !a.busy());
    assert!(
        amap.is_file() && out.path().join("lone.report.json").is_file(),
        "{:?}",
        log(h.state())
    );

    // Simulate: a click in the viewport sets the goal; then start and goal on the ground either side of the tree.
    h.get_by_label("4  Simulate").click();
    h.step();
    let target = h.state().layers.map().unwrap().points[0].pos;
    h.state_mut().view.camera.target = target;
    h.step();
    let centre = h
        .state()
        .view
        .last_rect
        .expect("the viewport was drawn")
        .center();
    click_at(&h, centre);
    h.step();
    assert!(
        h.state().panels.simulate.goal.is_some(),
        "a click in the viewport sets the goal"
    );
    let (start, goal) = ground_pair(h.state());
    h.state_mut().panels.simulate.start = Some(start);
    h.state_mut().panels.simulate.goal = Some(goal);
    h.state_mut().panels.simulate.sensor = "mid360".into();
    h.state_mut().panels.simulate.speed_x = 0.0;
    // Saved as `aerie fly -o run --compression lz4` would.
    let run = out.path().join("run");
    h.state_mut().panels.simulate.record = true;
    h.state_mut().panels.simulate.record_dir = run.display().to_string();
    // Two frames: egui lays out a panel's new widgets in the frame after they appear.
    h.step();
    h.step();
    h.get_by_label("lz4").click();
    h.step();
    assert_eq!(
        h.state().panels.simulate.recording.compression,
        Compression::Lz4
    );
    h.get_by_label("Fly").click();
    run_until(&mut h, long, |a| {
        a.panels.simulate.snap.t > 3.0 || a.panels.simulate.snap.finished
    });
    assert!(
        h.state().panels.simulate.snap.error.is_none(),
        "{:?}",
        h.state().panels.simulate.snap.error
    );
    assert!(
        !h.state().panels.simulate.scan_points().is_empty(),
        "the live scan is drawn"
    );
    assert!(h.state().panels.simulate.snap.plot.len() > 20);
    assert!(
        h.state().panels.simulate.snap.scan.len() > 1000,
        "a Mid-360 frame has returns"
    );
    h.get_by_label("Stop").click();
    run_until(&mut h, long, |a| a.panels.simulate.snap.finished);
    // The events as they happened, and the recording saved with them.
    let events = &h.state().panels.simulate.snap.events;
    assert!(
        events
            .first()
            .is_some_and(|e| e.describe().contains("took off")),
        "{events:?}"
    );
    assert_eq!(
        h.state().panels.simulate.snap.saved.as_deref(),
        Some(run.as_path())
    );
    for file in [
        "flight.mcap",
        "events.jsonl",
        "summary.json",
        "uav.tum",
        "flight.png",
    ] {
        assert!(run.join(file).is_file(), "{file} not saved");
    }
    // Each chunk record names its compression as a length-prefixed string.
    let mcap = std::fs::read(run.join("flight.mcap")).unwrap();
    let names = |codec: &str| {
        let tag = [&(codec.len() as u32).to_le_bytes()[..], codec.as_bytes()].concat();
        mcap.windows(tag.len())
            .filter(|w| *w == tag.as_slice())
            .count()
    };
    assert!(names("lz4") > 0 && names("zstd") == 0, "chunks not lz4");

    // Export for MARSIM.
    h.get_by_label("5  Export").click();
    let pcd = out.path().join("lone_marsim.pcd");
    h.state_mut().panels.export.path = pcd.display().to_string();
    h.step();
    h.get_by_label("Export").click();
    run_until(&mut h, long, |a| !a.busy());
    let head = std::fs::read(&pcd).expect("the PCD was written");
    let text = String::from_utf8_lossy(&head[..400.min(head.len())]).to_string();
    assert!(
        text.contains("FIELDS x y z\n") && text.contains(&format!("POINTS {points_out}")),
        "{text}"
    );
}

/// Two ground points 8 m either side of the map's middle, view-local.
fn ground_pair(app: &AerieApp) -> ([f32; 3], [f32; 3]) {
    let layer = app.layers.map().unwrap();
    let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
    for p in layer.points.iter() {
        for k in 0..2 {
            lo[k] = lo[k].min(p.pos[k]);
            hi[k] = hi[k].max(p.pos[k]);
        }
    }
    let c = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
    let lowest_near = |x: f32, y: f32| {
        *layer
            .points
            .iter()
            .map(|p| &p.pos)
            .filter(|p| (p[0] - x).hypot(p[1] - y) < 1.0)
            .min_by(|a, b| a[2].total_cmp(&b[2]))
            .expect("ground points there")
    };
    (lowest_near(c[0] - 8.0, c[1]), lowest_near(c[0] + 8.0, c[1]))
}

#[test]
fn a_bad_file_is_an_error_in_the_window_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.las");
    std::fs::write(&bad, b"LASF but not really a LAS file").unwrap();
    let missing = dir.path().join("missing.pcd");
    let mut h = harness(vec![bad, missing]);
    run_until(&mut h, Duration::from_secs(30), |a| !a.busy());
    let errors: Vec<_> = h
        .state()
        .log
        .iter()
        .filter(|l| l.error)
        .map(|l| l.text.clone())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("broken.las") && errors[1].contains("missing.pcd"),
        "{errors:?}"
    );
    assert!(h.state().doc.files().is_empty());
    h.get_by_label_contains("missing.pcd");
}

#[test]
fn the_empty_window_invites_a_drop_and_steps_wait_for_data() {
    let mut h = harness(Vec::new());
    h.run_steps(3);
    h.get_by_label_contains("Drop scan files");
    h.get_by_label("2  Clean").click();
    h.step();
    assert_eq!(h.state().step, Step::Import, "Clean needs files first");
}

#[test]
fn removing_the_last_file_forgets_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let far = dir.path().join("far.xyz");
    let lines: String = (0..200)
        .map(|i| format!("{} {} 12.5\n", 500_000.0 + i as f64 * 0.1, 4_100_000.0))
        .collect();
    std::fs::write(&far, lines).unwrap();
    let mut h = harness(vec![far]);
    run_until(&mut h, Duration::from_secs(30), |a| !a.busy());
    assert_eq!(h.state().doc.files().len(), 1, "{:?}", log(h.state()));
    assert!(h.state().doc.view_origin().is_some());
    // A point clicked relative to the old origin would land anywhere in the next map.
    h.state_mut().panels.simulate.goal = Some([1.0, 2.0, 3.0]);
    h.get_by_label("remove").click();
    h.run_steps(2);
    assert!(h.state().doc.files().is_empty());
    assert!(
        h.state().doc.view_origin().is_none(),
        "the next file must not be drawn around the removed one's origin"
    );
    assert_eq!(h.state().panels.simulate.goal, None);
    assert!(
        log(h.state()).iter().any(|l| l.starts_with("removed ")),
        "{:?}",
        log(h.state())
    );
}

#[test]
fn a_long_message_is_cut_short_beside_the_count_not_under_it() {
    let mut h = harness(Vec::new());
    let long = format!(
        "warning: {}",
        "a very long message about the scan ".repeat(20)
    );
    h.state_mut().info(long.clone());
    h.run_steps(3);
    let message = h.get_by_label(&long).rect();
    let count = h.get_by_label("0 points drawn").rect();
    assert!(
        message.max.x <= count.min.x,
        "the message {message:?} runs under the count {count:?}"
    );
}
