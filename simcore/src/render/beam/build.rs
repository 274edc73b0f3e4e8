//! The beam index's build ([`BeamIndex::build_with`]): every point listed in each fine cell its disk can reach,
//! the keys sorted once, then the cell tables, the packs and the boxes of the cells filled in parallel; the
//! result does not depend on the number of threads.

use rayon::prelude::*;

use aerie_pipeline::lanes::LANES;
use aerie_pipeline::map::{Bucket, MapView};

use super::index::{
    BLOCK, BLOCK_CELLS, BeamIndex, Block, EMPTY, Occupancy, Pack, PackInfo, START_BITS, START_MASK,
    block_coords, cell_corner, cell_of, local_coords, pack_normal,
};
use crate::render::layer::gamma_mm;
use crate::render::pages::HugeVec;
use crate::render::{disks, surface};

/// Fine cell edge in units of r_map: ~64 points of a surface per cell, each listed in ~1.5 cells. Measured
/// against 3, 4, 5, 6, 10 and 12 (docs/benchmarks.md, 2026-11-24): 8 is the fastest on the tiled map and level
/// in the hall, and the index is about half the size of 4's. The output does not depend on it.
const FINE_CELL: f32 = 8.0;

/// Most blocks in the dense top-level table (4 bytes each); fine cells grow beyond it (huge sparse maps).
const MAX_BLOCKS: f64 = 4.0e6;

const EMPTY_PACK: Pack = Pack {
    x: [f32::NAN; LANES],
    y: [f32::NAN; LANES],
    z: [f32::NAN; LANES],
    normal: [0; LANES],
};

/// Sorts each cell's run of `(cell << 32 | point)` keys by the point's height (then by point), so that a beam
/// near horizontal, or one that clips the cell, tests only the packs within its own height range there
/// (`trace_block`). The
/// order of a cell's points does not change a beam's hit: the layer keeps the same set of hits whatever the
/// order of the offers. (Sorting each cell along its points' widest axis instead, and cutting any beam near
/// perpendicular to it, measured no faster: the cut pays where beams cross walls and trunks.)
fn sort_cells_by_height(keys: &mut [u64], positions: &[[f32; 3]]) {
    let z = |k: &u64| positions.get(*k as u32 as usize).map_or(f32::NAN, |p| p[2]);
    keys.par_chunk_by_mut(|a, b| a >> 32 == b >> 32)
        .for_each(|run| run.sort_unstable_by(|a, b| z(a).total_cmp(&z(b)).then(a.cmp(b))));
}

const EMPTY_INFO: PackInfo = PackInfo {
    idx: [0; LANES],
    gamma: [u16::MAX; LANES],
};

const EMPTY_BLOCK: Block = Block {
    slot: EMPTY,
    bbox: [0; 6],
};

fn r_map_of(map: &MapView) -> f32 {
    if map.resolution.is_finite() && map.resolution > 0.0 {
        map.resolution
    } else {
        0.1
    }
}

impl BeamIndex {
    /// Builds the index of `map` for the default plane thickness limit ([`crate::render::RenderParams::gamma_max_m`]
    /// unset: 0.5 r_map).
    pub fn build(map: &MapView) -> BeamIndex {
        BeamIndex::build_with_gamma_max(map, 0.5 * r_map_of(map))
    }

    /// [`BeamIndex::build_with`] with the points on their surfaces (the default of
    /// [`crate::render::RenderParams::on_surface`]).
    pub fn build_with_gamma_max(map: &MapView, gamma_max: f32) -> BeamIndex {
        BeamIndex::build_with(map, gamma_max, true)
    }

