//! `aerie scan MAP --sensor NAME --pose x,y,z,roll,pitch,yaw`: render what a LiDAR or depth camera would measure.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::io::{self, Format, WriteOptions};
use aerie_pipeline::map::MapView;
use aerie_pipeline::{Cloud, Error};
use aerie_simcore::Simulator;
use aerie_simcore::render::{Frame, Image, Method, RenderParams};
use aerie_simcore::sensor::{Pattern, SensorModel};
use aerie_simcore::trajectory::{Isometry3, Static, Trajectory, Tum, pose_from_xyz_rpy};
use anyhow::Context;

use super::BadInput;
use super::choices::{MethodArg, PointsInArg};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prepared map (.amap), or a scan file, which is prepared in memory first (default recipe).
    map: PathBuf,
    /// Sensor preset name (`aerie sensors` lists them), a sensor TOML file, or an Ouster unit's metadata JSON (its
    /// own beam table, in its sensor frame).
    #[arg(long)]
    sensor: String,
    /// Sensor pose in the map frame: x,y,z in metres, roll,pitch,yaw in radians (R = Rz(yaw) Ry(pitch) Rx(roll);
    /// sensor x forward, z up).
    #[arg(long, value_parser = super::parse_numbers::<6>, allow_hyphen_values = true)]
    pose: Option<[f64; 6]>,
    /// A TUM trajectory (`t x y z qx qy qz qw` per line) of the sensor in the map frame, instead of --pose.
    #[arg(long, conflicts_with = "pose")]
    trajectory: Option<PathBuf>,
    /// Output scan (.pcd .ply .las .laz .xyz ...): points in the sensor frame that --points-in names, with
    /// intensity, time (seconds since the frame start) and ring.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write the first frame as a 16-bit PNG image (millimetres, 0 = no return): for a depth camera its
    /// depth image (depth along the optical axis, as RealSense and ROS give it); for LiDARs the range image,
    /// rings by columns for spinning LiDARs (top-most beam in row 0), azimuth across and elevation down for
    /// Livox.
    #[arg(long)]
    depth_png: Option<PathBuf>,
    /// Number of consecutive frames. With --output they become a numbered series (scan_000000.pcd, ...)
    /// unless --merge is given.
    #[arg(long, default_value_t = 1)]
    frames: u64,
    /// Write all frames into one file, in the map frame (time counts from the first frame's start).
    #[arg(long, requires = "output")]
    merge: bool,
    /// Start time on the trajectory's clock, seconds. Default: the trajectory's first time (0 for --pose).
    #[arg(long)]
    start: Option<f64>,
    /// Where the points of a sensor moving along --trajectory are given: `start` (default) and `end`, in the
    /// sensor frame at the frame start or at its last firing with the motion compensated; `firing`, each in the
    /// sensor frame at its own firing time, as the driver gives them (motion distortion left in).
    #[arg(long, value_enum, default_value_t = PointsInArg::Start)]
    points_in: PointsInArg,
    /// Renderer (default auto).
    #[arg(long)]
    method: Option<MethodArg>,
    /// Turn plane correction off (every footprint is a sphere around its point).
    #[arg(long)]
    no_plane_correction: bool,
    /// Seed of the noise; the same seed gives the same scan.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Resolution r_map used when MAP is a scan file rather than a prepared map, metres.
    #[arg(long)]
    resolution: Option<f64>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

/// A preset name, a path to a sensor TOML, or an Ouster unit's metadata JSON (`.json`).
pub fn load_sensor(spec: &str) -> anyhow::Result<SensorModel> {
    let as_path = Path::new(spec);
    let is = |ext: &str| {
        as_path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(ext))
    };
    if is("toml") || is("json") || as_path.is_file() {
        let text = std::fs::read_to_string(as_path).map_err(|e| Error::io(as_path, e))?;
        return SensorModel::from_text(&text)
            .map_err(|e| BadInput(format!("{}: {e}", as_path.display())).into());
    }
    SensorModel::preset(spec).map_err(|e| BadInput(e.to_string()).into())
}

