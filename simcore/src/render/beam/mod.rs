//! The beam-driven renderer: each beam marches front to back through a two-level grid over the map (blocks of 8 x
//! 8 x 8 fine cells; empty blocks and empty cells are skipped) and takes the nearest disk it crosses: oriented
//! disks for points on planes, of radius sqrt(3)/2 * r_map or as wide as the sampling around the point where it
//! is sparser than r_map ([`super::disks`]); disks of radius sqrt(3)/2 * r_map facing the beam for the others
//! (and for plane points that the beam meets near edge-on). A point is
//! listed in every fine cell its disk can reach, so the first cell holding a hit nearer than the cell's exit ends
//! the march. A cell's points are stored four to a pack (structure of arrays in one cache line: the coordinates
//! and the packed normals the exact test needs) and screened four at a time with SSE before the exact test; what
//! only an accepted hit reads (map index, plane thickness) lies in a table of its own. Each table a beam reads is
//! laid out to cost one cache line: the block's occupied-cell box sits in the block table, each block's occupancy
//! is one line, and a block above the highest occupied block of its column is passed on a table of column heights
//! that stays in L1, without reading the block table (a beam from above crosses mostly such blocks: the Avia
//! flight 4-8% faster, docs/benchmarks.md). What sets a beam's time is neither misses nor the instruction count
//! alone (docs/benchmarks.md, 2026-11-24): cells of 8 r_map run ~7,450 instructions per Avia beam in an 8M-point
//! map against 6,760 with cells of 4 and are faster; bounding spheres over packs cut them to ~6,100 and were
//! slower. The branchy steps (block and cell DDA, the loops over set bits) weigh more than the regular SIMD
//! screening: making the DDA's step branch-free made Avia frames ~10% faster, and listing a cell's screened points
//! without a branch before testing them (in place of a loop over each pack's set bits) made hall frames ~5%
//! faster, where prefetching and a SIMD exact test did nothing or worse. A cell's points are sorted by height, so
//! a beam near horizontal, or a steep one that only clips the cell, walks only the packs within its height range
//! in the cell (4-8% faster frames in the hall and under the trees, and 5-8% more in the hall for the clipping
//! beams; a binary search for the range was slower). Each beam is marched only over the span of range where a
//! per-frame projection of the occupied cells says it can meet the map ([`super::bound`]): the same hits, from
//! the first cell it could hit to the last. Beams are independent, so the result does not depend on the number
//! of threads.

use rayon::prelude::*;
use wide::{f32x4, i32x4, u32x4};

use aerie_pipeline::lanes::{COMPACT, LANES};
use aerie_pipeline::map::{Bucket, MapView};

use super::bound::RangeBound;
use super::pages::HugeVec;
use super::surface;
use super::{Ctx, Hit, Layer, MIN_COS_PLANE, Occluder, disks, dot, gamma_mm, max_of, min_of};

/// Fine cell edge in units of r_map: ~64 points of a surface per cell, each listed in ~1.5 cells. Measured
/// against 3, 4, 5, 6, 10 and 12 (docs/benchmarks.md, 2026-11-24): 8 is the fastest on the tiled map and level
/// in the hall, and the index is about half the size of 4's. The output does not depend on it.
const FINE_CELL: f32 = 8.0;
/// Block edge in fine cells (8^3 = 512 cells: eight 64-bit occupancy words).
const BLOCK: i32 = 8;
const BLOCK_CELLS: usize = 512;
/// Most blocks in the dense top-level table (4 bytes each); fine cells grow beyond it (huge sparse maps).
const MAX_BLOCKS: f64 = 4.0e6;
/// Slack of the cheap distance-to-ray test that screens points before the exact disk test, as a factor on
/// the disk radius: an oriented disk's hit lies within its radius of its point, so the ray passes that close;
/// the slack absorbs rounding of the exact test (a far grazing plane hit).
const SCREEN_SLACK: f32 = 1.05;
const EMPTY: u32 = u32::MAX;

/// Bits of a packed normal (see [`pack_normal`]).
const HAS_NORMAL: u32 = 1 << 31;
const PLANAR: u32 = 1 << 30;
const CLASS_SHIFT: u32 = 26;
const CLASS_MASK: i32 = disks::CLASSES as i32 - 1;
const OCT_BITS: u32 = 13;
const OCT_MASK: u32 = (1 << OCT_BITS) - 1;
const OCT_MAX: f32 = OCT_MASK as f32;

