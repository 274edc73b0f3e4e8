//! The march of one beam through the [`BeamIndex`]: the block and cell DDA, the SIMD screening of a cell's packs
//! and the exact disk tests, whose hits the beam's surface [`Layer`] resolves to one range.

use wide::{f32x4, i32x4, u32x4};

use aerie_pipeline::lanes::{COMPACT, LANES};

use super::bound::RangeBound;
use super::index::{
    BLOCK, BLOCK_CELLS, BeamIndex, Block, CLASS_MASK, CLASS_SHIFT, EMPTY, HAS_NORMAL, PLANAR, Pack,
    PackInfo, START_BITS, START_MASK, cell_of, disk_scale, normal_direction,
};
use crate::render::ctx::{Ctx, MIN_COS_PLANE};
use crate::render::disks;
use crate::render::layer::{Hit, Layer};
use crate::render::vec3::{dot, max_of, min_of};

/// Slack of the cheap distance-to-ray test that screens points before the exact disk test, as a factor on
/// the disk radius: an oriented disk's hit lies within its radius of its point, so the ray passes that close;
/// the slack absorbs rounding of the exact test (a far grazing plane hit).
const SCREEN_SLACK: f32 = 1.05;

/// Ray parameter interval inside the box `[lo, hi]`, if any.
#[inline]
fn slab(o: [f32; 3], inv: [f32; 3], lo: [f32; 3], hi: [f32; 3]) -> Option<(f32, f32)> {
    let mut t0 = f32::NEG_INFINITY;
    let mut t1 = f32::INFINITY;
    for k in 0..3 {
        let a = (lo[k] - o[k]) * inv[k];
        let b = (hi[k] - o[k]) * inv[k];
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        // NaN (ray parallel and on the slab plane) keeps the other bounds.
        if a > t0 {
            t0 = a;
        }
        if b < t1 {
            t1 = b;
        }
    }
    (t0 <= t1).then_some((t0, t1))
}

/// 3D digital differential analyser state over a grid.
struct Dda {
    cell: [i32; 3],
    step: [i32; 3],
    t_next: [f32; 3],
    t_delta: [f32; 3],
}

impl Dda {
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn new(
        o: [f32; 3],
        u: [f32; 3],
        inv: [f32; 3],
        t: f32,
        lo: [f32; 3],
        cell: [f32; 3],
        inv_cell: [f32; 3],
        dims: [i32; 3],
    ) -> Dda {
        let mut d = Dda {
            cell: [0; 3],
            step: [0; 3],
            t_next: [f32::INFINITY; 3],
            t_delta: [f32::INFINITY; 3],
        };
        for k in 0..3 {
            let p = o[k] + t * u[k];
            let c = cell_of(p, lo[k], inv_cell[k], dims[k]);
            d.cell[k] = c;
            if u[k] > 0.0 {
                d.step[k] = 1;
                d.t_next[k] = (lo[k] + (c + 1) as f32 * cell[k] - o[k]) * inv[k];
                d.t_delta[k] = cell[k] * inv[k];
            } else if u[k] < 0.0 {
                d.step[k] = -1;
                d.t_next[k] = (lo[k] + c as f32 * cell[k] - o[k]) * inv[k];
                d.t_delta[k] = -cell[k] * inv[k];
            }
        }
        d
    }

    #[inline]
    fn exit(&self) -> f32 {
        min_of(min_of(self.t_next[0], self.t_next[1]), self.t_next[2])
    }

    /// Steps to the next cell; false when it leaves the grid.
    ///
    /// Branch-free: which axis steps next is close to random along a beam, so a branch on it mispredicts
    /// often; each axis is updated under a mask instead (the same arithmetic, so the same cells).
    #[inline]
    fn advance(&mut self, dims: [i32; 3]) -> bool {
        let [t0, t1, t2] = self.t_next;
        let x = t0 <= t1 && t0 <= t2;
        let y = !x && t1 <= t2;
        let z = !x && !y;
        let mut inside = true;
        for (k, on) in [x, y, z].into_iter().enumerate() {
            let mask = -i32::from(on);
            self.cell[k] += self.step[k] & mask;
            let next = self.t_next[k] + self.t_delta[k];
            self.t_next[k] = if on { next } else { self.t_next[k] };
            inside &= (self.cell[k] as u32) < dims[k] as u32;
        }
        inside
    }
}

