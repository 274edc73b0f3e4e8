//! What the flight tests share: a map prepared from points, a mission from TOML text, a flight flown to its end.

use std::path::Path;

use aerie_pipeline::prepare::{Recipe, Stage, prepare};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::flight::Flight;
use aerie_simcore::mission::Mission;
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