    /// Builds the index of `map`; points whose plane thickness is below `gamma_max` count as lying on a plane
    /// (oriented disks), drawn on their surfaces when `on_surface` and the map stores where those are
    /// (`render/surface.rs`). Parallel; the result does not depend on the number of threads (one sort of unique
    /// keys orders everything).
    pub fn build_with(map: &MapView, gamma_max: f32, on_surface: bool) -> BeamIndex {
        let surface = on_surface
            .then(|| surface::surface_positions(map))
            .flatten();
        let moved;
        let map = match &surface {
            Some(positions) => {
                moved = MapView { positions, ..*map };
                &moved
            }
            None => map,
        };
        let r_map = r_map_of(map);
        let rho = 0.5 * 3f32.sqrt() * r_map;
        let classes = disks::disk_classes(map, r_map, gamma_max);
        let class_at = |i: usize| classes.get(i).copied().unwrap_or(0);
        let rho_max = rho * disks::scale_of(classes.iter().copied().max().unwrap_or(0).into());
        let (lo, hi) = bounds(map, rho_max);
        let mut cell = FINE_CELL * r_map;
        let blocks_for = |c: f32| -> f64 {
            (0..3)
                .map(|k| (((hi[k] - lo[k]) / (BLOCK as f32 * c)).ceil().max(1.0)) as f64)
                .product()
        };
        while blocks_for(cell) > MAX_BLOCKS {
            cell *= 2.0;
        }
        let top_dims =
            [0, 1, 2].map(|k| ((hi[k] - lo[k]) / (BLOCK as f32 * cell)).ceil().max(1.0) as i32);
        let grid = Grid {
            lo,
            inv_cell: 1.0 / cell,
            top_dims,
        };
        let mut keys = cell_keys(
            map,
            &grid,
            |i| disk_extent(map, i, rho, class_at(i)),
            1e-4 * cell,
        );
        keys.par_sort_unstable();
        sort_cells_by_height(&mut keys, map.positions);
        let top = block_slots(&keys, &top_dims);
        let cells = CellTables::new(&keys, &top, class_at);
        let (packs, infos) = fill_packs(map, &keys, &top, &cells.starts, gamma_max, class_at);
        let cell_box = cell_boxes(&keys, &top, &grid, cell, cells.class.len(), |i| {
            let p = map.positions.get(i).copied().unwrap_or([f32::NAN; 3]);
            let e = disk_extent(map, i, rho, class_at(i));
            (
                [0, 1, 2].map(|k| p[k] - e[k]),
                [0, 1, 2].map(|k| p[k] + e[k]),
            )
        });
        drop(keys);
        let top: Vec<Block> = top
            .iter()
            .map(|&slot| match cells.boxes.get(slot as usize) {
                Some(&bbox) => Block { slot, bbox },
                None => EMPTY_BLOCK,
            })
            .collect();
        let column_top = column_tops(&top, &top_dims);
        // Slots are given out in block order.
        let slot_blocks = top
            .iter()
            .enumerate()
            .filter(|(_, b)| b.slot != EMPTY)
            .map(|(b, _)| b as u32)
            .collect();
        let (starts, folded) = fold_classes(cells.starts, &cells.class);
        BeamIndex {
            rho,
            lo,
            cell,
            inv_cell: grid.inv_cell,
            top_dims,
            top,
            column_top,
            slot_blocks,
            starts: HugeVec::from_slice(&starts),
            folded,
            rho_max,
            occupied: cells.occupied,
            cell_box: HugeVec::from_slice(&cell_box),
            packs,
            infos,
            gamma_max,
            on_surface,
            max_reflectance: map.reflectance.map(|r| {
                r.par_iter()
                    .copied()
                    .filter(|v| !v.is_nan())
                    .reduce(|| 0.0, f32::max)
            }),
        }
    }
}

/// The fine grid while the index is built: its corner, inverse cell edge and blocks per axis.
struct Grid {
    lo: [f32; 3],
    inv_cell: f32,
    top_dims: [i32; 3],
}

impl Grid {
    /// The low corner of the fine cell of `key` (map-relative), for cells of edge `cell`.
    fn corner(&self, key: u64, cell: f32) -> [f32; 3] {
        let block = block_coords(self.top_dims, (key / BLOCK_CELLS as u64) as usize);
        let local = local_coords((key % BLOCK_CELLS as u64) as usize);
        cell_corner(self.lo, cell, block, local)
    }

    /// Key of a fine cell: block (linear) * 512 + cell within the block; below 2^31 by `MAX_BLOCKS`.
    fn key(&self, c: [i32; 3]) -> u64 {
        let td = self.top_dims;
        let b = [c[0] / BLOCK, c[1] / BLOCK, c[2] / BLOCK];
        let l = [c[0] % BLOCK, c[1] % BLOCK, c[2] % BLOCK];
        let block = ((b[2] * td[1] + b[1]) * td[0] + b[0]) as u64;
        let local = ((l[2] * BLOCK + l[1]) * BLOCK + l[0]) as u64;
        block * BLOCK_CELLS as u64 + local
    }
}

/// Whether bucket `b` holds points of `map` (a bucket out of the positions' range is skipped, here and
/// everywhere).
fn holds_points(map: &MapView, b: &Bucket) -> bool {
    b.count > 0 && b.first as u64 + b.count as u64 <= map.positions.len() as u64
}

/// The point ranges of the buckets that hold points.
fn valid_ranges(map: &MapView) -> Vec<std::ops::Range<usize>> {
    map.buckets
        .iter()
        .filter(|b| holds_points(map, b))
        .map(|b| b.first as usize..(b.first + b.count) as usize)
        .collect()
}

