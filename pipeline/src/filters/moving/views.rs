//! Where each point was seen from: the scans of a cloud grouped with their sensor poses ([`Viewpoints`]), from
//! the cloud's scan ranges or from a per-point scan index, and the checks that poses fit the points.

use std::ops::Range;

use nalgebra::{Isometry3, Point3};

use super::MovingError;
use crate::cloud::{Cloud, ScanInfo};
use crate::filters::select_subset;

/// The scans of a cloud and the pose each was taken from. Points of one scan are listed together: either the
/// cloud's own ranges (`meta.scans`), or through an order built from a per-point scan index.
#[derive(Clone, Debug, PartialEq)]
pub struct Viewpoints {
    /// Point indices grouped by scan; `None` when the cloud's points are already grouped (identity).
    order: Option<Vec<u32>>,
    /// Each scan's span in the grouped order.
    ranges: Vec<Range<usize>>,
    /// Each scan's pose: sensor frame to the cloud's world frame (not relative to `Cloud::origin`).
    poses: Vec<Isometry3<f64>>,
    /// Each scan's name, for messages.
    names: Vec<String>,
}

impl Viewpoints {
    /// The scans of `cloud.meta.scans` (E57 scan poses, PCD VIEWPOINTs of merged files, [`attach_scans`]).
    ///
    /// # Errors
    ///
    /// [`MovingError::NoPoses`] when the cloud lists no scan or a scan has no pose, and
    /// [`MovingError::ScanRanges`] when the ranges no longer cover the points (they were reordered).
    pub fn from_scans(cloud: &Cloud) -> Result<Viewpoints, MovingError> {
        let scans = &cloud.meta.scans;
        let without = scans.iter().filter(|s| s.world_from_scan.is_none()).count();
        if scans.is_empty() || without > 0 {
            return Err(MovingError::NoPoses {
                scans: scans.len(),
                without_pose: without,
            });
        }
        let covered: usize = scans.iter().map(|s| s.points.len()).sum();
        if covered != cloud.len() || scans.iter().any(|s| s.points.end > cloud.len()) {
            return Err(MovingError::ScanRanges {
                covered,
                points: cloud.len(),
            });
        }
        Ok(Viewpoints {
            order: None,
            ranges: scans.iter().map(|s| s.points.clone()).collect(),
            poses: scans.iter().filter_map(|s| s.world_from_scan).collect(),
            names: scans.iter().map(|s| s.name.clone()).collect(),
        })
    }

    /// Scans given by a per-point scan index (`scan_of_point[i]` indexes `poses`), e.g. LAS `point_source_id`
    /// with a poses file.
    ///
    /// # Errors
    ///
    /// [`MovingError::PointWithoutPose`] when an index has no pose.
    pub fn from_scan_index(
        scan_of_point: &[u32],
        poses: &[Isometry3<f64>],
    ) -> Result<Viewpoints, MovingError> {
        let mut counts = vec![0usize; poses.len()];
        for (i, &s) in scan_of_point.iter().enumerate() {
            let Some(c) = counts.get_mut(s as usize) else {
                return Err(MovingError::PointWithoutPose {
                    point: i,
                    scan: s,
                    poses: poses.len(),
                });
            };
            *c += 1;
        }
        let mut starts = Vec::with_capacity(poses.len());
        let mut total = 0;
        for &c in &counts {
            starts.push(total);
            total += c;
        }
        let ranges = starts
            .iter()
            .zip(&counts)
            .map(|(&s, &c)| s..s + c)
            .collect();
        let mut next = starts;
        let mut order = vec![0u32; scan_of_point.len()];
        for (i, &s) in scan_of_point.iter().enumerate() {
            order[next[s as usize]] = i as u32;
            next[s as usize] += 1;
        }
        Ok(Viewpoints {
            order: Some(order),
            ranges,
            poses: poses.to_vec(),
            names: (0..poses.len()).map(|i| format!("scan {i}")).collect(),
        })
    }

