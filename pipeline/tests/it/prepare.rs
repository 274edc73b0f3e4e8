//! Whole preparations: real scans into maps whose reader returns exactly the prepared points, exports that read
//! back, and the bad inputs a user can give.

use std::path::Path;

use crate::shared_data;
use aerie_pipeline::features::spacing::spacing_all;
use aerie_pipeline::io::{self, Format, ReadOptions, WriteOptions};
use aerie_pipeline::map::amap::{self, AmapFile};
use aerie_pipeline::prepare::{Recipe, Stage, map_read_options, prepare};
use aerie_pipeline::{Cloud, ExtraDim, NoProgress};

fn prepared_map_reads_back_exactly(rel: &str, resolution_m: f64) {
    let path = shared_data(rel);
    let cloud = io::read(&path, None, &ReadOptions::default()).unwrap();
    let n_in = cloud.len();
    let recipe = Recipe {
        resolution_m,
        ..Recipe::default()
    };
    let prepared = prepare(vec![(cloud, None)], &recipe, &NoProgress).unwrap();
    let map = &prepared.map;
    assert!(
        map.len() > 1000 && map.len() <= n_in,
        "{rel}: {} of {n_in}",
        map.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("map.amap");
    amap::write(map, &file).unwrap();
    let opened = AmapFile::open(&file).unwrap();
    let (a, b) = (map.view(), opened.view());
    assert_eq!(a.positions, b.positions, "{rel}: positions");
    assert_eq!(a.normals, b.normals, "{rel}: normals");
    assert_eq!(
        a.gamma
            .map(|g| g.iter().map(|x| x.to_bits()).collect::<Vec<_>>()),
        b.gamma.map(|g| g.iter().map(|x| x.to_bits()).collect())
    );
    assert_eq!(a.buckets, b.buckets);
    assert_eq!(a.origin, b.origin);
    // The normals stage found each point's surface spacing with its own search (the k nearest past the normals'
    // radius); the map stores it, and it is what a search of the map's points for the nearest seven finds.
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let stored = a.spacing.expect("the normals stage gives a spacing");
    assert_eq!(bits(stored), bits(b.spacing.unwrap()), "{rel}: spacing");
    assert_eq!(
        bits(stored),
        bits(&spacing_all(a.positions).unwrap()),
        "{rel}: the stored spacing against a search of the map"
    );
    let inside = stored.iter().filter(|&&s| s > 0.0).count();
    assert!(
        inside > map.len() / 4 && inside < map.len(),
        "{rel}: {inside} of {} points inside a surface",
        map.len()
    );
    let meta = opened.map_metadata();
    assert!(meta.recipe.is_some(), "the recipe is stored in the map");
    assert!(
        meta.report.iter().any(|r| r.stage == "filters.sor"),
        "the report is stored in the map"
    );

    // Export to every format and read back: same count, coordinates within 1 mm.
    let exported = opened.to_cloud();
    for ext in ["pcd", "ply", "las", "laz", "e57", "xyz"] {
        let out = dir.path().join(format!("export.{ext}"));
        io::write(&exported, &out, None, &WriteOptions::default()).unwrap();
        let back = io::read(&out, None, &ReadOptions::default()).unwrap();
        assert_eq!(back.len(), exported.len(), "{rel} -> {ext}");
        let mut worst = 0.0f64;
        for i in (0..back.len()).step_by(7) {
            let (p, q) = (exported.world(i), back.world(i));
            for k in 0..3 {
                worst = worst.max((p[k] - q[k]).abs());
            }
        }
        assert!(
            worst <= 1e-3,
            "{rel} -> {ext}: coordinates moved by {worst} m"
        );
        if matches!(Format::from_name(ext), Some(Format::Ply | Format::Pcd)) {
            assert!(back.normals().is_some(), "{rel} -> {ext}: normals kept");
        }
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn lone_star_prepares_to_a_map_that_reads_back_exactly() {
    prepared_map_reads_back_exactly("las/lone_star_tls.laz", 0.05);
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn hall_map_prepares_to_a_map_that_reads_back_exactly() {
    prepared_map_reads_back_exactly("maps/hall_map_20cm.pcd", 0.2);
}

fn cloud_of(points: Vec<[f32; 3]>) -> Cloud {
    Cloud::from_positions([0.0; 3], points)
}

fn grid(n: usize, step: f32) -> Vec<[f32; 3]> {
    (0..n * n)
        .map(|i| [(i % n) as f32 * step, (i / n) as f32 * step, 0.0])
        .collect()
}

#[test]
fn bad_inputs_give_clear_errors() {
    let run = |c: Cloud, r: Recipe| prepare(vec![(c, None)], &r, &NoProgress).map(|p| p.map.len());
    let e = run(Cloud::default(), Recipe::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no points"), "{e}");
    for bad in [0.0, -0.1, f64::NAN] {
        let e = run(
            cloud_of(grid(10, 0.1)),
            Recipe {
                resolution_m: bad,
                ..Recipe::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("resolution_m"), "{e}");
    }
    let mut nan = grid(10, 0.1);
    nan[3][1] = f32::NAN;
    let e = run(cloud_of(nan), Recipe::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("point 3"), "{e}");
    let mut crop = Recipe::default();
    crop.stages.insert(0, Stage::Crop);
    crop.filters.crop.min = [100.0; 3];
    crop.filters.crop.max = [101.0; 3];
    let e = run(cloud_of(grid(10, 0.1)), crop).unwrap_err().to_string();
    assert!(e.contains("removes every point"), "{e}");
}

#[test]
fn odd_but_valid_inputs_warn_instead_of_failing() {
    // k larger than the cloud: clamped with a warning.
    let mut r = Recipe::default();
    r.filters.sor.k = 500;
    let p = prepare(vec![(cloud_of(grid(10, 0.1)), None)], &r, &NoProgress).unwrap();
    assert!(
        p.warnings.iter().any(|w| w.contains("k")),
        "{:?}",
        p.warnings
    );
    // All-duplicate points: one point survives downsampling, with a warning, and no normal.
    let p = prepare(
        vec![(cloud_of(vec![[1.0, 2.0, 3.0]; 1000]), None)],
        &Recipe::default(),
        &NoProgress,
    )
    .unwrap();
    assert_eq!(p.map.len(), 1);
    assert!(
        p.warnings.iter().any(|w| w.contains("removed")),
        "{:?}",
        p.warnings
    );
    // Heavy downsampling warns (MARSIM issue #10).
    let p = prepare(
        vec![(cloud_of(grid(100, 0.01)), None)],
        &Recipe::default(),
        &NoProgress,
    )
    .unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("filters.downsample removed")),
        "{:?}",
        p.warnings
    );
}

/// The shared airborne scan counts in feet (its CRS says so): prepared as it is, the map says what the
/// simulator would see and how to scale it; scaled to metres by the recipe's transform, it keeps no CRS (its
/// points no longer lie in that system) and no such warning.
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn a_scan_in_feet_is_told_and_a_transformed_one_keeps_no_crs() {
    let path = shared_data("las/autzen_trim.laz");
    let cloud = || io::read(&path, None, &map_read_options()).unwrap();
    let recipe = Recipe {
        resolution_m: 2.0,
        ..Recipe::default()
    };
    let feet = prepare(vec![(cloud(), None)], &recipe, &NoProgress).unwrap();
    let told = |p: &aerie_pipeline::prepare::Prepared| {
        p.warnings.iter().any(|w| {
            w.contains("counts in foot (0.3048 m)") && w.contains("3.28 times its true size")
        })
    };
    assert!(told(&feet), "{:?}", feet.warnings);
    assert!(feet.map.metadata().unwrap().crs_wkt.is_some());
    let scale = aerie_pipeline::filters::TransformParams::scale(0.3048);
    let metres = prepare(vec![(cloud(), Some(scale))], &recipe, &NoProgress).unwrap();
    assert!(!told(&metres), "{:?}", metres.warnings);
    let meta = metres.map.metadata().unwrap();
    assert!(meta.crs_wkt.is_none() && meta.crs_geotiff.is_empty());
    assert!(
        metres
            .warnings
            .iter()
            .any(|w| w.contains("which is dropped")),
        "{:?}",
        metres.warnings
    );
}

#[test]
fn recipe_file_round_trip() {
    let text = "resolution_m = 0.05\nstages = [\"filters.sor\", \"filters.downsample\"]\n[filters.sor]\nk = 8\ncompat = \"cloudcompare\"\n";
    let r = Recipe::from_toml(text, Path::new("prep.toml")).unwrap();
    assert_eq!(r.filters.sor.k, 8);
    assert_eq!(r.stages, vec![Stage::Sor, Stage::Downsample]);
    let p = prepare(vec![(cloud_of(grid(30, 0.05)), None)], &r, &NoProgress).unwrap();
    let stored = p.map.metadata().unwrap().recipe.unwrap();
    assert_eq!(stored["resolution_m"].as_float(), Some(0.05));
}

/// Reading an input for a map (`map_read_options`: without time, returns, ring and extras) prepares the same map
/// as reading everything, down to the attributes the map says it dropped.
#[test]
fn a_map_read_prepares_the_same_map_as_a_full_read() {
    let points: Vec<[f32; 3]> = grid(60, 0.05)
        .into_iter()
        .map(|[x, y, _]| [x, y, 0.1 * (3.0 * x).sin() * (2.0 * y).cos()])
        .collect();
    let n = points.len();
    let mut c = cloud_of(points);
    c.origin = [500_000.0, 4_000_000.0, 100.0];
    c.set_intensity(Some((0..n).map(|i| (i % 500) as f32).collect()))
        .unwrap();
    c.set_time(Some((0..n).map(|i| 1.0e5 + i as f64 * 1e-4).collect()))
        .unwrap();
    c.set_return_number(Some(vec![1; n])).unwrap();
    c.set_number_of_returns(Some(vec![1; n])).unwrap();
    c.set_classification(Some((0..n).map(|i| (i % 3) as u8).collect()))
        .unwrap();
    c.set_ring(Some((0..n).map(|i| (i % 16) as u16).collect()))
        .unwrap();
    c.push_extra(ExtraDim::new(
        "range",
        (0..n).map(|i| i as f32).collect::<Vec<f32>>(),
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recipe = Recipe {
        resolution_m: 0.05,
        ..Recipe::default()
    };
    for ext in ["las", "laz", "pcd"] {
        let path = dir.path().join(format!("in.{ext}"));
        io::write(&c, &path, None, &WriteOptions::default()).unwrap();
        let full = io::read(&path, None, &ReadOptions::default()).unwrap();
        let skipped = io::read(&path, None, &map_read_options()).unwrap();
        assert!(
            skipped.time().is_none() && skipped.extras().is_empty(),
            "{ext}"
        );
        assert!(
            skipped.meta.dropped.iter().any(|d| d == "time")
                && skipped.meta.dropped.iter().any(|d| d == "range"),
            "{ext}: {:?}",
            skipped.meta.dropped
        );
        let a = prepare(vec![(full, None)], &recipe, &NoProgress).unwrap();
        let b = prepare(vec![(skipped, None)], &recipe, &NoProgress).unwrap();
        let (va, vb) = (a.map.view(), b.map.view());
        assert!(va.positions.len() > 1000, "{ext}: {}", va.positions.len());
        assert_eq!(va.positions, vb.positions, "{ext}: positions");
        assert_eq!(va.normals, vb.normals, "{ext}: normals");
        assert_eq!(va.buckets, vb.buckets, "{ext}: buckets");
        let (ma, mb) = (a.map.metadata().unwrap(), b.map.metadata().unwrap());
        assert!(
            ma.dropped_attributes.iter().any(|d| d == "time"),
            "{ext}: {:?}",
            ma.dropped_attributes
        );
        assert_eq!(ma.dropped_attributes, mb.dropped_attributes, "{ext}");
        assert_eq!(ma.sources, mb.sources, "{ext}");
    }
}
