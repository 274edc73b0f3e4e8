//! `aerie mesh MAP -o mesh.ply|obj|glb`: a surface mesh of a prepared map, through the library's
//! [`aerie_pipeline::mesh`]; this module reads the map, maps flags to options and errors to exit codes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::Cloud;
use aerie_pipeline::io::{self, ReadOptions};
use aerie_pipeline::map::amap::{AmapFile, is_map_file};
use aerie_pipeline::mesh::{self, MeshError, MeshOptions, RESOLUTION_RANGE, io::MeshFormat};
use anyhow::Context;

use super::BadInput;
use crate::errors::Hint;
use crate::progress::TerminalProgress;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prepared map (.amap), or any scan file whose points have normals.
    map: PathBuf,
    #[command(flatten)]
    output: super::OutputFile,
    /// Simplify to at most this many triangles (meshoptimizer; holes stay open).
    #[arg(long, value_name = "N")]
    triangles: Option<usize>,
    /// Voxel edge of the reconstruction in metres (0.005 to 10). By default, the map's resolution.
    #[arg(long, value_name = "METRES")]
    resolution: Option<f64>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let output = args.output.path();
    if MeshFormat::from_path(output).is_none() {
        return Err(BadInput(format!(
            "{}: a mesh is written as .ply, .obj or .glb (glTF binary): name the output with one of these",
            output.display()
        ))
        .into());
    }
    super::check_output(output, &[&args.map])?;
    if let Some(r) = args.resolution.filter(|r| !RESOLUTION_RANGE.contains(r)) {
        return Err(BadInput(format!(
            "--resolution {r} is out of range: expected {} to {} m",
            RESOLUTION_RANGE.start(),
            RESOLUTION_RANGE.end()
        ))
        .into());
    }
    if args.triangles == Some(0) {
        return Err(BadInput("--triangles must be at least 1".into()).into());
    }
    let start = Instant::now();
    let (cloud, map_resolution) = read_map(&args.map)?;
    let options = MeshOptions {
        max_triangles: args.triangles,
        resolution_m: args.resolution.or(map_resolution),
    };
    let progress = TerminalProgress::new(args.quiet);
    let made = mesh::reconstruct(&cloud, &options, &progress);
    progress.finish();
    drop(progress);
    let made = made.map_err(|e| mesh_error(e, &args.map))?;
    if made.is_empty() {
        return Err(anyhow::Error::new(BadInput(format!(
            "{}: no surface found at {} m: the map's points are farther apart than the resolution",
            args.map.display(),
            options
                .resolution_m
                .map_or("the points' spacing".to_string(), |r| r.to_string())
        )))
        .context(Hint("give a larger --resolution".into())));
    }
    mesh::io::write(&made, output)?;
    if !args.quiet {
        eprintln!(
            "wrote a mesh of {} triangles and {} vertices to {} in {:.1} s",
            made.triangles().len(),
            made.vertices().len(),
            output.display(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The map's points and, for a prepared map, its resolution.
fn read_map(path: &Path) -> anyhow::Result<(Cloud, Option<f64>)> {
    if is_map_file(path) {
        let map =
            AmapFile::open(path).with_context(|| format!("cannot open map {}", path.display()))?;
        let r = f64::from(map.header().resolution);
        return Ok((map.to_cloud(), Some(r)));
    }
    let cloud = io::read(path, None, &ReadOptions::default())
        .with_context(|| format!("cannot read {}", path.display()))
        .map_err(super::format_hint("--format"))?;
    super::warn_read(&cloud);
    Ok((cloud, None))
}

/// The library's error naming the user's map; bad input (an empty map, no normals) exits 2.
fn mesh_error(e: MeshError, map: &Path) -> anyhow::Error {
    match e {
        MeshError::Input(m) => BadInput(format!("{}: {m}", map.display())).into(),
        MeshError::Invalid(_) | MeshError::Cancelled => {
            anyhow::Error::new(e).context(format!("cannot mesh {}", map.display()))
        }
    }
}
