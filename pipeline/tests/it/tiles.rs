//! The tiled prepare (issue 76): byte-identical maps to the in-memory prepare for several tile plans, and
//! outlier statistics that do not depend on the points' order.

use aerie_pipeline::filters::{SorParams, sor_mask};
use aerie_pipeline::map::PackedMap;
use aerie_pipeline::map::amap;
use aerie_pipeline::prepare::{Recipe, Stage, prepare};
use aerie_pipeline::tiles::{TilePlan, prepare_tiled};
use aerie_pipeline::{Cloud, NoProgress};

/// splitmix64, enough for test data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A georeferenced scene of 6 x 5 m: a noisy ground, a wall, a pole, scattered outliers, exact duplicates with
/// different intensities, and a row of points on every multiple of `edge_m` in x and y (tile edges).
fn scene(seed: u64, edge_m: f64) -> Cloud {
    let mut rng = Rng(seed);
    let origin = [637_000.0, 851_000.0, 120.0];
    let mut positions = Vec::new();
    for _ in 0..14_000 {
        let (x, y) = (rng.unit() * 6.0, rng.unit() * 5.0);
        positions.push([x, y, 0.01 * rng.unit()]);
    }
    for _ in 0..5_000 {
        positions.push([rng.unit() * 6.0, 3.2 + 0.01 * rng.unit(), rng.unit() * 2.5]);
    }
    for _ in 0..800 {
        let a = rng.unit() * std::f32::consts::TAU;
        positions.push([2.0 + 0.15 * a.cos(), 1.5 + 0.15 * a.sin(), rng.unit() * 2.0]);
    }
    for _ in 0..300 {
        positions.push([rng.unit() * 6.0, rng.unit() * 5.0, rng.unit() * 3.0 - 0.5]);
    }
    for i in 0..400 {
        let p = positions[i * 7];
        positions.push(p);
    }
    // Points whose world x or y is exactly a tile edge (a multiple of edge_m from the world origin).
    let mut k = (origin[0] / edge_m).ceil();
    while k * edge_m < origin[0] + 6.0 {
        for j in 0..50 {
            let y = j as f32 * 0.1 + 0.013;
            positions.push([(k * edge_m - origin[0]) as f32, y, 0.004]);
        }
        k += 1.0;
    }
    let mut c = Cloud::from_positions(origin, positions);
    let n = c.len();
    let mut rng = Rng(seed ^ 0xabc);
    c.set_intensity(Some((0..n).map(|_| rng.unit() * 1000.0).collect()))
        .unwrap();
    c.set_color(Some(
        (0..n)
            .map(|i| [(i % 65536) as u16, (i * 7 % 65536) as u16, 9])
            .collect(),
    ))
    .unwrap();
    c
}

/// The map's bytes as written, with every stage's time set to 0 (wall times differ on every run).
fn bytes(mut map: PackedMap) -> Vec<u8> {
    let mut meta = map.metadata().unwrap();
    for r in &mut meta.report {
        r.seconds = 0.0;
    }
    map.set_metadata(&meta).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.amap");
    amap::write(&map, &path).unwrap();
    std::fs::read(&path).unwrap()
}

fn recipe(resolution_m: f64) -> Recipe {
    Recipe {
        resolution_m,
        ..Recipe::default()
    }
}

/// Tile plans over the scene: 1x1, 2x2, 3x3, 4x3 with shifted origins, and tiny halos that must widen.
fn plans(cloud: &Cloud, r: f64) -> Vec<TilePlan> {
    let mut plans = vec![
        TilePlan::covering(cloud, r, [1, 1], [0, 0]).unwrap(),
        TilePlan::covering(cloud, r, [2, 2], [0, 0]).unwrap(),
        TilePlan::covering(cloud, r, [3, 3], [0, 0]).unwrap(),
        TilePlan::covering(cloud, r, [4, 3], [3, 7]).unwrap(),
        TilePlan::covering(cloud, r, [3, 2], [-5, 2]).unwrap(),
    ];
    let mut thin = TilePlan::covering(cloud, r, [3, 3], [1, 1]).unwrap();
    thin.sor_halo_voxels = 0;
    thin.normals_halo_voxels = 0;
    plans.push(thin);
    plans
}

