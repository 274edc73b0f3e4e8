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
}

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
        Seen { bits, rank, tags }
    }

    fn id(&self, grid: &VoxelGrid, c: Cell) -> Option<usize> {
        if !grid.contains(c) {
            return None;
        }
        let i = grid.linear(c);
        let word = self.bits[i / 64];
        let bit = 1u64 << (i % 64);
        (word & bit != 0)
            .then(|| self.rank[i / 64] as usize + (word & (bit - 1)).count_ones() as usize)
    }

    /// Record that scan `tag` crossed voxel `c` (voxels far from every point are not kept).
    pub fn mark(&self, grid: &VoxelGrid, c: Cell, tag: u32) {
        if let Some(id) = self.id(grid, c) {
            self.tags[id].store(tag, Ordering::Relaxed);
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