/// A point's disk in 32 bits: its unit normal as octahedral coordinates, 13 bits each (within 2e-4 rad), the
/// class of its disk's radius (4 bits, [`disks`]), whether it has a normal and whether it lies on a plane
/// (plane thickness below the index's gamma_max). One word per point lets a pack of four points fit one cache
/// line, and the exact test reads nothing else of the point.
fn pack_normal(n: Option<[f32; 3]>, planar: bool, class: u8) -> u32 {
    let class = u32::from(class).min(disks::CLASSES - 1) << CLASS_SHIFT;
    let Some(n) = n.filter(|n| n.iter().all(|v| v.is_finite())) else {
        return class;
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
    HAS_NORMAL | if planar { PLANAR } else { 0 } | class | (q(x) << OCT_BITS) | q(y)
}

/// The disk radius of a packed point, in units of rho.
#[inline(always)]
fn disk_scale(v: u32) -> f32 {
    disks::scale_of(v >> CLASS_SHIFT & CLASS_MASK as u32)
}

/// The direction of a packed normal (meaningful when `HAS_NORMAL` is set), not normalised: its L1 norm is 1.
/// The disk test is scale-free except for the cosine of incidence, which divides by the length once a hit is
/// accepted; so the square root and divisions of a unit normal are only paid for hits.
#[inline(always)]
fn normal_direction(v: u32) -> [f32; 3] {
    let d = |q: u32| (q & OCT_MASK) as f32 * (2.0 / OCT_MAX) - 1.0;
    let (mut x, mut y) = (d(v >> OCT_BITS), d(v));
    let z = 1.0 - x.abs() - y.abs();
    if z < 0.0 {
        let sx = if x >= 0.0 { 1.0 } else { -1.0 };
        let sy = if y >= 0.0 { 1.0 } else { -1.0 };
        (x, y) = ((1.0 - y.abs()) * sx, (1.0 - x.abs()) * sy);
    }
    [x, y, z]
}

/// Four points of a fine cell in structure-of-arrays form: the screening test runs on all four lanes at once
/// (SIMD), where records one after the other made the compiler test them one by one. 64 bytes, one cache line:
/// the screen and the exact test need nothing but the coordinates and the packed normal ([`pack_normal`]:
/// direction, disk radius class, has-normal and planar bits), and a point is listed in one or two cells, so the
/// pack's size sets most of the
/// index's memory (43 bytes per map point of the tiled map; 111 with decoded normals and 4 r_map cells). A cell's
/// last pack is padded with NaN coordinates, which fail every test.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct Pack {
    x: [f32; LANES],
    y: [f32; LANES],
    z: [f32; LANES],
    normal: [u32; LANES],
}

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

/// What only a hit offered to the beam's layer reads of a pack's points (one entry per pack, same index).
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PackInfo {
    /// Index of each point in the map.
    idx: [u32; LANES],
    /// Plane thickness of each point, millimetres (saturating; `u16::MAX` where there is no plane): how deep
    /// the surface layer behind a hit on it reaches.
    gamma: [u16; LANES],
}

const EMPTY_INFO: PackInfo = PackInfo {
    idx: [0; LANES],
    gamma: [u16::MAX; LANES],
};

/// An entry of the block table: the block's slot and the box of its occupied cells (min and max cell per
/// axis), read together so that a beam clips itself to the box without another cache miss.
#[derive(Clone, Copy, Debug)]
struct Block {
    slot: u32,
    bbox: [u8; 6],
}

const EMPTY_BLOCK: Block = Block {
    slot: EMPTY,
    bbox: [0; 6],
};

/// Occupancy of one slot's 512 cells, one bit each, aligned to a cache line so that it costs one miss.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Occupancy([u64; BLOCK_CELLS / 64]);

/// Acceleration structure of the beam renderer for one map (built once per map).
pub struct BeamIndex {
    rho: f32,
    /// Fine grid: origin, cell edge and its inverse; the grid is `top_dims * BLOCK` cells per axis.
    lo: [f32; 3],
    cell: f32,
    inv_cell: f32,
    /// Block table: block -> slot of its cells (or `EMPTY`) and the box of its occupied cells: a beam is
    /// clipped to the box before marching the block, so it skips the empty part of a block (above the
    /// ground, beside a wall).
    top_dims: [i32; 3],
    top: Vec<Block>,
    /// Per column of blocks (x, y), the height (block z) of its highest occupied block, -1 when none: a beam
    /// above it there has nothing to look up (a table small enough to stay in L1, read instead of `top`).
    column_top: Vec<i32>,
    /// Per slot, its block.
    slot_blocks: Vec<u32>,
    /// Per slot, `BLOCK_CELLS` cell starts into `packs` (plus one final end), each with the cell's radius
    /// class above [`START_BITS`] when `folded` (see [`fold_classes`]).
    starts: HugeVec<u32>,
    folded: bool,
    /// The largest disk radius of the map.
    rho_max: f32,
    /// Per slot, one bit per cell, set where the cell holds points. A beam crosses mostly empty cells; this
    /// table is 32 times smaller than `starts`, so it stays in cache longer.
    occupied: Vec<Occupancy>,
    /// Per slot cell, the box within the cell that its points' disks reach, in 1/255 of the cell edge (min
    /// and max per axis, rounded outwards): every hit in the cell lies in it. What [`super::bound`] projects.
    cell_box: HugeVec<[u8; 6]>,
    /// Points grouped by fine cell (a point appears in every cell its disk can reach), then by height, four
    /// to a pack.
    packs: HugeVec<Pack>,
    /// Per pack, its points' map indices and plane thicknesses.
    infos: HugeVec<PackInfo>,
    /// Plane thickness below which the packed normals say "planar".
    gamma_max: f32,
    /// Points on planes were packed on their surfaces (`render/surface.rs`), not where the map holds them.
    on_surface: bool,
    /// The largest reflectance of the map's points ([`BeamIndex::max_reflectance`]).
    max_reflectance: Option<f32>,
}

fn r_map_of(map: &MapView) -> f32 {
    if map.resolution.is_finite() && map.resolution > 0.0 {
        map.resolution
    } else {
        0.1
    }
}

/// Cell of coordinate `v` along one axis, clamped to the grid (truncation equals floor once clamped at 0).
#[inline]
fn cell_of(v: f32, lo: f32, inv_cell: f32, dim: i32) -> i32 {
    (((v - lo) * inv_cell).max(0.0) as i32).min(dim - 1)
}

