//! `aerie export map.amap OUT`: write a prepared map in another tool's format, through the library's
//! [`aerie_pipeline::export`]; this module maps flags to its options and adds the flags to its messages.

use std::path::PathBuf;

use aerie_pipeline::export::{
    ExportError, ExportOptions, ExportWarning, Target, export, gazebo, isaac, octomap,
};
use aerie_pipeline::io;
use aerie_pipeline::map::amap::AmapFile;
use anyhow::Context;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use super::choices::{EncodingArg, FormatArg, LasVersionArg};
use crate::errors::Hint;

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
    /// PCD with float x y z (PCL's point types), moved to a local frame when the map is far from 0; `octomap`
    /// writes OctoMap's binary tree (.bt) at `--resolution`; `gazebo` writes a Gazebo model folder (OUTPUT is
    /// the folder, new or empty); `isaac` writes a USD stage (.usda) for Isaac Sim; `copc` writes COPC (.copc.laz)
    /// for web and GIS viewers.
    #[arg(long = "for", value_name = "TARGET", value_parser = target_parser())]
    target: Option<Target>,
    /// Encoding, for formats that offer a choice.
    #[arg(long, ignore_case = true)]
    encoding: Option<EncodingArg>,
    /// LAS version.
    #[arg(long)]
    las_version: Option<LasVersionArg>,
    /// Voxel edge in metres, for `--for octomap` (0.01 to 10). By default, the map's resolution.
    #[arg(long, value_name = "METRES")]
    resolution: Option<f64>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

/// The values of `--for`: every target the library has but the generic one (what no `--for` means), each with
/// its line of help.
fn target_parser() -> impl TypedValueParser<Value = Target> {
    let values = Target::ALL
        .into_iter()
        .filter(|t| *t != Target::Generic)
        // Without the closing full stop, as clap shows the doc comments of the other choices.
        .map(|t| PossibleValue::new(t.name()).help(t.about().trim_end_matches('.')));
    // The parser accepts only the names it lists, each of which names a target.
    PossibleValuesParser::new(values).map(|name| Target::from_name(&name).unwrap_or_default())
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let output = args.output.path();
    super::check_output(output, &[&args.map])?;
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
    let options = ExportOptions {
        format: args.format.map(Into::into),
        encoding: args.encoding.map(Into::into),
        las_version: args.las_version.map(Into::into),
        target: args.target.unwrap_or_default(),
        resolution_m: Some(
            args.resolution
                .unwrap_or(octomap::resolution_of_map(map.header().resolution)),
        ),
    };
    if args.resolution.is_some() && options.target != Target::Octomap {
        return Err(super::BadInput(format!(
            "--resolution is for --for {}: other exports write the map's points as they are",
            Target::Octomap.name()
        ))
        .into());
    }
    let done = export(&cloud, output, &options)
        .map_err(flag_hint)
        .map_err(super::format_hint("--format"))?;
    for w in &done.warnings {
        eprintln!("warning: {}: {}", output.display(), warning_text(w));
    }
    if !args.quiet {
        match (options.target, options.resolution_m) {
            (Target::Octomap, Some(res)) => eprintln!(
                "wrote an OctoMap tree of {} points at {res} m to {}",
                cloud.len(),
                output.display()
            ),
            _ if options.target == Target::Gazebo || options.target == Target::Isaac => {
                eprint!("{}", mesh_note(options.target, output)?);
            }
            (Target::Copc, _) => eprintln!(
                "wrote a COPC octree of {} points to {}",
                cloud.len(),
                output.display()
            ),
            _ => eprintln!("wrote {} points to {}", cloud.len(), output.display()),
        }
        if let Some(note) = done.shift_note() {
            eprintln!("{note}");
        }
    }
    Ok(())
}

/// What a mesh export wrote, read back from the output, and how to load it.
fn mesh_note(target: Target, output: &std::path::Path) -> anyhow::Result<String> {
    let shown = output.display();
    Ok(if target == Target::Gazebo {
        let model =
            gazebo::read_model(output).with_context(|| format!("cannot read back {shown}"))?;
        format!(
            "wrote the Gazebo model {} to {shown}:\n{model}load it with: GAZEBO_MODEL_PATH=PARENT gazebo \
             {shown}/world.sdf, or GZ_SIM_RESOURCE_PATH=PARENT gz sim {shown}/world.sdf (PARENT: the folder \
             that holds it; see its README.txt)\n",
            model.name
        )
    } else {
        let stage =
            isaac::read_stage(output).with_context(|| format!("cannot read back {shown}"))?;
        format!("wrote a USD stage for Isaac Sim to {shown}:\n{stage}")
    })
}

/// The export's error, with the flag that fixes it as a [`Hint`] where one does.
fn flag_hint(e: ExportError) -> anyhow::Error {
    let hint = match &e {
        ExportError::WrongEncoding { target, .. } => Some(format!(
            "--for {} writes the encoding its reader loads: leave out --encoding",
            target.name()
        )),
        ExportError::WrongFormat { format, .. } => Some(format!(
            "or give --format {} to write it under this name",
            format.name()
        )),
        ExportError::BadResolution { .. } => Some("give another --resolution".to_string()),
        _ => None,
    };
    match hint {
        Some(h) => anyhow::Error::new(e).context(Hint(h)),
        None => e.into(),
    }
}

/// A warning in the command line's words: the way around a problem is its flag.
fn warning_text(w: &ExportWarning) -> String {
    match w {
        ExportWarning::DoubleCoordinates => format!(
            "{}: --for {} writes them in a local frame",
            w.problem(),
            Target::Ros.name()
        ),
        ExportWarning::Loss(_) | ExportWarning::NoScannerPose => w.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use aerie_pipeline::io::{Encoding, Format};

    use super::*;
    use crate::errors::error_lines;

    /// The library's error says what is wrong in its terms; the command line adds the flag that fixes it.
    #[test]
    fn the_flag_that_fixes_an_export_error_is_its_hint() {
        let encoding = ExportError::WrongEncoding {
            path: PathBuf::from("m.pcd"),
            target: Target::Marsim,
            format: Format::Pcd,
            required: Encoding::Binary,
            asked: Encoding::Ascii,
        };
        assert_eq!(
            error_lines(&flag_hint(encoding)),
            [
                "error: m.pcd: a file for MARSIM must be binary PCD, not ascii",
                "  hint: --for marsim writes the encoding its reader loads: leave out --encoding"
            ]
        );
        let format = ExportError::WrongFormat {
            path: PathBuf::from("m.las"),
            target: Target::Ros,
            format: Format::Pcd,
        };
        assert_eq!(
            error_lines(&flag_hint(format)),
            [
                "error: m.las: a file for ROS and PCL must be PCD: name it .pcd",
                "  hint: or give --format pcd to write it under this name"
            ]
        );
        assert_eq!(
            warning_text(&ExportWarning::DoubleCoordinates),
            format!(
                "{}: --for ros writes them in a local frame",
                ExportWarning::DoubleCoordinates.problem()
            )
        );
    }
}
