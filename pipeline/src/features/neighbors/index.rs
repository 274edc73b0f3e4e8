//! Building the index (the main level chosen from the points' occupancy, the points sorted into cells in Morton
//! order) and the cell geometry every query walks: cells, blocks of cells and their faces.

use std::borrow::Cow;

use rayon::prelude::*;

use super::morton::{FINE_BITS, coarse, fine_coord, hash, morton};
use super::{NeighborScratch, Neighbors};
use crate::error::{Error, Result};
use crate::grid::{CellRuns, Sorting, sort_into_runs, sort_packed};

/// Relative safety margin on block bounds: f32 distance rounding stays far below it.
const MARGIN: f64 = 1e-5;
/// Points sampled (about) to choose the main level from their occupancy.
const LEVEL_SAMPLE: usize = 1 << 16;
/// Point-weighted mean cell occupancy aimed at for k-nearest queries, as a multiple of k: large enough that
/// the 3x3x3 block usually holds the k nearest, small enough that few candidates are scanned.
pub(super) const OCCUPANCY_PER_K: f64 = 1.5;

/// A block's faces beyond which points may lie (infinite where the block reaches the grid's edge), made
/// once per block so that each query's bound costs a few subtractions.
pub(super) struct Faces {
    low: [f64; 3],
    high: [f64; 3],
    /// Safety margin, in metres, for the rounding of the faces and of the query.
    slack: f64,
}

impl Faces {
    /// Distance from `q` to the nearest face, less a safety margin (infinite when the block covers the grid
    /// on every side).
    #[inline]
    pub(super) fn bound(&self, q: [f32; 3]) -> f64 {
        let mut bound = f64::INFINITY;
        for ((&v, low), high) in q.iter().zip(self.low).zip(self.high) {
            bound = bound.min(v as f64 - low).min(high - v as f64);
        }
        if bound.is_finite() {
            bound = (bound - self.slack).max(0.0) * (1.0 - MARGIN);
        }
        bound
    }
}

/// What every index needs of its positions: at most `u32::MAX` of them (indices are u32), all finite.
fn check(positions: &[[f32; 3]]) -> Result<()> {
    let n = positions.len();
    if n > u32::MAX as usize {
        return Err(Error::parameter(
            "cloud",
            format!(
                "{n} points is more than neighbour search supports ({})",
                u32::MAX
            ),
        ));
    }
    if let Some(i) = positions
        .par_iter()
        .position_first(|p| !(p[0].is_finite() && p[1].is_finite() && p[2].is_finite()))
    {
        return Err(Error::parameter(
            "cloud",
            format!("point {i} has a non-finite coordinate"),
        ));
    }
    Ok(())
}

/// The main level for k-nearest queries with this `k`, from the occupancy of a sample.
fn knn_level(k: usize) -> impl Fn(f64, &[u64], f64) -> (u32, f64) {
    let target = (k.max(1) as f64 * OCCUPANCY_PER_K).max(2.0);
    move |fine, codes, rate| occupancy_level(codes, target, fine, rate)
}
impl Neighbors {
    /// Build the search structure, tuned for k-nearest queries with k about 16. Fails on non-finite
    /// coordinates and on more than `u32::MAX` points (indices are u32).
    pub fn new(positions: &[[f32; 3]]) -> Result<Neighbors> {
        Neighbors::for_knn(positions, 16)
    }

    /// Build the search structure, tuned for k-nearest queries with this `k` (any query still works).
    pub fn for_knn(positions: &[[f32; 3]], k: usize) -> Result<Neighbors> {
        check(positions)?;
        Ok(Neighbors::build(
            Cow::Borrowed(positions),
            LEVEL_SAMPLE,
            knn_level(k),
        ))
    }

