//! The shared real-scan comparison, beam by beam, as `../shared/tools/beamcmp.py` computes it: the real hall
//! map prepared as the README does (`aerie prepare hall_map_20cm.pcd --resolution 0.2`: default recipe), one
//! OS0-64 frame rendered through [`Simulator`] at the pose of the real scan, both binned on 64 nominal rings x
//! 1024 columns, the point nearest each bin's direction standing for the beam.
//!
//! `hall_scan_beam_by_beam` holds the generic `os0_64` preset, still at the scan's pose as `aerie scan --pose`
//! renders it, to issue 8's figures. `os0_64_hall` models the unit itself (its measured, unevenly spaced
//! rings, Ouster's sensor frame), so it is rendered the way the real scan was taken: moving along the sweep
//! that `bench/ring_table.py --motion` measures from the scan, the points given in the sensor frame at the
//! sweep's end (`hall_scan_as_it_was_taken`); it must meet the figures and match or beat the generic preset
//! (figures printed with `--nocapture`; docs/accuracy.md records them against the goals and the MARSIM
//! method). `the_measured_motion_sharpens_the_rings` checks that the motion is the scan's: with it the
//! real scan's rings are sharp, without it they are blurred.
//! `surface_model_along_the_real_beams` takes the sensor geometry out: one beam along each real return's own
//! direction, so what remains is the map, the surface model, detection and noise; it must meet issue 8's
//! figures outright. `fused_map_at_the_sequence_poses` holds issue 75's kind of map: the hall as 149 real scans
//! fused (`balm/hall_fused.laz`), prepared with the default recipe, scored at four poses of the sequence.

use std::collections::HashMap;

use aerie_pipeline::features::{Neighbor, Neighbors};
use aerie_pipeline::io::{self, ReadOptions};
use aerie_pipeline::prepare::{Recipe, prepare};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::render::{PointsIn, RenderParams, Renderer};
use aerie_simcore::sensor::{Beam, Pattern, SensorModel};
use aerie_simcore::trajectory::{Isometry3, Static, Trajectory, Tum, pose_from_xyz_rpy};
use aerie_simcore::{Map, Simulator};
use nalgebra::{Translation3, UnitQuaternion, Vector3};

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

/// The sensor's motion during the real scan's sweep, in the scan's frame (the sensor frame at the sweep's
/// end): velocity in metres per sweep, and the roll and pitch it turned through in degrees per sweep. Printed
/// by `python3 bench/ring_table.py ../shared/data/pcd/os0_hall_scan_full40.pcd --height-mm 36.18 --motion`,
/// which fits them to the real scan's ring sharpness alone (docs/accuracy.md, section 3).
const SWEEP_VELOCITY: [f64; 3] = [0.0803, -0.1038, 0.0312];
const SWEEP_TURN_DEG: [f64; 2] = [-0.166, -0.758];

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

/// The pose of the real scan in the hall map, as the shared data publishes it.
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

/// The sensor frame at phase `f` of the sweep (0 first column, 1 the end), in the frame at the sweep's end.
fn scan_from_sensor(f: f64) -> Isometry3<f64> {
    let [vx, vy, vz] = SWEEP_VELOCITY;
    let [roll, pitch] = SWEEP_TURN_DEG.map(f64::to_radians);
    Isometry3::from_parts(
        Translation3::from(Vector3::new(vx, vy, vz) * (f - 1.0)),
        UnitQuaternion::from_scaled_axis(Vector3::new(roll, pitch, 0.0) * (f - 1.0)),
    )
}

/// The real scan's sweep in the map: ten steps over one revolution (0.1 s), ending at the scan's pose.
fn scan_sweep() -> Tum {
    let samples = (0..=10)
        .map(|i| {
            let f = i as f64 / 10.0;
            (0.1 * f, scan_pose() * scan_from_sensor(f))
        })
        .collect();
    Tum::from_samples(samples).expect("increasing times")
}

