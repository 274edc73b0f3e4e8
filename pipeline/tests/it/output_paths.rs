//! Where outputs go (issue 11, papercuts): every writer creates a missing output directory, and a failed write
//! names the user's path, never the hidden temporary file it writes first.

use std::path::Path;

use aerie_pipeline::io::{self, ReadOptions, WriteOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, NoProgress};

/// A small plane of points with intensity, enough for every format and for a map.
fn plane() -> Cloud {
    let mut positions = Vec::new();
    for i in 0..40 {
        for j in 0..40 {
            positions.push([i as f32 * 0.05, j as f32 * 0.05, 0.0]);
        }
    }
    let mut c = Cloud::from_positions([10.0, 20.0, 0.0], positions);
    c.set_intensity(Some((0..c.len()).map(|i| (i % 100) as f32).collect()))
        .unwrap();
    c
}

/// Names left in `dir` that start like the atomic writer's temporary files.
fn temporaries(dir: &Path) -> Vec<String> {
    walk(dir)
        .into_iter()
        .filter(|n| n.contains(".aerie-tmp"))
        .collect()
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

#[test]
fn every_format_writes_into_a_directory_that_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let cloud = plane();
    for ext in ["las", "laz", "e57", "ply", "pcd", "xyz", "bin"] {
        let out = tmp.path().join(format!("new_{ext}/deeper/scan.{ext}"));
        io::write(&cloud, &out, None, &WriteOptions::default())
            .unwrap_or_else(|e| panic!("{ext}: {e}"));
        let back = io::read(&out, None, &ReadOptions::default()).unwrap();
        assert_eq!(back.len(), cloud.len(), "{ext}");
    }
    assert!(temporaries(tmp.path()).is_empty());
}

#[test]
fn a_map_writes_into_a_directory_that_does_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let prepared = prepare(vec![(plane(), None)], &Recipe::default(), &NoProgress).unwrap();
    let out = tmp.path().join("maps/today/plane.amap");
    aerie_pipeline::map::amap::write(&prepared.map, &out).unwrap();
    assert!(out.is_file());
    assert!(temporaries(tmp.path()).is_empty());
}

#[test]
fn write_errors_name_the_users_path_not_the_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cloud = plane();
    // The output's directory cannot be created: a file stands where it should be.
    let blocker = tmp.path().join("blocker");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let under_file = blocker.join("sub/scan.pcd");
    // The output names an existing directory: the final rename fails.
    let is_dir = tmp.path().join("taken.ply");
    std::fs::create_dir(&is_dir).unwrap();
    for out in [under_file, is_dir] {
        let err = io::write(&cloud, &out, None, &WriteOptions::default())
            .expect_err("the write cannot succeed");
        let msg = err.to_string();
        assert!(
            msg.contains(&out.display().to_string()),
            "does not name {}: {msg}",
            out.display()
        );
        assert!(!msg.contains(".aerie-tmp"), "names the temporary: {msg}");
    }
    assert!(temporaries(tmp.path()).is_empty());
    assert_eq!(
        std::fs::read(&blocker).unwrap(),
        b"not a directory",
        "a failed write touched an existing file"
    );
}