    /// Scans made of short time slices of one accumulated map (a SLAM map saved with per-point time): points
    /// are grouped by `floor((t - t_first) / slice_s)`, and each non-empty slice is seen from the trajectory's
    /// pose at the mean time of its points, interpolated between the two nearest samples (translation linearly,
    /// rotation by slerp). `trajectory` holds `(stamp_s, world_from_sensor)` samples in any order.
    ///
    /// # Errors
    ///
    /// [`MovingError::Parameter`] for a slice that is not a positive length of time or a time that is not
    /// finite, and [`MovingError::TimesNotCovered`] when a slice's time lies outside the trajectory's span by
    /// more than half a slice (another clock, or the trajectory of another run).
    pub fn from_times(
        times: &[f64],
        trajectory: &[(f64, Isometry3<f64>)],
        slice_s: f64,
    ) -> Result<Viewpoints, MovingError> {
        if !(slice_s.is_finite() && slice_s > 0.0) {
            return Err(MovingError::Parameter {
                name: "slice_s".into(),
                message: format!("{slice_s} is not a positive number of seconds"),
            });
        }
        if let Some(i) = times.iter().position(|t| !t.is_finite()) {
            return Err(MovingError::Parameter {
                name: "time".into(),
                message: format!("point {i} has time {}", times[i]),
            });
        }
        let t0 = times.iter().copied().fold(f64::INFINITY, f64::min);
        let slot = |t: f64| ((t - t0) / slice_s).floor() as u64;
        let mut slots: Vec<u64> = times.iter().map(|&t| slot(t)).collect();
        slots.sort_unstable();
        slots.dedup();
        let mut sums = vec![(0.0f64, 0usize); slots.len()];
        let index: Vec<u32> = times
            .iter()
            .map(|&t| {
                let k = slots.partition_point(|&s| s < slot(t));
                sums[k].0 += t - t0;
                sums[k].1 += 1;
                k as u32
            })
            .collect();
        let mut samples = trajectory.to_vec();
        samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut poses = Vec::with_capacity(slots.len());
        let mut names = Vec::with_capacity(slots.len());
        for &(sum, n) in &sums {
            let t = t0 + sum / n as f64;
            poses.push(pose_at(&samples, t, 0.5 * slice_s)?);
            names.push(format!("slice at t = {t:.3} s"));
        }
        let mut views = Viewpoints::from_scan_index(&index, &poses)?;
        views.names = names;
        Ok(views)
    }

    /// One scan of all `points` points, seen from `pose` (one file with one pose).
    pub fn single(points: usize, pose: Isometry3<f64>, name: &str) -> Viewpoints {
        Viewpoints {
            order: None,
            ranges: vec![Range {
                start: 0,
                end: points,
            }],
            poses: vec![pose],
            names: vec![name.to_string()],
        }
    }

    /// Whether the scans are the cloud's points in their own order (no reordering needed to attach them).
    pub fn in_cloud_order(&self) -> bool {
        self.order.is_none()
    }

    /// The scans as `meta.scans` lists them: name, range in the grouped order, pose.
    pub fn scan_infos(&self) -> Vec<ScanInfo> {
        (0..self.len())
            .map(|s| ScanInfo {
                name: self.names[s].clone(),
                points: self.ranges[s].clone(),
                world_from_scan: Some(self.poses[s]),
            })
            .collect()
    }

    /// Number of scans.
    pub fn len(&self) -> usize {
        self.poses.len()
    }

    /// Whether there is no scan.
    pub fn is_empty(&self) -> bool {
        self.poses.is_empty()
    }

    /// Pose of scan `s`.
    pub fn pose(&self, s: usize) -> &Isometry3<f64> {
        &self.poses[s]
    }

    /// Name of scan `s`.
    pub fn name(&self, s: usize) -> &str {
        &self.names[s]
    }

    /// Number of points of scan `s`.
    pub fn count(&self, s: usize) -> usize {
        self.ranges[s].len()
    }

    /// Cloud index of the `k`-th point of scan `s`.
    pub fn point(&self, s: usize, k: usize) -> usize {
        let j = self.ranges[s].start + k;
        self.order.as_ref().map_or(j, |o| o[j] as usize)
    }
}

