//! How large each map point's disk is: the surface it stands for, as wide as the sampling around it.
//!
//! A point of a map prepared at r_map stands for the surface within its voxel (docs/algorithms.md, section 16),
//! a disk of radius rho = sqrt(3)/2 r_map. That holds where the surface was sampled at least as densely
//! as r_map. Real maps are sampled unevenly: a terrestrial scan thins out with range from the scanner, a walked
//! sequence leaves far walls and ceilings sparse, and a map prepared finer than its points is sparse everywhere.
//! There, disks of r_map leave holes between the points, beams pass through walls and floors, and a real sensor
//! would have seen the surface. On the shared hall map prepared at 0.1 m (points 0.2 m apart) r_map disks
//! returned on 78% of the beams where the real unit returned (docs/accuracy.md).
//!
//! So a point on a plane gets a disk as wide as the sampling around it: rho times its spacing over r_map
//! (`aerie_pipeline::features::spacing`: the distance to its second nearest neighbour, kept only where its
//! neighbours surround it on the surface; on an edge a wider disk would carry the surface past its silhouette,
//! and a pole or wire sampled point by point would become a fin). Never smaller than rho, and at most 3 rho: a
//! point on a plane has at least three neighbours within the 3 r_map of the normals' default search, so a
//! spacing beyond that is not a sampled surface but a gap in the data, which stays open. Points off planes
//! (branches, clutter) keep rho too, and so does every disk a beam meets edge-on (drawn facing the beam).
//! Measured on the analytic scenes and the hall in docs/accuracy.md: every figure as good or better, and beams
//! no longer pass through the hall prepared finer than its points.
//!
//! A map prepared with normals stores the spacing (format 1.1); for older maps and maps without it the index
//! build finds it with a neighbour search of its own.
//!
//! The radius is stored as one of 16 classes (four bits beside each packed normal in the beam index), rounded
//! up so that the disks still cover. The splat renderer does not widen its disks yet.

use std::borrow::Cow;

use aerie_pipeline::features::spacing::spacing_all;
use aerie_pipeline::map::MapView;

/// Largest disk radius, in units of rho.
pub(super) const MAX_SCALE: f32 = 3.0;
/// Number of radius classes: class c is a radius of rho * (1 + c * [`CLASS_STEP`]).
pub(super) const CLASSES: u32 = 16;
const CLASS_STEP: f32 = (MAX_SCALE - 1.0) / (CLASSES - 1) as f32;

/// The disk radius of class `class`, in units of rho.
#[inline(always)]
pub(super) fn scale_of(class: u32) -> f32 {
    1.0 + class as f32 * CLASS_STEP
}

/// [`scale_of`] for four classes at once (given as floats).
#[inline(always)]
pub(super) fn scale_of_x4(class: wide::f32x4) -> wide::f32x4 {
    wide::f32x4::splat(1.0) + class * wide::f32x4::splat(CLASS_STEP)
}

/// The smallest class whose radius covers `scale` (in units of rho), clamped to the classes.
fn class_of(scale: f32) -> u8 {
    let c = ((scale - 1.0) / CLASS_STEP - 1e-4).ceil();
    // NaN (no neighbour) and scales below 1 give class 0.
    if c > 0.0 {
        c.min((CLASSES - 1) as f32) as u8
    } else {
        0
    }
}

