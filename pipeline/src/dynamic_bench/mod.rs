//! The KTH-RPL DynamicMap_Benchmark's layout and score (Zhang, Duberg, Jensfelt, ITSC 2023), so that Aerie's
//! `filters.moving` and its peers (DUFOMap, ERASOR, Removert...) are run and scored on the same files.
//!
//! A sequence is a folder:
//! - `pcd/000000.pcd`, `pcd/000001.pcd`, ...: one scan each, points in the WORLD frame, with the sensor's pose
//!   (world_from_sensor) in the PCD header's `VIEWPOINT tx ty tz qw qx qy qz`;
//! - `gt_cloud.pcd`: the ground truth, the accumulated points with the label in `intensity` (1 = dynamic,
//!   0 = static).
//!
//! The score ([`score`]): each ground-truth point counts as kept when some point of a method's output lies
//! within 0.05 m of it; SA = static points kept / static points, DA = dynamic points removed / dynamic points,
//! AA = sqrt(SA * DA), as the benchmark's own evaluation computes them.

mod score;

use std::path::{Path, PathBuf};

use nalgebra::Isometry3;

use crate::cloud::{Cloud, ScanInfo};
use crate::io::{self, Encoding, ReadOptions, WriteOptions};
use crate::{Error, Result};

pub use score::{MATCH_RADIUS_M, Score, score};

/// The frame files of a sequence folder (`pcd/*.pcd`), sorted by name.
pub fn frame_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let pcd = dir.join("pcd");
    let entries = std::fs::read_dir(&pcd).map_err(|e| Error::io(&pcd, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&pcd, e))?.path();
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("pcd"))
        {
            out.push(path);
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::format(
            &pcd,
            "folder",
            "holds no .pcd frames (expected pcd/000000.pcd, ...)",
        ));
    }
    Ok(out)
}

/// One frame: its points (world frame) and the sensor pose from its VIEWPOINT (identity when it has none).
pub fn read_frame(path: &Path) -> Result<(Cloud, Isometry3<f64>)> {
    let mut cloud = io::read(path, Some(io::Format::Pcd), &ReadOptions::default())?;
    let pose = cloud
        .meta
        .scans
        .first()
        .and_then(|s| s.world_from_scan)
        .unwrap_or_else(Isometry3::identity);
    cloud.meta.scans.clear();
    Ok((cloud, pose))
}

/// Every frame of a sequence accumulated into one cloud (positions only), each frame a scan with its pose in
/// `meta.scans`: the input of `filters.moving` and the raw map the benchmark's methods clean.
pub fn read_sequence(dir: &Path) -> Result<Cloud> {
    let paths = frame_paths(dir)?;
    let mut out: Option<Cloud> = None;
    let mut scans = Vec::with_capacity(paths.len());
    for path in &paths {
        let (frame, pose) = read_frame(path)?;
        let mut frame = Cloud::from_positions(frame.origin, frame.positions().to_vec());
        let acc = out.get_or_insert_with(|| Cloud::with_origin(frame.origin));
        let start = acc.len();
        frame.meta.scans.clear();
        acc.append(&frame);
        scans.push(ScanInfo {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            points: start..acc.len(),
            world_from_scan: Some(pose),
        });
    }
    let mut cloud = out.unwrap_or_default();
    cloud.meta.scans = scans;
    cloud.meta.source = Some(dir.to_path_buf());
    Ok(cloud)
}

/// Write frame `index` as `pcd/NNNNNN.pcd` (binary, x y z [intensity]) with `world_from_sensor` in VIEWPOINT;
/// `cloud` holds the points in the world frame.
pub fn write_frame(
    dir: &Path,
    index: usize,
    cloud: &Cloud,
    world_from_sensor: &Isometry3<f64>,
) -> Result<PathBuf> {
    let pcd = dir.join("pcd");
    std::fs::create_dir_all(&pcd).map_err(|e| Error::io(&pcd, e))?;
    let path = pcd.join(format!("{index:06}.pcd"));
    let mut c = Cloud::from_positions(cloud.origin, cloud.positions().to_vec());
    c.set_intensity(cloud.intensity().map(<[f32]>::to_vec))?;
    c.meta.scans = vec![ScanInfo {
        name: "viewpoint".to_string(),
        points: 0..c.len(),
        world_from_scan: Some(*world_from_sensor),
    }];
    io::write(&c, &path, Some(io::Format::Pcd), &binary())?;
    Ok(path)
}

/// Write `gt_cloud.pcd`: the points with `dynamic[i]` as intensity 1 (dynamic) or 0 (static).
pub fn write_ground_truth(dir: &Path, cloud: &Cloud, dynamic: &[bool]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join("gt_cloud.pcd");
    let mut c = Cloud::from_positions(cloud.origin, cloud.positions().to_vec());
    c.set_intensity(Some(
        dynamic.iter().map(|&d| if d { 1.0 } else { 0.0 }).collect(),
    ))?;
    io::write(&c, &path, Some(io::Format::Pcd), &binary())?;
    Ok(path)
}

/// Read `gt_cloud.pcd`: the points and, per point, whether it is dynamic (intensity >= 0.5).
pub fn read_ground_truth(dir: &Path) -> Result<(Cloud, Vec<bool>)> {
    let path = dir.join("gt_cloud.pcd");
    let cloud = io::read(&path, Some(io::Format::Pcd), &ReadOptions::default())?;
    let Some(labels) = cloud.intensity() else {
        return Err(Error::format(
            &path,
            "header",
            "has no intensity field; the benchmark keeps the label (1 = dynamic) there",
        ));
    };
    let dynamic = labels.iter().map(|&l| l >= 0.5).collect();
    Ok((cloud, dynamic))
}

fn binary() -> WriteOptions {
    WriteOptions {
        encoding: Some(Encoding::Binary),
        ..WriteOptions::default()
    }
}
