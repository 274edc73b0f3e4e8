//! Subcommands of `aerie`, one module each. Each parses its own arguments (clap derive) and calls the
//! library crates; no algorithm lives here.
//!
//! Everything here is private to the command line but [`main`]: the desktop app calls the libraries (and the
//! shared [`crate::errors`]), never this module, so an import of it from the app does not compile.

mod bench;
mod choices;
mod convert;
mod demo;
mod export;
mod fly;
mod info;
mod mesh;
mod prepare;
mod report;
mod scan;
mod sensors;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::errors::Hint;

/// Aerie: prepare LiDAR maps, simulate scans in them, convert between scan formats.
#[derive(Parser, Debug)]
#[command(
    name = "aerie",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Without a command, aerie opens the desktop app (`aerie app FILE...` imports files at once)."
)]
struct Cli {
    /// Without a subcommand, the desktop app opens.
    #[command(subcommand)]
    command: Option<Command>,
}

/// `aerie app [FILE...]`: open the desktop app, importing the files given.
#[derive(clap::Args, Debug)]
struct AppArgs {
    /// Scan files or maps (.amap) to import at once.
    files: Vec<std::path::PathBuf>,
    /// Take a screenshot of the window once the files have loaded, write it here (PNG) and close.
    #[arg(long)]
    screenshot: Option<std::path::PathBuf>,
    /// Measure the viewport's frame time over N frames orbiting (thinned, then every point), print it and close.
    #[arg(long)]
    bench_frames: Option<u32>,
    /// Points per frame while orbiting in --bench-frames' first phase (default 1000000).
    #[arg(long, default_value_t = 1_000_000)]
    bench_budget: usize,
    /// Window size in points, WIDTHxHEIGHT (e.g. 1400x880).
    #[arg(long, value_parser = parse_size)]
    size: Option<[f32; 2]>,
}

fn parse_size(s: &str) -> Result<[f32; 2], String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, got {s:?}"))?;
    let n = |v: &str| {
        v.trim()
            .parse::<f32>()
            .ok()
            .filter(|v| *v >= 200.0 && *v <= 10_000.0)
    };
    match (n(w), n(h)) {
        (Some(w), Some(h)) => Ok([w, h]),
        _ => Err(format!(
            "expected WIDTHxHEIGHT between 200 and 10000, got {s:?}"
        )),
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Open the desktop app (the same as `aerie` alone), importing the files given.
    App(AppArgs),
    /// Show format, point count, bounds, attributes with their ranges, CRS and scan poses of scan files or maps.
    #[command(allow_negative_numbers = true)]
    Info(info::Args),
    /// Convert a scan file to another format (taken from the output's extension or --format).
    #[command(allow_negative_numbers = true)]
    Convert(convert::Args),
    /// Clean scans and pack them into a map (.amap) for the simulator and for export.
    #[command(allow_negative_numbers = true)]
    Prepare(prepare::Args),
    /// Write a prepared map for another tool (PCD for MARSIM/ROS, PLY with normals, LAS/LAZ, E57, XYZ).
    #[command(allow_negative_numbers = true)]
    Export(export::Args),
    /// Make a surface mesh of a prepared map (.ply, .obj or .glb) for simulators that load meshes.
    #[command(allow_negative_numbers = true)]
    Mesh(mesh::Args),
    /// Render what a LiDAR or depth camera would measure in a map, from a pose or along a trajectory.
    #[command(allow_negative_numbers = true)]
    Scan(scan::Args),
    /// Run the whole product on a built-in scene: scan, prepare, export, fly, and write report.html.
    #[command(allow_negative_numbers = true)]
    Demo(demo::Args),
    /// Fly a mission through a map and record the sensors (ROS 2 MCAP), ground truth and collisions.
    #[command(allow_negative_numbers = true)]
    Fly(fly::Args),
    /// List the sensor presets (`--show NAME` prints one as TOML to copy and edit).
    Sensors(sensors::Args),
    /// Measure the speed of reading, preparing, scanning and flying (see docs/benchmarks.md).
    #[command(allow_negative_numbers = true)]
    Bench(bench::Args),
}

/// The command line: parses the arguments, runs the command, prints the error chain; exits 2 for bad input, 1
/// for any other error. A closed pipe (`aerie info x | head`) is not an error worth reporting.
pub fn main() -> ExitCode {
    let Err(err) = run(Cli::parse()) else {
        return ExitCode::SUCCESS;
    };
    if err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    print_error(&err);
    ExitCode::from(exit_code(&err))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let Some(command) = cli.command else {
        return open_app(None);
    };
    match command {
        Command::App(a) => open_app(Some(a)),
        Command::Info(a) => info::run(&a),
        Command::Convert(a) => convert::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Sensors(a) => sensors::run(a),
        Command::Scan(a) => scan::run(&a),
        Command::Prepare(a) => prepare::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Fly(a) => fly::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Mesh(a) => mesh::run(&a),
    }
}