/// Bounds of the points the buckets hold, widened by the disk radius `rho` (zero for an empty map).
fn bounds(map: &MapView, rho: f32) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for b in map.buckets {
        if !holds_points(map, b) || !b.min.iter().chain(b.max.iter()).all(|v| v.is_finite()) {
            continue;
        }
        for k in 0..3 {
            lo[k] = lo[k].min(b.min[k] - rho);
            hi[k] = hi[k].max(b.max[k] + rho);
        }
    }
    if lo[0] <= hi[0] && lo[1] <= hi[1] && lo[2] <= hi[2] {
        (lo, hi)
    } else {
        ([0.0; 3], [0.0; 3])
    }
}

/// `(cell key << 32 | point)` for every cell a point's disk box touches, widened by `eps` so that rounding at
/// a boundary never drops a cell the march may enter. Unsorted.
fn cell_keys(
    map: &MapView,
    grid: &Grid,
    extent: impl Fn(usize) -> [f32; 3] + Sync + Send + Copy,
    eps: f32,
) -> Vec<u64> {
    let positions = map.positions;
    let dims = grid.top_dims.map(|d| d * BLOCK);
    let (lo, inv_cell) = (grid.lo, grid.inv_cell);
    valid_ranges(map)
        .par_iter()
        .flat_map_iter(|r| {
            let pts = positions.get(r.clone()).unwrap_or(&[]);
            let first = r.start;
            let finite = |p: &&[f32; 3]| p.iter().all(|v| v.is_finite());
            pts.iter()
                .enumerate()
                .filter(move |(_, p)| finite(p))
                .flat_map(move |(k, p)| {
                    let idx = (first + k) as u64;
                    let e = extent(idx as usize);
                    let range = |a: usize| {
                        let c0 = cell_of(p[a] - e[a] - eps, lo[a], inv_cell, dims[a]);
                        let c1 = cell_of(p[a] + e[a] + eps, lo[a], inv_cell, dims[a]);
                        c0..=c1
                    };
                    let (rx, ry, rz) = (range(0), range(1), range(2));
                    rz.flat_map(move |z| {
                        let rx = rx.clone();
                        ry.clone().flat_map(move |y| {
                            rx.clone().map(move |x| (grid.key([x, y, z]) << 32) | idx)
                        })
                    })
                })
        })
        .collect()
}

/// Half-extents per axis of the box that holds every hit on point `i`'s disks: the sphere of rho (the disk
/// facing a beam) and, for a wider disk (radius class `class` > 0), that oriented disk, which reaches
/// `radius * sqrt(1 - n_a^2)` along axis a (thin along its normal: a wide disk of the ground adds no cells above
/// or below). The slack covers the packed normal's rounding.
fn disk_extent(map: &MapView, i: usize, rho: f32, class: u8) -> [f32; 3] {
    let normal = map.normals.and_then(|n| n.get(i));
    match normal {
        Some(n) if class > 0 => {
            let r = rho * disks::scale_of(class.into());
            n.map(|c| (r * (1.0 - c * c).max(0.0).sqrt() + 1e-3 * r).max(rho))
        }
        _ => [rho; 3],
    }
}

/// Slots for the occupied blocks, in block order: block -> slot (or `EMPTY`).
fn block_slots(keys: &[u64], top_dims: &[i32; 3]) -> Vec<u32> {
    let n_blocks = (top_dims[0] * top_dims[1] * top_dims[2]) as usize;
    let mut top = vec![EMPTY; n_blocks];
    let mut n_slots = 0u32;
    let mut last_block = u64::MAX;
    for k in keys {
        let block = (k >> 32) / BLOCK_CELLS as u64;
        if block != last_block {
            last_block = block;
            if let Some(t) = top.get_mut(block as usize) {
                *t = n_slots;
                n_slots += 1;
            }
        }
    }
    top
}

/// The slot cell (slot * 512 + cell within the block) of a sorted key, if its block has a slot.
fn cell_slot(top: &[u32], k: u64) -> Option<usize> {
    let c = k >> 32;
    let block = (c / BLOCK_CELLS as u64) as usize;
    let slot = *top.get(block)?;
    (slot != EMPTY).then(|| slot as usize * BLOCK_CELLS + (c % BLOCK_CELLS as u64) as usize)
}

/// Per slot: each cell's start in the packs, the occupied cells' bits and their box.
struct CellTables {
    starts: Vec<u32>,
    class: Vec<u8>,
    occupied: Vec<Occupancy>,
    boxes: Vec<[u8; 6]>,
}

