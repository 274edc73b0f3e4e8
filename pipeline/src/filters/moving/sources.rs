//! Where each point was seen from, resolved in one place for every front end (the command line's `prepare
//! --remove-moving`, the app, the demo). The cases, in the order they are tried:
//!
//! 1. No poses file: the cloud's own scans with their poses (`meta.scans`: E57 scan poses, PCD VIEWPOINT, several
//!    files merged, each keeping its range and pose).
//! 2. A poses file and a per-point scan index (LAS `point_source_id`, when it takes more than one value or the
//!    poses name their scans): a balm `poses.csv` matches the index to the number in each line's file name
//!    (`full12.pcd` is scan 12); TUM and KITTI files are numbered by line from 0.
//! 3. A poses file with stamps (TUM, balm) and a per-point time (LAS gps_time, a PCD/PLY `time`/`timestamp`
//!    field): one accumulated map (FAST-LIO, LIO-SAM, GLIM) cut into time slices
//!    ([`Viewpoints::from_times`]), each seen from the trajectory at its time.
//! 4. A poses file with exactly one pose: the whole cloud seen from it.
//!
//! With several input files ([`attach_viewpoints`]), a poses file whose line names each file (balm), or that has
//! exactly one pose per file, gives each file its pose in the order given; otherwise each file is resolved on its
//! own as above.

use std::path::{Path, PathBuf};

use nalgebra::Isometry3;

use super::{MovingError, Viewpoints, attach_scans};
use crate::cloud::{Cloud, ScanInfo};
use crate::io::poses::{PosesFormat, ScanPose, read_poses, scan_number};
use crate::{Error, Result};

/// Default length of the time slices an accumulated map is cut into, seconds: a tenth of a second is one sweep
/// of a 10 Hz LiDAR, short enough that the sensor moves a few centimetres at walking speed.
pub const DEFAULT_SLICE_S: f64 = 0.1;

/// The extra dimension that holds each point's scan.
const SCAN_INDEX: &str = "point_source_id";

/// A poses file read for `filters.moving`, with how to cut a map with per-point time into slices.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseSource {
    /// The file, for messages.
    pub path: PathBuf,
    /// Its poses, in the file's order.
    pub poses: Vec<ScanPose>,
    /// Length of a time slice, seconds (case 3 of the module's list).
    pub slice_s: f64,
}

impl PoseSource {
    /// Read `path` in `format` (guessed from the name and first line when `None`).
    ///
    /// # Errors
    ///
    /// The reader's errors (naming the file and line), a file with no pose, and a slice that is not a positive
    /// number of seconds.
    pub fn read(path: &Path, format: Option<PosesFormat>, slice_s: f64) -> Result<PoseSource> {
        if !(slice_s.is_finite() && slice_s > 0.0) {
            return Err(Error::parameter(
                "time slice",
                format!("{slice_s} is not a positive number of seconds (try 0.1)"),
            ));
        }
        let poses = read_poses(path, format)?;
        if poses.is_empty() {
            return Err(Error::format(path, "file", "holds no pose"));
        }
        Ok(PoseSource {
            path: path.to_path_buf(),
            poses,
            slice_s,
        })
    }

    fn error(&self, message: String) -> MovingError {
        MovingError::Poses {
            path: self.path.clone(),
            message,
        }
    }

    /// The pose of the line whose file name is `name`, when the file names its scans.
    fn named(&self, name: &str) -> Option<Isometry3<f64>> {
        self.poses
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
            .map(|p| p.world_from_sensor)
    }
}

/// Where each point of `cloud` was seen from: its own scans when `poses` is `None`, else the poses file matched
/// to the points by scan index, by time, or as the one pose of the whole cloud (the module's list).
///
/// # Errors
///
/// [`MovingError::NoPoses`] when nothing says where the points were seen from; [`MovingError::Poses`] naming
/// the file when its poses do not cover the points (an index without a pose, times outside the trajectory, a
/// trajectory without stamps for a map with per-point time).
pub fn viewpoints(cloud: &Cloud, poses: Option<&PoseSource>) -> Result<Viewpoints, MovingError> {
    let Some(src) = poses else {
        return Viewpoints::from_scans(cloud);
    };
    if let Some(index) = scan_index(cloud, src) {
        return by_scan_index(&index?, src);
    }
    if src.poses.len() == 1 {
        return Ok(Viewpoints::single(
            cloud.len(),
            src.poses[0].world_from_sensor,
            &file_name(cloud),
        ));
    }
    if let Some(times) = cloud.time() {
        return by_time(times, src);
    }
    Err(src.error(format!(
        "{} poses, but the points say neither which scan each belongs to (LAS point_source_id) nor when it was \
         seen (LAS gps_time, a PCD/PLY time field); give one file per pose, or a map with per-point time",
        src.poses.len()
    )))
}

