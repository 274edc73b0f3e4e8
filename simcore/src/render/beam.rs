//! The beam-driven renderer: each beam marches through a coarse grid over the buckets, then through a fine
//! grid inside each bucket it meets, and takes the nearest disk it crosses (oriented disks of radius
//! sqrt(3)/2 * r_map for points on planes, disks facing the beam for the others). Beams are independent, so
//! the result does not depend on the number of threads.

use rayon::prelude::*;

use aerie_pipeline::map::MapView;

use super::{Ctx, Hit, MIN_COS_PLANE, dot, sub};

/// Fine cell edge in units of r_map: ~16 points of a surface per cell, each inserted in ~3 cells.
const FINE_CELL: f32 = 4.0;
const MAX_FINE_DIM: f32 = 64.0;
const MAX_COARSE_CELLS: f64 = 16.0e6;
/// Slack of the cheap distance-to-ray test that screens points before the exact disk test, as a factor on
/// the disk radius: an oriented disk's hit lies within rho of its point, so the ray passes within rho of it;
/// the slack absorbs rounding of the exact test (a far grazing plane hit).
const SCREEN_SLACK: f32 = 1.05;

/// Fine grid over one bucket's points (expanded by the disk radius).
#[derive(Clone, Copy, Debug)]
struct Grid {
    lo: [f32; 3],
    hi: [f32; 3],
    cell: [f32; 3],
    inv_cell: [f32; 3],
    dims: [i32; 3],
    /// Offset of this grid's cell starts in `BeamIndex::starts`.
    starts: usize,
    /// Offset of this grid's occupancy bits in `BeamIndex::occupied` (bits, a multiple of 64).
    occupied: usize,
}

/// Bits of a packed normal (see [`pack_normal`]).
const HAS_NORMAL: u32 = 1 << 31;
const PLANAR: u32 = 1 << 30;
const OCT_MAX: f32 = 32767.0;

/// A unit normal in 32 bits: octahedral coordinates, 15 bits each (about 5e-5 rad), plus whether the point has
/// a normal and whether it lies on a plane (plane thickness below the index's gamma_max). One word per point
/// keeps the table the exact test reads 8 times smaller than full records, so it stays in cache.
fn pack_normal(n: Option<[f32; 3]>, planar: bool) -> u32 {
    let Some(n) = n.filter(|n| n.iter().all(|v| v.is_finite())) else {
        return 0;
    };
    let s = n[0].abs() + n[1].abs() + n[2].abs();
    if !(s > 0.0) {
        return 0;
    }
    let (mut x, mut y) = (n[0] / s, n[1] / s);
    if n[2] < 0.0 {
        let sx = if x >= 0.0 { 1.0 } else { -1.0 };
        let sy = if y >= 0.0 { 1.0 } else { -1.0 };
        (x, y) = ((1.0 - y.abs()) * sx, (1.0 - x.abs()) * sy);
    }
    let q = |v: f32| ((v.clamp(-1.0, 1.0) * 0.5 + 0.5) * OCT_MAX).round() as u32;
    HAS_NORMAL | if planar { PLANAR } else { 0 } | (q(x) << 15) | q(y)
}

/// The unit normal of a packed word (meaningful when `HAS_NORMAL` is set).
#[inline]
fn unpack_normal(v: u32) -> [f32; 3] {
    let d = |q: u32| (q & 0x7FFF) as f32 * (2.0 / OCT_MAX) - 1.0;
    let (mut x, mut y) = (d(v >> 15), d(v));
    let z = 1.0 - x.abs() - y.abs();
    if z < 0.0 {
        let sx = if x >= 0.0 { 1.0 } else { -1.0 };
        let sy = if y >= 0.0 { 1.0 } else { -1.0 };
        (x, y) = ((1.0 - y.abs()) * sx, (1.0 - x.abs()) * sy);
    }
    let l = (x * x + y * y + z * z).sqrt();
    [x / l, y / l, z / l]
}

/// A point in a fine cell: 16 bytes, four to a cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Item {
    p: [f32; 3],
    /// Index into `BeamIndex::normals` and `BeamIndex::point`.
    rec: u32,
}

