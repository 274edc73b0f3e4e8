//! Which voxels of the tree are occupied and which free (docs/algorithms.md, section 34): occupied where the
//! map has a point; free along the ray from the scanner to each occupied voxel, up to the first occupied voxel
//! the ray meets, where the scanner's position is known.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::tree::{self, KEY_ZERO, Leaf};
use crate::Cloud;

/// A voxel grid of OctoMap's keys: `floor(coordinate / resolution) + 32768` on each axis.
#[derive(Clone, Copy, Debug)]
pub(super) struct Grid {
    /// The voxel's edge, metres.
    pub resolution_m: f64,
    /// Subtracted from the map's coordinates (metres, map frame): the local frame the tree is written in.
    pub shift: [f64; 3],
}

impl Grid {
    /// The key of a coordinate in the local frame, `None` outside the tree's 65536 voxels.
    fn key_1d(&self, c: f64) -> Option<u16> {
        let k = (c * (1.0 / self.resolution_m)).floor();
        let k = k + KEY_ZERO as f64;
        (0.0..65536.0).contains(&k).then_some(k as u16)
    }

    /// The key of a point of the map's frame, `None` outside the tree.
    pub fn key(&self, world: [f64; 3]) -> Option<[u16; 3]> {
        Some([
            self.key_1d(world[0] - self.shift[0])?,
            self.key_1d(world[1] - self.shift[1])?,
            self.key_1d(world[2] - self.shift[2])?,
        ])
    }

    /// The centre of a voxel, in the local frame.
    fn centre(&self, key: [u16; 3]) -> [f64; 3] {
        key.map(|k| (f64::from(k) - KEY_ZERO as f64 + 0.5) * self.resolution_m)
    }
}

/// The tree's voxel leaves, sorted by code: occupied where `cloud` has a point, free along the rays from the
/// scanners (see the module's doc). `Err(i)`: point `i` lies outside the tree's 65536 voxels an axis.
pub(super) fn leaves(cloud: &Cloud, grid: &Grid) -> Result<Vec<Leaf>, usize> {
    let keys = point_keys(cloud, grid)?;
    let mut occupied: Vec<u64> = keys.iter().map(|&k| tree::morton(k)).collect();
    occupied.sort_unstable();
    occupied.dedup();
    let free = free_voxels(cloud, grid, &keys, &occupied);
    let mut leaves: Vec<Leaf> = occupied
        .iter()
        .map(|&code| (code, true))
        .chain(free.into_iter().map(|code| (code, false)))
        .map(|(code, occupied)| Leaf {
            code,
            depth: tree::DEPTH as u8,
            occupied,
        })
        .collect();
    leaves.sort_unstable_by_key(|l| l.code);
    Ok(leaves)
}

/// Each point's voxel key; `Err(i)` for the first point outside the tree.
fn point_keys(cloud: &Cloud, grid: &Grid) -> Result<Vec<[u16; 3]>, usize> {
    (0..cloud.len())
        .into_par_iter()
        .map(|i| grid.key(cloud.world(i)).ok_or(i))
        .collect()
}

/// The scanners' positions in the local frame, and which scanner each point was seen from: its scan's own when
/// the scan's points are known (a cloud read from E57 or PCD), else the nearest scanner (a map keeps the scans'
/// poses, not their points). Empty when no scan has a pose.
fn scanners(cloud: &Cloud, grid: &Grid) -> (Vec<[f64; 3]>, Vec<u32>) {
    let posed: Vec<_> = cloud
        .meta
        .scans
        .iter()
        .filter_map(|s| s.world_from_scan.map(|p| (s, p.translation.vector)))
        .collect();
    let origins: Vec<[f64; 3]> = posed
        .iter()
        .map(|(_, t)| std::array::from_fn(|k| t[k] - grid.shift[k]))
        .collect();
    if origins.is_empty() {
        return (origins, Vec::new());
    }
    let of_point = (0..cloud.len())
        .into_par_iter()
        .map(|i| {
            if let Some(s) = posed.iter().position(|(s, _)| s.points.contains(&i)) {
                return s as u32;
            }
            let w = cloud.world(i);
            let p: [f64; 3] = std::array::from_fn(|k| w[k] - grid.shift[k]);
            nearest(&origins, p)
        })
        .collect();
    (origins, of_point)
}

