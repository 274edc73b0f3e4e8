//! Generate the built-in demo's raw scan the way `aerie demo` starts, then prepare it with the default recipe,
//! and print what each step did (points, labels, seconds) and which points the preparation kept, by what they
//! lie on (the ground truth only a simulated scan has).
//!
//! cargo run --release -p aerie-simcore --example demo_scan -- /tmp/demo/raw_scan.laz [SEED]

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use aerie_pipeline::NoProgress;
use aerie_pipeline::io::{self, ReadOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_simcore::demo::{DemoConfig, Label, raw_scan};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(output) = args.next().map(PathBuf::from) else {
        anyhow::bail!("usage: demo_scan OUTPUT.laz|OUTPUT.e57 [SEED]");
    };
    let mut config = DemoConfig::default();
    if let Some(seed) = args.next() {
        config.seed = seed.parse()?;
    }
    let scan = raw_scan(&config)?;
    let start = Instant::now();
    io::write(&scan.cloud, &output, None, &Default::default())?;
    println!("{}", serde_json::to_string_pretty(&scan.report)?);
    println!("written in {:.2} s", start.elapsed().as_secs_f64());
    let bytes = std::fs::metadata(&output)?.len();
    println!("file: {} ({:.1} MB)", output.display(), bytes as f64 / 1e6);

    let start = Instant::now();
    let cloud = io::read(&output, None, &ReadOptions::default())?;
    let read_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let prepared = prepare(vec![(cloud, None)], &Recipe::default(), &NoProgress)?;
    println!(
        "read {read_s:.2} s, prepared {} points in {:.2} s",
        prepared.map.len(),
        start.elapsed().as_secs_f64()
    );
    for r in &prepared.reports {
        println!("{}", serde_json::to_string(r)?);
    }
    // Which points survived, by what they lie on (downsampling keeps original points: match by position).
    let key = |p: [f64; 3]| p.map(|v| (v * 1e4).round() as i64);
    let map = prepared.map.to_cloud()?;
    let kept: HashSet<[i64; 3]> = (0..map.len()).map(|i| key(map.world(i))).collect();
    let raw = io::read(&output, None, &ReadOptions::default())?;
    let mut survived: BTreeMap<Label, (usize, usize)> = BTreeMap::new();
    for (i, &l) in scan.labels.iter().enumerate() {
        let e = survived.entry(l).or_default();
        e.0 += 1;
        e.1 += usize::from(kept.contains(&key(raw.world(i))));
    }
    for (l, (all, k)) in survived {
        println!("{l:?}: {k} of {all} kept");
    }
    Ok(())
}
