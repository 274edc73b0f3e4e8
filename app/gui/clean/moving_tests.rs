//! The option and its preview, drawn alone over a small scene: a floor and a wall seen from two poses, and a
//! person (a box of points) that only the first scan saw, standing where the second scan's rays pass.

use std::time::Duration;

use aerie_pipeline::cloud::ScanInfo;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use nalgebra::{Isometry3, Vector3};

use super::super::super::panel::testing::{Alone, doc_with_scan, harness};
use super::super::*;
use super::*;

/// Where the scene's points are, relative to the cloud's origin (poses are in the world, as readers give them).
const ORIGIN: [f64; 3] = [500.0, 300.0, 20.0];
/// The person: a box 0.5 x 0.5 x 1.7 m in the middle of the floor (local metres).
const PERSON: ([f32; 3], [f32; 3]) = ([4.75, 4.75, 0.0], [5.25, 5.25, 1.7]);

/// A scanner 1 m up at x 8 (local), looking towards -x; with `right` false, given the wrong way round
/// (sensor_from_world for world_from_sensor).
fn pose(y: f64, right: bool) -> Isometry3<f64> {
    let world_from_sensor = Isometry3::new(
        Vector3::new(ORIGIN[0] + 8.0, ORIGIN[1] + y, ORIGIN[2] + 1.0),
        Vector3::z() * std::f64::consts::PI,
    );
    if right {
        world_from_sensor
    } else {
        world_from_sensor.inverse()
    }
}

