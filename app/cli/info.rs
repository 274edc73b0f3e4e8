//! `aerie info FILE...`

use std::path::PathBuf;

use aerie_pipeline::CloudSummary;
use aerie_pipeline::export::{copc, gazebo, isaac, octomap};
use aerie_pipeline::features::spacing;
use aerie_pipeline::io::{self, Format, ReadOptions};
use anyhow::Context;

use super::choices::FormatArg;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scan files (.las .laz .e57 .ply .pcd .xyz .txt .csv .bin), prepared maps (.amap), OctoMap trees (.bt),
    /// COPC files (.copc.laz, shown with their octree's levels), Gazebo model folders, USD stages (.usda) or
    /// meshes (.ply with faces, .obj, .glb).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON (one object per file, in an array) for scripts; the point count is under `points`.
    #[arg(long)]
    json: bool,
    /// Read the files as this format instead of guessing from the extension.
    #[arg(long, ignore_case = true)]
    format: Option<FormatArg>,
    /// Column names for delimited text, comma-separated (e.g. x,y,z,intensity; `_` skips a column).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let opts = ReadOptions {
        separate_scans: false,
        columns: args.columns.clone(),
        ..ReadOptions::default()
    };
    let mut json = Vec::new();
    for path in &args.files {
        if aerie_pipeline::map::amap::is_map_file(path) {
            let (text, value) = map_info(path)?;
            if args.json {
                json.push(value);
            } else {
                print!("{text}");
            }
            continue;
        }
        if let Some((text, value)) = export_info(path)? {
            if args.json {
                json.push(value);
            } else {
                print!("{text}");
            }
            continue;
        }
        if aerie_pipeline::mesh::io::is_mesh_file(path) {
            let mesh = aerie_pipeline::mesh::io::read(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let summary = aerie_pipeline::mesh::io::MeshSummary::of(&mesh, path);
            if args.json {
                json.push(serde_json::to_value(&summary)?);
            } else {
                print!("{summary}");
            }
            continue;
        }
        if is_octree(path) {
            let (summary, _) =
                octomap::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            if args.json {
                let mut value = serde_json::to_value(&summary)?;
                value["source"] = serde_json::json!(path);
                json.push(value);
            } else {
                print!("{}\n{summary}", path.display());
            }
            continue;
        }
        let cloud = io::read(path, args.format.map(Format::from), &opts)
            .with_context(|| format!("cannot read {}", path.display()))
            .map_err(super::format_hint("--format"))?;
        super::warn_read(&cloud);
        let summary = CloudSummary::of(&cloud);
        // A COPC file is LAZ read as a cloud, plus its octree's levels.
        let octree = copc_levels(path, &cloud)?;
        if args.json {
            let mut value = serde_json::to_value(&summary)?;
            if let Some(o) = &octree {
                value["copc"] = serde_json::to_value(o)?;
            }
            json.push(value);
        } else {
            print!("{summary}");
            if let Some(o) = &octree {
                print!("{o}");
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    Ok(())
}

/// The summary of a mesh export Aerie wrote, when `path` is one: a Gazebo model folder or a text USD stage.
fn export_info(path: &std::path::Path) -> anyhow::Result<Option<(String, serde_json::Value)>> {
    let cannot = || format!("cannot read {}", path.display());
    let (text, mut value) = if gazebo::is_model_dir(path) {
        let model = gazebo::read_model(path).with_context(cannot)?;
        (model.to_string(), serde_json::to_value(&model)?)
    } else if is_usda(path) {
        let stage = isaac::read_stage(path).with_context(cannot)?;
        (stage.to_string(), serde_json::to_value(&stage)?)
    } else {
        return Ok(None);
    };
    value["source"] = serde_json::json!(path);
    Ok(Some((format!("{}\n{text}", path.display()), value)))
}

/// Whether `path` is a text USD stage: named .usda, or starting with the line USD writes first.
fn is_usda(path: &std::path::Path) -> bool {
    let named = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("usda"));
    named || isaac::is_usda_file(path)
}

/// The octree of a COPC file (LAS 1.4 whose first VLR is COPC's), `None` for any other cloud.
fn copc_levels(
    path: &std::path::Path,
    cloud: &aerie_pipeline::Cloud,
) -> anyhow::Result<Option<copc::CopcSummary>> {
    let las14 = cloud
        .meta
        .format
        .as_deref()
        .is_some_and(|f| f.starts_with("LAZ 1.4"));
    if !las14 {
        return Ok(None);
    }
    copc::read(path).with_context(|| format!("cannot read the COPC octree of {}", path.display()))
}

/// Whether `path` is an OctoMap tree: named .bt, or starting with the line OctoMap writes first.
fn is_octree(path: &std::path::Path) -> bool {
    let named = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("bt"));
    named || octomap::is_octree_file(path)
}

/// The summary of a packed map: its cloud summary plus map figures, sources, recipe and report.
fn map_info(path: &std::path::Path) -> anyhow::Result<(String, serde_json::Value)> {
    use std::fmt::Write;
    let map = aerie_pipeline::map::amap::AmapFile::open(path)
        .with_context(|| format!("cannot open map {}", path.display()))?;
    let h = map.header();
    let meta = map.map_metadata();
    let mut cloud = map.to_cloud();
    cloud.meta.source = Some(path.to_path_buf());
    cloud.meta.format = Some(format!(
        "Aerie map (.amap) {}.{}",
        h.version_major, h.version_minor
    ));
    let summary = CloudSummary::of(&cloud);
    let mut t = summary.to_string();
    writeln!(t, "  resolution  {} m", h.resolution)?;
    writeln!(
        t,
        "  buckets     {} of {} m ({} rule, mean {:.0} points, max {})",
        h.bucket_count,
        h.bucket_size,
        meta.bucketing.rule,
        meta.bucketing.mean_points_per_bucket,
        meta.bucketing.max_points_per_bucket
    )?;
    for s in &meta.sources {
        writeln!(
            t,
            "  source      {} ({})",
            s.path,
            s.format.as_deref().unwrap_or("?")
        )?;
    }
    if let Some(o) = &meta.normal_orientation {
        writeln!(t, "  normals     oriented {o}")?;
    }
    let spacing = map.view().spacing.and_then(spacing::surface_median);
    if let Some((median, share)) = spacing {
        writeln!(
            t,
            "  spacing     median {median:.3} m between the points of surfaces ({:.0}% of the points)",
            100.0 * share
        )?;
    }
    if !meta.dropped_attributes.is_empty() {
        writeln!(t, "  not stored  {}", meta.dropped_attributes.join(", "))?;
    }
    if let Some(r) = &meta.recipe {
        writeln!(t, "  recipe")?;
        let text = toml::to_string(r).context("cannot show the map's recipe")?;
        for line in text.lines() {
            writeln!(t, "    {line}")?;
        }
    }
    writeln!(t, "  report")?;
    for r in &meta.report {
        writeln!(
            t,
            "    {:<20} {:>10} -> {:>10}  {:.2} s",
            r.stage, r.points_in, r.points_out, r.seconds
        )?;
        for w in &r.warnings {
            writeln!(t, "      warning: {w}")?;
        }
    }
    let mut value = serde_json::to_value(&summary)?;
    value["map"] = serde_json::json!({
        "version": format!("{}.{}", h.version_major, h.version_minor),
        "resolution_m": h.resolution,
        "bucket_size_m": h.bucket_size,
        "buckets": h.bucket_count,
        "surface_spacing_median_m": spacing.map(|(m, _)| m),
        "metadata": serde_json::to_value(meta)?,
    });
    Ok((t, value))
}
