use std::collections::{HashMap, HashSet};

use super::octree::{self, Cube, Key, Params};
use super::*;
use crate::cloud::Columns;
use crate::export::{ExportOptions, Target, export};
use crate::io::{self, ReadOptions};

/// A deterministic pseudo-random value in [0, 1).
fn rand(i: u64) -> f64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// A floor of 60 m x 40 m and a wall, with `n` points, denser in one corner (as a scan near its scanner), with
/// intensity, colour, class, time and normals.
fn site(origin: [f64; 3], n: usize) -> Cloud {
    let positions: Vec<[f32; 3]> = (0..n)
        .map(|i| {
            let (u, v) = (rand(3 * i as u64), rand(3 * i as u64 + 1));
            let (u, v) = (u * u, v * v);
            if i % 4 == 0 {
                [(60.0 * u) as f32, 40.0, (8.0 * v) as f32]
            } else {
                [(60.0 * u) as f32, (40.0 * v) as f32, 0.0]
            }
        })
        .collect();
    let columns = Columns {
        intensity: Some((0..n).map(|i| (i % 1000) as f32).collect()),
        color: Some((0..n).map(|i| [(i % 65535) as u16, 7, 65535]).collect()),
        classification: Some((0..n).map(|i| (i % 3) as u8 + 1).collect()),
        time: Some((0..n).map(|i| 1e5 + i as f64 * 1e-3).collect()),
        normals: Some(
            (0..n)
                .map(|i| {
                    if i % 4 == 0 {
                        [0.0, -1.0, 0.0]
                    } else {
                        [0.0, 0.0, 1.0]
                    }
                })
                .collect(),
        ),
        positions,
        ..Columns::default()
    };
    Cloud::from_columns(origin, columns).unwrap()
}

fn options() -> ExportOptions {
    ExportOptions {
        target: Target::Copc,
        ..ExportOptions::default()
    }
}

/// Each point in millimetres from `offset` (ties rounded as the file's integers round them).
fn millimetres(cloud: &Cloud, offset: [f64; 3]) -> Vec<[i64; 3]> {
    let mut v: Vec<[i64; 3]> = (0..cloud.len())
        .map(|i| {
            let w = cloud.world(i);
            std::array::from_fn(|k| ((w[k] - offset[k]) * 1000.0).round() as i64)
        })
        .collect();
    v.sort_unstable();
    v
}

/// The points read back from `path` are the map's at the millimetre.
fn same_points(path: &Path, map: &Cloud) -> Cloud {
    let back = io::read(path, None, &ReadOptions::default()).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let offset: [f64; 3] = std::array::from_fn(|k| {
        f64::from_le_bytes(bytes[155 + 8 * k..163 + 8 * k].try_into().unwrap())
    });
    assert_eq!(back.len(), map.len());
    let (a, b) = (millimetres(&back, offset), millimetres(map, offset));
    let diff: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).take(5).collect();
    assert!(diff.is_empty(), "{diff:?}");
    back
}

/// The export reads back as LAZ through the library's own reader, every point once at the millimetre with its
/// attributes, and its hierarchy counts every point.
#[test]
fn a_copc_export_reads_back_as_laz_with_every_point_and_attribute() {
    let dir = tempfile::tempdir().unwrap();
    let map = site([0.0; 3], 60_000);
    let path = dir.path().join("site.copc.laz");
    let done = export(&map, &path, &options()).unwrap();
    assert_eq!(done.shift, None);
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    let back = same_points(&path, &map);
    assert!(
        back.meta.format.as_deref().unwrap_or("").contains("1.4"),
        "{:?}",
        back.meta.format
    );
    let key = |c: &Cloud, i: usize| c.world(i).map(|v| (v * 1000.0).round() as i64);
    let by_place: HashMap<[i64; 3], usize> = (0..map.len()).map(|i| (key(&map, i), i)).collect();
    for j in (0..back.len()).step_by(997) {
        let i = by_place[&key(&back, j)];
        assert_eq!(back.intensity().unwrap()[j], map.intensity().unwrap()[i]);
        assert_eq!(back.color().unwrap()[j], map.color().unwrap()[i]);
        assert_eq!(
            back.classification().unwrap()[j],
            map.classification().unwrap()[i]
        );
        assert!((back.time().unwrap()[j] - map.time().unwrap()[i]).abs() < 1e-9);
        assert_eq!(back.normals().unwrap()[j], map.normals().unwrap()[i]);
    }
    let summary = read(&path).unwrap().unwrap();
    assert_eq!(summary.points, map.len() as u64);
    assert_eq!(summary.levels[0].nodes, 1);
    assert!(summary.levels.len() >= 2, "{summary}");
    assert_eq!(summary.gps_time, [1e5, 1e5 + (map.len() - 1) as f64 * 1e-3]);
    assert!(summary.to_string().contains("level 0"), "{summary}");
}