/// Whether the segment from `a` to `b` passes through the box `lo..hi` (slab test).
fn crosses(a: [f32; 3], b: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> bool {
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for k in 0..3 {
        let d = b[k] - a[k];
        if d.abs() < 1e-9 {
            if a[k] < lo[k] || a[k] > hi[k] {
                return false;
            }
            continue;
        }
        let (u, v) = ((lo[k] - a[k]) / d, (hi[k] - a[k]) / d);
        t0 = t0.max(u.min(v));
        t1 = t1.min(u.max(v));
    }
    t0 < t1
}

/// The static points: a 10 x 10 m floor and a 2.5 m wall at x 0, 0.1 m apart.
fn statics() -> Vec<[f32; 3]> {
    let at = |i: usize| i as f32 * 0.1 + 0.05;
    let floor = (0..100 * 100).map(|i| [at(i % 100), at(i / 100), 0.0]);
    let wall = (0..100 * 25).map(|i| [0.0, at(i % 100), at(i / 100)]);
    floor.chain(wall).collect()
}

/// The person's surface, 5 cm apart.
fn person() -> Vec<[f32; 3]> {
    let (lo, hi) = PERSON;
    let mut out = Vec::new();
    for i in 0..=10 {
        for j in 0..=34 {
            let (s, z) = (lo[0] + i as f32 * 0.05, j as f32 * 0.05);
            out.extend([[s, lo[1], z], [s, hi[1], z], [lo[0], s, z], [hi[0], s, z]]);
        }
        for j in 0..=10 {
            out.push([lo[0] + i as f32 * 0.05, lo[1] + j as f32 * 0.05, hi[2]]);
        }
    }
    out
}

/// The scene as one file of two scans (scan 1 with the person, scan 2 without), each with its pose unless
/// `poses` is false; with `right` false the poses are given the wrong way round. Returns the document and, per
/// point, whether it is the person's.
fn scene(poses: bool, right: bool) -> (Document, Vec<bool>) {
    let (cloud, is_person) = scene_cloud(poses, right);
    let mut doc = Document::default();
    doc.add_scan("hall.e57".into(), cloud, String::new());
    (doc, is_person)
}

/// The scene's points and scans, and per point whether it is the person's.
fn scene_cloud(poses: bool, right: bool) -> (Cloud, Vec<bool>) {
    let sensor = |y: f32| [8.0, y, 1.0];
    let (lo, hi) = PERSON;
    // A point is hidden when the ray to it passes through the person (shrunk 1 cm, so its own surface shows).
    let shrunk = (lo.map(|v| v + 0.01), hi.map(|v| v - 0.01));
    let seen = |s: [f32; 3], p: &[f32; 3]| !crosses(s, *p, shrunk.0, shrunk.1);
    let mut first: Vec<[f32; 3]> = person()
        .into_iter()
        .filter(|p| seen(sensor(4.0), p))
        .collect();
    let people = first.len();
    first.extend(statics().into_iter().filter(|p| seen(sensor(4.0), p)));
    let second = statics();
    let (n0, n1) = (first.len(), second.len());
    let is_person = (0..n0 + n1).map(|i| i < people).collect();
    let mut cloud = Cloud::from_positions(ORIGIN, first.into_iter().chain(second).collect());
    cloud.meta.scans = [(0..n0, 4.0), (n0..n0 + n1, 6.0)]
        .into_iter()
        .enumerate()
        .map(|(i, (points, y))| ScanInfo {
            name: format!("scan {}", i + 1),
            points,
            world_from_scan: poses.then(|| pose(y, right)),
        })
        .collect();
    (cloud, is_person)
}

type H = Harness<'static, Alone<CleanPanel>>;

/// Steps the harness until the panel's job has finished and its result is taken in.
fn settle(h: &mut H) {
    // A guard against a job that never ends, not a bound on its speed.
    for _ in 0..30_000 {
        h.step();
        if !h.state().panel.busy() {
            h.run_steps(2);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the job did not end");
}

fn disabled(h: &H, label: &str) -> bool {
    h.get_by_label(label).accesskit_node().is_disabled()
}

/// The masks of the last preview of moving things the panel sent.
fn moving_masks(h: &H) -> Vec<Vec<bool>> {
    let mut sent = h.state().actions.sent().iter().rev();
    sent.find_map(|a| match a {
        Action::ShowMoving(m) => Some(m.clone()),
        _ => None,
    })
    .expect("the preview sent its masks")
}

#[test]
fn with_poses_the_preview_paints_the_person_and_not_the_floor() {
    let (doc, is_person) = scene(true, true);
    let mut h = harness(CleanPanel::new(Recipe::default()), doc);
    h.run_steps(2);
    assert!(!disabled(&h, "remove moving things"));
    assert!(disabled(&h, "Preview moving things"), "off until chosen");
    h.get_by_label("remove moving things").click();
    h.run_steps(2);
    assert_eq!(
        h.state().panel.recipe.stages[0],
        Stage::Moving,
        "it runs first"
    );
    h.get_by_label("2 scans with poses");
    h.get_by_label("Preview moving things").click();
    settle(&mut h);
    let masks = moving_masks(&h);
    assert_eq!(masks.len(), 1);
    let marked = |person: bool| {
        let both = masks[0].iter().zip(&is_person);
        both.filter(|(m, p)| **m && **p == person).count()
    };
    let people = is_person.iter().filter(|p| **p).count();
    assert!(
        marked(true) * 2 > people,
        "{} of the person's {people} points marked",
        marked(true)
    );
    assert_eq!(marked(false), 0, "static points marked");
    let shown = h.state().panel.moving.shown(&h.state().doc).unwrap();
    assert!(shown.warnings.is_empty(), "{:?}", shown.warnings);
    let line = format!(
        "would remove {} of {} points as moving (white)",
        marked(true),
        is_person.len()
    );
    h.get_by_label(&line);
}

#[test]
fn scans_in_files_of_their_own_are_classified_together_and_marked_file_by_file() {
    // One PCD per scan with its VIEWPOINT reads as this: a cloud whose one scan covers it, with the pose.
    let (cloud, is_person) = scene_cloud(true, true);
    let mut doc = Document::default();
    for (i, scan) in cloud.meta.scans.iter().enumerate() {
        let indices: Vec<usize> = scan.points.clone().collect();
        let mut part = cloud.select(&indices);
        part.meta.scans = vec![ScanInfo {
            points: 0..part.len(),
            ..scan.clone()
        }];
        doc.add_scan(format!("scan{}.pcd", i + 1).into(), part, String::new());
    }
    let first = cloud.meta.scans[0].points.len();
    let mut recipe = Recipe::default();
    recipe.stages.insert(0, Stage::Moving);
    let mut h = harness(CleanPanel::new(recipe), doc);
    h.run_steps(2);
    h.get_by_label("2 scans with poses");
    h.get_by_label("Preview moving things").click();
    settle(&mut h);
    let masks = moving_masks(&h);
    assert_eq!(
        masks.iter().map(Vec::len).collect::<Vec<_>>(),
        [first, cloud.len() - first]
    );
    let person: Vec<bool> = masks[0]
        .iter()
        .zip(&is_person)
        .map(|(m, p)| *m && *p)
        .collect();
    assert_eq!(
        person, masks[0],
        "only the person is marked in the first file"
    );
    assert!(person.iter().any(|m| *m) && !masks[1].iter().any(|m| *m));
}

#[test]
fn poses_given_the_wrong_way_round_are_warned_about_in_the_panel() {
    let (doc, _) = scene(true, false);
    let mut recipe = Recipe::default();
    recipe.stages.insert(0, Stage::Moving);
    let mut h = harness(CleanPanel::new(recipe), doc);
    h.run_steps(2);
    h.get_by_label("Preview moving things").click();
    settle(&mut h);
    h.get_by_label_contains("sensor poses lie outside the points' bounds");
    let sent = h.state().actions.sent();
    assert!(
        sent.iter()
            .any(|a| matches!(a, Action::Log(l) if l.error && l.text.contains("outside the points' bounds"))),
        "the warning is logged as one the user must see"
    );
}

#[test]
fn without_poses_the_option_is_off_with_what_is_missing_and_how_to_give_it() {
    let mut h = harness(CleanPanel::new(Recipe::default()), doc_with_scan());
    h.run_steps(2);
    assert!(disabled(&h, "remove moving things"));
    assert!(disabled(&h, "Preview moving things"));
    h.get_by_label_contains("grid.xyz does not say where its points were seen from");
    h.get_by_label_contains("aerie prepare --remove-moving --poses FILE");
    // Scans without their poses say so too.
    let (doc, _) = scene(false, true);
    let mut h = harness(CleanPanel::new(Recipe::default()), doc);
    h.run_steps(2);
    assert!(disabled(&h, "remove moving things"));
    h.get_by_label_contains("2 of the 2 scans of hall.e57 have no pose");
    // A recipe that has it on already (saved, loaded) can still turn it off, and says the cleaning would stop.
    let mut recipe = Recipe::default();
    recipe.stages.insert(0, Stage::Moving);
    let mut h = harness(CleanPanel::new(recipe), doc_with_scan());
    h.run_steps(2);
    assert!(!disabled(&h, "remove moving things"));
    h.get_by_label_contains("Cleaning will stop here");
    h.get_by_label("remove moving things").click();
    h.run_steps(2);
    assert!(!h.state().panel.recipe.stages.contains(&Stage::Moving));
}

#[test]
fn cleaning_with_the_option_removes_what_the_preview_showed_and_reports_how_many() {
    let (doc, is_person) = scene(true, true);
    let recipe = Recipe {
        stages: vec![Stage::Moving],
        ..Recipe::default()
    };
    let mut h = harness(CleanPanel::new(recipe), doc);
    h.run_steps(2);
    h.get_by_label("Preview moving things").click();
    settle(&mut h);
    let previewed = h
        .state()
        .panel
        .moving
        .shown(&h.state().doc)
        .unwrap()
        .removed;
    let people = is_person.iter().filter(|p| **p).count();
    assert!(previewed * 2 > people, "{previewed} of {people}");
    h.get_by_label("Run cleaning").click();
    settle(&mut h);
    let map = h
        .state_mut()
        .actions
        .take()
        .into_iter()
        .find_map(|a| match a {
            Action::SetMap(m) => Some(m),
            _ => None,
        });
    let map = map.expect("the cleaning made a map");
    let report = map.reports.iter().find(|r| r.stage == "filters.moving");
    let removed: usize = report.unwrap().removed.iter().map(|(_, n)| n).sum();
    assert_eq!(
        removed, previewed,
        "the cleaning removes what the preview showed"
    );
    assert_eq!(map.packed.len(), map.points_in - removed);
    // The report in the panel counts them.
    h.state_mut().doc.set_map(*map);
    h.run_steps(2);
    h.get_by_label(&removed.to_string());
}
