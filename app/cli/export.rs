//! `aerie export map.amap OUT`: write a prepared map in another tool's format.

use std::path::{Path, PathBuf};

use aerie_pipeline::Cloud;

use aerie_pipeline::io::{self, Encoding, Format, LasVersion, WriteOptions};
use aerie_pipeline::map::amap::AmapFile;
use anyhow::Context;

use super::choices::{EncodingArg, FormatArg, LasVersionArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prepared map (.amap).
    map: PathBuf,
    #[command(flatten)]
    output: super::OutputFile,
    /// Output format.
    #[arg(long, ignore_case = true)]
    format: Option<FormatArg>,
    /// Shape the output for a tool: `marsim` writes binary PCD with x y z only (what MARSIM loads); `ros` writes
    /// PCD with float x y z (PCL's point types), moved to a local frame when the map is far from 0.
    #[arg(long = "for")]
    target: Option<Target>,
    /// Encoding, for formats that offer a choice.
    #[arg(long, ignore_case = true)]
    encoding: Option<EncodingArg>,
    /// LAS version.
    #[arg(long)]
    las_version: Option<LasVersionArg>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    super::check_output(args.output.path(), &[&args.map])?;
    if io::Format::from_path(&args.map).is_some() {
        return Err(super::BadInput(format!(
            "{} is a scan file, not a prepared map: `aerie convert` writes a scan file in another format, \
             `aerie prepare {} -o map.amap` makes a map of it",
            args.map.display(),
            args.map.display()
        ))
        .into());
    }
    let map = AmapFile::open(&args.map)
        .with_context(|| format!("cannot open map {}", args.map.display()))?;
    let cloud = map.to_cloud();
    let Exported { shift, warnings } = write(
        &cloud,
        args.output.path(),
        args.format.map(Into::into),
        args.encoding.map(Into::into),
        args.las_version.map(Into::into),
        args.target.unwrap_or(Target::Generic),
    )
    .map_err(super::format_hint("--format"))?;
    for w in warnings {
        eprintln!("warning: {}: {w}", args.output.path().display());
    }
    if !args.quiet {
        eprintln!(
            "wrote {} points to {}",
            cloud.len(),
            args.output.path().display()
        );
        if let Some(s) = shift {
            eprintln!("{}", shift_note(s));
        }
    }
    Ok(())
}

/// Whom an export is for (`--for`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The format as asked, every attribute it can hold: what no `--for` means.
    #[value(skip)]
    Generic,
    /// MARSIM loads binary PCD with x y z only.
    Marsim,
    /// ROS and PCL (`pcl::io::loadPCDFile<PointXYZI>`, pcl_ros) load PCD with float x y z: every attribute,
    /// in a local frame when the map is far from 0.
    Ros,
}

impl Target {
    /// Who reads the file, for messages.
    fn reader(self) -> &'static str {
        match self {
            Target::Marsim => "MARSIM",
            _ => "ROS and PCL",
        }
    }
}

/// The offset that moves a cloud far from 0 (a coordinate beyond 1e4 m, where floats lose millimetres) into a
/// local frame, its minimum corner rounded down to whole metres; `None` near 0.
fn local_frame(cloud: &Cloud) -> Option<[f64; 3]> {
    let (lo, hi) = cloud.bounds()?;
    lo.iter()
        .chain(&hi)
        .any(|v| v.abs() >= 1e4)
        .then(|| lo.map(f64::floor))
}

/// What an export writes that the user should know: what the format loses (a MARSIM export keeps x y z alone,
/// by design), and that a generic PCD of a map far from 0 holds x y z as doubles (`F 8`), which PCL's point
/// types do not match.
fn export_warnings(cloud: &Cloud, format: Format, target: Target) -> Vec<String> {
    let mut warnings = Vec::new();
    if target == Target::Generic && format == Format::Pcd && local_frame(cloud).is_some() {
        warnings.push(
            "x y z are written as 64-bit floats (F 8) to keep millimetres this far from 0, and PCL's point \
             types (ROS, pcl_viewer, MARSIM) load only 32-bit ones: --for ros writes them in a local frame"
                .to_string(),
        );
    }
    if target != Target::Marsim {
        warnings.extend(io::write_losses(cloud, format));
    }
    warnings
}

/// What [`write`] did besides writing: the offset a MARSIM or ROS export was moved by, and the warnings to show.
pub struct Exported {
    pub shift: Option<[f64; 3]>,
    pub warnings: Vec<String>,
}

/// What the user must know when an export was moved to a local frame.
pub fn shift_note(s: [f64; 3]) -> String {
    format!(
        "moved by ({}, {}, {}) m into a local frame: PCL's point types hold float coordinates, which would lose \
         centimetres this far from 0; add the offset back to return to the map's frame",
        -s[0], -s[1], -s[2]
    )
}

/// Writes a map's cloud for another tool: the one export path of the CLI and the app. For MARSIM and ROS, a
/// map far from the origin (georeferenced) is moved to a local frame, since PCL's point types (`PointXYZ`,
/// `PointXYZI`) load only float coordinates, and a PCD of doubles, which a generic export writes there, does not
/// match their fields: the offset subtracted is returned, with what the export loses.
pub fn write(
    cloud: &Cloud,
    output: &Path,
    format: Option<Format>,
    encoding: Option<Encoding>,
    las_version: Option<LasVersion>,
    target: Target,
) -> anyhow::Result<Exported> {
    let mut opts = WriteOptions {
        encoding,
        las_version,
        fields: None,
    };
    let mut format = format;
    if target != Target::Generic {
        let ext_is_pcd = Format::from_path(output) == Some(Format::Pcd);
        if !(ext_is_pcd || format == Some(Format::Pcd)) {
            return Err(super::BadInput(format!(
                "{} read PCD: name the output .pcd, not {}",
                target.reader(),
                output.display()
            ))
            .into());
        }
        format = Some(Format::Pcd);
        if target == Target::Marsim {
            if encoding.is_some_and(|e| e != Encoding::Binary) {
                return Err(super::BadInput(
                    "--for marsim writes binary PCD, which is what MARSIM loads: leave out --encoding"
                        .into(),
                )
                .into());
            }
            opts.encoding = Some(Encoding::Binary);
            opts.fields = Some(Vec::new());
        }
        if let Some(shift) = local_frame(cloud) {
            let mut local = cloud.clone();
            local.origin = std::array::from_fn(|k| cloud.origin[k] - shift[k]);
            io::write(&local, output, format, &opts)
                .with_context(|| format!("cannot write {}", output.display()))?;
            return Ok(Exported {
                shift: Some(shift),
                warnings: export_warnings(&local, Format::Pcd, target),
            });
        }
    }
    io::write(cloud, output, format, &opts)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let warnings = format
        .or_else(|| Format::from_path(output))
        .map(|f| export_warnings(cloud, f, target))
        .unwrap_or_default();
    Ok(Exported {
        shift: None,
        warnings,
    })
}
