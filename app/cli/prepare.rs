//! `aerie prepare IN... -o map.amap`: clean scans and pack them into a map.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::export::{not_an_input, same_file, write_map};
use aerie_pipeline::filters::TransformParams;
use aerie_pipeline::filters::moving::{DEFAULT_SLICE_S, PoseSource, attach_viewpoints};
use aerie_pipeline::io::poses::PosesFormat;
use aerie_pipeline::io::{self, Format};
use aerie_pipeline::prepare::{Recipe, Stage, map_read_options, prepare};
use aerie_pipeline::report::{MapReport, PrepareSummary};
use aerie_pipeline::tiles::{TilePlan, prepare_tiled};
use aerie_pipeline::{Attribute, Cloud, Error, Progress};
use anyhow::Context;

use super::choices::{DownsampleArg, FormatArg, SorCompatArg};
use crate::errors::Hint;
use crate::progress::TerminalProgress;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scan files to prepare (merged into one map; E57 scan poses are applied).
    inputs: Vec<PathBuf>,
    /// The map to write (.amap). The report is written beside it as <name>.report.json.
    #[arg(short, long, required_unless_present = "plan_only")]
    output: Option<PathBuf>,
    /// A TOML recipe describing the whole preparation; the flags below override it.
    #[arg(long)]
    recipe: Option<PathBuf>,
    /// Map resolution r_map in metres (downsampling cell). Default 0.1.
    #[arg(long)]
    resolution: Option<f64>,
    /// Statistical outlier removal: number of neighbours.
    #[arg(long)]
    sor_k: Option<usize>,
    /// Statistical outlier removal: multiple of the standard deviation.
    #[arg(long)]
    sor_std: Option<f64>,
    /// Statistical outlier removal convention (default pcl).
    #[arg(long, ignore_case = true)]
    sor_compat: Option<SorCompatArg>,
    /// Skip statistical outlier removal.
    #[arg(long)]
    no_sor: bool,
    /// Downsampling method (default voxel-nearest).
    #[arg(long, ignore_case = true)]
    downsample: Option<DownsampleArg>,
    /// Skip downsampling (the map keeps every point; r_map still sizes footprints).
    #[arg(long)]
    no_downsample: bool,
    /// Neighbours for normals and plane thickness.
    #[arg(long)]
    normals_k: Option<usize>,
    /// Bucket edge length in metres (default: chosen from density).
    #[arg(long)]
    bucket_size: Option<f32>,
    /// Keep only the points inside this box: xmin,ymin,zmin,xmax,ymax,zmax (map frame, metres).
    #[arg(long, value_parser = super::parse_numbers::<6>, allow_hyphen_values = true)]
    crop: Option<[f64; 6]>,
    /// Multiply the coordinates of the files named here by this factor as they are read: 0.3048 for a scan in
    /// feet (which `prepare` and `info` warn of), 0.001 for one in millimetres. Aerie takes coordinates as
    /// metres; the map keeps no coordinate system from scaled inputs.
    #[arg(long)]
    scale: Option<f64>,
    /// Read the inputs as this format instead of guessing from their extension.
    #[arg(long, ignore_case = true)]
    format: Option<FormatArg>,
    /// Remove what moved while the scans were taken (people, vehicles, the operator) by the free space the scans
    /// saw: adds the filters.moving stage before outlier removal and downsampling. It needs where each point was seen from: scans
    /// that carry their pose (E57 scan poses, a PCD VIEWPOINT per file), or --poses.
    #[arg(long)]
    remove_moving: bool,
    /// Sensor poses for --remove-moving (world_from_sensor): a TUM trajectory (t x y z qx qy qz qw), KITTI poses
    /// (12 numbers a line) or a balm poses.csv. Matched to the points by LAS point_source_id (a poses.csv by the
    /// number in each line's file name, TUM/KITTI by line from 0), by per-point time (LAS gps_time, a PCD/PLY
    /// time field: a SLAM map cut into --time-slice slices) or one pose per input file in the order given.
    #[arg(long, value_name = "FILE")]
    poses: Option<PathBuf>,
    /// Layout of the --poses file. Default: guessed, .csv is balm's, else 8 numbers a line TUM, 12 KITTI.
    #[arg(long, ignore_case = true)]
    poses_format: Option<PosesFormatArg>,
    /// Seconds of a time slice when a map with per-point time is matched to a --poses trajectory: each slice is
    /// seen from the trajectory at its time.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SLICE_S)]
    time_slice: f64,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
    /// Prepare tile by tile on a grid of NxM tiles covering the inputs (e.g. 3x3): each neighbourhood stage
    /// sees one tile and its halo, and the map is the same, byte for byte, as without (docs/architecture.md,
    /// "Tiled prepare"). Runs outlier removal, voxel-nearest downsampling and normals only.
    #[arg(long, value_parser = parse_tiles, conflicts_with = "plan")]
    tiles: Option<[u32; 2]>,
    /// Prepare tile by tile under this tile plan (a PLAN.json that --plan-only wrote).
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Write the tile plan for --tiles (default 2x2) to this file (PLAN.json) and stop: no map is prepared.
    #[arg(long, conflicts_with = "plan")]
    plan_only: Option<PathBuf>,
}

