//! Neighbour search over a cloud's positions: k nearest (optionally limited to a radius) and radius queries,
//! for single query points and, much faster, for every point of the cloud at once.
//!
//! Why hand-written instead of a k-d tree crate (kiddo was used before): the preparation stages ask for the k
//! nearest neighbours of EVERY point of a scan. A uniform grid whose occupied cells are sorted in Morton order
//! answers that with no per-query allocation, no tree descent, and one gathered block of candidates shared by
//! the points of a few cells, visited in cell order so the data stays in cache; it measured several times
//! faster than kiddo's `ImmutableKdTree::nearest_n` on TLS scans. Layout:
//! - points are sorted by (Morton code of their main cell, fine x coordinate, original index): main cells are
//!   contiguous runs in Morton order, so every coarser level of an implicit octree is a contiguous run too
//!   (a prefix of the code), and within a cell the points of an x range are one run, found by binary search;
//! - the "main" level is chosen from the point density (or the query radius) so that a typical point shares its
//!   cell with a handful of points; occupied main cells are found through a small open-addressing table;
//! - k-nearest queries for every point: the 4x4x4 main cells of one cell two levels up share the 6x6x6 block
//!   of main cells around them, gathered once and bucketed by (row, column) along the two axes onto which the
//!   block's points spread most evenly (x and y for ground, the wall's own axes for a wall: a quarter fewer
//!   distances on TLS scans), at a resolution that follows the block's density. A query first guesses its k-th
//!   distance from the previous point's (1.2 times it), and scans only the buckets within that distance on
//!   both axes, four candidates at a time (eight with AVX2, `avx2.rs`: the same list), listing those within
//!   it; the k nearest of the listed are found by rank (each one's count of nearer ones, with no branch)
//!   rather than by a sort, which was the largest cost of a query. When fewer than k lie within the guess, it
//!   scans again within a bound that holds (the farthest of the previous point's k neighbours). Its answer is
//!   final when the k-th is nearer than the block's nearest face; otherwise the cells within the k-th distance
//!   are scanned directly, or, without a bound, the search is redone on a block (at a coarser level when
//!   needed) that provably contains every closer point. Results are exact.
//!
//! Results are sorted by (squared distance in f32, original index), so they do not depend on the grid, the
//! chosen level or the number of threads.
//!
//! Outlier removal needs only each point's sum of distances to its k nearest, not the list: for it
//! (`Neighbors::knn_root_sums_in_cell_order`) the same search lists the candidates within the guess and
//! finds the k-th squared distance by counting, four lanes at a time, how many lie below a few probes (the
//! previous point's k-th first, then interpolated), and sums the roots below it; equal distances count as
//! often as they occur, so no order or tie-break is needed. On lone_star this took SOR from 0.179 to 0.115 s
//! (docs/benchmarks.md, 2026-11-25): the ranking, the lists and the closure were a third of its search.
//!
//! Points stay `[f32; 3]` arrays (the cloud's storage) rather than nalgebra points: the distance loops here are
//! the hottest code of the preparation stages (kNN for SOR and normals), written over plain arrays (a block's
//! candidates as a structure of arrays) in four-lane `wide` vectors.

use std::borrow::Cow;

use rayon::prelude::*;
use wide::{f32x4, u32x4};

use super::avx2::{self, LANES8, Query};
use crate::error::{Error, Result};
use crate::filters::check_cancel;
use crate::grid::{CellRuns, Sorting, sort_into_runs, sort_packed};
use crate::lanes::{COMPACT, LANES, lanes_set};
use crate::progress::Progress;

/// One neighbour: its index in the positions slice and its squared distance to the query, in m^2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbor {
    /// Index of the neighbour in the positions slice the index was built from (u32 keeps the neighbour lists half the
    /// size; a map holds at most u32::MAX points).
    pub index: u32,
    /// Squared distance to the query, m^2 (squared: the search never needs the root).
    pub dist2: f32,
}

/// Reusable buffers for single-point queries ([`Neighbors::within`], [`Neighbors::count_within`]), one per
/// worker thread.
#[derive(Default)]
pub struct NeighborScratch {
    found: Vec<Entry>,
}

/// A candidate: squared distance, original index, position.
#[derive(Clone, Copy, Debug)]
struct Entry {
    d2: f32,
    index: u32,
    pos: [f32; 3],
}

/// Bits per axis of a fine cell coordinate (3 * 21 = 63 bits of a Morton code).
const FINE_BITS: u32 = 21;
/// Points per unit of parallel work in the all-points queries.
const UNIT: usize = 4096;
/// Relative safety margin on block bounds: f32 distance rounding stays far below it.
const MARGIN: f64 = 1e-5;
/// Points sampled (about) to choose the main level from their occupancy.
const LEVEL_SAMPLE: usize = 1 << 16;
/// Point-weighted mean cell occupancy aimed at for k-nearest queries, as a multiple of k: large enough that
/// the 3x3x3 block usually holds the k nearest, small enough that few candidates are scanned.
const OCCUPANCY_PER_K: f64 = 1.5;
/// The first try of a k-nearest query takes the previous point's k-th squared distance times this (its
/// distance times 1.2): a guess, checked, that leaves about twice k candidates to sort.
const GUESS2: f32 = 1.44;

/// A Morton-ordered grid over positions (metres, relative to the cloud's origin).
pub struct Neighbors {
    len: usize,
    /// Corner of the grid (lowest coordinates), metres.
    lo: [f64; 3],
    /// Side of a fine cell, metres.
    fine: f64,
    /// Fine cells per metre: a point's fine coordinate is `(p - lo) * per_fine`, floored and clamped
    /// ([`fine_coord`]).
    per_fine: f64,
    /// Main level: main cells have side `fine * 2^main`.
    main: u32,
    /// Highest main-cell coordinate per axis.
    max_cell: [u32; 3],
    /// Positions in cell order.
    sorted: Vec<[f32; 3]>,
    /// Original index of each sorted position.
    order: Vec<u32>,
    /// Morton codes of the occupied main cells, ascending.
    cell_codes: Vec<u64>,
    /// Start of each occupied main cell in `sorted`, then `len`.
    cell_start: Vec<u32>,
    /// x of each sorted position within its main cell, in 1/256 of the cell (the low byte of its [`coarse`]
    /// coordinate): within a main cell the points are sorted by it, so the points of a cell within an x range
    /// are one run, found by binary search.
    sx: Vec<u8>,
    /// y of each sorted position within its main cell, in 1/256 of the cell. (z is computed where needed:
    /// storing it measured no faster.)
    sy: Vec<u8>,
    /// Open-addressing table: main-cell code -> index in `cell_codes` (`u32::MAX` = empty).
    table: Vec<u32>,
}

