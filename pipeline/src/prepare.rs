//! A whole map preparation from one recipe: merge -> the listed stages in order -> voxel buckets -> packed map.
//!
//! A [`Recipe`] is what a TOML file (`aerie prepare --recipe prep.toml`) holds; the command line's flags
//! override its fields. The recipe used is stored inside the map and the per-stage reports are returned for
//! the report file beside it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::features::{NormalsParams, estimate_normals};
use crate::filters::{
    CropParams, DownsampleParams, RadiusParams, SorParams, TransformParams, crop, downsample,
    merge, radius_outliers, sor, transform,
};
use crate::io::{self, ReadOptions};
use crate::map::{MapSource, PackedMap};
use crate::{Attribute, Cloud, Error, Progress, Result, StageReport};

/// A stage a recipe can list, by its recipe name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// `filters.crop`: keep the points inside a box.
    #[serde(rename = "filters.crop")]
    Crop,
    /// `filters.transform`: move the whole cloud by a rigid transform.
    #[serde(rename = "filters.transform")]
    Transform,
    /// `filters.sor`: statistical outlier removal.
    #[serde(rename = "filters.sor")]
    Sor,
    /// `filters.radius`: remove points with too few neighbours within a radius.
    #[serde(rename = "filters.radius")]
    Radius,
    /// `filters.downsample`: reduce the cloud to the map resolution.
    #[serde(rename = "filters.downsample")]
    Downsample,
    /// `filters.moving`: remove what moved while the scans were taken (needs each scan's pose).
    #[serde(rename = "filters.moving")]
    Moving,
    /// `features.normals`: normals and plane thickness (gamma) from the neighbours of each point.
    #[serde(rename = "features.normals")]
    Normals,
}

/// One input file with its own placement in the map frame (applied before merging).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Input {
    /// The file to read, in the format its extension or contents name. A relative path is taken from the working
    /// directory, not from the recipe file's folder.
    pub path: PathBuf,
    /// Transform of this input into the map frame. Default: none (E57 scan poses are applied on reading).
    pub transform: Option<TransformParams>,
}

/// Parameters of the `filters.*` stages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterParams {
    /// Parameters of `filters.crop`.
    pub crop: CropParams,
    /// Parameters of `filters.transform` (the stage applied to the merged cloud; inputs have their own).
    pub transform: TransformParams,
    /// Parameters of `filters.sor`.
    pub sor: SorParams,
    /// Parameters of `filters.radius`.
    pub radius: RadiusParams,
    /// Its `resolution_m` is always the recipe's `resolution_m` (the map resolution r_map).
    pub downsample: DownsampleParams,
    /// Parameters of `filters.moving`.
    pub moving: crate::filters::MovingParams,
}

/// Parameters of the `features.*` stages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeatureParams {
    /// Its `resolution_m` defaults to the recipe's `resolution_m` (so the radius is 3 r_map).
    pub normals: NormalsParams,
}

/// A whole preparation. Every field has a default, so an empty file is a valid recipe:
/// statistical outlier removal (PCL semantics, k 16, m 2.0), voxel-nearest downsampling at 0.1 m, normals and
/// gamma from 16 neighbours within 0.3 m, automatic bucket size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Recipe {
    /// Map resolution r_map, metres: the downsampling cell, and the size of a point's footprint in the simulator.
    /// Default: 0.1 (MARSIM's grid).
    pub resolution_m: f64,
    /// Bucket edge length, metres. Default: none (chosen from density, a few thousand points per bucket).
    pub bucket_size_m: Option<f32>,
    /// Stages in the order they run. Default: ["filters.sor", "filters.downsample", "features.normals"].
    pub stages: Vec<Stage>,
    /// Files to prepare besides those named on the command line, each with an optional transform.
    pub inputs: Vec<Input>,
    /// Parameters of the `filters.*` stages (used only by the stages listed in `stages`).
    pub filters: FilterParams,
    /// Parameters of the `features.*` stages (used only by the stages listed in `stages`).
    pub features: FeatureParams,
}

