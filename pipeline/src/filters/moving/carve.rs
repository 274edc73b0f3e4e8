//! Free-space carving of one scan: protect the voxels near the scan's own hits, then walk each ray from the
//! sensor through the grid (Amanatides and Woo's voxel traversal, 1987) and mark the occupied voxels it crosses
//! free, stopping a margin short of the hit (range noise plus the beam's footprint).
//!
//! Each scan votes once for each voxel it crossed away from its own hits (and whose neighbours it saw): the
//! votes are counts of scans, decided after all of a scan's rays, so they do not depend on the order in which
//! rays are processed, nor on the number of threads.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::grid::{Cell, VoxelGrid};
use super::planes::Plane;
use super::seen::{BRICK, Seen};

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

/// Carve one scan: protect its hits, walk its rays, count the crossed voxels that pass the void test as seen free.
pub(super) fn carve_scan(
    grid: &VoxelGrid,
    scan: &ScanRays<'_>,
    planes: &[Plane],
    seen: &Seen,
    m: &Margins,
) -> ScanCarve {
    let (origin, count, point) = (scan.origin, scan.count, scan.point);
    let tag = scan.index + 1;
    let chunks = chunks(count);
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
                traverse(grid, seen, &ray, |c, i, t_in| {
                    if let Some(id) = grid.id_at(i) {
                        if grid.protected_by(id, tag) {
                            crossed |= t_in < 0.5 * ray.length;
                            return;
                        }
                        if !grid.is_free(id) {
                            let centre = grid.centre(c);
                            let o = [0, 1, 2].map(|a| ray.origin[a] - centre[a]);
                            if planes[id].crossed(o, ray.dir, ray.end, grid.voxel_m)
                                && grid.list(id, tag)
                            {
                                found.push((id as u32, c));
                            }
                        }
                    }
                    seen.mark_at(i, tag);
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
    // Every ray of the scan has marked what it saw: count the crossed voxels whose neighbours it saw too. Each
    // voxel is listed once per scan (whichever thread listed it), so the counts are the same on any thread count.
    let freed = candidates
        .par_iter()
        .filter(|&&(id, c)| {
            seen.unseen_neighbours(grid, c, tag) <= m.max_unseen && grid.add_free(id as usize)
        })
        .count() as u64;
    ScanCarve {
        rays,
        freed,
        self_crossings,
    }
}

/// The scan's points in chunks of `CHUNK` (rayon's units of work).
fn chunks(count: usize) -> Vec<std::ops::Range<usize>> {
    (0..count)
        .step_by(super::CHUNK)
        .map(|s| s..(s + super::CHUNK).min(count))
        .collect()
}

/// Per occupied voxel (by id), how many scans have a point in it. `grid`'s hit marks are left set: call
/// [`VoxelGrid::reset_hits`] before carving.
pub(super) fn count_hits(
    grid: &VoxelGrid,
    scans: usize,
    count: &(dyn Fn(usize) -> usize + Sync),
    point: &(dyn Fn(usize, usize) -> [f64; 3] + Sync),
) -> Vec<u32> {
    let hits: Vec<AtomicU32> = (0..grid.occupied_count())
        .map(|_| AtomicU32::new(0))
        .collect();
    for s in 0..scans {
        chunks(count(s)).par_iter().for_each(|ks| {
            for k in ks.clone() {
                if let Some(id) = grid.cell_of(point(s, k)).and_then(|c| grid.id(c))
                    && grid.first_hit(id, s as u32 + 1)
                {
                    hits[id].fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    hits.into_iter().map(AtomicU32::into_inner).collect()
}

/// Tag every occupied voxel within `r` voxels of one of the scan's points with the scan's `tag`. Each hit voxel's
/// neighbourhood is tagged once per scan, however many of the scan's points it holds.
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
            if !grid.id(c).is_some_and(|id| grid.first_hit(id, tag)) {
                continue;
            }
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

/// Visit the voxels of the grid that `[0, ray.end]` of the ray crosses and that lie near a point (`seen`'s near
/// bits), in order, with their linear index and the ray parameter where the ray enters them.
///
/// Amanatides and Woo's traversal on two levels, as DUFOMap walks rays on a multi-resolution grid: over bricks
/// of `BRICK`^3 voxels, and voxel by voxel only inside bricks that hold a voxel near a point. The divisions
/// happen once per ray and brick; each step adds one axis's increment to its crossing parameter and one stride
/// to the linear index, so crossing empty space costs a few adds per brick.
fn traverse(grid: &VoxelGrid, seen: &Seen, ray: &Ray, mut visit: impl FnMut(Cell, usize, f64)) {
    let Some((t0, t1)) = clip(grid, ray) else {
        return;
    };
    let edge = BRICK as f64 * grid.voxel_m;
    let bdims = seen.brick_dims();
    let mut dda = Dda::new(grid.min, edge, bdims, [[0; 3], bdims], ray, t0);
    let mut t = t0;
    loop {
        let (a, t_out) = dda.exit();
        if seen.brick_near(dda.cell) {
            let lo = dda.cell.map(|c| c * BRICK);
            let hi = [0, 1, 2].map(|k| (lo[k] + BRICK).min(grid.dims[k]));
            walk_voxels(grid, seen, ray, [lo, hi], t, t_out.min(t1), &mut visit);
        }
        if t_out > t1 || !dda.step(a) {
            return;
        }
        t = t_out;
    }
}

/// The voxel-level traversal of `[t_in, t_out]` of the ray inside the brick `[lo, hi)` (voxel coordinates).
fn walk_voxels(
    grid: &VoxelGrid,
    seen: &Seen,
    ray: &Ray,
    [lo, hi]: [Cell; 2],
    t_in: f64,
    t_out: f64,
    visit: &mut impl FnMut(Cell, usize, f64),
) {
    let near = seen.near_bits();
    let mut dda = Dda::new(grid.min, grid.voxel_m, grid.dims, [lo, hi], ray, t_in);
    let strides = grid.strides();
    let jump = [0, 1, 2].map(|k| dda.step[k] * strides[k]);
    let mut i = grid.linear(dda.cell) as i64;
    let mut t = t_in;
    loop {
        let iu = i as usize;
        if near[iu / 64] & (1u64 << (iu % 64)) != 0 {
            visit(dda.cell, iu, t);
        }
        let (a, next) = dda.exit();
        if next > t_out || !dda.step(a) {
            return;
        }
        i += jump[a];
        t = next;
    }
}

/// Amanatides and Woo's stepping state over cells of edge `edge` from `min`, kept inside `[lo, hi)`.
struct Dda {
    cell: Cell,
    step: [i64; 3],
    next: [f64; 3],
    delta: [f64; 3],
    /// Steps left along each axis before leaving `[lo, hi)`.
    left: [i64; 3],
}

impl Dda {
    /// The state at parameter `t` of the ray (the cell holding that point, clamped into `[lo, hi)`).
    fn new(
        min: [f64; 3],
        edge: f64,
        dims: [i64; 3],
        [lo, hi]: [Cell; 2],
        ray: &Ray,
        t: f64,
    ) -> Dda {
        let mut d = Dda {
            cell: [0; 3],
            step: [0; 3],
            next: [f64::INFINITY; 3],
            delta: [f64::INFINITY; 3],
            left: [0; 3],
        };
        for a in 0..3 {
            let (o, u) = (ray.origin[a], ray.dir[a]);
            let c = ((o + u * t - min[a]) / edge).floor() as i64;
            d.cell[a] = c.clamp(lo[a], hi[a].min(dims[a]) - 1);
            if u.abs() < 1e-12 {
                continue;
            }
            let up = u > 0.0;
            d.next[a] = (min[a] + (d.cell[a] + i64::from(up)) as f64 * edge - o) / u;
            d.delta[a] = edge / u.abs();
            d.step[a] = if up { 1 } else { -1 };
            d.left[a] = if up {
                hi[a].min(dims[a]) - 1 - d.cell[a]
            } else {
                d.cell[a] - lo[a]
            };
        }
        d
    }

    /// The axis whose cell boundary the ray meets first, and where.
    #[inline]
    fn exit(&self) -> (usize, f64) {
        let n = self.next;
        let a = if n[0] <= n[1] && n[0] <= n[2] {
            0
        } else if n[1] <= n[2] {
            1
        } else {
            2
        };
        (a, n[a])
    }

    /// Step into the next cell along axis `a`; false when that leaves `[lo, hi)`.
    #[inline]
    fn step(&mut self, a: usize) -> bool {
        if self.left[a] == 0 {
            return false;
        }
        self.left[a] -= 1;
        self.cell[a] += self.step[a];
        self.next[a] += self.delta[a];
        true
    }
}

/// The part `[t0, t1]` of `[0, ray.end]` inside the grid's box, `None` when the ray misses it.
fn clip(grid: &VoxelGrid, ray: &Ray) -> Option<(f64, f64)> {
    let v = grid.voxel_m;
    let (mut t0, mut t1) = (0.0f64, ray.end);
    for a in 0..3 {
        let lo = grid.min[a];
        let hi = grid.min[a] + grid.dims[a] as f64 * v;
        let (o, d) = (ray.origin[a], ray.dir[a]);
        if d.abs() < 1e-12 {
            if o < lo || o >= hi {
                return None;
            }
            continue;
        }
        let (ta, tb) = ((lo - o) / d, (hi - o) / d);
        t0 = t0.max(ta.min(tb));
        t1 = t1.min(ta.max(tb));
    }
    (t0 < t1).then_some((t0, t1))
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

    /// A grid over [0, 0.99]^3 with every voxel occupied (so every voxel is near a point).
    fn full() -> (VoxelGrid, Seen) {
        let mut g = VoxelGrid::new([0.0; 3], [0.99, 0.99, 0.99], 0.1).unwrap();
        let pts: Vec<[f32; 3]> = (0..1000)
            .map(|i| [i % 10, (i / 10) % 10, i / 100].map(|k| 0.05 + 0.1 * k as f32))
            .collect();
        g.occupy(&pts);
        g.seal();
        let seen = Seen::new(&g);
        (g, seen)
    }

    fn cells_of(g: &VoxelGrid, seen: &Seen, ray: &Ray) -> Vec<Cell> {
        let mut cells = Vec::new();
        traverse(g, seen, ray, |c, i, _| {
            assert_eq!(g.linear(c), i);
            cells.push(c);
        });
        cells
    }

    #[test]
    fn traversal_visits_each_crossed_voxel_once_in_order() {
        let (g, seen) = full();
        let ray = Ray::new([0.05, 0.05, 0.05], [0.95, 0.05, 0.05], &margins()).unwrap();
        let cells = cells_of(&g, &seen, &ray);
        assert_eq!(cells, (0..10).map(|i| [i, 0, 0]).collect::<Vec<_>>());
        // A diagonal ray from outside the box enters it and crosses x, y and z steps.
        let ray = Ray::new([-1.0, -1.0, -1.0], [0.55, 0.45, 0.35], &margins()).unwrap();
        let cells = cells_of(&g, &seen, &ray);
        // It enters through the z = 0 face (z is its slowest axis), at x = 0.148.
        assert_eq!(cells.first(), Some(&[1, 0, 0]));
        assert_eq!(cells.last(), Some(&[5, 4, 3]));
        for w in cells.windows(2) {
            let moved: i64 = (0..3).map(|a| (w[1][a] - w[0][a]).abs()).sum();
            assert_eq!(moved, 1, "{cells:?}");
        }
    }

    /// Skipping bricks far from every point visits exactly the near voxels a plain voxel-by-voxel walk visits.
    #[test]
    fn brick_skipping_visits_what_the_plain_walk_visits() {
        let mut state = 12345u64;
        let mut rnd = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut g = VoxelGrid::new([-1.0, -2.0, 0.5], [3.0, 1.7, 2.4], 0.1).unwrap();
        let pts: Vec<[f32; 3]> = (0..300)
            .map(|_| [-1.0 + 4.0 * rnd(), -2.0 + 3.7 * rnd(), 0.5 + 1.9 * rnd()].map(|x| x as f32))
            .collect();
        g.occupy(&pts);
        g.seal();
        let seen = Seen::new(&g);
        let whole = [[0; 3], g.dims];
        for _ in 0..2000 {
            let o = [-3.0 + 8.0 * rnd(), -4.0 + 7.0 * rnd(), -0.5 + 4.0 * rnd()];
            let h = [-1.0 + 4.0 * rnd(), -2.0 + 3.7 * rnd(), 0.5 + 1.9 * rnd()];
            let Some(ray) = Ray::new(o, h, &margins()) else {
                continue;
            };
            let mut plain = Vec::new();
            if let Some((t0, t1)) = clip(&g, &ray) {
                walk_voxels(&g, &seen, &ray, whole, t0, t1, &mut |c, _, _| plain.push(c));
            }
            assert_eq!(cells_of(&g, &seen, &ray), plain, "ray {o:?} -> {h:?}");
        }
    }

    #[test]
    fn margin_stops_short_of_the_hit() {
        let m = Margins {
            noise_m: 0.27,
            ..margins()
        };
        let ray = Ray::new([0.05, 0.05, 0.05], [0.95, 0.05, 0.05], &m).unwrap();
        let (g, seen) = full();
        let cells = cells_of(&g, &seen, &ray);
        assert_eq!(cells.last(), Some(&[6, 0, 0]));
        assert!(Ray::new([0.0; 3], [0.2, 0.0, 0.0], &m).is_none());
    }
}