/// Spread the low 21 bits of `v` to every third bit.
fn spread(v: u32) -> u64 {
    let mut x = v as u64 & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

fn morton(c: [u32; 3]) -> u64 {
    (spread(c[0]) << 2) | (spread(c[1]) << 1) | spread(c[2])
}

fn hash(code: u64, mask: usize) -> usize {
    (code.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize & mask
}

/// The fine-cell coordinate of `v` along an axis whose grid starts at `lo`: non-decreasing in `v` (every step
/// rounds monotonically, and the cast truncates, which floors the non-negative values it gets).
#[inline]
fn fine_coord(v: f64, lo: f64, per_fine: f64) -> u32 {
    (((v - lo) * per_fine).max(0.0) as u32).min((1 << FINE_BITS) - 1)
}

/// Bits of a coordinate within a main cell in [`coarse`] coordinates.
const SUB_BITS: u32 = 8;

/// The coordinate of fine coordinate `f` in units of `1 / 2^SUB_BITS` of a main cell at level `main`
/// (non-decreasing in `f`; `>> SUB_BITS` gives the main-cell coordinate).
#[inline]
fn coarse(f: u32, main: u32) -> u32 {
    if main >= SUB_BITS {
        f >> (main - SUB_BITS)
    } else {
        f << (SUB_BITS - main)
    }
}

/// Squared distance in f32, summed in one fixed order so every path gives the same value.
#[inline]
fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    let dx = a[0] - b[0];
    let dy = a[1] - b[1];
    let dz = a[2] - b[2];
    dx * dx + dy * dy + dz * dz
}

/// Insert into `top` (sorted by (d2, index), at most `k` long); returns nothing, drops the worst when full.
#[inline]
fn push_top(top: &mut Vec<Entry>, k: usize, e: Entry) {
    if top.len() == k {
        match top.last() {
            Some(w) if (e.d2, e.index) < (w.d2, w.index) => {
                top.pop();
            }
            _ => return,
        }
    }
    let mut at = top.len();
    while at > 0 {
        let p = &top[at - 1];
        if (p.d2, p.index) <= (e.d2, e.index) {
            break;
        }
        at -= 1;
    }
    top.insert(at, e);
}

/// Main cells that share one block of candidates: 2^GROUP_LEVELS along each axis, with one more cell
/// around them. A surface's points are copied into about ((2^GROUP_LEVELS + 2) / 2^GROUP_LEVELS)^2 blocks each
/// (4 for 2x2x2 groups, 2.25 for 4x4x4): 4x4x4 made SOR 6-7% faster on lone_star than 2x2x2, and 8x8x8 was
/// slower again.
const GROUP_LEVELS: u32 = 2;

/// Columns per main cell along x in a block of candidates, at least: log2.
const X_BUCKET_BITS: u32 = 3;
/// Candidates per (row, column) bucket aimed at, on a surface-like block.
const BUCKET_FILL: usize = 8;

/// The candidates of a block of cells, as a structure of arrays so distances vectorise, bucketed by (row
/// along y, column along x) of their fine coordinates: the candidates of a query's box that share a row are
/// one contiguous run.
#[derive(Default)]
struct Candidates {
    xs: Vec<f32>,
    ys: Vec<f32>,
    zs: Vec<f32>,
    /// Original index of each candidate.
    orig: Vec<u32>,
    d2: Vec<f32>,
    /// Slots of the candidates within the bound, in slot order.
    listed: Vec<u32>,
    /// Their squared distances, padded for [`select_by_rank`].
    near: Vec<f32>,
    /// [`select_by_rank`]'s output.
    head: Vec<u64>,
    /// (squared distance bits, slot) keys of the candidates within the bound.
    keys: Vec<u64>,
    /// (squared distance bits, sorted index) keys of [`Candidates::scan_box`].
    box_keys: Vec<u64>,
    /// Bucket of each candidate, in gathering order (used while filling).
    bucket: Vec<u32>,
    /// `start[b]..start[b + 1]`: the candidates of bucket `b`.
    start: Vec<u32>,
    /// Sorted-index ranges of the block's cells and their cell coordinates (used while filling).
    ranges: Vec<(std::ops::Range<usize>, [u32; 3])>,
    /// The axes of columns and rows: the pair onto which the block's points spread the most evenly (x and y
    /// for ground, a wall's own two axes for a wall), so a query's square of buckets holds few points beyond
    /// its sphere.
    axes: [usize; 2],
    /// Coarse coordinates where the block starts along the column and row axes, the shifts from coarse
    /// coordinates to buckets, and the buckets per row and rows.
    x0: i64,
    y0: i64,
    shift: [u32; 2],
    nx: usize,
    ny: usize,
    /// Direct-mapped cache of main-cell look-ups (code, index in `cell_codes` or `u32::MAX`), by the code's
    /// low bits: consecutive cells in Morton order share most of their blocks.
    seen: Vec<(u64, u32)>,
    /// Whether [`Candidates::list`] lists in eight AVX2 lanes ([`avx2`]) rather than four: the same result.
    lanes8: bool,
}

/// A query whose first block did not hold its answer scans the cells of its bound's box directly when there
/// are at most this many.
const PENDING_CELLS: u64 = 343;

/// Entries of [`Candidates::seen`] (a power of two).
const SEEN: usize = 512;

impl Candidates {
    /// Empty buffers, listing in eight lanes where the processor can.
    fn new() -> Candidates {
        Candidates {
            lanes8: avx2::available(),
            ..Candidates::default()
        }
    }

    /// The column (along x) of coarse x coordinate `cx`: non-decreasing in `cx`.
    #[inline]
    fn col(&self, cx: u32) -> usize {
        (((cx as i64 - self.x0).max(0) >> self.shift[0]) as usize).min(self.nx - 1)
    }

    /// The row (along y) of coarse y coordinate `cy`: non-decreasing in `cy`.
    #[inline]
    fn row(&self, cy: u32) -> usize {
        (((cy as i64 - self.y0).max(0) >> self.shift[1]) as usize).min(self.ny - 1)
    }

    /// The (column, row) axes onto which the points of `self.ranges` (cells within `span`) spread the most
    /// evenly: the projection whose columns of cells have the least sum of squared point counts, which is
    /// about the candidates a query's square of buckets meets. Ties keep x and y.
    fn spread_axes(&self, span: [[u32; 2]; 3]) -> [usize; 2] {
        const PAIRS: [[usize; 2]; 3] = [[0, 1], [0, 2], [1, 2]];
        let mut best = (u64::MAX, PAIRS[0]);
        let mut counts = [0u64; 64];
        for [u, v] in PAIRS {
            let side = (span[u][1] - span[u][0] + 1) as usize;
            let cols = side * (span[v][1] - span[v][0] + 1) as usize;
            if cols > counts.len() {
                return PAIRS[0];
            }
            counts[..cols].fill(0);
            for (r, c) in &self.ranges {
                let at = (c[v] - span[v][0]) as usize * side + (c[u] - span[u][0]) as usize;
                counts[at] += r.len() as u64;
            }
            let cost: u64 = counts[..cols].iter().map(|n| n * n).sum();
            if cost < best.0 {
                best = (cost, [u, v]);
            }
        }
        best.1
    }

    /// The points of the main cells `lo..=hi` (per axis, clipped to the grid), bucketed by (row, column)
    /// along the axes [`Candidates::spread_axes`] chooses, finer where the block is dense; with their original
    /// indices when `indexed` (a search that only sums distances never reads them).
    fn fill(&mut self, nb: &Neighbors, lo: [i64; 3], hi: [i64; 3], indexed: bool) {
        self.ranges.clear();
        let span: [[u32; 2]; 3] = std::array::from_fn(|a| {
            [
                lo[a].clamp(0, nb.max_cell[a] as i64) as u32,
                hi[a].clamp(0, nb.max_cell[a] as i64) as u32,
            ]
        });
        for x in span[0][0]..=span[0][1] {
            for y in span[1][0]..=span[1][1] {
                for z in span[2][0]..=span[2][1] {
                    let ci = self.cell_index(nb, morton([x, y, z]));
                    if ci == u32::MAX {
                        continue;
                    }
                    let ci = ci as usize;
                    if nb.cell_start[ci] < nb.cell_start[ci + 1] {
                        self.ranges.push((
                            nb.cell_start[ci] as usize..nb.cell_start[ci + 1] as usize,
                            [x, y, z],
                        ));
                    }
                }
            }
        }
        let m: usize = self.ranges.iter().map(|(r, _)| r.len()).sum();
        // Rows of about 1/2^l of a cell, l growing with the block's points (a few per bucket on a surface);
        // columns at least 8 per cell.
        self.axes = self.spread_axes(span);
        let [u, v] = self.axes;
        let mut l = 0u32;
        let cells2 = ((hi[u] - lo[u] + 1) * (hi[v] - lo[v] + 1)) as usize;
        while l < 6 && (cells2 << (2 * l)) * BUCKET_FILL < m {
            l += 1;
        }
        let lx = l.clamp(X_BUCKET_BITS, SUB_BITS);
        let ly = l.min(SUB_BITS);
        self.shift = [SUB_BITS - lx, SUB_BITS - ly];
        self.x0 = lo[u] << SUB_BITS;
        self.y0 = lo[v] << SUB_BITS;
        self.nx = ((hi[u] - lo[u] + 1) as usize) << lx;
        self.ny = ((hi[v] - lo[v] + 1) as usize) << ly;
        self.start.clear();
        self.start.resize(self.nx * self.ny + 1, 0);
        self.bucket.clear();
        for (r, c) in &self.ranges {
            let (cu, cv) = (c[u] << SUB_BITS, c[v] << SUB_BITS);
            for j in r.clone() {
                let b =
                    self.row(cv | nb.sub_byte(j, v)) * self.nx + self.col(cu | nb.sub_byte(j, u));
                self.bucket.push(b as u32);
                self.start[b + 1] += 1;
            }
        }
        let m = self.bucket.len();
        let mut at = 0u32;
        for v in &mut self.start[1..] {
            let n = *v;
            *v = at;
            at += n;
        }
        // start[b + 1] is now where bucket b begins; placing each candidate moves it to where bucket b ends,
        // which is where bucket b + 1 begins, and start[0] stays 0.
        // Padded for `list`'s reads of a whole vector at a time (the padding's lanes are masked off).
        self.xs.resize(m + LANES8 - 1, 0.0);
        self.ys.resize(m + LANES8 - 1, 0.0);
        self.zs.resize(m + LANES8 - 1, 0.0);
        self.orig.resize(m, 0);
        self.d2.resize(m + LANES - 1, 0.0);
        self.listed.resize(m + LANES8, 0);
        self.near.resize(m + LANES8, 0.0);
        self.head.resize(RANK_SLOTS, 0);
        if self.keys.len() < m + LANES {
            self.keys.resize(m + LANES, 0);
        }
        let mut t = 0;
        for (r, _) in &self.ranges {
            for j in r.clone() {
                let b = self.bucket[t] as usize;
                t += 1;
                let at = self.start[b + 1] as usize;
                self.start[b + 1] += 1;
                let p = nb.sorted[j];
                self.xs[at] = p[0];
                self.ys[at] = p[1];
                self.zs[at] = p[2];
                if indexed {
                    self.orig[at] = nb.order[j];
                }
            }
        }
    }

    /// Lists the candidates of `q` with `d2 <= tau`: their slots in `listed` and their squared distances in
    /// `near` (padded with infinity to a whole number of lanes); returns how many. Only the buckets that meet
    /// the square `|x - q.x|, |y - q.y| <= r` are scanned: a computed `d2 <= tau` implies both differences are
    /// at most `r` (the margins cover f32 rounding and underflow), and rows and columns are non-decreasing
    /// functions of the coordinates (the fine coordinates the grid was built with), so no candidate within
    /// `tau` is left out.
    fn list(&mut self, nb: &Neighbors, q: [f32; 3], tau: f32) -> usize {
        let r = (tau.sqrt() * (1.0 + 1e-5) + 1e-22) as f64;
        let [u, v] = self.axes;
        let query = Query {
            xs: &self.xs,
            ys: &self.ys,
            zs: &self.zs,
            start: &self.start,
            nx: self.nx,
            cols: (
                self.col(nb.coarse_of(q[u] as f64 - r, u)),
                self.col(nb.coarse_of(q[u] as f64 + r, u)),
            ),
            rows: (
                self.row(nb.coarse_of(q[v] as f64 - r, v)),
                self.row(nb.coarse_of(q[v] as f64 + r, v)),
            ),
            q,
            tau,
        };
        let n = if self.lanes8 {
            avx2::list(&query, &mut self.listed, &mut self.near)
        } else {
            list4(&query, &mut self.d2, &mut self.listed, &mut self.near)
        };
        self.near[n..n + LANES].fill(f32::INFINITY);
        n
    }

    /// The k nearest candidates of `q` with `d2 <= tau` into `top`, sorted by (d2, index); returns how many
    /// candidates lie within `tau`.
    fn select(
        &mut self,
        nb: &Neighbors,
        q: [f32; 3],
        tau: f32,
        k: usize,
        top: &mut Vec<Entry>,
    ) -> usize {
        let n = self.list(nb, q, tau);
        for ((key, near), &t) in self.keys.iter_mut().zip(&self.near).zip(&self.listed[..n]) {
            *key = ((near.to_bits() as u64) << 32) | t as u64;
        }
        let (xs, ys, zs, orig) = (&self.xs, &self.ys, &self.zs, &self.orig);
        let pos = |t: usize| [xs[t], ys[t], zs[t]];
        if n <= RANKED
            && k <= n
            && let Some(head) =
                select_by_rank(&self.near[..n + LANES], n, &self.keys, k, &mut self.head)
        {
            entries_of(head, pos, |t| orig[t], top);
            return n;
        }
        select_keys(pos, |t| orig[t], &mut self.keys[..n], k, top);
        n
    }
}

impl Candidates {
    /// The main-cell index of `code` (`u32::MAX` when unoccupied), through the cache.
    #[inline]
    fn cell_index(&mut self, nb: &Neighbors, code: u64) -> u32 {
        if self.seen.is_empty() {
            self.seen = vec![(u64::MAX, 0); SEEN];
        }
        let slot = &mut self.seen[code as usize & (SEEN - 1)];
        if slot.0 != code {
            *slot = (code, nb.main_index(code));
        }
        slot.1
    }

    /// Exact: the k nearest points of the cloud to `q` with `d2 <= tau` into `top`, sorted by (d2, index), by
    /// scanning every main cell that meets the box of half-side `r` around `q` (x runs cut by binary search);
    /// false, with nothing done, when that box spans more than `max_cells` cells.
    fn scan_box(
        &mut self,
        nb: &Neighbors,
        q: [f32; 3],
        tau: f32,
        k: usize,
        max_cells: u64,
        top: &mut Vec<Entry>,
    ) -> bool {
        if !tau.is_finite() {
            return false;
        }
        let r = (tau.sqrt() * (1.0 + 1e-5) + 1e-22) as f64;
        let lo: [u32; 3] = std::array::from_fn(|a| nb.coarse_of(q[a] as f64 - r, a));
        let hi: [u32; 3] = std::array::from_fn(|a| nb.coarse_of(q[a] as f64 + r, a));
        let m0 = lo.map(|v| v >> SUB_BITS);
        let m1: [u32; 3] = std::array::from_fn(|a| (hi[a] >> SUB_BITS).min(nb.max_cell[a]));
        if (0..3).any(|a| m1[a] < m0[a]) {
            top.clear();
            return true;
        }
        let cells: u64 = (0..3).map(|a| (m1[a] - m0[a] + 1) as u64).product();
        if cells > max_cells {
            return false;
        }
        let mut keys = std::mem::take(&mut self.box_keys);
        keys.clear();
        for mx in m0[0]..=m1[0] {
            // The box's x range within this column of cells, in 1/256 of a cell.
            let (x0, x1) = (
                lo[0].saturating_sub(mx << SUB_BITS).min(255) as u8,
                hi[0].saturating_sub(mx << SUB_BITS).min(255) as u8,
            );
            for my in m0[1]..=m1[1] {
                for mz in m0[2]..=m1[2] {
                    let ci = self.cell_index(nb, morton([mx, my, mz]));
                    if ci == u32::MAX {
                        continue;
                    }
                    let (a, b) = (
                        nb.cell_start[ci as usize] as usize,
                        nb.cell_start[ci as usize + 1] as usize,
                    );
                    let sx = &nb.sx[a..b];
                    let a0 = a + sx.partition_point(|&v| v < x0);
                    let b0 = a + sx.partition_point(|&v| v <= x1);
                    for j in a0..b0 {
                        let d = dist2(nb.sorted[j], q);
                        if d <= tau {
                            keys.push(((d.to_bits() as u64) << 32) | j as u64);
                        }
                    }
                }
            }
        }
        let n = keys.len();
        select_keys(|j| nb.sorted[j], |j| nb.order[j], &mut keys[..n], k, top);
        self.box_keys = keys;
        true
    }
}

/// [`avx2::list`] four lanes at a time, on any processor: the same slots and distances. The squared distances
/// of every candidate scanned go through `d2`, from which the listed ones are gathered (SSE2 has no lane
/// permute to put them in place).
fn list4(query: &Query, d2: &mut [f32], listed: &mut [u32], near: &mut [f32]) -> usize {
    let (start, nx, (c0, c1)) = (query.start, query.nx, query.cols);
    let [qx, qy, qz] = query.q.map(f32x4::splat);
    let tau4 = f32x4::splat(query.tau);
    let mut n = 0usize;
    for row in query.rows.0..=query.rows.1 {
        let (a, e) = (
            start[row * nx + c0] as usize,
            start[row * nx + c1 + 1] as usize,
        );
        // Four candidates at a time (the arrays are padded by LANES - 1): the squared distances as [`dist2`]
        // computes them, and the slots of those within tau listed with one store.
        let len = (e - a).div_ceil(LANES) * LANES;
        let (xs, ys, zs) = (
            &query.xs[a..a + len],
            &query.ys[a..a + len],
            &query.zs[a..a + len],
        );
        // Each store advances by at most LANES, so the run's stores stay within `len` slots.
        let listed = &mut listed[n..n + len];
        let mut w = 0;
        for (c, ((x, y), (z, d2))) in xs
            .chunks_exact(LANES)
            .zip(ys.chunks_exact(LANES))
            .zip(
                zs.chunks_exact(LANES)
                    .zip(d2[a..a + len].chunks_exact_mut(LANES)),
            )
            .enumerate()
        {
            let lanes = |v: &[f32]| f32x4::from(<[f32; LANES]>::try_from(v).unwrap_or_default());
            let (dx, dy, dz) = (lanes(x) - qx, lanes(y) - qy, lanes(z) - qz);
            let d = dx * dx + dy * dy + dz * dz;
            d2.copy_from_slice(&d.to_array());
            let i = c * LANES;
            let valid = (1u32 << (e - a - i).min(LANES)) - 1;
            let (set, count) = COMPACT[(d.simd_le(tau4).to_bitmask() & valid) as usize];
            if let Some(slots) = listed.get_mut(w..w + LANES) {
                slots
                    .copy_from_slice(&(u32x4::splat((a + i) as u32) + u32x4::from(set)).to_array());
            }
            w += count as usize;
        }
        n += w;
    }
    for (near, &t) in near.iter_mut().zip(&listed[..n]) {
        *near = d2[t as usize];
    }
    n
}

/// Candidates selected by [`select_by_rank`] when no more are within the bound.
const RANKED: usize = 60;
/// Slots of [`select_by_rank`]'s output: every rank of up to `RANKED` candidates and their padding.
const RANK_SLOTS: usize = 64;

/// The `k` nearest of `n` candidates (`k <= n <= RANKED`) by rank, without a sort: candidate i's rank is the
/// number of candidates strictly nearer (`near`, padded to a multiple of `LANES` past `n`), computed four
/// at a time with no branch, and its key goes to slot rank. The keys of the k nearest, in (d2, slot) order as
/// a sort would give, when the k nearest all have distinct distances; None when two share one (they would
/// share a slot; the sort with the original index as tie-break decides then).
fn select_by_rank<'h>(
    near: &[f32],
    n: usize,
    keys: &[u64],
    k: usize,
    head: &'h mut [u64],
) -> Option<&'h [u64]> {
    let wanted = (1u64 << k) - 1;
    let (mut seen, mut clash) = (0u64, 0u64);
    for i in (0..n).step_by(LANES) {
        let di = f32x4::from(<[f32; LANES]>::try_from(&near[i..i + LANES]).unwrap());
        let mut rank = u32x4::splat(0);
        for &dj in &near[..n] {
            // A set mask is all ones: subtracting it counts one.
            rank -= f32x4::splat(dj).simd_lt(di).to_bits();
        }
        for (lane, &r) in rank.to_array().iter().enumerate() {
            // Padding lanes rank n (nothing is nearer than infinity but the n candidates) and land in
            // unread slots.
            let bit = (1u64 << r) & wanted;
            clash |= seen & bit;
            seen |= bit;
            head[r as usize] = keys[i + lane];
        }
    }
    (clash == 0 && seen == wanted).then(|| &head[..k])
}