impl Default for Recipe {
    fn default() -> Self {
        Recipe {
            resolution_m: 0.1,
            bucket_size_m: None,
            stages: vec![Stage::Sor, Stage::Downsample, Stage::Normals],
            inputs: Vec::new(),
            filters: FilterParams::default(),
            features: FeatureParams::default(),
        }
    }
}

impl Recipe {
    /// Parse a recipe from TOML; `name` (a file name) goes into the error.
    pub fn from_toml(text: &str, name: &std::path::Path) -> Result<Recipe> {
        let recipe: Recipe = toml::from_str(text).map_err(|e| {
            // For an unknown key the span covers the whole table; point at the key's own line instead.
            let start = e.span().map_or(0, |s| s.start.min(text.len()));
            let key_line = e.message().split('`').nth(1).and_then(|key| {
                text[start..].lines().position(|l| {
                    let l = l.trim_start();
                    l.strip_prefix(key)
                        .is_some_and(|rest| rest.trim_start().starts_with('='))
                })
            });
            let line = text[..start].matches('\n').count() + 1 + key_line.unwrap_or(0);
            let place = if e.span().is_some() {
                format!("line {line}")
            } else {
                "recipe".to_string()
            };
            Error::format(name, place, e.message().to_string())
        })?;
        // A value out of range names the recipe file and the key, as a parse error names the line.
        recipe.validate().map_err(|e| match e {
            Error::Parameter { name: key, message } => Error::format(name, key, message),
            e => e,
        })?;
        Ok(recipe)
    }

    /// The recipe as TOML, the form [`Recipe::from_toml`] reads (what the app saves as a recipe file).
    ///
    /// # Errors
    ///
    /// [`Error::Parameter`] when a value has no TOML form; the caller must not write an empty file in its place.
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).map_err(|e| Error::parameter("recipe", e.to_string()))
    }

    /// Check parameters that do not depend on the data.
    pub fn validate(&self) -> Result<()> {
        if let Some(i) = self
            .inputs
            .iter()
            .position(|i| i.path.as_os_str().is_empty())
        {
            return Err(Error::parameter(
                format!("inputs[{i}].path"),
                "is missing: every [[inputs]] table names a file",
            ));
        }
        // The map stores the resolution as f32: 1e300 is finite here and infinite there.
        if !(self.resolution_m.is_finite()
            && self.resolution_m > 0.0
            && (self.resolution_m as f32).is_finite())
        {
            return Err(Error::parameter(
                "resolution_m",
                format!(
                    "{} is not a positive length in metres (try 0.1)",
                    self.resolution_m
                ),
            ));
        }
        // The map's resolution is given once, at the top; the downsampling stage takes it from there.
        let stage = self.filters.downsample.resolution_m;
        if stage != DownsampleParams::default().resolution_m && stage != self.resolution_m {
            return Err(Error::parameter(
                "filters.downsample.resolution_m",
                format!(
                    "{stage} differs from the map's resolution_m {}: the downsampling cell is the map's \
                     resolution, set once with resolution_m at the recipe's top (or --resolution)",
                    self.resolution_m
                ),
            ));
        }
        if let Some(l) = self.bucket_size_m
            && !(l.is_finite() && l >= self.resolution_m as f32)
        {
            return Err(Error::parameter(
                "bucket_size_m",
                format!(
                    "{l} must be a length of at least the resolution {} m",
                    self.resolution_m
                ),
            ));
        }
        let normals_at = self.stages.iter().position(|s| *s == Stage::Normals);
        let down_at = self.stages.iter().rposition(|s| *s == Stage::Downsample);
        if let (Some(n), Some(d)) = (normals_at, down_at)
            && n < d
        {
            return Err(Error::parameter(
                "stages",
                "features.normals must come after filters.downsample (downsampling would discard the normals' \
                 neighbourhoods)",
            ));
        }
        Ok(())
    }
}

