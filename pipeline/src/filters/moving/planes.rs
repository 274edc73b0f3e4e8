//! The local surface in each occupied voxel, so that a ray grazing a surface does not carve it.
//!
//! Why: a ray that hits the ground 20 m away from a sensor 1.6 m up runs less than a voxel above the ground for
//! its last metre or more, crossing ground voxels that hold ground points. Plain voxel carving (DUFOMap) frees
//! them unless the same scan hit close by (its d_p margin), which a sparse scan (a Livox, a far ring) does not;
//! on Aerie's simulated Livox sequences that removed a sixth of the static points, most of them ground. A ray
//! contradicts a surface only where it passes through it: so each occupied voxel gets the plane fitted to the
//! points of its 3x3x3 neighbourhood (centroid, normal from the smallest eigenvector, thickness from its
//! eigenvalue), and a ray frees the voxel only when its segment inside the voxel crosses that plane or comes
//! within the plane's thickness of it. Voxels whose points are not a plane (a person's feet on the floor, a
//! pole seen as a line, a lone point) keep plain carving, so what moved is still removed.
//!
//! Deterministic: points are sorted by (voxel, index) and each voxel's sums are taken in that order.

use rayon::prelude::*;

use super::grid::{Cell, VoxelGrid};
use crate::features::sym_eigen3;

/// A voxel's surface, relative to the voxel's centre; `tol_m` infinite when the points are not a plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Plane {
    /// Centroid of the neighbourhood's points, metres from the voxel centre.
    pub c: [f32; 3],
    /// Unit normal.
    pub n: [f32; 3],
    /// Half thickness of the plane's layer, metres; infinite: no plane, every ray counts as crossing.
    pub tol_m: f32,
}

impl Plane {
    pub const NONE: Plane = Plane {
        c: [0.0; 3],
        n: [0.0, 0.0, 1.0],
        tol_m: f32::INFINITY,
    };

    /// Whether a ray from `o` (metres from the voxel centre) along the unit `u`, carving up to `t_end`, passes
    /// through the plane's layer inside the voxel (edge `voxel_m`, grown by a quarter on each side): the point
    /// where it pierces the plane lies in the voxel, and the whole layer (the tolerance on both sides, measured
    /// along the ray) lies within the carved part. A ray grazing the surface pierces it far away or at its own
    /// hit, beyond `t_end`, and so frees nothing.
    pub fn crossed(&self, o: [f64; 3], u: [f64; 3], t_end: f64, voxel_m: f64) -> bool {
        if self.tol_m.is_infinite() {
            return true;
        }
        let n = self.n.map(f64::from);
        let c = self.c.map(f64::from);
        let along = n[0] * u[0] + n[1] * u[1] + n[2] * u[2];
        if along.abs() < 1e-6 {
            return false;
        }
        let t = (0..3).map(|k| n[k] * (c[k] - o[k])).sum::<f64>() / along;
        let dt = f64::from(self.tol_m) / along.abs();
        if t - dt < 0.0 || t + dt > t_end {
            return false;
        }
        let half = 0.75 * voxel_m;
        (0..3).all(|k| (o[k] + u[k] * t).abs() <= half)
    }
}

/// Sums of a voxel's points relative to its centre: count, x y z, xx xy xz yy yz zz.
type Moments = [f64; 10];

/// Planes for every occupied voxel of `grid` (by id) from `points` (local metres); `tol_m` is added to twice the
/// plane's thickness.
pub(super) fn fit_planes(grid: &VoxelGrid, points: &[[f32; 3]], tol_m: f64) -> Vec<Plane> {
    let mut keys: Vec<u64> = points
        .par_iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let id = grid.id(grid.cell_of(p.map(f64::from))?)?;
            Some(((id as u64) << 32) | i as u64)
        })
        .collect();
    keys.par_sort_unstable();
    let mut starts = vec![0usize];
    for k in 1..keys.len() {
        if keys[k] >> 32 != keys[k - 1] >> 32 {
            starts.push(k);
        }
    }
    starts.push(keys.len());
    let point = |k: u64| points[(k & 0xffff_ffff) as usize].map(f64::from);
    // Per voxel (by id, as every occupied voxel holds a point): its cell and its moments.
    let voxels: Vec<(Cell, [f32; 10])> = starts
        .par_windows(2)
        .map(|w| {
            let run = &keys[w[0]..w[1]];
            let cell = grid.cell_of(point(run[0])).unwrap_or([0; 3]);
            let centre = grid.centre(cell);
            let mut m = [0.0f64; 10];
            for &k in run {
                let p = point(k);
                add(&mut m, [0, 1, 2].map(|a| p[a] - centre[a]));
            }
            (cell, m.map(|v| v as f32))
        })
        .collect();
    drop(keys);
    voxels
        .par_iter()
        .map(|(cell, _)| {
            let p = plane_of(grid, &voxels, *cell, 1, tol_m);
            if p.tol_m.is_finite() {
                p
            } else {
                // Sparse points (a far ground seen by few beams): a wider neighbourhood may still show the plane.
                plane_of(grid, &voxels, *cell, 2, tol_m)
            }
        })
        .collect()
}