/// The pose of a sorted trajectory at time `t`: interpolated between the samples around it, or the end sample
/// when `t` lies outside by at most `slack` seconds.
fn pose_at(
    samples: &[(f64, Isometry3<f64>)],
    t: f64,
    slack: f64,
) -> Result<Isometry3<f64>, MovingError> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Err(MovingError::TimesNotCovered {
            time: t,
            first: f64::NAN,
            last: f64::NAN,
        });
    };
    if t < first.0 - slack || t > last.0 + slack {
        return Err(MovingError::TimesNotCovered {
            time: t,
            first: first.0,
            last: last.0,
        });
    }
    let k = samples.partition_point(|s| s.0 <= t);
    if k == 0 {
        return Ok(first.1);
    }
    if k == samples.len() {
        return Ok(last.1);
    }
    let ((ta, a), (tb, b)) = (samples[k - 1], samples[k]);
    let f = if tb > ta { (t - ta) / (tb - ta) } else { 0.0 };
    let translation = a.translation.vector.lerp(&b.translation.vector, f);
    // Opposite quaternions are the same rotation; slerp takes the shorter way either way.
    let rotation = a
        .rotation
        .try_slerp(&b.rotation, f, 1e-9)
        .unwrap_or(a.rotation);
    Ok(Isometry3::from_parts(translation.into(), rotation))
}

/// The cloud reordered so that each scan's points are contiguous, with `meta.scans` naming each scan's range and
/// pose: what [`Viewpoints::from_scans`] (and so the `filters.moving` stage of a recipe) reads. Use it when scans
/// come as a per-point index (LAS `point_source_id`) and a poses file; points keep their order within a scan.
pub fn attach_scans(cloud: &Cloud, views: &Viewpoints) -> Cloud {
    let order: Vec<usize> = (0..views.len())
        .flat_map(|s| (0..views.count(s)).map(move |k| (s, k)))
        .map(|(s, k)| views.point(s, k))
        .collect();
    let mut out = if views.order.is_none() {
        cloud.clone()
    } else {
        let mut c = cloud.select(&order);
        c.meta.scans.clear();
        c
    };
    out.meta.scans = views.scan_infos();
    out
}

/// The subset `keep` (ascending) of `cloud`, scan ranges recomputed.
pub(super) fn keep_subset(cloud: &Cloud, keep: &[usize]) -> Cloud {
    select_subset(cloud, keep)
}

/// Sentences for the report when the poses do not fit the points: sensors far outside the points' bounds (or
/// below them), or most of a scan's points behind its sensor (a forward-looking sensor given the inverse pose).
pub(super) fn pose_warnings(cloud: &Cloud, views: &Viewpoints) -> Vec<String> {
    let mut out = Vec::new();
    let Some((lo, hi)) = cloud.bounds() else {
        return out;
    };
    // A forward-looking sensor stands at the edge of what it saw, and an airborne one above it: only poses well
    // outside the points' horizontal extent or below them are suspicious.
    let margin = (0.1 * (hi[0] - lo[0]).hypot(hi[1] - lo[1])).max(2.0);
    let outside: Vec<usize> = (0..views.len())
        .filter(|&s| {
            let t = views.pose(s).translation.vector;
            t.x < lo[0] - margin
                || t.x > hi[0] + margin
                || t.y < lo[1] - margin
                || t.y > hi[1] + margin
                || t.z < lo[2] - 1.0
        })
        .collect();
    if !outside.is_empty() {
        out.push(format!(
            "filters.moving: {} of {} sensor poses lie outside the points' bounds (first: {}); are the poses in \
             the map's frame and in the right direction (world_from_sensor, not its inverse)?",
            outside.len(),
            views.len(),
            views.name(outside[0])
        ));
    }
    let behind: Vec<usize> = (0..views.len())
        .filter(|&s| behind_fraction(cloud, views, s) > 0.9)
        .collect();
    if behind.len() * 2 > views.len() {
        out.push(format!(
            "filters.moving: in {} of {} scans most points lie behind the sensor; the poses may be inverted \
             (sensor_from_world given for world_from_sensor) or in another axis convention",
            behind.len(),
            views.len()
        ));
    }
    out
}