#[test]
fn tiled_prepare_is_byte_identical_for_every_plan() {
    let r = 0.1;
    let cloud = scene(1, 1.0);
    let expected = bytes(
        prepare(vec![(cloud.clone(), None)], &recipe(r), &NoProgress)
            .unwrap()
            .map,
    );
    for plan in plans(&cloud, r) {
        let got = prepare_tiled(vec![(cloud.clone(), None)], &recipe(r), &plan, &NoProgress)
            .unwrap_or_else(|e| panic!("{plan:?}: {e}"));
        assert!(
            bytes(got.map) == expected,
            "plan {plan:?}: the tiled map differs"
        );
    }
}

#[test]
fn tile_edges_on_voxel_multiples_and_other_recipes() {
    // Tiles 1.2 m wide at r 0.2 (6 voxels), points on those edges; outlier removal off, then normals off.
    let r = 0.2;
    let cloud = scene(2, 1.2);
    let mut recipes = vec![recipe(r)];
    let mut no_sor = recipe(r);
    no_sor.stages = vec![Stage::Downsample, Stage::Normals];
    recipes.push(no_sor);
    let mut no_normals = recipe(r);
    no_normals.stages = vec![Stage::Sor, Stage::Downsample];
    no_normals.bucket_size_m = Some(1.6);
    recipes.push(no_normals);
    for rec in recipes {
        let expected = bytes(
            prepare(vec![(cloud.clone(), None)], &rec, &NoProgress)
                .unwrap()
                .map,
        );
        for shift in [[0, 0], [3, 1]] {
            let mut plan = TilePlan::covering(&cloud, r, [4, 4], shift).unwrap();
            plan.tile_voxels = 6;
            plan.origin_voxel = [
                (637_000.0f64 / 1.2).floor() as i64 * 6 + shift[0],
                (851_000.0f64 / 1.2).floor() as i64 * 6 + shift[1],
            ];
            let got = prepare_tiled(vec![(cloud.clone(), None)], &rec, &plan, &NoProgress).unwrap();
            assert!(bytes(got.map) == expected, "{:?} {plan:?}", rec.stages);
        }
    }
}

#[test]
fn recipes_the_tiles_cannot_run_are_refused_by_name() {
    let cloud = scene(3, 1.0);
    let plan = TilePlan::covering(&cloud, 0.1, [2, 2], [0, 0]).unwrap();
    let mut rec = recipe(0.1);
    rec.stages = vec![Stage::Sor, Stage::Radius, Stage::Downsample];
    let e = prepare_tiled(vec![(cloud.clone(), None)], &rec, &plan, &NoProgress)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Radius"), "{e}");
    let e = prepare_tiled(vec![(cloud, None)], &recipe(0.2), &plan, &NoProgress)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("resolution"), "{e}");
}

/// The outlier statistics are exact sums: any order of the same points gives the same bits.
#[test]
fn sor_threshold_does_not_depend_on_point_order() {
    let cloud = scene(4, 1.0);
    let params = SorParams::default();
    let (mask, stats) = sor_mask(&cloud, &params, &NoProgress).unwrap();
    let mut rng = Rng(99);
    let mut order: Vec<usize> = (0..cloud.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let shuffled = cloud.select(&order);
    let (mask2, stats2) = sor_mask(&shuffled, &params, &NoProgress).unwrap();
    assert_eq!(stats.mu.to_bits(), stats2.mu.to_bits());
    assert_eq!(stats.sigma.to_bits(), stats2.sigma.to_bits());
    assert_eq!(stats.threshold.to_bits(), stats2.threshold.to_bits());
    assert!(stats.outliers > 0);
    for (j, &i) in order.iter().enumerate() {
        assert_eq!(mask2[j], mask[i]);
    }
}