impl CellTables {
    fn new(keys: &[u64], top: &[u32], class_at: impl Fn(usize) -> u8) -> CellTables {
        let n_slots = top.iter().filter(|&&s| s != EMPTY).count();
        let mut starts = vec![0u32; n_slots * BLOCK_CELLS + 1];
        let mut class = vec![0u8; n_slots * BLOCK_CELLS];
        let mut occupied = vec![Occupancy::default(); n_slots];
        let mut boxes = vec![[u8::MAX, u8::MAX, u8::MAX, 0, 0, 0]; n_slots];
        for &k in keys {
            let Some(c) = cell_slot(top, k) else { continue };
            if let Some(m) = class.get_mut(c) {
                *m = (*m).max(class_at(k as u32 as usize));
            }
            let local = c % BLOCK_CELLS;
            let l = local_coords(local).map(|v| v as u8);
            if let Some(b) = boxes.get_mut(c / BLOCK_CELLS) {
                for a in 0..3 {
                    b[a] = b[a].min(l[a]);
                    b[a + 3] = b[a + 3].max(l[a]);
                }
            }
            if let Some(s) = starts.get_mut(c + 1) {
                *s += 1;
            }
            if let Some(w) = occupied
                .get_mut(c / BLOCK_CELLS)
                .and_then(|o| o.0.get_mut(c % BLOCK_CELLS / 64))
            {
                *w |= 1u64 << (c % 64);
            }
        }
        // Cell sizes in points (cell c's at c + 1) -> cell starts in packs.
        let mut n_packs = 0u32;
        for s in starts.iter_mut() {
            n_packs += s.div_ceil(LANES as u32);
            *s = n_packs;
        }
        CellTables {
            starts,
            class,
            occupied,
            boxes,
        }
    }
}

/// Cell starts (`starts`, one per slot cell plus the end) with each cell's radius class (`class`) folded in
/// above [`START_BITS`], and whether they could be: an index of 2^28 packs or more (over a billion listed
/// points) keeps its starts whole, and the march then screens every cell with the widest class (more points
/// screened, the same hits).
pub(super) fn fold_classes(mut starts: Vec<u32>, class: &[u8]) -> (Vec<u32>, bool) {
    if starts.last().is_some_and(|&n| n > START_MASK) {
        return (starts, false);
    }
    for (s, &c) in starts.iter_mut().zip(class) {
        *s |= u32::from(c) << START_BITS;
    }
    (starts, true)
}

/// The points, cell by cell in key order, four to a pack, with what only a hit reads beside them. Parallel: the
/// keys are cut into runs of whole cells, and each run fills its own range of the packs (a cell's packs start
/// where `starts` says), so the result does not depend on the number of threads.
fn fill_packs(
    map: &MapView,
    keys: &[u64],
    top: &[u32],
    starts: &[u32],
    gamma_max: f32,
    class_at: impl Fn(usize) -> u8 + Sync,
) -> (HugeVec<Pack>, HugeVec<PackInfo>) {
    let n_packs = starts.last().copied().unwrap_or(0) as usize;
    let mut packs = HugeVec::filled(n_packs, EMPTY_PACK);
    let mut infos = HugeVec::filled(n_packs, EMPTY_INFO);
    let first_pack = |k: usize| {
        keys.get(k)
            .and_then(|&key| cell_slot(top, key))
            .map_or(n_packs, |c| starts.get(c).map_or(n_packs, |&s| s as usize))
    };
    // Run boundaries: about 256 runs, each moved forward to the next cell's first key.
    let runs = 256.min(keys.len().max(1));
    let mut cuts: Vec<usize> = (0..runs)
        .map(|r| {
            let mut k = keys.len() * r / runs;
            while k > 0 && k < keys.len() && keys[k] >> 32 == keys[k - 1] >> 32 {
                k += 1;
            }
            k
        })
        .collect();
    cuts.push(keys.len());
    cuts.dedup();
    let mut jobs = Vec::with_capacity(cuts.len());
    let (mut rest_p, mut rest_i) = (&mut packs[..], &mut infos[..]);
    let mut at = 0usize;
    for w in cuts.windows(2) {
        let end = first_pack(w[1]).clamp(at, n_packs);
        let (p, rp) = std::mem::take(&mut rest_p).split_at_mut(end - at);
        let (i, ri) = std::mem::take(&mut rest_i).split_at_mut(end - at);
        (rest_p, rest_i) = (rp, ri);
        jobs.push((keys.get(w[0]..w[1]).unwrap_or(&[]), p, i, at));
        at = end;
    }
    let filler = Filler {
        map,
        top,
        starts,
        gamma_max,
        class_at,
    };
    jobs.into_par_iter()
        .for_each(|(keys, packs, infos, first)| filler.fill(keys, first, packs, infos));
    (packs, infos)
}

