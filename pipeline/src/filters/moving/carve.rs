//! Free-space carving of one scan: protect the voxels near the scan's own hits, then walk each ray from the
//! sensor through the grid (Amanatides and Woo's voxel traversal, 1987) and mark the occupied voxels it crosses
//! free, stopping a margin short of the hit (range noise plus the beam's footprint).
//!
//! The result over all scans is the union of "crossed by scan k and not protected by scan k": an OR of bits,
//! so it does not depend on the order in which rays or scans are processed, nor on the number of threads.

use rayon::prelude::*;

use super::grid::{Cell, VoxelGrid};
use super::planes::Plane;
use super::seen::Seen;

/// How far short of its hit a ray stops carving, and how far around a scan's hits that scan carves nothing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Margins {
    /// Fixed distance short of the hit, metres (range noise and the thickness of a registered surface).
    pub noise_m: f64,
    /// Distance short of the hit per metre of range (the beam's footprint, radians).
    pub footprint_rad: f64,
    /// Voxels around each hit voxel that the same scan never marks free (localisation error, discretisation).
    pub protect_voxels: i64,
    /// Rays longer than this carve nothing (their hits still protect), metres.
    pub max_range_m: f64,
    /// A crossed voxel is freed only when at most this many of its 26 neighbours went unseen by the scan.
    pub max_unseen: usize,
}

/// What carving one scan did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ScanCarve {
    /// Rays walked.
    pub rays: u64,
    /// Occupied voxels this scan marked free that no earlier scan had.
    pub freed: u64,
    /// Rays that crossed a voxel holding this scan's own hits in the first half of their length: a sensor
    /// cannot see through its own surfaces, so many of these mean the scan's pose is wrong.
    pub self_crossings: u64,
}

/// One scan to carve.
pub(super) struct ScanRays<'a> {
    /// The scan's number (0-based).
    pub index: u32,
    /// The sensor position, local metres.
    pub origin: [f64; 3],
    /// Number of points.
    pub count: usize,
    /// The k-th point, local metres, `k < count`.
    pub point: &'a (dyn Fn(usize) -> [f64; 3] + Sync),
}

/// Carve one scan: protect its hits, walk its rays, free the crossed voxels that pass the void test.
pub(super) fn carve_scan(
    grid: &VoxelGrid,
    scan: &ScanRays<'_>,
    planes: &[Plane],
    seen: &Seen,
    m: &Margins,
) -> ScanCarve {
    let (origin, count, point) = (scan.origin, scan.count, scan.point);
    let tag = scan.index + 1;
    let chunks: Vec<std::ops::Range<usize>> = (0..count)
        .step_by(super::CHUNK)
        .map(|s| s..(s + super::CHUNK).min(count))
        .collect();
    protect_hits(grid, tag, &chunks, point, m.protect_voxels);
    let (rays, self_crossings, candidates) = chunks
        .par_iter()
        .map(|ks| {
            let (mut rays, mut crossings, mut found) = (0u64, 0u64, Vec::new());
            for k in ks.clone() {
                let Some(ray) = Ray::new(origin, point(k), m) else {
                    continue;
                };
                rays += 1;
                let mut crossed = false;
                traverse(grid, &ray, |c, t_in, _| {
                    if let Some(id) = grid.id(c) {
                        if grid.protected_by(id, tag) {
                            crossed |= t_in < 0.5 * ray.length;
                            return;
                        }
                        let centre = grid.centre(c);
                        let o = [0, 1, 2].map(|a| ray.origin[a] - centre[a]);
                        if !grid.is_free(id)
                            && planes[id].crossed(o, ray.dir, ray.end, grid.voxel_m)
                            && grid.list(id, tag)
                        {
                            found.push((id as u32, c));
                        }
                    }
                    seen.mark(grid, c, tag);
                });
                crossings += u64::from(crossed);
            }
            (rays, crossings, found)
        })
        .reduce(
            || (0, 0, Vec::new()),
            |mut a, mut b| {
                a.2.append(&mut b.2);
                (a.0 + b.0, a.1 + b.1, a.2)
            },
        );
    // Every ray of the scan has marked what it saw: free the crossed voxels whose neighbours it saw too. Each
    // voxel is listed once per scan (whichever thread listed it), so the count is the same on any thread count.
    let freed = candidates
        .par_iter()
        .filter(|&&(id, c)| {
            seen.unseen_neighbours(grid, c, tag) <= m.max_unseen && grid.set_free(id as usize)
        })
        .count() as u64;
    ScanCarve {
        rays,
        freed,
        self_crossings,
    }
}

/// Tag every occupied voxel within `r` voxels of one of the scan's points with the scan's `tag`.
fn protect_hits(
    grid: &VoxelGrid,
    tag: u32,
    chunks: &[std::ops::Range<usize>],
    point: &(dyn Fn(usize) -> [f64; 3] + Sync),
    r: i64,
) {
    chunks.par_iter().for_each(|ks| {
        for k in ks.clone() {
            let Some(c) = grid.cell_of(point(k)) else {
                continue;
            };
            for dz in -r..=r {
                for dy in -r..=r {
                    for dx in -r..=r {
                        if let Some(id) = grid.id([c[0] + dx, c[1] + dy, c[2] + dz]) {
                            grid.protect(id, tag);
                        }
                    }
                }
            }
        }
    });
}

