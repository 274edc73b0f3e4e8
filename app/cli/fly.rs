//! `aerie fly MAP --mission m.toml -o run/`: fly the mission's vehicles through the map and record what their
//! sensors see (ROS 2 MCAP, zstd-compressed by default), their ground truth (TUM), what happened (events as JSON
//! lines), a summary and a picture.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::Error;
use aerie_simcore::flight::Flight;
use aerie_simcore::flight::outputs::{RunInfo, write_run};
use aerie_simcore::mission::Mission;
use aerie_simcore::record::Compression;
use indicatif::{ProgressBar, ProgressStyle};

use super::BadInput;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prepared map (.amap), or a scan file, which is prepared in memory first (default recipe).
    map: PathBuf,
    /// The mission (TOML; see examples/missions/).
    #[arg(long)]
    mission: PathBuf,
    /// Output folder (created): flight.mcap, <vehicle>.tum, events.jsonl, summary.json, flight.png. A flight
    /// already written there is replaced, its vehicles' trajectories included.
    #[arg(short, long)]
    output: PathBuf,
    /// Chunk compression of flight.mcap: zstd, lz4 or none. Overrides the mission's `[recording]`; by default
    /// zstd.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Compression::NAMES))]
    compression: Option<String>,
    /// Also write rosbag2's metadata.yaml, so that the output folder is a bag for `ros2 bag info` and `ros2 bag
    /// play`.
    #[arg(long)]
    rosbag2: bool,
    /// Overrides the mission's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Overrides the mission's duration, seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Resolution r_map used when MAP is a scan file rather than a prepared map, metres.
    #[arg(long)]
    resolution: Option<f64>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut mission = Mission::load(&args.mission).map_err(|e| BadInput(e.to_string()))?;
    if let Some(s) = args.seed {
        mission.seed = s;
    }
    if let Some(d) = args.duration {
        aerie_simcore::mission::check_duration(d)
            .map_err(|m| BadInput(format!("--duration {m}")))?;
        mission.duration_s = Some(d);
    }
    mission
        .check()
        .map_err(|e| BadInput(format!("{}: {e}", args.mission.display())))?;
    let map = super::open_map(&args.map, args.resolution)?;
    let base = args.mission.parent().map(PathBuf::from).unwrap_or_default();
    let mut flight = Flight::new(map, &mission, &base)
        .map_err(|e| BadInput(format!("{}: {e}", args.mission.display())))?;
    output_folder(&args.output, &mission)?;
    let mut recording = mission.recording;
    if let Some(c) = &args.compression {
        recording.compression = c.parse().map_err(BadInput)?;
    }
    recording.rosbag2 |= args.rosbag2;
    let mcap = args.output.join("flight.mcap");
    flight.record_to(&mcap, recording)?;
    let (points, uses_index) = (
        flight.simulator().map().positions.len(),
        flight.uses_beam_index(),
    );
    super::build_beam_index(points, uses_index, args.quiet, || flight.warm_up());
    let bar = progress_bar(flight.end_time(), args.quiet);
    let wall = Instant::now();
    let mut on_frame = |_: &str, _: &aerie_simcore::render::Frame| {};
    while !flight.finished() {
        let t = (flight.time() + 0.5).min(flight.end_time());
        flight.run_until(t, &mut on_frame)?;
        bar.set_position((flight.time() * 1000.0) as u64);
        bar.set_message(format!(
            "{:.1}x real time",
            flight.time() / wall.elapsed().as_secs_f64().max(1e-9)
        ));
    }
    bar.finish();
    flight.finish_recording()?;
    let wall_s = wall.elapsed().as_secs_f64();
    write_outputs(args, &flight, &mission, wall_s)?;
    if !args.quiet {
        let summary = flight.summary();
        for v in &summary {
            eprintln!(
                "{}: {:.1} m flown, top speed {:.2} m/s, {} LiDAR frames, {} collisions, {} of {} goals reached{}",
                v.name,
                v.path_length_m,
                v.max_speed_m_s,
                v.lidar_frames,
                v.collisions,
                v.goals_reached,
                v.goals,
                if v.goals_done { "" } else { " (NOT done)" }
            );
        }
        eprintln!(
            "flew {:.1} s in {:.1} s ({:.1}x real time); wrote {} (flight.mcap, *.tum, events.jsonl, summary.json, flight.png) in {:.1} s",
            flight.time(),
            wall_s,
            flight.time() / wall_s.max(1e-9),
            args.output.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Creates the output folder, refusing a file. A previous flight written there is replaced: its files are
/// rewritten, and the trajectories of its vehicles that this mission does not fly (named in its summary.json)
/// are removed, so that the folder's `*.tum` are this flight's.
fn output_folder(out: &Path, mission: &Mission) -> anyhow::Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(BadInput(format!(
            "{} is a file: -o names the folder the flight is written into",
            out.display()
        ))
        .into());
    }
    super::note_new_folder(out);
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let Ok(text) = std::fs::read_to_string(out.join("summary.json")) else {
        return Ok(());
    };
    let old: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let names = old["vehicles"].as_array().into_iter().flatten();
    for name in names.filter_map(|v| v["name"].as_str()) {
        // Only names a mission accepts: never a path out of the folder.
        if aerie_simcore::mission::is_ros_name(name)
            && !mission.vehicles.iter().any(|v| v.name == name)
        {
            let stale = out.join(format!("{name}.tum"));
            if stale.is_file() {
                std::fs::remove_file(&stale).map_err(|e| Error::io(&stale, e))?;
            }
        }
    }
    Ok(())
}

fn progress_bar(end_s: f64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new((end_s * 1000.0) as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} ms simulated, {msg}, eta {eta}")
    {
        bar.set_style(style);
    }
    bar
}

fn write_outputs(
    args: &Args,
    flight: &Flight,
    mission: &Mission,
    wall_s: f64,
) -> anyhow::Result<()> {
    let info = RunInfo {
        map: args.map.display().to_string(),
        mission: args.mission.display().to_string(),
        seed: mission.seed,
        wall_s,
    };
    write_run(&args.output, flight, &info)?;
    crate::plots::flight::write(&args.output, flight)?;
    Ok(())
}
