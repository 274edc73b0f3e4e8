//! The voxel grid of `filters.moving`: which voxels hold points (a dense bit per voxel of the cloud's bounding
//! box, with a rank table so each occupied voxel gets a dense id), and per occupied voxel whether some scan saw
//! through it (how many scans, against how many scans hit it) and which scan last protected it (its own hits
//! nearby).
//!
//! Only voxels that hold points are ever classified, so the per-voxel state is kept for those alone: a ray's
//! step through empty space costs one bit test. Memory: 1.5 bits per voxel of the box plus 22 bytes per
//! occupied voxel, whatever the number of scans.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rayon::prelude::*;

/// Voxel coordinates (ix, iy, iz) inside the grid.
pub(super) type Cell = [i64; 3];

/// The grid over a cloud's bounding box, in the cloud's local frame (positions relative to its origin).
pub(super) struct VoxelGrid {
    /// Corner of voxel (0, 0, 0), local metres.
    pub min: [f64; 3],
    /// Voxel edge, metres.
    pub voxel_m: f64,
    /// Voxels along x, y, z.
    pub dims: [i64; 3],
    /// One bit per voxel of the box: the voxel holds at least one point.
    occupied: Vec<u64>,
    /// Occupied voxels in the words before each word of `occupied`.
    rank: Vec<u32>,
    /// Per occupied voxel (by id): scans whose rays passed through it away from their own hits (and passed the
    /// void test).
    frees: Vec<AtomicU32>,
    /// Per occupied voxel: how many such scans make it free (1 unless many scans hit it, see `set_need`).
    need: Vec<u32>,
    /// Per occupied voxel, 1 + the index of the last scan with a point in it (a scan's hits counted once).
    hit: Vec<AtomicU32>,
    /// Per occupied voxel, 1 + the index of the last scan whose hits lie within the protection margin.
    protect: Vec<AtomicU32>,
    /// Per occupied voxel, 1 + the index of the last scan that listed it as a candidate to free.
    listed: Vec<AtomicU32>,
}

/// The grid would not fit: too many voxels for the bounding box at this voxel size.
#[derive(Debug)]
pub(super) struct TooLarge {
    /// Voxels the box would need.
    pub voxels: u128,
}

/// Most voxels a grid may span (1 GiB of occupancy bits): beyond it the caller is told to crop or coarsen.
pub(super) const MAX_VOXELS: u128 = 1 << 33;

impl VoxelGrid {
    /// An empty grid of `voxel_m` over the box `[min, max]` (local metres).
    pub fn new(min: [f64; 3], max: [f64; 3], voxel_m: f64) -> Result<VoxelGrid, TooLarge> {
        let dim = |a: usize| ((max[a] - min[a]) / voxel_m).floor() as i64 + 1;
        let dims = [dim(0), dim(1), dim(2)];
        let voxels = dims.iter().map(|&d| d.max(1) as u128).product::<u128>();
        if voxels > MAX_VOXELS {
            return Err(TooLarge { voxels });
        }
        let words = (voxels as usize).div_ceil(64);
        Ok(VoxelGrid {
            min,
            voxel_m,
            dims,
            occupied: vec![0; words],
            rank: Vec::new(),
            frees: Vec::new(),
            need: Vec::new(),
            hit: Vec::new(),
            protect: Vec::new(),
            listed: Vec::new(),
        })
    }

    /// The voxel of a local point, `None` outside the box.
    pub fn cell_of(&self, p: [f64; 3]) -> Option<Cell> {
        let c = [0, 1, 2].map(|a| ((p[a] - self.min[a]) / self.voxel_m).floor() as i64);
        self.contains(c).then_some(c)
    }

    /// Centre of a voxel, local metres.
    pub fn centre(&self, c: Cell) -> [f64; 3] {
        [0, 1, 2].map(|a| self.min[a] + (c[a] as f64 + 0.5) * self.voxel_m)
    }

    /// Whether the voxel lies inside the box.
    pub fn contains(&self, c: Cell) -> bool {
        (0..3).all(|a| c[a] >= 0 && c[a] < self.dims[a])
    }

    /// Index of a voxel inside the box in x-fastest order.
    pub fn linear(&self, c: Cell) -> usize {
        ((c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]) as usize
    }

    /// Linear index steps of one voxel along x, y and z.
    pub fn strides(&self) -> [i64; 3] {
        [1, self.dims[0], self.dims[0] * self.dims[1]]
    }

    /// The voxel of a linear index.
    pub fn cell_at(&self, i: usize) -> Cell {
        let i = i as i64;
        let (nx, ny) = (self.dims[0], self.dims[1]);
        [i % nx, (i / nx) % ny, i / (nx * ny)]
    }

    /// The occupancy bits, one per voxel in linear order.
    pub fn occupied_bits(&self) -> &[u64] {
        &self.occupied
    }