/// Acceleration structure of the beam renderer for one map (built once per map, O(points)).
pub struct BeamIndex {
    rho: f32,
    /// Coarse grid: origin, cell edge, dims; cell -> range of `coarse_items` (bucket ids).
    coarse_lo: [f32; 3],
    coarse_cell: f32,
    coarse_dims: [i32; 3],
    coarse_starts: Vec<u32>,
    coarse_items: Vec<u32>,
    grids: Vec<Grid>,
    starts: Vec<u32>,
    /// One bit per fine cell: whether it holds any point. Empty cells, most of those a beam crosses, are
    /// skipped by reading this table (32 times smaller than `starts`, so it stays in cache).
    occupied: Vec<u64>,
    /// Points grouped by fine cell (a point appears in every cell its disk can reach): the position the
    /// screening test reads, streamed contiguously, and the record the exact test reads for the few that pass.
    items: Vec<Item>,
    /// Per point in fine-cell order: packed normal and the point's index in the map.
    normals: Vec<u32>,
    point: Vec<u32>,
    /// Plane thickness below which the packed normals say "planar".
    gamma_max: f32,
}

/// Cell of coordinate `v` along one axis, clamped to the grid (truncation equals floor once clamped at 0).
#[inline]
fn cell_of(v: f32, lo: f32, inv_cell: f32, dim: i32) -> i32 {
    (((v - lo) * inv_cell).max(0.0) as i32).min(dim - 1)
}

/// Range of cells `[lo, hi]` along one axis touched by the interval `[a, b]`.
#[inline]
fn cell_range(a: f32, b: f32, lo: f32, cell: f32, dim: i32) -> (i32, i32) {
    let inv = 1.0 / cell;
    // Widened by a hair so that rounding at a cell boundary never drops a cell the traversal may enter.
    let eps = 1e-4 * cell;
    (
        cell_of(a - eps, lo, inv, dim),
        cell_of(b + eps, lo, inv, dim),
    )
}

/// One bucket's part of the index: its grid, cell starts (local), items (local record offsets), records.
type Part = (Grid, Vec<u32>, Vec<Item>, Vec<([f32; 3], u32, u32)>);

fn r_map_of(map: &MapView) -> f32 {
    if map.resolution.is_finite() && map.resolution > 0.0 {
        map.resolution
    } else {
        0.1
    }
}

impl BeamIndex {
    /// The plane thickness limit the index was built for.
    pub fn gamma_max(&self) -> f32 {
        self.gamma_max
    }

    /// Builds the index of `map` (parallel over buckets) for the default plane thickness limit
    /// ([`super::RenderParams::gamma_max_m`] unset: 0.5 r_map).
    pub fn build(map: &MapView) -> BeamIndex {
        BeamIndex::build_with_gamma_max(map, 0.5 * r_map_of(map))
    }

