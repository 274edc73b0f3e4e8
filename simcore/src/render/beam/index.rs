//! The beam index's layout ([`BeamIndex`]): a two-level grid over the map (blocks of 8 x 8 x 8 fine cells), the
//! occupancy and cell tables a beam reads, and each cell's points four to a cache-line pack with their normals
//! packed in one word each; what the march reads and the range bound projects. Built in `build.rs`.

use aerie_pipeline::lanes::LANES;

use crate::render::disks;
use crate::render::pages::HugeVec;

/// Block edge in fine cells (8^3 = 512 cells: eight 64-bit occupancy words).
pub(super) const BLOCK: i32 = 8;
pub(super) const BLOCK_CELLS: usize = 512;

pub(super) const EMPTY: u32 = u32::MAX;

/// Bits of a packed normal (see [`pack_normal`]).
pub(super) const HAS_NORMAL: u32 = 1 << 31;
pub(super) const PLANAR: u32 = 1 << 30;
pub(super) const CLASS_SHIFT: u32 = 26;
pub(super) const CLASS_MASK: i32 = disks::CLASSES as i32 - 1;
const OCT_BITS: u32 = 13;
const OCT_MASK: u32 = (1 << OCT_BITS) - 1;
const OCT_MAX: f32 = OCT_MASK as f32;