impl BeamIndex {
    /// Builds the index of `map` for the default plane thickness limit ([`super::RenderParams::gamma_max_m`]
    /// unset: 0.5 r_map).
    pub fn build(map: &MapView) -> BeamIndex {
        BeamIndex::build_with_gamma_max(map, 0.5 * r_map_of(map))
    }

    /// [`BeamIndex::build_with`] with the points on their surfaces (the default of
    /// [`super::RenderParams::on_surface`]).
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

    /// The blocks that hold points, as (block, slot), in block order.
    pub(crate) fn occupied_blocks(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.slot_blocks
            .iter()
            .enumerate()
            .map(|(slot, &block)| (block as usize, slot as u32))
    }

    /// The largest reflectance of the map's points (NaN left out, infinity kept), `None` without the column.
    pub(crate) fn max_reflectance(&self) -> Option<f32> {
        self.max_reflectance
    }

    /// How far past a sensor's range a beam is marched: the widest disk's radius.
    pub(crate) fn disk_reach(&self) -> f32 {
        self.rho_max
    }

    /// The box of block `block`'s occupied cells, map-relative.
    pub(crate) fn block_box(&self, block: usize) -> Option<([f32; 3], [f32; 3])> {
        let b = self.top.get(block)?;
        let at = block_coords(self.top_dims, block);
        let corner = |c: [u8; 3]| cell_corner(self.lo, self.cell, at, c.map(i32::from));
        let hi = corner([b.bbox[3], b.bbox[4], b.bbox[5]]);
        Some((
            corner([b.bbox[0], b.bbox[1], b.bbox[2]]),
            hi.map(|v| v + self.cell),
        ))
    }

    /// Calls `f(lo, hi)` with the box that the disks reach in every occupied cell of block `block` (slot
    /// `slot`), map-relative: every hit in the block lies in one of them.
    pub(crate) fn for_each_cell_box(
        &self,
        block: usize,
        slot: u32,
        mut f: impl FnMut([f32; 3], [f32; 3]),
    ) {
        let at = block_coords(self.top_dims, block);
        let (Some(occ), Some(boxes)) = (
            self.occupied.get(slot as usize),
            self.cell_box
                .get(slot as usize * BLOCK_CELLS..(slot as usize + 1) * BLOCK_CELLS),
        ) else {
            return;
        };
        let q = self.cell / 255.0;
        for (w, &word) in occ.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let local = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let c = cell_corner(self.lo, self.cell, at, local_coords(local));
                if let Some(b) = boxes.get(local) {
                    f(
                        [0, 1, 2].map(|k| c[k] + f32::from(b[k]) * q),
                        [0, 1, 2].map(|k| c[k] + f32::from(b[k + 3]) * q),
                    );
                }
            }
        }
    }

    /// Edge of a fine cell, metres.
    pub(crate) fn cell_size(&self) -> f32 {
        self.cell
    }

    /// Edge of a block, metres.
    pub(crate) fn block_size(&self) -> f32 {
        BLOCK as f32 * self.cell
    }

    /// Whether the points of planes were packed on their surfaces ([`BeamIndex::build_with`]).
    pub fn on_surface(&self) -> bool {
        self.on_surface
    }

    /// The plane thickness limit the index was built for.
    pub fn gamma_max(&self) -> f32 {
        self.gamma_max
    }

    /// Memory held by the index, bytes.
    pub fn memory_bytes(&self) -> usize {
        4 * self.starts.len()
            + self.top.len() * std::mem::size_of::<Block>()
            + 4 * self.column_top.len()
            + 4 * self.slot_blocks.len()
            + self.occupied.len() * std::mem::size_of::<Occupancy>()
            + 6 * self.cell_box.len()
            + self.packs.len() * std::mem::size_of::<Pack>()
            + self.infos.len() * std::mem::size_of::<PackInfo>()
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

/// The coordinates of block `block` in a block table of `top_dims` blocks (x fastest, then y, then z).
fn block_coords(top_dims: [i32; 3], block: usize) -> [i32; 3] {
    let columns = (top_dims[0] * top_dims[1]).max(1) as usize;
    let column = (block % columns) as i32;
    [
        column % top_dims[0].max(1),
        column / top_dims[0].max(1),
        (block / columns) as i32,
    ]
}

/// The coordinates of cell `local` (0..512) within its block (x fastest, then y, then z).
fn local_coords(local: usize) -> [i32; 3] {
    let l = local as i32;
    [l % BLOCK, l / BLOCK % BLOCK, l / (BLOCK * BLOCK)]
}

/// The low corner (map-relative) of the fine cell at `local` in block `block` of a grid from `lo` with cells
/// of edge `cell`: one formula for the index build and the projection that reads it back, so the two agree.
fn cell_corner(lo: [f32; 3], cell: f32, block: [i32; 3], local: [i32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| lo[k] + (block[k] * BLOCK + local[k]) as f32 * cell)
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

/// Bits of a cell start that hold its first pack; the cell's radius class sits above them, so that the march
/// reads a cell's packs and its screening radius with one load (a table of classes apart was one more cache
/// line per occupied cell, docs/benchmarks.md 2026-11-30).
const START_BITS: u32 = 28;
const START_MASK: u32 = (1 << START_BITS) - 1;

/// Cell starts (`starts`, one per slot cell plus the end) with each cell's radius class (`class`) folded in
/// above [`START_BITS`], and whether they could be: an index of 2^28 packs or more (over a billion listed
/// points) keeps its starts whole, and the march then screens every cell with the widest class (more points
/// screened, the same hits).
fn fold_classes(mut starts: Vec<u32>, class: &[u8]) -> (Vec<u32>, bool) {
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
        min_of(min_of(self.t_next[0], self.t_next[1]), self.t_next[2])
    }

    /// Steps to the next cell; false when it leaves the grid.
    ///
    /// Branch-free: which axis steps next is close to random along a beam, so a branch on it mispredicts
    /// often; each axis is updated under a mask instead (the same arithmetic, so the same cells).
    #[inline]
    fn advance(&mut self, dims: [i32; 3]) -> bool {
        let [t0, t1, t2] = self.t_next;
        let x = t0 <= t1 && t0 <= t2;
        let y = !x && t1 <= t2;
        let z = !x && !y;
        let mut inside = true;
        for (k, on) in [x, y, z].into_iter().enumerate() {
            let mask = -i32::from(on);
            self.cell[k] += self.step[k] & mask;
            let next = self.t_next[k] + self.t_delta[k];
            self.t_next[k] = if on { next } else { self.t_next[k] };
            inside &= (self.cell[k] as u32) < dims[k] as u32;
        }
        inside
    }
}

/// Each beam's hit: the map's through the index, or an occluder's where one is nearer (tested on the same
/// ray, computed once).
pub(crate) fn render(
    ctx: &Ctx,
    index: &BeamIndex,
    occluders: &[&dyn Occluder],
) -> Vec<Option<Hit>> {
    // Hits beyond what the sensor can detect in this map are never returned; the widest disk's radius past it.
    let reach = ctx.map_reach(index.max_reflectance()) + index.disk_reach();
    let bound = RangeBound::for_frame(ctx, index, reach);
    (0..ctx.beams.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(Scratch::new, |scratch, i| {
            let ray = ctx.ray(i);
            let hit = cast(ctx, index, (bound.as_ref(), reach), ray, scratch);
            ctx.occlude_beam(ray, hit, occluders)
        })
        .collect()
}

/// What a beam's march writes as it goes, kept per thread and reused by its beams.
struct Scratch {
    layer: Layer,
    listed: [u32; SCREENED],
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            layer: Layer::new((0.0, 0.0)),
            listed: [0; SCREENED],
        }
    }
}

