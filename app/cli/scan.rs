//! `aerie scan MAP --sensor NAME --pose x,y,z,roll,pitch,yaw`: render what a LiDAR or depth camera would measure.

use std::path::{Path, PathBuf};
use std::time::Instant;

use aerie_pipeline::io::{self, Format, ReadOptions, WriteOptions};
use aerie_pipeline::map::amap::AmapFile;
use aerie_pipeline::map::{MapView, PackedMap};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, Error, NoProgress};
use aerie_simcore::render::{Frame, Method, RenderParams, Renderer};
use aerie_simcore::sensor::{Beam, Pattern, SensorModel};
use aerie_simcore::trajectory::{Static, Trajectory, Tum, pose_from_xyz_rpy};
use anyhow::Context;

use super::BadInput;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A prepared map (.amap), or a scan file, which is prepared in memory first (default recipe).
    map: PathBuf,
    /// Sensor preset name (`aerie sensors` lists them) or a sensor TOML file.
    #[arg(long)]
    sensor: String,
    /// Sensor pose in the map frame: x,y,z in metres, roll,pitch,yaw in radians (R = Rz(yaw) Ry(pitch) Rx(roll);
    /// sensor x forward, z up).
    #[arg(long, value_parser = super::parse_numbers::<6>, allow_hyphen_values = true)]
    pose: Option<[f64; 6]>,
    /// A TUM trajectory (`t x y z qx qy qz qw` per line) of the sensor in the map frame, instead of --pose.
    #[arg(long, conflicts_with = "pose")]
    trajectory: Option<PathBuf>,
    /// Output scan (.pcd .ply .las .laz .xyz ...): points in the sensor frame at the frame start, with
    /// intensity, time (seconds since the frame start) and ring.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also write the first frame as a 16-bit PNG range image (millimetres, 0 = no return): rings by columns for
    /// spinning LiDARs, pixels for depth cameras, azimuth across and elevation down for Livox.
    #[arg(long)]
    depth_png: Option<PathBuf>,
    /// Number of consecutive frames. With --output they become a numbered series (scan_000000.pcd, ...)
    /// unless --merge is given.
    #[arg(long, default_value_t = 1)]
    frames: u64,
    /// Write all frames into one file, in the map frame (time counts from the first frame's start).
    #[arg(long)]
    merge: bool,
    /// Start time on the trajectory's clock, seconds. Default: the trajectory's first time (0 for --pose).
    #[arg(long)]
    start: Option<f64>,
    /// Renderer: splat, beam or auto.
    #[arg(long, value_parser = parse_method)]
    method: Option<Method>,
    /// Turn plane correction off (every footprint is a sphere around its point).
    #[arg(long)]
    no_plane_correction: bool,
    /// Seed of the noise; the same seed gives the same scan.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Resolution r_map used when MAP is a scan file rather than a prepared map, metres.
    #[arg(long)]
    resolution: Option<f64>,
    #[arg(short, long)]
    quiet: bool,
}

fn parse_method(s: &str) -> Result<Method, String> {
    match s {
        "splat" => Ok(Method::Splat),
        "beam" => Ok(Method::Beam),
        "auto" => Ok(Method::Auto),
        _ => Err(format!(
            "unknown renderer {s:?}; expected splat, beam or auto"
        )),
    }
}

/// A preset name, or a path to a sensor TOML.
pub fn load_sensor(spec: &str) -> anyhow::Result<SensorModel> {
    let as_path = Path::new(spec);
    if spec.ends_with(".toml") || as_path.is_file() {
        let text = std::fs::read_to_string(as_path).map_err(|e| Error::io(as_path, e))?;
        return SensorModel::from_toml(&text)
            .map_err(|e| BadInput(format!("{}: {e}", as_path.display())).into());
    }
    SensorModel::preset(spec).map_err(|e| BadInput(e.to_string()).into())
}

/// The map: memory-mapped when prepared, else prepared in memory from a scan file.
enum LoadedMap {
    File(Box<AmapFile>),
    Memory(Box<PackedMap>),
}

impl LoadedMap {
    fn view(&self) -> MapView<'_> {
        match self {
            LoadedMap::File(f) => f.view(),
            LoadedMap::Memory(m) => m.view(),
        }
    }
}