/// Fraction of scan `s`'s points (a sample of up to 1000) with a negative x in the sensor frame.
fn behind_fraction(cloud: &Cloud, views: &Viewpoints, s: usize) -> f64 {
    let n = views.count(s);
    if n == 0 {
        return 0.0;
    }
    let sensor_from_world = views.pose(s).inverse();
    let step = n.div_ceil(1000);
    let (mut behind, mut seen) = (0usize, 0usize);
    for k in (0..n).step_by(step) {
        let w = cloud.world(views.point(s, k));
        let p = sensor_from_world * Point3::new(w[0], w[1], w[2]);
        behind += usize::from(p.x < 0.0);
        seen += 1;
    }
    behind as f64 / seen as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Translation3;

    #[test]
    fn a_scan_index_groups_points_by_scan() {
        let poses = vec![Isometry3::identity(); 3];
        let v = Viewpoints::from_scan_index(&[2, 0, 2, 1, 0], &poses).unwrap();
        assert_eq!(v.len(), 3);
        let listed: Vec<Vec<usize>> = (0..3)
            .map(|s| (0..v.count(s)).map(|k| v.point(s, k)).collect())
            .collect();
        assert_eq!(listed, vec![vec![1, 4], vec![3], vec![0, 2]]);
        let e = Viewpoints::from_scan_index(&[0, 7], &poses).unwrap_err();
        assert!(e.to_string().contains("scan 7"), "{e}");
    }

    /// An accumulated map with per-point time: slices of 0.1 s, each seen from the trajectory at its points'
    /// mean time (translation interpolated, rotation slerped).
    #[test]
    fn time_slices_are_seen_from_the_interpolated_trajectory() {
        use nalgebra::{UnitQuaternion, Vector3};
        let turn = |deg: f64| UnitQuaternion::from_axis_angle(&Vector3::z_axis(), deg.to_radians());
        let trajectory = vec![
            (
                11.0,
                Isometry3::from_parts(Translation3::new(10.0, 0.0, 0.0), turn(90.0)),
            ),
            (
                10.0,
                Isometry3::from_parts(Translation3::new(0.0, 0.0, 0.0), turn(0.0)),
            ),
        ];
        // Three slices: [10.0, 10.1), [10.5, 10.6) (two points, mean 10.55), [11.0, 11.1).
        let times = [10.0, 10.5, 11.02, 10.58, 10.52];
        let v = Viewpoints::from_times(&times, &trajectory, 0.1).unwrap();
        assert_eq!(v.len(), 3);
        let members: Vec<Vec<usize>> = (0..3)
            .map(|s| (0..v.count(s)).map(|k| v.point(s, k)).collect())
            .collect();
        assert_eq!(members, vec![vec![0], vec![1, 3, 4], vec![2]]);
        let mid = v.pose(1);
        let f = (10.5 + 10.58 + 10.52) / 3.0 - 10.0;
        assert!(
            (mid.translation.vector.x - 10.0 * f).abs() < 1e-9,
            "{mid:?}"
        );
        assert!((mid.rotation.angle() - (90.0 * f).to_radians()).abs() < 1e-9);
        // The last slice lies 0.02 s past the trajectory's end: within half a slice, the end pose.
        assert!((v.pose(2).translation.vector.x - 10.0).abs() < 1e-12);
        assert!(v.name(1).contains("10.533"), "{}", v.name(1));
        let e = Viewpoints::from_times(&[9.0, 10.5], &trajectory, 0.1).unwrap_err();
        assert!(
            matches!(e, MovingError::TimesNotCovered { .. }) && e.to_string().contains("9.000"),
            "{e}"
        );
        assert!(Viewpoints::from_times(&times, &trajectory, 0.0).is_err());
        assert!(Viewpoints::from_times(&[f64::NAN], &trajectory, 0.1).is_err());
    }

    #[test]
    fn attached_scans_read_back_as_the_same_viewpoints() {
        let cloud = Cloud::from_positions([0.0; 3], (0..5).map(|i| [i as f32, 0.0, 0.0]).collect());
        let poses = vec![Isometry3::translation(0.0, 1.0, 0.0); 2];
        let v = Viewpoints::from_scan_index(&[1, 0, 1, 1, 0], &poses).unwrap();
        let attached = attach_scans(&cloud, &v);
        assert_eq!(attached.positions()[0], [1.0, 0.0, 0.0]);
        let back = Viewpoints::from_scans(&attached).unwrap();
        assert_eq!((back.count(0), back.count(1)), (2, 3));
        let e = Viewpoints::from_scans(&cloud).unwrap_err();
        assert!(matches!(e, MovingError::NoPoses { scans: 0, .. }), "{e}");
    }
}
