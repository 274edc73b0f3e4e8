//! The `.bt` writer and reader: a tiny tree's exact bytes, round trips, free space along a scan's rays, and bad
//! input (truncated, corrupted, empty map, resolution out of range, a folder that cannot be written).

use std::path::Path;

use nalgebra::{Isometry3, Translation3, UnitQuaternion};

use super::tree::{self, Leaf};
use super::*;
use crate::ScanInfo;
use crate::export::{ExportOptions, Target, export};

fn options(resolution_m: f64) -> ExportOptions {
    ExportOptions {
        target: Target::Octomap,
        resolution_m: Some(resolution_m),
        ..ExportOptions::default()
    }
}

/// A room's floor and one wall, seen by a scanner at (0.05, 0.05, 1.05) whose points are all the cloud's.
fn room() -> Cloud {
    let mut positions = Vec::new();
    for i in 0..20 {
        for j in 0..20 {
            let (a, b) = (-1.0 + 0.1 * i as f32 + 0.05, -1.0 + 0.1 * j as f32 + 0.05);
            positions.push([a, b, 0.05]);
            positions.push([1.05, a, b + 1.0]);
        }
    }
    let n = positions.len();
    let mut cloud = Cloud::from_positions([0.0; 3], positions);
    cloud.meta.scans.push(ScanInfo {
        name: "scan".into(),
        points: 0..n,
        world_from_scan: Some(Isometry3::from_parts(
            Translation3::new(0.05, 0.05, 1.05),
            UnitQuaternion::identity(),
        )),
    });
    cloud
}

/// The state of the voxel holding `p` (metres), if known.
fn state(leaves: &[Leaf], res: f64, p: [f64; 3]) -> Option<bool> {
    let key = p.map(|c| ((c / res).floor() + tree::KEY_ZERO as f64) as u16);
    let code = tree::morton(key);
    leaves.iter().find_map(|l| {
        let span = 1u64 << (3 * (tree::DEPTH - u32::from(l.depth)));
        (l.code <= code && code < l.code + span).then_some(l.occupied)
    })
}

/// The Morton code sorts voxels in OctoMap's child order: x the lowest bit, then y, then z.
#[test]
fn morton_codes_follow_octomaps_child_order() {
    assert_eq!(morton([1, 0, 0]), 1);
    assert_eq!(morton([0, 1, 0]), 2);
    assert_eq!(morton([0, 0, 1]), 4);
    assert_eq!(morton([2, 0, 0]), 8);
    for key in [[0, 0, 0], [65535, 0, 12345], [32768, 32767, 1], [65535; 3]] {
        assert_eq!(decode_morton(morton(key)), key);
    }
}

/// One occupied voxel at key (32768, 32768, 32768) and a free one beside it at x - 1 (key 32767 = 0x7fff): the
/// occupied voxel is under the root's child 7 (bit 15 of x, y, z set), then child 0 at every level below; the
/// free one under child 6 (bit 15 of y and z), then child 1 (the lower bits of x alone) at every level. The
/// bytes as OctoMap writes them: two per node, two bits per child, lowest bits first.
#[test]
fn a_tiny_tree_has_octomaps_exact_bytes() {
    let occupied = Leaf {
        code: morton([32768; 3]),
        depth: 16,
        occupied: true,
    };
    let free = Leaf {
        code: morton([32767, 32768, 32768]),
        depth: 16,
        occupied: false,
    };
    let mut leaves = vec![occupied, free];
    leaves.sort();
    let (data, nodes) = tree::encode(&tree::prune(leaves.clone()));
    // Root: children 6 and 7 inner (11 at bits 4-5 and 6-7 of the second byte).
    let mut expected = vec![0x00, 0xf0];
    // Child 6's branch: 14 inner nodes with child 1 inner (11 at bits 2-3), then the free leaf as child 1 (01).
    for _ in 0..14 {
        expected.extend([0x0c, 0x00]);
    }
    expected.extend([0x04, 0x00]);
    // Child 7's branch: child 0 inner 14 times, then the occupied leaf as child 0.
    for _ in 0..14 {
        expected.extend([0x03, 0x00]);
    }
    expected.extend([0x02, 0x00]);
    assert_eq!(data, expected);
    assert_eq!(nodes, 1 + 2 * 16);
    let (back, back_nodes) = tree::decode(&data, Path::new("t.bt"), 0).unwrap();
    let mut back = back;
    back.sort();
    assert_eq!((back, back_nodes), (leaves, nodes));
}

