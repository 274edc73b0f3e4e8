//! The recipe's stages run tile by tile, each giving the same result as the whole-cloud stage
//! (docs/architecture.md, "Tiled prepare").

use std::time::Instant;

use super::exact::ExactSum;
use super::plan::TilePlan;
use super::region::{Layout, world};
use crate::cloud::ExtraDim;
use crate::features::NormalsParams;
use crate::features::neighbors::scatter;
use crate::features::normals::{self, PositionSum, RULES};
use crate::features::{Neighbors, spacing};
use crate::filters::sor::{self, SorParams, SorStats, Start};
use crate::filters::{DownsampleParams, downsample};
use crate::grid::world_cell;
use crate::{Cloud, Error, Progress, Result, StageReport};

/// What a tile's try found: every core point's result, or the reach (metres) a wider halo must cover.
enum Tried<R> {
    /// Every core point's neighbourhood lay inside the region.
    Done(R),
    /// Some did not: the largest of their k-th-neighbour distances found so far (an upper bound of the true
    /// one, since more points only bring neighbours nearer), infinite when fewer than k points were loaded.
    Reach(f64),
}

/// The halo (voxels) for a tile's next try: one that holds every failed point's ball found so far (so the
/// next try passes), or twice the last one when no bound is known.
fn wider(halo: u64, reach: f64, resolution_m: f64) -> u64 {
    let need = (reach / resolution_m).ceil() + 2.0;
    if need.is_finite() && need < 1e15 {
        (need as u64).max(halo + 1)
    } else {
        halo.saturating_mul(2).max(1)
    }
}

/// The largest of `reach`es, if any.
fn max_reach(acc: Option<f64>, reach: f64) -> Option<f64> {
    Some(acc.map_or(reach, |a| a.max(reach)))
}

/// Tile `t`'s points (`loaded`, ascending, holding its core) and which of them are core, with a halo of
/// `halo` voxels widened until `accept` takes every core point: `accept(loaded, core flags, region)` returns
/// the core points' results, or the reach a wider halo must cover (see [`Tried`]).
fn widen_until<R>(
    plan: &TilePlan,
    layout: &Layout,
    t: usize,
    mut halo: u64,
    mut accept: impl FnMut(&[u32], &[bool], &super::region::Region) -> Result<Tried<R>>,
) -> Result<R> {
    let core = layout.members(t);
    loop {
        let region = layout.region(plan, t, halo);
        let loaded = layout.inside(&region);
        let mut is_core = vec![false; loaded.len()];
        let mut c = 0;
        for (j, &i) in loaded.iter().enumerate() {
            if c < core.len() && core[c] == i {
                is_core[j] = true;
                c += 1;
            }
        }
        let reach = match accept(&loaded, &is_core, &region)? {
            Tried::Done(r) => return Ok(r),
            Tried::Reach(reach) => reach,
        };
        if layout.all_inside(&region) {
            return Err(Error::parameter(
                "plan",
                format!("tile {t}: neighbourhoods incomplete with every point loaded (a bug)"),
            ));
        }
        halo = wider(halo, reach, plan.resolution_m);
    }
}

/// Statistical outlier removal over the tiles of `plan`: each point's mean distance from its tile with a
/// halo, the threshold from the tiles' exact partial sums. Returns the keep mask (in `cloud`'s order) and
/// the statistics, the same as [`sor::sor_mask`]'s.
pub(crate) fn sor_tiled(
    cloud: &Cloud,
    plan: &TilePlan,
    params: &SorParams,
    progress: &dyn Progress,
) -> Result<(Vec<bool>, SorStats)> {
    let (query, warnings) = match sor::start(cloud, params)? {
        Start::KeepAll(stats) => return Ok((vec![true; cloud.len()], stats)),
        Start::Search(query, warnings) => (query, warnings),
    };
    let layout = Layout::new(plan, cloud);
    let mut d = vec![0.0f64; cloud.len()];
    let mut sums = ExactSum::new();
    for t in 0..plan.tile_count() {
        if layout.members(t).is_empty() {
            continue;
        }
        let found = widen_until(
            plan,
            &layout,
            t,
            plan.sor_halo_voxels,
            |loaded, is_core, region| {
                if loaded.len() < query.points {
                    return Ok(Tried::Reach(f64::INFINITY));
                }
                let pos: Vec<[f32; 3]> = loaded
                    .iter()
                    .map(|&i| cloud.positions()[i as usize])
                    .collect();
                let nb = Neighbors::for_knn(&pos, query.points)?;
                let res = nb.knn_root_sums_and_reach_in_cell_order(query.points, progress)?;
                let res = scatter(&res, &nb.into_order());
                let mut out = Vec::new();
                let mut failed = None;
                for (j, &(sum, kth2)) in res.iter().enumerate() {
                    if !is_core[j] {
                        continue;
                    }
                    let reach = f64::from(kth2).sqrt();
                    if !region.holds_ball(world(cloud, pos[j]), reach) {
                        failed = max_reach(failed, reach);
                    }
                    out.push((loaded[j], sum / query.divisor as f64));
                }
                Ok(failed.map_or(Tried::Done(out), Tried::Reach))
            },
        )?;
        let mut part = ExactSum::new();
        for (i, x) in found {
            d[i as usize] = x;
            part.add(sor::mean_term(params, x));
        }
        sums.merge(&part);
    }
    let nf = cloud.len() as f64;
    let mu = sums.value() / nf;
    // The spread's partial sums, tile by tile (each tile's own points), combined exactly.
    let mut spread = ExactSum::new();
    for t in 0..plan.tile_count() {
        let mut part = ExactSum::new();
        for &i in layout.members(t) {
            part.add(sor::spread_term(params, mu, d[i as usize]));
        }
        spread.merge(&part);
    }
    let sigma = sor::sigma_of(params, nf, spread.value());
    let threshold = mu + params.std_ratio * sigma;
    let mask: Vec<bool> = d
        .iter()
        .map(|&x| sor::keeps(params, x, threshold))
        .collect();
    let outliers = mask.iter().filter(|&&k| !k).count();
    Ok((
        mask,
        SorStats {
            neighbours_averaged: query.divisor,
            mu,
            sigma,
            threshold,
            outliers,
            warnings,
        },
    ))
}

