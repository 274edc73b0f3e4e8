//! `aerie demo [-o DIR]`: the whole product on a built-in scene, without data of one's own. Scans the procedural
//! demo scene (`maps/demo/scene.toml`) into a raw LAZ as a terrestrial scanner would, prepares it
//! into a map, exports it for MARSIM (PCD) and GIS (LAZ), flies an Avia-equipped quad through the forest and the
//! building's corridor (`examples/missions/demo.toml`) recording ROS 2 MCAP, and writes DIR/report.html with
//! pictures and the figures of every step.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::export::{ExportOptions, Target, export, write_map};
use aerie_pipeline::filters::moving::{
    DEFAULT_SLICE_S, MovingParams, PoseSource, Viewpoints, apply_mask, attach_scans, moving_mask,
    viewpoints,
};
use aerie_pipeline::io::poses::ScanPose;
use aerie_pipeline::io::{self, WriteOptions};
use aerie_pipeline::prepare::{Recipe, Stage, prepare};
use aerie_pipeline::{Cloud, Error, NoProgress, StageReport};
use aerie_simcore::demo::{DemoConfig, DemoSite, Label, raw_scan};
use aerie_simcore::flight::Flight;
use aerie_simcore::flight::outputs::{RunInfo, write_run};
use aerie_simcore::mission::{Goal, Mission};
use aerie_simcore::render::Frame;
use aerie_simcore::scene::Surface;
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::simulator::Map;
use anyhow::Context;

use crate::plots;
use crate::progress::TerminalProgress;

/// The demo flight (`examples/missions/demo.toml` is the same mission for the default site).
const MISSION: &str = include_str!("../../examples/missions/demo.toml");

/// The demo mission, its route fitted to the generated site: take off from the clearest spot of the forest,
/// reach the corridor's nearer doorway with the planner (around the trunks), fly the corridor to the far doorway
/// with the planner too (the map holds what the scans left in it, such as mixed pixels at the door frames, and a
/// straight leg met them), land outside the far doorway.
fn demo_mission(site: &DemoSite) -> Mission {
    let mut m: Mission =
        toml::from_str(MISSION).unwrap_or_else(|e| unreachable!("the shipped mission parses: {e}"));
    let trunks: Vec<[f64; 2]> = site
        .objects
        .iter()
        .filter(|o| o.label == Label::Trunk)
        .filter_map(|o| match o.surface {
            Surface::Tube { a, .. } => Some([a[0], a[1]]),
            _ => None,
        })
        .collect();
    let clearance = |x: f64, y: f64| {
        trunks
            .iter()
            .map(|t| (t[0] - x).hypot(t[1] - y))
            .fold(f64::INFINITY, f64::min)
    };
    let [lo, hi] = [
        trunks
            .iter()
            .fold([f64::INFINITY; 2], |a, t| [a[0].min(t[0]), a[1].min(t[1])]),
        trunks.iter().fold([f64::NEG_INFINITY; 2], |a, t| {
            [a[0].max(t[0]), a[1].max(t[1])]
        }),
    ];
    let mut start = [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1])];
    let mut best = f64::NEG_INFINITY;
    for i in 0..=20 {
        for j in 0..=20 {
            let (x, y) = (
                lo[0] + (hi[0] - lo[0]) * i as f64 / 20.0,
                lo[1] + (hi[1] - lo[1]) * j as f64 / 20.0,
            );
            // Clear of trunks, and not far from the forest's middle (the flight should cross the trees).
            let score = clearance(x, y).min(3.0)
                - 0.05 * ((x - 0.5 * (lo[0] + hi[0])).hypot(y - 0.5 * (lo[1] + hi[1])));
            if score > best {
                best = score;
                start = [x, y];
            }
        }
    }
    let [c0, c1] = site.corridor_m;
    let near_first =
        (c0[0] - start[0]).hypot(c0[1] - start[1]) <= (c1[0] - start[0]).hypot(c1[1] - start[1]);
    let (enter, leave) = if near_first { (c0, c1) } else { (c1, c0) };
    // Land a little beyond the far doorway, along the corridor.
    let out = [
        leave[0] + 0.15 * (leave[0] - enter[0]),
        leave[1] + 0.15 * (leave[1] - enter[1]),
    ];
    let ground = site.terrain.height(start[0], start[1]);
    if let Some(v) = m.vehicles.first_mut() {
        let yaw = (enter[1] - start[1]).atan2(enter[0] - start[0]);
        v.start = [start[0], start[1], ground + 0.14, yaw];
        v.goals = vec![
            Goal::Waypoint {
                position: [start[0], start[1], ground + 1.5],
                speed_m_s: None,
            },
            Goal::Goal {
                position: enter,
                speed_m_s: None,
            },
            Goal::Goal {
                position: leave,
                speed_m_s: None,
            },
            Goal::Waypoint {
                position: [out[0], out[1], leave[2]],
                speed_m_s: None,
            },
            Goal::Land {},
        ];
    }
    m
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output folder (created).
    #[arg(short, long, default_value = "aerie_demo")]
    output: PathBuf,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