/// Eight free siblings become one leaf a level up, and a full cube of 8^2 voxels two levels up; mixed states
/// stay apart.
#[test]
fn pruning_merges_siblings_of_one_state() {
    let cube = |n: u16, occupied: bool| {
        let mut v: Vec<Leaf> = (0..n)
            .flat_map(|x| (0..n).flat_map(move |y| (0..n).map(move |z| [x, y, z])))
            .map(|k| Leaf {
                code: morton(k),
                depth: 16,
                occupied,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        tree::prune(cube(2, false)),
        [Leaf {
            code: 0,
            depth: 15,
            occupied: false
        }]
    );
    assert_eq!(
        tree::prune(cube(4, true)),
        [Leaf {
            code: 0,
            depth: 14,
            occupied: true
        }]
    );
    let mut mixed = cube(2, false);
    mixed[3].occupied = true;
    assert_eq!(tree::prune(mixed.clone()), mixed);
}

/// A map written and read back: the header's figures, every point's voxel occupied, the voxels along the
/// scanner's rays free, and the same bytes when written twice.
#[test]
fn a_room_round_trips_with_its_free_space() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("room.bt");
    let cloud = room();
    let done = export(&cloud, &path, &options(0.1)).unwrap();
    assert_eq!(done.shift, None);
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.starts_with(b"# Octomap OcTree binary file\n"));
    let (summary, leaves) = read(&path).unwrap();
    assert_eq!((summary.id.as_str(), summary.resolution_m), ("OcTree", 0.1));
    assert!(
        summary.occupied_leaves > 0 && summary.free_leaves > 0,
        "{summary:?}"
    );
    for i in 0..cloud.len() {
        assert_eq!(state(&leaves, 0.1, cloud.world(i)), Some(true), "point {i}");
    }
    // Along the ray from the scanner to the wall's point (1.05, 0.05, 1.05), and down to the floor.
    for t in [0.2, 0.5, 0.8] {
        assert_eq!(
            state(&leaves, 0.1, [0.05 + t, 0.05, 1.05]),
            Some(false),
            "t {t}"
        );
        assert_eq!(
            state(&leaves, 0.1, [0.05, 0.05, 1.05 - t]),
            Some(false),
            "t {t}"
        );
    }
    // Behind the wall is unknown.
    assert_eq!(state(&leaves, 0.1, [1.5, 0.05, 1.05]), None);
    let again = dir.path().join("again.bt");
    export(&cloud, &again, &options(0.1)).unwrap();
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
}

/// Without a scanner's position there is no free space: only the points' voxels are known.
#[test]
fn without_poses_only_occupied_voxels_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walls.bt");
    let mut cloud = room();
    cloud.meta.scans.clear();
    let done = export(&cloud, &path, &options(0.2)).unwrap();
    assert_eq!(done.warnings, [crate::export::ExportWarning::NoScannerPose]);
    let (summary, _) = read(&path).unwrap();
    assert_eq!(summary.free_leaves, 0);
    assert!(summary.occupied_leaves > 0);
}

/// A far map is written in a local frame, its shift returned.
#[test]
fn a_far_map_is_moved_into_a_local_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("far.bt");
    let mut cloud = room();
    cloud.origin = [500_000.0, 4_000_000.0, 100.0];
    cloud.meta.scans[0].world_from_scan =
        Some(Isometry3::translation(500_000.05, 4_000_000.05, 101.05));
    let done = export(&cloud, &path, &options(0.1)).unwrap();
    assert_eq!(done.shift, Some([499_999.0, 3_999_999.0, 100.0]));
    let (summary, _) = read(&path).unwrap();
    assert!(summary.free_leaves > 0);
}

/// Every truncation of a valid file, and corrupted bytes, are refused with the file and the place named.
#[test]
fn truncated_or_corrupted_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("room.bt");
    export(&room(), &path, &options(0.1)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for len in (0..bytes.len()).step_by(7) {
        let err = read_bytes(&bytes[..len], Path::new("cut.bt")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("cut.bt: "), "{text}");
        assert!(err.is_bad_input());
    }
    let mut extra = bytes.clone();
    extra.push(0);
    let err = read_bytes(&extra, Path::new("x.bt"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("follow the end of the tree"), "{err}");
    let at = bytes.windows(5).position(|w| w == b"size ").unwrap() + 5;
    let wrong_size = [&bytes[..at], b"1", &bytes[at..]].concat();
    let err = read_bytes(&wrong_size, Path::new("x.bt"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("header `size`"), "{err}");
    let err = read_bytes(
        b"# Octomap OcTree binary file\nid ColorOcTree\nsize 1\nres 0.1\ndata\n\0\0",
        Path::new("c.bt"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ColorOcTree"), "{err}");
}

/// Bad input: an empty map, a resolution out of range or too fine for the map, a wrong name, a folder that cannot
/// be written. Each a clear error, and no file left.
#[test]
fn bad_input_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bt");
    let empty = Cloud::from_positions([0.0; 3], Vec::new());
    let err = export(&empty, &path, &options(0.1)).unwrap_err();
    assert!(err.to_string().contains("has no points"), "{err}");
    for res in [0.0, -1.0, f64::NAN, 0.001, 50.0] {
        let err = export(&room(), &path, &options(res)).unwrap_err();
        assert!(
            err.is_bad_input() && err.to_string().contains("out of range"),
            "{err}"
        );
    }
    let wide = Cloud::from_positions([0.0; 3], vec![[0.0; 3], [2000.0, 0.0, 0.0]]);
    let err = export(&wide, &path, &options(0.05))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spans 2000.0 m") && err.contains("0.062 m or coarser"),
        "{err}"
    );
    let err = export(&room(), &dir.path().join("out.pcd"), &options(0.1)).unwrap_err();
    assert!(err.to_string().contains("must be named .bt"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = export(&room(), &file.join("out.bt"), &options(0.1)).unwrap_err();
    assert!(err.to_string().contains("cannot write"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