/// Give each input's `meta.scans` the poses it was seen from ([`viewpoints`]; with several inputs, a poses file
/// naming each file or holding one pose per file gives each file its pose), reordering an input's points by scan
/// where a per-point index or time groups them. After this, the `filters.moving` stage of a recipe reads the poses
/// from the merged cloud.
///
/// Several PCD files where some carry a VIEWPOINT and others none: those without are seen from the origin (the
/// first frame of a sequence has the identity pose, which PCD writers leave out).
///
/// # Errors
///
/// [`viewpoints`]' errors, wrapped in [`MovingError::Input`] naming the input file.
pub fn attach_viewpoints(
    inputs: &mut [Cloud],
    poses: Option<&PoseSource>,
) -> Result<(), MovingError> {
    if let Some(per_file) = poses.and_then(|p| per_file(inputs, p)) {
        for (cloud, pose) in inputs.iter_mut().zip(per_file) {
            let views = Viewpoints::single(cloud.len(), pose, &file_name(cloud));
            cloud.meta.scans = views.scan_infos();
        }
        return Ok(());
    }
    if poses.is_none() {
        pcd_sequence_origin(inputs);
    }
    for cloud in inputs.iter_mut() {
        let views = viewpoints(cloud, poses).map_err(|e| MovingError::Input {
            file: cloud.meta.source.clone().unwrap_or_default(),
            inner: Box::new(e),
        })?;
        if poses.is_none() {
            continue;
        }
        if views.in_cloud_order() {
            cloud.meta.scans = views.scan_infos();
        } else {
            *cloud = attach_scans(cloud, &views);
        }
    }
    Ok(())
}

/// The pose of each input when the poses file names every input's file, or holds exactly one pose per input.
fn per_file(inputs: &[Cloud], src: &PoseSource) -> Option<Vec<Isometry3<f64>>> {
    let by_name: Option<Vec<_>> = inputs.iter().map(|c| src.named(&file_name(c))).collect();
    if by_name.is_some() {
        return by_name;
    }
    (inputs.len() > 1 && src.poses.len() == inputs.len())
        .then(|| src.poses.iter().map(|p| p.world_from_sensor).collect())
}

/// Several PCD inputs, some with a VIEWPOINT: those without one were seen from the origin.
fn pcd_sequence_origin(inputs: &mut [Cloud]) {
    let is_pcd = |c: &Cloud| {
        c.meta
            .format
            .as_deref()
            .is_some_and(|f| f.starts_with("PCD"))
    };
    let posed = |c: &Cloud| c.meta.scans.iter().any(|s| s.world_from_scan.is_some());
    if inputs.len() < 2 || !inputs.iter().all(is_pcd) || !inputs.iter().any(posed) {
        return;
    }
    for c in inputs.iter_mut().filter(|c| c.meta.scans.is_empty()) {
        c.meta.scans = vec![ScanInfo {
            name: "viewpoint".to_string(),
            points: 0..c.len(),
            world_from_scan: Some(Isometry3::identity()),
        }];
    }
}

/// The input's file name (what a balm poses.csv line names), or "cloud".
fn file_name(cloud: &Cloud) -> String {
    cloud
        .meta
        .source
        .as_ref()
        .and_then(|p| p.file_name())
        .map_or_else(|| "cloud".to_string(), |n| n.to_string_lossy().into_owned())
}

/// Each point's pose index from its `point_source_id`, when the cloud has one that tells scans apart (more than
/// one value, or a poses file that names its scans); `None` when there is none to use.
fn scan_index(cloud: &Cloud, src: &PoseSource) -> Option<Result<Vec<u32>, MovingError>> {
    let ids = cloud.extra(SCAN_INDEX)?.values.to_f64();
    let first = *ids.first()?;
    let named = src.poses.iter().all(|p| p.name.is_some());
    if !named && ids.iter().all(|&v| v == first) {
        return None;
    }
    let numbers: Option<Vec<u32>> = named
        .then(|| {
            src.poses
                .iter()
                .map(|p| p.name.as_deref().and_then(scan_number))
                .collect()
        })
        .flatten();
    let pose_of = |id: u32| match &numbers {
        Some(n) => n.iter().position(|&k| k == id).map(|k| k as u32),
        None => (id < src.poses.len() as u32).then_some(id),
    };
    let mut out = Vec::with_capacity(ids.len());
    for (i, &v) in ids.iter().enumerate() {
        let Some(k) = pose_of(v as u32).filter(|_| v >= 0.0 && v.fract() == 0.0) else {
            let rule = if numbers.is_some() {
                "its lines name the scans' files, and a scan's number is the one in its file name (full12.pcd \
                 is scan 12)"
                    .to_string()
            } else {
                format!(
                    "its {} lines are scans 0 to {}, in order",
                    src.poses.len(),
                    src.poses.len() - 1
                )
            };
            return Some(Err(src.error(format!(
                "point {i} has {SCAN_INDEX} {v}, which has no pose in the file ({rule})"
            ))));
        };
        out.push(k);
    }
    Some(Ok(out))
}