/// What a beam's march writes as it goes, kept per thread and reused by its beams.
pub(super) struct Scratch {
    layer: Layer,
    listed: [u32; SCREENED],
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch {
            layer: Layer::new((0.0, 0.0)),
            listed: [0; SCREENED],
        }
    }
}

/// What every disk test of one beam shares.
struct RayCtx<'a> {
    /// The index's packs and their infos, taken from their tables once per beam (each look-through of a
    /// [`HugeVec`](crate::render::pages::HugeVec) checks its mapping's cast).
    packs: &'a [Pack],
    infos: &'a [PackInfo],
    o: [f32; 3],
    u: [f32; 3],
    /// Squared disk radius of class 0 (rho^2).
    rho2: f32,
    /// Screening radius of class 0 (a little over rho).
    screen: f32,
    /// Within 30 degrees of horizontal: worth cutting a cell's packs to the beam's height range.
    flat: bool,
    planes: bool,
}

impl RayCtx<'_> {
    fn new(index: &BeamIndex, o: [f32; 3], u: [f32; 3], planes: bool) -> RayCtx<'_> {
        RayCtx {
            packs: &index.packs,
            infos: &index.infos,
            o,
            u,
            rho2: index.rho * index.rho,
            screen: SCREEN_SLACK * index.rho,
            flat: u[2].abs() < 0.5,
            planes,
        }
    }
}

/// The beam's hit up to ray parameter `t_max`, marched over the span of range in which `bound` (when there is
/// one) says it can meet the map.
pub(super) fn cast(
    ctx: &Ctx,
    index: &BeamIndex,
    (bound, t_max): (Option<&RangeBound>, f32),
    ray: ([f32; 3], [f32; 3]),
    scratch: &mut Scratch,
) -> Option<Hit> {
    let (near, far) = bound.map_or((0.0, f32::INFINITY), |b| b.at(ray.1));
    let end = far.min(t_max);
    // Most of a frame's misses end here, before the march's setup.
    if !(near <= end) {
        return None;
    }
    march(
        index,
        ray,
        (near, end),
        ctx.planes,
        ctx.layer_window(),
        scratch,
    )
}

/// The hit of the ray `(o, u)` (unit `u`) within the ray parameters `span` (the march starts and ends there;
/// a hit found in a cell it crosses counts wherever it lies before `span.1`), with plane correction when
/// `planes`, resolved by a layer of window `window` (see [`Layer::new`]).
fn march(
    index: &BeamIndex,
    (o, u): ([f32; 3], [f32; 3]),
    span: (f32, f32),
    planes: bool,
    window: (f32, f32),
    scratch: &mut Scratch,
) -> Option<Hit> {
    let inv = u.map(|c| 1.0 / c);
    let bc = BLOCK as f32 * index.cell;
    let lo = index.lo;
    let td = index.top_dims;
    let hi = [0, 1, 2].map(|k| lo[k] + td[k] as f32 * bc);
    // Beams that miss the map's box, or leave it, end here.
    let (t0, t1) = slab(o, inv, lo, hi)?;
    let t_start = t0.max(span.0).max(0.0);
    let t_end = t1.min(span.1);
    if !(t_start <= t_end) {
        return None;
    }
    let ray = RayCtx::new(index, o, u, planes);
    let Scratch {
        layer: best,
        listed,
    } = scratch;
    best.reset(window);
    let inv_bc = 1.0 / bc;
    let mut outer = Dda::new(o, u, inv, t_start, lo, [bc; 3], [inv_bc; 3], td);
    let mut t_enter = t_start;
    loop {
        let [x, y, z] = outer.cell;
        let exit = outer.exit();
        let column = (y * td[0] + x) as usize;
        let block = z as usize * index.column_top.len() + column;
        if index.column_top.get(column).is_some_and(|&t| z <= t)
            && let Some(&Block { slot, bbox }) = index.top.get(block)
            && slot != EMPTY
        {
            let blo = [
                lo[0] + x as f32 * bc,
                lo[1] + y as f32 * bc,
                lo[2] + z as f32 * bc,
            ];
            trace_block(
                &ray,
                index,
                slot as usize,
                bbox,
                blo,
                inv,
                t_enter,
                t_end,
                best,
                listed,
            );
        }
        if best.limit() <= exit || exit > t_end || !outer.advance(td) {
            break;
        }
        t_enter = exit;
    }
    best.resolve()
}

