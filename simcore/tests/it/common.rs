//! What the flight tests share (here and in tests/python_peers): a map prepared from points, one with walls, a
//! mission from TOML text, a flight flown to its end, a short recorded flight.

use std::path::Path;

use aerie_pipeline::prepare::{Recipe, Stage, prepare};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::flight::Flight;
use aerie_simcore::mission::Mission;
use aerie_simcore::record::RecordOptions;
use aerie_simcore::simulator::Map;

/// A map of `points` (map frame, metres), prepared at r_map 0.1 m with normals.
pub fn map_of(points: Vec<[f32; 3]>) -> Map {
    let cloud = Cloud::from_positions([0.0; 3], points);
    let recipe = Recipe {
        resolution_m: 0.1,
        stages: vec![Stage::Normals],
        ..Recipe::default()
    };
    let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress).unwrap();
    Map::try_from(prepared.map).unwrap()
}

/// A mission from TOML text, checked as `aerie fly` checks it.
pub fn mission(text: &str) -> Mission {
    let m: Mission = toml::from_str(text).unwrap();
    m.check().unwrap();
    m
}

/// `m` flown in `map` to its end.
pub fn fly(map: Map, m: &Mission) -> Flight {
    let mut f = Flight::new(map, m, Path::new(".")).unwrap();
    f.run_until(f64::INFINITY, &mut |_, _| {}).unwrap();
    f
}

/// A 30 x 30 m floor at z = 0 (points every 0.1 m), with optional walls: (x, y0, y1) at constant x, 4 m high.
pub fn map_with_walls(walls: &[(f64, f64, f64)], boxes: &[([f64; 3], f64)]) -> Map {
    let mut pts = Vec::new();
    for i in 0..300 {
        for j in 0..300 {
            pts.push([-10.0 + 0.1 * i as f32, -15.0 + 0.1 * j as f32, 0.0]);
        }
    }
    for &(x, y0, y1) in walls {
        let n = ((y1 - y0) / 0.1) as usize;
        for i in 0..=n {
            for k in 0..40 {
                pts.push([x as f32, (y0 + 0.1 * i as f64) as f32, 0.1 * k as f32]);
            }
        }
    }
    // Hollow cubes: (centre, half edge).
    for &(c, h) in boxes {
        let n = (2.0 * h / 0.1).round() as i32;
        for i in 0..=n {
            for j in 0..=n {
                let (u, v) = (-h + 0.1 * i as f64, -h + 0.1 * j as f64);
                for p in [
                    [c[0] - h, c[1] + u, c[2] + v],
                    [c[0] + h, c[1] + u, c[2] + v],
                    [c[0] + u, c[1] - h, c[2] + v],
                    [c[0] + u, c[1] + h, c[2] + v],
                    [c[0] + u, c[1] + v, c[2] - h],
                    [c[0] + u, c[1] + v, c[2] + h],
                ] {
                    pts.push(p.map(|x| x as f32));
                }
            }
        }
    }
    map_of(pts)
}

/// One vehicle with a VLP-16 (`sensor_extra`: more keys of its table) flying from the origin to `goal_x` along x.
pub fn vlp_mission(seed: u64, duration_s: f64, sensor_extra: &str, goal_x: f64) -> Mission {
    mission(&format!(
        r#"
        seed = {seed}
        duration_s = {duration_s}
        [[vehicle]]
        name = "uav"
        start = [0.0, 0.0, 1.5, 0.0]
        [[vehicle.sensor]]
        name = "vlp"
        preset = "vlp16"
        {sensor_extra}
        [[vehicle.goal]]
        kind = "waypoint"
        position = [{goal_x}, 0.0, 1.5]
        "#
    ))
}

/// A short recorded flight with a spinning LiDAR written as `options` say, returning the MCAP bytes.
pub fn recorded(seed: u64, dir: &Path, options: RecordOptions) -> Vec<u8> {
    let m = vlp_mission(seed, 0.6, "mount = [0.0, 0.0, 0.1, 0.0, 0.0, 0.0]", 1.0);
    let mut f = Flight::new(map_with_walls(&[(5.0, -5.0, 5.0)], &[]), &m, Path::new(".")).unwrap();
    let path = dir.join(format!("flight_{seed}.mcap"));
    f.record_to(&path, options).unwrap();
    f.run_until(f64::INFINITY, &mut |_, _| {}).unwrap();
    f.finish_recording().unwrap();
    std::fs::read(&path).unwrap()
}