/// Writes a range image as a 16-bit PNG, millimetres (0 = no return).
fn write_range_png(path: &Path, image: &Image) -> anyhow::Result<()> {
    let bytes: Vec<u8> = image
        .data
        .iter()
        .flat_map(|&r| {
            let mm = if r > 0.0 {
                (r * 1000.0).round().clamp(1.0, 65535.0) as u16
            } else {
                0
            };
            mm.to_be_bytes()
        })
        .collect();
    aerie_pipeline::io::atomic::write_atomic(path, |f| {
        let mut enc = png::Encoder::new(
            std::io::BufWriter::new(f),
            image.width as u32,
            image.height as u32,
        );
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Sixteen);
        let err = |e: png::EncodingError| Error::io(path, std::io::Error::other(e));
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(&bytes).map_err(err)?;
        writer.finish().map_err(err)
    })?;
    Ok(())
}

/// `--start` must be a time, and within the trajectory when there is one.
fn check_start(t0: f64, span: Option<(f64, f64)>, args: &Args) -> anyhow::Result<()> {
    if !t0.is_finite() {
        return Err(BadInput(format!(
            "--start must be a finite time in seconds, got {t0}"
        ))
        .into());
    }
    if let (Some((first, last)), Some(path)) = (span, &args.trajectory)
        && !(first..=last).contains(&t0)
    {
        return Err(BadInput(format!(
            "--start {t0} is outside the trajectory {}, which runs from {first} to {last} s",
            path.display()
        ))
        .into());
    }
    Ok(())
}

/// The arguments' own consistency, checked before the map is opened: a frame count, output names whose format
/// is known and that do not overwrite an input, and a point frame that a merged file can use.
fn check_args(args: &Args) -> anyhow::Result<()> {
    if args.frames == 0 {
        return Err(BadInput("--frames must be at least 1".into()).into());
    }
    let inputs: Vec<&Path> = [Some(&args.map), args.trajectory.as_ref()]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    for out in [&args.output, &args.depth_png].into_iter().flatten() {
        super::check_output(out, &inputs)?;
    }
    if let Some(png) = &args.depth_png
        && !png
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
    {
        return Err(BadInput(format!(
            "--depth-png writes a PNG: name it .png, not {}",
            png.display()
        ))
        .into());
    }
    if let Some(out) = &args.output
        && Format::from_path(out).is_none()
    {
        return Err(BadInput(format!(
            "cannot tell the format of {} from its extension; use .pcd .ply .las .laz .e57 .xyz .bin",
            out.display()
        ))
        .into());
    }
    if args.merge && args.points_in == PointsInArg::Firing {
        return Err(BadInput(
            "--merge places points in the map frame, which needs them compensated for the motion: use \
             --points-in start or end with it"
                .into(),
        )
        .into());
    }
    Ok(())
}

/// Where the sensor goes and when the frames start.
struct Timeline {
    /// A fixed pose or a TUM file.
    trajectory: Box<dyn Trajectory>,
    /// The first frame's start, seconds.
    t0: f64,
    /// The time a trajectory file covers, seconds.
    span: Option<(f64, f64)>,
}

fn timeline(args: &Args) -> anyhow::Result<Timeline> {
    let (trajectory, t0, span): (Box<dyn Trajectory>, f64, Option<(f64, f64)>) =
        match (&args.pose, &args.trajectory) {
            (Some(p), None) => {
                let pose = pose_from_xyz_rpy(p[0], p[1], p[2], p[3], p[4], p[5]);
                (Box::new(Static(pose)), args.start.unwrap_or(0.0), None)
            }
            (None, Some(t)) => {
                let tum = Tum::load(t)?;
                let span = tum.span_s();
                (Box::new(tum), args.start.unwrap_or(span.0), Some(span))
            }
            _ => {
                return Err(BadInput(
                    "give the sensor pose with --pose x,y,z,roll,pitch,yaw or --trajectory FILE"
                        .into(),
                )
                .into());
            }
        };
    check_start(t0, span, args)?;
    Ok(Timeline {
        trajectory,
        t0,
        span,
    })
}