/// Per map point, the class of its disk's radius ([`scale_of`]): above 0 only for points on a plane (plane
/// thickness below `gamma_max`) whose surface spacing (stored in the map, or searched for when it is not)
/// exceeds r_map. Empty when no point needs a wider disk (or the map has no plane thickness). Deterministic:
/// the neighbour search's results do not depend on the number of threads.
pub(super) fn disk_classes(map: &MapView, r_map: f32, gamma_max: f32) -> Vec<u8> {
    let Some(gamma) = map.gamma.filter(|g| g.len() == map.positions.len()) else {
        return Vec::new();
    };
    let spacing = match map.spacing.filter(|s| s.len() == gamma.len()) {
        Some(stored) => Cow::Borrowed(stored),
        None => match spacing_all(map.positions) {
            Ok(found) => Cow::Owned(found),
            Err(_) => return Vec::new(),
        },
    };
    let classes: Vec<u8> = gamma
        .iter()
        .zip(spacing.iter())
        .map(|(&g, &s)| {
            if g < gamma_max {
                class_of(s / r_map)
            } else {
                0
            }
        })
        .collect();
    if classes.iter().any(|&c| c > 0) {
        classes
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_and_clamp() {
        assert_eq!(class_of(0.5), 0);
        assert_eq!(class_of(1.0), 0);
        assert_eq!(class_of(f32::NAN), 0);
        assert_eq!(class_of(10.0), (CLASSES - 1) as u8);
        for s in [1.01f32, 1.5, 2.0, 2.49, 2.999] {
            let c = class_of(s) as u32;
            assert!(scale_of(c) >= s - 1e-3, "{s}: class {c} is {}", scale_of(c));
            assert!(
                c == 0 || scale_of(c - 1) < s,
                "{s}: class {c} is not the smallest"
            );
        }
        assert_eq!(scale_of(CLASSES - 1), MAX_SCALE);
    }

    fn view<'a>(positions: &'a [[f32; 3]], gamma: &'a [f32]) -> MapView<'a> {
        MapView {
            origin: [0.0; 3],
            resolution: 0.1,
            bucket_size: 10.0,
            buckets: &[],
            positions,
            normals: None,
            gamma: Some(gamma),
            spacing: None,
            surface_offset: None,
            reflectance: None,
        }
    }

    /// An n x n lattice in the plane z = 0.
    fn lattice(n: usize, step: f32) -> Vec<[f32; 3]> {
        (0..n)
            .flat_map(|i| (0..n).map(move |j| [i as f32 * step, j as f32 * step, 0.0]))
            .collect()
    }

    /// Inside a plane sampled at twice r_map the disks are twice as wide; on its edge, where a wider disk
    /// would reach past the silhouette, they keep rho; so do the same points off a plane; and a plane sampled
    /// at r_map needs no wider disks at all.
    #[test]
    fn sparse_planes_get_wider_disks_inside() {
        let (r_map, n) = (0.1f32, 20);
        let sparse = lattice(n, 2.0 * r_map);
        let planar = vec![0.001f32; sparse.len()];
        let classes = disk_classes(&view(&sparse, &planar), r_map, 0.5 * r_map);
        assert_eq!(classes.len(), sparse.len());
        for (k, &c) in classes.iter().enumerate() {
            let (i, j) = (k / n, k % n);
            let edge = i == 0 || j == 0 || i == n - 1 || j == n - 1;
            let scale = scale_of(c as u32);
            if edge {
                assert_eq!(c, 0, "edge point {i},{j}");
            } else {
                assert!((scale - 2.0).abs() < 0.1, "point {i},{j}: {scale}");
            }
        }
        let no_plane = vec![f32::INFINITY; sparse.len()];
        assert!(disk_classes(&view(&sparse, &no_plane), r_map, 0.5 * r_map).is_empty());
        let dense = lattice(n, r_map);
        assert!(disk_classes(&view(&dense, &planar), r_map, 0.5 * r_map).is_empty());
    }

    /// A pole or a wire sampled point by point at three times r_map fits any plane through it (plane thickness
    /// 0): it keeps rho, or it would turn into a fin.
    #[test]
    fn lines_keep_their_disks() {
        let r_map = 0.1f32;
        let line: Vec<[f32; 3]> = (0..50)
            .map(|i| [0.0, 0.0, i as f32 * 3.0 * r_map])
            .collect();
        let planar = vec![0.0f32; line.len()];
        assert!(disk_classes(&view(&line, &planar), r_map, 0.5 * r_map).is_empty());
    }
}