/// Marches through the cells of one block from ray parameter `t_enter`.
#[allow(clippy::too_many_arguments)]
#[inline]
fn trace_block(
    ray: &RayCtx,
    index: &BeamIndex,
    slot: usize,
    b: [u8; 6],
    blo: [f32; 3],
    inv: [f32; 3],
    t_enter: f32,
    t_end: f32,
    best: &mut Layer,
    listed: &mut [u32; SCREENED],
) {
    let dims = [BLOCK; 3];
    let c = index.cell;
    let box_lo = [0, 1, 2].map(|a| blo[a] + b[a] as f32 * c);
    let box_hi = [0, 1, 2].map(|a| blo[a] + (b[a + 3] as f32 + 1.0) * c);
    let Some((ta, tb)) = slab(ray.o, inv, box_lo, box_hi) else {
        return;
    };
    let ta = max_of(ta, t_enter);
    let tb = min_of(tb, t_end);
    // A hit that matters lies at or before the layer's limit, and one before `ta` would have been met in an
    // earlier block; the limit can only move once a nearer hit is found, so the march itself re-reads it.
    if !(ta <= min_of(tb, best.limit())) {
        return;
    }
    let mut dda = Dda::new(
        ray.o,
        ray.u,
        inv,
        ta,
        blo,
        [c; 3],
        [index.inv_cell; 3],
        dims,
    );
    let base = slot * BLOCK_CELLS;
    // A point gives a hit in a cell only within rho of the beam's path through it (the hit lies on its disk);
    // the margin covers that and the rounding of the cell's ray parameters.
    // The block's occupancy words and cell starts, looked up once for all its cells.
    let (Some(occupancy), Some(starts)) = (
        index.occupied.get(slot),
        index.starts.get(base..base + BLOCK_CELLS + 1),
    ) else {
        return;
    };
    let mut t_in = ta;
    loop {
        let [x, y, z] = dda.cell;
        let local = ((z * BLOCK + y) * BLOCK + x) as usize;
        let occupied = occupancy.0[local / 64 % 8] & (1u64 << (local % 64)) != 0;
        if occupied && let (Some(&start), Some(&end)) = (starts.get(local), starts.get(local + 1)) {
            // A beam within 30 degrees of horizontal skips the cell's packs (sorted by height) outside its
            // height range in the cell, and so does a steeper one whose range there is short (it clips the
            // cell); other steep beams walk every pack, which keeps the two tests below predictable where
            // they would cut nothing (a steep beam over flat ground). The first and last packs of the range
            // are found by walking: a binary search's scattered loads cost more than it saved.
            let (a, b, class) = if index.folded {
                (start & START_MASK, end & START_MASK, start >> START_BITS)
            } else {
                (start, end, CLASS_MASK as u32)
            };
            let r = SCREEN_SLACK * index.rho * disks::scale_of(class);
            let margin = r + 1e-3 * c;
            let z0 = ray.o[2] + t_in * ray.u[2];
            let z1 = ray.o[2] + min_of(dda.exit(), t_end) * ray.u[2];
            let (zlo, zhi) = (min_of(z0, z1) - margin, max_of(z0, z1) + margin);
            let (zlo, zhi) = if ray.flat || zhi - zlo < CUT_SPAN * c {
                (zlo, zhi)
            } else {
                (f32::NEG_INFINITY, f32::INFINITY)
            };
            // Screen four points at a time and list the few that pass (branch-free: every lane is written,
            // only those that pass advance the end), then test them exactly, in pack and lane order.
            let (a, b) = (a as usize, b as usize);
            let mut n = 0usize;
            for (at, pack) in (a..b).zip(ray.packs.get(a..b).unwrap_or(&[])) {
                // A partial last pack's padding is NaN: never skipped by the second test.
                if pack.z[0] > zhi {
                    break;
                }
                if pack.z[LANES - 1] < zlo {
                    continue;
                }
                if n > SCREENED - LANES {
                    test_listed(ray, &listed[..n], t_end, best);
                    n = 0;
                }
                // n <= SCREENED - LANES here (the flush above), so the store always fits.
                let (lanes, count) = COMPACT[screen(ray, pack) as usize & 15];
                let codes = u32x4::splat((at as u32) << 2) | u32x4::from(lanes);
                if let Some(slots) = listed.get_mut(n..n + LANES) {
                    slots.copy_from_slice(&codes.to_array());
                }
                n += count as usize;
            }
            test_listed(ray, &listed[..n], t_end, best);
        }
        let exit = dda.exit();
        if best.limit() <= exit || exit > tb || !dda.advance(dims) {
            break;
        }
        t_in = exit;
    }
}

