//! `aerie bench`: reproducible speed measurements of the library, printed as a table or JSON lines, for
//! docs/benchmarks.md and the peer comparison scripts under bench/. One module per measured job.

mod fly;
mod prepare;
mod scan;

use std::path::PathBuf;
use std::time::Instant;

use aerie_pipeline::io::{self, ReadOptions};
use anyhow::Context;
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Read each file N times and report the median time and points per second, and the time of the first
    /// (warm-up) read: a process that reads a file once pays for fresh memory pages, later reads in the same
    /// process may reuse what the allocator kept.
    #[command(allow_negative_numbers = true)]
    Read {
        /// Scan files to read (any format `aerie info` reads).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Number of timed reads per file (after one warm-up read).
        #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        repeat: usize,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Time each preparation stage on a file (median of N runs), with the same parameters as the peers.
    #[command(allow_negative_numbers = true)]
    Prepare(prepare::Args),
    /// Median time per frame and Mrays/s of the scan renderers, per sensor preset, on procedural maps of
    /// several sizes or on a prepared map at a pose (--map, --pose).
    #[command(allow_negative_numbers = true)]
    Scan(scan::Args),
    /// Real-time factor of the flight loop: physics and control alone, one Avia vehicle in a map, a swarm of
    /// ten Mid-360 vehicles.
    #[command(allow_negative_numbers = true)]
    Fly(fly::Args),
}

#[derive(Serialize)]
struct ReadResult {
    file: String,
    points: usize,
    median_s: f64,
    points_per_s: f64,
    /// The warm-up read: the first of this file in this process (the first file's is the process's first read).
    first_s: f64,
}

/// Median of a non-empty list of seconds.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.what {
        What::Read {
            files,
            repeat,
            json,
        } => {
            if !json {
                println!(
                    "{:<48} {:>10} {:>10} {:>14} {:>10}",
                    "file", "points", "median s", "points/s", "first s"
                );
            }
            for f in files {
                let opts = ReadOptions::default();
                let t = Instant::now();
                let cloud = io::read(&f, None, &opts)
                    .with_context(|| format!("cannot read {}", f.display()))?;
                let first_s = t.elapsed().as_secs_f64();
                let points = cloud.len();
                drop(cloud);
                let mut times = Vec::with_capacity(repeat);
                for _ in 0..repeat.max(1) {
                    let t = Instant::now();
                    let c = io::read(&f, None, &opts)?;
                    times.push(t.elapsed().as_secs_f64());
                    drop(c);
                }
                let m = median(times);
                let r = ReadResult {
                    file: f.display().to_string(),
                    points,
                    median_s: m,
                    points_per_s: points as f64 / m,
                    first_s,
                };
                if json {
                    println!("{}", serde_json::to_string(&r)?);
                } else {
                    println!(
                        "{:<48} {:>10} {:>10.4} {:>14.0} {:>10.4}",
                        r.file, r.points, r.median_s, r.points_per_s, r.first_s
                    );
                }
            }
            Ok(())
        }
        What::Prepare(a) => prepare::run(&a),
        What::Scan(a) => scan::run(&a),
        What::Fly(a) => fly::run(a),
    }
}

/// Median and the per-run times of calling `f` `repeat` times (at least once).
pub fn time_runs<T>(
    repeat: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<(f64, T)> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        last = Some(f()?);
        times.push(t.elapsed().as_secs_f64());
    }
    let out = last.ok_or_else(|| anyhow::anyhow!("no runs"))?;
    Ok((median(times), out))
}

/// CPU time of this process (all threads, user + system), seconds, where /proc says it (Linux): on a loaded
/// machine it tells the work done apart from the wait for a core. Ticks of 10 ms: read over many frames.
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name and state.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux configuration in use.
    Some((utime + stime) / 100.0)
}
