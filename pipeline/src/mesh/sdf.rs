//! The signed distance to a map's surface, from its oriented points, at the corners of a sparse voxel grid.
//!
//! Each point with a normal stands for a small piece of plane: its position moved by its surface offset
//! (docs/algorithms.md, section 8) onto the middle of the layer, and its normal. The distance at a corner `x` is
//! the Gaussian-weighted mean of `n_i . (x - q_i)` over the points within the support radius whose normals agree
//! with the nearest point's (so the two faces of a thin wall do not cancel), as in Hoppe et al.'s signed distance
//! from tangent planes [R40], smoothed as implicit moving least squares does [R41]. Positive is outside: the side
//! the normals point to, toward the scanner. A corner with no point within the support radius has no distance
//! (NaN), and no surface is drawn next to it: that is what keeps the mesh near the points and holes open.
//!
//! The neighbour search is a hashed uniform grid written here (a few lines: the k-nearest index of
//! `features::neighbors` answers a different question, all points within a radius of an arbitrary location).

use rayon::prelude::*;

/// Offset added to a cell coordinate before packing: cell coordinates must lie within +-2^20.
const OFF: i64 = 1 << 20;

/// A cell coordinate triple packed into one sortable key (x, then y, then z; 21 bits each).
pub(crate) fn key(c: [i64; 3]) -> u64 {
    (((c[0] + OFF) as u64) << 42) | (((c[1] + OFF) as u64) << 21) | ((c[2] + OFF) as u64)
}

/// The cell coordinates of a key.
pub(crate) fn unkey(k: u64) -> [i64; 3] {
    let m = (1u64 << 21) - 1;
    [
        ((k >> 42) & m) as i64 - OFF,
        ((k >> 21) & m) as i64 - OFF,
        (k & m) as i64 - OFF,
    ]
}

/// Whether every cell coordinate of `c` can be packed with room for the neighbours a search visits.
pub(crate) fn packable(c: [i64; 3]) -> bool {
    c.iter().all(|v| v.abs() < OFF - 4)
}

/// Points bucketed in cubic cells of edge `cell`, for "every point within r <= cell of x".
pub(crate) struct PointGrid {
    cell: f32,
    keys: Vec<u64>,
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl PointGrid {
    /// The grid of `points` (coordinates already checked to be packable at this cell size).
    pub(crate) fn new(points: &[[f32; 3]], cell: f32) -> PointGrid {
        let mut pairs: Vec<(u64, u32)> = points
            .par_iter()
            .enumerate()
            .map(|(i, p)| (key(cell_of(*p, cell)), i as u32))
            .collect();
        pairs.par_sort_unstable();
        let mut keys = Vec::new();
        let mut starts = Vec::new();
        for (at, (k, _)) in pairs.iter().enumerate() {
            if keys.last() != Some(k) {
                keys.push(*k);
                starts.push(at as u32);
            }
        }
        starts.push(pairs.len() as u32);
        let order = pairs.into_iter().map(|(_, i)| i).collect();
        PointGrid {
            cell,
            keys,
            starts,
            order,
        }
    }

    /// Calls `f` with the index of every point in the cells a cube of half-edge `r` around `x` touches (a
    /// superset of those within `r`), cell by cell in key order and by index within a cell: a fixed order.
    pub(crate) fn near(&self, x: [f32; 3], r: f32, mut f: impl FnMut(u32)) {
        let lo = cell_of([x[0] - r, x[1] - r, x[2] - r], self.cell);
        let hi = cell_of([x[0] + r, x[1] + r, x[2] + r], self.cell);
        for cx in lo[0]..=hi[0] {
            for cy in lo[1]..=hi[1] {
                for cz in lo[2]..=hi[2] {
                    if let Ok(at) = self.keys.binary_search(&key([cx, cy, cz])) {
                        let (a, b) = (self.starts[at] as usize, self.starts[at + 1] as usize);
                        self.order[a..b].iter().for_each(|&i| f(i));
                    }
                }
            }
        }
    }
}

/// The cell of edge `cell` holding `p`.
pub(crate) fn cell_of(p: [f32; 3], cell: f32) -> [i64; 3] {
    p.map(|v| (v / cell).floor() as i64)
}

/// Oriented surface samples: positions on the surface and unit normals pointing outside.
pub(crate) struct Surfels {
    /// Positions, metres from the map's origin.
    pub q: Vec<[f32; 3]>,
    /// Unit normals.
    pub n: Vec<[f32; 3]>,
}

/// How the distance is weighted and where it is defined.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    /// No distance farther than this from every sample, metres.
    pub support: f32,
    /// Gaussian width of the weights, metres.
    pub sigma: f32,
}

/// The signed distance at `x` (NaN where no sample lies within the support), with `scratch` reused between
/// calls.
pub(crate) fn distance_at(
    x: [f32; 3],
    s: &Surfels,
    grid: &PointGrid,
    k: Kernel,
    scratch: &mut Vec<(u32, f32)>,
) -> f32 {
    scratch.clear();
    let r2 = k.support * k.support;
    let mut nearest = (f32::INFINITY, u32::MAX);
    grid.near(x, k.support, |i| {
        let d2 = dist2(x, s.q[i as usize]);
        if d2 <= r2 {
            scratch.push((i, d2));
            if (d2, i) < nearest {
                nearest = (d2, i);
            }
        }
    });
    if scratch.is_empty() {
        return f32::NAN;
    }
    let reference = s.n[nearest.1 as usize];
    let inv = -0.5 / (k.sigma * k.sigma);
    let (mut sum, mut wsum) = (0.0f64, 0.0f64);
    for &(i, d2) in scratch.iter() {
        let n = s.n[i as usize];
        if dot(n, reference) <= 0.0 {
            continue;
        }
        let q = s.q[i as usize];
        let w = f64::from((d2 * inv).exp());
        let d = dot(n, [x[0] - q[0], x[1] - q[1], x[2] - q[2]]);
        sum += w * f64::from(d);
        wsum += w;
    }
    if wsum > 0.0 {
        (sum / wsum) as f32
    } else {
        f32::NAN
    }
}

/// Squared distance.
pub(crate) fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    dot(d, d)
}

/// Dot product.
pub(crate) fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