/// `NxM` (tiles along x and y), each from 1 to 1024.
fn parse_tiles(s: &str) -> Result<[u32; 2], String> {
    let bad = || format!("{s:?} is not NxM tiles (e.g. 3x3), each 1 to 1024");
    let (a, b) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let n = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=1024).contains(n))
    };
    Ok([n(a).ok_or_else(bad)?, n(b).ok_or_else(bad)?])
}

/// The tile plan the flags ask for, if any: read from --plan, or made for --tiles / --plan-only.
fn tile_plan(
    args: &Args,
    inputs: &[(Cloud, Option<TransformParams>)],
    recipe: &Recipe,
) -> anyhow::Result<Option<TilePlan>> {
    if let Some(p) = &args.plan {
        let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
        return Ok(Some(TilePlan::from_json(&text, p)?));
    }
    if args.tiles.is_none() && args.plan_only.is_none() {
        return Ok(None);
    }
    let tiles = args.tiles.unwrap_or([2, 2]);
    Ok(Some(TilePlan::for_inputs(
        inputs,
        recipe.resolution_m,
        tiles,
    )?))
}

/// `--plan-only`: write the plan through a temporary file and a rename (removed on error and on Ctrl-C).
fn write_plan(plan: &TilePlan, path: &Path) -> anyhow::Result<()> {
    let json = plan.to_json()?;
    aerie_pipeline::io::atomic::write_atomic(path, |f| {
        std::io::Write::write_all(f, json.as_bytes())
            .map_err(aerie_pipeline::io::atomic::io_err(path))
    })?;
    Ok(())
}

/// The layout of a `--poses` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PosesFormatArg {
    /// `timestamp tx ty tz qx qy qz qw` a line.
    Tum,
    /// 12 numbers a line: `[R | t]` row by row.
    Kitti,
    /// `file,stamp_s,tx,ty,tz,r00..r22` with a header line.
    #[value(alias = "csv")]
    Balm,
}

impl From<PosesFormatArg> for PosesFormat {
    fn from(f: PosesFormatArg) -> PosesFormat {
        match f {
            PosesFormatArg::Tum => PosesFormat::Tum,
            PosesFormatArg::Kitti => PosesFormat::Kitti,
            PosesFormatArg::Balm => PosesFormat::BalmCsv,
        }
    }
}

