//! The tile plan: columns of a grid in voxel index space (docs/architecture.md, "Tiled prepare").

use serde::{Deserialize, Serialize};

use crate::filters::TransformParams;
use crate::grid::world_cell;
use crate::{Cloud, Error, Result};

/// How a map is cut into tiles: `tiles[0] x tiles[1]` columns (unbounded in z) of `tile_voxels` voxels of
/// side `resolution_m`, the first one's lowest voxel at `origin_voxel`; the outermost tiles reach to infinity,
/// so every point belongs to exactly one tile, decided from its integer voxel index. Written as `PLAN.json`;
/// [`TilePlan::hash`] names it in each tile's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TilePlan {
    /// Voxel side r_map, metres (the recipe's `resolution_m`).
    pub resolution_m: f64,
    /// Voxel index (x, y) of the lowest corner of tile (0, 0): any integer (a shifted origin moves every edge).
    pub origin_voxel: [i64; 2],
    /// Tile edge in voxels, >= 1 (a multiple of bucket_size / r_map where the recipe fixes a whole ratio).
    pub tile_voxels: u64,
    /// Tiles along x and y, each >= 1.
    pub tiles: [u32; 2],
    /// First halo of outlier removal, in voxels; doubled for a tile where a point's k nearest reach past it.
    pub sor_halo_voxels: u64,
    /// First halo of the normals stage, in voxels; doubled the same way.
    pub normals_halo_voxels: u64,
}

/// A tile's voxel range along one axis, `[lo, hi)`, with `i64::MIN` / `i64::MAX` for an unbounded side.
pub(crate) type Span = (i64, i64);

impl TilePlan {
    /// A plan of `tiles` tiles covering the cloud's voxels (evenly, the grid starting `shift` voxels below the
    /// lowest one), with halos of 3 r_map (the normals' default radius) and 2 voxels for SOR.
    pub fn covering(
        cloud: &Cloud,
        resolution_m: f64,
        tiles: [u32; 2],
        shift: [i64; 2],
    ) -> Result<TilePlan> {
        check_resolution(resolution_m)?;
        let (lo, hi) = crate::grid::cell_bounds(cloud.origin, cloud.positions(), resolution_m);
        if cloud.is_empty() {
            return Err(Error::parameter("cloud", "no points to plan tiles for"));
        }
        let tiles = tiles.map(|t| t.max(1));
        let edge = (0..2)
            .map(|a| ((hi[a] - lo[a] + 1 + shift[a].max(0)) as u64).div_ceil(u64::from(tiles[a])))
            .max()
            .unwrap_or(1)
            .max(1);
        Ok(TilePlan {
            resolution_m,
            origin_voxel: [lo[0] - shift[0], lo[1] - shift[1]],
            tile_voxels: edge,
            tiles,
            sor_halo_voxels: 2,
            normals_halo_voxels: 4,
        })
    }

    /// A plan of `tiles` tiles covering the world bounds of `inputs` (each box moved by its input's
    /// transform), before any stage: [`TilePlan::covering`] for inputs not yet merged. Any plan gives the
    /// same map (the outer tiles reach to infinity); this one spreads the points over the tiles.
    pub fn for_inputs(
        inputs: &[(Cloud, Option<TransformParams>)],
        resolution_m: f64,
        tiles: [u32; 2],
    ) -> Result<TilePlan> {
        let mut lo = [f64::INFINITY; 2];
        let mut hi = [f64::NEG_INFINITY; 2];
        for (cloud, t) in inputs {
            let Some((a, b)) = cloud.bounds() else {
                continue;
            };
            let m = t.as_ref().map(TransformParams::affine).transpose()?;
            for corner in 0..8 {
                let c = [0, 1, 2].map(|k| if corner >> k & 1 == 0 { a[k] } else { b[k] });
                let w = match &m {
                    Some(m) => {
                        let q = m * nalgebra::Point3::new(c[0], c[1], c[2]);
                        [q.x, q.y]
                    }
                    None => [c[0], c[1]],
                };
                for k in 0..2 {
                    lo[k] = lo[k].min(w[k]);
                    hi[k] = hi[k].max(w[k]);
                }
            }
        }
        let mut cloud = Cloud::from_positions([0.0; 3], Vec::new());
        if lo[0].is_finite() {
            cloud = Cloud::from_positions(
                [lo[0], lo[1], 0.0],
                vec![
                    [0.0; 3],
                    [(hi[0] - lo[0]) as f32, (hi[1] - lo[1]) as f32, 0.0],
                ],
            );
        }
        TilePlan::covering(&cloud, resolution_m, tiles, [0, 0])
    }

