//! `aerie prepare --remove-moving` (issue 78) as a user runs it, on a small scene ray cast here: a floor, a wall
//! and a person who stands in the first of four scans only, given as one PCD per scan with its VIEWPOINT, as
//! one LAS with point_source_id and a poses file, and as one LAS with GPS time and a TUM trajectory.

use std::path::Path;
use std::process::{Command, Output};

use aerie_pipeline::io::{self, WriteOptions};
use aerie_pipeline::map::amap::AmapFile;
use aerie_pipeline::{Cloud, ExtraDim, ScanInfo};
use nalgebra::{Isometry3, Translation3, UnitQuaternion};

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .expect("run aerie")
}

/// The person: a 0.4 x 0.4 x 1.8 m box.
const PERSON: ([f64; 3], [f64; 3]) = ([2.8, -1.7, 0.0], [3.2, -1.3, 1.8]);

/// Sensor position of scan `s`: 1.5 m up, walking along y = -3.5.
fn sensor(s: usize) -> [f64; 3] {
    [-2.0 + 1.6 * s as f64, -3.5, 1.5]
}

/// First hit along the unit ray `o + t u`: the floor z = 0 (|x|, |y| < 10), the wall x = 8, the person.
fn cast(o: [f64; 3], u: [f64; 3], person: bool) -> Option<f64> {
    let mut best = f64::INFINITY;
    if u[2] < 0.0 {
        let t = -o[2] / u[2];
        if (o[0] + u[0] * t).abs() < 10.0 && (o[1] + u[1] * t).abs() < 10.0 {
            best = best.min(t);
        }
    }
    if u[0] > 0.0 {
        let t = (8.0 - o[0]) / u[0];
        if (o[1] + u[1] * t).abs() < 10.0 && (0.0..3.0).contains(&(o[2] + u[2] * t)) {
            best = best.min(t);
        }
    }
    if person {
        let (lo, hi) = PERSON;
        let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
        for k in 0..3 {
            let (a, b) = ((lo[k] - o[k]) / u[k], (hi[k] - o[k]) / u[k]);
            t0 = t0.max(a.min(b));
            t1 = t1.min(a.max(b));
        }
        if t0 <= t1 {
            best = best.min(t0);
        }
    }
    best.is_finite().then_some(best)
}

/// The points of scan `s` in the world frame (0.75 degree beams, elevations -45 to +7 degrees, 1 cm noise).
fn scan(s: usize) -> Vec<[f32; 3]> {
    let o = sensor(s);
    let mut out = Vec::new();
    for i in 0..480 {
        for j in 0..70 {
            let (az, el) = (
                (i as f64 * 0.75).to_radians(),
                (-45.0 + j as f64 * 0.75).to_radians(),
            );
            let u = [el.cos() * az.cos(), el.cos() * az.sin(), el.sin()];
            if let Some(t) = cast(o, u, s == 0) {
                let t = t + 0.01 * (((i * 7919 + j * 104_729 + s * 31) % 200) as f64 / 100.0 - 1.0);
                out.push([0, 1, 2].map(|k| (o[k] + u[k] * t) as f32));
            }
        }
    }
    out
}

fn pose(s: usize) -> Isometry3<f64> {
    let o = sensor(s);
    Isometry3::from_parts(
        Translation3::new(o[0], o[1], o[2]),
        UnitQuaternion::identity(),
    )
}

/// The four scans as one cloud with GPS time (scan s at s seconds, its beams over 0.05 s) and, when `ids`, a
/// per-point scan index (`point_source_id`).
fn merged(ids_too: bool) -> Cloud {
    let (mut positions, mut ids, mut times) = (Vec::new(), Vec::new(), Vec::new());
    for s in 0..4 {
        let pts = scan(s);
        let n = pts.len();
        times.extend((0..n).map(|k| s as f64 + 0.05 * k as f64 / n as f64));
        ids.extend(std::iter::repeat_n(s as u16, n));
        positions.extend(pts);
    }
    let mut cloud = Cloud::from_positions([0.0; 3], positions);
    cloud.set_time(Some(times)).unwrap();
    if ids_too {
        cloud
            .push_extra(ExtraDim::new("point_source_id", ids))
            .unwrap();
    }
    cloud
}

fn write(cloud: &Cloud, path: &Path) {
    io::write(cloud, path, None, &WriteOptions::default()).unwrap();
}

/// A TUM line for `pose` at time `t`.
fn tum(t: f64, pose: &Isometry3<f64>) -> String {
    let (v, q) = (pose.translation.vector, pose.rotation.coords);
    format!(
        "{t} {} {} {} {} {} {} {}\n",
        v.x, v.y, v.z, q.x, q.y, q.z, q.w
    )
}

