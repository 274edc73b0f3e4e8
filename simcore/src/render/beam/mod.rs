//! The beam-driven renderer: each beam marches front to back through a two-level grid over the map (blocks of 8 x
//! 8 x 8 fine cells; empty blocks and empty cells are skipped) and takes the nearest disk it crosses: oriented
//! disks for points on planes, of radius sqrt(3)/2 * r_map or as wide as the sampling around the point where it
//! is sparser than r_map ([`super::disks`]); disks of radius sqrt(3)/2 * r_map facing the beam for the others
//! (and for plane points that the beam meets near edge-on). A point is
//! listed in every fine cell its disk can reach, so the first cell holding a hit nearer than the cell's exit ends
//! the march. A cell's points are stored four to a pack (structure of arrays in one cache line: the coordinates
//! and the packed normals the exact test needs) and screened four at a time with SSE before the exact test; what
//! only an accepted hit reads (map index, plane thickness) lies in a table of its own. Each table a beam reads is
//! laid out to cost one cache line: the block's occupied-cell box sits in the block table, each block's occupancy
//! is one line, and a block above the highest occupied block of its column is passed on a table of column heights
//! that stays in L1, without reading the block table (a beam from above crosses mostly such blocks: the Avia
//! flight 4-8% faster, docs/benchmarks.md). What sets a beam's time is neither misses nor the instruction count
//! alone (docs/benchmarks.md, 2026-11-24): cells of 8 r_map run ~7,450 instructions per Avia beam in an 8M-point
//! map against 6,760 with cells of 4 and are faster; bounding spheres over packs cut them to ~6,100 and were
//! slower. The branchy steps (block and cell DDA, the loops over set bits) weigh more than the regular SIMD
//! screening: making the DDA's step branch-free made Avia frames ~10% faster, and listing a cell's screened points
//! without a branch before testing them (in place of a loop over each pack's set bits) made hall frames ~5%
//! faster, where prefetching and a SIMD exact test did nothing or worse. A cell's points are sorted by height, so
//! a beam near horizontal, or a steep one that only clips the cell, walks only the packs within its height range
//! in the cell (4-8% faster frames in the hall and under the trees, and 5-8% more in the hall for the clipping
//! beams; a binary search for the range was slower). Each beam is marched only over the span of range where a
//! per-frame projection of the occupied cells says it can meet the map ([`bound`]): the same hits, from
//! the first cell it could hit to the last. Beams are independent, so the result does not depend on the number
//! of threads.
//!
//! `index.rs` holds the layout a beam reads ([`BeamIndex`]), `build.rs` builds it, `bound.rs` projects its
//! cells for the range bound, and `march.rs` walks one beam through it; this module runs a frame's beams. The
//! march and the bound read the index, the march reads the bound, and nothing reads the march.

mod bound;
mod build;
mod index;
mod march;

use rayon::prelude::*;

use super::ctx::Ctx;
use super::layer::Hit;
use super::occluder::Occluder;
use bound::RangeBound;
use march::{Scratch, cast};

pub use index::BeamIndex;

/// Each beam's hit: the map's through the index, or an occluder's where one is nearer (tested on the same
/// ray, computed once).
pub(super) fn render(
    ctx: &Ctx,
    index: &BeamIndex,
    occluders: &[&dyn Occluder],
) -> Vec<Option<Hit>> {
    // Hits beyond what the sensor can detect in this map are never returned; the widest disk's radius past it.
    let reach = ctx.map_reach(index.max_reflectance()) + index.disk_reach();
    let bound = RangeBound::for_frame(ctx, index, reach);
    (0..ctx.beams.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(Scratch::new, |scratch, i| {
            let ray = ctx.ray(i);
            let hit = cast(ctx, index, (bound.as_ref(), reach), ray, scratch);
            ctx.occlude_beam(ray, hit, occluders)
        })
        .collect()
}
