//! Downsampling to a map resolution (`filters.downsample`), docs/algorithms.md, section 6.
//!
//! The grid has cells of side `resolution_m` anchored at multiples of the resolution in the cloud's WORLD frame
//! (origin + position, computed in f64), so two runs, or two tiles of one map, put the same point in the same
//! cell whatever their origins. Points are ordered by (cell, original index) with a parallel sort of packed
//! keys; no per-point hash map is used.

use std::collections::HashMap;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{check_cancel, check_cloud};
use crate::cloud::{Cloud, ExtraValues};
use crate::error::{Error, Result};
use crate::grid::{CellRuns, Sorting, cell_bounds, sort_into_runs, world_cell};
use crate::progress::Progress;
use crate::report::StageReport;

/// How each occupied cell is reduced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DownsampleMethod {
    /// Keep the ORIGINAL point nearest each occupied cell's centre (ties: the lower position
    /// lexicographically, then the lower index); every attribute survives unchanged. CloudCompare -SS OCTREE,
    /// PDAL voxelcenternearestneighbor.
    #[default]
    VoxelNearest,
    /// One point at the mean of each cell: intensity, colour, time and float extra dimensions averaged, normals
    /// averaged and renormalised; gamma, classification, ring, return numbers and integer extra dimensions
    /// taken from the point nearest the cell centre. Open3D, PCL VoxelGrid, MARSIM.
    VoxelCentroid,
    /// A subset of the original points with no two closer than the resolution, chosen greedily in
    /// (cell, index) order. CloudCompare -SS SPATIAL.
    MinDistance,
}

/// Parameters of `filters.downsample`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DownsampleParams {
    /// "voxel-nearest", "voxel-centroid" or "min-distance". Default: "voxel-nearest".
    pub method: DownsampleMethod,
    /// Cell side (voxel methods) or minimum spacing (min-distance), metres, > 0: the map resolution r_map.
    /// Default: 0.1 (MARSIM's grid).
    pub resolution_m: f64,
}

impl Default for DownsampleParams {
    fn default() -> Self {
        DownsampleParams {
            method: DownsampleMethod::VoxelNearest,
            resolution_m: 0.1,
        }
    }
}

/// Points sorted by cell, with the cells' integer coordinates relative to the lowest cell.
///
/// 4 bytes per input point and 12 per occupied cell, after a sort of 8 bytes per point (key and index packed
/// into one u64 when they fit, [`sort_into_runs`]): this sets the stage's peak memory, so keys are mixed-radix
/// over the cloud's actual cell spans (x, then y, then z: the same order as fixed-width fields) rather than
/// wider fixed-width fields.
struct Grid {
    /// Original indices, sorted by (cell key, index).
    order: Vec<u32>,
    /// Key of each occupied cell, ascending.
    keys: Vec<u64>,
    /// Start of each occupied cell in `order`, plus `order.len()` at the end.
    starts: Vec<u32>,
    /// World integer coordinates of the lowest cell (cell `c` spans `[c r, (c + 1) r)`).
    base: [i64; 3],
    /// Cells along each axis between the lowest and the highest occupied cell.
    dims: [u64; 3],
}

impl Grid {
    /// Key of the cell at `rel` cells from the lowest one (each below `dims`).
    fn pack(&self, rel: [u64; 3]) -> u64 {
        pack_key(self.dims, rel)
    }

    fn unpack(&self, key: u64) -> [u64; 3] {
        let z = key % self.dims[2];
        let yx = key / self.dims[2];
        [yx / self.dims[1], yx % self.dims[1], z]
    }
}