/// Map points inside the person's box (above the floor), and on the floor.
fn person_and_floor(map: &Path) -> (usize, usize) {
    let cloud = AmapFile::read(map).unwrap().to_cloud();
    let (lo, hi) = PERSON;
    let inside = (0..cloud.len())
        .map(|i| cloud.world(i))
        .filter(|p| (0..3).all(|k| p[k] > lo[k] && p[k] < hi[k]) && p[2] > 0.2)
        .count();
    let floor = (0..cloud.len())
        .filter(|&i| cloud.world(i)[2].abs() < 0.05)
        .count();
    (inside, floor)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn prepare(inputs: &[&Path], map: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["prepare", "--no-sor"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", map.to_str().unwrap()]);
    args.extend_from_slice(extra);
    aerie(&args)
}

/// One PCD per scan with its VIEWPOINT: the person is removed, the floor stays, and the report counts what was
/// removed by reason; without --remove-moving the person stays.
#[test]
fn remove_moving_takes_the_person_out_of_scans_with_viewpoints() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for s in 0..4 {
        let mut cloud = Cloud::from_positions([0.0; 3], scan(s));
        let n = cloud.len();
        cloud.meta.scans.push(ScanInfo {
            name: format!("scan {s}"),
            points: 0..n,
            world_from_scan: Some(pose(s)),
        });
        let path = dir.path().join(format!("{s:06}.pcd"));
        write(&cloud, &path);
        files.push(path);
    }
    let inputs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    let (kept, clean) = (dir.path().join("kept.amap"), dir.path().join("clean.amap"));
    let o = prepare(&inputs, &kept, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = prepare(&inputs, &clean, &["--remove-moving"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("seen_through"), "{}", text(&o));
    let (person_kept, floor_kept) = person_and_floor(&kept);
    let (person, floor) = person_and_floor(&clean);
    assert!(person_kept > 20, "the scene has a person: {person_kept}");
    assert_eq!(person, 0, "person points left");
    assert!(
        floor as f64 > 0.995 * floor_kept as f64,
        "floor {floor} of {floor_kept}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("clean.report.json")).unwrap())
            .unwrap();
    let text = report.to_string();
    assert!(
        text.contains("filters.moving") && text.contains("seen_through"),
        "{text}"
    );
}

/// One LAS with point_source_id, and with GPS time, matched to a poses file: the person is removed both ways;
/// poses given inverted are warned of.
#[test]
fn remove_moving_matches_a_poses_file_by_scan_index_and_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let by_index = dir.path().join("ids.las");
    write(&merged(true), &by_index);
    let by_time = dir.path().join("timed.las");
    write(&merged(false), &by_time);
    let kitti = dir.path().join("poses.txt");
    let rows: String = (0..4)
        .map(|s| {
            let m = pose(s).to_homogeneous();
            let v: Vec<String> = (0..3)
                .flat_map(|r| (0..4).map(move |c| (r, c)))
                .map(|(r, c)| m[(r, c)].to_string())
                .collect();
            v.join(" ") + "\n"
        })
        .collect();
    std::fs::write(&kitti, rows).unwrap();
    let traj = dir.path().join("traj.tum");
    // The sensor stands still through each scan: a sample at its start and one at its end.
    let lines: String = (0..4)
        .map(|s| tum(s as f64, &pose(s)) + &tum(s as f64 + 0.05, &pose(s)))
        .collect();
    std::fs::write(&traj, lines).unwrap();
    for (input, poses) in [(&by_index, &kitti), (&by_time, &traj)] {
        let map = dir.path().join("map.amap");
        let o = prepare(
            &[input],
            &map,
            &["--remove-moving", "--poses", poses.to_str().unwrap()],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(!text(&o).contains("filters.moving:"), "{}", text(&o));
        let (person, floor) = person_and_floor(&map);
        assert_eq!(person, 0, "{}: person points left", input.display());
        assert!(floor > 1000, "{floor}");
    }
    // The inverse poses (sensor_from_world), a classic slip: the warning says so.
    let inverted = dir.path().join("inverted.tum");
    let lines: String = (0..4).map(|s| tum(s as f64, &pose(s).inverse())).collect();
    std::fs::write(&inverted, lines).unwrap();
    let map = dir.path().join("inv.amap");
    let o = prepare(
        &[&by_time],
        &map,
        &["--remove-moving", "--poses", inverted.to_str().unwrap()],
    );
    assert!(
        text(&o).contains("warning: filters.moving:") && text(&o).contains("inverse"),
        "{}",
        text(&o)
    );
}

/// Without poses, or with a poses file that does not cover the points: exit 2, naming --poses or the file.
#[test]
fn remove_moving_without_poses_names_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let mut cloud = Cloud::from_positions([0.0; 3], scan(1));
    let bare = dir.path().join("bare.las");
    write(&cloud, &bare);
    let map = dir.path().join("m.amap");
    let o = prepare(&[&bare], &map, &["--remove-moving"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--poses"), "{}", text(&o));
    assert!(!map.exists());
    // Times the trajectory does not reach.
    let n = cloud.len();
    cloud.set_time(Some(vec![50.0; n])).unwrap();
    let timed = dir.path().join("late.las");
    write(&cloud, &timed);
    let traj = dir.path().join("short.tum");
    std::fs::write(&traj, tum(0.0, &pose(0)) + &tum(1.0, &pose(1))).unwrap();
    let o = prepare(
        &[&timed],
        &map,
        &["--remove-moving", "--poses", traj.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("short.tum") && text(&o).contains("50.000"),
        "{}",
        text(&o)
    );
    // --poses for nothing.
    let o = prepare(&[&bare], &map, &["--poses", traj.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--remove-moving"), "{}", text(&o));
    assert!(!map.exists());
}