fn add(m: &mut Moments, p: [f64; 3]) {
    m[0] += 1.0;
    m[1] += p[0];
    m[2] += p[1];
    m[3] += p[2];
    m[4] += p[0] * p[0];
    m[5] += p[0] * p[1];
    m[6] += p[0] * p[2];
    m[7] += p[1] * p[1];
    m[8] += p[1] * p[2];
    m[9] += p[2] * p[2];
}

/// The plane of the points within `r` voxels of `cell` (a (2r+1)^3 neighbourhood), relative to its centre.
fn plane_of(
    grid: &VoxelGrid,
    voxels: &[(Cell, [f32; 10])],
    cell: Cell,
    r: i64,
    tol_m: f64,
) -> Plane {
    let v = grid.voxel_m;
    let mut m = [0.0f64; 10];
    for dz in -r..=r {
        for dy in -r..=r {
            for dx in -r..=r {
                let Some(id) = grid.id([cell[0] + dx, cell[1] + dy, cell[2] + dz]) else {
                    continue;
                };
                let s = voxels[id].1.map(f64::from);
                // Shift the neighbour's sums by its centre's offset d: sum(p + d) and sum((p + d)(p + d)^T).
                let d = [dx as f64 * v, dy as f64 * v, dz as f64 * v];
                let n = s[0];
                let sp = [s[1], s[2], s[3]];
                let pairs = [
                    (0, 0, 4),
                    (0, 1, 5),
                    (0, 2, 6),
                    (1, 1, 7),
                    (1, 2, 8),
                    (2, 2, 9),
                ];
                m[0] += n;
                for a in 0..3 {
                    m[1 + a] += sp[a] + n * d[a];
                }
                for (a, b, k) in pairs {
                    m[k] += s[k] + sp[a] * d[b] + d[a] * sp[b] + n * d[a] * d[b];
                }
            }
        }
    }
    let n = m[0];
    if n < 6.0 {
        return Plane::NONE;
    }
    let mu = [m[1] / n, m[2] / n, m[3] / n];
    let c = |k: usize, a: usize, b: usize| m[k] / n - mu[a] * mu[b];
    let cov = [
        [c(4, 0, 0), c(5, 0, 1), c(6, 0, 2)],
        [c(5, 0, 1), c(7, 1, 1), c(8, 1, 2)],
        [c(6, 0, 2), c(8, 1, 2), c(9, 2, 2)],
    ];
    let (values, vectors) = sym_eigen3(cov);
    let (l2, l3) = (values[1].max(0.0), values[2].max(0.0));
    // A plane spreads along two axes: the second eigenvalue well above the third (a line or a blob has not).
    if !(l2 > 9.0 * l3 && l2 > (0.2 * v).powi(2)) {
        return Plane::NONE;
    }
    Plane {
        c: mu.map(|x| x as f32),
        n: vectors[2].map(|x| x as f32),
        tol_m: (2.0 * l3.sqrt() + tol_m) as f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_is_a_plane_that_grazing_rays_do_not_cross() {
        let mut pts = Vec::new();
        for i in 0..30 {
            for j in 0..30 {
                pts.push([0.01 + 0.02 * i as f32, 0.01 + 0.02 * j as f32, 0.03]);
            }
        }
        let mut g = VoxelGrid::new([0.0; 3], [0.59, 0.59, 0.09], 0.1).unwrap();
        g.occupy(&pts);
        g.seal();
        let planes = fit_planes(&g, &pts, 0.01);
        let p = planes[g.id([2, 2, 0]).unwrap()];
        assert!(p.n[2].abs() > 0.99 && p.tol_m < 0.02, "{p:?}");
        // The voxel's centre is at z 0.05, the floor at 0.03 (-0.02 from the centre). A ray sloping down at 5
        // degrees toward a hit 2 m on pierces the floor beyond the voxel: it grazes, and frees nothing...
        let (s5, c5) = 5f64.to_radians().sin_cos();
        assert!(!p.crossed([-1.0, 0.0, 0.05 + 0.02 * s5], [c5, 0.0, -s5], 2.0, 0.1));
        // ...one going steeply down through the voxel to the ground below crosses it...
        let (s60, c60) = 60f64.to_radians().sin_cos();
        assert!(p.crossed([-c60, 0.0, s60 - 0.02], [c60, 0.0, -s60], 2.0, 0.1));
        // ...unless it ends within the layer.
        assert!(!p.crossed([-c60, 0.0, s60 - 0.02], [c60, 0.0, -s60], 1.0, 0.1));
    }
}