fn build_grid(cloud: &Cloud, r: f64, progress: &dyn Progress) -> Result<Grid> {
    let o = cloud.origin;
    let limit = 1u64 << 62;
    let (lo, hi) = cell_bounds(o, cloud.positions(), r);
    let too_small = |what: String| {
        Error::parameter(
            "filters.downsample.resolution_m",
            format!("resolution {r} m is too small for the cloud's extent ({what})"),
        )
    };
    for k in 0..3 {
        if !(lo[k].unsigned_abs() < limit && hi[k].unsigned_abs() < limit) {
            return Err(too_small(format!("cell index beyond 2^62 along axis {k}")));
        }
    }
    let dims = [0, 1, 2].map(|k| (hi[k] - lo[k]) as u64 + 1);
    if dims[0]
        .checked_mul(dims[1])
        .and_then(|v| v.checked_mul(dims[2]))
        .is_none()
    {
        return Err(too_small(format!(
            "{} x {} x {} cells: more than 2^64",
            dims[0], dims[1], dims[2]
        )));
    }
    // A key is below dims[0] dims[1] dims[2] (checked above to fit 64 bits).
    let key_bits = u64::BITS - (dims[0] * dims[1] * dims[2] - 1).leading_zeros();
    let positions = cloud.positions();
    check_cancel(progress)?;
    let CellRuns {
        order,
        keys,
        starts,
    } = sort_into_runs(cloud.len(), key_bits, 0, Sorting::Radix, |i| {
        let cell = world_cell(o, positions[i], r);
        pack_key(dims, [0, 1, 2].map(|k| (cell[k] - lo[k]) as u64))
    });
    check_cancel(progress)?;
    Ok(Grid {
        order,
        keys,
        starts,
        base: lo,
        dims,
    })
}

/// The key of the cell `rel` cells from the lowest one in a grid of `dims` cells: x, then y, then z.
fn pack_key(dims: [u64; 3], rel: [u64; 3]) -> u64 {
    (rel[0] * dims[1] + rel[1]) * dims[2] + rel[2]
}

impl Grid {
    fn cells(&self) -> usize {
        self.starts.len() - 1
    }

    /// The original indices of the points of cell `c`, ascending.
    fn run(&self, c: usize) -> &[u32] {
        &self.order[self.starts[c] as usize..self.starts[c + 1] as usize]
    }

    /// World coordinates of the centre of the cell with key `key`.
    fn centre(&self, key: u64, r: f64) -> [f64; 3] {
        let rel = self.unpack(key);
        [
            ((self.base[0] + rel[0] as i64) as f64 + 0.5) * r,
            ((self.base[1] + rel[1] as i64) as f64 + 0.5) * r,
            ((self.base[2] + rel[2] as i64) as f64 + 0.5) * r,
        ]
    }

    /// For each cell, the original index of the point nearest its centre (ties: lower position
    /// lexicographically, then lower index, so only exact duplicates depend on input order).
    fn nearest(&self, cloud: &Cloud, r: f64) -> Vec<u32> {
        let o = cloud.origin;
        (0..self.cells())
            .into_par_iter()
            .map(|c| {
                let run = self.run(c);
                let centre = self.centre(self.keys[c], r);
                let mut best: Option<(f64, [f32; 3], u32)> = None;
                for &i in run {
                    let p = cloud.positions()[i as usize];
                    let mut d2 = 0.0;
                    for k in 0..3 {
                        let d = o[k] + p[k] as f64 - centre[k];
                        d2 += d * d;
                    }
                    let better = match &best {
                        None => true,
                        Some((bd, bp, _)) => {
                            d2 < *bd
                                || (d2 == *bd
                                    && (p[0], p[1], p[2]).partial_cmp(&(bp[0], bp[1], bp[2]))
                                        == Some(std::cmp::Ordering::Less))
                        }
                    };
                    if better {
                        best = Some((d2, p, i));
                    }
                }
                best.map_or(run[0], |b| b.2)
            })
            .collect()
    }
}

