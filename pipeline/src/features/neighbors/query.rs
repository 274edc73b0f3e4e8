//! Queries for one point: its k nearest (an exact search over blocks that widen until the answer is proven) and
//! the points within a radius.

use super::{Entry, Neighbor, NeighborScratch, Neighbors, dist2, push_top};

/// What a block search must find: the `k` nearest with `d2 <= limit2`.
#[derive(Clone, Copy)]
pub(super) struct Want {
    pub(super) k: usize,
    pub(super) limit2: f32,
}

/// The k-th squared distance of a search's answer `top`, None when it holds fewer than k.
pub(super) fn kth(top: &[Entry], want: Want) -> Option<f32> {
    top.last().filter(|_| top.len() == want.k).map(|w| w.d2)
}

impl Neighbors {
    /// Whether a search bounded by `bound` (block face distance) is complete.
    /// `kth`: the k-th squared distance found, None when fewer than k were.
    pub(super) fn complete(kth: Option<f32>, want: Want, bound: f64) -> bool {
        let b2 = bound * bound;
        want.limit2 as f64 <= b2 || kth.is_some_and(|d2| d2 as f64 <= b2)
    }

    /// Exact k nearest of `q` with `d2 <= limit2` into `top` (sorted by (d2, index)). With `started` =
    /// (bound, ring), `top` already holds the answer over the main-level block of that ring around `q`'s cell
    /// and `bound` is that block's face distance; it is kept when complete and recomputed over a larger block
    /// otherwise.
    pub(super) fn search(
        &self,
        q: [f32; 3],
        want: Want,
        top: &mut Vec<Entry>,
        started: Option<(f64, i64)>,
    ) {
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
}