    /// [`Neighbors::for_knn`] over positions handed over by value: the index sorts them into its own order
    /// instead of keeping a sorted copy beside them, which saves the largest array of a stage's peak
    /// (12 bytes per point). [`Neighbors::into_sorted`] hands them back. On error the positions come back
    /// with it, unchanged.
    pub(crate) fn for_knn_owned(
        positions: Vec<[f32; 3]>,
        k: usize,
    ) -> std::result::Result<Neighbors, (Error, Vec<[f32; 3]>)> {
        if let Err(e) = check(&positions) {
            return Err((e, positions));
        }
        Ok(Neighbors::build(
            Cow::Owned(positions),
            LEVEL_SAMPLE,
            knn_level(k),
        ))
    }

    /// Build the search structure, tuned for radius queries of `radius` metres: main cells of at least half the
    /// radius, so a 5x5x5 block covers it.
    pub fn for_radius(positions: &[[f32; 3]], radius: f32) -> Result<Neighbors> {
        check(positions)?;
        Ok(Neighbors::build(
            Cow::Borrowed(positions),
            LEVEL_SAMPLE,
            |fine, _, _| {
                let want = radius as f64 * 0.5;
                let mut l = 0;
                while l < FINE_BITS && fine * ((1u64 << (l + 1)) as f64) <= want {
                    l += 1;
                }
                (l, want.min(fine * (1u64 << FINE_BITS) as f64))
            },
        ))
    }