fn load_map(path: &Path, resolution: Option<f64>) -> anyhow::Result<LoadedMap> {
    if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("amap"))
    {
        return Ok(LoadedMap::File(Box::new(
            AmapFile::open(path).with_context(|| format!("cannot open map {}", path.display()))?,
        )));
    }
    let cloud = io::read(path, None, &ReadOptions::default())
        .with_context(|| format!("cannot read {}", path.display()))?;
    let recipe = Recipe {
        resolution_m: resolution.unwrap_or(0.1),
        ..Recipe::default()
    };
    let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress)?;
    Ok(LoadedMap::Memory(Box::new(prepared.map)))
}

/// Scan points as a cloud in the sensor frame (or, with `world_from_sensor`, in the map frame).
fn frame_cloud(
    frame: &Frame,
    time_offset_s: f64,
    world_from_sensor: Option<&nalgebra::Isometry3<f64>>,
) -> Cloud {
    let mut cloud = Cloud::default();
    if let Some(pose) = world_from_sensor {
        let t = pose.translation.vector;
        cloud.origin = [t.x.floor(), t.y.floor(), t.z.floor()];
    }
    let o = cloud.origin;
    cloud.positions = frame
        .points
        .iter()
        .map(|p| match world_from_sensor {
            Some(pose) => {
                let w =
                    pose * nalgebra::Point3::new(p.xyz[0] as f64, p.xyz[1] as f64, p.xyz[2] as f64);
                [
                    (w.x - o[0]) as f32,
                    (w.y - o[1]) as f32,
                    (w.z - o[2]) as f32,
                ]
            }
            None => p.xyz,
        })
        .collect();
    cloud.intensity = Some(frame.points.iter().map(|p| p.intensity).collect());
    cloud.time = Some(
        frame
            .points
            .iter()
            .map(|p| time_offset_s + p.time_s as f64)
            .collect(),
    );
    cloud.ring = Some(frame.points.iter().map(|p| p.ring).collect());
    cloud
}

/// Maps a beam index to a pixel index of the range image.
type PixelOf = Box<dyn Fn(u32) -> Option<usize>>;