/// A beam steeper than 30 degrees is cut to its height range in a cell when that range, widened by the
/// screening margin on both sides, spans less than this many cell edges. Measured (docs/benchmarks.md,
/// 2026-11-24): 0.75 makes hall Mid-360 frames 5-8% faster and leaves the tiled map level or a little faster;
/// cutting every beam made views from 20 m up 5-10% slower. The output does not depend on it.
const CUT_SPAN: f32 = 0.75;

/// Screened points listed per cell before their exact tests (a multiple of [`LANES`]).
const SCREENED: usize = 64;

/// Exact tests of screened points (`pack << 2 | lane`), offering their hits to `best` in order. The point's
/// offset, projection and distance to the ray are recomputed with the operations of [`screen`] in the same
/// order (the same values), which costs less than storing every lane's for the few that pass.
#[inline(always)]
fn test_listed(ray: &RayCtx, listed: &[u32], t_end: f32, best: &mut Layer) {
    for &code in listed {
        let (at, j) = ((code >> 2) as usize, (code & 3) as usize);
        let Some(pack) = ray.packs.get(at) else {
            continue;
        };
        let lane = |v: &[f32; LANES]| v.get(j).copied().unwrap_or(f32::NAN);
        let rel = [
            lane(&pack.x) - ray.o[0],
            lane(&pack.y) - ray.o[1],
            lane(&pack.z) - ray.o[2],
        ];
        let u = ray.u;
        let tp = rel[0] * u[0] + rel[1] * u[1] + rel[2] * u[2];
        let m = [rel[0] - tp * u[0], rel[1] - tp * u[1], rel[2] - tp * u[2]];
        let perp2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
        let Some(&word) = pack.normal.get(j) else {
            continue;
        };
        if let Some((t, cos, off2)) = disk_hit(ray, word, rel, tp, perp2)
            && t <= t_end
            && let Some(info) = ray.infos.get(at)
            && let (Some(&idx), Some(&gamma)) = (info.idx.get(j), info.gamma.get(j))
        {
            // The footprint weight falls to the rim of a disk of rho, whatever the disk's own radius: where
            // points are as dense as r_map their hits outweigh the rim of a neighbour's wider disk, and a beam
            // through a sparse surface, met only by wide disks (weights at the layer's floor), takes their mean.
            best.offer(t, idx, cos, 1.0 - off2 / ray.rho2, gamma);
        }
    }
}