/// The index of the origin nearest `p` (the first of equals).
fn nearest(origins: &[[f64; 3]], p: [f64; 3]) -> u32 {
    let d2 = |o: &[f64; 3]| (0..3).map(|k| (o[k] - p[k]).powi(2)).sum::<f64>();
    let mut best = (0, f64::INFINITY);
    for (i, o) in origins.iter().enumerate() {
        let d = d2(o);
        if d < best.1 {
            best = (i as u32, d);
        }
    }
    best.0
}

/// The free voxels' codes, sorted: along each ray from a scanner to the centre of an occupied voxel it saw.
fn free_voxels(cloud: &Cloud, grid: &Grid, keys: &[[u16; 3]], occupied: &[u64]) -> Vec<u64> {
    let (origins, of_point) = scanners(cloud, grid);
    if origins.is_empty() {
        return Vec::new();
    }
    let mut rays: Vec<(u32, u64)> = of_point
        .iter()
        .zip(keys)
        .map(|(&s, &k)| (s, tree::morton(k)))
        .collect();
    rays.sort_unstable();
    rays.dedup();
    let blocked: FxHashSet<u64> = occupied.iter().copied().collect();
    let mut free: Vec<u64> = rays
        .par_chunks(4096)
        .flat_map_iter(|chunk| {
            let mut out = Vec::new();
            for &(s, code) in chunk {
                let end = grid.centre(tree::decode_morton(code));
                march(grid, origins[s as usize], end, &blocked, &mut out);
            }
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    free.sort_unstable();
    free.dedup();
    free
}

/// Appends the codes of the voxels the segment from `origin` to `end` (local frame) crosses, from the origin's
/// voxel on, up to the first voxel in `blocked` after the origin's or the end's voxel, whichever comes first
/// (a voxel walk in the manner of OctoMap's `computeRayKeys`, Amanatides and Woo's). The origin's voxel counts
/// only when it is not blocked; nothing is added when the origin is outside the tree.
fn march(
    grid: &Grid,
    origin: [f64; 3],
    end: [f64; 3],
    blocked: &FxHashSet<u64>,
    out: &mut Vec<u64>,
) {
    let to_world = |p: [f64; 3]| std::array::from_fn(|k| p[k] + grid.shift[k]);
    let (Some(mut key), Some(key_end)) = (grid.key(to_world(origin)), grid.key(to_world(end)))
    else {
        return;
    };
    if !blocked.contains(&tree::morton(key)) {
        out.push(tree::morton(key));
    }
    let d: [f64; 3] = std::array::from_fn(|k| end[k] - origin[k]);
    let length = d.iter().map(|v| v * v).sum::<f64>().sqrt();
    if key == key_end || length == 0.0 {
        return;
    }
    let res = grid.resolution_m;
    let centre = grid.centre(key);
    let mut step = [0i32; 3];
    let mut t_max = [f64::INFINITY; 3];
    let mut t_delta = [f64::INFINITY; 3];
    for k in 0..3 {
        let dir = d[k] / length;
        if dir != 0.0 {
            step[k] = if dir > 0.0 { 1 } else { -1 };
            let border = centre[k] + f64::from(step[k]) * res / 2.0;
            t_max[k] = (border - origin[k]) / dir;
            t_delta[k] = res / dir.abs();
        }
    }
    let steps: u32 = (0..3).map(|k| key[k].abs_diff(key_end[k]) as u32).sum();
    for _ in 0..steps {
        let dim = (0..3)
            .min_by(|&a, &b| t_max[a].total_cmp(&t_max[b]))
            .unwrap_or(0);
        let next = i32::from(key[dim]) + step[dim];
        let Ok(next) = u16::try_from(next) else {
            return;
        };
        key[dim] = next;
        t_max[dim] += t_delta[dim];
        let code = tree::morton(key);
        if key == key_end || blocked.contains(&code) || t_max[dim] - t_delta[dim] > length {
            return;
        }
        out.push(code);
    }
}