/// What filling a run of packs reads besides the run's keys.
struct Filler<'a, F> {
    map: &'a MapView<'a>,
    top: &'a [u32],
    starts: &'a [u32],
    gamma_max: f32,
    class_at: F,
}

impl<F: Fn(usize) -> u8> Filler<'_, F> {
    /// The packs of one run of whole cells (`packs[0]` is pack `first` of the index).
    fn fill(&self, keys: &[u64], first: usize, packs: &mut [Pack], infos: &mut [PackInfo]) {
        let map = self.map;
        let mut prev_cell = usize::MAX;
        let mut lane = 0usize;
        let mut at = 0usize;
        for &k in keys {
            let Some(c) = cell_slot(self.top, k) else {
                continue;
            };
            if c != prev_cell {
                prev_cell = c;
                at = (self.starts.get(c).copied().unwrap_or(0) as usize).wrapping_sub(first);
                lane = 0;
            } else if lane == LANES {
                at += 1;
                lane = 0;
            }
            let idx = k as u32;
            let i = idx as usize;
            let p = map.positions.get(i).copied().unwrap_or([f32::NAN; 3]);
            let gamma = map.gamma.and_then(|g| g.get(i)).copied();
            let normal = map.normals.and_then(|n| n.get(i)).copied();
            let planar = gamma.unwrap_or(0.0) < self.gamma_max;
            if let (Some(pack), Some(info)) = (packs.get_mut(at), infos.get_mut(at)) {
                pack.x[lane] = p[0];
                pack.y[lane] = p[1];
                pack.z[lane] = p[2];
                pack.normal[lane] = pack_normal(normal, planar, (self.class_at)(i));
                info.idx[lane] = idx;
                info.gamma[lane] = gamma_mm(gamma.unwrap_or(f32::INFINITY));
            }
            lane += 1;
        }
    }
}

/// Per slot cell, the part of the cell that the disks of its points reach (see `BeamIndex::cell_box`), from
/// the sorted keys and each point's disk box (`disk_box(i) = (lo, hi)`). Parallel over runs of whole cells.
fn cell_boxes(
    keys: &[u64],
    top: &[u32],
    grid: &Grid,
    cell: f32,
    n_cells: usize,
    disk_box: impl Fn(usize) -> ([f32; 3], [f32; 3]) + Sync,
) -> Vec<[u8; 6]> {
    let found: Vec<(usize, [u8; 6])> = keys
        .par_chunk_by(|a, b| a >> 32 == b >> 32)
        .filter_map(|run| {
            let first = *run.first()?;
            let c = cell_slot(top, first)?;
            let (lo, hi) = run.iter().fold(
                ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
                |(mut lo, mut hi), &k| {
                    let (a, b) = disk_box(k as u32 as usize);
                    for i in 0..3 {
                        lo[i] = lo[i].min(a[i]);
                        hi[i] = hi[i].max(b[i]);
                    }
                    (lo, hi)
                },
            );
            let corner = grid.corner(first >> 32, cell);
            let q = |v: f32, k: usize| (v - corner[k]) / cell * 255.0;
            let mut b = [0u8; 6];
            for k in 0..3 {
                // Rounded outwards; a NaN (no finite point) keeps the whole cell.
                let l = q(lo[k], k).floor().clamp(0.0, 255.0);
                let h = q(hi[k], k).ceil().clamp(0.0, 255.0);
                b[k] = if l.is_nan() { 0 } else { l as u8 };
                b[k + 3] = if h.is_nan() { 255 } else { (h as u8).max(b[k]) };
            }
            Some((c, b))
        })
        .collect();
    let mut boxes = vec![[0, 0, 0, 255, 255, 255]; n_cells];
    for (c, b) in found {
        if let Some(slot) = boxes.get_mut(c) {
            *slot = b;
        }
    }
    boxes
}

/// Per column of blocks (x, y), the height of its highest occupied block, -1 when none.
fn column_tops(top: &[Block], top_dims: &[i32; 3]) -> Vec<i32> {
    let mut column_top = vec![-1i32; (top_dims[0] * top_dims[1]) as usize];
    let columns = column_top.len();
    for (b, block) in top.iter().enumerate() {
        if block.slot != EMPTY {
            column_top[b % columns] = (b / columns) as i32;
        }
    }
    column_top
}
