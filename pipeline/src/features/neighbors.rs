//! Neighbour search over a cloud's positions: k nearest (optionally limited to a radius) and radius queries.
//!
//! A thin wrapper over kiddo's [`ImmutableKdTree`] (built once, queried from many threads). The immutable tree
//! has soft buckets, so clouds made of many identical points build without the "unsplittable bucket" failure
//! of kiddo's mutable tree. Results go into caller-provided buffers and are sorted by (distance, index), so the
//! order of equidistant neighbours does not depend on the tree's layout.
//!
//! Note: kiddo 6 materialises k-nearest results in a small `Vec` per query (its API has no caller-buffer form
//! for k-nearest); radius queries stream into the caller's buffer through a reusable [`NeighborScratch`].

use std::num::NonZero;

use kiddo::{Eytzinger, ImmutableKdTree, QueryScratch, SquaredEuclidean};

use crate::error::{Error, Result};

/// One neighbour: its index in the positions slice and its squared distance to the query, in m^2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbor {
    pub index: u32,
    pub dist2: f32,
}

/// Reusable traversal state for radius queries, one per worker thread.
pub struct NeighborScratch(QueryScratch<Eytzinger, f32, 3>);

/// A k-d tree over positions (metres, relative to the cloud's origin).
pub struct Neighbors {
    tree: ImmutableKdTree<f32, 3>,
    len: usize,
}

impl Neighbors {
    /// Build the tree. Fails on non-finite coordinates and on more than `u32::MAX` points (indices are u32).
    pub fn new(positions: &[[f32; 3]]) -> Result<Neighbors> {
        if positions.len() > u32::MAX as usize {
            return Err(Error::parameter(
                "cloud",
                format!(
                    "{} points is more than neighbour search supports ({})",
                    positions.len(),
                    u32::MAX
                ),
            ));
        }
        if let Some(i) = positions
            .iter()
            .position(|p| !(p[0].is_finite() && p[1].is_finite() && p[2].is_finite()))
        {
            return Err(Error::parameter(
                "cloud",
                format!("point {i} has a non-finite coordinate"),
            ));
        }
        let tree = ImmutableKdTree::<f32, 3>::new_from_slice(positions).map_err(|e| {
            Error::parameter("cloud", format!("cannot build neighbour search: {e}"))
        })?;
        Ok(Neighbors {
            tree,
            len: positions.len(),
        })
    }

    /// Number of points in the tree.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A scratch for [`Neighbors::within`] and [`Neighbors::count_within`]; make one per thread and reuse it.
    pub fn scratch(&self) -> NeighborScratch {
        NeighborScratch(self.tree.create_scratch::<SquaredEuclidean<f32>>())
    }

    /// The `k` points nearest to `query` (the query point itself included when it is in the tree), limited to
    /// distance `<= max_radius` when given, into `out` (cleared first), sorted by (distance, index).
    pub fn knn(&self, query: [f32; 3], k: usize, max_radius: Option<f32>, out: &mut Vec<Neighbor>) {
        out.clear();
        let k = k.min(self.len);
        let Some(k) = NonZero::new(k) else {
            return;
        };
        let q = self
            .tree
            .query(&query)
            .nearest_n::<SquaredEuclidean<f32>>(k);
        match max_radius {
            Some(r) => {
                let found = q.within(r * r).unsorted().execute();
                out.extend(found.iter().map(|n| Neighbor {
                    index: n.item,
                    dist2: n.distance,
                }));
            }
            None => {
                let found = q.unsorted().execute();
                out.extend(found.iter().map(|n| Neighbor {
                    index: n.item,
                    dist2: n.distance,
                }));
            }
        }
        // kiddo's own order is dropped (unsorted is cheaper); ours breaks distance ties by index.
        sort_neighbors(out);
    }