/// Up to this many keys are sorted whole rather than selected first.
const SORT_ALL: usize = 32;

/// The k best of (squared distance bits, slot) keys into `top`, sorted by (d2, original index).
fn select_keys(
    pos: impl Fn(usize) -> [f32; 3],
    orig: impl Fn(usize) -> u32,
    buf: &mut [u64],
    k: usize,
    top: &mut Vec<Entry>,
) {
    let n = buf.len();
    // A branch-free small sort of the k best keys. Ties in d2 are rare; where one could change the answer
    // (equal distances inside the k, or at the k-th place), the keys are redone with the original index,
    // which breaks ties as everywhere else.
    let len = k.min(n);
    if n <= SORT_ALL {
        buf.sort_unstable();
    } else {
        if n > k {
            buf.select_nth_unstable(k - 1);
        }
        buf[..len].sort_unstable();
    }
    let (head, rest) = buf.split_at_mut(len);
    let d2_of = |key: u64| (key >> 32) as u32;
    let tied = head.windows(2).any(|w| d2_of(w[0]) == d2_of(w[1]))
        || (len > 0 && rest.iter().any(|&r| d2_of(r) == d2_of(head[len - 1])));
    top.clear();
    if tied {
        let mut exact: Vec<(u64, u32)> = buf
            .iter()
            .map(|&key| {
                let t = key as u32;
                ((key >> 32 << 32) | orig(t as usize) as u64, t)
            })
            .collect();
        exact.sort_unstable();
        exact.truncate(len);
        top.extend(exact.iter().map(|&(key, t)| Entry {
            d2: f32::from_bits((key >> 32) as u32),
            index: key as u32,
            pos: pos(t as usize),
        }));
        return;
    }
    entries_of(head, pos, orig, top);
}

/// `top` := the candidates of (squared distance bits, slot) keys, in the keys' order.
fn entries_of(
    keys: &[u64],
    pos: impl Fn(usize) -> [f32; 3],
    orig: impl Fn(usize) -> u32,
    top: &mut Vec<Entry>,
) {
    top.clear();
    top.extend(keys.iter().map(|&key| {
        let t = key as u32 as usize;
        Entry {
            d2: f32::from_bits((key >> 32) as u32),
            index: orig(t),
            pos: pos(t),
        }
    }));
}

/// What a block search must find: the `k` nearest with `d2 <= limit2`.
#[derive(Clone, Copy)]
struct Want {
    k: usize,
    limit2: f32,
}