/// The recipe from the file (or the default) with the flags applied.
fn recipe_from(args: &Args) -> anyhow::Result<Recipe> {
    let mut recipe = match &args.recipe {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
            Recipe::from_toml(&text, p)?
        }
        None => Recipe::default(),
    };
    if let Some(r) = args.resolution {
        // A recipe stored in a map repeats its resolution in the downsampling stage: the flag sets both.
        if recipe.filters.downsample.resolution_m == recipe.resolution_m {
            recipe.filters.downsample.resolution_m = r;
        }
        recipe.resolution_m = r;
    }
    if let Some(k) = args.sor_k {
        recipe.filters.sor.k = k;
    }
    if let Some(m) = args.sor_std {
        recipe.filters.sor.std_ratio = m;
    }
    if let Some(c) = args.sor_compat {
        recipe.filters.sor.compat = c.into();
    }
    if let Some(m) = args.downsample {
        recipe.filters.downsample.method = m.into();
    }
    if let Some(k) = args.normals_k {
        recipe.features.normals.k = k;
    }
    if let Some(l) = args.bucket_size {
        recipe.bucket_size_m = Some(l);
    }
    if args.no_sor {
        recipe.stages.retain(|s| *s != Stage::Sor);
    }
    if args.no_downsample {
        recipe.stages.retain(|s| *s != Stage::Downsample);
    }
    if let Some(c) = &args.crop {
        recipe.filters.crop.min = [c[0], c[1], c[2]];
        recipe.filters.crop.max = [c[3], c[4], c[5]];
        if !recipe.stages.contains(&Stage::Crop) {
            recipe.stages.insert(0, Stage::Crop);
        }
    }
    if args.remove_moving && !recipe.stages.contains(&Stage::Moving) {
        // After cropping and transforming, before the stages that drop points (the carving wants every ray,
        // and outlier removal then takes what is left of a moving object), else last.
        let at = recipe
            .stages
            .iter()
            .position(|s| !matches!(s, Stage::Crop | Stage::Transform))
            .unwrap_or(recipe.stages.len());
        recipe.stages.insert(at, Stage::Moving);
    }
    recipe.validate()?;
    Ok(recipe)
}

/// The `--poses` file when the recipe removes moving things (an error when it is given for nothing).
fn pose_source(args: &Args, recipe: &Recipe) -> anyhow::Result<Option<PoseSource>> {
    let moving = recipe.stages.contains(&Stage::Moving);
    let Some(path) = &args.poses else {
        return Ok(None);
    };
    if !moving {
        return Err(super::BadInput(
            "--poses is used to remove moving things: add --remove-moving (or filters.moving to the recipe's \
             stages)"
                .into(),
        )
        .into());
    }
    let format = args.poses_format.map(PosesFormat::from);
    Ok(Some(PoseSource::read(path, format, args.time_slice)?))
}

/// Each input's scans with their poses, for the filters.moving stage; a missing pose gets the flags as a hint.
fn attach_poses(
    inputs: &mut [(Cloud, Option<TransformParams>)],
    poses: Option<&PoseSource>,
) -> anyhow::Result<()> {
    let mut clouds: Vec<Cloud> = inputs.iter_mut().map(|(c, _)| std::mem::take(c)).collect();
    let done = attach_viewpoints(&mut clouds, poses);
    for ((c, _), back) in inputs.iter_mut().zip(clouds) {
        *c = back;
    }
    done.map_err(|e| {
        let hint = if e.is_missing_poses() {
            "give the sensor poses with --poses FILE (a TUM trajectory, KITTI poses or a balm poses.csv) and each \
             point's scan as LAS point_source_id or its time (LAS gps_time, a PCD/PLY time field), or prepare \
             files that carry their pose (E57 with scan poses, one PCD per scan with VIEWPOINT)"
        } else {
            "see `aerie prepare --help` for how --poses is matched to the points"
        };
        anyhow::Error::new(e)
            .context(Hint(hint.into()))
            .context("--remove-moving: cannot tell where the points were seen from")
    })
}

/// The inputs: the files on the command line, then the recipe's with their transforms.
fn input_files(
    args: &Args,
    recipe: &Recipe,
) -> anyhow::Result<Vec<(PathBuf, Option<TransformParams>)>> {
    let scale = match args.scale {
        Some(f) if !(f.is_finite() && f > 0.0) => {
            return Err(super::BadInput(format!(
                "--scale {f} is not a positive factor (0.3048 turns feet into metres)"
            ))
            .into());
        }
        Some(f) => Some(TransformParams::scale(f)),
        None => None,
    };
    let mut files: Vec<(PathBuf, Option<TransformParams>)> = args
        .inputs
        .iter()
        .map(|p| (p.clone(), scale.clone()))
        .collect();
    files.extend(
        recipe
            .inputs
            .iter()
            .map(|i| (i.path.clone(), i.transform.clone())),
    );
    if files.is_empty() {
        return Err(super::BadInput(
            "no input files: name them on the command line or in the recipe's inputs".into(),
        )
        .into());
    }
    Ok(files)
}