/// A ray from the sensor toward a hit, carving over `[0, end]` of its unit direction.
struct Ray {
    origin: [f64; 3],
    dir: [f64; 3],
    length: f64,
    end: f64,
}

impl Ray {
    fn new(origin: [f64; 3], hit: [f64; 3], m: &Margins) -> Option<Ray> {
        let d = [0, 1, 2].map(|a| hit[a] - origin[a]);
        let length = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if !(length > 0.0 && length <= m.max_range_m) {
            return None;
        }
        let end = length - m.noise_m - length * m.footprint_rad;
        (end > 0.0).then(|| Ray {
            origin,
            dir: d.map(|x| x / length),
            length,
            end,
        })
    }
}

/// Visit every voxel of the grid that `[0, ray.end]` of the ray crosses, in order, with the ray parameters where
/// the ray enters and leaves it (or ends).
fn traverse(grid: &VoxelGrid, ray: &Ray, mut visit: impl FnMut(Cell, f64, f64)) {
    let v = grid.voxel_m;
    let (mut t0, mut t1) = (0.0f64, ray.end);
    for a in 0..3 {
        let lo = grid.min[a];
        let hi = grid.min[a] + grid.dims[a] as f64 * v;
        let (o, d) = (ray.origin[a], ray.dir[a]);
        if d.abs() < 1e-12 {
            if o < lo || o >= hi {
                return;
            }
            continue;
        }
        let (ta, tb) = ((lo - o) / d, (hi - o) / d);
        t0 = t0.max(ta.min(tb));
        t1 = t1.min(ta.max(tb));
    }
    if !matches!(t0.partial_cmp(&t1), Some(std::cmp::Ordering::Less)) {
        return;
    }
    let start = [0, 1, 2].map(|a| ray.origin[a] + ray.dir[a] * t0);
    let mut cell = [0, 1, 2]
        .map(|a| (((start[a] - grid.min[a]) / v).floor() as i64).clamp(0, grid.dims[a] - 1));
    let step = ray.dir.map(|d| if d > 0.0 { 1 } else { -1 });
    let mut next = [0.0f64; 3];
    let mut delta = [f64::INFINITY; 3];
    for a in 0..3 {
        let d = ray.dir[a];
        if d.abs() < 1e-12 {
            next[a] = f64::INFINITY;
            continue;
        }
        let edge = grid.min[a] + (cell[a] + i64::from(d > 0.0)) as f64 * v;
        next[a] = (edge - ray.origin[a]) / d;
        delta[a] = v / d.abs();
    }
    let mut t = t0;
    loop {
        let a = if next[0] <= next[1] && next[0] <= next[2] {
            0
        } else if next[1] <= next[2] {
            1
        } else {
            2
        };
        visit(cell, t, next[a].min(t1));
        t = next[a];
        if t > t1 {
            return;
        }
        cell[a] += step[a];
        if cell[a] < 0 || cell[a] >= grid.dims[a] {
            return;
        }
        next[a] += delta[a];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn margins() -> Margins {
        Margins {
            noise_m: 0.0,
            footprint_rad: 0.0,
            protect_voxels: 0,
            max_range_m: f64::INFINITY,
            max_unseen: 26,
        }
    }

    #[test]
    fn traversal_visits_each_crossed_voxel_once_in_order() {
        let g = VoxelGrid::new([0.0; 3], [0.99, 0.99, 0.99], 0.1).unwrap();
        let ray = Ray::new([0.05, 0.05, 0.05], [0.95, 0.05, 0.05], &margins()).unwrap();
        let mut cells = Vec::new();
        traverse(&g, &ray, |c, _, _| cells.push(c));
        assert_eq!(cells, (0..10).map(|i| [i, 0, 0]).collect::<Vec<_>>());
        // A diagonal ray from outside the box enters it and crosses x, y and z steps.
        let ray = Ray::new([-1.0, -1.0, -1.0], [0.55, 0.45, 0.35], &margins()).unwrap();
        let mut cells = Vec::new();
        traverse(&g, &ray, |c, _, _| cells.push(c));
        // It enters through the z = 0 face (z is its slowest axis), at x = 0.148.
        assert_eq!(cells.first(), Some(&[1, 0, 0]));
        assert_eq!(cells.last(), Some(&[5, 4, 3]));
        for w in cells.windows(2) {
            let moved: i64 = (0..3).map(|a| (w[1][a] - w[0][a]).abs()).sum();
            assert_eq!(moved, 1, "{cells:?}");
        }
    }

    #[test]
    fn margin_stops_short_of_the_hit() {
        let m = Margins {
            noise_m: 0.27,
            ..margins()
        };
        let ray = Ray::new([0.05, 0.05, 0.05], [0.95, 0.05, 0.05], &m).unwrap();
        let g = VoxelGrid::new([0.0; 3], [0.99, 0.99, 0.99], 0.1).unwrap();
        let mut cells = Vec::new();
        traverse(&g, &ray, |c, _, _| cells.push(c));
        assert_eq!(cells.last(), Some(&[6, 0, 0]));
        assert!(Ray::new([0.0; 3], [0.2, 0.0, 0.0], &m).is_none());
    }
}