/// Per-point output columns that an all-points query fills in cell order, cut into disjoint parts for its
/// workers: a slice, or a pair or an `Option` of outputs (several columns filled in one pass, an absent one
/// skipped).
pub(crate) trait Outputs: Send + Sized {
    /// One point's output.
    type Item;
    /// The first `mid` points' part and the rest.
    fn split_at(self, mid: usize) -> (Self, Self);
    /// Write the output of point `i` of this part.
    fn set(&mut self, i: usize, item: Self::Item);
}

impl<T: Send> Outputs for &mut [T] {
    type Item = T;
    fn split_at(self, mid: usize) -> (Self, Self) {
        self.split_at_mut(mid)
    }
    #[inline]
    fn set(&mut self, i: usize, item: T) {
        self[i] = item;
    }
}

impl<A: Outputs, B: Outputs> Outputs for (A, B) {
    type Item = (A::Item, B::Item);
    fn split_at(self, mid: usize) -> (Self, Self) {
        let ((a0, a1), (b0, b1)) = (self.0.split_at(mid), self.1.split_at(mid));
        ((a0, b0), (a1, b1))
    }
    #[inline]
    fn set(&mut self, i: usize, item: Self::Item) {
        self.0.set(i, item.0);
        self.1.set(i, item.1);
    }
}

impl<A: Outputs> Outputs for Option<A> {
    type Item = A::Item;
    fn split_at(self, mid: usize) -> (Self, Self) {
        match self {
            Some(a) => {
                let (a0, a1) = a.split_at(mid);
                (Some(a0), Some(a1))
            }
            None => (None, None),
        }
    }
    #[inline]
    fn set(&mut self, i: usize, item: A::Item) {
        if let Some(a) = self {
            a.set(i, item);
        }
    }
}

/// The k-th squared distance of a search's answer `top`, None when it holds fewer than k.
fn kth(top: &[Entry], want: Want) -> Option<f32> {
    top.last().filter(|_| top.len() == want.k).map(|w| w.d2)
}

/// What an all-points k-nearest query ([`Neighbors::per_point`]) makes of each point: the list of its
/// neighbours for a closure ([`Lists`]), or only the sum of their distances ([`RootSums`]).
trait PerPoint {
    /// One point's output.
    type Item;
    /// Whether [`PerPoint::select`] reads the candidates' original indices.
    const INDEXED: bool;
    /// Selects the k nearest of `q` (within `want.limit2`) among the block's candidates: within `guess`
    /// first (the previous point's k-th squared distance, a little more: a guess, not a bound), else within
    /// a bound. The k-th squared distance, when k were found.
    fn select(
        &mut self,
        nb: &Neighbors,
        block: &mut Candidates,
        q: [f32; 3],
        guess: f32,
        want: Want,
    ) -> Option<f32>;
    /// Searches `q`'s k nearest exactly, within `tau`, where the block did not hold them.
    fn exact(&mut self, nb: &Neighbors, block: &mut Candidates, q: [f32; 3], tau: f32, want: Want);
    /// The output of sorted point `j` at `q` from the last [`PerPoint::select`] or [`PerPoint::exact`].
    fn emit(&mut self, nb: &Neighbors, j: usize, q: [f32; 3]) -> Self::Item;
}

/// The exact search of [`PerPoint::exact`] into `top`: a scan of the cells `tau` reaches, or, without a bound
/// or over too many cells, a search of its own.
fn exact_into(
    nb: &Neighbors,
    block: &mut Candidates,
    q: [f32; 3],
    tau: f32,
    want: Want,
    top: &mut Vec<Entry>,
) {
    if !block.scan_box(nb, q, tau, want.k, PENDING_CELLS, top) {
        nb.search(q, want, top, None);
    }
}

/// Each point's neighbours, sorted by (distance, index), handed to a closure with their positions.
struct Lists<'f, S, F> {
    state: S,
    f: &'f F,
    top: Vec<Entry>,
    spare: Vec<Entry>,
    nb: Vec<Neighbor>,
    np: Vec<[f32; 3]>,
}

impl<S, F, R> PerPoint for Lists<'_, S, F>
where
    F: Fn(&mut S, usize, [f32; 3], &[Neighbor], &[[f32; 3]]) -> R + Sync,
{
    type Item = R;
    const INDEXED: bool = true;

    fn select(
        &mut self,
        nb: &Neighbors,
        block: &mut Candidates,
        q: [f32; 3],
        guess: f32,
        want: Want,
    ) -> Option<f32> {
        // When the block holds k points within the guess, the k nearest of the block are among them.
        if guess >= want.limit2 || block.select(nb, q, guess, want.k, &mut self.spare) < want.k {
            // The previous point's k neighbours are k points of the cloud: the farthest of them from this
            // point bounds its k-th distance exactly (same f32 distances, no slack needed).
            let tau = match kth(&self.top, want) {
                Some(_) => {
                    let far = self.top.iter().fold(0.0f32, |m, e| m.max(dist2(e.pos, q)));
                    want.limit2.min(far)
                }
                None => want.limit2,
            };
            block.select(nb, q, tau, want.k, &mut self.top);
        } else {
            std::mem::swap(&mut self.top, &mut self.spare);
        }
        kth(&self.top, want)
    }

    fn exact(&mut self, nb: &Neighbors, block: &mut Candidates, q: [f32; 3], tau: f32, want: Want) {
        exact_into(nb, block, q, tau, want, &mut self.top);
    }

    fn emit(&mut self, nb: &Neighbors, j: usize, q: [f32; 3]) -> R {
        self.nb.clear();
        self.np.clear();
        for e in &self.top {
            self.nb.push(Neighbor {
                index: e.index,
                dist2: e.d2,
            });
            self.np.push(e.pos);
        }
        (self.f)(&mut self.state, nb.order[j] as usize, q, &self.nb, &self.np)
    }
}

/// Each point's sum of the distances to its k nearest, found without listing or ordering them: the k-th
/// squared distance comes from counting the candidates below a few probes ([`kth_and_root_sum`]), which
/// made the search about a quarter faster than ranking the candidates and handing the list on.
#[derive(Default)]
struct RootSums {
    sum: f64,
    /// The previous point and its k-th squared distance: its k neighbours bound this point's.
    prev: Option<([f32; 3], f32)>,
    top: Vec<Entry>,
}

impl PerPoint for RootSums {
    type Item = f64;
    const INDEXED: bool = false;

    fn select(
        &mut self,
        nb: &Neighbors,
        block: &mut Candidates,
        q: [f32; 3],
        guess: f32,
        want: Want,
    ) -> Option<f32> {
        let mut n = if guess < want.limit2 {
            block.list(nb, q, guess)
        } else {
            0
        };
        if n < want.k {
            // The previous point's k neighbours lie within its k-th distance of it, so within that plus
            // the step between the two points of this one (with a margin for f32 rounding).
            let tau = self.prev.map_or(want.limit2, |(p, pk2)| {
                let reach = (pk2 as f64).sqrt() + (dist2(p, q) as f64).sqrt();
                want.limit2
                    .min((reach * (1.0 + 1e-5) + 1e-20).powi(2) as f32)
            });
            // Most misses are near: twice the guess first, when that is tighter than the bound.
            let wider = 2.0 * guess;
            if wider < tau {
                n = block.list(nb, q, wider);
            }
            if n < want.k {
                n = block.list(nb, q, tau);
            }
        }
        let k = want.k.min(n);
        let estimate = self.prev.map_or(f32::INFINITY, |p| p.1);
        let (kth, sum) = kth_and_root_sum(&block.near, n, k, estimate);
        self.sum = sum;
        let found = (n >= want.k).then_some(kth);
        self.prev = found.map(|d2| (q, d2));
        found
    }

    fn exact(&mut self, nb: &Neighbors, block: &mut Candidates, q: [f32; 3], tau: f32, want: Want) {
        exact_into(nb, block, q, tau, want, &mut self.top);
        self.sum = self.top.iter().map(|e| e.d2.sqrt() as f64).sum();
        self.prev = kth(&self.top, want).map(|d2| (q, d2));
    }

    fn emit(&mut self, _: &Neighbors, _: usize, _: [f32; 3]) -> f64 {
        self.sum
    }
}

/// `v` four lanes at a time (`v.len()` a multiple of [`LANES`]).
#[inline]
fn lanes_of(v: &[f32]) -> impl Iterator<Item = f32x4> + '_ {
    v.chunks_exact(LANES)
        .map(|c| f32x4::from(<[f32; LANES]>::try_from(c).unwrap_or_default()))
}

/// The smallest lane of the vectors (infinity for none).
#[inline]
fn lanes_min(v: impl Iterator<Item = f32x4>) -> f32 {
    v.fold(f32x4::splat(f32::INFINITY), f32x4::min)
        .to_array()
        .into_iter()
        .fold(f32::INFINITY, f32::min)
}

/// Counting passes [`kth_and_root_sum`] makes to narrow the interval that holds the k-th value.
const PROBES: usize = 6;