/// Opens the desktop app, importing the files `args` names.
#[cfg(feature = "app")]
fn open_app(args: Option<AppArgs>) -> anyhow::Result<()> {
    let Some(a) = args else {
        return crate::gui::run(crate::gui::Launch::default());
    };
    crate::gui::run(crate::gui::Launch {
        files: a.files,
        screenshot: a.screenshot,
        size: a.size,
        bench_frames: a.bench_frames.map(|n| (n, a.bench_budget)),
    })
}

/// A build without the `app` feature has no desktop app: say so and what to run instead.
#[cfg(not(feature = "app"))]
fn open_app(_: Option<AppArgs>) -> anyhow::Result<()> {
    Err(BadInput(
        "this aerie was built without the desktop app (cargo build --no-default-features): run one of its commands \
         (`aerie --help` lists them), or build with the default features for the app"
            .into(),
    )
    .into())
}

/// 2 for bad input (unreadable or malformed files, bad parameters), 1 for anything else.
fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<aerie_pipeline::export::ExportError>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        if let Some(e) = cause.downcast_ref::<aerie_pipeline::Error>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        // A map error inside the simulator's is transparent: its chain skips the pipeline error it wraps.
        if let Some(e) = cause.downcast_ref::<aerie_pipeline::filters::moving::MovingError>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        if let Some(e) = cause.downcast_ref::<aerie_simcore::SimError>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        if let Some(e) = cause.downcast_ref::<aerie_simcore::flight::FlightError>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        if let Some(e) = cause.downcast_ref::<aerie_simcore::record::RecordError>() {
            return if e.is_bad_input() { 2 } else { 1 };
        }
        if cause.downcast_ref::<BadInput>().is_some() {
            return 2;
        }
    }
    1
}

