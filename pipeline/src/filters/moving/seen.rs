//! Which voxels near the map's points each scan saw free: DUFOMap's void test (Duberg et al., RA-L 2024).
//!
//! Why: on a real fused map (the balm hall), surfaces are layers a few centimetres thick from pose error and
//! noise, windows let rays through beside their frames, and edges return mixed ranges; freeing every occupied
//! voxel that some ray crossed removed half of that map. A voxel is freed only when the same scan also saw
//! (nearly) all of its 26 neighbours free: a ray that slips through a surface beside its hits, or past a thin
//! frame, leaves the neighbours on the far side unseen and frees nothing, while the space a person left is
//! crossed by many rays around it. The neighbours that matter are those of occupied voxels, so only the
//! occupied voxels dilated by one get a mark: the last scan whose ray crossed them.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use super::grid::{Cell, VoxelGrid};

/// Per voxel within one voxel of a point: the last scan (1 + index) whose ray crossed it.
pub(super) struct Seen {
    bits: Vec<u64>,
    rank: Vec<u32>,
    tags: Vec<AtomicU32>,
    /// One bit per brick of `BRICK`^3 voxels (linear order over `brick_dims`): some voxel of it is near a point.
    bricks: Vec<u64>,
    brick_dims: [i64; 3],
}

/// Edge of a brick, voxels: a ray crosses a brick with no voxel near a point in one step.
pub(super) const BRICK: i64 = 4;

impl Seen {
    /// Marks for the occupied voxels of `grid` and their 26 neighbours.
    pub fn new(grid: &VoxelGrid) -> Seen {
        let occupied = grid.occupied_bits();
        let bits: Vec<std::sync::atomic::AtomicU64> = (0..occupied.len())
            .map(|_| std::sync::atomic::AtomicU64::new(0))
            .collect();
        occupied.par_iter().enumerate().for_each(|(w, &word)| {
            let mut rest = word;
            while rest != 0 {
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let c = grid.cell_at(w * 64 + b);
                for n in neighbours(c, true) {
                    if grid.contains(n) {
                        let i = grid.linear(n);
                        bits[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
                    }
                }
            }
        });
        let bits: Vec<u64> = bits
            .into_iter()
            .map(std::sync::atomic::AtomicU64::into_inner)
            .collect();
        let mut total = 0u32;
        let rank = bits
            .iter()
            .map(|w| {
                let before = total;
                total += w.count_ones();
                before
            })
            .collect();
        let tags = (0..total).map(|_| AtomicU32::new(0)).collect();
        let brick_dims = grid.dims.map(|d| (d + BRICK - 1) / BRICK);
        let mut bricks = vec![0u64; (brick_dims.iter().product::<i64>() as usize).div_ceil(64)];
        for (w, &word) in bits.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                let c = grid.cell_at(w * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
                let b =
                    ((c[2] / BRICK) * brick_dims[1] + c[1] / BRICK) * brick_dims[0] + c[0] / BRICK;
                bricks[b as usize / 64] |= 1 << (b % 64);
            }
        }
        Seen {
            bits,
            rank,
            tags,
            bricks,
            brick_dims,
        }
    }

    /// Bricks along x, y, z (the grid's dimensions over `BRICK`, rounded up).
    pub fn brick_dims(&self) -> [i64; 3] {
        self.brick_dims
    }

    /// Whether some voxel of brick `b` (brick coordinates inside `brick_dims`) is near a point.
    #[inline]
    pub fn brick_near(&self, b: [i64; 3]) -> bool {
        let i = ((b[2] * self.brick_dims[1] + b[1]) * self.brick_dims[0] + b[0]) as usize;
        self.bricks[i / 64] & (1 << (i % 64)) != 0
    }

    fn id(&self, grid: &VoxelGrid, c: Cell) -> Option<usize> {
        if !grid.contains(c) {
            return None;
        }
        self.id_at(grid.linear(c))
    }

    #[inline]
    fn id_at(&self, i: usize) -> Option<usize> {
        let word = self.bits[i / 64];
        let bit = 1u64 << (i % 64);
        (word & bit != 0)
            .then(|| self.rank[i / 64] as usize + (word & (bit - 1)).count_ones() as usize)
    }

    /// One bit per voxel of the box (linear order): the voxel is within one voxel of a point. A ray's step
    /// elsewhere has nothing to mark, test or free.
    pub fn near_bits(&self) -> &[u64] {
        &self.bits
    }

    /// Record that scan `tag` crossed the voxel at linear index `i` (voxels far from every point are not kept).
    /// The mark is written only when it changes, so threads walking the same voxels share its cache line.
    #[inline]
    pub fn mark_at(&self, i: usize, tag: u32) {
        if let Some(id) = self.id_at(i) {
            let t = &self.tags[id];
            if t.load(Ordering::Relaxed) != tag {
                t.store(tag, Ordering::Relaxed);
            }
        }
    }

    /// How many of the 26 neighbours of `c` scan `tag` did not see free.
    pub fn unseen_neighbours(&self, grid: &VoxelGrid, c: Cell, tag: u32) -> usize {
        neighbours(c, false)
            .filter(|&n| {
                self.id(grid, n)
                    .is_none_or(|id| self.tags[id].load(Ordering::Relaxed) != tag)
            })
            .count()
    }
}

/// The 26 neighbours of `c` (and `c` itself when `with_self`).
fn neighbours(c: Cell, with_self: bool) -> impl Iterator<Item = Cell> {
    (0..27)
        .map(move |k| [c[0] + k % 3 - 1, c[1] + (k / 3) % 3 - 1, c[2] + k / 9 - 1])
        .filter(move |n| with_self || *n != c)
}