/// One line of the report's table.
struct Step {
    name: &'static str,
    seconds: f64,
    figures: String,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let out = &args.output;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let say = |s: &str| {
        if !args.quiet {
            eprintln!("{s}");
        }
    };
    say("1/5 scanning the demo scene from 5 stations (a simulated terrestrial scanner)...");
    let (scanned, raw, mission) = scan_step(out)?;
    say(
        "2/5 preparing the map (removing the walking person, outlier removal, 0.1 m downsampling, normals)...",
    );
    let (cleaned, moved) = moving_step(out, &raw)?;
    let (prepared, amap_path, map_cloud) = prepare_step(out, moved, args.quiet)?;
    say("3/5 exporting for MARSIM (binary PCD) and GIS (LAZ)...");
    let exported = export_step(out, &map_cloud)?;
    say("4/5 flying an Avia quad through the forest and the corridor...");
    let t = Instant::now();
    let flight_dir = out.join("flight");
    let (summary, frame) = fly(&amap_path, &mission, &flight_dir, args.quiet)?;
    if let Some(frame) = &frame {
        let sensor = SensorModel::preset("avia")?;
        plots::scene::range_image_png(&frame.range_image(&sensor), &out.join("scan.png"))?;
    }
    let flown = Step {
        name: "fly (MCAP)",
        seconds: t.elapsed().as_secs_f64(),
        figures: summary,
    };
    say("5/5 writing the report...");
    let report = out.join("report.html");
    let steps = [scanned, cleaned, prepared, exported, flown];
    let html = report_html(&steps, started.elapsed().as_secs_f64());
    aerie_pipeline::io::atomic::write_atomic(&report, |f| {
        f.write_all(html.as_bytes())
            .map_err(|e| Error::io(&report, e))
    })?;
    if !args.quiet {
        eprintln!(
            "done in {:.1} s. Open {} (raw scan, map, exports, flight.mcap for ROS 2 / Foxglove in {}).",
            started.elapsed().as_secs_f64(),
            report.display(),
            flight_dir.display()
        );
    }
    Ok(())
}

/// Scans the demo site into `out/raw/demo_scan.laz` and `out/raw.png`: the step's line, the raw cloud and the
/// mission made for the site.
fn scan_step(out: &Path) -> anyhow::Result<(Step, Labelled, Mission)> {
    let t = Instant::now();
    let scan = raw_scan(&DemoConfig::default())?;
    let raw_path = out.join("raw/demo_scan.laz");
    io::write(&scan.cloud, &raw_path, None, &WriteOptions::default())
        .with_context(|| format!("cannot write {}", raw_path.display()))?;
    write_station_poses(&scan.cloud, &out.join(POSES))?;
    plots::scene::top_view_png(&scan.cloud, &out.join("raw.png"))?;
    let by = |l: Label| scan.report.points_by_label.get(&l).copied().unwrap_or(0);
    let step = Step {
        name: "scan (raw LAZ)",
        seconds: t.elapsed().as_secs_f64(),
        figures: format!(
            "{} stations, {} beams, {} points: {} stray points in the air, {} mixed points on edges, {} on a walking person",
            scan.report.stations.len(),
            scan.report.beams,
            scan.report.points,
            by(Label::Outlier),
            by(Label::Mixed),
            by(Label::Person)
        ),
    };
    let mission = demo_mission(&scan.site);
    let raw = Labelled {
        cloud: scan.cloud,
        labels: scan.labels,
    };
    Ok((step, raw, mission))
}

