//! The octree's level selection (docs/algorithms.md, section 35): which points each node keeps, so that every
//! level is a spatially uniform subsample of the whole map and every point is in exactly one node.
//!
//! A node lays a grid of [`Params::grid`] cells per axis over its cube (the node's spacing) and keeps, of each
//! occupied cell, the point nearest the cell's centre (ties: the lower index); the rest go down to its eight
//! children. A node with few points left ([`Params::leaf_points`]), or whose cells would be finer than the
//! stored coordinates' step, keeps them all. Each node's grid is the global grid of its depth, so the points of
//! depths 0..=d hold at least one point in every cell of depth d's grid that holds a point of the map.
//!
//! Everything is in the file's integer coordinates (metres = offset + scale x integer), the values readers see:
//! a node's points lie in its cube as the readers compute it (closed boxes: a point on a face between two nodes
//! is in the upper one).

use rayon::prelude::*;

/// A node's place in the octree: depth and position among the 2^d nodes per axis (COPC's `VoxelKey`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Depth, 0 at the root.
    pub d: i32,
    /// Position along x, 0..2^d.
    pub x: i32,
    /// Position along y.
    pub y: i32,
    /// Position along z.
    pub z: i32,
}

impl Key {
    /// The root node.
    pub const ROOT: Key = Key {
        d: 0,
        x: 0,
        y: 0,
        z: 0,
    };

    /// The child of octant `i` (bit 0: upper x half, bit 1: upper y, bit 2: upper z).
    fn child(self, i: usize) -> Key {
        let bit = |b: usize| ((i >> b) & 1) as i32;
        Key {
            d: self.d + 1,
            x: 2 * self.x + bit(0),
            y: 2 * self.y + bit(1),
            z: 2 * self.z + bit(2),
        }
    }
}

/// The root cube, in the file's integer units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Cube {
    /// The lowest corner.
    pub min: [f64; 3],
    /// The edge.
    pub edge: f64,
}

impl Cube {
    /// The cube from the points' lowest corner, its edge their largest extent (at least one unit): the cube the
    /// header's bounds give, which is how copclib and PDAL find a node's box (the header's minimum plus the key
    /// times the largest extent over 2^d), as well as from the `copc info` VLR's centre and half-size. A point on
    /// an upper face goes to the upper child, so the outermost nodes' boxes are closed. `None` without points.
    pub fn around(points: &[[i32; 3]]) -> Option<Cube> {
        let (lo, hi) = bounds(points)?;
        let extent = (0..3)
            .map(|k| f64::from(hi[k]) - f64::from(lo[k]))
            .fold(1.0, f64::max);
        Some(Cube {
            min: lo.map(f64::from),
            edge: extent,
        })
    }

    /// The cube of the node `key`.
    fn of(&self, key: Key) -> Cube {
        let edge = self.edge / f64::from(1u32 << key.d);
        let at = [key.x, key.y, key.z];
        Cube {
            min: std::array::from_fn(|k| self.min[k] + f64::from(at[k]) * edge),
            edge,
        }
    }
}

/// How the points are spread over the levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// Cells per axis of a node's grid: the root's spacing is its edge over this.
    pub grid: u32,
    /// A node with at most this many points left keeps them all.
    pub leaf_points: usize,
}

impl Params {
    /// What the export uses: 128 cells per axis (the spacing PDAL's untwine gives the root, so a viewer's
    /// first screen is about 16,000 points of a surface), and nodes of at most 20,000 points at the leaves.
    pub const DEFAULT: Params = Params {
        grid: 128,
        leaf_points: 20_000,
    };
}

/// One node: its key and the indices of the points it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Node {
    /// Where it is.
    pub key: Key,
    /// The points it keeps (indices into the points given to [`build`]), in the order written.
    pub points: Vec<u32>,
}

/// The octree's nodes, parents before their children (depth first, children in octant order), every point in
/// exactly one. The same for any thread count.
pub(super) fn build(points: &[[i32; 3]], cube: &Cube, params: &Params) -> Vec<Node> {
    let all: Vec<u32> = (0..points.len() as u32).collect();
    node(points, cube, params, Key::ROOT, all)
}

/// The lowest and highest integer coordinates, `None` without points.
pub(super) fn bounds(points: &[[i32; 3]]) -> Option<([i32; 3], [i32; 3])> {
    let min3 = |a: [i32; 3], b: [i32; 3]| std::array::from_fn(|k| a[k].min(b[k]));
    let max3 = |a: [i32; 3], b: [i32; 3]| std::array::from_fn(|k| a[k].max(b[k]));
    let none = ([i32::MAX; 3], [i32::MIN; 3]);
    let (lo, hi) = points
        .par_iter()
        .fold(|| none, |(lo, hi), &p| (min3(lo, p), max3(hi, p)))
        .reduce(|| none, |a, b| (min3(a.0, b.0), max3(a.1, b.1)));
    (!points.is_empty()).then_some((lo, hi))
}

/// The nodes of the subtree at `key`, which holds the points `idx`.
fn node(points: &[[i32; 3]], root: &Cube, params: &Params, key: Key, idx: Vec<u32>) -> Vec<Node> {
    let cube = root.of(key);
    let cell = cube.edge / f64::from(params.grid);
    if idx.len() <= params.leaf_points || cell < 1.0 {
        return vec![Node { key, points: idx }];
    }
    let (kept, rest) = select(points, &cube, params.grid, idx);
    let mid: [f64; 3] = std::array::from_fn(|k| cube.min[k] + cube.edge / 2.0);
    let mut octants: [Vec<u32>; 8] = Default::default();
    for i in rest {
        let p = points[i as usize];
        let o = (0..3).fold(0, |o, k| o | (usize::from(f64::from(p[k]) >= mid[k]) << k));
        octants[o].push(i);
    }
    let children: Vec<Vec<Node>> = octants
        .into_par_iter()
        .enumerate()
        .filter(|(_, idx)| !idx.is_empty())
        .map(|(o, idx)| node(points, root, params, key.child(o), idx))
        .collect();
    let mut nodes = vec![Node { key, points: kept }];
    nodes.extend(children.into_iter().flatten());
    nodes
}

/// Splits `idx` into the points a node of `cube` keeps (per occupied cell of its `grid`, the one nearest the
/// cell's centre, the lower index on a tie; in cell order) and the rest (in their order).
fn select(points: &[[i32; 3]], cube: &Cube, grid: u32, idx: Vec<u32>) -> (Vec<u32>, Vec<u32>) {
    let cell = cube.edge / f64::from(grid);
    let mut ranked: Vec<(u32, f64, u32)> = idx
        .par_iter()
        .map(|&i| {
            let p = points[i as usize];
            let (mut id, mut d2) = (0u32, 0.0);
            for k in (0..3).rev() {
                let t = (f64::from(p[k]) - cube.min[k]) / cell;
                let c = (t.floor().max(0.0) as u32).min(grid - 1);
                let off = t - (f64::from(c) + 0.5);
                d2 += off * off;
                id = id * grid + c;
            }
            (id, d2, i)
        })
        .collect();
    drop(idx);
    ranked.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut kept = Vec::new();
    let mut rest = Vec::with_capacity(ranked.len());
    let mut last = None;
    for (id, _, i) in ranked {
        if last == Some(id) {
            rest.push(i);
        } else {
            kept.push(i);
            last = Some(id);
        }
    }
    rest.par_sort_unstable();
    (kept, rest)
}