/// What every disk test of one beam shares.
struct RayCtx<'a> {
    /// The index's packs and their infos, taken from their tables once per beam (each look-through of a
    /// [`HugeVec`] checks its mapping's cast).
    packs: &'a [Pack],
    infos: &'a [PackInfo],
    o: [f32; 3],
    u: [f32; 3],
    /// Squared disk radius of class 0 (rho^2).
    rho2: f32,
    /// Screening radius of class 0 (a little over rho).
    screen: f32,
    /// Within 30 degrees of horizontal: worth cutting a cell's packs to the beam's height range.
    flat: bool,
    planes: bool,
}

impl RayCtx<'_> {
    fn new(index: &BeamIndex, o: [f32; 3], u: [f32; 3], planes: bool) -> RayCtx<'_> {
        RayCtx {
            packs: &index.packs,
            infos: &index.infos,
            o,
            u,
            rho2: index.rho * index.rho,
            screen: SCREEN_SLACK * index.rho,
            flat: u[2].abs() < 0.5,
            planes,
        }
    }
}

/// The beam's hit up to ray parameter `t_max`, marched over the span of range in which `bound` (when there is
/// one) says it can meet the map.
fn cast(
    ctx: &Ctx,
    index: &BeamIndex,
    (bound, t_max): (Option<&RangeBound>, f32),
    ray: ([f32; 3], [f32; 3]),
    scratch: &mut Scratch,
) -> Option<Hit> {
    let (near, far) = bound.map_or((0.0, f32::INFINITY), |b| b.at(ray.1));
    let end = far.min(t_max);
    // Most of a frame's misses end here, before the march's setup.
    if !(near <= end) {
        return None;
    }
    march(
        index,
        ray,
        (near, end),
        ctx.planes,
        ctx.layer_window(),
        scratch,
    )
}

/// The hit of the ray `(o, u)` (unit `u`) within the ray parameters `span` (the march starts and ends there;
/// a hit found in a cell it crosses counts wherever it lies before `span.1`), with plane correction when
/// `planes`, resolved by a layer of window `window` (see [`Layer::new`]).
fn march(
    index: &BeamIndex,
    (o, u): ([f32; 3], [f32; 3]),
    span: (f32, f32),
    planes: bool,
    window: (f32, f32),
    scratch: &mut Scratch,
) -> Option<Hit> {
    let inv = u.map(|c| 1.0 / c);
    let bc = BLOCK as f32 * index.cell;
    let lo = index.lo;
    let td = index.top_dims;
    let hi = [0, 1, 2].map(|k| lo[k] + td[k] as f32 * bc);
    // Beams that miss the map's box, or leave it, end here.
    let (t0, t1) = slab(o, inv, lo, hi)?;
    let t_start = t0.max(span.0).max(0.0);
    let t_end = t1.min(span.1);
    if !(t_start <= t_end) {
        return None;
    }
    let ray = RayCtx::new(index, o, u, planes);
    let Scratch {
        layer: best,
        listed,
    } = scratch;
    best.reset(window);
    let inv_bc = 1.0 / bc;
    let mut outer = Dda::new(o, u, inv, t_start, lo, [bc; 3], [inv_bc; 3], td);
    let mut t_enter = t_start;
    loop {
        let [x, y, z] = outer.cell;
        let exit = outer.exit();
        let column = (y * td[0] + x) as usize;
        let block = z as usize * index.column_top.len() + column;
        if index.column_top.get(column).is_some_and(|&t| z <= t)
            && let Some(&Block { slot, bbox }) = index.top.get(block)
            && slot != EMPTY
        {
            let blo = [
                lo[0] + x as f32 * bc,
                lo[1] + y as f32 * bc,
                lo[2] + z as f32 * bc,
            ];
            trace_block(
                &ray,
                index,
                slot as usize,
                bbox,
                blo,
                inv,
                t_enter,
                t_end,
                best,
                listed,
            );
        }
        if best.limit() <= exit || exit > t_end || !outer.advance(td) {
            break;
        }
        t_enter = exit;
    }
    best.resolve()
}

