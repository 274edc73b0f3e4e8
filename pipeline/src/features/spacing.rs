//! How far apart a cloud's points sample the surface around each of them: what the simulator needs to draw a
//! point as wide as the surface it stands for (simcore's `render/disks.rs`: a point of a plane sampled sparser
//! than the map's resolution gets a wider disk, or beams would pass between the points).
//!
//! A point's spacing is the distance to its second nearest neighbour: the first could be a near duplicate, the
//! second is the lattice spacing on a plane, on its edge and along a line alike. It is kept only where the
//! point's six nearest neighbours surround it on a surface ([`surrounded`]), and is 0
//! elsewhere: on the edge of a surface a wider disk would carry the surface past its silhouette (false hits
//! beside poles and roof edges), and a pole or a wire sampled point by point fits any plane through it and would
//! become a fin.
//!
//! The normals stage computes it from the neighbours it has already found (its k >= [`NEIGHBOURS`] nearest) and
//! a map stores it (section `spacing`, format 1.1), so opening a map for the simulator needs no second
//! neighbour search (2-3 s on 5.8 million points, docs/benchmarks.md). [`spacing_all`] searches for clouds and
//! maps that lack it.

use nalgebra::Vector3;

use super::{Neighbor, Neighbors};
use crate::Result;
use crate::progress::NoProgress;

/// The name of the extra dimension the normals stage stores the spacing in (metres, f32).
pub const EXTRA_NAME: &str = "spacing";

/// Neighbours a spacing is decided from, the point itself included: the second nearest gives the spacing, the
/// six others whether the point lies inside the surface or on its edge.
pub const NEIGHBOURS: usize = 7;

/// A point lies on an edge when its neighbours' centroid is farther from it than this share of the farthest
/// neighbour's distance: 0 for neighbours all around, 4 / (3 pi) = 0.42 for a half-disk.
const EDGE: f32 = 0.25;

/// The spacing of point `p` (metres) from its nearest neighbours `near` (itself first, sorted by distance, at
/// least [`NEIGHBOURS`] of them; only the first [`NEIGHBOURS`] are read) and their positions `at`; 0 when there
/// are fewer or they do not surround it.
pub fn spacing_of(p: [f32; 3], near: &[Neighbor], at: &[[f32; 3]]) -> f32 {
    match (near.get(2), near.get(NEIGHBOURS - 1), at.get(1..NEIGHBOURS)) {
        (Some(second), Some(last), Some(others)) if surrounded(p, others, last.dist2) => {
            second.dist2.sqrt()
        }
        _ => 0.0,
    }
}

/// [`spacing_of`] for every point of `positions`, in their order, by a search for the [`NEIGHBOURS`] nearest.
/// Deterministic whatever the number of threads.
pub fn spacing_all(positions: &[[f32; 3]]) -> Result<Vec<f32>> {
    if positions.len() < NEIGHBOURS {
        return Ok(vec![0.0; positions.len()]);
    }
    Neighbors::for_knn(positions, NEIGHBOURS)?.knn_all(
        NEIGHBOURS,
        None,
        &NoProgress,
        || (),
        |_, _, p, near, at| spacing_of(p, near, at),
    )
}

/// The median spacing of the points inside surfaces (metres; those with a spacing above 0) and their share of
/// all points; `None` when no point lies inside a surface. What `aerie info` shows and what tells a scan sparser
/// than the map's resolution (the normals stage's hint).
pub fn surface_median(spacing: &[f32]) -> Option<(f32, f64)> {
    let mut inside: Vec<f32> = spacing.iter().copied().filter(|&s| s > 0.0).collect();
    if inside.is_empty() {
        return None;
    }
    let share = inside.len() as f64 / spacing.len() as f64;
    let mid = inside.len() / 2;
    let (_, median, _) = inside.select_nth_unstable_by(mid, f32::total_cmp);
    Some((*median, share))
}

/// Whether the neighbours `near` of `p` (the farthest at squared distance `far2`) lie all around it on a
/// surface: not along a line (a pole or a wire sampled point by point: its "plane" is any plane through it),
/// and not to one side (the edge of a surface).
fn surrounded(p: [f32; 3], near: &[[f32; 3]], far2: f32) -> bool {
    let p = Vector3::from(p);
    let Some((first, rest)) = near.split_first() else {
        return false;
    };
    let first = Vector3::from(*first) - p;
    // Some neighbour lies more than 30 degrees off the line through the nearest: sin^2 > 1/4.
    let across = rest.iter().any(|q| {
        let d = Vector3::from(*q) - p;
        4.0 * first.cross(&d).norm_squared() > first.norm_squared() * d.norm_squared()
    });
    // The neighbours' centroid lies near the point: at 0 for neighbours all around, at 4 / (3 pi) = 0.42 of
    // the radius for a half-disk.
    let sum = near
        .iter()
        .fold(Vector3::zeros(), |s, q| s + (Vector3::from(*q) - p));
    let c = sum / near.len() as f32;
    across && c.norm_squared() <= EDGE * EDGE * far2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An n x n lattice in the plane z = 0.
    fn lattice(n: usize, step: f32) -> Vec<[f32; 3]> {
        (0..n)
            .flat_map(|i| (0..n).map(move |j| [i as f32 * step, j as f32 * step, 0.0]))
            .collect()
    }

    /// Inside a lattice the spacing is its step; on its edge, and along a line, there is none.
    #[test]
    fn inside_a_surface_only() {
        let (n, step) = (12, 0.3f32);
        let spacing = spacing_all(&lattice(n, step)).unwrap();
        for (k, &s) in spacing.iter().enumerate() {
            let (i, j) = (k / n, k % n);
            if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                assert_eq!(s, 0.0, "edge point {i},{j}");
            } else {
                assert!((s - step).abs() < 1e-5, "point {i},{j}: {s}");
            }
        }
        let line: Vec<[f32; 3]> = (0..30).map(|i| [0.0, 0.0, i as f32 * step]).collect();
        assert!(spacing_all(&line).unwrap().iter().all(|&s| s == 0.0));
        assert_eq!(spacing_all(&line[..5]).unwrap(), vec![0.0; 5]);
    }

    #[test]
    fn the_median_counts_only_points_inside_surfaces() {
        let (median, share) = surface_median(&[0.0, 0.5, 0.0, 0.2, 0.3]).unwrap();
        assert_eq!((median, share), (0.3, 0.6));
        assert_eq!(surface_median(&[0.0; 4]), None);
        assert_eq!(surface_median(&[]), None);
    }
}