/// The stations' poses beside the raw scan, as a balm poses.csv whose line `station<k>` is the pose of the points
/// whose point_source_id is k: what `aerie prepare raw/demo_scan.laz --poses raw/demo_poses.csv --remove-moving`
/// reads.
fn write_station_poses(cloud: &Cloud, path: &Path) -> anyhow::Result<()> {
    let poses: Vec<ScanPose> = cloud
        .meta
        .scans
        .iter()
        .enumerate()
        .filter_map(|(k, s)| {
            Some(ScanPose {
                name: Some(format!("station{}", k + 1)),
                stamp_s: None,
                world_from_sensor: s.world_from_scan?,
            })
        })
        .collect();
    let text = aerie_pipeline::io::poses::balm_csv(&poses);
    aerie_pipeline::io::atomic::write_atomic(path, |f| {
        f.write_all(text.as_bytes()).map_err(|e| Error::io(path, e))
    })?;
    Ok(())
}

/// The raw scan and what each of its points lies on (the simulator's ground truth).
struct Labelled {
    cloud: Cloud,
    labels: Vec<Label>,
}

/// The poses file beside the raw scan.
const POSES: &str = "raw/demo_poses.csv";

/// The raw scan with each point's station pose read back from the poses file (as `aerie prepare --poses` does),
/// and what filters.moving classifies as moving on it, scored against the labels; writes `out/moving.png` (the
/// points removed, from above). Returns the step's line and the stage's result: the cloud without them (its scans
/// attached) and the stage's report, which the prepared map's report starts with. The scan is carved once: the
/// prepare step runs the rest of the recipe on this result.
fn moving_step(out: &Path, raw: &Labelled) -> anyhow::Result<(Step, Moved)> {
    let t = Instant::now();
    let source = PoseSource::read(&out.join(POSES), None, DEFAULT_SLICE_S)?;
    let views = viewpoints(&raw.cloud, Some(&source))?;
    let labels: Vec<Label> = (0..views.len())
        .flat_map(|s| (0..views.count(s)).map(move |k| (s, k)))
        .map(|(s, k)| raw.labels[views.point(s, k)])
        .collect();
    let cloud = attach_scans(&raw.cloud, &views);
    let scans = Viewpoints::from_scans(&cloud)?;
    let params = MovingParams::default();
    let carving = Instant::now();
    let mask = moving_mask(&cloud, &scans, &params, &NoProgress)?;
    let count = |f: &dyn Fn(Label, bool) -> bool| {
        labels
            .iter()
            .zip(&mask.dynamic)
            .filter(|&(&l, &d)| f(l, d))
            .count()
    };
    let person = count(&|l, _| l == Label::Person);
    let person_left = count(&|l, d| l == Label::Person && !d);
    let artefact = |l: Label| matches!(l, Label::Person | Label::Outlier | Label::Mixed);
    let statics = count(&|l, _| !artefact(l));
    let static_removed = count(&|l, d| !artefact(l) && d);
    let removed: Vec<usize> = (0..cloud.len()).filter(|&i| mask.dynamic[i]).collect();
    plots::scene::top_view_png(&cloud.select(&removed), &out.join("moving.png"))?;
    let mut figures = format!(
        "points on the walking person: {person} before, {person_left} after; static points removed: \
         {static_removed} of {statics} ({:.3}%); {} points removed in all, from {} stations",
        100.0 * static_removed as f64 / statics.max(1) as f64,
        removed.len(),
        scans.len()
    );
    for w in &mask.stats.warnings {
        let _ = write!(figures, "; warning: {w}");
    }
    let step = Step {
        name: "remove moving (ground truth)",
        seconds: t.elapsed().as_secs_f64(),
        figures,
    };
    let (cloud, report) = apply_mask(&cloud, &mask, &params, carving);
    let points_in = raw.cloud.len();
    Ok((
        step,
        Moved {
            cloud,
            report,
            points_in,
        },
    ))
}