    /// Check the plan's own values (a plan read from a file may hold anything).
    pub fn validate(&self) -> Result<()> {
        check_resolution(self.resolution_m)?;
        if self.tile_voxels == 0 || self.tile_voxels > 1 << 40 {
            return Err(Error::parameter(
                "tile_voxels",
                format!("{} is not a tile edge (1 to 2^40 voxels)", self.tile_voxels),
            ));
        }
        if self.tiles.contains(&0) || self.tile_count() > 1 << 20 {
            return Err(Error::parameter(
                "tiles",
                format!("{:?} is not a tile count (1 to 2^20 tiles)", self.tiles),
            ));
        }
        Ok(())
    }

    /// Number of tiles.
    pub fn tile_count(&self) -> usize {
        self.tiles[0] as usize * self.tiles[1] as usize
    }

    /// The tile holding voxel column `v` (x, y): tiles are numbered x fastest.
    pub fn tile_of_voxel(&self, v: [i64; 2]) -> usize {
        let along = |a: usize| {
            let w = self.tile_voxels as i128;
            let t = (i128::from(v[a]) - i128::from(self.origin_voxel[a])).div_euclid(w);
            t.clamp(0, i128::from(self.tiles[a]) - 1) as usize
        };
        along(1) * self.tiles[0] as usize + along(0)
    }

    /// The tile holding a point of `cloud` at position `p`.
    pub fn tile_of(&self, cloud: &Cloud, p: [f32; 3]) -> usize {
        let c = world_cell(cloud.origin, p, self.resolution_m);
        self.tile_of_voxel([c[0], c[1]])
    }

    /// Tile `t`'s voxel ranges along x and y (unbounded on the plan's outer sides).
    pub(crate) fn core(&self, t: usize) -> [Span; 2] {
        let at = [t % self.tiles[0] as usize, t / self.tiles[0] as usize];
        std::array::from_fn(|a| {
            let w = self.tile_voxels as i64;
            let lo = self.origin_voxel[a] + at[a] as i64 * w;
            (
                if at[a] == 0 { i64::MIN } else { lo },
                if at[a] + 1 == self.tiles[a] as usize {
                    i64::MAX
                } else {
                    lo + w
                },
            )
        })
    }

    /// The plan as JSON, the form of `PLAN.json` (pretty, fields in declaration order: one plan, one text).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::parameter("plan", e.to_string()))
    }

    /// A plan from `PLAN.json`'s text; `name` (the file) goes into the error.
    pub fn from_json(text: &str, name: &std::path::Path) -> Result<TilePlan> {
        let plan: TilePlan = serde_json::from_str(text)
            .map_err(|e| Error::format(name, format!("line {}", e.line()), e.to_string()))?;
        plan.validate().map_err(|e| match e {
            Error::Parameter { name: key, message } => Error::format(name, key, message),
            e => e,
        })?;
        Ok(plan)
    }

    /// A hash of the plan's JSON (FNV-1a, 64 bits, hex): what a tile's manifest names so a merge refuses a
    /// tile of another plan. Not a security measure.
    pub fn hash(&self) -> Result<String> {
        Ok(format!("{:016x}", fnv1a(self.to_json()?.as_bytes())))
    }
}

fn check_resolution(r: f64) -> Result<()> {
    if !(r.is_finite() && r > 0.0) {
        return Err(Error::parameter(
            "resolution_m",
            format!("{r} is not a positive length in metres"),
        ));
    }
    Ok(())
}

/// FNV-1a over `bytes` (a 64-bit fingerprint: the workspace has no cryptographic hash, and none is needed to
/// tell plans apart).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_voxel_in_one_tile_and_json_round_trips() {
        let plan = TilePlan {
            resolution_m: 0.1,
            origin_voxel: [-7, 3],
            tile_voxels: 5,
            tiles: [3, 2],
            sor_halo_voxels: 2,
            normals_halo_voxels: 3,
        };
        for x in -30..30 {
            for y in -30..30 {
                let t = plan.tile_of_voxel([x, y]);
                let core = plan.core(t);
                assert!(core[0].0 <= x && x < core[0].1 && core[1].0 <= y && y < core[1].1);
            }
        }
        assert_eq!(plan.tile_of_voxel([-7, 3]), 0);
        assert_eq!(plan.tile_of_voxel([-2, 3]), 1);
        assert_eq!(plan.tile_of_voxel([-3, 8]), 3);
        let json = plan.to_json().unwrap();
        let back = TilePlan::from_json(&json, std::path::Path::new("PLAN.json")).unwrap();
        assert_eq!(back, plan);
        assert_eq!(back.hash().unwrap(), plan.hash().unwrap());
        let bad = json.replace("\"tile_voxels\": 5", "\"tile_voxels\": 0");
        let e = TilePlan::from_json(&bad, std::path::Path::new("PLAN.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("PLAN.json") && e.contains("tile_voxels"), "{e}");
    }
}