/// The result of a preparation: the packed map (recipe and report stored in its metadata) and the reports.
pub struct Prepared {
    /// The packed map, with the recipe and the report in its metadata; write it with `map::amap::write`.
    pub map: PackedMap,
    /// What each stage did, in order (merge when there was more than one input, the listed stages, bucketing).
    pub reports: Vec<StageReport>,
    /// Warnings of all stages, in order, for the user.
    pub warnings: Vec<String>,
}

/// The attributes a map does not store, which [`map_read_options`] skips and [`prepare`] takes out of its inputs
/// (besides every extra dimension).
pub const MAP_SKIPS: [Attribute; 4] = [
    Attribute::Time,
    Attribute::ReturnNumber,
    Attribute::NumberOfReturns,
    Attribute::Ring,
];

/// How to read a file that is to be prepared into a map: without what a map does not store ([`MAP_SKIPS`] and
/// every extra dimension), which [`prepare`] would drop on entry anyway. The LAS/LAZ reader then never allocates
/// those columns (14 bytes a point on a terrestrial LAZ scan); the names of those the file held are kept in
/// `meta.dropped`, so the map's `dropped_attributes` are the same as after a full read.
pub fn map_read_options() -> ReadOptions {
    ReadOptions {
        skip: MAP_SKIPS.to_vec(),
        skip_extras: true,
        ..ReadOptions::default()
    }
}

/// Keep only what a map stores (positions, normals, gamma, intensity, colour, class): the rest would cost memory
/// through every stage and be dropped at packing anyway. Returns the names of what the input no longer holds:
/// those skipped on reading (`meta.dropped`, see [`map_read_options`]) and those taken out here.
fn strip_for_map(cloud: &mut Cloud) -> Vec<String> {
    io::take_skipped(cloud, &map_read_options());
    cloud.meta.dropped.clone()
}

/// Prepare a map from `inputs` (each with an optional transform into the map frame) following `recipe`.
pub fn prepare(
    inputs: Vec<(Cloud, Option<TransformParams>)>,
    recipe: &Recipe,
    progress: &dyn Progress,
) -> Result<Prepared> {
    let mut begun = begin(inputs, recipe, progress)?;
    let (recipe, cloud) = (&begun.recipe, &mut begun.cloud);
    for stage in &recipe.stages {
        crate::memory::release_free_memory();
        begun
            .reports
            .push(run_stage(*stage, cloud, recipe, progress)?);
        if cloud.is_empty() {
            return Err(emptied(*stage));
        }
    }
    let cloud = std::mem::take(&mut begun.cloud);
    finish(cloud, begun, progress)
}

/// A preparation's state before its stages: the recipe as it runs, the merged cloud, the reports so far, the
/// sources and the dropped attributes. Shared by [`prepare`] and the tiled prepare (`tiles`).
pub(crate) struct Begun {
    /// The recipe as it runs ([`as_run`]).
    pub(crate) recipe: Recipe,
    /// The inputs merged and stripped to what a map stores.
    pub(crate) cloud: Cloud,
    /// The merge's report, if there was one; the stages' follow.
    pub(crate) reports: Vec<StageReport>,
    sources: Vec<MapSource>,
    dropped: Vec<String>,
}

/// Check the recipe and merge the inputs (the start of every preparation).
pub(crate) fn begin(
    inputs: Vec<(Cloud, Option<TransformParams>)>,
    recipe: &Recipe,
    progress: &dyn Progress,
) -> Result<Begun> {
    recipe.validate()?;
    let recipe = as_run(recipe);
    if inputs.is_empty() {
        return Err(Error::parameter("inputs", "no input files"));
    }
    let sources = sources_of(&inputs);
    let mut reports = Vec::new();
    let (cloud, dropped) = combine(inputs, progress, &mut reports)?;
    if cloud.is_empty() {
        let names: Vec<&str> = sources
            .iter()
            .map(|s| s.path.as_str())
            .filter(|p| !p.is_empty())
            .collect();
        return Err(Error::parameter(
            "inputs",
            if names.is_empty() {
                "the input clouds hold no points".to_string()
            } else {
                format!("{} hold no points", names.join(", "))
            },
        ));
    }
    Ok(Begun {
        recipe,
        cloud,
        reports,
        sources,
        dropped,
    })
}

