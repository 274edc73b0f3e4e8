//! Diagnostic: render a prepared map along the directions of a real scan's own returns (so that the comparison
//! with it has no direction mismatch left, only the map and the surface model), and write the simulated points
//! in the sensor frame as an ASCII PCD for ../shared/tools/beamcmp.py.
//!
//! cargo run --profile fast -p aerie-simcore --example along_real -- MAP.amap x,y,z,roll,pitch,yaw REAL.pcd OUT.pcd [marsim]

use std::io::Write;
use std::path::PathBuf;

use aerie_pipeline::io::{self, ReadOptions};
use aerie_simcore::Simulator;
use aerie_simcore::render::{RenderParams, Renderer};
use aerie_simcore::sensor::{Beam, SensorModel};
use aerie_simcore::trajectory::{Static, pose_from_xyz_rpy};

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    anyhow::ensure!(
        a.len() >= 4,
        "usage: along_real MAP POSE REAL.pcd OUT.pcd [marsim]"
    );
    let pose: Vec<f64> = a[1].split(',').map(str::parse).collect::<Result<_, _>>()?;
    anyhow::ensure!(
        pose.len() == 6,
        "the pose is x,y,z,roll,pitch,yaw (metres, radians)"
    );
    let real = io::read(&PathBuf::from(&a[2]), None, &ReadOptions::default())?;
    let beams: Vec<Beam> = real
        .positions()
        .iter()
        .filter_map(|&p| Beam::toward(p, 0.3))
        .collect();
    let params = if a.get(4).is_some_and(|m| m == "marsim") {
        RenderParams::marsim()
    } else {
        RenderParams::default()
    };
    let model = SensorModel::preset("os0_64")?;
    let sim = Simulator::open(&PathBuf::from(&a[0]), None)?.with_params(params.clone());
    let mut renderer = Renderer::new(&beams, &model.physics, &params);
    let p = pose_from_xyz_rpy(pose[0], pose[1], pose[2], pose[3], pose[4], pose[5]);
    let frame = renderer
        .render(&sim.map(), &Static(p), 0.0, 0)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(&a[3])?);
    let n = frame.points.len();
    write!(
        out,
        "VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA ascii\n"
    )?;
    for q in &frame.points {
        writeln!(out, "{} {} {}", q.xyz[0], q.xyz[1], q.xyz[2])?;
    }
    Ok(())
}