/// Downsample the cloud. The output is ordered by cell (x, then y, then z cell index) and carries every
/// attribute; scan point ranges are dropped (the points are reordered), scan poses kept. The report gives the
/// reduction ratio and warns when more than half of the points were removed.
pub fn downsample(
    cloud: &Cloud,
    params: &DownsampleParams,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport)> {
    let started = Instant::now();
    let r = params.resolution_m;
    if !(r.is_finite() && r > 0.0) {
        return Err(Error::parameter(
            "filters.downsample.resolution_m",
            format!("must be a positive number of metres, got {r}"),
        ));
    }
    let mut report = StageReport::new("filters.downsample", cloud.len());
    check_cloud(cloud)?;
    if cloud.len() > u32::MAX as usize {
        return Err(Error::parameter(
            "cloud",
            format!("{} points is more than downsampling supports", cloud.len()),
        ));
    }
    progress.stage("downsample", cloud.len() as u64);
    let out = if cloud.is_empty() {
        cloud.clone()
    } else {
        let grid = build_grid(cloud, r, progress)?;
        progress.advance(cloud.len() as u64 / 2);
        report.figure("cells", grid.cells() as f64);
        // The grid (4 bytes per input point, 12 per cell) is freed before the output cloud is allocated.
        let out = match params.method {
            DownsampleMethod::VoxelNearest => {
                let keep = grid.nearest(cloud, r);
                drop(grid);
                cloud.select(&keep)
            }
            DownsampleMethod::VoxelCentroid => centroids(cloud, &grid, r)?,
            DownsampleMethod::MinDistance => {
                let keep = min_distance(cloud, &grid, r, progress)?;
                drop(grid);
                cloud.select(&keep)
            }
        };
        progress.advance(cloud.len() as u64 - cloud.len() as u64 / 2);
        out
    };
    report.figure("resolution_m", r);
    report.figure(
        "reduction_ratio",
        if out.is_empty() {
            1.0
        } else {
            cloud.len() as f64 / out.len() as f64
        },
    );
    report.removed.push((
        format!("downsampled to {r} m ({:?})", params.method).to_lowercase(),
        cloud.len() - out.len(),
    ));
    report.finish(out.len(), started);
    Ok((out, report))
}

/// Mean of each cell (docs/algorithms.md, section 6): continuous attributes averaged, categorical ones from
/// the point nearest the centre. Sums run over the cell's points in index order, so results are
/// thread-independent. The means are written over the nearest points' values, in place.
fn centroids(cloud: &Cloud, grid: &Grid, r: f64) -> Result<Cloud> {
    let nearest = grid.nearest(cloud, r);
    let mut out = cloud.select(&nearest);
    let runs: Vec<&[u32]> = (0..grid.cells()).map(|c| grid.run(c)).collect();
    let mean_of = |run: &[u32], f: &(dyn Fn(usize) -> [f64; 3] + Sync)| -> [f64; 3] {
        let mut s = [0.0f64; 3];
        for &i in run {
            let v = f(i as usize);
            for k in 0..3 {
                s[k] += v[k];
            }
        }
        let n = run.len() as f64;
        [s[0] / n, s[1] / n, s[2] / n]
    };
    let positions = cloud.positions();
    out.positions_mut()
        .par_iter_mut()
        .zip(&runs)
        .for_each(|(o, run)| {
            let m = mean_of(run, &|i| {
                let p = positions[i];
                [p[0] as f64, p[1] as f64, p[2] as f64]
            });
            *o = [m[0] as f32, m[1] as f32, m[2] as f32];
        });
    if let (Some(o), Some(v)) = (out.intensity_mut(), cloud.intensity()) {
        o.par_iter_mut().zip(&runs).for_each(|(o, run)| {
            *o = mean_of(run, &|i| [v[i] as f64, 0.0, 0.0])[0] as f32;
        });
    }
    if let (Some(o), Some(v)) = (out.time_mut(), cloud.time()) {
        o.par_iter_mut().zip(&runs).for_each(|(o, run)| {
            *o = mean_of(run, &|i| [v[i], 0.0, 0.0])[0];
        });
    }
    if let (Some(o), Some(v)) = (out.color_mut(), cloud.color()) {
        o.par_iter_mut().zip(&runs).for_each(|(o, run)| {
            let m = mean_of(run, &|i| [v[i][0] as f64, v[i][1] as f64, v[i][2] as f64]);
            *o = [
                m[0].round() as u16,
                m[1].round() as u16,
                m[2].round() as u16,
            ];
        });
    }
    if let (Some(o), Some(v)) = (out.normals_mut(), cloud.normals()) {
        o.par_iter_mut().zip(&runs).for_each(|(o, run)| {
            let m = mean_of(run, &|i| [v[i][0] as f64, v[i][1] as f64, v[i][2] as f64]);
            let len = (m[0] * m[0] + m[1] * m[1] + m[2] * m[2]).sqrt();
            // Opposite normals cancel: no direction is better than a wrong one.
            *o = if len > 1e-6 {
                [
                    (m[0] / len) as f32,
                    (m[1] / len) as f32,
                    (m[2] / len) as f32,
                ]
            } else {
                [0.0; 3]
            };
        });
    }
    for (mut d, src) in out.take_extras().into_iter().zip(cloud.extras()) {
        if d.kind().is_float() {
            let get = |i: usize| src.values.get(i).unwrap_or(0.0);
            let means: Vec<f64> = runs
                .par_iter()
                .map(|run| mean_of(run, &|i| [get(i), 0.0, 0.0])[0])
                .collect();
            d.values = ExtraValues::from_f64(d.kind(), &means);
        }
        out.push_extra(d)?;
    }
    Ok(out)
}