    /// Builds the index of `map`; points whose plane thickness is below `gamma_max` are treated as lying on
    /// a plane (oriented disks).
    pub fn build_with_gamma_max(map: &MapView, gamma_max: f32) -> BeamIndex {
        let r_map = r_map_of(map);
        let rho = 0.5 * 3f32.sqrt() * r_map;
        let n_points = map.positions.len() as u64;
        let valid = |b: &aerie_pipeline::map::Bucket| {
            b.count > 0
                && b.first as u64 + b.count as u64 <= n_points
                && b.min.iter().chain(b.max.iter()).all(|v| v.is_finite())
        };
        // Per-bucket fine grids, built independently then concatenated in bucket order.
        let parts: Vec<Part> = map
            .buckets
            .par_iter()
            .map(|b| {
                if !valid(b) {
                    let empty = Grid {
                        lo: [0.0; 3],
                        hi: [-1.0; 3],
                        cell: [1.0; 3],
                        inv_cell: [1.0; 3],
                        dims: [1; 3],
                        starts: 0,
                        occupied: 0,
                    };
                    return (empty, vec![0, 0], Vec::new(), Vec::new());
                }
                let lo = [b.min[0] - rho, b.min[1] - rho, b.min[2] - rho];
                let hi = [b.max[0] + rho, b.max[1] + rho, b.max[2] + rho];
                let mut dims = [1i32; 3];
                let mut cell = [1f32; 3];
                for k in 0..3 {
                    let ext = (hi[k] - lo[k]).max(1e-6);
                    dims[k] = ((ext / (FINE_CELL * r_map)).ceil().clamp(1.0, MAX_FINE_DIM)) as i32;
                    cell[k] = ext / dims[k] as f32;
                }
                let inv_cell = cell.map(|c| 1.0 / c);
                let n_cells = (dims[0] * dims[1] * dims[2]) as usize;
                let first = b.first as usize;
                let points = map
                    .positions
                    .get(first..first + b.count as usize)
                    .unwrap_or(&[]);
                let flat = |x: i32, y: i32, z: i32| ((z * dims[1] + y) * dims[0] + x) as usize;
                // Records sorted by the cell holding the point (then map order), so a cell's own points are
                // contiguous and its neighbours' close by.
                let mut order: Vec<(u32, u32)> = points
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        let c = flat(
                            cell_of(p[0], lo[0], inv_cell[0], dims[0]),
                            cell_of(p[1], lo[1], inv_cell[1], dims[1]),
                            cell_of(p[2], lo[2], inv_cell[2], dims[2]),
                        );
                        (c as u32, k as u32)
                    })
                    .collect();
                order.sort_unstable();
                let records: Vec<([f32; 3], u32, u32)> = order
                    .iter()
                    .map(|&(_, k)| {
                        let idx = first + k as usize;
                        let p = map.positions.get(idx).copied().unwrap_or([f32::NAN; 3]);
                        let normal = map.normals.and_then(|n| n.get(idx)).copied();
                        let gamma = map.gamma.and_then(|g| g.get(idx)).copied().unwrap_or(0.0);
                        (p, pack_normal(normal, gamma < gamma_max), idx as u32)
                    })
                    .collect();
                let cells_of = |p: &[f32; 3]| {
                    let x = cell_range(p[0] - rho, p[0] + rho, lo[0], cell[0], dims[0]);
                    let y = cell_range(p[1] - rho, p[1] + rho, lo[1], cell[1], dims[1]);
                    let z = cell_range(p[2] - rho, p[2] + rho, lo[2], cell[2], dims[2]);
                    (x, y, z)
                };
                let mut counts = vec![0u32; n_cells + 1];
                for r in &records {
                    let ((x0, x1), (y0, y1), (z0, z1)) = cells_of(&r.0);
                    for z in z0..=z1 {
                        for y in y0..=y1 {
                            for x in x0..=x1 {
                                if let Some(c) = counts.get_mut(flat(x, y, z) + 1) {
                                    *c += 1;
                                }
                            }
                        }
                    }
                }
                for i in 1..counts.len() {
                    counts[i] += counts[i - 1];
                }
                let mut fill = counts.clone();
                let mut items = vec![
                    Item {
                        p: [f32::NAN; 3],
                        rec: 0
                    };
                    counts.last().copied().unwrap_or(0) as usize
                ];
                for (k, r) in records.iter().enumerate() {
                    let ((x0, x1), (y0, y1), (z0, z1)) = cells_of(&r.0);
                    for z in z0..=z1 {
                        for y in y0..=y1 {
                            for x in x0..=x1 {
                                if let Some(f) = fill.get_mut(flat(x, y, z))
                                    && let Some(slot) = items.get_mut(*f as usize)
                                {
                                    *slot = Item {
                                        p: r.0,
                                        rec: k as u32,
                                    };
                                    *f += 1;
                                }
                            }
                        }
                    }
                }
                let grid = Grid {
                    lo,
                    hi,
                    cell,
                    inv_cell,
                    dims,
                    starts: 0,
                    occupied: 0,
                };
                (grid, counts, items, records)
            })
            .collect();
        let mut grids = Vec::with_capacity(parts.len());
        let mut starts = Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum());
        let mut items = Vec::with_capacity(parts.iter().map(|p| p.2.len()).sum());
        let n_records = parts.iter().map(|p| p.3.len()).sum();
        let mut normals = Vec::with_capacity(n_records);
        let mut point = Vec::with_capacity(n_records);
        let mut occupied: Vec<u64> = Vec::new();
        for (mut grid, counts, its, recs) in parts {
            grid.starts = starts.len();
            grid.occupied = occupied.len() * 64;
            let n_cells = counts.len().saturating_sub(1);
            let words = n_cells.div_ceil(64);
            let base_word = occupied.len();
            occupied.resize(base_word + words, 0);
            for (c, w) in counts.windows(2).enumerate() {
                if w[1] > w[0]
                    && let Some(word) = occupied.get_mut(base_word + c / 64)
                {
                    *word |= 1u64 << (c % 64);
                }
            }
            let base = items.len() as u32;
            starts.extend(counts.iter().map(|c| c + base));
            let rbase = normals.len() as u32;
            items.extend(its.iter().map(|i| Item {
                p: i.p,
                rec: i.rec + rbase,
            }));
            normals.extend(recs.iter().map(|r| r.1));
            point.extend(recs.iter().map(|r| r.2));
            grids.push(grid);
        }
        // Coarse grid over all expanded bucket bounds.
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for g in grids.iter().filter(|g| g.hi[0] >= g.lo[0]) {
            for k in 0..3 {
                lo[k] = lo[k].min(g.lo[k]);
                hi[k] = hi[k].max(g.hi[k]);
            }
        }
        if !(lo[0] <= hi[0]) {
            lo = [0.0; 3];
            hi = [0.0; 3];
        }
        let mut coarse_cell = if map.bucket_size.is_finite() && map.bucket_size > 0.0 {
            map.bucket_size
        } else {
            16.0 * FINE_CELL * r_map
        };
        let extent = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
        let cells_for = |c: f32| -> f64 {
            extent
                .iter()
                .map(|e| ((e / c).ceil().max(1.0)) as f64)
                .product()
        };
        while cells_for(coarse_cell) > MAX_COARSE_CELLS {
            coarse_cell *= 2.0;
        }
        let coarse_dims = extent.map(|e| (e / coarse_cell).ceil().max(1.0) as i32);
        let n_coarse = (coarse_dims[0] * coarse_dims[1] * coarse_dims[2]) as usize;
        let cflat =
            |x: i32, y: i32, z: i32| ((z * coarse_dims[1] + y) * coarse_dims[0] + x) as usize;
        let mut coarse_starts = vec![0u32; n_coarse + 1];
        let covered = |g: &Grid| {
            let x = cell_range(g.lo[0], g.hi[0], lo[0], coarse_cell, coarse_dims[0]);
            let y = cell_range(g.lo[1], g.hi[1], lo[1], coarse_cell, coarse_dims[1]);
            let z = cell_range(g.lo[2], g.hi[2], lo[2], coarse_cell, coarse_dims[2]);
            (x, y, z)
        };
        let live = |g: &Grid| g.hi[0] >= g.lo[0];
        for g in grids.iter().filter(|g| live(g)) {
            let ((x0, x1), (y0, y1), (z0, z1)) = covered(g);
            for z in z0..=z1 {
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        if let Some(c) = coarse_starts.get_mut(cflat(x, y, z) + 1) {
                            *c += 1;
                        }
                    }
                }
            }
        }
        for i in 1..coarse_starts.len() {
            coarse_starts[i] += coarse_starts[i - 1];
        }
        let mut fill = coarse_starts.clone();
        let mut coarse_items = vec![0u32; coarse_starts.last().copied().unwrap_or(0) as usize];
        for (bi, g) in grids.iter().enumerate().filter(|(_, g)| live(g)) {
            let ((x0, x1), (y0, y1), (z0, z1)) = covered(g);
            for z in z0..=z1 {
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        if let Some(f) = fill.get_mut(cflat(x, y, z))
                            && let Some(slot) = coarse_items.get_mut(*f as usize)
                        {
                            *slot = bi as u32;
                            *f += 1;
                        }
                    }
                }
            }
        }
        BeamIndex {
            rho,
            coarse_lo: lo,
            coarse_cell,
            coarse_dims,
            coarse_starts,
            coarse_items,
            grids,
            starts,
            occupied,
            items,
            normals,
            point,
            gamma_max,
        }
    }

    /// Memory held by the index, bytes.
    pub fn memory_bytes(&self) -> usize {
        4 * (self.coarse_starts.len() + self.coarse_items.len() + self.starts.len())
            + 8 * self.occupied.len()
            + self.items.len() * std::mem::size_of::<Item>()
            + self.grids.len() * std::mem::size_of::<Grid>()
            + 4 * (self.normals.len() + self.point.len())
    }
}

