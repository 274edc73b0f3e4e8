//! Radius outlier removal (`filters.radius`).
//!
//! A point is kept when at least `min_neighbors` OTHER points lie within `radius_m` of it (distance <= radius).
//! This is PCL's `RadiusOutlierRemoval` (`setMinNeighborsInRadius(m)`: its search count includes the point,
//! and it removes points with count <= m) and Open3D's `remove_radius_outlier(nb_points, radius)` (keeps
//! count > nb_points, count including the point): both keep exactly the points with >= m others in range.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{check_cloud, mask_indices, select_subset};
use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::features::Neighbors;
use crate::progress::Progress;
use crate::report::StageReport;

/// Parameters of `filters.radius`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RadiusParams {
    /// Search radius, metres, > 0 (inclusive). Default: 0.5.
    pub radius_m: f32,
    /// Minimum number of other points within the radius for a point to be kept (the point itself is not
    /// counted). Default: 3.
    pub min_neighbors: usize,
}

impl Default for RadiusParams {
    fn default() -> Self {
        RadiusParams {
            radius_m: 0.5,
            min_neighbors: 3,
        }
    }
}

/// Which points to keep (true): those with at least `min_neighbors` other points within `radius_m`.
pub fn radius_mask(
    cloud: &Cloud,
    params: &RadiusParams,
    progress: &dyn Progress,
) -> Result<Vec<bool>> {
    if !(params.radius_m.is_finite() && params.radius_m > 0.0) {
        return Err(Error::parameter(
            "filters.radius.radius_m",
            format!(
                "must be a positive number of metres, got {}",
                params.radius_m
            ),
        ));
    }
    check_cloud(cloud)?;
    let n = cloud.len();
    if params.min_neighbors == 0 || n == 0 {
        return Ok(vec![true; n]);
    }
    let nb = Neighbors::for_radius(cloud.positions(), params.radius_m)?;
    progress.stage("radius outliers", n as u64);
    let counts = nb.count_within_all(params.radius_m, progress)?;
    // The count includes the point itself.
    let mask = counts
        .iter()
        .map(|&c| c as usize > params.min_neighbors)
        .collect();
    Ok(mask)
}

/// Remove points with fewer than `min_neighbors` other points within `radius_m`.
pub fn radius_outliers(
    cloud: &Cloud,
    params: &RadiusParams,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport)> {
    let started = Instant::now();
    let mut report = StageReport::new("filters.radius", cloud.len());
    let mask = radius_mask(cloud, params, progress)?;
    let keep = mask_indices(&mask);
    let out = select_subset(cloud, &keep);
    report.removed.push((
        "too few neighbours in radius".into(),
        cloud.len() - keep.len(),
    ));
    report.figure("radius_m", params.radius_m as f64);
    report.figure("min_neighbors", params.min_neighbors as f64);
    report.finish(out.len(), started);
    Ok((out, report))
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn count_excludes_the_point_itself() {
        // x = 0 1 2 5 6 9, radius 1: others in range: 1, 2, 1, 1, 1, 0.
        let c = Cloud::from_positions(
            [0.0; 3],
            [0.0f32, 1.0, 2.0, 5.0, 6.0, 9.0]
                .iter()
                .map(|&x| [x, 0.0, 0.0])
                .collect(),
        );
        let p = |m| RadiusParams {
            radius_m: 1.0,
            min_neighbors: m,
        };
        assert_eq!(
            mask_indices(&radius_mask(&c, &p(1), &NoProgress).unwrap()),
            vec![0, 1, 2, 3, 4]
        );
        assert_eq!(
            mask_indices(&radius_mask(&c, &p(2), &NoProgress).unwrap()),
            vec![1]
        );
        let (out, r) = radius_outliers(&c, &p(2), &NoProgress).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(r.removed[0].1, 5);
        assert!(
            radius_mask(
                &c,
                &RadiusParams {
                    radius_m: 0.0,
                    min_neighbors: 1
                },
                &NoProgress
            )
            .is_err()
        );
    }
}