/// The output is a .amap that overwrites no input (nor does its report), and no input is given twice.
fn check_paths(args: &Args, inputs: &[&Path]) -> anyhow::Result<()> {
    if let Some(plan) = &args.plan_only {
        return Ok(not_an_input(plan, inputs)?);
    }
    let output = args.output.as_deref().unwrap_or(Path::new(""));
    super::check_output(output, inputs)?;
    not_an_input(&MapReport::path_for(output), inputs)?;
    // The same file twice would double every point (an E57's scans are one file).
    for (i, a) in inputs.iter().enumerate() {
        if let Some(b) = inputs[..i].iter().find(|b| same_file(a, b)) {
            return Err(super::BadInput(format!(
                "{} is given twice (also as {}): each input is read once",
                a.display(),
                b.display()
            ))
            .into());
        }
    }
    if output.extension().and_then(|e| e.to_str()) != Some("amap") {
        return Err(super::BadInput(format!(
            "the map must be written to a .amap file, not {}",
            output.display()
        ))
        .into());
    }
    Ok(())
}

/// Reads every input, without what the map does not store (LAS/LAZ never allocate those columns).
fn read_inputs(
    args: &Args,
    files: Vec<(PathBuf, Option<TransformParams>)>,
    progress: &TerminalProgress,
) -> anyhow::Result<Vec<(Cloud, Option<TransformParams>)>> {
    let mut inputs = Vec::with_capacity(files.len());
    // A poses file is matched to the points by their scan index or time, which a map does not keep.
    let mut options = map_read_options();
    if args.poses.is_some() {
        options.skip.retain(|a| *a != Attribute::Time);
        options.skip_extras = false;
    }
    for (path, t) in files {
        progress.stage(
            &format!(
                "read {}",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("")
            ),
            0,
        );
        let cloud = io::read(&path, args.format.map(Format::from), &options)
            .with_context(|| format!("cannot read {}", path.display()))
            .map_err(super::format_hint("--format"))?;
        super::warn_read(&cloud);
        inputs.push((cloud, t));
    }
    Ok(inputs)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let recipe = recipe_from(args)?;
    let files = input_files(args, &recipe)?;
    let paths: Vec<&Path> = files.iter().map(|(p, _)| p.as_path()).collect();
    check_paths(args, &paths)?;
    let progress = TerminalProgress::new(args.quiet);
    let poses = pose_source(args, &recipe)?;
    let mut inputs = read_inputs(args, files, &progress)?;
    if recipe.stages.contains(&Stage::Moving) {
        attach_poses(&mut inputs, poses.as_ref())?;
    }
    let points_in: usize = inputs.iter().map(|(c, _)| c.len()).sum();
    let plan = tile_plan(args, &inputs, &recipe)?;
    if let (Some(path), Some(plan)) = (&args.plan_only, &plan) {
        write_plan(plan, path)?;
        progress.finish();
        drop(progress);
        if !args.quiet {
            println!("wrote {} ({} tiles)", path.display(), plan.tile_count());
        }
        return Ok(());
    }
    let output = args.output.clone().unwrap_or_default();
    let prepared = match &plan {
        Some(plan) => prepare_tiled(inputs, &recipe, plan, &progress)?,
        None => prepare(inputs, &recipe, &progress)?,
    };
    progress.stage("write map", 0);
    let summary = PrepareSummary {
        recipe: &recipe,
        reports: &prepared.reports,
        warnings: &prepared.warnings,
        points_in,
        seconds: started.elapsed().as_secs_f64(),
    };
    let report_file = write_map(&prepared.map, &summary, &output)?;
    progress.finish();
    drop(progress);
    if !args.quiet {
        super::report::print(&prepared.reports);
        println!(
            "wrote {} ({} points from {} input points, r_map {} m) and {} in {:.1} s",
            output.display(),
            prepared.map.len(),
            points_in,
            recipe.resolution_m,
            report_file.display(),
            started.elapsed().as_secs_f64()
        );
    } else {
        for w in &prepared.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(())
}