/// The raw scan after `filters.moving`: what the prepare step goes on with.
struct Moved {
    /// The scan without the points classified moving.
    cloud: Cloud,
    /// The stage's report, first in the map's report.
    report: StageReport,
    /// Points of the raw scan.
    points_in: usize,
}

/// Prepares the raw cloud at 0.1 m into `out/demo.amap` (and `out/map.png`): the step's line, the map's path
/// and the map as a cloud.
fn prepare_step(out: &Path, moved: Moved, quiet: bool) -> anyhow::Result<(Step, PathBuf, Cloud)> {
    let t = Instant::now();
    let mut recipe = Recipe {
        resolution_m: 0.1,
        ..Recipe::default()
    };
    let progress = TerminalProgress::new(quiet);
    let Moved {
        cloud,
        report,
        points_in,
    } = moved;
    let mut prepared = prepare(vec![(cloud, None)], &recipe, &progress)?;
    progress.finish();
    // The recipe the map was made with, as `aerie prepare --remove-moving` writes it: filters.moving first (run by
    // the moving step, whose report leads), then the default stages.
    recipe.stages.insert(0, Stage::Moving);
    prepared
        .warnings
        .splice(0..0, report.warnings.iter().cloned());
    let seconds = t.elapsed().as_secs_f64() + report.seconds;
    prepared.reports.insert(0, report);
    let amap_path = out.join("demo.amap");
    let summary = aerie_pipeline::report::PrepareSummary {
        recipe: &recipe,
        reports: &prepared.reports,
        warnings: &prepared.warnings,
        points_in,
        seconds,
    };
    write_map(&prepared.map, &summary, &amap_path)?;
    let map_cloud = prepared.map.to_cloud()?;
    plots::scene::top_view_png(&map_cloud, &out.join("map.png"))?;
    let mut figures = String::new();
    for r in &prepared.reports {
        let _ = write!(
            figures,
            "{}: {} -> {} points",
            r.stage, r.points_in, r.points_out
        );
        for (why, n) in &r.removed {
            let _ = write!(figures, " ({n} {why})");
        }
        figures.push_str("; ");
    }
    let step = Step {
        name: "prepare (.amap)",
        seconds: t.elapsed().as_secs_f64(),
        figures,
    };
    Ok((step, amap_path, map_cloud))
}

/// Exports the map for MARSIM (binary x y z PCD) and GIS (LAZ) into `out/export/`.
fn export_step(out: &Path, map_cloud: &Cloud) -> anyhow::Result<Step> {
    let t = Instant::now();
    let marsim = out.join("export/demo_marsim.pcd");
    let for_marsim = ExportOptions {
        target: Target::Marsim,
        ..ExportOptions::default()
    };
    export(map_cloud, &marsim, &for_marsim)?;
    let laz = out.join("export/demo_map.laz");
    export(map_cloud, &laz, &ExportOptions::default())?;
    Ok(Step {
        name: "export",
        seconds: t.elapsed().as_secs_f64(),
        figures: format!(
            "{} points to {} and {}",
            map_cloud.len(),
            rel(out, &marsim),
            rel(out, &laz)
        ),
    })
}

