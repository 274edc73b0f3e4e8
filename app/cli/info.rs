//! `aerie info FILE...`

use std::path::PathBuf;

use aerie_pipeline::CloudSummary;
use aerie_pipeline::io::{self, Format, ReadOptions};
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scan files (.las .laz .e57 .ply .pcd .xyz .txt .csv .bin) or prepared maps (.amap).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON (one object per file, in an array) for scripts; the point count is under `points`.
    #[arg(long)]
    json: bool,
    /// Read the files as this format instead of guessing from the extension.
    #[arg(long, value_parser = super::parse_format)]
    format: Option<Format>,
    /// Column names for delimited text, comma-separated (e.g. x,y,z,intensity; `_` skips a column).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let opts = ReadOptions {
        separate_scans: false,
        columns: args.columns.clone(),
    };
    let mut json = Vec::new();
    for path in &args.files {
        let cloud = io::read(path, args.format, &opts)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let summary = CloudSummary::of(&cloud);
        if args.json {
            json.push(serde_json::to_value(&summary)?);
        } else {
            print!("{summary}");
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    Ok(())
}
