//! Empty-space skipping for the beam renderer: per frame, the span of range in which each beam can meet the
//! map, so that its march starts at the first cell it could hit and ends after the last, instead of walking
//! from the sensor to the edge of the map.
//!
//! Every hit lies in the part of an occupied fine cell that its points' disks reach (kept per cell by the
//! [`BeamIndex`]). Each such box, grown by how far any beam of the frame leaves from the frame's origin
//! (beam-origin offsets, motion over the frame), is projected onto a cube map around that origin; each pixel
//! it covers keeps the nearest and the farthest distance from the origin to such a box. A beam whose direction
//! falls in a pixel meets the map only within that pixel's span, so marched over the span it finds the same
//! hits, and the frame is bit-identical to one marched from the sensor. No trigonometry: on a face, a box
//! covers the range of two ratios of its coordinates, taken at its corners.
//!
//! Why: beams that miss (to the sky, between trees) walk empty blocks to the map's edge, and every beam walks
//! the empty space before its hit; in the tiled lone_star map an OS1-128 frame's march is ~25% shorter with the
//! span, an Avia's ~10% (docs/benchmarks.md, 2026-11-29). Most of a beam's cost stays: marched from 0.3 m
//! before its hit (an oracle no bound can match), a frame still costs half, spent in the cells where a beam
//! meets its surface (their packs and exact tests, which the surface model needs). The projection costs a
//! pass over the occupied blocks within the beams' reach (cells of the near ones), so it is built only for
//! frames with enough beams ([`RangeBound::for_frame`]).

use rayon::prelude::*;

use super::index::BeamIndex;
use crate::render::ctx::Ctx;
use crate::render::vec3::{max_of, min_of};

/// Per face's major axis, its other two axes in the order of the face's (u, v) coordinates.
const OTHER: [(usize, usize); 3] = [(1, 2), (2, 0), (0, 1)];

/// Pixels per face edge: about 0.7 degrees at the face's centre, near the spacing of a dense LiDAR's beams
/// (64 measured no faster to build and coarser).
const PIXELS: usize = 128;

/// Blocks nearer than this many block edges are projected cell by cell, farther ones as the box of their
/// occupied cells. A far block's cells cost most of the projection (all cells of the tiled lone_star map: 3.3
/// ms per Avia frame) and buy little: a beam that starts at a far block's edge walks a few more cells of it.
/// Measured against 1, 2, 8 and every cell (docs/benchmarks.md, 2026-11-29).
const CELLS_WITHIN_BLOCKS: f32 = 4.0;

/// The bound is built for frames with at least this many beams per occupied block within the beams' reach:
/// it costs about a pass over those blocks (0.5 ms for the 3,102 blocks of the tiled lone_star map, Avia) and
/// saves 10-30% of each beam's march.
const MIN_BEAMS_PER_BLOCK: usize = 4;

/// Pixel-edge slack, in face coordinates (-1..1), that absorbs the rounding of the ratios.
const EPS: f32 = 1e-5;

/// The span of range, per direction from one origin, in which a beam can meet the map (a cube map: `n * n`
/// pixels on each face the beams look into, each with its nearest and farthest distance).
pub(super) struct RangeBound {
    n: usize,
    half_n: f32,
    /// Per face (`2 * axis + negative`), its place among the stored faces, or `NONE`: a direction on a face
    /// that is not stored is unbounded.
    slot: [u8; 6],
    /// Stored face, then row (v), then column (u): (nearest, farthest).
    span: Vec<[f32; 2]>,
}

const NONE: u8 = u8::MAX;

impl RangeBound {
    /// The bound for this frame's beams, marched up to `reach`, or `None` when the frame has too few beams for
    /// it to pay.
    pub fn for_frame(ctx: &Ctx, index: &BeamIndex, reach: f32) -> Option<RangeBound> {
        let beams = ctx.beams.len();
        let (origin, spread) = ctx.origin_spread();
        // Blocks beyond the beams' reach hold no hit they could return (`march::cast` ends there too).
        let blocks = NearBlocks::within(index, origin, spread, reach);
        if beams < MIN_BEAMS_PER_BLOCK * blocks.0.len() {
            return None;
        }
        // The faces the beams look into, from every 8th beam: a face left out only goes unbounded.
        let faces = (0..beams)
            .step_by(8)
            .fold(0u8, |m, i| m | 1 << face_of(ctx.ray(i).1).0);
        Some(RangeBound::project(
            index,
            &blocks,
            faces,
            PIXELS,
            CELLS_WITHIN_BLOCKS,
        ))
    }

