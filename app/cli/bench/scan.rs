//! `aerie bench scan`: frames per second of the scan renderers on procedural maps
//! ([`aerie_simcore::synthetic`]; the sensor stands still 1.5 m above the ground in the middle of the scene) or on
//! a prepared map file at a given pose, for shipped sensor presets. Frames go through [`Simulator::render`], so
//! the time of a frame includes what a user's frame costs (a Livox pattern is generated anew for every frame;
//! spinning patterns repeat). Map building or loading and the beam renderer's index are timed apart.

use std::time::Instant;

use std::path::PathBuf;

use aerie_simcore::render::RenderParams;
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::synthetic::synthetic_map;
use aerie_simcore::trajectory::{Isometry3, Static, pose_from_xyz_rpy};
use aerie_simcore::{Map, SensorId, Simulator};
use anyhow::Context;
use clap::ValueEnum;

use super::{median, process_cpu_s};
use crate::cli::BadInput;
use crate::cli::choices::MethodArg;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Map sizes, points (comma separated). 20000000 needs ~2 GB and a minute or two to build. Ignored with
    /// --map.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000_000usize, 5_000_000])]
    points: Vec<usize>,
    /// A prepared map file (.amap, or a scan file prepared on the fly) instead of the procedural maps.
    #[arg(long, requires = "pose")]
    map: Option<PathBuf>,
    /// Sensor pose in the --map frame: x,y,z in metres, roll,pitch,yaw in radians.
    #[arg(long, requires = "map", value_parser = crate::cli::parse_numbers::<6>, allow_hyphen_values = true)]
    pose: Option<[f64; 6]>,
    /// Map resolution r_map, metres.
    #[arg(long, default_value_t = 0.05)]
    resolution: f32,
    /// Sensor presets (comma separated; see `aerie sensors`).
    #[arg(long, value_delimiter = ',', default_values_t = ["avia".to_string(), "mid360".to_string(), "os1_128".to_string()])]
    sensors: Vec<String>,
    /// Renderers (comma separated), named as `aerie scan --method` names them: splat, beam, auto, marsim.
    #[arg(long, value_delimiter = ',', default_values_t = ["splat".to_string(), "beam".to_string()])]
    renderers: Vec<String>,
    /// Timed frames per sensor and renderer (after one warm-up frame); the median is reported.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Seed of the procedural map.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the rays of each sensor's first timed frame to DIR/rays_<sensor>.f32 (little-endian f32, six per
    /// ray: origin x y z and unit direction x y z in the map frame, nominal directions without jitter or beam
    /// origin offsets), for the peer ray casters of bench/scan_peers.py.
    #[arg(long)]
    rays_out: Option<PathBuf>,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let sensors: Vec<SensorModel> = args
        .sensors
        .iter()
        .map(|name| {
            SensorModel::preset(name).map_err(|e| BadInput(format!("--sensors: {e}")).into())
        })
        .collect::<anyhow::Result<_>>()?;
    let methods: Vec<(&str, RenderParams)> = args
        .renderers
        .iter()
        .map(|m| {
            let arg = MethodArg::from_str(m, false).map_err(|_| {
                BadInput(format!(
                    "--renderers: unknown renderer {m}: expected splat, beam, auto or marsim"
                ))
            })?;
            Ok((m.as_str(), arg.params(&RenderParams::default())))
        })
        .collect::<anyhow::Result<_>>()?;
    if !args.json {
        println!(
            "{:>10} {:<8} {:>7} {:<6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
            "map pts",
            "sensor",
            "beams",
            "method",
            "median ms",
            "min ms",
            "max ms",
            "cpu ms",
            "returns",
            "Mrays/s"
        );
    }
    if let Some(path) = &args.map {
        let [x, y, z, roll, pitch, yaw] = args.pose.unwrap_or_default();
        let t = Instant::now();
        let map =
            Map::open(path, None).with_context(|| format!("cannot open map {}", path.display()))?;
        let load_s = t.elapsed().as_secs_f64();
        let world_from_sensor = pose_from_xyz_rpy(x, y, z, roll, pitch, yaw);
        return bench_map(
            args,
            &sensors,
            &methods,
            Simulator::new(map),
            load_s,
            world_from_sensor,
        );
    }
    for &n in &args.points {
        let t = Instant::now();
        let map = synthetic_map(n, args.resolution, args.seed)
            .with_context(|| format!("cannot build a synthetic map of {n} points"))?;
        let build_s = t.elapsed().as_secs_f64();
        let world_from_sensor = pose_from_xyz_rpy(0.0, 0.0, 1.5, 0.0, 0.0, 0.3);
        bench_map(
            args,
            &sensors,
            &methods,
            Simulator::new(Map::try_from(map)?),
            build_s,
            world_from_sensor,
        )?;
    }
    Ok(())
}