/// A map far from 0 (UTM-like) keeps its millimetres: the offset is near its centre.
#[test]
fn a_map_far_from_zero_keeps_millimetres() {
    let dir = tempfile::tempdir().unwrap();
    let map = site([500_000.0, 4_000_000.0, 120.0], 5_000);
    let path = dir.path().join("utm.copc.laz");
    export(&map, &path, &options()).unwrap();
    same_points(&path, &map);
    let summary = read(&path).unwrap().unwrap();
    assert!((summary.center[0] - 500_030.0).abs() < 1.0, "{summary}");
}

/// The bytes are the same whatever the thread count.
#[test]
fn the_same_map_gives_the_same_bytes_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let map = site([0.0; 3], 50_000);
    let write_with = |threads: usize, name: &str| {
        let path = dir.path().join(name);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| export(&map, &path, &options()).unwrap());
        std::fs::read(path).unwrap()
    };
    assert_eq!(write_with(1, "a.copc.laz"), write_with(4, "b.copc.laz"));
}

/// An empty map and a folder that cannot be written are refused, and nothing is left behind.
#[test]
fn an_empty_map_or_an_unwritable_folder_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.copc.laz");
    let err = export(&Cloud::with_origin([0.0; 3]), &path, &options()).unwrap_err();
    assert!(matches!(err, ExportError::EmptyMap { .. }), "{err}");
    assert!(err.is_bad_input());
    assert!(!path.exists());
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, b"x").unwrap();
    let path = blocked.join("map.copc.laz");
    let err = export(&site([0.0; 3], 100), &path, &options()).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let err = export(
        &site([0.0; 3], 100),
        &dir.path().join("map.laz"),
        &options(),
    )
    .unwrap_err();
    assert!(err.to_string().contains(".copc.laz"), "{err}");
}

/// Every point is in exactly one node, parents come before their children, each node's points lie in its
/// cube, and the points of depths 0..=d hold a point in every cell of depth d's grid that holds a map point:
/// each level is a uniform subsample, however uneven the map.
#[test]
fn every_level_covers_every_occupied_cell_and_every_point_is_written_once() {
    let map = site([0.0; 3], 40_000);
    let grid: Vec<[i32; 3]> = (0..map.len())
        .map(|i| map.world(i).map(|v| (v * 1000.0).round() as i32))
        .collect();
    let cube = Cube::around(&grid).unwrap();
    let params = Params {
        grid: 16,
        leaf_points: 300,
    };
    let nodes = octree::build(&grid, &cube, &params);
    let mut seen = vec![false; grid.len()];
    let mut keys = HashSet::new();
    for n in &nodes {
        assert!(
            n.key == Key::ROOT || keys.contains(&parent(n.key)),
            "{:?}",
            n.key
        );
        keys.insert(n.key);
        let edge = cube.edge / f64::from(1 << n.key.d);
        let at = [n.key.x, n.key.y, n.key.z];
        for &i in &n.points {
            assert!(
                !std::mem::replace(&mut seen[i as usize], true),
                "point {i} twice"
            );
            for k in 0..3 {
                let lo = cube.min[k] + f64::from(at[k]) * edge;
                assert!((lo..=lo + edge).contains(&f64::from(grid[i as usize][k])));
            }
        }
    }
    assert!(seen.iter().all(|&s| s));
    let depth = nodes.iter().map(|n| n.key.d).max().unwrap();
    assert!(depth >= 3, "the test map must reach depth 3, not {depth}");
    let cell_of = |i: u32, d: i32| {
        let cell = cube.edge / f64::from(params.grid) / f64::from(1 << d);
        let last = (i64::from(params.grid) << d) - 1;
        std::array::from_fn::<i64, 3, _>(|k| {
            (((f64::from(grid[i as usize][k]) - cube.min[k]) / cell).floor() as i64).min(last)
        })
    };
    for d in 0..depth {
        let occupied: HashSet<[i64; 3]> = (0..grid.len() as u32).map(|i| cell_of(i, d)).collect();
        let covered: HashSet<[i64; 3]> = nodes
            .iter()
            .filter(|n| n.key.d <= d)
            .flat_map(|n| n.points.iter().map(|&i| cell_of(i, d)))
            .collect();
        assert_eq!(covered, occupied, "depth {d}");
    }
}

fn parent(k: Key) -> Key {
    Key {
        d: k.d - 1,
        x: k.x >> 1,
        y: k.y >> 1,
        z: k.z >> 1,
    }
}

/// A plain LAZ file is not COPC: `read` says so rather than failing.
#[test]
fn a_plain_laz_file_is_not_copc() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.laz");
    io::write(
        &site([0.0; 3], 100),
        &path,
        None,
        &io::WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(read(&path).unwrap(), None);
    assert!(is_copc_name(Path::new("a/B.COPC.LAZ")) && !is_copc_name(&path));
}
