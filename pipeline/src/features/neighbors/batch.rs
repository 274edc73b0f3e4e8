//! Queries for every point at once, in parallel over units of cells in Morton order: one block of candidates
//! serves the points of a group of cells, and each point's k nearest become a list for a closure or only the
//! sum of their distances.

use rayon::prelude::*;
use wide::f32x4;

use super::block::{Candidates, GROUP_LEVELS, PENDING_CELLS};
use super::index::Faces;
use super::morton::decode;
use super::query::{Want, kth};
use super::{Entry, Neighbor, NeighborScratch, Neighbors, dist2, scatter};
use crate::error::{Error, Result};
use crate::filters::check_cancel;
use crate::lanes::{LANES, lanes_set};
use crate::progress::Progress;

/// Points per unit of parallel work in the all-points queries.
const UNIT: usize = 4096;
/// The first try of a k-nearest query takes the previous point's k-th squared distance times this (its
/// distance times 1.2): a guess, checked, that leaves about twice k candidates to sort.
const GUESS2: f32 = 1.44;

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

/// [`RootSums`] that also gives each point's k-th squared distance (infinite when fewer than k were found):
/// a tiled prepare accepts a point's sum only when the ball of that distance lies inside the points it
/// loaded (docs/architecture.md, "Tiled prepare").
#[derive(Default)]
struct RootSumsReach(RootSums);

impl PerPoint for RootSumsReach {
    type Item = (f64, f32);
    const INDEXED: bool = false;

    fn select(
        &mut self,
        nb: &Neighbors,
        block: &mut Candidates,
        q: [f32; 3],
        guess: f32,
        want: Want,
    ) -> Option<f32> {
        self.0.select(nb, block, q, guess, want)
    }

    fn exact(&mut self, nb: &Neighbors, block: &mut Candidates, q: [f32; 3], tau: f32, want: Want) {
        self.0.exact(nb, block, q, tau, want);
    }

    fn emit(&mut self, _: &Neighbors, _: usize, _: [f32; 3]) -> (f64, f32) {
        (self.0.sum, self.0.prev.map_or(f32::INFINITY, |p| p.1))
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
pub(super) fn kth_and_root_sum(near: &[f32], n: usize, k: usize, estimate: f32) -> (f32, f64) {
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

impl Neighbors {
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

    /// [`Neighbors::knn_root_sums_in_cell_order`] with each point's k-th squared distance beside its sum
    /// (infinite where fewer than `k` points were found).
    pub(crate) fn knn_root_sums_and_reach_in_cell_order(
        &self,
        k: usize,
        progress: &dyn Progress,
    ) -> Result<Vec<(f64, f32)>> {
        let mut out = vec![(0.0, f32::INFINITY); self.len];
        if let Some(want) = self.want(k, None) {
            self.per_point(&mut out[..], want, progress, RootSumsReach::default)?;
        }
        Ok(out)
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