/// A point's disk in 32 bits: its unit normal as octahedral coordinates, 13 bits each (within 2e-4 rad), the
/// class of its disk's radius (4 bits, [`disks`]), whether it has a normal and whether it lies on a plane
/// (plane thickness below the index's gamma_max). One word per point lets a pack of four points fit one cache
/// line, and the exact test reads nothing else of the point.
pub(super) fn pack_normal(n: Option<[f32; 3]>, planar: bool, class: u8) -> u32 {
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
pub(super) fn disk_scale(v: u32) -> f32 {
    disks::scale_of(v >> CLASS_SHIFT & CLASS_MASK as u32)
}

/// The direction of a packed normal (meaningful when `HAS_NORMAL` is set), not normalised: its L1 norm is 1.
/// The disk test is scale-free except for the cosine of incidence, which divides by the length once a hit is
/// accepted; so the square root and divisions of a unit normal are only paid for hits.
#[inline(always)]
pub(super) fn normal_direction(v: u32) -> [f32; 3] {
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
pub(super) struct Pack {
    pub(super) x: [f32; LANES],
    pub(super) y: [f32; LANES],
    pub(super) z: [f32; LANES],
    pub(super) normal: [u32; LANES],
}

/// What only a hit offered to the beam's layer reads of a pack's points (one entry per pack, same index).
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(super) struct PackInfo {
    /// Index of each point in the map.
    pub(super) idx: [u32; LANES],
    /// Plane thickness of each point, millimetres (saturating; `u16::MAX` where there is no plane): how deep
    /// the surface layer behind a hit on it reaches.
    pub(super) gamma: [u16; LANES],
}

/// An entry of the block table: the block's slot and the box of its occupied cells (min and max cell per
/// axis), read together so that a beam clips itself to the box without another cache miss.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub(super) slot: u32,
    pub(super) bbox: [u8; 6],
}

/// Occupancy of one slot's 512 cells, one bit each, aligned to a cache line so that it costs one miss.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct Occupancy(pub(super) [u64; BLOCK_CELLS / 64]);

/// Acceleration structure of the beam renderer for one map (built once per map).
pub struct BeamIndex {
    pub(super) rho: f32,
    /// Fine grid: origin, cell edge and its inverse; the grid is `top_dims * BLOCK` cells per axis.
    pub(super) lo: [f32; 3],
    pub(super) cell: f32,
    pub(super) inv_cell: f32,
    /// Block table: block -> slot of its cells (or `EMPTY`) and the box of its occupied cells: a beam is
    /// clipped to the box before marching the block, so it skips the empty part of a block (above the
    /// ground, beside a wall).
    pub(super) top_dims: [i32; 3],
    pub(super) top: Vec<Block>,
    /// Per column of blocks (x, y), the height (block z) of its highest occupied block, -1 when none: a beam
    /// above it there has nothing to look up (a table small enough to stay in L1, read instead of `top`).
    pub(super) column_top: Vec<i32>,
    /// Per slot, its block.
    pub(super) slot_blocks: Vec<u32>,
    /// Per slot, `BLOCK_CELLS` cell starts into `packs` (plus one final end), each with the cell's radius
    /// class above [`START_BITS`] when `folded` (see [`fold_classes`](super::build::fold_classes)).
    pub(super) starts: HugeVec<u32>,
    pub(super) folded: bool,
    /// The largest disk radius of the map.
    pub(super) rho_max: f32,
    /// Per slot, one bit per cell, set where the cell holds points. A beam crosses mostly empty cells; this
    /// table is 32 times smaller than `starts`, so it stays in cache longer.
    pub(super) occupied: Vec<Occupancy>,
    /// Per slot cell, the box within the cell that its points' disks reach, in 1/255 of the cell edge (min
    /// and max per axis, rounded outwards): every hit in the cell lies in it. What [`super::bound`] projects.
    pub(super) cell_box: HugeVec<[u8; 6]>,
    /// Points grouped by fine cell (a point appears in every cell its disk can reach), then by height, four
    /// to a pack.
    pub(super) packs: HugeVec<Pack>,
    /// Per pack, its points' map indices and plane thicknesses.
    pub(super) infos: HugeVec<PackInfo>,
    /// Plane thickness below which the packed normals say "planar".
    pub(super) gamma_max: f32,
    /// Points on planes were packed on their surfaces (`render/surface.rs`), not where the map holds them.
    pub(super) on_surface: bool,
    /// The largest reflectance of the map's points ([`BeamIndex::max_reflectance`]).
    pub(super) max_reflectance: Option<f32>,
}

/// Cell of coordinate `v` along one axis, clamped to the grid (truncation equals floor once clamped at 0).
#[inline]
pub(super) fn cell_of(v: f32, lo: f32, inv_cell: f32, dim: i32) -> i32 {
    (((v - lo) * inv_cell).max(0.0) as i32).min(dim - 1)
}

impl BeamIndex {
    /// The blocks that hold points, as (block, slot), in block order.
    pub(super) fn occupied_blocks(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.slot_blocks
            .iter()
            .enumerate()
            .map(|(slot, &block)| (block as usize, slot as u32))
    }

    /// The largest reflectance of the map's points (NaN left out, infinity kept), `None` without the column.
    pub(super) fn max_reflectance(&self) -> Option<f32> {
        self.max_reflectance
    }

    /// How far past a sensor's range a beam is marched: the widest disk's radius.
    pub(super) fn disk_reach(&self) -> f32 {
        self.rho_max
    }

    /// The box of block `block`'s occupied cells, map-relative.
    pub(super) fn block_box(&self, block: usize) -> Option<([f32; 3], [f32; 3])> {
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
    pub(super) fn for_each_cell_box(
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
    pub(super) fn cell_size(&self) -> f32 {
        self.cell
    }

    /// Edge of a block, metres.
    pub(super) fn block_size(&self) -> f32 {
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

/// The coordinates of block `block` in a block table of `top_dims` blocks (x fastest, then y, then z).
pub(super) fn block_coords(top_dims: [i32; 3], block: usize) -> [i32; 3] {
    let columns = (top_dims[0] * top_dims[1]).max(1) as usize;
    let column = (block % columns) as i32;
    [
        column % top_dims[0].max(1),
        column / top_dims[0].max(1),
        (block / columns) as i32,
    ]
}

/// The coordinates of cell `local` (0..512) within its block (x fastest, then y, then z).
pub(super) fn local_coords(local: usize) -> [i32; 3] {
    let l = local as i32;
    [l % BLOCK, l / BLOCK % BLOCK, l / (BLOCK * BLOCK)]
}

/// The low corner (map-relative) of the fine cell at `local` in block `block` of a grid from `lo` with cells
/// of edge `cell`: one formula for the index build and the projection that reads it back, so the two agree.
pub(super) fn cell_corner(lo: [f32; 3], cell: f32, block: [i32; 3], local: [i32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| lo[k] + (block[k] * BLOCK + local[k]) as f32 * cell)
}

/// Bits of a cell start that hold its first pack; the cell's radius class sits above them, so that the march
/// reads a cell's packs and its screening radius with one load (a table of classes apart was one more cache
/// line per occupied cell, docs/benchmarks.md 2026-11-30).
pub(super) const START_BITS: u32 = 28;
pub(super) const START_MASK: u32 = (1 << START_BITS) - 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::vec3::{cross, dot};

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
            let c = cross(m, n);
            assert!(dot(c, c).sqrt() < 3e-4 && dot(m, n) > 0.0, "{n:?} {m:?}");
            assert!((dot(m, m) - 1.0).abs() < 1e-6);
        }
        assert_eq!(pack_normal(None, true, 0), 0);
        assert_eq!(pack_normal(Some([f32::NAN, 0.0, 1.0]), true, 0), 0);
        assert_eq!(pack_normal(Some([0.0, 1.0, 0.0]), false, 0) & PLANAR, 0);
    }
}