/// Name of the scratch extra dimension that carries each point's index through a tile's stage.
const ID: &str = "aerie.tiles.id";

/// `cloud`'s points `ids` with their indices in an extra dimension (f64: exact below 2^53).
fn with_ids(cloud: &Cloud, ids: &[u32]) -> Result<Cloud> {
    let mut part = cloud.select(ids);
    let values: Vec<f64> = ids.iter().map(|&i| f64::from(i)).collect();
    part.push_extra(ExtraDim::new(ID, values))?;
    Ok(part)
}

/// The indices carried by [`with_ids`].
fn ids_of(cloud: &Cloud) -> Vec<u32> {
    let d = cloud.extra(ID).expect("tiles carry their ids");
    (0..cloud.len())
        .map(|i| d.values.get(i).unwrap_or(0.0) as u32)
        .collect()
}

/// Voxel-nearest downsampling tile by tile (a voxel lies in one tile, so no halo): the indices of the points
/// kept, in voxel order (x, then y, then z), and the stage's report, the same as [`downsample`]'s.
pub(crate) fn downsample_tiled(
    cloud: &Cloud,
    plan: &TilePlan,
    params: &DownsampleParams,
    progress: &dyn Progress,
) -> Result<(Vec<u32>, StageReport)> {
    let started = Instant::now();
    let layout = Layout::new(plan, cloud);
    let mut kept: Vec<([i64; 3], u32)> = Vec::new();
    for t in 0..plan.tile_count() {
        let core = layout.members(t);
        if core.is_empty() {
            continue;
        }
        let (out, _) = downsample(&with_ids(cloud, core)?, params, progress)?;
        for (i, p) in ids_of(&out).into_iter().zip(out.positions()) {
            kept.push((world_cell(cloud.origin, *p, params.resolution_m), i));
        }
    }
    kept.sort_unstable();
    let kept: Vec<u32> = kept.into_iter().map(|(_, i)| i).collect();
    let r = params.resolution_m;
    let mut report = StageReport::new("filters.downsample", cloud.len());
    report.figure("cells", kept.len() as f64);
    report.figure("resolution_m", r);
    report.figure(
        "reduction_ratio",
        cloud.len() as f64 / kept.len().max(1) as f64,
    );
    report.removed.push((
        format!("downsampled to {r} m ({:?})", params.method).to_lowercase(),
        cloud.len() - kept.len(),
    ));
    report.finish(kept.len(), started);
    Ok((kept, report))
}

/// One point's normals-stage results, gathered from its tile.
#[derive(Clone, Copy, Default)]
struct Fit {
    normal: [f32; 3],
    gamma: f32,
    rule: u8,
    curvature: f32,
    spacing: f32,
    offset: f32,
}