/// The error when `stage` removed every point.
pub(crate) fn emptied(stage: Stage) -> Error {
    Error::parameter(
        "recipe",
        format!("stage {stage:?} removed every point; the map would be empty"),
    )
}

/// Pack the prepared `cloud` into a map and fill its metadata (the end of every preparation).
pub(crate) fn finish(cloud: Cloud, begun: Begun, progress: &dyn Progress) -> Result<Prepared> {
    let Begun {
        recipe,
        mut reports,
        sources,
        dropped,
        ..
    } = begun;
    let recipe = &recipe;
    crate::memory::release_free_memory();
    progress.stage("map.buckets", cloud.len() as u64);
    let started = std::time::Instant::now();
    let mut map =
        PackedMap::from_cloud_owned(cloud, recipe.resolution_m as f32, recipe.bucket_size_m)?;
    let mut meta = map.metadata()?;
    // Packing leaves its own time at 0 so that a map packed outside a prepare is the same bytes every run; a
    // prepare's report holds every stage's time already, and bucketing takes about a tenth of a large one.
    for r in meta.report.iter_mut().filter(|r| r.stage == "map.buckets") {
        r.seconds = started.elapsed().as_secs_f64();
    }
    reports.append(&mut meta.report);
    meta.sources = sources;
    for d in dropped {
        if !meta.dropped_attributes.contains(&d) {
            meta.dropped_attributes.push(d);
        }
    }
    meta.normal_orientation = normal_orientation(&reports);
    meta.recipe =
        Some(toml::Table::try_from(recipe).map_err(|e| Error::parameter("recipe", e.to_string()))?);
    meta.report = reports.clone();
    map.set_metadata(&meta)?;
    let warnings = reports
        .iter()
        .flat_map(|r| r.warnings.iter().cloned())
        .collect();
    Ok(Prepared {
        map,
        reports,
        warnings,
    })
}

/// The recipe as it runs (and as the map stores it): the stages' resolutions follow the map's.
fn as_run(recipe: &Recipe) -> Recipe {
    let mut recipe = recipe.clone();
    recipe.filters.downsample.resolution_m = recipe.resolution_m;
    recipe
        .features
        .normals
        .resolution_m
        .get_or_insert(recipe.resolution_m);
    recipe
}

/// Where each input came from, for the map's metadata.
fn sources_of(inputs: &[(Cloud, Option<TransformParams>)]) -> Vec<MapSource> {
    inputs
        .iter()
        .map(|(c, _)| MapSource {
            path: c
                .meta
                .source
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            format: c.meta.format.clone(),
        })
        .collect()
}

/// The inputs stripped to what a map stores and merged into one cloud (the merge's report into `reports`
/// when there was one), with the names of the attributes dropped.
fn combine(
    inputs: Vec<(Cloud, Option<TransformParams>)>,
    progress: &dyn Progress,
    reports: &mut Vec<StageReport>,
) -> Result<(Cloud, Vec<String>)> {
    let mut dropped = Vec::new();
    let mut stripped = Vec::with_capacity(inputs.len());
    for (mut c, t) in inputs {
        for d in strip_for_map(&mut c) {
            if !dropped.contains(&d) {
                dropped.push(d);
            }
        }
        stripped.push((c, t));
    }
    if stripped.len() == 1 && stripped[0].1.is_none() {
        let cloud = stripped.pop().map(|(c, _)| c).unwrap_or_default();
        return Ok((cloud, dropped));
    }
    progress.stage("merge", 0);
    let (c, r) = merge(stripped, progress)?;
    reports.push(r);
    Ok((c, dropped))
}