/// The k-th smallest of `near[..n]` (`k <= n`; `near` padded past `n` with infinity to a whole number of
/// lanes) and the sum of the roots of the k smallest (0 and 0 when k is 0), without ordering the values:
/// counting passes (four lanes at a time, from `estimate`, then by interpolation; about 2.7 per call on
/// lone_star) narrow an interval until the k-th is its first or its last value, which one more pass reads
/// (else the values are taken smallest first). Equal values count as often as they occur, so the sum does
/// not depend on which of them a sort would have kept. Roots in f32, summed in f64 lane by lane.
fn kth_and_root_sum(near: &[f32], n: usize, k: usize, estimate: f32) -> (f32, f64) {
    if k == 0 {
        return (0.0, 0.0);
    }
    let vectors = || lanes_of(&near[..n.next_multiple_of(LANES)]);
    let count = |cmp: fn(f32x4, f32x4) -> f32x4, x: f32| -> usize {
        let x = f32x4::splat(x);
        vectors()
            .map(|v| lanes_set(cmp(v, x).to_bitmask()) as usize)
            .sum()
    };
    // Fewer than k values lie below `lo`, at least k below `hi`.
    let (mut lo, mut below_lo) = (0.0f32, 0usize);
    let (mut hi, mut below_hi) = (f32::INFINITY, n);
    let mut x = if estimate > 0.0 && estimate.is_finite() {
        estimate
    } else {
        0.5 * near[..n].iter().fold(0.0f32, |m, &v| m.max(v))
    };
    for _ in 0..PROBES {
        // Done when the k-th is the first value from `lo` or the last below `hi`.
        if below_lo + 1 == k || below_hi == k || !(x > lo && x < hi) {
            break;
        }
        let c = count(f32x4::simd_lt, x);
        if c >= k {
            (hi, below_hi) = (x, c);
        } else {
            (lo, below_lo) = (x, c);
        }
        // Counts grow about linearly with squared distance on a surface: aim between the (k-1)-th and k-th.
        let want = (k - below_lo) as f32 - 0.5;
        x = if hi.is_finite() {
            let t = lo + (hi - lo) * want / (below_hi - below_lo) as f32;
            if t > lo && t < hi { t } else { 0.5 * (lo + hi) }
        } else {
            x * (k as f32 + 0.5) / (below_lo.max(1) as f32)
        };
    }
    // The k-th is the (k - below_lo)-th smallest of the values in [lo, hi): the first or the last of them
    // in one pass, else the smallest in turn until k lie at or below one.
    let (inf4, lo4, hi4) = (
        f32x4::splat(f32::INFINITY),
        f32x4::splat(lo),
        f32x4::splat(hi),
    );
    let rank = k - below_lo;
    let kth = if rank == 1 {
        lanes_min(vectors().map(|v| v.simd_ge(lo4).bitselect(v, inf4)))
    } else if rank == below_hi - below_lo {
        -lanes_min(vectors().map(|v| v.simd_lt(hi4).bitselect(-v, inf4)))
    } else {
        let mut from = lo;
        loop {
            let from4 = f32x4::splat(from);
            let m = lanes_min(vectors().map(|v| v.simd_ge(from4).bitselect(v, inf4)));
            if !m.is_finite() || count(f32x4::simd_le, m) >= k {
                break m;
            }
            from = m.next_up();
        }
    };
    let kth4 = f32x4::splat(kth);
    let mut sums = [0.0f64; LANES];
    let mut nearer = 0u32;
    for v in vectors() {
        let inside = v.simd_lt(kth4);
        nearer += lanes_set(inside.to_bitmask());
        for (s, r) in sums
            .iter_mut()
            .zip(inside.bitselect(v.sqrt(), f32x4::ZERO).to_array())
        {
            *s += r as f64;
        }
    }
    // The k-th value's copies that the k smallest hold (none when it is not finite: no value was).
    let ties = match k.saturating_sub(nearer as usize) {
        0 => 0.0,
        t => t as f64 * kth.sqrt() as f64,
    };
    (kth, (sums[0] + sums[1]) + (sums[2] + sums[3]) + ties)
}

/// A block's faces beyond which points may lie (infinite where the block reaches the grid's edge), made
/// once per block so that each query's bound costs a few subtractions.
struct Faces {
    low: [f64; 3],
    high: [f64; 3],
    /// Safety margin, in metres, for the rounding of the faces and of the query.
    slack: f64,
}

