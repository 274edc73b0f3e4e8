//! A block of candidates: the points of a few main cells gathered once, as a structure of arrays bucketed by
//! (row, column), listed within a bound four or eight lanes at a time, and the k nearest of them selected.

use wide::{f32x4, u32x4};

use super::morton::{SUB_BITS, morton};
use super::{Entry, Neighbors, dist2};
use crate::features::avx2::{self, LANES8, Query};
use crate::lanes::{COMPACT, LANES};

/// Main cells that share one block of candidates: 2^GROUP_LEVELS along each axis, with one more cell
/// around them. A surface's points are copied into about ((2^GROUP_LEVELS + 2) / 2^GROUP_LEVELS)^2 blocks each
/// (4 for 2x2x2 groups, 2.25 for 4x4x4): 4x4x4 made SOR 6-7% faster on lone_star than 2x2x2, and 8x8x8 was
/// slower again.
pub(super) const GROUP_LEVELS: u32 = 2;

/// Columns per main cell along x in a block of candidates, at least: log2.
const X_BUCKET_BITS: u32 = 3;
/// Candidates per (row, column) bucket aimed at, on a surface-like block.
const BUCKET_FILL: usize = 8;

/// The candidates of a block of cells, as a structure of arrays so distances vectorise, bucketed by (row
/// along y, column along x) of their fine coordinates: the candidates of a query's box that share a row are
/// one contiguous run.
#[derive(Default)]
pub(super) struct Candidates {
    xs: Vec<f32>,
    ys: Vec<f32>,
    zs: Vec<f32>,
    /// Original index of each candidate.
    orig: Vec<u32>,
    d2: Vec<f32>,
    /// Slots of the candidates within the bound, in slot order.
    pub(super) listed: Vec<u32>,
    /// Their squared distances, padded for [`select_by_rank`].
    pub(super) near: Vec<f32>,
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
    pub(super) lanes8: bool,
}

/// A query whose first block did not hold its answer scans the cells of its bound's box directly when there
/// are at most this many.
pub(super) const PENDING_CELLS: u64 = 343;

/// Entries of [`Candidates::seen`] (a power of two).
const SEEN: usize = 512;

impl Candidates {
    /// Empty buffers, listing in eight lanes where the processor can.
    pub(super) fn new() -> Candidates {
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
    pub(super) fn fill(&mut self, nb: &Neighbors, lo: [i64; 3], hi: [i64; 3], indexed: bool) {
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
    pub(super) fn list(&mut self, nb: &Neighbors, q: [f32; 3], tau: f32) -> usize {
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
    pub(super) fn select(
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
    pub(super) fn scan_box(
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
