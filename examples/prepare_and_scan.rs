//! Use the library crates the way the `aerie` command does: read a scan, prepare a map in memory, render one
//! Livox Avia frame from its middle and write it as PCD.
//!
//! cargo run --release --example prepare_and_scan -- ../shared/data/maps/hall_map_20cm.pcd /tmp/avia.pcd

use std::path::PathBuf;

use aerie_pipeline::io::{self, ReadOptions, WriteOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{CloudSummary, NoProgress};
use aerie_simcore::Simulator;
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::trajectory::{Isometry3, Static, pose_from_xyz_rpy};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(output)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: prepare_and_scan INPUT_SCAN OUTPUT_SCAN");
    };
    let cloud = io::read(&PathBuf::from(input), None, &ReadOptions::default())?;
    print!("{}", CloudSummary::of(&cloud));
    let (lo, hi) = cloud
        .bounds()
        .ok_or_else(|| anyhow::anyhow!("the input has no points"))?;

    let recipe = Recipe {
        resolution_m: 0.2,
        ..Recipe::default()
    };
    let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress)?;
    println!(
        "map: {} points in {} buckets",
        prepared.map.len(),
        prepared.map.buckets.len()
    );

    let mut sim = Simulator::new(prepared.map);
    let avia = sim.add_sensor("avia", SensorModel::preset("avia")?, Isometry3::identity())?;
    let pose = pose_from_xyz_rpy(
        (lo[0] + hi[0]) / 2.0,
        (lo[1] + hi[1]) / 2.0,
        lo[2] + 1.5,
        0.0,
        0.0,
        0.0,
    );
    let frame = sim.render(avia, &Static(pose), 0.0, 0);
    println!("{} of {} beams returned", frame.points.len(), frame.beams);
    let scan = frame.to_cloud(0.0, false);
    io::write(
        &scan,
        &PathBuf::from(output),
        None,
        &WriteOptions::default(),
    )?;
    Ok(())
}