/// The normals stage tile by tile on `cloud` (in voxel order, as downsampling leaves it): each tile's points
/// with a halo, widened until every core point's k nearest lie inside; the centroid of "outward" from every
/// tile's exact sums. Sets the columns on `cloud` as [`crate::features::estimate_normals`] does, and puts
/// the points into that stage's order (its neighbour index's); returns the stage's report.
pub(crate) fn normals_tiled(
    cloud: &mut Cloud,
    plan: &TilePlan,
    params: &NormalsParams,
    progress: &dyn Progress,
) -> Result<StageReport> {
    let started = Instant::now();
    let n = cloud.len();
    let layout = Layout::new(plan, cloud);
    let mut centroid = PositionSum::default();
    for t in 0..plan.tile_count() {
        let mut part = PositionSum::default();
        layout
            .members(t)
            .iter()
            .for_each(|&i| part.add(cloud.positions()[i as usize]));
        centroid.merge(&part);
    }
    let centroid = centroid.mean();
    let k = params.k.min(n);
    let radius = params
        .radius_m
        .or(params.resolution_m.map(|r| (3.0 * r) as f32));
    let search_radius = radius.filter(|_| k < spacing::NEIGHBOURS);
    let mut fits = vec![Fit::default(); n];
    for t in 0..plan.tile_count() {
        if layout.members(t).is_empty() {
            continue;
        }
        let found = widen_until(
            plan,
            &layout,
            t,
            plan.normals_halo_voxels,
            |loaded, is_core, region| {
                if loaded.len() < k {
                    return Ok(Tried::Reach(f64::INFINITY));
                }
                let pos: Vec<[f32; 3]> = loaded
                    .iter()
                    .map(|&i| cloud.positions()[i as usize])
                    .collect();
                let reach = Neighbors::for_knn(&pos, k)?.knn_all(
                    k,
                    search_radius,
                    progress,
                    || (),
                    |_, _, _, near, _| match near.get(k - 1) {
                        Some(nb) => f64::from(nb.dist2).sqrt(),
                        None => search_radius.map_or(f64::INFINITY, f64::from),
                    },
                )?;
                let mut failed = None;
                for (j, &r) in reach.iter().enumerate() {
                    if is_core[j] && !region.holds_ball(world(cloud, pos[j]), r) {
                        failed = max_reach(failed, r);
                    }
                }
                if let Some(r) = failed {
                    return Ok(Tried::Reach(r));
                }
                let mut part = with_ids(cloud, loaded)?;
                let (_, rules) =
                    normals::estimate_normals_with(&mut part, params, Some(centroid), progress)?;
                Ok(Tried::Done(tile_fits(&part, &rules, &layout, t)))
            },
        )?;
        for (i, f) in found {
            fits[i as usize] = f;
        }
    }
    set_columns(cloud, params, &fits, k)?;
    let mut report = StageReport::new("features.normals", n);
    let rules: Vec<u8> = fits.iter().map(|f| f.rule).collect();
    let counts: [usize; RULES] = normals::count_rules(&rules);
    let spacings =
        (k >= spacing::NEIGHBOURS).then(|| fits.iter().map(|f| f.spacing).collect::<Vec<_>>());
    normals::fill_report(
        &mut report,
        params,
        &counts,
        spacings.as_deref(),
        crate::crs::declared(&cloud.meta),
    );
    report.finish(n, started);
    Ok(report)
}

/// The results of tile `t`'s own points from its stage's output `part` (carrying ids) and rules.
fn tile_fits(part: &Cloud, rules: &[u8], layout: &Layout, t: usize) -> Vec<(u32, Fit)> {
    let core = layout.members(t);
    let extra = |name: &str, i: usize| {
        part.extra(name)
            .and_then(|d| d.values.get(i))
            .unwrap_or(0.0) as f32
    };
    let (normals, gamma) = (part.normals().unwrap_or(&[]), part.gamma().unwrap_or(&[]));
    ids_of(part)
        .into_iter()
        .enumerate()
        .filter(|(_, i)| core.binary_search(i).is_ok())
        .map(|(j, i)| {
            let fit = Fit {
                normal: normals.get(j).copied().unwrap_or_default(),
                gamma: gamma.get(j).copied().unwrap_or_default(),
                rule: rules[j],
                curvature: extra("curvature", j),
                spacing: extra(spacing::EXTRA_NAME, j),
                offset: extra(normals::SURFACE_OFFSET, j),
            };
            (i, fit)
        })
        .collect()
}

/// The normals stage's columns on `cloud`, as [`crate::features::estimate_normals`] sets them, then its
/// order: that of a neighbour index over the positions for `k` neighbours.
fn set_columns(cloud: &mut Cloud, params: &NormalsParams, fits: &[Fit], k: usize) -> Result<()> {
    cloud.set_normals(Some(fits.iter().map(|f| f.normal).collect()))?;
    cloud.set_gamma(Some(fits.iter().map(|f| f.gamma).collect()))?;
    let column = |f: fn(&Fit) -> f32| fits.iter().map(f).collect::<Vec<f32>>();
    for (name, column) in [
        (
            "curvature",
            params.curvature.then(|| column(|f| f.curvature)),
        ),
        (
            spacing::EXTRA_NAME,
            (k >= spacing::NEIGHBOURS).then(|| column(|f| f.spacing)),
        ),
        (normals::SURFACE_OFFSET, Some(column(|f| f.offset))),
    ] {
        if let Some(column) = column {
            cloud.retain_extras(|d| d.name != name);
            cloud.push_extra(ExtraDim::new(name, column))?;
        }
    }
    let order = Neighbors::for_knn(cloud.positions(), k)?.into_order();
    *cloud = cloud.select(&order);
    Ok(())
}