/// Runs one stage of the recipe on `cloud`, replacing it with the stage's output.
fn run_stage(
    stage: Stage,
    cloud: &mut Cloud,
    recipe: &Recipe,
    progress: &dyn Progress,
) -> Result<StageReport> {
    let n = cloud.len() as u64;
    let f = &recipe.filters;
    let (c, r) = match stage {
        Stage::Crop => {
            progress.stage("filters.crop", n);
            crop(cloud, &f.crop, progress)?
        }
        Stage::Transform => {
            progress.stage("filters.transform", n);
            return transform(cloud, &f.transform, progress);
        }
        Stage::Sor => {
            progress.stage("filters.sor", n);
            return sor(cloud, &f.sor, progress);
        }
        Stage::Radius => {
            progress.stage("filters.radius", n);
            radius_outliers(cloud, &f.radius, progress)?
        }
        Stage::Downsample => {
            progress.stage("filters.downsample", n);
            downsample(cloud, &f.downsample, progress)?
        }
        Stage::Moving => {
            progress.stage("filters.moving", n);
            crate::filters::remove_moving(cloud, &f.moving, progress)?
        }
        Stage::Normals => {
            progress.stage("features.normals", n);
            return estimate_normals(cloud, &recipe.features.normals, progress);
        }
    };
    *cloud = c;
    Ok(r)
}

/// How many points each orientation rule of the normals stage oriented ("up: 123, outward: 45"), if it ran.
fn normal_orientation(reports: &[StageReport]) -> Option<String> {
    reports
        .iter()
        .find(|r| r.stage == "features.normals")
        .map(|r| {
            r.figures
                .iter()
                .filter(|(k, v)| k.starts_with("oriented_") && *v > 0.0)
                .map(|(k, v)| format!("{}: {v}", k.trim_start_matches("oriented_")))
                .collect::<Vec<_>>()
                .join(", ")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_recipe_is_the_default() {
        let r = Recipe::from_toml("", std::path::Path::new("r.toml")).unwrap();
        assert_eq!(r, Recipe::default());
        let back =
            Recipe::from_toml(&r.to_toml().unwrap(), std::path::Path::new("r.toml")).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn bad_recipes_name_the_problem() {
        let p = std::path::Path::new("prep.toml");
        let e = Recipe::from_toml("resolution_m = -1.0", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("resolution_m"), "{e}");
        let e = Recipe::from_toml("[filters.sor]\nkk = 3\n", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("prep.toml") && e.contains("line 2") && e.contains("kk"),
            "{e}"
        );
        let e = Recipe::from_toml("stages = [\"features.normals\", \"filters.downsample\"]", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("after"), "{e}");
        // The map stores its resolution as f32; the downsampling cell is the map's resolution.
        let e = Recipe::from_toml("resolution_m = 1e300", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("resolution_m"), "{e}");
        let e = Recipe::from_toml("[filters.downsample]\nresolution_m = 5.0\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("differs from the map's resolution_m 0.1"), "{e}");
        assert!(
            Recipe::from_toml(
                "resolution_m = 0.2\n[filters.downsample]\nresolution_m = 0.2\n",
                p
            )
            .is_ok()
        );
    }

    /// The example recipes shipped in maps/recipes/ parse, and default.toml is the default written out.
    #[test]
    fn shipped_recipes_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../maps/recipes");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let recipe = Recipe::from_toml(&text, &path).unwrap_or_else(|e| panic!("{e}"));
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "default.toml" {
                assert_eq!(recipe, Recipe::default());
            }
            names.push(name);
        }
        names.sort();
        assert!(
            names.len() >= 3 && names.contains(&"default.toml".to_string()),
            "{names:?}"
        );
    }
}
