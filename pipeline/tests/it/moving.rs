//! `filters.moving` (issue 78) on a scene ray cast here: a floor, a wall, a thin pole and a person who stands in
//! the first scan only; and the benchmark layout's round trip.

use aerie_pipeline::dynamic_bench;
use aerie_pipeline::filters::moving::{
    MovingError, MovingParams, Viewpoints, moving_mask, remove_moving,
};
use aerie_pipeline::prepare::{Recipe, Stage, prepare};
use aerie_pipeline::{Cloud, NoProgress, ScanInfo};
use nalgebra::{Isometry3, Translation3, UnitQuaternion};

/// What a ray of the scene hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hit {
    Floor,
    Wall,
    Pole,
    Person,
}

/// First hit along the unit ray `o + t u` (metres): the floor z = 0 (|x|, |y| < 12), the wall x = 9, a pole of
/// radius 4 cm at (2, 2) up to 3 m, and (when `person`) a 0.4 x 0.4 x 1.8 m box at (3, -1.5).
fn cast(o: [f64; 3], u: [f64; 3], person: bool) -> Option<(f64, Hit)> {
    let mut best: Option<(f64, Hit)> = None;
    let mut take = |t: f64, h: Hit| {
        if t > 0.05 && best.is_none_or(|(b, _)| t < b) {
            best = Some((t, h));
        }
    };
    let at = |t: f64| [o[0] + u[0] * t, o[1] + u[1] * t, o[2] + u[2] * t];
    if u[2] < 0.0 {
        let t = -o[2] / u[2];
        let p = at(t);
        if p[0].abs() < 12.0 && p[1].abs() < 12.0 {
            take(t, Hit::Floor);
        }
    }
    if u[0] > 0.0 {
        let t = (9.0 - o[0]) / u[0];
        let p = at(t);
        if p[1].abs() < 12.0 && (0.0..4.0).contains(&p[2]) {
            take(t, Hit::Wall);
        }
    }
    // The pole: |(p - c)_xy| = r.
    let (dx, dy) = (o[0] - 2.0, o[1] - 2.0);
    let a = u[0] * u[0] + u[1] * u[1];
    let b = dx * u[0] + dy * u[1];
    let disc = b * b - a * (dx * dx + dy * dy - 0.04 * 0.04);
    if a > 0.0 && disc >= 0.0 {
        let t = (-b - disc.sqrt()) / a;
        if (0.0..3.0).contains(&at(t)[2]) {
            take(t, Hit::Pole);
        }
    }
    if person {
        let (lo, hi) = ([2.8, -1.7, 0.0], [3.2, -1.3, 1.8]);
        let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
        for k in 0..3 {
            let (ta, tb) = ((lo[k] - o[k]) / u[k], (hi[k] - o[k]) / u[k]);
            t0 = t0.max(ta.min(tb));
            t1 = t1.min(ta.max(tb));
        }
        if t0 <= t1 {
            take(t0, Hit::Person);
        }
    }
    best
}

/// Six scans from a sensor 1.5 m up walking along y = -3.5 (0.5 degree beams, elevations -40 to +10 degrees,
/// 1 cm noise), the person in the first only: the cloud with each scan's range and pose, and what each point is.
fn scene() -> (Cloud, Vec<Hit>) {
    let mut positions = Vec::new();
    let mut hits = Vec::new();
    let mut scans = Vec::new();
    for s in 0..6 {
        let o = [-3.0 + 1.2 * s as f64, -3.5, 1.5];
        let start = positions.len();
        for i in 0..720 {
            for j in 0..100 {
                let az = (i as f64 * 0.5).to_radians();
                let el = (-40.0 + j as f64 * 0.5).to_radians();
                let u = [el.cos() * az.cos(), el.cos() * az.sin(), el.sin()];
                let Some((t, h)) = cast(o, u, s == 0) else {
                    continue;
                };
                // Deterministic noise of +-1 cm.
                let t = t + 0.01 * (((i * 7919 + j * 104_729 + s * 31) % 200) as f64 / 100.0 - 1.0);
                positions.push([0, 1, 2].map(|k| (o[k] + u[k] * t) as f32));
                hits.push(h);
            }
        }
        scans.push(ScanInfo {
            name: format!("scan {s}"),
            points: start..positions.len(),
            world_from_scan: Some(Isometry3::from_parts(
                Translation3::new(o[0], o[1], o[2]),
                UnitQuaternion::identity(),
            )),
        });
    }
    let mut cloud = Cloud::from_positions([0.0; 3], positions);
    cloud.meta.scans = scans;
    (cloud, hits)
}

/// Share of the points of each kind that the mask removes.
fn removed_share(dynamic: &[bool], hits: &[Hit], kind: Hit) -> f64 {
    let of: Vec<bool> = hits
        .iter()
        .zip(dynamic)
        .filter(|(h, _)| **h == kind)
        .map(|(_, &d)| d)
        .collect();
    assert!(!of.is_empty(), "no {kind:?} point in the scene");
    of.iter().filter(|&&d| d).count() as f64 / of.len() as f64
}

