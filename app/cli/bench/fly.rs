//! `aerie bench fly`: the real-time factor of the flight loop ([`Flight`], the loop `aerie fly` runs), for the
//! speed figures of issue 9. Three cases, each a mission under `examples/missions/` (embedded; `--mission`
//! flies another): `physics` (one quadrotor without sensors in an empty world: dynamics, control, IMU),
//! `avia` (one Avia quad through a map) and `swarm` (ten Mid-360 quads in a map). Map opening, mission
//! planning and the beam renderer's index are setup, timed apart; frames are rendered but not written unless
//! `--record` is given.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::Cloud;
use aerie_pipeline::map::PackedMap;
use aerie_simcore::flight::Flight;
use aerie_simcore::mission::Mission;
use aerie_simcore::record::Compression;
use aerie_simcore::render::Frame;
use aerie_simcore::simulator::Map;
use anyhow::Context;
use serde::Serialize;

use super::{median, process_cpu_s};
use crate::cli::BadInput;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    case: Case,
}

#[derive(clap::Subcommand, Debug)]
enum Case {
    /// Physics and control alone: examples/missions/bench_physics.toml (one quadrotor, no sensors) in an empty
    /// world (a map of one point, 1 km below). Goal: 1000x real time.
    Physics(Common),
    /// One vehicle with a Livox Avia through --map: examples/missions/bench_avia.toml, made for the lone_star
    /// 4x4 tiled map of docs/benchmarks.md. Goal: 10x real time in a 5-million-point map.
    Avia(WithMap),
    /// Ten vehicles with Livox Mid-360s in --map: examples/missions/bench_swarm.toml, made for the hall map
    /// (maps/hall_map_20cm.pcd prepared at 0.2). Goal: real time.
    Swarm(WithMap),
}

