//! `aerie convert IN OUT`

use std::path::PathBuf;
use std::time::Instant;

use aerie_pipeline::io::{self, ReadOptions, WriteOptions};
use anyhow::Context;

use super::choices::{EncodingArg, FormatArg, LasVersionArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input scan file.
    input: PathBuf,
    #[command(flatten)]
    output: super::OutputFile,
    /// Output format.
    #[arg(long, ignore_case = true)]
    format: Option<FormatArg>,
    /// Input format, when the extension does not say it.
    #[arg(long, ignore_case = true)]
    input_format: Option<FormatArg>,
    /// Encoding, for formats that offer a choice.
    #[arg(long, ignore_case = true)]
    encoding: Option<EncodingArg>,
    /// LAS version to write (default: 1.2 unless the attributes need 1.4).
    #[arg(long)]
    las_version: Option<LasVersionArg>,
    /// Column names of a delimited-text input, comma-separated (e.g. x,y,z,intensity; `_` skips a column).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Write only these attributes besides x y z, comma-separated (an empty value writes x y z only).
    #[arg(long, value_delimiter = ',', num_args = 0..)]
    fields: Option<Vec<String>>,
    /// E57 with several scans: write one file per scan (OUT_000000.ext, ...) instead of merging them.
    #[arg(long)]
    separate_scans: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    super::check_output(args.output.path(), &[&args.input])?;
    check_input_flags(&args)?;
    if aerie_pipeline::map::amap::is_map_file(&args.input) {
        return Err(super::BadInput(format!(
            "{} is a prepared map (.amap), not a scan file: write it out with `aerie export {} OUTPUT`",
            args.input.display(),
            args.input.display()
        ))
        .into());
    }
    let read_opts = ReadOptions {
        separate_scans: args.separate_scans,
        columns: args.columns.clone(),
        ..ReadOptions::default()
    };
    let clouds = io::read_scans(&args.input, args.input_format.map(Into::into), &read_opts)
        .with_context(|| format!("cannot read {}", args.input.display()))
        .map_err(super::format_hint("--input-format"))?;
    clouds.iter().for_each(super::warn_read);
    let fields = args.fields.map(|f| {
        f.iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    });
    let write_opts = WriteOptions {
        encoding: args.encoding.map(Into::into),
        las_version: args.las_version.map(Into::into),
        fields,
    };
    let numbered = args.separate_scans && clouds.len() > 1;
    for (k, cloud) in clouds.iter().enumerate() {
        let out = if numbered {
            super::numbered(args.output.path(), k as u64)
        } else {
            args.output.path().to_path_buf()
        };
        let format = args.format.map(Into::into);
        io::write(cloud, &out, format, &write_opts)
            .with_context(|| format!("cannot write {}", out.display()))
            .map_err(super::format_hint("--format"))?;
        if !args.quiet {
            super::warn_losses(cloud, &out, format);
            eprintln!(
                "wrote {} points to {} in {:.2} s",
                cloud.len(),
                out.display(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Refuses the input flags that the input's format would ignore: `--columns` names a text file's columns, and
/// only E57 holds several scans for `--separate-scans`.
fn check_input_flags(args: &Args) -> Result<(), super::BadInput> {
    let format = args
        .input_format
        .map(io::Format::from)
        .or_else(|| io::Format::from_path(&args.input));
    let Some(format) = format else {
        return Ok(());
    };
    let name = args.input.display();
    if args.columns.is_some() && format != io::Format::Xyz {
        return Err(super::BadInput(format!(
            "--columns names the columns of a delimited-text input; {name} is a {} file, whose fields are named",
            format.name()
        )));
    }
    if args.separate_scans && format != io::Format::E57 {
        return Err(super::BadInput(format!(
            "--separate-scans splits an E57 file's scans; {name} is a {} file, which holds one",
            format.name()
        )));
    }
    Ok(())
}