impl Faces {
    /// Distance from `q` to the nearest face, less a safety margin (infinite when the block covers the grid
    /// on every side).
    #[inline]
    fn bound(&self, q: [f32; 3]) -> f64 {
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
    fn build(
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
    fn main_index(&self, code: u64) -> u32 {
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
    fn cell_of(&self, q: [f32; 3], level: u32) -> [i64; 3] {
        let s = self.side(level);
        std::array::from_fn(|a| ((q[a] as f64 - self.lo[a]) / s).floor().clamp(-1e15, 1e15) as i64)
    }

    /// Chebyshev distance, in cells, from cell `c` to the grid at `level` (0 inside).
    fn gap(&self, c: [i64; 3], level: u32) -> i64 {
        let max = self.max_at(level);
        (0..3)
            .map(|a| (-c[a]).max(c[a] - max[a] as i64).max(0))
            .max()
            .unwrap_or(0)
    }

    /// The block of cells within `ring` of `c` at `level`, clipped to the grid (the caller makes sure they
    /// meet: `gap(c, level) <= ring`), and the distance from `q` to the nearest face of the block beyond which
    /// points may lie, less a safety margin (infinite when the block covers the grid on every side).
    fn block(&self, q: [f32; 3], c: [i64; 3], level: u32, ring: i64) -> ([[u32; 2]; 3], f64) {
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
    fn faces(&self, level: u32, lo: [i64; 3], hi: [i64; 3]) -> Faces {
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
    fn sub_byte(&self, j: usize, a: usize) -> u32 {
        match a {
            0 => self.sx[j] as u32,
            1 => self.sy[j] as u32,
            _ => self.coarse_of(self.sorted[j][2] as f64, 2) & 255,
        }
    }

    /// The [`coarse`] coordinate of `v` (metres, relative to the cloud's origin) along axis `a`.
    #[inline]
    fn coarse_of(&self, v: f64, a: usize) -> u32 {
        coarse(fine_coord(v, self.lo[a], self.per_fine), self.main)
    }

    /// Relative level at which one cell covers the whole grid.
    fn top_level(&self) -> u32 {
        FINE_BITS - self.main.min(FINE_BITS)
    }

    /// The smallest block (level, ring) that holds every point within `reach` metres of a query: ring up to 3
    /// at the main level, else up to 2 at a coarser one.
    fn reach_block(&self, reach: f64) -> (u32, i64) {
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
    fn for_ranges(
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

    /// Whether a search bounded by `bound` (block face distance) is complete.
    /// `kth`: the k-th squared distance found, None when fewer than k were.
    fn complete(kth: Option<f32>, want: Want, bound: f64) -> bool {
        let b2 = bound * bound;
        want.limit2 as f64 <= b2 || kth.is_some_and(|d2| d2 as f64 <= b2)
    }

    /// Exact k nearest of `q` with `d2 <= limit2` into `top` (sorted by (d2, index)). With `started` =
    /// (bound, ring), `top` already holds the answer over the main-level block of that ring around `q`'s cell
    /// and `bound` is that block's face distance; it is kept when complete and recomputed over a larger block
    /// otherwise.
    fn search(&self, q: [f32; 3], want: Want, top: &mut Vec<Entry>, started: Option<(f64, i64)>) {
        let (mut level, mut ring) = (0u32, 1i64);
        if let Some((bound, r)) = started {
            ring = r;
            if Neighbors::complete(kth(top, want), want, bound) {
                return;
            }
            (level, ring) = self.widen(top, want, level, ring);
        }
        loop {
            top.clear();
            let c = self.cell_of(q, level);
            let gap = self.gap(c, level);
            if gap >= ring {
                // A foreign query far from the grid: climb until the grid is near, then reach it.
                if gap > 2 && level < self.top_level() {
                    level += 1;
                    continue;
                }
                ring = gap + 1;
            }
            let (span, bound) = self.block(q, c, level, ring);
            let lim = want.limit2;
            self.for_ranges(level, span, |r| {
                for j in r {
                    let p = self.sorted[j];
                    let d2 = dist2(p, q);
                    if d2 <= lim {
                        push_top(
                            top,
                            want.k,
                            Entry {
                                d2,
                                index: self.order[j],
                                pos: p,
                            },
                        );
                    }
                }
            });
            if Neighbors::complete(kth(top, want), want, bound) || level >= self.top_level() {
                return;
            }
            (level, ring) = self.widen(top, want, level, ring);
        }
    }

    /// The next block after an incomplete search over (level, ring): one reaching the radius or the current
    /// k-th candidate (which bounds the answer) when either is known, else the 3x3x3 block one level up.
    fn widen(&self, top: &[Entry], want: Want, level: u32, ring: i64) -> (u32, i64) {
        let mut reach = want.limit2 as f64;
        if top.len() == want.k
            && let Some(w) = top.last()
        {
            reach = reach.min(w.d2 as f64);
        }
        if reach.is_finite() {
            let (l, r) = self.reach_block(reach.sqrt());
            // Always make progress, whatever the rounding.
            if (l, r) <= (level, ring) {
                return (level, ring + 1);
            }
            if l < level {
                return (level, ring + 1);
            }
            (l, r)
        } else {
            ((level + 1).min(self.top_level()), 1)
        }
    }

    /// The `k` points nearest to `query` (the query point itself included when it is in the cloud), limited to
    /// distance `<= max_radius` when given, into `out` (cleared first), sorted by (distance, index).
    pub fn knn(&self, query: [f32; 3], k: usize, max_radius: Option<f32>, out: &mut Vec<Neighbor>) {
        out.clear();
        let k = k.min(self.len);
        if k == 0 || !query.iter().all(|v| v.is_finite()) {
            return;
        }
        let limit2 = max_radius.map_or(f32::INFINITY, |r| r * r);
        if limit2.is_nan() || limit2 < 0.0 {
            return;
        }
        let mut top = Vec::with_capacity(k + 1);
        self.search(query, Want { k, limit2 }, &mut top, None);
        out.extend(top.iter().map(|e| Neighbor {
            index: e.index,
            dist2: e.d2,
        }));
    }

    /// Every point within `radius` of `query` into `scratch.found`, unsorted.
    fn gather_within(&self, query: [f32; 3], radius: f32, scratch: &mut NeighborScratch) {
        scratch.found.clear();
        if self.len == 0 || radius.is_nan() || radius < 0.0 || !query.iter().all(|v| v.is_finite())
        {
            return;
        }
        let r2 = radius * radius;
        let (level, ring) = self.reach_block(radius as f64);
        let c = self.cell_of(query, level);
        if self.gap(c, level) > ring {
            return;
        }
        let (span, _) = self.block(query, c, level, ring);
        let found = &mut scratch.found;
        self.for_ranges(level, span, |r| {
            for j in r {
                let p = self.sorted[j];
                let d2 = dist2(p, query);
                if d2 <= r2 {
                    found.push(Entry {
                        d2,
                        index: self.order[j],
                        pos: p,
                    });
                }
            }
        });
    }

    /// Every point within distance `<= radius` of `query` (itself included), into `out` (cleared first),
    /// sorted by (distance, index).
    pub fn within(
        &self,
        query: [f32; 3],
        radius: f32,
        scratch: &mut NeighborScratch,
        out: &mut Vec<Neighbor>,
    ) {
        self.gather_within(query, radius, scratch);
        out.clear();
        out.extend(scratch.found.iter().map(|e| Neighbor {
            index: e.index,
            dist2: e.d2,
        }));
        out.sort_unstable_by(|a, b| a.dist2.total_cmp(&b.dist2).then(a.index.cmp(&b.index)));
    }

    /// How many points lie within distance `<= radius` of `query` (itself included).
    pub fn count_within(
        &self,
        query: [f32; 3],
        radius: f32,
        scratch: &mut NeighborScratch,
    ) -> usize {
        self.gather_within(query, radius, scratch);
        scratch.found.len()
    }

    /// Split the sorted points into cell-aligned units of about [`UNIT`] points: (first cell, end cell).
    fn units(&self) -> Vec<(usize, usize)> {
        let mut units = Vec::new();
        let cells = self.cell_codes.len();
        let mut a = 0;
        while a < cells {
            let mut b = a + 1;
            while b < cells && (self.cell_start[b] - self.cell_start[a]) < UNIT as u32 {
                b += 1;
            }
            units.push((a, b));
            a = b;
        }
        units
    }

    /// Run `f` once per main cell, in parallel, in cell order: `f(state, cell, outputs)` fills the outputs of
    /// the cell's points (`out` cut to them: its point `i` is sorted point `cell_start[cell] + i`).
    fn per_cells<O: Outputs, S>(
        &self,
        out: O,
        progress: &dyn Progress,
        init: impl Fn() -> S + Sync + Send,
        f: impl Fn(&mut S, usize, &mut O) + Sync + Send,
    ) -> Result<()> {
        let units = self.units();
        let mut parts = Vec::with_capacity(units.len());
        let mut rest = out;
        for &(a, b) in &units {
            let (head, tail) = rest.split_at((self.cell_start[b] - self.cell_start[a]) as usize);
            parts.push((a, b, head));
            rest = tail;
        }
        parts
            .into_par_iter()
            .try_for_each_init(init, |state, (a, b, mut part)| {
                check_cancel(progress)?;
                for ci in a..b {
                    let (mut cell, tail) =
                        part.split_at((self.cell_start[ci + 1] - self.cell_start[ci]) as usize);
                    f(state, ci, &mut cell);
                    part = tail;
                }
                progress.advance((self.cell_start[b] - self.cell_start[a]) as u64);
                Ok::<(), Error>(())
            })
    }

    /// [`Neighbors::per_cells`] into one new array, in cell order (the order of [`Neighbors::into_order`]).
    fn per_cells_vec<R, S>(
        &self,
        progress: &dyn Progress,
        init: impl Fn() -> S + Sync + Send,
        f: impl Fn(&mut S, usize, &mut &mut [R]) + Sync + Send,
    ) -> Result<Vec<R>>
    where
        R: Copy + Default + Send + Sync,
    {
        let mut in_cell_order = vec![R::default(); self.len];
        self.per_cells(&mut in_cell_order[..], progress, init, f)?;
        Ok(in_cell_order)
    }

    /// Results in cell order (as [`Neighbors::per_cells`] returns them) put into point order.
    fn to_point_order<R: Copy + Default>(&self, in_cell_order: &[R]) -> Vec<R> {
        scatter(in_cell_order, &self.order)
    }

    /// The original index of each point in the index's own (cell) order, the order of
    /// [`Neighbors::knn_all_in_cell_order`]'s results; the rest of the index is freed. With [`scatter`], a
    /// caller puts those results into point order without holding the index and two result arrays at once.
    pub(crate) fn into_order(self) -> Vec<u32> {
        self.order
    }

    /// The positions in the index's own (cell) order and the original index of each
    /// ([`Neighbors::into_order`]); the rest of the index is freed. What [`Neighbors::for_knn_owned`] took.
    pub(crate) fn into_sorted(self) -> (Vec<[f32; 3]>, Vec<u32>) {
        (self.sorted, self.order)
    }

    /// For every point of the cloud (in parallel): its `k` nearest points (itself included) within
    /// `max_radius` when given, sorted by (distance, index), handed to `f(state, index, position, neighbours,
    /// their positions)`; returns `f`'s results in point order. `init` makes one `state` per worker. Exactly
    /// the results of [`Neighbors::knn`] for each point, for any number of threads.
    pub fn knn_all<R, S>(
        &self,
        k: usize,
        max_radius: Option<f32>,
        progress: &dyn Progress,
        init: impl Fn() -> S + Sync + Send,
        f: impl Fn(&mut S, usize, [f32; 3], &[Neighbor], &[[f32; 3]]) -> R + Sync + Send,
    ) -> Result<Vec<R>>
    where
        R: Copy + Default + Send + Sync,
    {
        let in_cell_order = self.knn_all_in_cell_order(k, max_radius, progress, init, f)?;
        Ok(self.to_point_order(&in_cell_order))
    }

    /// [`Neighbors::knn_all`] with the results left in the index's cell order: result `j` is point
    /// `into_order()[j]`'s.
    pub(crate) fn knn_all_in_cell_order<R, S>(
        &self,
        k: usize,
        max_radius: Option<f32>,
        progress: &dyn Progress,
        init: impl Fn() -> S + Sync + Send,
        f: impl Fn(&mut S, usize, [f32; 3], &[Neighbor], &[[f32; 3]]) -> R + Sync + Send,
    ) -> Result<Vec<R>>
    where
        R: Copy + Default + Send + Sync,
    {
        let mut in_cell_order = vec![R::default(); self.len];
        self.knn_all_into(&mut in_cell_order[..], k, max_radius, progress, init, f)?;
        Ok(in_cell_order)
    }

    /// [`Neighbors::knn_all_in_cell_order`] writing each point's result into `out` (one or several columns,
    /// [`Outputs`]) at its place in cell order: a stage fills its output columns in one pass, with no array of
    /// whole results to take apart after.
    pub(crate) fn knn_all_into<O: Outputs, S>(
        &self,
        mut out: O,
        k: usize,
        max_radius: Option<f32>,
        progress: &dyn Progress,
        init: impl Fn() -> S + Sync + Send,
        f: impl Fn(&mut S, usize, [f32; 3], &[Neighbor], &[[f32; 3]]) -> O::Item + Sync + Send,
    ) -> Result<()> {
        let Some(want) = self.want(k, max_radius) else {
            let mut state = init();
            for (j, (&i, &p)) in self.order.iter().zip(&self.sorted).enumerate() {
                out.set(j, f(&mut state, i as usize, p, &[], &[]));
            }
            return Ok(());
        };
        self.per_point(out, want, progress, || Lists {
            state: init(),
            f: &f,
            top: Vec::with_capacity(want.k + 1),
            spare: Vec::with_capacity(want.k + 1),
            nb: Vec::with_capacity(want.k),
            np: Vec::with_capacity(want.k),
        })
    }

    /// For every point, in cell order (the order of [`Neighbors::into_order`]): the sum of the distances to
    /// its `k` nearest points, itself included (at distance 0), in metres: what outlier removal averages.
    /// The same neighbours as [`Neighbors::knn_all`], but neither listed nor ordered ([`RootSums`]): the
    /// roots are taken in f32 of the f32 squared distances (as PCL takes them of FLANN's float distances) and
    /// summed in f64.
    pub(crate) fn knn_root_sums_in_cell_order(
        &self,
        k: usize,
        progress: &dyn Progress,
    ) -> Result<Vec<f64>> {
        let mut sums = vec![0.0; self.len];
        if let Some(want) = self.want(k, None) {
            self.per_point(&mut sums[..], want, progress, RootSums::default)?;
        }
        Ok(sums)
    }

    /// What an all-points query asks for, None when it finds nothing (k = 0, or no radius).
    fn want(&self, k: usize, max_radius: Option<f32>) -> Option<Want> {
        let k = k.min(self.len);
        let limit2 = max_radius.map_or(f32::INFINITY, |r| r * r);
        (k > 0 && limit2 >= 0.0).then_some(Want { k, limit2 })
    }

    /// The all-points k-nearest search, point by point in cell order, `M` making each point's output.
    fn per_point<O: Outputs, M: PerPoint<Item = O::Item>>(
        &self,
        out: O,
        want: Want,
        progress: &dyn Progress,
        init: impl Fn() -> M + Sync + Send,
    ) -> Result<()> {
        struct Bufs<M> {
            mode: M,
            block: Candidates,
            /// The group of main cells whose block `block` holds (the lowest one's coordinates), and the
            /// block's faces.
            group: Option<([i64; 3], Faces)>,
            /// The previous query's k-th squared distance, when it had k neighbours.
            last: Option<f32>,
            pending: Vec<(usize, f32)>,
        }
        self.per_cells(
            out,
            progress,
            || Bufs {
                mode: init(),
                block: Candidates::new(),
                group: None,
                last: None,
                pending: Vec::new(),
            },
            |b, ci, out| {
                let own = self.cell_start[ci] as usize..self.cell_start[ci + 1] as usize;
                let base = own.start;
                // One block serves the main cells of a cell GROUP_LEVELS up (consecutive in Morton order):
                // those cells and one more around them.
                let g = decode(self.cell_codes[ci] >> (3 * GROUP_LEVELS))
                    .map(|v| (v as i64) << GROUP_LEVELS);
                let (lo, hi) = (g.map(|v| v - 1), g.map(|v| v + (1 << GROUP_LEVELS)));
                let faces = match &mut b.group {
                    Some((held, faces)) if *held == g => &*faces,
                    group => {
                        b.block.fill(self, lo, hi, M::INDEXED);
                        &group.insert((g, self.faces(0, lo, hi))).1
                    }
                };
                b.pending.clear();
                for j in own.clone() {
                    let q = self.sorted[j];
                    // First a guess, not a bound: the previous point's k-th distance, a little more.
                    let guess = b.last.map_or(f32::INFINITY, |pk2| pk2 * GUESS2);
                    b.last = b.mode.select(self, &mut b.block, q, guess, want);
                    if Neighbors::complete(b.last, want, faces.bound(q)) {
                        out.set(j - base, b.mode.emit(self, j, q));
                    } else {
                        // The k-th candidate so far bounds the answer.
                        b.pending
                            .push((j, b.last.map_or(want.limit2, |d| d.min(want.limit2))));
                    }
                }
                if b.pending.is_empty() {
                    return;
                }
                // Points near the block's faces in sparse parts: a scan of the cells their bound reaches, or,
                // rarely (no bound, or too many cells), a search of their own.
                for &(j, tau) in &b.pending {
                    let q = self.sorted[j];
                    b.mode.exact(self, &mut b.block, q, tau, want);
                    out.set(j - base, b.mode.emit(self, j, q));
                }
                b.last = None;
            },
        )
    }

    /// For every point of the cloud (in parallel): how many points lie within distance `<= radius` of it
    /// (itself included), in point order.
    pub fn count_within_all(&self, radius: f32, progress: &dyn Progress) -> Result<Vec<u32>> {
        if radius.is_nan() || radius < 0.0 {
            return Ok(vec![0; self.len]);
        }
        let r2 = radius * radius;
        let in_cell_order =
            self.per_cells_vec(progress, NeighborScratch::default, |s, ci, out| {
                let first = self.cell_start[ci] as usize;
                let c = decode(self.cell_codes[ci]).map(|v| v as i64);
                let (level, ring) = self.reach_block(radius as f64);
                if level > 0 {
                    for (o, j) in out.iter_mut().zip(first..) {
                        *o = self.count_within(self.sorted[j], radius, s) as u32;
                    }
                    return;
                }
                s.found.clear();
                let (span, _) = self.block(self.sorted[first], c, 0, ring);
                let found = &mut s.found;
                self.for_ranges(0, span, |r| {
                    for j in r {
                        found.push(Entry {
                            d2: 0.0,
                            index: 0,
                            pos: self.sorted[j],
                        });
                    }
                });
                for (o, j) in out.iter_mut().zip(first..) {
                    let q = self.sorted[j];
                    *o = s.found.iter().filter(|e| dist2(e.pos, q) <= r2).count() as u32;
                }
            })?;
        Ok(self.to_point_order(&in_cell_order))
    }
}

/// Inverse of [`morton`].
fn decode(code: u64) -> [u32; 3] {
    fn compact(mut x: u64) -> u32 {
        x &= 0x1249_2492_4924_9249;
        x = (x ^ (x >> 2)) & 0x10c3_0c30_c30c_30c3;
        x = (x ^ (x >> 4)) & 0x100f_00f0_0f00_f00f;
        x = (x ^ (x >> 8)) & 0x001f_0000_ff00_00ff;
        x = (x ^ (x >> 16)) & 0x001f_0000_0000_ffff;
        x = (x ^ (x >> 32)) & 0x1f_ffff;
        x as u32
    }
    [compact(code >> 2), compact(code >> 1), compact(code)]
}

/// The finest level whose point-weighted mean occupancy (the number of points sharing a typical point's cell,
/// each cell's count capped at 8 * target so a pile of duplicates does not decide) reaches `target`.
fn occupancy_level(codes: &[u64], target: f64, fine: f64, rate: f64) -> (u32, f64) {
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

/// `v` put into the order `to` names: element `j` goes to place `to[j]` (`to` is a permutation of
/// `0..v.len()`).
pub(crate) fn scatter<T: Copy + Default>(v: &[T], to: &[u32]) -> Vec<T> {
    let mut out = vec![T::default(); v.len()];
    for (&x, &i) in v.iter().zip(to) {
        out[i as usize] = x;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn brute(points: &[[f32; 3]], q: [f32; 3], k: usize, r2: f32) -> Vec<(u32, f32)> {
        let mut v: Vec<(f32, u32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let d = (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2);
                (d, i as u32)
            })
            .filter(|x| x.0 <= r2)
            .collect();
        let order = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if k < v.len() {
            v.select_nth_unstable_by(k, order);
            v.truncate(k);
        }
        v.sort_by(order);
        v.into_iter().take(k).map(|x| (x.1, x.0)).collect()
    }

    /// splitmix64, for test clouds.
    fn rng(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Clusters of very different density, a plane, duplicates and far outliers.
    fn mixed_cloud(n: usize) -> Vec<[f32; 3]> {
        let mut s = 7u64;
        let mut pts = Vec::new();
        for i in 0..n {
            let p = match i % 5 {
                0 => [rng(&mut s) * 0.1, rng(&mut s) * 0.1, rng(&mut s) * 0.1],
                1 => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, 3.0],
                2 => [5.0, 5.0, (i % 3) as f32],
                3 => [
                    rng(&mut s) * 100.0 - 50.0,
                    rng(&mut s) * 3.0,
                    rng(&mut s) * 40.0,
                ],
                _ => [rng(&mut s) * 2.0 + 10.0, 1.0, rng(&mut s) * 2.0],
            };
            pts.push(p);
        }
        pts.push([500.0, -300.0, 20.0]);
        pts.push([-400.0, 0.0, 0.0]);
        pts
    }

    /// How many points share a typical point's main cell (point-weighted mean, uncapped).
    fn cell_occupancy(nb: &Neighbors) -> f64 {
        let sum: f64 = nb
            .cell_start
            .windows(2)
            .map(|w| ((w[1] - w[0]) as f64).powi(2))
            .sum();
        sum / nb.len() as f64
    }

    /// A scan-like tile (a plane, a dense cluster, a pile of duplicates, scattered points and one far point)
    /// copied 4 x 4 side by side, offset by the tile's extent, as bench/tile.py makes tiled.ply.
    fn tiled_cloud(per_tile: usize) -> Vec<[f32; 3]> {
        let mut s = 11u64;
        let mut tile = Vec::new();
        for i in 0..per_tile {
            tile.push(match i % 100 {
                0..60 => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, rng(&mut s) * 0.01],
                60..90 => [
                    rng(&mut s) * 0.5 + 3.0,
                    rng(&mut s) * 0.5 + 3.0,
                    rng(&mut s) * 0.5 + 1.0,
                ],
                90 => [10.0, 10.0, 2.0],
                _ => [rng(&mut s) * 20.0, rng(&mut s) * 20.0, rng(&mut s) * 10.0],
            });
        }
        tile.push([25.0, 25.0, 15.0]);
        let mut pts = Vec::new();
        for tx in 0..4 {
            for ty in 0..4 {
                pts.extend(
                    tile.iter()
                        .map(|p| [p[0] + 25.0 * tx as f32, p[1] + 25.0 * ty as f32, p[2]]),
                );
            }
        }
        pts
    }

    /// Regression: `aerie prepare tiled.ply` (8.3M points, 16 copies of a TLS scan) ran for more than 30
    /// minutes in SOR's k-nearest search. The main level is chosen from a sample of 65k points; the sample's
    /// per-cell counts were capped at `8 * target * rate` truncated to an integer, which is 1 once fewer than
    /// 1 point in 4 * target is sampled (6.7M points for k = 16): every cell then counted as holding one
    /// point and the coarsest level won, a few main cells each holding a quarter of the cloud, so a few
    /// threads' queries each scanned and selected among a large part of the cloud. Here 512 of 64k points
    /// are sampled (the same rate as 65k of 8.3M): the level must be the one every point gives, within one,
    /// and the answers exact.
    #[test]
    fn regression_sparse_level_sample_on_a_tiled_cloud() {
        let pts = tiled_cloud(4000);
        let k = 17;
        let target = k as f64 * OCCUPANCY_PER_K;
        let choose = |fine, codes: &[u64], rate| occupancy_level(codes, target, fine, rate);
        let whole = Neighbors::build(Cow::Borrowed(&pts), usize::MAX, choose);
        let sampled = Neighbors::build(Cow::Borrowed(&pts), 512, choose);
        let occupancy = cell_occupancy(&sampled);
        assert!(
            sampled.main.abs_diff(whole.main) <= 1,
            "main level {} from the sample, {} from every point",
            sampled.main,
            whole.main
        );
        assert!(
            (target / 8.0..=8.0 * target).contains(&occupancy),
            "{occupancy} points share a typical main cell (target {target})"
        );
        let all = |nb: &Neighbors, check: bool| {
            nb.knn_all(
                k,
                None,
                &NoProgress,
                || (),
                |_, i, _, nbrs, _| {
                    if check && i % 61 == 0 {
                        let want = brute(&pts, pts[i], k, f32::INFINITY);
                        let got: Vec<(u32, f32)> =
                            nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                        assert_eq!(got, want, "point {i}");
                    }
                    nbrs.iter().map(|n| n.dist2 as f64).sum::<f64>()
                },
            )
            .unwrap()
        };
        // Exact (every 61st point against brute force), and the same answers on the grid every point chose.
        assert_eq!(all(&sampled, true), all(&whole, false));
    }

    #[test]
    fn knn_matches_brute_force() {
        let pts: Vec<[f32; 3]> = (0..500)
            .map(|i| {
                let f = i as f32;
                [
                    (f * 0.37).sin() * 3.0,
                    (f * 0.11).cos() * 2.0,
                    (f * 0.013) % 1.7,
                ]
            })
            .collect();
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        for qi in [0usize, 17, 250, 499] {
            nb.knn(pts[qi], 7, None, &mut out);
            let got: Vec<u32> = out.iter().map(|n| n.index).collect();
            let want: Vec<u32> = brute(&pts, pts[qi], 7, f32::INFINITY)
                .iter()
                .map(|x| x.0)
                .collect();
            assert_eq!(got, want);
            assert_eq!(out[0].index as usize, qi);
        }
    }

    #[test]
    fn all_points_queries_match_brute_force_on_a_mixed_cloud() {
        let pts = mixed_cloud(3000);
        for (k, r) in [
            (1usize, None),
            (16, None),
            (16, Some(0.3f32)),
            (40, Some(2.0)),
        ] {
            for nb in [
                Neighbors::for_knn(&pts, k).unwrap(),
                Neighbors::for_knn(&pts, 1).unwrap(),
                Neighbors::for_radius(&pts, 5.0).unwrap(),
            ] {
                let got = nb
                    .knn_all(
                        k,
                        r,
                        &NoProgress,
                        || (),
                        |_, i, q, nbrs, pos| {
                            let want = brute(&pts, pts[i], k, r.map_or(f32::INFINITY, |r| r * r));
                            assert_eq!(q, pts[i]);
                            let got: Vec<(u32, f32)> =
                                nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                            assert_eq!(got, want, "point {i} k {k} r {r:?}");
                            for (n, p) in nbrs.iter().zip(pos) {
                                assert_eq!(pts[n.index as usize], *p);
                            }
                            nbrs.len() as u32
                        },
                    )
                    .unwrap();
                assert_eq!(got.len(), pts.len());
                let mut one = Vec::new();
                for i in (0..pts.len()).step_by(97) {
                    nb.knn(pts[i], k, r, &mut one);
                    assert_eq!(one.len() as u32, got[i]);
                }
            }
        }
    }

    /// The sum of the roots of the k smallest squared distances, as brute force finds them (f32 roots of the
    /// f32 squared distances, summed in f64).
    fn brute_root_sum(points: &[[f32; 3]], q: [f32; 3], k: usize) -> f64 {
        brute(points, q, k, f32::INFINITY)
            .iter()
            .map(|&(_, d2)| d2.sqrt() as f64)
            .sum()
    }

    #[test]
    fn kth_and_root_sum_matches_a_sort_with_ties_and_any_estimate() {
        let mut s = 5u64;
        for n in [1usize, 2, 3, 7, 17, 40, 130] {
            // Values on a coarse lattice, so that many are equal, and some zeros.
            let mut near: Vec<f32> = (0..n)
                .map(|i| {
                    if i % 9 == 0 {
                        0.0
                    } else {
                        (rng(&mut s) * 12.0).floor() * 0.25
                    }
                })
                .collect();
            near.resize(n.next_multiple_of(LANES), f32::INFINITY);
            let mut sorted = near[..n].to_vec();
            sorted.sort_by(f32::total_cmp);
            for k in [1, n / 2, n] {
                if k == 0 {
                    continue;
                }
                let want: f64 = sorted[..k].iter().map(|v| v.sqrt() as f64).sum();
                for estimate in [f32::INFINITY, 0.0, 1e-9, sorted[k - 1], 0.6, 100.0] {
                    let (kth, sum) = kth_and_root_sum(&near, n, k, estimate);
                    assert_eq!(kth, sorted[k - 1], "n {n} k {k} estimate {estimate}");
                    assert!(
                        (sum - want).abs() <= 1e-12 * want.max(1.0),
                        "{sum} against {want}"
                    );
                }
            }
        }
        assert_eq!(
            kth_and_root_sum(&[f32::INFINITY; LANES], 0, 0, 1.0),
            (0.0, 0.0)
        );
    }

    /// The eight-lane listing (AVX2) lists exactly the slots and distances the four-lane one does, in the same
    /// order, whatever the bound.
    #[test]
    fn both_listings_agree() {
        if !avx2::available() {
            eprintln!("skipped: this processor has no AVX2, so only the four-lane listing runs");
            return;
        }
        for pts in [mixed_cloud(3000), tiled_cloud(300)] {
            let nb = Neighbors::for_knn(&pts, 17).unwrap();
            let mut block = Candidates::new();
            for ci in (0..nb.cell_codes.len()).step_by(5) {
                let g = decode(nb.cell_codes[ci]).map(|v| v as i64);
                block.fill(&nb, g.map(|v| v - 1), g.map(|v| v + 1), false);
                for j in nb.cell_start[ci] as usize..nb.cell_start[ci + 1] as usize {
                    for tau in [0.0, 1e-4, 3e-3, 0.02, 0.1, f32::INFINITY] {
                        let listing = |block: &mut Candidates, lanes8| {
                            block.lanes8 = lanes8;
                            let n = block.list(&nb, nb.sorted[j], tau);
                            let near: Vec<u32> = block.near[..n + LANES]
                                .iter()
                                .map(|d| d.to_bits())
                                .collect();
                            (block.listed[..n].to_vec(), near)
                        };
                        let four = listing(&mut block, false);
                        assert_eq!(four, listing(&mut block, true), "point {j}, tau {tau}");
                    }
                }
            }
        }
    }

    #[test]
    fn root_sums_match_brute_force() {
        let mut s = 11u64;
        let mut walls = Vec::new();
        for i in 0..3000 {
            let (a, b) = (rng(&mut s) * 6.0, rng(&mut s) * 6.0);
            walls.push(match i % 3 {
                0 => [2.0, a, b],
                1 => [a, 4.0, b],
                _ => [
                    (i % 7) as f32 * 0.1,
                    (i / 7 % 9) as f32 * 0.1,
                    (i / 63) as f32 * 0.1,
                ],
            });
        }
        for pts in [mixed_cloud(3000), walls, tiled_cloud(300)] {
            for k in [1usize, 2, 17, 40] {
                let nb = Neighbors::for_knn(&pts, k).unwrap();
                let sums = nb.knn_root_sums_in_cell_order(k, &NoProgress).unwrap();
                let order = nb.into_order();
                for (sum, &i) in sums.iter().zip(&order) {
                    let want = brute_root_sum(&pts, pts[i as usize], k);
                    assert!(
                        (sum - want).abs() <= 1e-12 * want.max(1.0),
                        "point {i} k {k}: {sum} against {want}"
                    );
                }
            }
        }
    }

    /// Walls along each axis (blocks bucketed by each pair of axes) and a lattice, where many candidates lie
    /// at equal distances (the rank selection's ties fall back to the sort).
    #[test]
    fn walls_and_lattices_match_brute_force() {
        let mut s = 11u64;
        let mut pts = Vec::new();
        for i in 0..4000 {
            let (a, b) = (rng(&mut s) * 6.0, rng(&mut s) * 6.0);
            pts.push(match i % 4 {
                0 => [2.0, a, b],
                1 => [a, 4.0, b],
                2 => [a, b, 0.5],
                _ => [
                    (i % 7) as f32 * 0.1,
                    (i / 7 % 9) as f32 * 0.1,
                    (i / 63) as f32 * 0.1,
                ],
            });
        }
        for k in [1usize, 8, 17, 40] {
            let nb = Neighbors::for_knn(&pts, k).unwrap();
            nb.knn_all(
                k,
                None,
                &NoProgress,
                || (),
                |_, i, _, nbrs, _| {
                    let want = brute(&pts, pts[i], k, f32::INFINITY);
                    let got: Vec<(u32, f32)> = nbrs.iter().map(|n| (n.index, n.dist2)).collect();
                    assert_eq!(got, want, "point {i} k {k}");
                },
            )
            .unwrap();
        }
    }

    #[test]
    fn radius_counts_match_brute_force() {
        let pts = mixed_cloud(2000);
        for r in [0.05f32, 0.5, 3.0] {
            for nb in [
                Neighbors::for_radius(&pts, r).unwrap(),
                Neighbors::new(&pts).unwrap(),
            ] {
                let all = nb.count_within_all(r, &NoProgress).unwrap();
                let mut s = nb.scratch();
                let mut out = Vec::new();
                for i in 0..pts.len() {
                    let want = brute(&pts, pts[i], usize::MAX, r * r);
                    assert_eq!(all[i] as usize, want.len(), "point {i} r {r}");
                    if i % 50 == 0 {
                        nb.within(pts[i], r, &mut s, &mut out);
                        let got: Vec<(u32, f32)> = out.iter().map(|n| (n.index, n.dist2)).collect();
                        assert_eq!(got, want);
                        assert_eq!(nb.count_within(pts[i], r, &mut s), want.len());
                    }
                }
            }
        }
    }

    #[test]
    fn foreign_query_points() {
        let pts = mixed_cloud(1000);
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        for q in [
            [1000.0f32, 1000.0, 1000.0],
            [-1e6, 0.0, 0.0],
            [3.3, 2.2, 1.1],
            [0.05; 3],
        ] {
            nb.knn(q, 5, None, &mut out);
            let got: Vec<(u32, f32)> = out.iter().map(|n| (n.index, n.dist2)).collect();
            assert_eq!(got, brute(&pts, q, 5, f32::INFINITY), "{q:?}");
        }
    }

    #[test]
    fn radius_limits_knn_and_within_counts() {
        let pts: Vec<[f32; 3]> = (0..10).map(|i| [i as f32, 0.0, 0.0]).collect();
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        nb.knn([0.0; 3], 5, Some(2.0), &mut out);
        assert_eq!(
            out.iter().map(|n| n.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let mut s = nb.scratch();
        nb.within([4.0, 0.0, 0.0], 1.0, &mut s, &mut out);
        assert_eq!(
            out.iter().map(|n| n.index).collect::<Vec<_>>(),
            vec![4, 3, 5]
        );
        assert_eq!(nb.count_within([4.0, 0.0, 0.0], 1.5, &mut s), 3);
        // k larger than the cloud returns every point.
        nb.knn([0.0; 3], 50, None, &mut out);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn all_duplicates_do_not_panic() {
        let pts = vec![[1.5f32, -2.0, 3.0]; 5000];
        let nb = Neighbors::new(&pts).unwrap();
        let mut out = Vec::new();
        nb.knn(pts[0], 16, None, &mut out);
        assert_eq!(out.len(), 16);
        assert!(out.iter().all(|n| n.dist2 == 0.0));
        assert_eq!(
            out.iter().map(|n| n.index).collect::<Vec<_>>(),
            (0..16).collect::<Vec<_>>()
        );
        let mut s = nb.scratch();
        assert_eq!(nb.count_within(pts[0], 0.0, &mut s), 5000);
    }

    #[test]
    fn empty_and_nan() {
        let nb = Neighbors::new(&[]).unwrap();
        let mut out = vec![Neighbor {
            index: 0,
            dist2: 0.0,
        }];
        nb.knn([0.0; 3], 3, None, &mut out);
        assert!(out.is_empty());
        assert!(nb.count_within_all(1.0, &NoProgress).unwrap().is_empty());
        assert!(Neighbors::new(&[[0.0, f32::NAN, 0.0]]).is_err());
    }

    #[test]
    fn morton_round_trip() {
        for c in [
            [0u32, 0, 0],
            [1, 2, 3],
            [0x1f_ffff, 0, 0x12345],
            [7, 0x1f_ffff, 0x1f_ffff],
        ] {
            assert_eq!(decode(morton(c)), c);
        }
    }
}