    /// The bound for beams that leave within `spread` metres of `origin` (map-relative), reach `reach` metres
    /// and look into `faces` (bit `2 * axis + negative`), with `n` pixels per face edge, projecting cell by
    /// cell the blocks nearer than `cells_within` block edges.
    #[cfg(test)]
    pub fn build(
        index: &BeamIndex,
        (origin, spread, reach): ([f32; 3], f32, f32),
        faces: u8,
        n: usize,
        cells_within: f32,
    ) -> RangeBound {
        let blocks = NearBlocks::within(index, origin, spread, reach);
        RangeBound::project(index, &blocks, faces, n, cells_within)
    }

    /// Projects `blocks` onto the faces `faces`, `n` pixels per face edge, cell by cell those nearer than
    /// `cells_within` block edges.
    fn project(
        index: &BeamIndex,
        blocks: &NearBlocks,
        faces: u8,
        n: usize,
        cells_within: f32,
    ) -> RangeBound {
        let n = n.max(1);
        let mut slot = [NONE; 6];
        let mut stored = 0u8;
        for (f, s) in slot.iter_mut().enumerate() {
            if faces & (1 << f) != 0 {
                *s = stored;
                stored += 1;
            }
        }
        let mut bound = RangeBound {
            n,
            half_n: 0.5 * n as f32,
            slot,
            span: vec![[f32::INFINITY, f32::NEG_INFINITY]; usize::from(stored) * n * n],
        };
        let lod = cells_within * index.block_size();
        let NearBlocks(list, local) = blocks;
        // Each thread takes every n-th block: the near blocks, projected cell by cell, are most of the work and
        // lie together in block order, so runs of consecutive blocks would leave one thread with most of them.
        let parts_n = rayon::current_num_threads().clamp(1, list.len().max(1));
        let parts: Vec<Vec<[f32; 2]>> = (0..parts_n)
            .into_par_iter()
            .map(|part| {
                let mut span = bound.span.clone();
                for b in list.iter().skip(part).step_by(parts_n) {
                    // A far block is projected whole.
                    if b.near > lod {
                        bound.splat(&mut span, b.lo, b.hi, faces);
                        continue;
                    }
                    // The faces a near block's occupied box reaches: its cells need try no other.
                    let reached = (0..6)
                        .filter(|&f| {
                            faces & (1 << f) != 0 && bound.on_face(b.lo, b.hi, f).is_some()
                        })
                        .fold(0u8, |m, f| m | 1 << f);
                    if reached == 0 {
                        continue;
                    }
                    index.for_each_cell_box(b.block, b.slot, |lo, hi| {
                        let (lo, hi) = local.grown(lo, hi);
                        bound.splat(&mut span, lo, hi, reached);
                    });
                }
                span
            })
            .collect();
        // Min and max are exact, so the result does not depend on how the blocks were shared out.
        for part in parts {
            for (s, p) in bound.span.iter_mut().zip(part) {
                *s = [s[0].min(p[0]), s[1].max(p[1])];
            }
        }
        bound
    }

    /// The pixel of face coordinate `s` (-1..1).
    #[inline]
    fn pixel(&self, s: f32) -> usize {
        (((s + 1.0) * self.half_n).max(0.0) as usize).min(self.n - 1)
    }

    /// The pixels `(i0, i1, j0, j1)` (inclusive) that the box `[lo, hi]` (relative to the origin) covers on
    /// face `face`, or `None` when it covers none.
    #[inline]
    fn on_face(&self, lo: [f32; 3], hi: [f32; 3], face: usize) -> Option<[usize; 4]> {
        let a = face / 2;
        let (b, c) = OTHER[a];
        // The box's range along the face's axis, looking out of the face: positive somewhere, or the box is
        // behind the face.
        let (f0, f1) = if face % 2 == 1 {
            (-hi[a], -lo[a])
        } else {
            (lo[a], hi[a])
        };
        if !(f1 > 0.0) {
            return None;
        }
        let (r0, r1) = (1.0 / f0.max(f32::MIN_POSITIVE), 1.0 / f1);
        // A coordinate over the forward one, on the box: extremes at its corners.
        let ratio = |x0: f32, x1: f32| {
            let l = if x0 >= 0.0 { x0 * r1 } else { x0 * r0 };
            let h = if x1 >= 0.0 { x1 * r0 } else { x1 * r1 };
            (l, h)
        };
        let (u0, u1) = ratio(lo[b], hi[b]);
        let (v0, v1) = ratio(lo[c], hi[c]);
        if u0 > 1.0 || u1 < -1.0 || v0 > 1.0 || v1 < -1.0 {
            return None;
        }
        Some([
            self.pixel(u0 - EPS),
            self.pixel(u1 + EPS),
            self.pixel(v0 - EPS),
            self.pixel(v1 + EPS),
        ])
    }

