//! The shared real-scan comparison, beam by beam, as `../shared/tools/beamcmp.py` computes it: the real hall
//! map prepared as the README does (`aerie prepare hall_map_20cm.pcd --resolution 0.2`: default recipe), one
//! OS0-64 frame rendered through [`Simulator`] at the pose of the real scan, both binned on 64 nominal rings x
//! 1024 columns, the point nearest each bin's direction standing for the beam.
//!
//! `hall_scan_beam_by_beam` holds the generic `os0_64` preset to issue 8's figures and `os0_64_hall` (the
//! unit's measured, unevenly spaced rings) to a guard below what it reaches today (printed with
//! `--nocapture`; docs/accuracy.md records both against the goals and the MARSIM method).
//! `surface_model_along_the_real_beams` takes the sensor geometry out: one beam along each real return's own
//! direction, so what remains is the map, the surface model, detection and noise; it must meet issue 8's
//! figures outright.

use std::collections::HashMap;

use aerie_pipeline::features::{Neighbor, Neighbors};
use aerie_pipeline::io::{self, ReadOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::Simulator;
use aerie_simcore::render::{RenderParams, Renderer};
use aerie_simcore::sensor::{Beam, Pattern, SensorModel};
use aerie_simcore::trajectory::{Isometry3, Static, pose_from_xyz_rpy};

const COLUMNS: usize = 1024;

/// beamcmp.py's figures.
#[derive(Debug)]
struct Figures {
    hit: f64,
    in10_all: f64,
    beam_med: f64,
    beam_sgn: f64,
    cov25: f64,
    ratio: f64,
}

/// Least hit, in10_all and cov25, most beam_med and |beam_sgn|; the point ratio must lie in 0.5..=2.
struct Bounds {
    hit: f64,
    in10_all: f64,
    beam_med: f64,
    beam_sgn: f64,
    cov25: f64,
}

/// Issue 8's figures.
const GOAL: Bounds = Bounds {
    hit: 0.97,
    in10_all: 0.72,
    beam_med: 0.045,
    beam_sgn: 0.015,
    cov25: 0.95,
};

/// A guard set below what `os0_64_hall` reaches today: its sharp, unevenly spaced rings leave some of the
/// comparison's even bins between two rings empty, where the real scan's blurred rings put points
/// (docs/accuracy.md, section 3).
const HALL_PRESET: Bounds = Bounds {
    hit: 0.9,
    in10_all: 0.66,
    beam_med: 0.05,
    beam_sgn: 0.015,
    cov25: 0.95,
};

impl Figures {
    fn assert_within(&self, label: &str, b: &Bounds) {
        assert!(self.hit >= b.hit, "{label}: {self:?}");
        assert!(self.in10_all >= b.in10_all, "{label}: {self:?}");
        assert!(self.beam_med <= b.beam_med, "{label}: {self:?}");
        assert!(self.beam_sgn.abs() <= b.beam_sgn, "{label}: {self:?}");
        assert!(self.cov25 >= b.cov25, "{label}: {self:?}");
        assert!((0.5..=2.0).contains(&self.ratio), "{label}: {self:?}");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
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

/// Points farther than 0.3 m, and for each (ring, column) bin the range of the point nearest its direction.
fn beams(points: &[[f32; 3]]) -> (HashMap<usize, f64>, Vec<[f32; 3]>) {
    let el_nom: Vec<f64> = (0..64)
        .map(|i| -45.46 + (45.85 + 45.46) * i as f64 / 63.0)
        .collect();
    let step = 360.0 / COLUMNS as f64;
    let mut best: HashMap<usize, (f64, f64)> = HashMap::new();
    let mut kept = Vec::new();
    for p in points {
        let [x, y, z] = p.map(|v| v as f64);
        let r = (x * x + y * y + z * z).sqrt();
        if !(r > 0.3 && r.is_finite()) {
            continue;
        }
        kept.push(*p);
        let el = (z / r).asin().to_degrees();
        let az = y.atan2(x).to_degrees().rem_euclid(360.0);
        let mut ring = el_nom.partition_point(|e| *e < el).clamp(1, 63);
        if el - el_nom[ring - 1] < el_nom[ring] - el {
            ring -= 1;
        }
        let col = ((az / step).round_ties_even() as usize) % COLUMNS;
        let err = (el - el_nom[ring]).abs()
            + ((az - col as f64 * step + 180.0).rem_euclid(360.0) - 180.0).abs();
        let e = best.entry(ring * COLUMNS + col).or_insert((err, r));
        if err < e.0 {
            *e = (err, r);
        }
    }
    (best.into_iter().map(|(k, (_, r))| (k, r)).collect(), kept)
}

fn nearest(from: &[[f32; 3]], to: &[[f32; 3]]) -> Vec<f64> {
    let index = Neighbors::for_knn(to, 1).expect("index");
    let mut out = Vec::<Neighbor>::new();
    from.iter()
        .map(|p| {
            index.knn(*p, 1, None, &mut out);
            out.first()
                .map_or(f64::INFINITY, |n| (n.dist2 as f64).sqrt())
        })
        .collect()
}

fn compare(sim: &[[f32; 3]], real: &[[f32; 3]]) -> Figures {
    let (bs, sim) = beams(sim);
    let (br, real) = beams(real);
    let diffs: Vec<f64> = br
        .iter()
        .filter_map(|(k, r)| bs.get(k).map(|s| s - r))
        .collect();
    let within = diffs.iter().filter(|d| d.abs() <= 0.10).count();
    let cov = nearest(&real, &sim).iter().filter(|d| **d <= 0.25).count();
    Figures {
        hit: diffs.len() as f64 / br.len().max(1) as f64,
        in10_all: within as f64 / br.len().max(1) as f64,
        beam_med: median(diffs.iter().map(|d| d.abs()).collect()),
        beam_sgn: median(diffs),
        cov25: cov as f64 / real.len().max(1) as f64,
        ratio: sim.len() as f64 / real.len().max(1) as f64,
    }
}

/// The pose of the real scan (../shared/tools/README.md).
fn scan_pose() -> Isometry3<f64> {
    pose_from_xyz_rpy(
        2.541082,
        4.504131,
        0.338537,
        -0.238357059,
        0.137686623,
        1.825842042,
    )
}

fn render(map: aerie_pipeline::map::PackedMap, name: &str, model: SensorModel) -> Cloud {
    let mut sim = Simulator::new(map);
    let id = sim
        .add_sensor(name, model, Isometry3::identity())
        .expect("sensor");
    sim.render(id, &Static(scan_pose()), 0.0, 0)
        .to_cloud(0.0, false)
}

/// The hall map prepared as the README does, and the real scan; `None` (skipped) without ../shared/data.
fn hall() -> Option<(aerie_pipeline::map::PackedMap, Cloud)> {
    let map_path = aerie_pipeline::testing::shared_file("maps/hall_map_20cm.pcd")?;
    let scan_path = aerie_pipeline::testing::shared_file("pcd/os0_hall_scan_full40.pcd")?;
    let cloud = io::read(&map_path, None, &ReadOptions::default()).expect("hall map");
    let real = io::read(&scan_path, None, &ReadOptions::default()).expect("real scan");
    let recipe = Recipe {
        resolution_m: 0.2,
        ..Recipe::default()
    };
    let map = prepare(vec![(cloud, None)], &recipe, &NoProgress)
        .expect("prepare")
        .map;
    Some((map, real))
}

#[test]
fn hall_scan_beam_by_beam() {
    let Some((map, real)) = hall() else {
        return;
    };
    for (preset, bounds) in [("os0_64", &GOAL), ("os0_64_hall", &HALL_PRESET)] {
        let sim = render(
            map.clone(),
            preset,
            SensorModel::preset(preset).expect("preset"),
        );
        let f = compare(sim.positions(), real.positions());
        println!("{preset}: {f:?}");
        f.assert_within(preset, bounds);
    }
}

/// One simulated beam along each real return's direction, from the scan's origin (the optical centre): the
/// sensor geometry is the real one, so the figures judge the map, the surface model, detection and noise
/// alone. Also prints what other geometries of the generic preset score (docs/accuracy.md, section 3): Ouster's
/// sensor frame (rays from 36.18 mm up) and no beam-origin offset.
#[test]
fn surface_model_along_the_real_beams() {
    let Some((map, real)) = hall() else {
        return;
    };
    let beams: Vec<Beam> = real
        .positions()
        .iter()
        .filter_map(|p| {
            let d = *p;
            let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            (n > 0.3).then(|| Beam {
                dir: d.map(|c| c / n),
                time_s: 0.0,
                ring: 0,
            })
        })
        .collect();
    let model = SensorModel::preset("os0_64").expect("preset");
    let mut renderer = Renderer::new(&beams, &model.physics, &RenderParams::default());
    let sim = Simulator::new(map.clone());
    let frame = renderer.render(&sim.map(), &Static(scan_pose()), 0.0, 0);
    let points: Vec<[f32; 3]> = frame.points.iter().map(|p| p.xyz).collect();
    let f = compare(&points, real.positions());
    println!("os0_64 physics along the real beams: {f:?}");
    f.assert_within("along the real beams", &GOAL);

    // The generic preset in Ouster's sensor frame, and without the beam-origin offset (diagnostic, not a goal;
    // the shipped geometry is `hall_scan_beam_by_beam`'s).
    for (lift_mm, offset_mm) in [(36.18, 27.67), (0.0, 0.0)] {
        let mut model = SensorModel::preset("os0_64").expect("preset");
        if let Pattern::Spinning(p) = &mut model.pattern {
            p.lidar_origin_z_mm = lift_mm;
            p.beam_origin_offset_mm = offset_mm;
        }
        let sim = render(map.clone(), "os0_64", model);
        let f = compare(sim.positions(), real.positions());
        println!("os0_64, lift {lift_mm} mm, beam-origin offset {offset_mm} mm: {f:?}");
        assert!(f.hit >= 0.97, "{f:?}");
    }
}