#[derive(clap::Args, Debug)]
struct Common {
    /// Fly this mission (TOML) instead of the case's own.
    #[arg(long)]
    mission: Option<PathBuf>,
    /// Overrides the mission's duration, simulated seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Timed flights (each set up anew); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    repeat: usize,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct WithMap {
    /// A prepared map (.amap).
    #[arg(long)]
    map: PathBuf,
    /// Also record every message to DIR/run_<k>/flight.mcap, as `aerie fly` does (timed with the flight).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Chunk compression of the recording: zstd, lz4 or none. By default, the mission's (zstd unless its
    /// `[recording]` says otherwise), as `aerie fly` does.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Compression::NAMES))]
    compression: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// One timed flight.
#[derive(Serialize)]
struct Run {
    case: &'static str,
    run: usize,
    vehicles: usize,
    sensors: usize,
    setup_s: f64,
    simulated_s: f64,
    wall_s: f64,
    real_time_factor: f64,
    /// CPU time of the process during the flight (both cores count), seconds.
    cpu_s: Option<f64>,
    /// Wall time inside the renderer, seconds.
    render_s: f64,
    lidar_frames: u64,
    lidar_points: u64,
    collisions: usize,
}

const PHYSICS_MISSION: &str = include_str!("../../../examples/missions/bench_physics.toml");
const AVIA_MISSION: &str = include_str!("../../../examples/missions/bench_avia.toml");
const SWARM_MISSION: &str = include_str!("../../../examples/missions/bench_swarm.toml");

/// An empty world: a map needs a point, and one 1 km below the flight is never near a collision query.
fn empty_world() -> anyhow::Result<Map> {
    let cloud = Cloud::from_positions([0.0, 0.0, -1000.0], vec![[0.0; 3]]);
    Ok(Map::try_from(PackedMap::from_cloud(&cloud, 0.2, None)?)?)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.case {
        Case::Physics(c) => {
            let mission = mission(&c, PHYSICS_MISSION)?;
            bench("physics", &c, &mission, None, |_| empty_world())
        }
        Case::Avia(m) => {
            let mut mission = mission(&m.common, AVIA_MISSION)?;
            if let Some(c) = &m.compression {
                mission.recording.compression = c.parse().map_err(BadInput)?;
            }
            bench("avia", &m.common, &mission, m.record.as_deref(), |_| {
                open(&m.map)
            })
        }
        Case::Swarm(m) => {
            let mut mission = mission(&m.common, SWARM_MISSION)?;
            if let Some(c) = &m.compression {
                mission.recording.compression = c.parse().map_err(BadInput)?;
            }
            bench("swarm", &m.common, &mission, m.record.as_deref(), |_| {
                open(&m.map)
            })
        }
    }
}

fn open(path: &Path) -> anyhow::Result<Map> {
    Map::open(path, None).with_context(|| format!("cannot open map {}", path.display()))
}

/// The case's mission: `--mission`, or the embedded one; with `--duration` applied.
fn mission(c: &Common, embedded: &str) -> anyhow::Result<Mission> {
    let mut mission = match &c.mission {
        Some(path) => Mission::load(path).map_err(|e| BadInput(e.to_string()))?,
        None => toml::from_str(embedded).context("embedded bench mission")?,
    };
    if let Some(d) = c.duration {
        mission.duration_s = Some(d);
    }
    mission.check().map_err(BadInput)?;
    Ok(mission)
}

fn bench(
    case: &'static str,
    c: &Common,
    mission: &Mission,
    record: Option<&Path>,
    map: impl Fn(usize) -> anyhow::Result<Map>,
) -> anyhow::Result<()> {
    let base = c
        .mission
        .as_ref()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("examples/missions"));
    if !c.json {
        print_header();
    }
    let mut runs = Vec::new();
    for k in 0..c.repeat.max(1) {
        let record = record.map(|dir| dir.join(format!("run_{k}")));
        let run = fly_once((case, k), mission, &base, &map, record.as_deref())?;
        print_run(&run, &k.to_string(), c.json)?;
        runs.push(run);
    }
    // The median flight by wall time stands for the case.
    let wall = median(runs.iter().map(|r| r.wall_s).collect());
    let Some(mid) = runs
        .iter()
        .min_by(|a, b| (a.wall_s - wall).abs().total_cmp(&(b.wall_s - wall).abs()))
    else {
        return Ok(());
    };
    let mid = Run {
        wall_s: wall,
        real_time_factor: mid.simulated_s / wall.max(1e-12),
        ..*mid
    };
    print_run(&mid, "median", c.json)?;
    if !c.json {
        println!(
            "# load average {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
    }
    Ok(())
}

fn print_header() {
    println!(
        "{:<8} {:>4} {:>4} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>7} {:>11}",
        "case",
        "run",
        "veh",
        "setup s",
        "sim s",
        "wall s",
        "RT factor",
        "cpu s",
        "render s",
        "frames",
        "points"
    );
}

/// Flight `k` of the mission over `map(k)`, recorded into `record` when given: its setup (the map's load or
/// build included), wall and CPU time.
fn fly_once(
    (case, k): (&'static str, usize),
    mission: &Mission,
    base: &Path,
    map: &dyn Fn(usize) -> anyhow::Result<Map>,
    record: Option<&Path>,
) -> anyhow::Result<Run> {
    let t = Instant::now();
    let mut flight = Flight::new(map(k)?, mission, base).map_err(|e| BadInput(e.to_string()))?;
    flight.warm_up();
    if let Some(dir) = record {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        flight.record_to(&dir.join("flight.mcap"), mission.recording)?;
    }
    let setup_s = t.elapsed().as_secs_f64();
    let cpu0 = process_cpu_s();
    let wall = Instant::now();
    let mut on_frame = |_: &str, _: &Frame| {};
    flight.run_until(flight.end_time(), &mut on_frame)?;
    flight.finish_recording()?;
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = process_cpu_s().zip(cpu0).map(|(b, a)| b - a);
    let summary = flight.summary();
    Ok(Run {
        case,
        run: k,
        vehicles: summary.len(),
        sensors: mission.vehicles.iter().map(|v| v.sensors.len()).sum(),
        setup_s,
        simulated_s: flight.time(),
        wall_s,
        real_time_factor: flight.time() / wall_s.max(1e-12),
        cpu_s,
        render_s: flight.render_time_s(),
        lidar_frames: summary.iter().map(|v| v.lidar_frames).sum(),
        lidar_points: summary.iter().map(|v| v.lidar_points).sum(),
        collisions: flight.collisions().count(),
    })
}

fn print_run(r: &Run, label: &str, json: bool) -> anyhow::Result<()> {
    if json {
        let mut v = serde_json::to_value(r)?;
        v["run"] = serde_json::Value::from(label);
        println!("{v}");
        return Ok(());
    }
    println!(
        "{:<8} {:>4} {:>4} {:>8.2} {:>8.1} {:>8.2} {:>9.1} {:>8} {:>8.2} {:>7} {:>11}",
        r.case,
        label,
        r.vehicles,
        r.setup_s,
        r.simulated_s,
        r.wall_s,
        r.real_time_factor,
        r.cpu_s.map_or("-".into(), |c| format!("{c:.2}")),
        r.render_s,
        r.lidar_frames,
        r.lidar_points
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_missions_are_valid() {
        for (name, text, sensors) in [
            ("physics", PHYSICS_MISSION, 0),
            ("avia", AVIA_MISSION, 1),
            ("swarm", SWARM_MISSION, 10),
        ] {
            let m: Mission = toml::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            m.check().unwrap_or_else(|e| panic!("{name}: {e}"));
            let n: usize = m.vehicles.iter().map(|v| v.sensors.len()).sum();
            assert_eq!(n, sensors, "{name}");
        }
    }

    #[test]
    fn physics_case_flies_in_the_empty_world() {
        let mut m: Mission = toml::from_str(PHYSICS_MISSION).unwrap();
        m.duration_s = Some(2.0);
        let mut flight = Flight::new(empty_world().unwrap(), &m, Path::new(".")).unwrap();
        flight.warm_up();
        flight
            .run_until(flight.end_time(), &mut |_: &str, _: &Frame| {})
            .unwrap();
        assert!((flight.time() - 2.0).abs() < 1e-9);
        assert!(
            flight.collisions().next().is_none(),
            "{:?}",
            flight.events()
        );
        let (_, s) = flight.states()[0];
        assert!((s.position.z - 20.0).abs() < 0.5, "{}", s.position.z);
    }
}