    /// Mark the voxels of `points` (local metres) occupied. Call before [`VoxelGrid::seal`].
    pub fn occupy(&mut self, points: &[[f32; 3]]) {
        let bits: Vec<AtomicU64> = std::mem::take(&mut self.occupied)
            .into_iter()
            .map(AtomicU64::new)
            .collect();
        points.par_chunks(super::CHUNK).for_each(|chunk| {
            for p in chunk {
                if let Some(c) = self.cell_of(p.map(f64::from)) {
                    let i = self.linear(c);
                    bits[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
                }
            }
        });
        self.occupied = bits.into_iter().map(AtomicU64::into_inner).collect();
    }

    /// Number the occupied voxels and allocate their state; returns how many there are.
    pub fn seal(&mut self) -> usize {
        let mut total = 0u32;
        self.rank = self
            .occupied
            .iter()
            .map(|w| {
                let before = total;
                total += w.count_ones();
                before
            })
            .collect();
        let n = total as usize;
        self.frees = (0..n).map(|_| AtomicU32::new(0)).collect();
        self.need = vec![1; n];
        self.hit = (0..n).map(|_| AtomicU32::new(0)).collect();
        self.protect = (0..n).map(|_| AtomicU32::new(0)).collect();
        self.listed = (0..n).map(|_| AtomicU32::new(0)).collect();
        n
    }

    /// Occupied voxels (after [`VoxelGrid::seal`]).
    pub fn occupied_count(&self) -> usize {
        self.need.len()
    }

    /// The dense id of an occupied voxel, `None` when the voxel is empty or outside.
    pub fn id(&self, c: Cell) -> Option<usize> {
        if !self.contains(c) {
            return None;
        }
        self.id_at(self.linear(c))
    }

    /// The dense id of the occupied voxel at linear index `i` (inside the box), `None` when it is empty.
    #[inline]
    pub fn id_at(&self, i: usize) -> Option<usize> {
        let word = self.occupied[i / 64];
        let bit = 1u64 << (i % 64);
        (word & bit != 0)
            .then(|| self.rank[i / 64] as usize + (word & (bit - 1)).count_ones() as usize)
    }

    /// Record that scan `tag` (1 + its index) has a point in voxel `id`; true the first time in that scan.
    pub fn first_hit(&self, id: usize, tag: u32) -> bool {
        self.hit[id].load(Ordering::Relaxed) != tag
            && self.hit[id].swap(tag, Ordering::Relaxed) != tag
    }

    /// Forget which scans hit which voxel (after counting them, before carving).
    pub fn reset_hits(&mut self) {
        for h in &mut self.hit {
            *h.get_mut() = 0;
        }
    }

    /// How many scans must see each voxel free before it is free (by id).
    pub fn set_need(&mut self, need: Vec<u32>) {
        debug_assert_eq!(need.len(), self.need.len());
        self.need = need;
    }

    /// Record that scan `tag` (1 + its index) has a hit within the margin of voxel `id`.
    pub fn protect(&self, id: usize, tag: u32) {
        if self.protect[id].load(Ordering::Relaxed) != tag {
            self.protect[id].store(tag, Ordering::Relaxed);
        }
    }

    /// Whether scan `tag` protects voxel `id`.
    pub fn protected_by(&self, id: usize, tag: u32) -> bool {
        self.protect[id].load(Ordering::Relaxed) == tag
    }

    /// List voxel `id` as a candidate of scan `tag`; true the first time in that scan.
    pub fn list(&self, id: usize, tag: u32) -> bool {
        self.listed[id].load(Ordering::Relaxed) != tag
            && self.listed[id].swap(tag, Ordering::Relaxed) != tag
    }

    /// Count one more scan that saw voxel `id` free (call at most once per scan); true when that makes it free.
    pub fn add_free(&self, id: usize) -> bool {
        self.frees[id].fetch_add(1, Ordering::Relaxed) + 1 == self.need[id]
    }

    /// Whether enough scans saw voxel `id` free.
    #[inline]
    pub fn is_free(&self, id: usize) -> bool {
        self.frees[id].load(Ordering::Relaxed) >= self.need[id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_state_is_per_voxel() {
        let mut g = VoxelGrid::new([0.0; 3], [0.95, 0.95, 0.95], 0.1).unwrap();
        assert_eq!(g.dims, [10, 10, 10]);
        g.occupy(&[[0.05, 0.05, 0.05], [0.91, 0.5, 0.2], [0.92, 0.51, 0.21]]);
        assert_eq!(g.seal(), 2);
        let a = g.id([0, 0, 0]).unwrap();
        let b = g.id([9, 5, 2]).unwrap();
        assert_ne!(a, b);
        assert_eq!(g.id([1, 0, 0]), None);
        assert_eq!(g.id([10, 0, 0]), None);
        assert!(g.add_free(b));
        assert!(!g.add_free(b));
        assert!(g.is_free(b) && !g.is_free(a));
        g.protect(a, 3);
        assert!(g.protected_by(a, 3) && !g.protected_by(a, 4));
    }

    #[test]
    fn a_huge_box_is_refused() {
        assert!(VoxelGrid::new([0.0; 3], [1e4, 1e4, 1e3], 0.01).is_err());
    }
}
