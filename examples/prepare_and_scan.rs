//! Use the library crates the way the `aerie` command does: read a scan, prepare a map in memory, render one
//! Livox Avia frame from its middle and write it as PCD.
//!
//! cargo run --release --example prepare_and_scan -- ../shared/data/maps/hall_map_20cm.pcd /tmp/avia.pcd

use std::path::PathBuf;

use aerie_pipeline::io::{self, ReadOptions, WriteOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, CloudSummary, NoProgress};
use aerie_simcore::render::{RenderParams, Renderer};
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::trajectory::{Static, pose_from_xyz_rpy};

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

    let sensor = SensorModel::preset("avia")?;
    let mut beams = Vec::new();
    sensor.beams(0, &mut beams);
    let pose = pose_from_xyz_rpy(
        (lo[0] + hi[0]) / 2.0,
        (lo[1] + hi[1]) / 2.0,
        lo[2] + 1.5,
        0.0,
        0.0,
        0.0,
    );
    let mut renderer = Renderer::new(&beams, &sensor.physics, &RenderParams::default());
    let frame = renderer.render(&prepared.map.view(), &Static(pose), 0.0, 0);
    println!("{} of {} beams returned", frame.points.len(), beams.len());

    let scan = Cloud {
        positions: frame.points.iter().map(|p| p.xyz).collect(),
        intensity: Some(frame.points.iter().map(|p| p.intensity).collect()),
        time: Some(frame.points.iter().map(|p| p.time_s as f64).collect()),
        ring: Some(frame.points.iter().map(|p| p.ring).collect()),
        ..Cloud::default()
    };
    io::write(
        &scan,
        &PathBuf::from(output),
        None,
        &WriteOptions::default(),
    )?;
    Ok(())
}