/// Scans from a per-point pose index.
fn by_scan_index(index: &[u32], src: &PoseSource) -> Result<Viewpoints, MovingError> {
    let poses: Vec<Isometry3<f64>> = src.poses.iter().map(|p| p.world_from_sensor).collect();
    Viewpoints::from_scan_index(index, &poses).map_err(|e| src.error(e.to_string()))
}

/// Time slices of an accumulated map, seen from the trajectory.
fn by_time(times: &[f64], src: &PoseSource) -> Result<Viewpoints, MovingError> {
    let trajectory: Option<Vec<(f64, Isometry3<f64>)>> = src
        .poses
        .iter()
        .map(|p| p.stamp_s.map(|t| (t, p.world_from_sensor)))
        .collect();
    let Some(trajectory) = trajectory else {
        return Err(src.error(
            "its poses have no time stamps (KITTI), but the points are matched to poses by time: give a TUM \
             trajectory (timestamp tx ty tz qx qy qz qw)"
                .to_string(),
        ));
    };
    Viewpoints::from_times(times, &trajectory, src.slice_s).map_err(|e| src.error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExtraDim;

    fn source(text: &str, name: &str) -> PoseSource {
        let path = Path::new(name);
        PoseSource {
            path: path.to_path_buf(),
            poses: crate::io::poses::parse_poses(text, path, None).unwrap(),
            slice_s: DEFAULT_SLICE_S,
        }
    }

    fn line(x: usize) -> Cloud {
        Cloud::from_positions([0.0; 3], (0..x).map(|i| [i as f32, 0.0, 0.0]).collect())
    }

    #[test]
    fn a_balm_file_matches_the_scan_index_by_file_name() {
        let csv = "file,stamp_s,tx,ty,tz,r00,r01,r02,r10,r11,r12,r20,r21,r22\n\
                   full4.pcd,1,0,0,0,1,0,0,0,1,0,0,0,1\nfull9.pcd,2,5,0,0,1,0,0,0,1,0,0,0,1\n";
        let src = source(csv, "poses.csv");
        let with_ids = |ids: Vec<u16>| {
            let mut cloud = line(3);
            cloud
                .push_extra(ExtraDim::new("point_source_id", ids))
                .unwrap();
            cloud
        };
        let v = viewpoints(&with_ids(vec![9, 4, 9]), Some(&src)).unwrap();
        assert_eq!((v.count(0), v.count(1)), (1, 2));
        assert_eq!(v.pose(1).translation.vector.x, 5.0);
        let cloud = with_ids(vec![9, 4, 7]);
        let e = viewpoints(&cloud, Some(&src)).unwrap_err().to_string();
        assert!(
            e.contains("poses.csv") && e.contains("point 2") && e.contains("full12.pcd"),
            "{e}"
        );
    }

    #[test]
    fn nothing_to_match_names_the_file() {
        let src = source("0 0 0 0 0 0 0 1\n1 0 0 0 0 0 0 1\n", "traj.txt");
        let e = viewpoints(&line(3), Some(&src)).unwrap_err().to_string();
        assert!(
            e.contains("traj.txt") && e.contains("point_source_id"),
            "{e}"
        );
        let e = viewpoints(&line(3), None).unwrap_err();
        assert!(e.is_missing_poses(), "{e}");
    }

    #[test]
    fn times_outside_the_trajectory_name_the_file() {
        let src = source("0 0 0 0 0 0 0 1\n1 0 0 0 0 0 0 1\n", "traj.txt");
        let mut cloud = line(3);
        cloud.set_time(Some(vec![0.0, 0.5, 7.0])).unwrap();
        let e = viewpoints(&cloud, Some(&src)).unwrap_err().to_string();
        assert!(e.contains("traj.txt") && e.contains("7.000"), "{e}");
        cloud.set_time(Some(vec![0.0, 0.5, 0.55])).unwrap();
        assert_eq!(viewpoints(&cloud, Some(&src)).unwrap().len(), 2);
    }

    #[test]
    fn one_pose_per_file_in_the_order_given() {
        let src = source("0 0 0 0 0 0 0 1\n1 2 0 0 0 0 0 1\n", "traj.txt");
        let mut inputs = vec![line(2), line(3)];
        attach_viewpoints(&mut inputs, Some(&src)).unwrap();
        let p = inputs[1].meta.scans[0].world_from_scan.unwrap();
        assert_eq!(p.translation.vector.x, 2.0);
        assert_eq!(inputs[1].meta.scans[0].points, 0..3);
        let mut bare = vec![line(2), line(3)];
        let e = attach_viewpoints(&mut bare, None).unwrap_err();
        assert!(e.is_missing_poses(), "{e}");
    }
}
