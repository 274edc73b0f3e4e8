//! Stages that remove or move points: crop, transform, merge, outlier removal, downsampling.
//!
//! Each stage is a function over [`Cloud`] with a serde parameter struct (a section of a recipe, e.g.
//! `filters.sor`) and returns a [`crate::StageReport`]. `crop`, `downsample` and `radius_outliers` return a new
//! cloud; `sor` removes its outliers in place, and the stages that move points change the cloud in place. Heavy stages run on rayon in fixed chunks; every per-point result is
//! computed independently and sums are taken in chunk order, so results do not depend on the thread count.

pub mod crop;
pub mod downsample;
pub mod merge;
pub mod moving;
pub mod radius;
pub mod sor;
pub mod transform;

pub use crop::{CropParams, crop};
pub use downsample::{DownsampleMethod, DownsampleParams, downsample};
pub use merge::merge;
pub use moving::{MovingParams, remove_moving};
pub use radius::{RadiusParams, radius_mask, radius_outliers};
pub use sor::{SorCompat, SorParams, SorStats, sor, sor_mask};
pub use transform::{TransformParams, transform};

use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// Points per unit of parallel work: large enough to amortise scheduling, small enough to cancel quickly.
pub(crate) const CHUNK: usize = 4096;

/// Return `Error::Cancelled` when the user asked to stop.
pub(crate) fn check_cancel(progress: &dyn Progress) -> Result<()> {
    if progress.is_cancelled() {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// Reject clouds whose origin or positions are not finite ([`Cloud::validate`]) instead of panicking on them
/// later. (Attribute lengths are kept by construction.)
pub(crate) fn check_cloud(cloud: &Cloud) -> Result<()> {
    Ok(cloud.validate()?)
}

/// [`Cloud::select`] for ascending `indices` (a subset kept in order): scan point ranges are recomputed instead
/// of dropped, so later stages (normal orientation) still know which scanner saw each point.
pub fn select_subset(cloud: &Cloud, indices: &[usize]) -> Cloud {
    debug_assert!(indices.windows(2).all(|w| w[0] < w[1]));
    let mut out = cloud.select(indices);
    // Number of kept indices below `i`.
    let rank = |i: usize| indices.partition_point(|&k| k < i);
    out.meta.scans = cloud
        .meta
        .scans
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.points = rank(s.points.start)..rank(s.points.end);
            s
        })
        .collect();
    out
}

/// Indices where `mask` is true, ascending.
pub(crate) fn mask_indices(mask: &[bool]) -> Vec<usize> {
    mask.iter()
        .enumerate()
        .filter_map(|(i, &k)| k.then_some(i))
        .collect()
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::cloud::ScanInfo;
    use nalgebra::Isometry3;

    #[test]
    fn select_subset_keeps_scan_ranges() {
        let mut c =
            Cloud::from_positions([0.0; 3], (0..10).map(|i| [i as f32, 0.0, 0.0]).collect());
        c.meta.scans = vec![
            ScanInfo {
                name: "a".into(),
                points: 0..4,
                world_from_scan: None,
            },
            ScanInfo {
                name: "b".into(),
                points: 4..10,
                world_from_scan: Some(Isometry3::identity()),
            },
        ];
        let s = select_subset(&c, &[1, 3, 4, 9]);
        assert_eq!(s.meta.scans.len(), 2);
        assert_eq!(s.meta.scans[0].points, 0..2);
        assert_eq!(s.meta.scans[1].points, 2..4);
    }

    #[test]
    fn nan_cloud_is_rejected() {
        let c = Cloud::from_positions([0.0; 3], vec![[0.0; 3], [f32::NAN, 0.0, 0.0]]);
        assert!(matches!(check_cloud(&c), Err(Error::Parameter { .. })));
    }
}
