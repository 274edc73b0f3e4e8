//! Tiled preparation (issue 76; docs/architecture.md, "Tiled prepare"): the recipe's neighbourhood stages run
//! tile by tile, each tile with a halo wide enough for its stage, and the tiles merge into the map that
//! [`crate::prepare::prepare`] makes of the same inputs, byte for byte (stage times aside).
//!
//! - [`TilePlan`]: the tiles, on integer voxel columns (`plan.rs`);
//! - `region.rs`: which points a tile loads, and whether a point's neighbourhood lies inside them;
//! - `stages.rs`: outlier removal, downsampling and normals tile by tile;
//! - [`ExactSum`]: the order-independent sum behind the global statistics (`exact.rs`).
//!
//! Today the tiles' points are held in memory and the tiles run one after another in this process: the
//! computation is the out-of-core one (each tile sees only its region), the storage not yet.

mod exact;
mod plan;
mod region;
mod stages;

pub use exact::ExactSum;
pub use plan::TilePlan;

use crate::filters::{DownsampleMethod, TransformParams};
use crate::prepare::{self, Prepared, Recipe, Stage};
use crate::{Cloud, Error, Progress, Result, StageReport};

/// Whether the tiled prepare runs `recipe`'s stages, and if not, why (naming the stage).
pub fn check_recipe(recipe: &Recipe) -> Result<()> {
    let mut last = None;
    for (i, s) in recipe.stages.iter().enumerate() {
        let at = [Stage::Sor, Stage::Downsample, Stage::Normals]
            .iter()
            .position(|x| x == s);
        let Some(at) = at else {
            return Err(Error::parameter(
                "stages",
                format!(
                    "{s:?} cannot run tiled yet: the tiled prepare runs filters.sor, filters.downsample and \
                     features.normals, in that order"
                ),
            ));
        };
        if last.is_some_and(|l| at <= l) {
            return Err(Error::parameter(
                "stages",
                format!(
                    "stage {i} ({s:?}): the tiled prepare runs sor, downsample, normals in that order"
                ),
            ));
        }
        last = Some(at);
    }
    if !recipe.stages.contains(&Stage::Downsample) {
        return Err(Error::parameter(
            "stages",
            "the tiled prepare needs filters.downsample (its voxels are what tiles are cut along)",
        ));
    }
    if recipe.filters.downsample.method != DownsampleMethod::VoxelNearest {
        return Err(Error::parameter(
            "filters.downsample.method",
            "the tiled prepare runs voxel-nearest downsampling only (a centroid's sum follows the point order)",
        ));
    }
    Ok(())
}

/// [`prepare::prepare`] run tile by tile under `plan`: the same map (every byte but the stages' times).
///
/// # Errors
///
/// Those of [`prepare::prepare`]; a recipe [`check_recipe`] refuses; a plan whose resolution is not the
/// recipe's.
pub fn prepare_tiled(
    inputs: Vec<(Cloud, Option<TransformParams>)>,
    recipe: &Recipe,
    plan: &TilePlan,
    progress: &dyn Progress,
) -> Result<Prepared> {
    plan.validate()?;
    check_recipe(recipe)?;
    if plan.resolution_m != recipe.resolution_m {
        return Err(Error::parameter(
            "plan",
            format!(
                "its resolution {} m is not the recipe's {} m",
                plan.resolution_m, recipe.resolution_m
            ),
        ));
    }
    let mut begun = prepare::begin(inputs, recipe, progress)?;
    let recipe = begun.recipe.clone();
    let mut cloud = std::mem::take(&mut begun.cloud);
    for stage in &recipe.stages {
        crate::memory::release_free_memory();
        let report = run_stage(*stage, &mut cloud, &recipe, plan, progress)?;
        begun.reports.push(report);
        if cloud.is_empty() {
            return Err(prepare::emptied(*stage));
        }
    }
    prepare::finish(cloud, begun, progress)
}

/// One stage over the tiles, replacing `cloud` with its output (in the order the whole-cloud stage leaves,
/// up to what later stages and packing cannot tell apart: see `stages.rs`).
fn run_stage(
    stage: Stage,
    cloud: &mut Cloud,
    recipe: &Recipe,
    plan: &TilePlan,
    progress: &dyn Progress,
) -> Result<StageReport> {
    let n = cloud.len();
    match stage {
        Stage::Sor => {
            progress.stage("filters.sor", n as u64);
            let started = std::time::Instant::now();
            let mut report = StageReport::new("filters.sor", n);
            let (mask, stats) = stages::sor_tiled(cloud, plan, &recipe.filters.sor, progress)?;
            cloud.retain(&mask)?;
            crate::filters::sor::report_stats(&mut report, stats, cloud.len(), started);
            Ok(report)
        }
        Stage::Downsample => {
            progress.stage("filters.downsample", n as u64);
            let (kept, report) =
                stages::downsample_tiled(cloud, plan, &recipe.filters.downsample, progress)?;
            *cloud = cloud.select(&kept);
            Ok(report)
        }
        Stage::Normals => {
            progress.stage("features.normals", n as u64);
            stages::normals_tiled(cloud, plan, &recipe.features.normals, progress)
        }
        other => Err(Error::parameter(
            "stages",
            format!("{other:?} cannot run tiled yet"),
        )),
    }
}
