//! Which points a tile loads: its core voxel columns and a halo around them, and whether a point's
//! neighbourhood ball lies inside what was loaded (docs/architecture.md, "Tiled prepare").

use super::plan::{Span, TilePlan};
use crate::Cloud;
use crate::grid::world_cell;

/// Each point's voxel column and tile, and each tile's points, for one stage's cloud.
pub(crate) struct Layout {
    /// Voxel column (x, y) of each point.
    vox: Vec<[i64; 2]>,
    /// Points of each tile, ascending.
    members: Vec<Vec<u32>>,
    /// Lowest and highest voxel column holding a point.
    bounds: ([i64; 2], [i64; 2]),
}

impl Layout {
    /// The layout of `cloud`'s points under `plan`.
    pub(crate) fn new(plan: &TilePlan, cloud: &Cloud) -> Layout {
        let vox: Vec<[i64; 2]> = cloud
            .positions()
            .iter()
            .map(|&p| {
                let c = world_cell(cloud.origin, p, plan.resolution_m);
                [c[0], c[1]]
            })
            .collect();
        let mut members = vec![Vec::new(); plan.tile_count()];
        let mut lo = [i64::MAX; 2];
        let mut hi = [i64::MIN; 2];
        for (i, v) in vox.iter().enumerate() {
            members[plan.tile_of_voxel(*v)].push(i as u32);
            for a in 0..2 {
                lo[a] = lo[a].min(v[a]);
                hi[a] = hi[a].max(v[a]);
            }
        }
        Layout {
            vox,
            members,
            bounds: (lo, hi),
        }
    }

    /// The points of tile `t`, ascending.
    pub(crate) fn members(&self, t: usize) -> &[u32] {
        &self.members[t]
    }

    /// Tile `t`'s region with a halo of `halo` voxels.
    pub(crate) fn region(&self, plan: &TilePlan, t: usize, halo: u64) -> Region {
        let core = plan.core(t);
        let h = i64::try_from(halo).unwrap_or(i64::MAX);
        let spans: [Span; 2] =
            std::array::from_fn(|a| (core[a].0.saturating_sub(h), core[a].1.saturating_add(h)));
        Region {
            spans,
            // A side beyond which no point lies is as good as infinitely far.
            open_lo: std::array::from_fn(|a| spans[a].0 <= self.bounds.0[a]),
            open_hi: std::array::from_fn(|a| spans[a].1 > self.bounds.1[a]),
            resolution: plan.resolution_m,
        }
    }

    /// The points inside `region`, ascending (a sub-sequence of the stage's order).
    pub(crate) fn inside(&self, region: &Region) -> Vec<u32> {
        (0..self.vox.len() as u32)
            .filter(|&i| region.holds(self.vox[i as usize]))
            .collect()
    }

    /// Whether `region` holds every point (a tile widened this far is complete by definition).
    pub(crate) fn all_inside(&self, region: &Region) -> bool {
        region.open_lo.iter().chain(&region.open_hi).all(|&o| o)
    }
}

/// A tile's loaded voxel columns: `[lo, hi)` along x and y, and which sides no point lies beyond.
pub(crate) struct Region {
    spans: [Span; 2],
    open_lo: [bool; 2],
    open_hi: [bool; 2],
    resolution: f64,
}

impl Region {
    /// Whether voxel column `v` is loaded.
    fn holds(&self, v: [i64; 2]) -> bool {
        (0..2).all(|a| self.spans[a].0 <= v[a] && v[a] < self.spans[a].1)
    }

    /// Whether the ball of radius `reach` (metres) around the world position `w` lies inside the loaded
    /// columns, with a margin for the rounding of a point's voxel index (1e-6 m and 1e-6 of the reach).
    pub(crate) fn holds_ball(&self, w: [f64; 3], reach: f64) -> bool {
        if reach.is_nan() {
            return false;
        }
        (0..2).all(|a| {
            let pad = reach * (1.0 + 1e-6) + 1e-6 + 1e-12 * w[a].abs();
            let lo_ok = self.open_lo[a] || w[a] - self.spans[a].0 as f64 * self.resolution > pad;
            let hi_ok = self.open_hi[a] || self.spans[a].1 as f64 * self.resolution - w[a] > pad;
            lo_ok && hi_ok
        })
    }
}

/// World position of a point of `cloud` (origin + position, in f64).
pub(crate) fn world(cloud: &Cloud, p: [f32; 3]) -> [f64; 3] {
    std::array::from_fn(|a| cloud.origin[a] + f64::from(p[a]))
}