/// Bit j set where the ray passes close enough to point j of the pack (within the screening radius of its
/// disk's radius class, not behind) for its disk: the four lanes at once (SSE; the compiler left the same code
/// per lane scalar).
#[inline(always)]
fn screen(ray: &RayCtx, pack: &Pack) -> u32 {
    let [ox, oy, oz] = ray.o.map(f32x4::splat);
    let [ux, uy, uz] = ray.u.map(f32x4::splat);
    let rx = f32x4::from(pack.x) - ox;
    let ry = f32x4::from(pack.y) - oy;
    let rz = f32x4::from(pack.z) - oz;
    // Separate multiplies and adds in the scalar order of [`test_listed`], which recomputes them for the
    // points that pass.
    let tp = rx * ux + ry * uy + rz * uz;
    let (mx, my, mz) = (rx - tp * ux, ry - tp * uy, rz - tp * uz);
    let d2 = mx * mx + my * my + mz * mz;
    // Each lane's screening radius from its disk's radius class (the arithmetic shift drags the sign bit
    // along; the mask drops it).
    let class =
        (i32x4::new(pack.normal.map(|w| w as i32)) >> CLASS_SHIFT) & i32x4::splat(CLASS_MASK);
    let r = f32x4::splat(ray.screen) * disks::scale_of_x4(f32x4::from_i32x4(class));
    let pass = d2.simd_le(r * r) & tp.simd_gt(-r);
    pass.to_bitmask()
}