/// An error in what the user asked for, detected by the CLI itself.
#[derive(Debug)]
struct BadInput(String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Warns of what the reader of `cloud` read past (data after the points its header declares), quiet or not:
/// points may be missing.
fn warn_read(cloud: &aerie_pipeline::Cloud) {
    for w in &cloud.meta.read_warnings {
        eprintln!("warning: {w}");
    }
}

/// Warns of what writing `cloud` to `out` (in `format`, or the one its extension names) left out.
fn warn_losses(
    cloud: &aerie_pipeline::Cloud,
    out: &std::path::Path,
    format: Option<aerie_pipeline::io::Format>,
) {
    use aerie_pipeline::io;
    let Some(format) = format.or_else(|| io::Format::from_path(out)) else {
        return;
    };
    for loss in io::write_losses(cloud, format) {
        eprintln!("warning: {}: {loss}", out.display());
    }
}

/// Checks `--resolution` before the scan file `map` is prepared with it, so that a bad value is named as the
/// flag's rather than as a fault of the file being opened; warns that it is ignored when `map` is a prepared map.
fn check_resolution(map: &std::path::Path, resolution: Option<f64>) -> Result<(), BadInput> {
    match resolution {
        Some(r) if !(r.is_finite() && r > 0.0) => Err(BadInput(format!(
            "--resolution {r} is not a positive length in metres (try 0.1)"
        ))),
        Some(_) if aerie_simcore::simulator::Map::is_prepared(map) => {
            eprintln!(
                "warning: --resolution is ignored: {} is a prepared map, which keeps the resolution it was \
                 prepared at",
                map.display()
            );
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Opens the map of `scan` and `fly` (a `.amap`, or a scan file prepared in memory at `resolution`), with
/// `--resolution` checked first, and shows what preparing a scan file warned about: nobody sees that
/// prepare's report, and a scan much sparser than the resolution otherwise only shows as beams that return
/// nowhere.
fn open_map(
    path: &std::path::Path,
    resolution: Option<f64>,
) -> anyhow::Result<aerie_simcore::simulator::Map> {
    use anyhow::Context;
    check_resolution(path, resolution)?;
    let map = aerie_simcore::simulator::Map::open(path, resolution)
        .with_context(|| format!("cannot open map {}", path.display()))?;
    for w in map.warnings() {
        eprintln!("warning: {} (prepared in memory): {w}", path.display());
    }
    Ok(map)
}

/// Builds the beam renderer's index of the map before the first frame of `scan`, `fly` and the demo's flight
/// (when `uses_index` says a sensor's renderer needs it), so that the frames' times and a flight's real-time
/// factor are the frames' own; for a large map, the wait is told before it and the time and memory after.
/// `warm_up` builds it ([`aerie_simcore::Simulator::warm_up`]).
fn build_beam_index(
    points: usize,
    uses_index: bool,
    quiet: bool,
    warm_up: impl FnOnce() -> Option<std::sync::Arc<aerie_simcore::render::BeamIndex>>,
) {
    if !uses_index {
        return;
    }
    let tell = !quiet && points >= BIG_MAP_POINTS;
    if tell {
        eprintln!("building the beam index of the map's {points} points (once per map) ...");
    }
    let t = std::time::Instant::now();
    let index = warm_up();
    if tell && let Some(index) = index {
        eprintln!(
            "beam index built in {:.2} s ({:.0} MB)",
            t.elapsed().as_secs_f64(),
            index.memory_bytes() as f64 / 1e6
        );
    }
}

/// Maps from this many points on are told that their index is being built before it is: about a second per
/// 3 million points on two cores (docs/benchmarks.md).
const BIG_MAP_POINTS: usize = 1_000_000;

/// The output file of `convert` and `export`: their last argument, or `-o FILE` as `prepare` and `scan` take it
/// (a user who has just run those types `-o` here too).
#[derive(clap::Args, Debug)]
struct OutputFile {
    /// Output file (or `-o FILE`); its extension names the format (.pcd .ply .las .laz .e57 .xyz .bin) unless
    /// --format is given.
    #[arg(value_name = "OUTPUT", required_unless_present = "output")]
    last: Option<std::path::PathBuf>,
    /// The output file, as a flag: the same as the last argument.
    #[arg(short, long, value_name = "OUTPUT", conflicts_with = "last")]
    output: Option<std::path::PathBuf>,
}

impl OutputFile {
    fn path(&self) -> &std::path::Path {
        // clap requires one of the two.
        self.output
            .as_deref()
            .or(self.last.as_deref())
            .unwrap_or(std::path::Path::new(""))
    }
}

/// Checks an output file before any work: not one of `inputs` ([`aerie_pipeline::export::not_an_input`]), and a
/// folder in its path that does not exist yet is said to be created (a typo in `-o` would otherwise leave the
/// result in a new folder without a word).
fn check_output(
    output: &std::path::Path,
    inputs: &[&std::path::Path],
) -> Result<(), aerie_pipeline::export::ExportError> {
    aerie_pipeline::export::not_an_input(output, inputs)?;
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        note_new_folder(dir);
    }
    Ok(())
}

/// Says that the folder `dir` is created, when it does not exist yet.
fn note_new_folder(dir: &std::path::Path) {
    if !dir.exists() {
        eprintln!(
            "note: the folder {} does not exist; it is created",
            dir.display()
        );
    }
}

/// For `map_err`: when the error is the library's "cannot tell the format", adds a [`Hint`] naming `flag`, the
/// option of this subcommand that names the format.
fn format_hint<E: Into<anyhow::Error>>(flag: &'static str) -> impl FnOnce(E) -> anyhow::Error {
    move |e| {
        let e = e.into();
        let unknown = e.chain().any(|c| {
            matches!(
                c.downcast_ref::<aerie_pipeline::Error>(),
                Some(aerie_pipeline::Error::UnknownFormat { .. })
            )
        });
        if unknown {
            e.context(Hint(format!(
                "name the format with {flag} las|laz|e57|ply|pcd|xyz|kitti"
            )))
        } else {
            e
        }
    }
}

/// Prints an error for the terminal: the outermost message, each cause, then the hint if there is one.
fn print_error(err: &anyhow::Error) {
    for line in crate::errors::error_lines(err) {
        eprintln!("{line}");
    }
}

/// Parse `N` comma-separated numbers, e.g. a pose `x,y,z,roll,pitch,yaw`.
fn parse_numbers<const N: usize>(s: &str) -> Result<[f64; N], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != N {
        return Err(format!(
            "expected {N} comma-separated numbers, got {} in {s:?}",
            parts.len()
        ));
    }
    let mut out = [0.0; N];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = p
            .parse::<f64>()
            .map_err(|_| format!("{p:?} is not a number"))?;
        if !o.is_finite() {
            return Err(format!("{p:?} is not a finite number"));
        }
    }
    Ok(out)
}

/// `scan.pcd`, 3 -> `scan_000003.pcd`: names of a numbered series of outputs.
fn numbered(path: &std::path::Path, index: u64) -> std::path::PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("out");
    match path.extension().and_then(|s| s.to_str()) {
        Some(ext) => path.with_file_name(format!("{stem}_{index:06}.{ext}")),
        None => path.with_file_name(format!("{stem}_{index:06}")),
    }
}
