//! The DynamicMap_Benchmark's score of a cleaned map against the labelled ground truth.

use rayon::prelude::*;
use serde::Serialize;

use crate::cloud::Cloud;
use crate::features::Neighbors;
use crate::{Error, Result};

/// A ground-truth point counts as kept when an output point lies within this distance of it, metres (the
/// benchmark's 0.05 m).
pub const MATCH_RADIUS_M: f32 = 0.05;

/// SA, DA and AA with the counts they come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Score {
    /// Static ground-truth points.
    pub static_points: usize,
    /// Of those, kept in the output.
    pub static_kept: usize,
    /// Dynamic ground-truth points.
    pub dynamic_points: usize,
    /// Of those, absent from the output.
    pub dynamic_removed: usize,
    /// Static accuracy: static kept / static (1 when there is no static point).
    pub sa: f64,
    /// Dynamic accuracy: dynamic removed / dynamic (1 when there is no dynamic point).
    pub da: f64,
    /// Associated accuracy: sqrt(SA * DA).
    pub aa: f64,
}

/// Score `output` (a method's cleaned map) against `ground_truth` with its per-point `dynamic` labels.
///
/// # Errors
///
/// [`Error::Parameter`] when the labels are not one per ground-truth point, or a cloud is not finite.
pub fn score(ground_truth: &Cloud, dynamic: &[bool], output: &Cloud) -> Result<Score> {
    if dynamic.len() != ground_truth.len() {
        return Err(Error::parameter(
            "dynamic",
            format!(
                "{} labels for {} ground-truth points",
                dynamic.len(),
                ground_truth.len()
            ),
        ));
    }
    let kept = kept_mask(ground_truth, output)?;
    let mut s = Score::default();
    for (&d, &k) in dynamic.iter().zip(&kept) {
        if d {
            s.dynamic_points += 1;
            s.dynamic_removed += usize::from(!k);
        } else {
            s.static_points += 1;
            s.static_kept += usize::from(k);
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    s.sa = ratio(s.static_kept, s.static_points);
    s.da = ratio(s.dynamic_removed, s.dynamic_points);
    s.aa = (s.sa * s.da).sqrt();
    Ok(s)
}

/// Per ground-truth point: an output point lies within [`MATCH_RADIUS_M`].
fn kept_mask(ground_truth: &Cloud, output: &Cloud) -> Result<Vec<bool>> {
    if output.is_empty() {
        return Ok(vec![false; ground_truth.len()]);
    }
    ground_truth.validate()?;
    let index = Neighbors::for_radius(output.positions(), MATCH_RADIUS_M)?;
    // Ground-truth points in the output's local frame.
    let shift = [0, 1, 2].map(|a| ground_truth.origin[a] - output.origin[a]);
    Ok(ground_truth
        .positions()
        .par_chunks(4096)
        .flat_map_iter(|chunk| {
            let mut scratch = index.scratch();
            chunk
                .iter()
                .map(|p| {
                    let q = [0, 1, 2].map(|a| (f64::from(p[a]) + shift[a]) as f32);
                    index.count_within(q, MATCH_RADIUS_M, &mut scratch) > 0
                })
                .collect::<Vec<_>>()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_counts_matches_within_five_centimetres() {
        let gt = Cloud::from_positions(
            [10.0, 0.0, 0.0],
            vec![[0.0; 3], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [3.0, 0.0, 0.0]],
        );
        let dynamic = [false, false, true, true];
        // Output in another origin: static 0 kept (4 cm away), static 1 lost (6 cm), dynamic 2 kept, 3 removed.
        let out = Cloud::from_positions(
            [0.0; 3],
            vec![[10.04, 0.0, 0.0], [11.06, 0.0, 0.0], [12.0, 0.0, 0.0]],
        );
        let s = score(&gt, &dynamic, &out).unwrap();
        assert_eq!(
            (
                s.static_points,
                s.static_kept,
                s.dynamic_points,
                s.dynamic_removed
            ),
            (2, 1, 2, 1)
        );
        assert!((s.sa - 0.5).abs() < 1e-12 && (s.da - 0.5).abs() < 1e-12);
        assert!((s.aa - 0.5).abs() < 1e-12);
        assert!(score(&gt, &dynamic[..2], &out).is_err());
    }
}