/// Marches through the cells of one block from ray parameter `t_enter`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn trace_block(
    ray: &RayCtx,
    index: &BeamIndex,
    slot: usize,
    b: [u8; 6],
    blo: [f32; 3],
    inv: [f32; 3],
    t_enter: f32,
    t_end: f32,
    best: &mut Layer,
    listed: &mut [u32; SCREENED],
) {
    let dims = [BLOCK; 3];
    let c = index.cell;
    let box_lo = [0, 1, 2].map(|a| blo[a] + b[a] as f32 * c);
    let box_hi = [0, 1, 2].map(|a| blo[a] + (b[a + 3] as f32 + 1.0) * c);
    let Some((ta, tb)) = slab(ray.o, inv, box_lo, box_hi) else {
        return;
    };
    let ta = max_of(ta, t_enter);
    let tb = min_of(tb, t_end);
    // A hit that matters lies at or before the layer's limit, and one before `ta` would have been met in an
    // earlier block; the limit can only move once a nearer hit is found, so the march itself re-reads it.
    if !(ta <= min_of(tb, best.limit())) {
        return;
    }
    let mut dda = Dda::new(
        ray.o,
        ray.u,
        inv,
        ta,
        blo,
        [c; 3],
        [index.inv_cell; 3],
        dims,
    );
    let base = slot * BLOCK_CELLS;
    // A point gives a hit in a cell only within rho of the beam's path through it (the hit lies on its disk);
    // the margin covers that and the rounding of the cell's ray parameters.
    // The block's occupancy words and cell starts, looked up once for all its cells.
    let (Some(occupancy), Some(starts)) = (
        index.occupied.get(slot),
        index.starts.get(base..base + BLOCK_CELLS + 1),
    ) else {
        return;
    };
    let mut t_in = ta;
    loop {
        let [x, y, z] = dda.cell;
        let local = ((z * BLOCK + y) * BLOCK + x) as usize;
        let occupied = occupancy.0[local / 64 % 8] & (1u64 << (local % 64)) != 0;
        if occupied && let (Some(&start), Some(&end)) = (starts.get(local), starts.get(local + 1)) {
            // A beam within 30 degrees of horizontal skips the cell's packs (sorted by height) outside its
            // height range in the cell, and so does a steeper one whose range there is short (it clips the
            // cell); other steep beams walk every pack, which keeps the two tests below predictable where
            // they would cut nothing (a steep beam over flat ground). The first and last packs of the range
            // are found by walking: a binary search's scattered loads cost more than it saved.
            let (a, b, class) = if index.folded {
                (start & START_MASK, end & START_MASK, start >> START_BITS)
            } else {
                (start, end, CLASS_MASK as u32)
            };
            let r = SCREEN_SLACK * index.rho * disks::scale_of(class);
            let margin = r + 1e-3 * c;
            let z0 = ray.o[2] + t_in * ray.u[2];
            let z1 = ray.o[2] + min_of(dda.exit(), t_end) * ray.u[2];
            let (zlo, zhi) = (min_of(z0, z1) - margin, max_of(z0, z1) + margin);
            let (zlo, zhi) = if ray.flat || zhi - zlo < CUT_SPAN * c {
                (zlo, zhi)
            } else {
                (f32::NEG_INFINITY, f32::INFINITY)
            };
            // Screen four points at a time and list the few that pass (branch-free: every lane is written,
            // only those that pass advance the end), then test them exactly, in pack and lane order.
            let (a, b) = (a as usize, b as usize);
            let mut n = 0usize;
            for (at, pack) in (a..b).zip(ray.packs.get(a..b).unwrap_or(&[])) {
                // A partial last pack's padding is NaN: never skipped by the second test.
                if pack.z[0] > zhi {
                    break;
                }
                if pack.z[LANES - 1] < zlo {
                    continue;
                }
                if n > SCREENED - LANES {
                    test_listed(ray, &listed[..n], t_end, best);
                    n = 0;
                }
                // n <= SCREENED - LANES here (the flush above), so the store always fits.
                let (lanes, count) = COMPACT[screen(ray, pack) as usize & 15];
                let codes = u32x4::splat((at as u32) << 2) | u32x4::from(lanes);
                if let Some(slots) = listed.get_mut(n..n + LANES) {
                    slots.copy_from_slice(&codes.to_array());
                }
                n += count as usize;
            }
            test_listed(ray, &listed[..n], t_end, best);
        }
        let exit = dda.exit();
        if best.limit() <= exit || exit > tb || !dda.advance(dims) {
            break;
        }
        t_in = exit;
    }
}

