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
//!
//! The files, each using only those before it: `morton.rs` (Morton codes and cell coordinates), `index.rs`
//! (building the index; cells, blocks and their faces), `block.rs` (a block's candidates, listed and selected),
//! `query.rs` (one point's queries), `batch.rs` (every point's queries at once).

mod batch;
mod block;
mod index;
mod morton;
mod query;
#[cfg(test)]
mod tests;

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

/// A Morton-ordered grid over positions (metres, relative to the cloud's origin).
pub struct Neighbors {
    len: usize,
    /// Corner of the grid (lowest coordinates), metres.
    lo: [f64; 3],
    /// Side of a fine cell, metres.
    fine: f64,
    /// Fine cells per metre: a point's fine coordinate is `(p - lo) * per_fine`, floored and clamped
    /// ([`fine_coord`]).
    ///
    /// [`fine_coord`]: morton::fine_coord
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
    ///
    /// [`coarse`]: morton::coarse
    sx: Vec<u8>,
    /// y of each sorted position within its main cell, in 1/256 of the cell. (z is computed where needed:
    /// storing it measured no faster.)
    sy: Vec<u8>,
    /// Open-addressing table: main-cell code -> index in `cell_codes` (`u32::MAX` = empty).
    table: Vec<u32>,
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

/// `v` put into the order `to` names: element `j` goes to place `to[j]` (`to` is a permutation of
/// `0..v.len()`).
pub(crate) fn scatter<T: Copy + Default>(v: &[T], to: &[u32]) -> Vec<T> {
    let mut out = vec![T::default(); v.len()];
    for (&x, &i) in v.iter().zip(to) {
        out[i as usize] = x;
    }
    out
}