fn rel(base: &Path, p: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

/// Flies the demo mission, writing the flight outputs; returns a one-line summary and a frame from mid-flight.
fn fly(
    map: &Path,
    mission: &Mission,
    dir: &Path,
    quiet: bool,
) -> anyhow::Result<(String, Option<Frame>)> {
    let mut flight = Flight::new(Map::open(map, None)?, mission, Path::new("."))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // The mission as flown, to fly again with `aerie fly`.
    let text = toml::to_string_pretty(mission)?;
    let mission_path = dir.join("mission.toml");
    aerie_pipeline::io::atomic::write_atomic(&mission_path, |f| {
        f.write_all(text.as_bytes())
            .map_err(|e| Error::io(&mission_path, e))
    })?;
    flight.record_to(&dir.join("flight.mcap"), mission.recording)?;
    let (points, uses_index) = (
        flight.simulator().map().positions.len(),
        flight.uses_beam_index(),
    );
    super::build_beam_index(points, uses_index, quiet, || flight.warm_up());
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(flight.end_time().ceil() as u64)
    };
    let mut kept: Option<Frame> = None;
    let wall = Instant::now();
    while !flight.finished() {
        let until = flight.time() + 1.0;
        let mut on_frame = |_: &str, f: &Frame| {
            if kept.is_none() && f.start_s > 8.0 {
                kept = Some(f.clone());
            }
        };
        flight.run_until(until, &mut on_frame)?;
        bar.set_position(flight.time() as u64);
    }
    bar.finish_and_clear();
    flight.finish_recording()?;
    let info = RunInfo {
        map: map.display().to_string(),
        mission: dir.join("mission.toml").display().to_string(),
        seed: mission.seed,
        wall_s: wall.elapsed().as_secs_f64(),
    };
    write_run(dir, &flight, &info)?;
    plots::flight::write(dir, &flight)?;
    let s = &flight.summary()[0];
    let wall_s = wall.elapsed().as_secs_f64();
    Ok((
        format!(
            "{:.1} s flown in {:.1} s ({:.1}x real time): {:.1} m, top speed {:.2} m/s, {} Avia frames ({} points), {} collisions, goals {}",
            flight.time(),
            wall_s,
            flight.time() / wall_s.max(1e-9),
            s.path_length_m,
            s.max_speed_m_s,
            s.lidar_frames,
            s.lidar_points,
            s.collisions,
            if s.goals_done { "done" } else { "not done" }
        ),
        kept,
    ))
}

fn report_html(steps: &[Step], total_s: f64) -> String {
    let mut rows = String::new();
    for s in steps {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{:.1} s</td><td>{}</td></tr>",
            s.name,
            s.seconds,
            html_escape(&s.figures)
        );
    }
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>Aerie demo</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;background:#fafafa;color:#222}}
img{{max-width:100%;border:1px solid #ccc}} td{{padding:4px 8px;vertical-align:top}} table{{border-collapse:collapse}}
tr:nth-child(even){{background:#eee}} code{{background:#eee;padding:1px 4px}}</style></head><body>
<h1>Aerie demo</h1>
<p>A procedural site (forest, building with a corridor, poles and wires, parked vehicles;
<code>maps/demo/scene.toml</code>) was scanned by a simulated terrestrial scanner from five stations,
with range noise, stray points, mixed points on edges and a person walking through. The raw scan was cleaned
(the walking person removed by the free space the other stations saw, then outliers) and packed into a map, exported for MARSIM and GIS,
and a quadrotor with a Livox Avia flew through it, recording ROS 2 data. Total time {total_s:.1} s.</p>
<table><tr><th>step</th><th>time</th><th>figures</th></tr>{rows}</table>
<h2>The raw scan, from above</h2><p><code>raw/demo_scan.laz</code>: stations' density falls with distance; stray points and the walking person are in it.</p>
<img src="raw.png">
<h2>The walking person, removed</h2><p>The stations' poses are written beside the raw scan (<code>raw/demo_poses.csv</code>: line <code>station<i>k</i></code> is the pose of the points whose <code>point_source_id</code> is <i>k</i>), so the map is prepared as
<code>aerie prepare raw/demo_scan.laz --poses raw/demo_poses.csv --remove-moving -o demo.amap</code> would: every point a later station saw through is removed (free-space carving, <code>filters.moving</code>).
The points removed, from above (the person's path through the site; the simulator's labels score it in the table above):</p>
<img src="moving.png">
<h2>The prepared map, from above</h2><p><code>demo.amap</code> (and <code>export/demo_marsim.pcd</code>, <code>export/demo_map.laz</code>): the walking person and outliers removed, 0.1 m resolution, normals and plane thickness.</p>
<img src="map.png">
<h2>The flight</h2><p><code>flight/flight.mcap</code> (PointCloud2 with the Livox driver's fields x y z intensity tag line timestamp, Imu, Odometry, TF; open it in Foxglove or play it with <code>ros2 bag play</code>),
<code>flight/uav.tum</code> (ground truth), <code>flight/mission.toml</code> (fly it again: <code>aerie fly demo.amap --mission flight/mission.toml -o run/</code>).
Top: the path over the map (red crosses: collisions); below: altitude and speed over time.</p>
<img src="flight/flight.png">
<h2>One LiDAR frame</h2><p>A Livox Avia frame from mid-flight as a range image (near is bright).</p>
<img src="scan.png">
</body></html>
"#
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