fn render_along(
    map: aerie_pipeline::map::PackedMap,
    name: &str,
    model: SensorModel,
    trajectory: &dyn Trajectory,
    points_in: PointsIn,
) -> Cloud {
    let params = RenderParams {
        points_in,
        ..RenderParams::default()
    };
    render_with(map, name, model, trajectory, params)
}

fn render_with(
    map: aerie_pipeline::map::PackedMap,
    name: &str,
    model: SensorModel,
    trajectory: &dyn Trajectory,
    params: RenderParams,
) -> Cloud {
    let mut sim = Simulator::new(Map::try_from(map).expect("map")).with_params(params);
    let id = sim
        .add_sensor(name, model, Isometry3::identity())
        .expect("sensor");
    sim.render(id, trajectory, 0.0, 0)
        .unwrap()
        .to_cloud(0.0, false)
}

fn render(map: aerie_pipeline::map::PackedMap, name: &str, model: SensorModel) -> Cloud {
    render_along(map, name, model, &Static(scan_pose()), PointsIn::FrameStart)
}

/// The hall map prepared as the README does, and the real scan.
fn hall() -> (aerie_pipeline::map::PackedMap, Cloud) {
    hall_at(0.2)
}

/// The hall map prepared at `resolution_m`, and the real scan.
fn hall_at(resolution_m: f64) -> (aerie_pipeline::map::PackedMap, Cloud) {
    let map_path = crate::shared_data("maps/hall_map_20cm.pcd");
    let scan_path = crate::shared_data("pcd/os0_hall_scan_full40.pcd");
    let cloud = io::read(&map_path, None, &ReadOptions::default()).expect("hall map");
    let real = io::read(&scan_path, None, &ReadOptions::default()).expect("real scan");
    let recipe = Recipe {
        resolution_m,
        ..Recipe::default()
    };
    let map = prepare(vec![(cloud, None)], &recipe, &NoProgress)
        .expect("prepare")
        .map;
    (map, real)
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn hall_scan_beam_by_beam() {
    let (map, real) = hall();
    let sim = render(
        map,
        "os0_64",
        SensorModel::preset("os0_64").expect("preset"),
    );
    let f = compare(sim.positions(), real.positions());
    println!("os0_64: {f:?}");
    f.assert_within("os0_64", &GOAL);
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn hall_scan_as_it_was_taken() {
    let (map, real) = hall();
    let generic = compare(
        render(
            map.clone(),
            "os0_64",
            SensorModel::preset("os0_64").expect("preset"),
        )
        .positions(),
        real.positions(),
    );
    let model = SensorModel::preset("os0_64_hall").expect("preset");
    let moving = render_along(
        map.clone(),
        "os0_64_hall",
        model.clone(),
        &scan_sweep(),
        PointsIn::FrameEnd,
    );
    let f = compare(moving.positions(), real.positions());
    println!("os0_64_hall along the scan's sweep: {f:?}\nos0_64 still: {generic:?}");
    f.assert_within("os0_64_hall along the sweep", &GOAL);
    // At least as good as the generic preset still; hit within half a percent: beamcmp's evenly spaced ring
    // bins split this unit's uneven rings, which the preset reproduces (docs/accuracy.md, section 3).
    assert!(f.in10_all >= generic.in10_all, "{f:?} {generic:?}");
    assert!(f.beam_med <= generic.beam_med, "{f:?} {generic:?}");
    assert!(
        f.beam_sgn.abs() <= generic.beam_sgn.abs(),
        "{f:?} {generic:?}"
    );
    assert!(f.cov25 >= generic.cov25, "{f:?} {generic:?}");
    assert!(f.hit >= generic.hit - 0.005, "{f:?} {generic:?}");
    // Diagnostic: the same preset still at the scan's pose, where its sharp rings cannot fill the real scan's
    // blurred ones.
    let still = compare(
        render(map, "os0_64_hall", model).positions(),
        real.positions(),
    );
    println!("os0_64_hall still: {still:?}");
}

/// The hall map prepared at 0.1 m, finer than its points (0.2 m apart): disks of 0.1 m leave holes between
/// them, through which beams would pass where the real unit returned; the disks of points on a plane are as
/// wide as the sampling around them (`render/disks.rs`), so the scan must still come close to issue 8's
/// figures, and beat the MARSIM method (r_map footprints) on the same map.
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn a_map_prepared_finer_than_its_points() {
    let (map, real) = hall_at(0.1);
    let model = SensorModel::preset("os0_64").expect("preset");
    let aerie = compare(
        render(map.clone(), "os0_64", model.clone()).positions(),
        real.positions(),
    );
    let scan_pose = Static(scan_pose());
    let marsim = compare(
        render_with(map, "os0_64", model, &scan_pose, RenderParams::marsim()).positions(),
        real.positions(),
    );
    println!("os0_64 in the map at 0.1 m: {aerie:?}\nthe MARSIM method: {marsim:?}");
    aerie.assert_within("os0_64 at 0.1 m", &Bounds { hit: 0.95, ..GOAL });
    assert!(
        aerie.hit > marsim.hit && aerie.in10_all > marsim.in10_all,
        "{aerie:?} {marsim:?}"
    );
    assert!(aerie.beam_med < marsim.beam_med, "{aerie:?} {marsim:?}");
}

/// Median distance, degrees, of the real scan's elevations from the nearest of `os0_64_hall`'s rings, seen
/// from the lidar origin with the sweep's motion taken out (`moving`) or not.
fn ring_blur_deg(real: &Cloud, moving: bool) -> f64 {
    let model = SensorModel::preset("os0_64_hall").expect("preset");
    let Pattern::Spinning(p) = &model.pattern else {
        panic!("os0_64_hall is spinning");
    };
    let lift = f64::from(p.lidar_origin_z_mm) * 1e-3;
    let residuals = real
        .positions()
        .iter()
        .map(|q| Vector3::new(q[0] as f64, q[1] as f64, q[2] as f64))
        .filter(|q| q.norm() > 0.3)
        .map(|q| {
            // The sweep phase of this column, in the preset's firing order.
            let turned = q.y.atan2(q.x).to_degrees() - f64::from(p.start_azimuth_deg);
            let f = if p.clockwise { -turned } else { turned }.rem_euclid(360.0) / 360.0;
            let local = if moving {
                scan_from_sensor(f)
                    .inverse_transform_point(&q.into())
                    .coords
            } else {
                q
            };
            let el = (local.z - lift).atan2(local.xy().norm()).to_degrees();
            p.elevations_deg
                .iter()
                .map(|&e| (el - e as f64).abs())
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    median(residuals)
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn the_measured_motion_sharpens_the_rings() {
    let scan_path = crate::shared_data("pcd/os0_hall_scan_full40.pcd");
    let real = io::read(&scan_path, None, &ReadOptions::default()).expect("real scan");
    let (still, moving) = (ring_blur_deg(&real, false), ring_blur_deg(&real, true));
    println!(
        "real scan's rings: median {still:.3} deg from a ring seen still, {moving:.3} deg moving"
    );
    assert!(still > 0.15, "{still}");
    assert!(moving < 0.04, "{moving}");
}

/// One simulated beam along each real return's direction, from the scan's origin (to the real point): the
/// sensor geometry is the real one, so the figures judge the map, the surface model, detection and noise
/// alone. Also prints what other geometries of the generic preset score (docs/accuracy.md, section 3): Ouster's
/// sensor frame (rays from 36.18 mm up) and no beam-origin offset.
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn surface_model_along_the_real_beams() {
    let (map, real) = hall();
    let beams: Vec<Beam> = real
        .positions()
        .iter()
        .filter_map(|&p| Beam::toward(p, 0.3))
        .collect();
    let model = SensorModel::preset("os0_64").expect("preset");
    let mut renderer = Renderer::new(&beams, &model.physics, &RenderParams::default());
    let sim = Simulator::new(Map::try_from(map.clone()).expect("map"));
    let frame = renderer
        .render(&sim.map(), &Static(scan_pose()), 0.0, 0)
        .unwrap();
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

/// Poses of the hall sequence's scans in its fused map (`balm/poses.csv`: `file,stamp,tx,ty,tz,r00..r22`,
/// world = R p + t), by scan index.
fn balm_poses(path: &std::path::Path) -> HashMap<u32, Isometry3<f64>> {
    let text = std::fs::read_to_string(path).expect("poses.csv");
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let c: Vec<&str> = line.split(',').collect();
            let i = c.first()?.strip_prefix("full")?.strip_suffix(".pcd")?;
            let v: Vec<f64> = c
                .get(2..14)?
                .iter()
                .map(|s| s.parse().ok())
                .collect::<Option<_>>()?;
            let r = nalgebra::Matrix3::from_row_slice(&v[3..12]);
            let rotation = UnitQuaternion::from_matrix(&r);
            Some((
                i.parse().ok()?,
                Isometry3::from_parts(Translation3::new(v[0], v[1], v[2]), rotation),
            ))
        })
        .collect()
}

/// Issue 75 on the user's kind of map: the hall as 149 real scans fused (`balm/hall_fused.laz`, every surface a
/// layer several centimetres thick), prepared with the default recipe at 0.2 m, and four real scans of the
/// sequence taken at poses spread over it (none of them in the map). `os0_64` still at each pose, and the
/// MARSIM method on the same map. The floors are the measured means (2026-12-06, docs/accuracy.md, section 4:
/// beam_med 0.0753 m, signed +0.005 m, in10_all 0.596, hit 0.977; the MARSIM method 0.0920 m, so 0.82 of it)
/// with a margin; the same seed gives the same figures, so a change of the surface model that loses fidelity
/// fails here.
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn fused_map_at_the_sequence_poses() {
    let (laz, poses) = (
        crate::shared_data("balm/hall_fused.laz"),
        crate::shared_data("balm/poses.csv"),
    );
    let poses = balm_poses(&poses);
    let cloud = io::read(&laz, None, &ReadOptions::default()).expect("fused map");
    let recipe = Recipe {
        resolution_m: 0.2,
        ..Recipe::default()
    };
    let map = prepare(vec![(cloud, None)], &recipe, &NoProgress)
        .expect("prepare")
        .map;
    let model = SensorModel::preset("os0_64").expect("preset");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for i in [0u32, 52, 108, 160] {
        let scan = crate::shared_data(&format!("balm/full{i}.pcd"));
        let real = io::read(&scan, None, &ReadOptions::default()).expect("real scan");
        let pose = Static(poses[&i]);
        for (params, out) in [
            (RenderParams::default(), &mut ours),
            (RenderParams::marsim(), &mut theirs),
        ] {
            let sim = render_with(map.clone(), "os0_64", model.clone(), &pose, params);
            out.push(compare(sim.positions(), real.positions()));
        }
        println!(
            "scan {i}: os0_64 {:?}\n  the MARSIM method {:?}",
            ours.last(),
            theirs.last()
        );
    }
    let mean =
        |f: &[Figures], get: fn(&Figures) -> f64| f.iter().map(get).sum::<f64>() / f.len() as f64;
    let (med, sgn) = (mean(&ours, |f| f.beam_med), mean(&ours, |f| f.beam_sgn));
    let (in10, hit) = (mean(&ours, |f| f.in10_all), mean(&ours, |f| f.hit));
    let marsim = mean(&theirs, |f| f.beam_med);
    println!(
        "mean: beam_med {med:.4}, signed {sgn:+.4}, in10_all {in10:.3}, hit {hit:.3}; the MARSIM method {marsim:.4}"
    );
    assert!(med <= 0.080, "beam_med {med}");
    assert!(sgn.abs() <= 0.015, "signed {sgn}");
    assert!(in10 >= 0.57, "in10_all {in10}");
    assert!(hit >= 0.95, "hit {hit}");
    assert!(
        med <= 0.85 * marsim,
        "beam_med {med} against the MARSIM method's {marsim}"
    );
}