/// The renderer's settings the arguments ask for: seed, plane correction, point frame, method.
fn render_params(args: &Args) -> RenderParams {
    let params = RenderParams {
        seed: args.seed,
        plane_correction: !args.no_plane_correction,
        points_in: args.points_in.into(),
        ..RenderParams::default()
    };
    match args.method {
        Some(m) => m.params(&params),
        None => params,
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let sensor = load_sensor(&args.sensor)?;
    check_args(args)?;
    let Timeline {
        trajectory,
        t0,
        span,
    } = timeline(args)?;
    let mut sim = Simulator::new(super::open_map(&args.map, args.resolution)?)
        .with_params(render_params(args));
    // The trajectory is the sensor's own: it is mounted at the body origin.
    let lidar = sim
        .add_sensor(&sensor.name, sensor.clone(), Isometry3::identity())
        .map_err(|e| BadInput(e.to_string()))?;
    // A warning, so printed under --quiet as well.
    if let Some((_, end)) = span {
        // The last frame fires until the next one would start.
        let reach = sim.frame_start(lidar, t0, args.frames);
        if reach > end + 1e-9 {
            eprintln!(
                "warning: the trajectory ends at {end} s but the frames fire until {reach:.3} s; beams fired after \
                 its end keep its last pose"
            );
        }
    }
    let mut merged = Cloud::default();
    let mut total_points = 0usize;
    let (points, uses_index) = (sim.map().positions.len(), sim.uses_beam_index());
    super::build_beam_index(points, uses_index, args.quiet, || sim.warm_up());
    let mut render_s = 0.0;
    for k in 0..args.frames {
        let frame_start = sim.frame_start(lidar, t0, k);
        let t = Instant::now();
        let frame = sim.render(lidar, trajectory.as_ref(), frame_start, k)?;
        render_s += t.elapsed().as_secs_f64();
        total_points += frame.points.len();
        if k == 0 && frame.points.is_empty() {
            warn_if_outside(&sim.map(), &trajectory.world_from_sensor(frame_start));
        }
        keep_frame(args, &sensor, &frame, k, frame_start - t0, &mut merged)?;
        if !args.quiet {
            eprintln!(
                "frame {k}: {} of {} beams returned ({} renderer, {:.1} ms)",
                frame.points.len(),
                frame.beams,
                if frame.method == Method::Beam {
                    "beam"
                } else {
                    "splat"
                },
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
    if let Some(out) = &args.output
        && args.merge
        && args.frames > 1
    {
        super::warn_losses(&merged, out, None);
        io::write(&merged, out, None, &WriteOptions::default())
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if !args.quiet {
        eprintln!(
            "{} frame{} of {}: {} points, rendering {:.1} ms per frame, {:.2} s in all",
            args.frames,
            if args.frames == 1 { "" } else { "s" },
            sensor.name,
            total_points,
            render_s * 1e3 / args.frames as f64,
            started.elapsed().as_secs_f64()
        );
        if args.output.is_none() && args.depth_png.is_none() {
            eprintln!("nothing written: give -o FILE (and --depth-png FILE) to keep the scan");
        }
    }
    Ok(())
}

/// What the arguments ask to keep of frame `k` (`since_first` seconds after the first frame's start): the
/// first frame's range or depth image, the frame as its own file (numbered when there are several), or its
/// points added to the merged cloud.
fn keep_frame(
    args: &Args,
    sensor: &SensorModel,
    frame: &Frame,
    k: u64,
    since_first: f64,
    merged: &mut Cloud,
) -> anyhow::Result<()> {
    if k == 0
        && let Some(png_path) = &args.depth_png
    {
        let image = if matches!(sensor.pattern, Pattern::Pinhole(_)) {
            frame.depth_image(sensor)
        } else {
            frame.range_image(sensor)
        };
        write_range_png(png_path, &image)?;
    }
    let Some(out) = &args.output else {
        return Ok(());
    };
    if args.merge && args.frames > 1 {
        merged.append(&frame.to_cloud(since_first, true));
        return Ok(());
    }
    let path = if args.frames > 1 {
        super::numbered(out, k)
    } else {
        out.clone()
    };
    let cloud = frame.to_cloud(0.0, false);
    if k == 0 {
        super::warn_losses(&cloud, &path, None);
    }
    io::write(&cloud, &path, None, &WriteOptions::default())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Warns when a frame came back empty because the sensor stands outside the map: the usual cause is a pose in
/// local coordinates given for a georeferenced map, or the reverse.
fn warn_if_outside(map: &MapView, pose: &Isometry3<f64>) {
    let Some((lo, hi)) = map.bounds() else {
        return;
    };
    let p = pose.translation.vector;
    if (0..3).all(|k| p[k] >= lo[k] && p[k] <= hi[k]) {
        return;
    }
    eprintln!(
        "warning: no beam returned: the sensor at ({:.2}, {:.2}, {:.2}) is outside the map, which spans x {:.2}..{:.2}, \
         y {:.2}..{:.2}, z {:.2}..{:.2} (map frame, metres)",
        p[0], p[1], p[2], lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]
    );
}