/// A beam steeper than 30 degrees is cut to its height range in a cell when that range, widened by the
/// screening margin on both sides, spans less than this many cell edges. Measured (docs/benchmarks.md,
/// 2026-11-24): 0.75 makes hall Mid-360 frames 5-8% faster and leaves the tiled map level or a little faster;
/// cutting every beam made views from 20 m up 5-10% slower. The output does not depend on it.
const CUT_SPAN: f32 = 0.75;

/// Screened points listed per cell before their exact tests (a multiple of [`LANES`]).
const SCREENED: usize = 64;

/// Exact tests of screened points (`pack << 2 | lane`), offering their hits to `best` in order. The point's
/// offset, projection and distance to the ray are recomputed with the operations of [`screen`] in the same
/// order (the same values), which costs less than storing every lane's for the few that pass.
#[inline(always)]
fn test_listed(ray: &RayCtx, listed: &[u32], t_end: f32, best: &mut Layer) {
    for &code in listed {
        let (at, j) = ((code >> 2) as usize, (code & 3) as usize);
        let Some(pack) = ray.packs.get(at) else {
            continue;
        };
        let lane = |v: &[f32; LANES]| v.get(j).copied().unwrap_or(f32::NAN);
        let rel = [
            lane(&pack.x) - ray.o[0],
            lane(&pack.y) - ray.o[1],
            lane(&pack.z) - ray.o[2],
        ];
        let u = ray.u;
        let tp = rel[0] * u[0] + rel[1] * u[1] + rel[2] * u[2];
        let m = [rel[0] - tp * u[0], rel[1] - tp * u[1], rel[2] - tp * u[2]];
        let perp2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
        let Some(&word) = pack.normal.get(j) else {
            continue;
        };
        if let Some((t, cos, off2)) = disk_hit(ray, word, rel, tp, perp2)
            && t <= t_end
            && let Some(info) = ray.infos.get(at)
            && let (Some(&idx), Some(&gamma)) = (info.idx.get(j), info.gamma.get(j))
        {
            // The footprint weight falls to the rim of a disk of rho, whatever the disk's own radius: where
            // points are as dense as r_map their hits outweigh the rim of a neighbour's wider disk, and a beam
            // through a sparse surface, met only by wide disks (weights at the layer's floor), takes their mean.
            best.offer(t, idx, cos, 1.0 - off2 / ray.rho2, gamma);
        }
    }
}

/// Bit j set where the ray passes close enough to point j of the pack (within the screening radius of its
/// disk's radius class, not behind) for its disk: the four lanes at once (SSE; the compiler left the same code
/// per lane scalar).
#[inline(always)]
fn screen(ray: &RayCtx, pack: &Pack) -> u32 {
    let [ox, oy, oz] = ray.o.map(f32x4::splat);
    let [ux, uy, uz] = ray.u.map(f32x4::splat);
    let rx = f32x4::from(pack.x) - ox;
    let ry = f32x4::from(pack.y) - oy;
    let rz = f32x4::from(pack.z) - oz;
    // Separate multiplies and adds in the scalar order of [`test_listed`], which recomputes them for the
    // points that pass.
    let tp = rx * ux + ry * uy + rz * uz;
    let (mx, my, mz) = (rx - tp * ux, ry - tp * uy, rz - tp * uz);
    let d2 = mx * mx + my * my + mz * mz;
    // Each lane's screening radius from its disk's radius class (the arithmetic shift drags the sign bit
    // along; the mask drops it).
    let class =
        (i32x4::new(pack.normal.map(|w| w as i32)) >> CLASS_SHIFT) & i32x4::splat(CLASS_MASK);
    let r = f32x4::splat(ray.screen) * disks::scale_of_x4(f32x4::from_i32x4(class));
    let pass = d2.simd_le(r * r) & tp.simd_gt(-r);
    pass.to_bitmask()
}

