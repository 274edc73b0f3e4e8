//! `aerie bench prepare FILE`: each stage of a preparation timed on its own, then a whole `prepare`.

use std::path::PathBuf;
use std::time::Instant;

use aerie_pipeline::features::{NormalsParams, estimate_normals};
use aerie_pipeline::filters::{DownsampleParams, SorParams, downsample, sor};
use aerie_pipeline::io;
use aerie_pipeline::prepare::{Recipe, map_read_options, prepare};
use aerie_pipeline::{Cloud, NoProgress, StageReport};
use anyhow::Context;

use super::{median, time_runs};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scan file to prepare (any format `aerie info` reads).
    file: PathBuf,
    /// Map resolution (voxel size) in metres.
    #[arg(long, default_value_t = 0.05)]
    resolution: f64,
    /// SOR neighbours (PCL meaning).
    #[arg(long, default_value_t = 16)]
    sor_k: usize,
    /// SOR standard-deviation multiple.
    #[arg(long, default_value_t = 1.0)]
    sor_std: f64,
    /// Neighbours for normals.
    #[arg(long, default_value_t = 16)]
    normals_k: usize,
    /// Timed runs per stage (median reported).
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    repeat: usize,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    // As `aerie prepare` reads its inputs: without what a map does not store.
    let opts = map_read_options();
    let (read_s, cloud) = time_runs(args.repeat, || {
        io::read(&args.file, None, &opts)
            .with_context(|| format!("cannot read {}", args.file.display()))
    })?;
    let n = cloud.len();
    let sor_params = SorParams {
        k: args.sor_k,
        std_ratio: args.sor_std,
        ..SorParams::default()
    };
    let (sor_s, after_sor) = time_in_place(args.repeat, &cloud, |c| {
        Ok(sor(c, &sor_params, &NoProgress)?)
    })?;
    let ds_params = DownsampleParams {
        resolution_m: args.resolution,
        ..DownsampleParams::default()
    };
    let (ds_s, (down, _)) = time_runs(args.repeat, || {
        Ok(downsample(&cloud, &ds_params, &NoProgress)?)
    })?;
    let n_params = NormalsParams {
        k: args.normals_k,
        resolution_m: Some(args.resolution),
        ..NormalsParams::default()
    };
    let (normals_s, _) = time_in_place(args.repeat, &down, |c| {
        Ok(estimate_normals(c, &n_params, &NoProgress)?)
    })?;
    let mut recipe = Recipe {
        resolution_m: args.resolution,
        ..Recipe::default()
    };
    recipe.filters.sor = sor_params.clone();
    recipe.features.normals.k = args.normals_k;
    let (prepare_s, prepared) = time_runs(args.repeat, || {
        Ok(prepare(vec![(cloud.clone(), None)], &recipe, &NoProgress)?)
    })?;
    let rows = [
        ("read", n, n, read_s, "file to Cloud"),
        ("sor", n, after_sor.len(), sor_s, "on the input"),
        (
            "downsample",
            n,
            down.len(),
            ds_s,
            "voxel-nearest, on the input",
        ),
        (
            "normals",
            down.len(),
            down.len(),
            normals_s,
            "on the downsampled cloud",
        ),
        (
            "prepare",
            n,
            prepared.map.len(),
            prepare_s,
            "sor + downsample + normals + buckets (read excluded)",
        ),
    ];
    print_rows(&rows, args.json);
    Ok(())
}

/// One line per stage: (stage, points in, points out, median seconds, note), as a table or JSON lines.
fn print_rows(rows: &[(&str, usize, usize, f64, &str)], json: bool) {
    if !json {
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>12}  note",
            "stage", "in", "out", "median s", "points/s"
        );
    }
    for &(stage, pin, pout, s, note) in rows {
        if json {
            println!(
                "{}",
                serde_json::json!({"stage": stage, "points_in": pin, "points_out": pout, "median_s": s, "note": note})
            );
        } else {
            println!(
                "{stage:<12} {pin:>10} {pout:>10} {s:>10.4} {:>12.0}  {note}",
                pin as f64 / s
            );
        }
    }
}

/// Median seconds of `stage` run `repeat` times on a fresh copy of `cloud` (the copy is not timed), and the
/// last run's output.
fn time_in_place(
    repeat: usize,
    cloud: &Cloud,
    mut stage: impl FnMut(&mut Cloud) -> anyhow::Result<StageReport>,
) -> anyhow::Result<(f64, Cloud)> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let mut c = cloud.clone();
        let t = Instant::now();
        stage(&mut c)?;
        times.push(t.elapsed().as_secs_f64());
        last = Some(c);
    }
    Ok((median(times), last.unwrap_or_default()))
}
