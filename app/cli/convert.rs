//! `aerie convert IN OUT`

use std::path::PathBuf;
use std::time::Instant;

use aerie_pipeline::io::{self, Encoding, Format, LasVersion, ReadOptions, WriteOptions};
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Input scan file.
    input: PathBuf,
    /// Output file; its extension names the format unless --format is given.
    output: PathBuf,
    /// Output format: las, laz, e57, ply, pcd, xyz, kitti.
    #[arg(long, value_parser = super::parse_format)]
    format: Option<Format>,
    /// Input format, when the extension does not say it.
    #[arg(long, value_parser = super::parse_format)]
    input_format: Option<Format>,
    /// Encoding for formats that have one: ascii, binary (little endian), binary-big-endian (PLY),
    /// compressed (PCD binary_compressed).
    #[arg(long, value_parser = parse_encoding)]
    encoding: Option<Encoding>,
    /// LAS version to write: 1.2 or 1.4 (default: 1.2 unless the attributes need 1.4).
    #[arg(long, value_parser = parse_las_version)]
    las_version: Option<LasVersion>,
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

pub fn parse_encoding(s: &str) -> Result<Encoding, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "ascii" | "text" => Encoding::Ascii,
        "binary" | "binary-little-endian" | "binary_little_endian" => Encoding::Binary,
        "binary-big-endian" | "binary_big_endian" | "big-endian" => Encoding::BinaryBigEndian,
        "compressed" | "binary_compressed" | "binary-compressed" => Encoding::Compressed,
        _ => {
            return Err(format!(
                "unknown encoding {s:?}; expected ascii, binary, binary-big-endian or compressed"
            ));
        }
    })
}

pub fn parse_las_version(s: &str) -> Result<LasVersion, String> {
    match s {
        "1.2" => Ok(LasVersion::V1_2),
        "1.4" => Ok(LasVersion::V1_4),
        _ => Err(format!(
            "unsupported LAS version {s:?}; expected 1.2 or 1.4"
        )),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let read_opts = ReadOptions {
        separate_scans: args.separate_scans,
        columns: args.columns.clone(),
    };
    let clouds = io::read_scans(&args.input, args.input_format, &read_opts)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let fields = args
        .fields
        .map(|f| f.into_iter().filter(|s| !s.is_empty()).collect());
    let write_opts = WriteOptions {
        encoding: args.encoding,
        las_version: args.las_version,
        fields,
    };
    let numbered = args.separate_scans && clouds.len() > 1;
    for (k, cloud) in clouds.iter().enumerate() {
        let out = if numbered {
            super::numbered(&args.output, k as u64)
        } else {
            args.output.clone()
        };
        io::write(cloud, &out, args.format, &write_opts)
            .with_context(|| format!("cannot write {}", out.display()))?;
        if !args.quiet {
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