/// Ray parameter interval inside the box `[lo, hi]`, if any.
#[inline]
fn slab(o: [f32; 3], inv: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> Option<(f32, f32)> {
    let mut t0 = f32::NEG_INFINITY;
    let mut t1 = f32::INFINITY;
    for k in 0..3 {
        let a = (lo[k] - o[k]) * inv[k];
        let b = (hi[k] - o[k]) * inv[k];
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        // NaN (ray parallel and on the slab plane) keeps the other bounds.
        if a > t0 {
            t0 = a;
        }
        if b < t1 {
            t1 = b;
        }
    }
    (t0 <= t1).then_some((t0, t1))
}

/// 3D digital differential analyser state over a grid.
struct Dda {
    cell: [i32; 3],
    step: [i32; 3],
    t_next: [f32; 3],
    t_delta: [f32; 3],
}

impl Dda {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn new(
        o: [f32; 3],
        u: [f32; 3],
        inv: [f32; 3],
        t: f32,
        lo: [f32; 3],
        cell: [f32; 3],
        inv_cell: [f32; 3],
        dims: [i32; 3],
    ) -> Dda {
        let mut d = Dda {
            cell: [0; 3],
            step: [0; 3],
            t_next: [f32::INFINITY; 3],
            t_delta: [f32::INFINITY; 3],
        };
        for k in 0..3 {
            let p = o[k] + t * u[k];
            let c = cell_of(p, lo[k], inv_cell[k], dims[k]);
            d.cell[k] = c;
            if u[k] > 0.0 {
                d.step[k] = 1;
                d.t_next[k] = (lo[k] + (c + 1) as f32 * cell[k] - o[k]) * inv[k];
                d.t_delta[k] = cell[k] * inv[k];
            } else if u[k] < 0.0 {
                d.step[k] = -1;
                d.t_next[k] = (lo[k] + c as f32 * cell[k] - o[k]) * inv[k];
                d.t_delta[k] = -cell[k] * inv[k];
            }
        }
        d
    }

    #[inline]
    fn exit(&self) -> f32 {
        self.t_next[0].min(self.t_next[1]).min(self.t_next[2])
    }

    /// Steps to the next cell; false when it leaves the grid.
    #[inline]
    fn advance(&mut self, dims: [i32; 3]) -> bool {
        let k = if self.t_next[0] <= self.t_next[1] && self.t_next[0] <= self.t_next[2] {
            0
        } else if self.t_next[1] <= self.t_next[2] {
            1
        } else {
            2
        };
        self.cell[k] += self.step[k];
        self.t_next[k] += self.t_delta[k];
        self.cell[k] >= 0 && self.cell[k] < dims[k]
    }
}

pub(crate) fn render(ctx: &Ctx, index: &BeamIndex) -> Vec<Option<Hit>> {
    (0..ctx.beams.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(Vec::new, |visited, i| cast(ctx, index, i, visited))
        .collect()
}

/// What every disk test of one beam shares.
struct RayCtx {
    o: [f32; 3],
    u: [f32; 3],
    inv: [f32; 3],
    rho2: f32,
    screen2: f32,
    neg_screen: f32,
    planes: bool,
}

fn cast(ctx: &Ctx, index: &BeamIndex, i: usize, visited: &mut Vec<u32>) -> Option<Hit> {
    let (o, u) = ctx.ray(i);
    let inv = u.map(|c| 1.0 / c);
    let t_max = ctx.physics.max_range_m.max(0.0) + index.rho;
    let c = index.coarse_cell;
    let lo = index.coarse_lo;
    let dims = index.coarse_dims;
    let hi = [
        lo[0] + dims[0] as f32 * c,
        lo[1] + dims[1] as f32 * c,
        lo[2] + dims[2] as f32 * c,
    ];
    // Beams that miss the map's box, or leave it, end here.
    let (t0, t1) = slab(o, inv, lo, hi)?;
    let t_start = t0.max(0.0);
    let t_end = t1.min(t_max);
    if !(t_start <= t_end) {
        return None;
    }
    let screen = SCREEN_SLACK * index.rho;
    let ray = RayCtx {
        o,
        u,
        inv,
        rho2: index.rho * index.rho,
        screen2: screen * screen,
        neg_screen: -screen,
        planes: ctx.planes,
    };
    visited.clear();
    let mut best: Option<Hit> = None;
    let inv_c = 1.0 / c;
    let mut dda = Dda::new(o, u, inv, t_start, lo, [c; 3], [inv_c; 3], dims);
    loop {
        let [x, y, z] = dda.cell;
        let flat = ((z * dims[1] + y) * dims[0] + x) as usize;
        let range = match (
            index.coarse_starts.get(flat),
            index.coarse_starts.get(flat + 1),
        ) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => 0..0,
        };
        for &bucket in index.coarse_items.get(range).unwrap_or(&[]) {
            if visited.contains(&bucket) {
                continue;
            }
            visited.push(bucket);
            if let Some(g) = index.grids.get(bucket as usize) {
                trace_bucket(&ray, index, g, t_end, &mut best);
            }
        }
        let exit = dda.exit();
        if best.is_some_and(|b| b.t <= exit) || exit > t_end || !dda.advance(dims) {
            break;
        }
    }
    // The traversal keeps record indices; the frame wants map indices.
    best.and_then(|b| {
        Some(Hit {
            point: *index.point.get(b.point as usize)?,
            ..b
        })
    })
}

#[inline]
fn trace_bucket(ray: &RayCtx, index: &BeamIndex, g: &Grid, t_end: f32, best: &mut Option<Hit>) {
    let (o, u, inv) = (ray.o, ray.u, ray.inv);
    let Some((ta, tb)) = slab(o, inv, g.lo, g.hi) else {
        return;
    };
    let ta = ta.max(0.0);
    let tb = tb.min(t_end).min(best.map_or(f32::INFINITY, |b| b.t));
    if !(ta <= tb) {
        return;
    }
    let mut dda = Dda::new(o, u, inv, ta, g.lo, g.cell, g.inv_cell, g.dims);
    loop {
        let [x, y, z] = dda.cell;
        let local = ((z * g.dims[1] + y) * g.dims[0] + x) as usize;
        let bit = g.occupied + local;
        let occupied = index
            .occupied
            .get(bit / 64)
            .is_some_and(|w| w & (1u64 << (bit % 64)) != 0);
        let flat = g.starts + local;
        if occupied
            && let (Some(&a), Some(&b)) = (index.starts.get(flat), index.starts.get(flat + 1))
        {
            let cell_items = index.items.get(a as usize..b as usize).unwrap_or(&[]);
            // Screen eight points at a time into a bit mask (a branch-free loop the compiler vectorises),
            // then test exactly the few that pass, in cell order.
            let mut chunks = cell_items.chunks_exact(8);
            for chunk in &mut chunks {
                let mut mask = 0u32;
                for (j, item) in chunk.iter().enumerate() {
                    mask |= (screen(ray, item.p) as u32) << j;
                }
                while mask != 0 {
                    let j = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if let Some(item) = chunk.get(j) {
                        exact(ray, index, item, t_end, best);
                    }
                }
            }
            for item in chunks.remainder() {
                if screen(ray, item.p) {
                    exact(ray, index, item, t_end, best);
                }
            }
        }
        let exit = dda.exit();
        if best.is_some_and(|b| b.t <= exit) || exit > tb || !dda.advance(g.dims) {
            break;
        }
    }
}

/// Whether the ray passes close enough to a point (within the screening radius, not behind) for its disk.
#[inline(always)]
fn screen(ray: &RayCtx, p: [f32; 3]) -> bool {
    let u = ray.u;
    let rel = sub(p, ray.o);
    let tp = dot(rel, u);
    let m = [rel[0] - tp * u[0], rel[1] - tp * u[1], rel[2] - tp * u[2]];
    (dot(m, m) <= ray.screen2) & (tp > ray.neg_screen)
}

/// The exact disk test of a screened item; keeps the nearest hit (ties: lower point index). `best.point` is a
/// record index here.
#[inline]
fn exact(ray: &RayCtx, index: &BeamIndex, item: &Item, t_end: f32, best: &mut Option<Hit>) {
    let u = ray.u;
    let rel = sub(item.p, ray.o);
    let tp = dot(rel, u);
    let m = [rel[0] - tp * u[0], rel[1] - tp * u[1], rel[2] - tp * u[2]];
    let perp2 = dot(m, m);
    let Some(&packed) = index.normals.get(item.rec as usize) else {
        return;
    };
    let Some((t, cos)) = disk_hit(ray, packed, rel, tp, perp2) else {
        return;
    };
    if !(t <= t_end) {
        return;
    }
    let better = match best {
        None => true,
        Some(b) if t < b.t => true,
        Some(b) if t == b.t => {
            let idx = |r: u32| index.point.get(r as usize).copied().unwrap_or(u32::MAX);
            idx(item.rec) < idx(b.point)
        }
        Some(_) => false,
    };
    if better {
        *best = Some(Hit {
            t,
            point: item.rec,
            cos_incidence: cos,
        });
    }
}

/// Disk intersection of a screened point (`rel` from the ray origin, `tp` its projection on the ray, `perp2`
/// its squared distance to the ray): an oriented disk of radius rho where the point lies on a plane and the
/// ray is not near-parallel to it, else a disk facing the ray (the plain range).
#[inline(always)]
fn disk_hit(ray: &RayCtx, packed: u32, rel: [f32; 3], tp: f32, perp2: f32) -> Option<(f32, f32)> {
    let u = ray.u;
    if ray.planes && packed & PLANAR != 0 {
        let n = unpack_normal(packed);
        let denom = dot(n, u);
        if denom.abs() >= MIN_COS_PLANE {
            let t = dot(n, rel) / denom;
            if !(t > 0.0) {
                return None;
            }
            let miss = [t * u[0] - rel[0], t * u[1] - rel[1], t * u[2] - rel[2]];
            return (dot(miss, miss) <= ray.rho2).then_some((t, denom.abs().min(1.0)));
        }
    }
    if !(tp > 0.0 && perp2 <= ray.rho2) {
        return None;
    }
    let cos = if packed & HAS_NORMAL != 0 {
        dot(unpack_normal(packed), u).abs().min(1.0)
    } else {
        1.0
    };
    Some((tp, cos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_normals_round_trip() {
        for n in [
            [0.0, 0.0, 1.0],
            [0.0, 0.0, -1.0],
            [1.0, 0.0, 0.0],
            [0.6, -0.8, 0.0],
            [-0.48, 0.6, -0.64],
            [0.267, 0.534, 0.802],
        ] {
            let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2] as f32).sqrt();
            let n = [n[0] / l, n[1] / l, n[2] / l];
            let v = pack_normal(Some(n), true);
            assert!(v & HAS_NORMAL != 0 && v & PLANAR != 0);
            let m = unpack_normal(v);
            assert!(dot(m, n) > 1.0 - 1e-8, "{n:?} {m:?}");
        }
        assert_eq!(pack_normal(None, true), 0);
        assert_eq!(pack_normal(Some([f32::NAN, 0.0, 1.0]), true), 0);
        assert_eq!(pack_normal(Some([0.0, 1.0, 0.0]), false) & PLANAR, 0);
    }

    #[test]
    fn slab_hits_and_misses() {
        let inv = [1.0, f32::INFINITY, f32::INFINITY];
        let hit = slab([0.0, 0.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).unwrap();
        assert_eq!(hit, (1.0, 2.0));
        assert!(slab([0.0, 1.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).is_none());
    }
}