    /// Every point within distance `<= radius` of `query` (itself included), into `out` (cleared first),
    /// sorted by (distance, index).
    pub fn within(
        &self,
        query: [f32; 3],
        radius: f32,
        scratch: &mut NeighborScratch,
        out: &mut Vec<Neighbor>,
    ) {
        out.clear();
        if self.len == 0 || radius.is_nan() || radius < 0.0 {
            return;
        }
        self.tree
            .query(&query)
            .within::<SquaredEuclidean<f32>>(radius * radius)
            .unsorted()
            .with_scratch(&mut scratch.0)
            .visit(|n| {
                out.push(Neighbor {
                    index: n.item,
                    dist2: n.distance,
                })
            });
        sort_neighbors(out);
    }

    /// How many points lie within distance `<= radius` of `query` (itself included).
    pub fn count_within(
        &self,
        query: [f32; 3],
        radius: f32,
        scratch: &mut NeighborScratch,
    ) -> usize {
        if self.len == 0 || radius.is_nan() || radius < 0.0 {
            return 0;
        }
        let mut n = 0usize;
        self.tree
            .query(&query)
            .within::<SquaredEuclidean<f32>>(radius * radius)
            .unsorted()
            .with_scratch(&mut scratch.0)
            .visit(|_| n += 1);
        n
    }
}

fn sort_neighbors(v: &mut [Neighbor]) {
    v.sort_unstable_by(|a, b| a.dist2.total_cmp(&b.dist2).then(a.index.cmp(&b.index)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(points: &[[f32; 3]], q: [f32; 3], k: usize) -> Vec<u32> {
        let mut v: Vec<(f32, u32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let d = (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2);
                (d, i as u32)
            })
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        v.into_iter().take(k).map(|x| x.1).collect()
    }

    #[test]
    fn knn_matches_brute_force() {
        let pts: Vec<[f32; 3]> = (0..500)
            .map(|i| {
                let f = i as f32;
                [
                    (f * 0.37).sin() * 3.0,
                    (f * 0.11).cos() * 2.0,
                    (f * 0.013) % 1.7,
                ]
            })
            .collect();
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        for qi in [0usize, 17, 250, 499] {
            nb.knn(pts[qi], 7, None, &mut out);
            let got: Vec<u32> = out.iter().map(|n| n.index).collect();
            assert_eq!(got, brute(&pts, pts[qi], 7));
            assert_eq!(out[0].index as usize, qi);
        }
    }

    #[test]
    fn radius_limits_knn_and_within_counts() {
        let pts: Vec<[f32; 3]> = (0..10).map(|i| [i as f32, 0.0, 0.0]).collect();
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        nb.knn([0.0; 3], 5, Some(2.0), &mut out);
        assert_eq!(
            out.iter().map(|n| n.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let mut s = nb.scratch();
        nb.within([4.0, 0.0, 0.0], 1.0, &mut s, &mut out);
        assert_eq!(
            out.iter().map(|n| n.index).collect::<Vec<_>>(),
            vec![4, 3, 5]
        );
        assert_eq!(nb.count_within([4.0, 0.0, 0.0], 1.5, &mut s), 3);
        // k larger than the cloud returns every point.
        nb.knn([0.0; 3], 50, None, &mut out);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn all_duplicates_do_not_panic() {
        let pts = vec![[1.5f32, -2.0, 3.0]; 5000];
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        nb.knn(pts[0], 16, None, &mut out);
        assert_eq!(out.len(), 16);
        assert!(out.iter().all(|n| n.dist2 == 0.0));
        let mut s = nb.scratch();
        assert_eq!(nb.count_within(pts[0], 0.0, &mut s), 5000);
    }

    #[test]
    fn empty_and_nan() {
        let nb = Neighbors::new(&[]).unwrap();
        let mut out = vec![Neighbor {
            index: 0,
            dist2: 0.0,
        }];
        nb.knn([0.0; 3], 3, None, &mut out);
        assert!(out.is_empty());
        assert!(Neighbors::new(&[[0.0, f32::NAN, 0.0]]).is_err());
    }
}