    /// Widens the span of every pixel of `faces` that the box `[lo, hi]` (relative to the origin) covers by
    /// the box's nearest and farthest distances.
    fn splat(&self, span: &mut [[f32; 2]], lo: [f32; 3], hi: [f32; 3], faces: u8) {
        let reach = [0, 1, 2].map(|k| lo[k].abs().max(hi[k].abs()));
        let near = nearest(lo, hi);
        let far = (reach[0] * reach[0] + reach[1] * reach[1] + reach[2] * reach[2]).sqrt();
        let mut left = faces;
        while left != 0 {
            let face = left.trailing_zeros() as usize;
            left &= left - 1;
            let Some([i0, i1, j0, j1]) = self.on_face(lo, hi, face) else {
                continue;
            };
            let base = usize::from(self.slot[face]) * self.n;
            for j in j0..=j1 {
                let row = (base + j) * self.n;
                for s in span.get_mut(row + i0..=row + i1).unwrap_or(&mut []) {
                    *s = [min_of(s[0], near), max_of(s[1], far)];
                }
            }
        }
    }

    /// The span of range `(nearest, farthest)` in which a beam along the unit direction `u`, leaving within
    /// the build's spread of its origin, can meet the map: empty (nearest > farthest) where it meets nothing,
    /// `(0, inf)` on a face the bound does not store.
    #[inline]
    pub fn at(&self, u: [f32; 3]) -> (f32, f32) {
        let (face, a) = face_of(u);
        let f = u[a].abs();
        let slot = self.slot[face];
        if slot == NONE || !(f > 0.0) {
            return (0.0, f32::INFINITY);
        }
        let (b, c) = OTHER[a];
        let (i, j) = (self.pixel(u[b] / f), self.pixel(u[c] / f));
        match self.span.get((usize::from(slot) * self.n + j) * self.n + i) {
            Some(&[near, far]) => (near, far),
            None => (0.0, f32::INFINITY),
        }
    }
}

/// The distance from the origin to the box `[lo, hi]` (0 inside it).
#[inline]
fn nearest(lo: [f32; 3], hi: [f32; 3]) -> f32 {
    let gap = [0, 1, 2].map(|k| lo[k].max(-hi[k]).max(0.0));
    (gap[0] * gap[0] + gap[1] * gap[1] + gap[2] * gap[2]).sqrt()
}

/// Map-relative boxes seen from the frame's origin, grown by the beams' spread and by the rounding of the
/// cell boxes (quantised to 1/255 of a cell).
#[derive(Clone, Copy)]
struct Local {
    origin: [f32; 3],
    grow: f32,
}

impl Local {
    fn grown(&self, lo: [f32; 3], hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
        (
            [0, 1, 2].map(|k| lo[k] - self.origin[k] - self.grow),
            [0, 1, 2].map(|k| hi[k] - self.origin[k] + self.grow),
        )
    }
}

/// An occupied block within reach: its slot and the grown box of its occupied cells, relative to the origin.
struct NearBlock {
    block: usize,
    slot: u32,
    lo: [f32; 3],
    hi: [f32; 3],
    near: f32,
}

/// The occupied blocks within reach of a frame's beams, and how their boxes were placed.
struct NearBlocks(Vec<NearBlock>, Local);

impl NearBlocks {
    /// The blocks of `index` nearer than `reach` to beams leaving within `spread` of `origin`.
    fn within(index: &BeamIndex, origin: [f32; 3], spread: f32, reach: f32) -> NearBlocks {
        let local = Local {
            origin,
            grow: spread.max(0.0) + 0.01 * index.cell_size() + 1e-4,
        };
        let list = index
            .occupied_blocks()
            .filter_map(|(block, slot)| {
                let (lo, hi) = index.block_box(block)?;
                let (lo, hi) = local.grown(lo, hi);
                let near = nearest(lo, hi);
                (near <= reach).then_some(NearBlock {
                    block,
                    slot,
                    lo,
                    hi,
                    near,
                })
            })
            .collect();
        NearBlocks(list, local)
    }
}

/// The cube-map face of direction `u` (`2 * axis + negative`) and its major axis.
#[inline]
fn face_of(u: [f32; 3]) -> (usize, usize) {
    let m = u.map(f32::abs);
    let a = if m[0] >= m[1] && m[0] >= m[2] {
        0
    } else if m[1] >= m[2] {
        1
    } else {
        2
    };
    (2 * a + usize::from(u[a] < 0.0), a)
}