/// A 16-bit range image: depth cameras by pixel, LiDARs by azimuth/elevation at the sensor's angular resolution.
fn write_depth_png(
    path: &Path,
    sensor: &SensorModel,
    beams: &[Beam],
    frame: &Frame,
) -> anyhow::Result<()> {
    let (w, h, pixel_of): (usize, usize, PixelOf) = match &sensor.pattern {
        Pattern::Pinhole(p) => {
            let (w, h) = (p.width as usize, p.height as usize);
            (
                w,
                h,
                Box::new(move |beam| ((beam as usize) < w * h).then_some(beam as usize)),
            )
        }
        Pattern::Spinning(p) => {
            // Rows are rings (top row = highest ring), columns are firing columns: the sensor's native image.
            let lasers = p.elevations_deg.len().max(1);
            let (w, h) = (p.columns as usize, lasers);
            let rings: Vec<u16> = beams.iter().map(|b| b.ring).collect();
            (
                w,
                h,
                Box::new(move |beam| {
                    let ring = *rings.get(beam as usize)? as usize;
                    let column = beam as usize / lasers;
                    (ring < h && column < w).then(|| (h - 1 - ring) * w + column)
                }),
            )
        }
        _ => {
            let fov = sensor.fov();
            let res = sensor.angular_resolution_rad().max(1e-4);
            let w = (((fov.azimuth_max_rad - fov.azimuth_min_rad) / res).ceil() as usize)
                .clamp(1, 8192);
            let h = (((fov.elevation_max_rad - fov.elevation_min_rad) / res).ceil() as usize)
                .clamp(1, 4096);
            let beams = beams.to_vec();
            (
                w,
                h,
                Box::new(move |beam| {
                    let d = beams.get(beam as usize)?.dir;
                    let az = d[1].atan2(d[0]);
                    let el = d[2].atan2(d[0].hypot(d[1]));
                    // Azimuth decreases to the right (looking along +x, +y is left); elevation decreases downward.
                    let u = ((fov.azimuth_max_rad - az)
                        / (fov.azimuth_max_rad - fov.azimuth_min_rad)
                        * w as f32) as isize;
                    let v = ((fov.elevation_max_rad - el)
                        / (fov.elevation_max_rad - fov.elevation_min_rad)
                        * h as f32) as isize;
                    let (u, v) = (
                        u.clamp(0, w as isize - 1) as usize,
                        v.clamp(0, h as isize - 1) as usize,
                    );
                    Some(v * w + u)
                }),
            )
        }
    };
    let mut img = vec![0u16; w * h];
    for p in &frame.points {
        if let Some(i) = pixel_of(p.beam) {
            let mm = (p.range_m * 1000.0).round().clamp(1.0, 65535.0) as u16;
            if img[i] == 0 || mm < img[i] {
                img[i] = mm;
            }
        }
    }
    let bytes: Vec<u8> = img.iter().flat_map(|v| v.to_be_bytes()).collect();
    aerie_pipeline::io::atomic::write_atomic(path, |f| {
        let mut enc = png::Encoder::new(std::io::BufWriter::new(f), w as u32, h as u32);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Sixteen);
        let err = |e: png::EncodingError| Error::io(path, std::io::Error::other(e));
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(&bytes).map_err(err)?;
        writer.finish().map_err(err)
    })?;
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let sensor = load_sensor(&args.sensor)?;
    if args.frames == 0 {
        return Err(BadInput("--frames must be at least 1".into()).into());
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
    let trajectory: Box<dyn Trajectory> = match (&args.pose, &args.trajectory) {
        (Some(p), None) => Box::new(Static(pose_from_xyz_rpy(
            p[0], p[1], p[2], p[3], p[4], p[5],
        ))),
        (None, Some(t)) => Box::new(Tum::load(t)?),
        _ => {
            return Err(BadInput(
                "give the sensor pose with --pose x,y,z,roll,pitch,yaw or --trajectory FILE".into(),
            )
            .into());
        }
    };
    let t0 = match (args.start, &args.trajectory) {
        (Some(s), _) => s,
        (None, Some(p)) => Tum::load(p)?.span_s().0,
        (None, None) => 0.0,
    };
    let map = load_map(&args.map, args.resolution)?;
    let view = map.view();
    let mut params = RenderParams {
        seed: args.seed,
        plane_correction: !args.no_plane_correction,
        ..RenderParams::default()
    };
    if let Some(m) = args.method {
        params.method = m;
    }
    let period = sensor.frame_period_s();
    let mut beams = Vec::new();
    let mut origins = Vec::new();
    let mut renderer: Option<Renderer> = None;
    let mut merged = Cloud::default();
    let mut total_points = 0usize;
    let mut render_s = 0.0;
    for k in 0..args.frames {
        sensor.beams(k, &mut beams);
        sensor.beam_origins_m(&beams, &mut origins);
        let r = match renderer.as_mut() {
            None => renderer.insert(Renderer::new(&beams, &sensor.physics, &params)),
            Some(r) => {
                // Spinning sensors and cameras repeat their pattern; Livox patterns run on from frame to frame.
                if matches!(sensor.pattern, Pattern::Rosette(_) | Pattern::Sweep(_)) {
                    r.set_beams(&beams);
                }
                r
            }
        };
        r.set_beam_origins(&origins);
        let frame_start = t0 + k as f64 * period;
        let t = Instant::now();
        let frame = r.render(&view, trajectory.as_ref(), frame_start, k);
        render_s += t.elapsed().as_secs_f64();
        total_points += frame.points.len();
        if k == 0
            && let Some(png_path) = &args.depth_png
        {
            write_depth_png(png_path, &sensor, &beams, &frame)?;
        }
        if let Some(out) = &args.output {
            if args.merge && args.frames > 1 {
                let pose = trajectory.world_from_sensor(frame_start);
                merged.append(&frame_cloud(&frame, frame_start - t0, Some(&pose)));
            } else {
                let path = if args.frames > 1 {
                    super::numbered(out, k)
                } else {
                    out.clone()
                };
                io::write(
                    &frame_cloud(&frame, 0.0, None),
                    &path,
                    None,
                    &WriteOptions::default(),
                )
                .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        if !args.quiet {
            eprintln!(
                "frame {k}: {} of {} beams returned ({} renderer, {:.1} ms)",
                frame.points.len(),
                beams.len(),
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
        io::write(&merged, out, None, &WriteOptions::default())
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if !args.quiet {
        eprintln!(
            "{} frames of {}: {} points, rendering {:.1} ms per frame, {:.2} s in all",
            args.frames,
            sensor.name,
            total_points,
            render_s * 1e3 / args.frames as f64,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