    /// The index, its main level chosen by `choose_level(fine cell side, Morton codes of about
    /// `level_sample` points, the fraction of the points they are)`. The positions were [`check`]ed; owned
    /// ones are freed as soon as their sorted copy exists.
    pub(super) fn build(
        positions: Cow<'_, [[f32; 3]]>,
        level_sample: usize,
        choose_level: impl Fn(f64, &[u64], f64) -> (u32, f64),
    ) -> Neighbors {
        let n = positions.len();
        let (lo, hi) = crate::cloud::par_position_bounds(&positions);
        let lo = if n == 0 {
            [0.0; 3]
        } else {
            lo.map(|v| v as f64)
        };
        let extent = if n == 0 {
            0.0
        } else {
            (0..3).map(|a| hi[a] as f64 - lo[a]).fold(0.0, f64::max)
        };
        // Two cells of slack so rounding never pushes a point past the last coordinate.
        let fine = if extent > 0.0 {
            extent / ((1u64 << FINE_BITS) - 2) as f64
        } else {
            1.0
        };
        // Keys: the Morton code of the main cell followed by the fine x coordinate within it (main cells are
        // contiguous and in Morton order; within one, the points are sorted along x), then the point's index.
        let key_of = |p: &[f32; 3], fine: f64, main: u32| -> u64 {
            let c: [u32; 3] = std::array::from_fn(|a| fine_coord(p[a] as f64, lo[a], 1.0 / fine));
            (morton(c.map(|v| v >> main)) << main) | (c[0] & ((1u32 << main) - 1)) as u64
        };
        // The level is chosen from the Morton codes of a sample of the points (every `stride`-th, so the same
        // for any number of threads): occupancy statistics need no more, and the full sort comes once, after.
        let stride = (n / level_sample.max(1)).max(1);
        let mut sample: Vec<u64> = positions
            .par_iter()
            .step_by(stride)
            .map(|p| {
                morton(std::array::from_fn(|a| {
                    fine_coord(p[a] as f64, lo[a], 1.0 / fine)
                }))
            })
            .collect();
        sort_packed(&mut sample, 0, 3 * FINE_BITS);
        let rate = if n == 0 {
            1.0
        } else {
            sample.len() as f64 / n as f64
        };
        let (main, side) = choose_level(fine, &sample, rate);
        drop(sample);
        let main = main.min(FINE_BITS);
        // Main cells of exactly `side`: a finer grid than powers of two of the first one allow. The fine cell
        // may only grow (the grid must still span the cloud in 2^21 fine cells).
        let wanted = side / (1u64 << main) as f64;
        let fine = if wanted.is_finite() && wanted > fine * (1.0 + 1e-9) && n > 0 {
            wanted
        } else {
            fine
        };
        let CellRuns {
            order,
            keys: cell_codes,
            starts: cell_start,
        } = sort_into_runs(
            n,
            3 * (FINE_BITS - main) + main,
            main,
            Sorting::Radix,
            |i| key_of(&positions[i], fine, main),
        );
        let sorted: Vec<[f32; 3]> = order.par_iter().map(|&i| positions[i as usize]).collect();
        if let Cow::Owned(unsorted) = positions {
            // The cloud's own copy: its pages go back too, or the stage's results would sit beside it.
            drop(unsorted);
            crate::memory::release_free_memory();
        }
        let sub = |a: usize| -> Vec<u8> {
            sorted
                .par_iter()
                .map(|p| coarse(fine_coord(p[a] as f64, lo[a], 1.0 / fine), main) as u8)
                .collect()
        };
        let (sx, sy) = (sub(0), sub(1));
        let max_cell = std::array::from_fn(|a| {
            if n == 0 {
                0
            } else {
                fine_coord(hi[a] as f64, lo[a], 1.0 / fine) >> main
            }
        });
        let size = (cell_codes.len() * 2).next_power_of_two().max(2);
        let mut table = vec![u32::MAX; size];
        for (ci, &c) in cell_codes.iter().enumerate() {
            let mut h = hash(c, size - 1);
            while table[h] != u32::MAX {
                h = (h + 1) & (size - 1);
            }
            table[h] = ci as u32;
        }
        Neighbors {
            len: n,
            lo,
            fine,
            per_fine: 1.0 / fine,
            main,
            max_cell,
            sorted,
            order,
            cell_codes,
            cell_start,
            sx,
            sy,
            table,
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no points.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A scratch for [`Neighbors::within`] and [`Neighbors::count_within`]; make one per thread and reuse it.
    pub fn scratch(&self) -> NeighborScratch {
        NeighborScratch::default()
    }

    /// Side of a cell at `level` levels above the main one, metres.
    fn side(&self, level: u32) -> f64 {
        self.fine * (1u64 << (self.main + level)) as f64
    }

    /// Index in `cell_codes` of the main cell with this Morton code, `u32::MAX` when unoccupied.
    #[inline]
    pub(super) fn main_index(&self, code: u64) -> u32 {
        let mask = self.table.len() - 1;
        let mut h = hash(code, mask);
        loop {
            let ci = self.table[h];
            if ci == u32::MAX || self.cell_codes[ci as usize] == code {
                return ci;
            }
            h = (h + 1) & mask;
        }
    }

    /// Index range in `sorted` of the main cell with this Morton code (empty when unoccupied).
    #[inline]
    fn main_cell(&self, code: u64) -> std::ops::Range<usize> {
        let mask = self.table.len() - 1;
        let mut h = hash(code, mask);
        loop {
            let ci = self.table[h];
            if ci == u32::MAX {
                return 0..0;
            }
            let ci = ci as usize;
            if self.cell_codes[ci] == code {
                return self.cell_start[ci] as usize..self.cell_start[ci + 1] as usize;
            }
            h = (h + 1) & mask;
        }
    }

    /// Index range in `sorted` of the cell `c` at `level` levels above the main one.
    fn cell_range(&self, level: u32, c: [u32; 3]) -> std::ops::Range<usize> {
        if level == 0 {
            return self.main_cell(morton(c));
        }
        let shift = 3 * level;
        let first = morton(c) << shift;
        let end = (morton(c) + 1) << shift;
        let a = self.cell_codes.partition_point(|&x| x < first);
        let b = a + self.cell_codes[a..].partition_point(|&x| x < end);
        self.cell_start[a] as usize..self.cell_start[b] as usize
    }

    /// Highest cell coordinate per axis at `level`.
    fn max_at(&self, level: u32) -> [u32; 3] {
        self.max_cell.map(|m| m >> level)
    }

    /// The cell of `q` at `level` (may lie outside the grid for foreign query points).
    pub(super) fn cell_of(&self, q: [f32; 3], level: u32) -> [i64; 3] {
        let s = self.side(level);
        std::array::from_fn(|a| ((q[a] as f64 - self.lo[a]) / s).floor().clamp(-1e15, 1e15) as i64)
    }

    /// Chebyshev distance, in cells, from cell `c` to the grid at `level` (0 inside).
    pub(super) fn gap(&self, c: [i64; 3], level: u32) -> i64 {
        let max = self.max_at(level);
        (0..3)
            .map(|a| (-c[a]).max(c[a] - max[a] as i64).max(0))
            .max()
            .unwrap_or(0)
    }

    /// The block of cells within `ring` of `c` at `level`, clipped to the grid (the caller makes sure they
    /// meet: `gap(c, level) <= ring`), and the distance from `q` to the nearest face of the block beyond which
    /// points may lie, less a safety margin (infinite when the block covers the grid on every side).
    pub(super) fn block(
        &self,
        q: [f32; 3],
        c: [i64; 3],
        level: u32,
        ring: i64,
    ) -> ([[u32; 2]; 3], f64) {
        let max = self.max_at(level);
        let (lo, hi) = (c.map(|v| v - ring), c.map(|v| v + ring));
        let span = std::array::from_fn(|a| {
            [
                lo[a].clamp(0, max[a] as i64) as u32,
                hi[a].clamp(0, max[a] as i64) as u32,
            ]
        });
        (span, self.faces(level, lo, hi).bound(q))
    }

    /// The faces of the block of cells `lo..=hi` (per axis) at `level` beyond which points may lie, for
    /// [`Faces::bound`].
    pub(super) fn faces(&self, level: u32, lo: [i64; 3], hi: [i64; 3]) -> Faces {
        let (max, s) = (self.max_at(level), self.side(level));
        Faces {
            low: std::array::from_fn(|a| {
                if lo[a] > 0 {
                    self.lo[a] + lo[a] as f64 * s
                } else {
                    f64::NEG_INFINITY
                }
            }),
            high: std::array::from_fn(|a| {
                if hi[a] < max[a] as i64 {
                    self.lo[a] + (hi[a] + 1) as f64 * s
                } else {
                    f64::INFINITY
                }
            }),
            slack: s * MARGIN,
        }
    }

    /// Sorted point `j`'s coordinate along axis `a` within its main cell, in 1/256 of the cell (the low byte
    /// of its [`coarse`] coordinate): stored for x and y, computed for z.
    #[inline]
    pub(super) fn sub_byte(&self, j: usize, a: usize) -> u32 {
        match a {
            0 => self.sx[j] as u32,
            1 => self.sy[j] as u32,
            _ => self.coarse_of(self.sorted[j][2] as f64, 2) & 255,
        }
    }

    /// The [`coarse`] coordinate of `v` (metres, relative to the cloud's origin) along axis `a`.
    #[inline]
    pub(super) fn coarse_of(&self, v: f64, a: usize) -> u32 {
        coarse(fine_coord(v, self.lo[a], self.per_fine), self.main)
    }

    /// Relative level at which one cell covers the whole grid.
    pub(super) fn top_level(&self) -> u32 {
        FINE_BITS - self.main.min(FINE_BITS)
    }

    /// The smallest block (level, ring) that holds every point within `reach` metres of a query: ring up to 3
    /// at the main level, else up to 2 at a coarser one.
    pub(super) fn reach_block(&self, reach: f64) -> (u32, i64) {
        let reach = reach * (1.0 + 4.0 * MARGIN) + self.fine;
        let rings = |level: u32| (reach / self.side(level)).ceil().max(1.0);
        if rings(0) <= 3.0 {
            return (0, rings(0) as i64);
        }
        let mut level = 0;
        while level < self.top_level() && rings(level) > 2.0 {
            level += 1;
        }
        (level, rings(level).min(1e15) as i64)
    }

    /// Visit every sorted-index range of the cells of a block.
    pub(super) fn for_ranges(
        &self,
        level: u32,
        span: [[u32; 2]; 3],
        mut f: impl FnMut(std::ops::Range<usize>),
    ) {
        for x in span[0][0]..=span[0][1] {
            for y in span[1][0]..=span[1][1] {
                for z in span[2][0]..=span[2][1] {
                    let r = self.cell_range(level, [x, y, z]);
                    if !r.is_empty() {
                        f(r);
                    }
                }
            }
        }
    }

    /// The original index of each point in the index's own (cell) order, the order of
    /// [`Neighbors::knn_all_in_cell_order`]'s results; the rest of the index is freed. With [`scatter`], a
    /// caller puts those results into point order without holding the index and two result arrays at once.
    ///
    /// [`scatter`]: super::scatter
    pub(crate) fn into_order(self) -> Vec<u32> {
        self.order
    }

    /// The positions in the index's own (cell) order and the original index of each
    /// ([`Neighbors::into_order`]); the rest of the index is freed. What [`Neighbors::for_knn_owned`] took.
    pub(crate) fn into_sorted(self) -> (Vec<[f32; 3]>, Vec<u32>) {
        (self.sorted, self.order)
    }
}

/// The finest level whose point-weighted mean occupancy (the number of points sharing a typical point's cell,
/// each cell's count capped at 8 * target so a pile of duplicates does not decide) reaches `target`.
pub(super) fn occupancy_level(codes: &[u64], target: f64, fine: f64, rate: f64) -> (u32, f64) {
    let n = codes.len();
    if n == 0 {
        return (0, fine);
    }
    // `codes` (sorted) sample the cloud at `rate`: a sampled point sharing its cell with r - 1 sampled ones
    // shares it with about 1 + (r - 1) / rate points of the cloud (r (r - 1) estimates rate^2 c (c - 1)
    // without bias), and it is that estimate of the cloud's count which is capped. Capping the sampled
    // count r instead needs a cap of 8 * target * rate, which falls below 2 on large clouds (rate below
    // 1 / (4 * target): 6.7M points for k = 16), where every cell then counts as holding one point and the
    // coarsest level wins. With every point sampled (rate 1) this is the plain capped count.
    let cap = 8.0 * target;
    let occupancy = |level: u32| -> f64 {
        let shift = 3 * level;
        let mut sum = 0.0f64;
        let mut run = 0u64;
        let mut prev = u64::MAX;
        let weight = |run: u64| run as f64 * (1.0 + (run.max(1) - 1) as f64 / rate).min(cap);
        for &code in codes {
            let c = code >> shift;
            if c != prev {
                sum += weight(run);
                run = 0;
                prev = c;
            }
            run += 1;
        }
        sum += weight(run);
        sum / n as f64
    };
    // Each level's occupancy once: a pass over the sample each.
    let mut known = [None; FINE_BITS as usize + 1];
    let mut occupancy = |level: u32| *known[level as usize].get_or_insert_with(|| occupancy(level));
    // Occupancy grows with the level: binary search the first level that reaches the target.
    let (mut a, mut b) = (0u32, FINE_BITS);
    while a < b {
        let m = (a + b) / 2;
        if occupancy(m) >= target {
            b = m;
        } else {
            a = m + 1;
        }
    }
    if a == 0 {
        return (0, fine);
    }
    // Between levels a - 1 and a, occupancy grows like side^e (e about 2 on surfaces, 3 in volumes):
    // interpolate the side that meets the target.
    let (w0, w1) = (occupancy(a - 1).max(1.0), occupancy(a).max(1.0));
    let s0 = fine * (1u64 << (a - 1)) as f64;
    let e = (w1 / w0).log2();
    let side = if e > 0.05 {
        s0 * ((target / w0).log2() / e).clamp(0.0, 1.0).exp2()
    } else {
        s0
    };
    (a - 1, side)
}
