//! Use the library crates to read a scan, prepare a map in memory (outlier removal, 0.2 m downsampling,
//! normals), render one Livox Avia frame from 1.5 m above the floor at the map's middle, and write it as PCD.
//! (`Simulator::open` does the read and the prepare in one call, as `aerie scan` does; they are spelled out here
//! to show each step.)
//!
//! cargo run --release -p aerie-simcore --example prepare_and_scan -- ../shared/data/maps/hall_map_20cm.pcd /tmp/avia.pcd

use std::path::PathBuf;

use aerie_pipeline::io::{self, WriteOptions};
use aerie_pipeline::prepare::{Recipe, map_read_options, prepare};
use aerie_pipeline::{Cloud, CloudSummary, NoProgress};
use aerie_simcore::sensor::SensorModel;
use aerie_simcore::trajectory::{Isometry3, Static, pose_from_xyz_rpy};
use aerie_simcore::{Map, Simulator};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(output)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: prepare_and_scan INPUT_SCAN OUTPUT_SCAN");
    };
    let cloud = io::read(&PathBuf::from(input), None, &map_read_options())?;
    print!("{}", CloudSummary::of(&cloud));
    let (lo, hi) = cloud
        .bounds()
        .ok_or_else(|| anyhow::anyhow!("the input has no points"))?;
    let (x, y) = ((lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0);
    let z = floor_below(&cloud, x, y).unwrap_or(lo[2]) + 1.5;

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

    let mut sim = Simulator::new(Map::try_from(prepared.map)?);
    let avia = sim.add_sensor("avia", SensorModel::preset("avia")?, Isometry3::identity())?;
    let pose = pose_from_xyz_rpy(x, y, z, 0.0, 0.0, 0.0);
    let frame = sim.render(avia, &Static(pose), 0.0, 0)?;
    println!(
        "from ({x:.2}, {y:.2}, {z:.2}): {} of {} beams returned",
        frame.points.len(),
        frame.beams
    );
    let scan = frame.to_cloud(0.0, false);
    io::write(
        &scan,
        &PathBuf::from(output),
        None,
        &WriteOptions::default(),
    )?;
    Ok(())
}

/// The floor under (x, y): the lowest 0.2 m height band holding a tenth of the points within 1.5 m of it, so
/// that stray points below the floor (reflections, a basement seen through a stairwell) do not count.
fn floor_below(cloud: &Cloud, x: f64, y: f64) -> Option<f64> {
    let o = cloud.origin;
    let heights: Vec<f64> = cloud
        .positions()
        .iter()
        .map(|p| {
            [
                o[0] + f64::from(p[0]),
                o[1] + f64::from(p[1]),
                o[2] + f64::from(p[2]),
            ]
        })
        .filter(|p| (p[0] - x).hypot(p[1] - y) < 1.5)
        .map(|p| p[2])
        .collect();
    let lowest = heights.iter().copied().reduce(f64::min)?;
    let mut bands = std::collections::BTreeMap::new();
    for h in &heights {
        *bands.entry(((h - lowest) / 0.2) as u64).or_insert(0usize) += 1;
    }
    let band = bands.into_iter().find(|&(_, n)| n * 10 >= heights.len())?.0;
    Some(lowest + 0.2 * (band as f64 + 0.5))
}