/// The person is removed; the floor seen at grazing angles, the wall seen from one side and the thin pole stay.
#[test]
fn removes_the_person_and_keeps_floor_wall_and_pole() {
    let (cloud, hits) = scene();
    let views = Viewpoints::from_scans(&cloud).unwrap();
    let mask = moving_mask(&cloud, &views, &MovingParams::default(), &NoProgress).unwrap();
    let person = removed_share(&mask.dynamic, &hits, Hit::Person);
    let floor = removed_share(&mask.dynamic, &hits, Hit::Floor);
    let wall = removed_share(&mask.dynamic, &hits, Hit::Wall);
    let pole = removed_share(&mask.dynamic, &hits, Hit::Pole);
    assert!(person > 0.8, "person: {person}");
    assert!(floor < 0.002, "floor: {floor}");
    assert!(wall < 0.002, "wall: {wall}");
    assert!(pole < 0.05, "pole: {pole}");
    assert!(mask.stats.warnings.is_empty(), "{:?}", mask.stats.warnings);
}

/// The stage's report counts the removed points by reason, and the removed are exactly the mask's.
#[test]
fn the_report_counts_what_was_removed() {
    let (cloud, _) = scene();
    let (clean, report) = remove_moving(&cloud, &MovingParams::default(), &NoProgress).unwrap();
    let removed = cloud.len() - clean.len();
    assert!(removed > 0);
    assert_eq!(report.removed, vec![("seen_through".to_string(), removed)]);
    assert_eq!(
        (report.points_in, report.points_out),
        (cloud.len(), clean.len())
    );
    // Scan ranges are kept for later stages (normal orientation).
    assert_eq!(clean.meta.scans.len(), 6);
    assert_eq!(clean.meta.scans.last().unwrap().points.end, clean.len());
}

/// One thread or two: the same classification (votes are counts of scans, decided per scan).
#[test]
fn the_result_does_not_depend_on_the_thread_count() {
    let (cloud, _) = scene();
    let views = Viewpoints::from_scans(&cloud).unwrap();
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| moving_mask(&cloud, &views, &MovingParams::default(), &NoProgress).unwrap())
    };
    assert_eq!(run(1), run(2));
}

/// Poses given inverted (sensor_from_world for world_from_sensor) are reported, not silently used.
#[test]
fn inverted_poses_get_a_warning() {
    let (mut cloud, _) = scene();
    for s in &mut cloud.meta.scans {
        s.world_from_scan = s.world_from_scan.map(|p| p.inverse());
    }
    let views = Viewpoints::from_scans(&cloud).unwrap();
    let mask = moving_mask(&cloud, &views, &MovingParams::default(), &NoProgress).unwrap();
    assert!(
        mask.stats.warnings.iter().any(|w| w.contains("inverse")),
        "{:?}",
        mask.stats.warnings
    );
}

/// Without poses the stage names what is missing; in a recipe it runs as `filters.moving`.
#[test]
fn missing_poses_are_a_clear_error_and_the_recipe_stage_runs() {
    let (cloud, _) = scene();
    let bare = Cloud::from_positions([0.0; 3], cloud.positions().to_vec());
    let e = remove_moving(&bare, &MovingParams::default(), &NoProgress).unwrap_err();
    assert!(matches!(e, MovingError::NoPoses { scans: 0, .. }), "{e}");
    assert!(e.to_string().contains("poses file"), "{e}");
    let recipe = Recipe::from_toml(
        "stages = [\"filters.moving\"]\n[filters.moving]\nvoxel_m = 0.1\n",
        std::path::Path::new("r.toml"),
    )
    .unwrap();
    assert_eq!(recipe.stages, vec![Stage::Moving]);
    let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress).unwrap();
    let moving = prepared
        .reports
        .iter()
        .find(|r| r.stage == "filters.moving")
        .unwrap();
    assert!(moving.removed[0].1 > 0);
    let Err(e) = prepare(vec![(bare, None)], &recipe, &NoProgress) else {
        panic!("a cloud without poses was prepared");
    };
    assert!(e.to_string().contains("filters.moving"), "{e}");
}

/// Frames and ground truth written in the benchmark layout read back as the same points, poses and labels.
#[test]
fn benchmark_layout_round_trip() {
    let (cloud, hits) = scene();
    let dir = tempfile::tempdir().unwrap();
    let views = Viewpoints::from_scans(&cloud).unwrap();
    for s in 0..views.len() {
        let idx: Vec<usize> = (0..views.count(s)).map(|k| views.point(s, k)).collect();
        dynamic_bench::write_frame(dir.path(), s, &cloud.select(&idx), views.pose(s)).unwrap();
    }
    let dynamic: Vec<bool> = hits.iter().map(|&h| h == Hit::Person).collect();
    dynamic_bench::write_ground_truth(dir.path(), &cloud, &dynamic).unwrap();
    let back = dynamic_bench::read_sequence(dir.path()).unwrap();
    assert_eq!(back.len(), cloud.len());
    for i in (0..cloud.len()).step_by(97) {
        let (a, b) = (cloud.world(i), back.world(i));
        assert!((0..3).all(|k| (a[k] - b[k]).abs() < 1e-5), "{a:?} {b:?}");
    }
    for (s, scan) in back.meta.scans.iter().enumerate() {
        assert_eq!(scan.points, cloud.meta.scans[s].points);
        let (p, q) = (scan.world_from_scan.unwrap(), *views.pose(s));
        assert!((p.translation.vector - q.translation.vector).norm() < 1e-9);
        assert!(p.rotation.angle_to(&q.rotation) < 1e-9);
    }
    let (gt, labels) = dynamic_bench::read_ground_truth(dir.path()).unwrap();
    assert_eq!((gt.len(), &labels), (cloud.len(), &dynamic));
    // The ground truth scored against itself: everything static kept, nothing dynamic removed.
    let s = dynamic_bench::score(&gt, &labels, &gt).unwrap();
    assert_eq!((s.sa, s.da), (1.0, 0.0));
}