/// Disk intersection of a screened point (`rel` from the ray origin, `tp` its projection on the ray, `perp2`
/// its squared distance to the ray): an oriented disk where the point lies on a plane and the ray is not
/// near-parallel to it, as wide as the sampling around the point ([`disks`]), else a disk of radius rho
/// facing the ray (the plain range).
#[inline(always)]
fn disk_hit(
    ray: &RayCtx,
    word: u32,
    rel: [f32; 3],
    tp: f32,
    perp2: f32,
) -> Option<(f32, f32, f32)> {
    let u = ray.u;
    // |n . u| / |n| for a normal direction n of any length.
    let cos_of = |n: [f32; 3], denom: f32| (denom.abs() / dot(n, n).sqrt()).min(1.0);
    if ray.planes && word & PLANAR != 0 {
        let n = normal_direction(word);
        let denom = dot(n, u);
        // |cos| >= MIN_COS_PLANE without the square root.
        if denom * denom >= MIN_COS_PLANE * MIN_COS_PLANE * dot(n, n) {
            let t = dot(n, rel) / denom;
            if !(t > 0.0) {
                return None;
            }
            let miss = [t * u[0] - rel[0], t * u[1] - rel[1], t * u[2] - rel[2]];
            let off2 = dot(miss, miss);
            let scale = disk_scale(word);
            return (off2 <= ray.rho2 * scale * scale).then(|| (t, cos_of(n, denom), off2));
        }
    }
    if !(tp > 0.0 && perp2 <= ray.rho2) {
        return None;
    }
    let cos = if word & HAS_NORMAL != 0 {
        let n = normal_direction(word);
        cos_of(n, dot(n, u))
    } else {
        1.0
    };
    Some((tp, cos, perp2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::beam::build::fold_classes;
    use crate::rng::BeamRng;
    use aerie_pipeline::map::MapView;

    /// A room (floor, ceiling, four walls) a few centimetres thick, with normals, and poles: every point listed
    /// once, in one bucket.
    fn room_map(seed: u64) -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<f32>) {
        let mut rng = BeamRng::new(seed, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut pos, mut nor, mut gam) = (Vec::new(), Vec::new(), Vec::new());
        let mut push = |p: [f32; 3], n: [f32; 3], g: f32| {
            pos.push(p);
            nor.push(n);
            gam.push(g);
        };
        for _ in 0..50_000 {
            let (a, b, th) = (rnd() * 10.0, rnd() * 8.0, (rnd() - 0.5) * 0.06);
            match (rnd() * 7.0) as u32 {
                0 => push([a, b, th], [0.0, 0.0, 1.0], 0.02),
                1 => push([a, b, 3.0 + th], [0.0, 0.0, -1.0], 0.02),
                2 => push([a, th, b * 0.375], [0.0, 1.0, 0.0], 0.02),
                3 => push([a, 8.0 + th, b * 0.375], [0.0, -1.0, 0.0], 0.02),
                4 => push([th, b, a * 0.3], [1.0, 0.0, 0.0], 0.02),
                5 => push([10.0 + th, b, a * 0.3], [-1.0, 0.0, 0.0], 0.02),
                _ => {
                    // Poles: no plane.
                    let (cx, cy) = (
                        (a as u32 % 4) as f32 * 2.0 + 1.0,
                        (b as u32 % 3) as f32 * 2.0 + 1.5,
                    );
                    let ang = rnd() * std::f32::consts::TAU;
                    push(
                        [cx + 0.05 * ang.cos(), cy + 0.05 * ang.sin(), rnd() * 3.0],
                        [ang.cos(), ang.sin(), 0.0],
                        f32::INFINITY,
                    );
                }
            }
        }
        (pos, nor, gam)
    }

    /// The beam index of [`room_map`], the whole room in one bucket.
    fn room_index(seed: u64) -> BeamIndex {
        let (positions, normals, gamma) = room_map(seed);
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for p in &positions {
            for a in 0..3 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        let buckets = [aerie_pipeline::map::Bucket {
            key: 0,
            first: 0,
            count: positions.len() as u32,
            min: lo,
            max: hi,
        }];
        BeamIndex::build(&MapView {
            origin: [0.0; 3],
            resolution: 0.1,
            bucket_size: 20.0,
            buckets: &buckets,
            positions: &positions,
            normals: Some(&normals),
            gamma: Some(&gamma),
            spacing: None,
            surface_offset: None,
            reflectance: None,
        })
    }

    /// An index too large to fold the radius classes into its cell starts (2^28 packs or more) keeps them
    /// whole and screens every cell with the widest class: the same hits as the folded index.
    #[test]
    fn unfolded_cell_starts_find_the_same_hits() {
        let folded = room_index(7);
        let mut whole = room_index(7);
        assert!(folded.folded);
        for s in whole.starts.iter_mut() {
            *s &= START_MASK;
        }
        whole.folded = false;
        let (small, _) = fold_classes(vec![0, 4, START_MASK], &[1, 2]);
        assert_eq!(small, [1 << START_BITS, 4 | 2 << START_BITS, START_MASK]);
        assert_eq!(
            fold_classes(vec![0, START_MASK + 1], &[3]),
            (vec![0, START_MASK + 1], false)
        );
        let mut rng = BeamRng::new(5, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let mut scratch = Scratch::new();
        let mut hits = 0;
        for _ in 0..1000 {
            let o = [1.0 + rnd() * 8.0, 1.0 + rnd() * 6.0, 0.3 + rnd() * 2.4];
            let z = rnd() * 2.0 - 1.0;
            let a = rnd() * std::f32::consts::TAU;
            let h = (1.0 - z * z).sqrt();
            let u = [h * a.cos(), h * a.sin(), z];
            let window = (2.0, 0.1);
            let expected = march(&folded, (o, u), (0.0, 100.0), true, window, &mut scratch);
            let got = march(&whole, (o, u), (0.0, 100.0), true, window, &mut scratch);
            assert_eq!(got, expected, "from {o:?} along {u:?}");
            hits += usize::from(got.is_some());
        }
        assert!(hits > 900, "{hits} of 1000 beams hit the room");
    }

    /// Every beam's hit through the march equals the hit of a layer offered every point of the index: the
    /// march's early exit and its cuts (empty blocks and cells, packs outside the height range of a flat beam
    /// or of a steep one that clips a cell) never drop a hit that matters.
    #[test]
    fn the_march_finds_what_testing_every_point_finds() {
        let index = room_index(7);
        // The random sampling leaves parts of the walls sparser than r_map: some disks are wider.
        assert!(index.starts.iter().any(|&s| s >> START_BITS > 0));
        let mut rng = BeamRng::new(11, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut hits, mut flat) = (0, 0);
        for i in 0..3000 {
            let o = [1.0 + rnd() * 8.0, 1.0 + rnd() * 6.0, 0.3 + rnd() * 2.4];
            // Half the beams within 30 degrees of horizontal, where the height cut applies.
            let z = if i % 2 == 0 {
                (rnd() - 0.5) * 0.9
            } else {
                rnd() * 2.0 - 1.0
            };
            let a = rnd() * std::f32::consts::TAU;
            let h = (1.0 - z * z).sqrt();
            let u = [h * a.cos(), h * a.sin(), z];
            let window = (2.0, 0.1);
            for planes in [true, false] {
                let marched = march(
                    &index,
                    (o, u),
                    (0.0, 100.0),
                    planes,
                    window,
                    &mut Scratch::new(),
                );
                let ray = RayCtx::new(&index, o, u, planes);
                let mut every = Layer::new(window);
                let mut listed = Vec::new();
                for (at, pack) in index.packs.iter().enumerate() {
                    let mask = screen(&ray, pack);
                    listed.extend(
                        (0..LANES as u32)
                            .filter(|j| mask >> j & 1 != 0)
                            .map(|j| (at as u32) << 2 | j),
                    );
                }
                test_listed(&ray, &listed, 100.0, &mut every);
                assert_eq!(
                    marched,
                    every.resolve(),
                    "beam {i} from {o:?} along {u:?}, planes {planes}"
                );
                hits += usize::from(marched.is_some());
                flat += usize::from(ray.flat);
            }
        }
        // The rays start inside a closed room (randomly sampled, so with a few holes): nearly all hit, and
        // both kinds of beam were tried.
        assert!(hits > 5500, "{hits}");
        assert!(flat > 2000 && flat < 5000, "{flat}");
    }

    /// A beam marched over the span the range bound gives finds what it finds marched from its origin: from
    /// inside the room (every beam hits) and from above and beside it (many miss, and their spans are empty;
    /// 2 m from a wall, only a short reach gets there),
    /// with beams leaving anywhere within the bound's spread, the near blocks projected cell by cell or every
    /// block whole, and blocks beyond a short reach left out.
    #[test]
    fn a_march_over_the_bounded_span_finds_what_the_whole_march_finds() {
        let index = room_index(3);
        let mut rng = BeamRng::new(5, 0, 0);
        let mut rnd = move || rng.uniform_open0() as f32;
        let (mut cut, mut empty, mut hits) = (0, 0, 0);
        let origins = [
            [5.0, 4.0, 1.5],
            [2.0, 6.5, 2.5],
            [5.0, 4.0, 8.0],
            [-6.0, 3.0, 1.0],
            [-2.0, 4.0, 1.5],
        ];
        for (k, centre) in origins.into_iter().enumerate() {
            for (spread, cells_within, reach) in [
                (0.0, 4.0, 100.0),
                (0.3, 4.0, 100.0),
                (0.1, 0.0, 100.0),
                (0.1, 4.0, 3.0),
            ] {
                let frame = (centre, spread, reach);
                let bound = RangeBound::build(&index, frame, 0x3f, 64, cells_within);
                let mut scratch = Scratch::new();
                for i in 0..400 {
                    // A beam origin within the spread, a direction anywhere.
                    let e = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5];
                    let l = dot(e, e).sqrt().max(1e-6);
                    let o = [0, 1, 2].map(|a| centre[a] + e[a] / l * spread * rnd());
                    let z = rnd() * 2.0 - 1.0;
                    let az = rnd() * std::f32::consts::TAU;
                    let h = (1.0 - z * z).sqrt();
                    let u = [h * az.cos(), h * az.sin(), z];
                    let whole = march(&index, (o, u), (0.0, reach), true, (2.0, 0.1), &mut scratch);
                    let (near, far) = bound.at(u);
                    let bounded = march(
                        &index,
                        (o, u),
                        (near, far.min(reach)),
                        true,
                        (2.0, 0.1),
                        &mut scratch,
                    );
                    assert_eq!(
                        whole, bounded,
                        "origin {k}, beam {i} from {o:?} along {u:?}"
                    );
                    cut += usize::from(near > 0.5);
                    empty += usize::from(!(near <= far));
                    hits += usize::from(whole.is_some());
                }
            }
        }
        // The bound cut most beams short and left some empty, and beams both hit and missed.
        assert!(
            cut > 5000 && empty > 3000 && hits > 2500 && hits < 5000,
            "{cut} {empty} {hits}"
        );
    }

    #[test]
    fn slab_hits_and_misses() {
        let inv = [1.0, f32::INFINITY, f32::INFINITY];
        let hit = slab([0.0, 0.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).unwrap();
        assert_eq!(hit, (1.0, 2.0));
        assert!(slab([0.0, 1.5, 0.5], inv, [1.0, 0.0, 0.0], [2.0, 1.0, 1.0]).is_none());
    }
}