/// Greedy minimum-distance subsample in (cell, index) order: a point is kept when no kept point is closer than
/// `r`. With cells of side `r`, such a point can only lie in the 27 surrounding cells.
fn min_distance(cloud: &Cloud, grid: &Grid, r: f64, progress: &dyn Progress) -> Result<Vec<usize>> {
    let r2 = r * r;
    let pos = |i: usize| {
        let p = cloud.positions()[i];
        [p[0] as f64, p[1] as f64, p[2] as f64]
    };
    let mut kept: Vec<usize> = Vec::new();
    // Occupied cell -> its range in `kept` (one entry per cell, not per point).
    let mut ranges: HashMap<u64, (usize, usize)> = HashMap::with_capacity(grid.cells());
    let mut near: Vec<[f64; 3]> = Vec::new();
    for c in 0..grid.cells() {
        if c % 1024 == 0 {
            check_cancel(progress)?;
        }
        let run = grid.run(c);
        let key = grid.keys[c];
        let rel = grid.unpack(key);
        near.clear();
        for dx in -1i64..=1 {
            for dy in -1i64..=1 {
                for dz in -1i64..=1 {
                    if dx == 0 && dy == 0 && dz == 0 {
                        continue;
                    }
                    let n = [rel[0] as i64 + dx, rel[1] as i64 + dy, rel[2] as i64 + dz];
                    if (0..3).any(|k| n[k] < 0 || n[k] as u64 >= grid.dims[k]) {
                        continue;
                    }
                    if let Some(&(a, b)) =
                        ranges.get(&grid.pack([n[0] as u64, n[1] as u64, n[2] as u64]))
                    {
                        near.extend(kept[a..b].iter().map(|&i| pos(i)));
                    }
                }
            }
        }
        let first = kept.len();
        for &i in run {
            let i = i as usize;
            let p = pos(i);
            let far = |q: &[f64; 3]| {
                let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
                d[0] * d[0] + d[1] * d[1] + d[2] * d[2] >= r2
            };
            if near.iter().all(far) && kept[first..].iter().all(|&j| far(&pos(j))) {
                kept.push(i);
            }
        }
        ranges.insert(key, (first, kept.len()));
    }
    Ok(kept)
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn grid_cloud() -> Cloud {
        // 4 x 4 x 1 points at 0.05 m spacing, offset so cells are not aligned with the origin.
        let mut positions = Vec::new();
        for i in 0..4 {
            for j in 0..4 {
                positions.push([0.01 + 0.05 * i as f32, 0.02 + 0.05 * j as f32, 0.03]);
            }
        }
        let mut c = Cloud::from_positions([100.0, 200.0, 0.0], positions);
        c.set_intensity(Some((0..16).map(|i| i as f32).collect()))
            .unwrap();
        c
    }

    #[test]
    fn voxel_nearest_keeps_originals() {
        let c = grid_cloud();
        let p = DownsampleParams {
            method: DownsampleMethod::VoxelNearest,
            resolution_m: 0.1,
        };
        let (out, r) = downsample(&c, &p, &NoProgress).unwrap();
        assert_eq!(out.len(), 4);
        for (k, q) in out.positions().iter().enumerate() {
            let i = c
                .positions()
                .iter()
                .position(|p| p == q)
                .expect("an original point");
            assert_eq!(out.intensity().unwrap()[k], i as f32);
        }
        assert!(r.warnings.iter().any(|w| w.contains("75.0%")));
    }

    #[test]
    fn voxel_centroid_averages() {
        let mut c = Cloud::from_positions(
            [0.0; 3],
            vec![[0.01, 0.01, 0.01], [0.03, 0.05, 0.07], [1.05, 0.0, 0.0]],
        );
        c.set_intensity(Some(vec![1.0, 3.0, 7.0])).unwrap();
        c.set_classification(Some(vec![2, 5, 6])).unwrap();
        c.set_normals(Some(vec![
            [0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0],
            [1.0, 0.0, 0.0],
        ]))
        .unwrap();
        let p = DownsampleParams {
            method: DownsampleMethod::VoxelCentroid,
            resolution_m: 0.1,
        };
        let (out, _) = downsample(&c, &p, &NoProgress).unwrap();
        assert_eq!(out.len(), 2);
        assert!((out.positions()[0][1] - 0.03).abs() < 1e-6);
        assert_eq!(out.intensity().unwrap()[0], 2.0);
        // Cell centre (0.05, 0.05, 0.05): point 1 is nearer (0.02, 0, 0.02) than point 0.
        assert_eq!(out.classification().unwrap()[0], 5);
        let n = out.normals().unwrap()[0];
        assert!((n[1] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    }

    #[test]
    fn min_distance_spacing() {
        let c = Cloud::from_positions(
            [0.0; 3],
            (0..100).map(|i| [i as f32 * 0.03, 0.0, 0.0]).collect(),
        );
        let p = DownsampleParams {
            method: DownsampleMethod::MinDistance,
            resolution_m: 0.1,
        };
        let (out, _) = downsample(&c, &p, &NoProgress).unwrap();
        for a in 0..out.len() {
            for b in a + 1..out.len() {
                let d = (out.positions()[a][0] - out.positions()[b][0]).abs();
                assert!(d >= 0.1 - 1e-6, "{d}");
            }
        }
        // Greedy along x at 0.03 spacing keeps every 4th point (0.12 apart): 0, 4, ..., 96.
        assert_eq!(out.len(), 25);
    }

    #[test]
    fn bad_resolution_and_empty() {
        let c = grid_cloud();
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let p = DownsampleParams {
                resolution_m: r,
                ..Default::default()
            };
            assert!(matches!(
                downsample(&c, &p, &NoProgress),
                Err(Error::Parameter { .. })
            ));
        }
        let p = DownsampleParams {
            resolution_m: 1e-14,
            ..Default::default()
        };
        assert!(matches!(
            downsample(&c, &p, &NoProgress),
            Err(Error::Parameter { .. })
        ));
        let (e, _) =
            downsample(&Cloud::default(), &DownsampleParams::default(), &NoProgress).unwrap();
        assert!(e.is_empty());
    }

    #[test]
    fn cell_keys_across_three_axes() {
        // Points in a box whose cell spans differ per axis (mixed-radix keys): min-distance must see
        // neighbours across every axis, and voxel output comes in x, then y, then z cell order.
        let mut s = 12345u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        let positions = (0..3000)
            .map(|_| [next() * 1.3, next() * 0.7, next() * 0.45])
            .collect();
        let c = Cloud::from_positions([0.0; 3], positions);
        let r = 0.1;
        let p = DownsampleParams {
            method: DownsampleMethod::MinDistance,
            resolution_m: r,
        };
        let (out, _) = downsample(&c, &p, &NoProgress).unwrap();
        let d2 = |a: [f32; 3], b: [f32; 3]| {
            (0..3)
                .map(|k| (a[k] - b[k]) as f64)
                .map(|d| d * d)
                .sum::<f64>()
        };
        for (i, &a) in out.positions().iter().enumerate() {
            for &b in &out.positions()[i + 1..] {
                assert!(d2(a, b) >= r * r - 1e-9);
            }
        }
        for &q in c.positions() {
            assert!(out.positions().iter().any(|&k| d2(q, k) < r * r + 1e-9));
        }
        let p = DownsampleParams {
            method: DownsampleMethod::VoxelNearest,
            resolution_m: r,
        };
        let (out, _) = downsample(&c, &p, &NoProgress).unwrap();
        let cell = |q: [f32; 3]| q.map(|v| (v as f64 / r).floor() as i64);
        let cells: Vec<[i64; 3]> = out.positions().iter().map(|&q| cell(q)).collect();
        assert!(cells.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn method_names_in_toml() {
        let p: DownsampleParams =
            toml::from_str("method = \"min-distance\"\nresolution_m = 0.2").unwrap();
        assert_eq!(p.method, DownsampleMethod::MinDistance);
    }
}