/// Times the beam index build, then every sensor and renderer on one map, the sensor still at `world_from_sensor`.
fn bench_map(
    args: &Args,
    sensors: &[SensorModel],
    methods: &[(&str, RenderParams)],
    mut sim: Simulator,
    build_s: f64,
    world_from_sensor: Isometry3<f64>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let index = sim.beam_index();
    let index_s = t.elapsed().as_secs_f64();
    let n_points = sim.map().positions.len();
    print_map_line(args, &sim, build_s, index_s, index.memory_bytes());
    for sensor in sensors {
        for (name, params) in methods {
            sim.set_params(params.clone());
            let id = sim.add_sensor(&sensor.name, sensor.clone(), Isometry3::identity())?;
            let timed = time_frames(args, &mut sim, id, &world_from_sensor)?;
            let min = timed.ms.iter().copied().fold(f64::INFINITY, f64::min);
            let max = timed.ms.iter().copied().fold(0.0, f64::max);
            let med = median(timed.ms);
            // Beams fired per second of wall time (median frame).
            let mrays = sensor.beams_per_frame() as f64 / (med * 1e3);
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "map_points": n_points,
                        "sensor": sensor.name,
                        "beams": sensor.beams_per_frame(),
                        "renderer": name,
                        "frames": args.frames,
                        "median_ms": med,
                        "min_ms": min,
                        "max_ms": max,
                        "cpu_ms": timed.cpu_ms,
                        "returns": timed.returns,
                        "mrays_per_s": mrays,
                    })
                );
            } else {
                println!(
                    "{:>10} {:<8} {:>7} {:<6} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>8} {:>8.2}",
                    n_points,
                    sensor.name,
                    sensor.beams_per_frame(),
                    name,
                    med,
                    min,
                    max,
                    timed.cpu_ms,
                    timed.returns,
                    mrays
                );
            }
        }
    }
    Ok(())
}

/// The map's line: its size, and the beam index's build time and memory.
fn print_map_line(args: &Args, sim: &Simulator, build_s: f64, index_s: f64, index_bytes: usize) {
    let view = sim.map();
    let (n_points, n_buckets, bucket_size) =
        (view.positions.len(), view.buckets.len(), view.bucket_size);
    let index_mb = index_bytes as f64 / (1u64 << 20) as f64;
    let per_point = index_bytes as f64 / n_points.max(1) as f64;
    if args.json {
        let line = serde_json::json!({
            "map_points": n_points,
            "buckets": n_buckets,
            "bucket_size_m": bucket_size,
            "map_build_s": build_s,
            "beam_index_build_s": index_s,
            "beam_index_mb": index_mb,
            "beam_index_bytes_per_point": per_point,
        });
        println!("{line}");
    } else {
        println!(
            "# map {n_points} points, {n_buckets} buckets of {bucket_size:.2} m: built in {build_s:.2} s (not counted); beam index {index_s:.3} s, {index_mb:.0} MB ({per_point:.0} bytes per point)",
        );
    }
}

/// What the timed frames of one sensor took.
struct Timed {
    /// Wall time of each frame after the first, milliseconds.
    ms: Vec<f64>,
    /// Mean CPU time per timed frame (beam generation for Livox included: it is small).
    cpu_ms: f64,
    /// Returns of the last frame.
    returns: usize,
}

/// Renders `args.frames` frames after an untimed first one, writing the rays of the first timed frame when
/// `--rays-out` asks.
fn time_frames(
    args: &Args,
    sim: &mut Simulator,
    id: SensorId,
    world_from_sensor: &Isometry3<f64>,
) -> anyhow::Result<Timed> {
    let trajectory = Static(*world_from_sensor);
    let mut ms = Vec::new();
    let mut returns = 0usize;
    let mut cpu0 = None;
    for k in 0..=args.frames {
        if k == 1 {
            cpu0 = process_cpu_s();
        }
        let start = sim.frame_start(id, 0.0, k);
        let t = Instant::now();
        let frame = sim.render(id, &trajectory, start, k)?;
        let dt = t.elapsed().as_secs_f64();
        if k == 1
            && let Some(dir) = &args.rays_out
        {
            let name = &sim.sensor(id).name;
            write_rays(dir, name, sim.beams(id), world_from_sensor)?;
        }
        if k > 0 {
            ms.push(dt * 1e3);
            returns = frame.points.len();
        }
    }
    let cpu_ms = match (cpu0, process_cpu_s()) {
        (Some(a), Some(b)) if args.frames > 0 => (b - a) * 1e3 / args.frames as f64,
        _ => f64::NAN,
    };
    Ok(Timed {
        ms,
        cpu_ms,
        returns,
    })
}

/// Writes the rays of `beams` cast from `world_from_sensor` (see `Args::rays_out`).
fn write_rays(
    dir: &std::path::Path,
    sensor: &str,
    beams: &[aerie_simcore::sensor::Beam],
    world_from_sensor: &Isometry3<f64>,
) -> anyhow::Result<()> {
    let o = world_from_sensor.translation.vector;
    let mut bytes = Vec::with_capacity(beams.len() * 24);
    for b in beams {
        let d = world_from_sensor.rotation
            * nalgebra::Vector3::new(b.dir[0] as f64, b.dir[1] as f64, b.dir[2] as f64).normalize();
        for v in [o.x, o.y, o.z, d.x, d.y, d.z] {
            bytes.extend_from_slice(&(v as f32).to_le_bytes());
        }
    }
    let path = dir.join(format!("rays_{sensor}.f32"));
    aerie_pipeline::io::atomic::write_atomic(&path, |f| {
        use std::io::Write;
        f.write_all(&bytes)
            .map_err(|e| aerie_pipeline::Error::io(&path, e))
    })?;
    Ok(())
}