/// Disk intersection of a screened point (`rel` from the ray origin, `tp` its projection on the ray, `perp2`
/// its squared distance to the ray): an oriented disk where the point lies on a plane and the ray is not
/// near-parallel to it, as wide as the sampling around the point ([`disks`]), else a disk of radius rho
/// facing the ray (the plain range).
#[inline(always)]
fn disk_hit(
    ray: &RayCtx,
    word: u32,
    rel: [f32; 3],
    tp: f32,
    perp2: f32,
) -> Option<(f32, f32, f32)> {
    let u = ray.u;
    // |n . u| / |n| for a normal direction n of any length.
    let cos_of = |n: [f32; 3], denom: f32| (denom.abs() / dot(n, n).sqrt()).min(1.0);
    if ray.planes && word & PLANAR != 0 {
        let n = normal_direction(word);
        let denom = dot(n, u);
        // |cos| >= MIN_COS_PLANE without the square root.
        if denom * denom >= MIN_COS_PLANE * MIN_COS_PLANE * dot(n, n) {
            let t = dot(n, rel) / denom;
            if !(t > 0.0) {
                return None;
            }
            let miss = [t * u[0] - rel[0], t * u[1] - rel[1], t * u[2] - rel[2]];
            let off2 = dot(miss, miss);
            let scale = disk_scale(word);
            return (off2 <= ray.rho2 * scale * scale).then(|| (t, cos_of(n, denom), off2));
        }
    }
    if !(tp > 0.0 && perp2 <= ray.rho2) {
        return None;
    }
    let cos = if word & HAS_NORMAL != 0 {
        let n = normal_direction(word);
        cos_of(n, dot(n, u))
    } else {
        1.0
    };
    Some((tp, cos, perp2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::BeamRng;

    #[test]
    fn packed_normals_round_trip() {
        for n in [
            [0.0f32, 0.0, 1.0],
            [0.0, 0.0, -1.0],
            [1.0, 0.0, 0.0],
            [0.6, -0.8, 0.0],
            [-0.48, 0.6, -0.64],
            [0.267, 0.534, 0.802],
        ] {
            let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let n = [n[0] / l, n[1] / l, n[2] / l];
            let v = pack_normal(Some(n), true, 0);
            assert!(v & HAS_NORMAL != 0 && v & PLANAR != 0);
            let m = normal_direction(v);
            let l = dot(m, m).sqrt();
            let m = m.map(|c| c / l);
            // Within 3e-4 rad (13-bit octahedral coordinates: about 2e-4).
            let c = super::super::cross(m, n);
            assert!(dot(c, c).sqrt() < 3e-4 && dot(m, n) > 0.0, "{n:?} {m:?}");
            assert!((dot(m, m) - 1.0).abs() < 1e-6);
        }
        assert_eq!(pack_normal(None, true, 0), 0);
        assert_eq!(pack_normal(Some([f32::NAN, 0.0, 1.0]), true, 0), 0);
        assert_eq!(pack_normal(Some([0.0, 1.0, 0.0]), false, 0) & PLANAR, 0);
    }

    /// A room (floor, ceiling, four walls) a few centimetres thick, with normals, and poles: every point listed
    /// once, in one bucket.
    fn room_map(seed: u64) -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<f32>) {
        let mut rng = BeamRng::new(seed, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut pos, mut nor, mut gam) = (Vec::new(), Vec::new(), Vec::new());
        let mut push = |p: [f32; 3], n: [f32; 3], g: f32| {
            pos.push(p);
            nor.push(n);
            gam.push(g);
        };
        for _ in 0..50_000 {
            let (a, b, th) = (rnd() * 10.0, rnd() * 8.0, (rnd() - 0.5) * 0.06);
            match (rnd() * 7.0) as u32 {
                0 => push([a, b, th], [0.0, 0.0, 1.0], 0.02),
                1 => push([a, b, 3.0 + th], [0.0, 0.0, -1.0], 0.02),
                2 => push([a, th, b * 0.375], [0.0, 1.0, 0.0], 0.02),
                3 => push([a, 8.0 + th, b * 0.375], [0.0, -1.0, 0.0], 0.02),
                4 => push([th, b, a * 0.3], [1.0, 0.0, 0.0], 0.02),
                5 => push([10.0 + th, b, a * 0.3], [-1.0, 0.0, 0.0], 0.02),
                _ => {
                    // Poles: no plane.
                    let (cx, cy) = (
                        (a as u32 % 4) as f32 * 2.0 + 1.0,
                        (b as u32 % 3) as f32 * 2.0 + 1.5,
                    );
                    let ang = rnd() * std::f32::consts::TAU;
                    push(
                        [cx + 0.05 * ang.cos(), cy + 0.05 * ang.sin(), rnd() * 3.0],
                        [ang.cos(), ang.sin(), 0.0],
                        f32::INFINITY,
                    );
                }
            }
        }
        (pos, nor, gam)
    }

    /// The beam index of [`room_map`], the whole room in one bucket.
    fn room_index(seed: u64) -> BeamIndex {
        let (positions, normals, gamma) = room_map(seed);
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for p in &positions {
            for a in 0..3 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        let buckets = [aerie_pipeline::map::Bucket {
            key: 0,
            first: 0,
            count: positions.len() as u32,
            min: lo,
            max: hi,
        }];
        BeamIndex::build(&MapView {
            origin: [0.0; 3],
            resolution: 0.1,
            bucket_size: 20.0,
            buckets: &buckets,
            positions: &positions,
            normals: Some(&normals),
            gamma: Some(&gamma),
            spacing: None,
            surface_offset: None,
            reflectance: None,
        })
    }

    /// An index too large to fold the radius classes into its cell starts (2^28 packs or more) keeps them
    /// whole and screens every cell with the widest class: the same hits as the folded index.
    #[test]
    fn unfolded_cell_starts_find_the_same_hits() {
        let folded = room_index(7);
        let mut whole = room_index(7);
        assert!(folded.folded);
        for s in whole.starts.iter_mut() {
            *s &= START_MASK;
        }
        whole.folded = false;
        let (small, _) = fold_classes(vec![0, 4, START_MASK], &[1, 2]);
        assert_eq!(small, [1 << START_BITS, 4 | 2 << START_BITS, START_MASK]);
        assert_eq!(
            fold_classes(vec![0, START_MASK + 1], &[3]),
            (vec![0, START_MASK + 1], false)
        );
        let mut rng = BeamRng::new(5, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let mut scratch = Scratch::new();
        let mut hits = 0;
        for _ in 0..1000 {
            let o = [1.0 + rnd() * 8.0, 1.0 + rnd() * 6.0, 0.3 + rnd() * 2.4];
            let z = rnd() * 2.0 - 1.0;
            let a = rnd() * std::f32::consts::TAU;
            let h = (1.0 - z * z).sqrt();
            let u = [h * a.cos(), h * a.sin(), z];
            let window = (2.0, 0.1);
            let expected = march(&folded, (o, u), (0.0, 100.0), true, window, &mut scratch);
            let got = march(&whole, (o, u), (0.0, 100.0), true, window, &mut scratch);
            assert_eq!(got, expected, "from {o:?} along {u:?}");
            hits += usize::from(got.is_some());
        }
        assert!(hits > 900, "{hits} of 1000 beams hit the room");
    }

    /// Every beam's hit through the march equals the hit of a layer offered every point of the index: the
    /// march's early exit and its cuts (empty blocks and cells, packs outside the height range of a flat beam
    /// or of a steep one that clips a cell) never drop a hit that matters.
    #[test]
    fn the_march_finds_what_testing_every_point_finds() {
        let index = room_index(7);
        // The random sampling leaves parts of the walls sparser than r_map: some disks are wider.
        assert!(index.starts.iter().any(|&s| s >> START_BITS > 0));
        let mut rng = BeamRng::new(11, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut hits, mut flat) = (0, 0);
        for i in 0..3000 {
            let o = [1.0 + rnd() * 8.0, 1.0 + rnd() * 6.0, 0.3 + rnd() * 2.4];
            // Half the beams within 30 degrees of horizontal, where the height cut applies.
            let z = if i % 2 == 0 {
                (rnd() - 0.5) * 0.9
            } else {
                rnd() * 2.0 - 1.0
            };
            let a = rnd() * std::f32::consts::TAU;
            let h = (1.0 - z * z).sqrt();
            let u = [h * a.cos(), h * a.sin(), z];
            let window = (2.0, 0.1);
            for planes in [true, false] {
                let marched = march(
                    &index,
                    (o, u),
                    (0.0, 100.0),
                    planes,
                    window,
                    &mut Scratch::new(),
                );
                let ray = RayCtx::new(&index, o, u, planes);
                let mut every = Layer::new(window);
                let mut listed = Vec::new();
                for (at, pack) in index.packs.iter().enumerate() {
                    let mask = screen(&ray, pack);
                    listed.extend(
                        (0..LANES as u32)
                            .filter(|j| mask >> j & 1 != 0)
                            .map(|j| (at as u32) << 2 | j),
                    );
                }
                test_listed(&ray, &listed, 100.0, &mut every);
                assert_eq!(
                    marched,
                    every.resolve(),
                    "beam {i} from {o:?} along {u:?}, planes {planes}"
                );
                hits += usize::from(marched.is_some());
                flat += usize::from(ray.flat);
            }
        }
        // The rays start inside a closed room (randomly sampled, so with a few holes): nearly all hit, and
        // both kinds of beam were tried.
        assert!(hits > 5500, "{hits}");
        assert!(flat > 2000 && flat < 5000, "{flat}");
    }

    /// A beam marched over the span the range bound gives finds what it finds marched from its origin: from
    /// inside the room (every beam hits) and from above and beside it (many miss, and their spans are empty;
    /// 2 m from a wall, only a short reach gets there),
    /// with beams leaving anywhere within the bound's spread, the near blocks projected cell by cell or every
    /// block whole, and blocks beyond a short reach left out.
    #[test]
    fn a_march_over_the_bounded_span_finds_what_the_whole_march_finds() {
        let index = room_index(3);
        let mut rng = BeamRng::new(5, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut cut, mut empty, mut hits) = (0, 0, 0);
        let origins = [
            [5.0, 4.0, 1.5],
            [2.0, 6.5, 2.5],
            [5.0, 4.0, 8.0],
            [-6.0, 3.0, 1.0],
            [-2.0, 4.0, 1.5],
        ];
        for (k, centre) in origins.into_iter().enumerate() {
            for (spread, cells_within, reach) in [
                (0.0, 4.0, 100.0),
                (0.3, 4.0, 100.0),
                (0.1, 0.0, 100.0),
                (0.1, 4.0, 3.0),
            ] {
                let frame = (centre, spread, reach);
                let bound = RangeBound::build(&index, frame, 0x3f, 64, cells_within);
                let mut scratch = Scratch::new();
                for i in 0..400 {
                    // A beam origin within the spread, a direction anywhere.
                    let e = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5];
                    let l = dot(e, e).sqrt().max(1e-6);
                    let o = [0, 1, 2].map(|a| centre[a] + e[a] / l * spread * rnd());
                    let z = rnd() * 2.0 - 1.0;
                    let az = rnd() * std::f32::consts::TAU;
                    let h = (1.0 - z * z).sqrt();
                    let u = [h * az.cos(), h * az.sin(), z];
                    let whole = march(&index, (o, u), (0.0, reach), true, (2.0, 0.1), &mut scratch);
                    let (near, far) = bound.at(u);
                    let bounded = march(
                        &index,
                        (o, u),
                        (near, far.min(reach)),
                        true,
                        (2.0, 0.1),
                        &mut scratch,
                    );
                    assert_eq!(
                        whole, bounded,
                        "origin {k}, beam {i} from {o:?} along {u:?}"
                    );
                    cut += usize::from(near > 0.5);
                    empty += usize::from(!(near <= far));
                    hits += usize::from(whole.is_some());
                }
            }
        }
        // The bound cut most beams short and left some empty, and beams both hit and missed.
        assert!(
            cut > 5000 && empty > 3000 && hits > 2500 && hits < 5000,
            "{cut} {empty} {hits}"
        );
    }

    #[test]
    fn slab_hits_and_misses() {
        let inv = [1.0, f32::INFINITY, f32::INFINITY];
        let hit = slab([0.0, 0.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).unwrap();
        assert_eq!(hit, (1.0, 2.0));
        assert!(slab([0.0, 1.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).is_none());
    }
}
