//! Simulated sequences with moving things (issue 78): the generator's ground truth, the benchmark layout it
//! writes, and `filters.moving` scored on them against floors chosen from measurement (docs/benchmarks.md).

use aerie_pipeline::dynamic_bench::{self, Score};
use aerie_pipeline::filters::moving::{MovingParams, Viewpoints, moving_mask, remove_moving};
use aerie_pipeline::{Cloud, NoProgress};
use aerie_simcore::moving_sequence::{DemoWorld, SimFrame, demo_spec, simulate, write_sequence};

/// The small demo sequence of the CI: the preview demo site, `frames` frames of `sensor`.
fn small_demo(sensor: &str, frames: usize) -> Vec<SimFrame> {
    let world = DemoWorld::new(1).unwrap();
    simulate(
        DemoWorld::placeholder_map().unwrap(),
        &[&world],
        &demo_spec(sensor, frames),
        &|x, y| world.ground(x, y),
    )
    .unwrap()
}

/// Write, read back, clean and score a sequence; also the cleaned cloud and the read sequence.
fn clean_and_score(frames: &[SimFrame], params: &MovingParams) -> (Score, Cloud, Cloud) {
    let dir = tempfile::tempdir().unwrap();
    write_sequence(dir.path(), frames).unwrap();
    let raw = dynamic_bench::read_sequence(dir.path()).unwrap();
    let (clean, _report) = remove_moving(&raw, params, &NoProgress).unwrap();
    let (gt, labels) = dynamic_bench::read_ground_truth(dir.path()).unwrap();
    let score = dynamic_bench::score(&gt, &labels, &clean).unwrap();
    (score, clean, raw)
}

/// The generator labels the movers' returns, and only theirs: a share of the returns, on every frame's
/// movers, with the sensor poses in the frames.
#[test]
fn demo_sequence_has_labelled_movers() {
    let frames = small_demo("avia", 4);
    assert_eq!(frames.len(), 4);
    let dynamic: usize = frames
        .iter()
        .map(|f| f.dynamic.iter().filter(|&&d| d).count())
        .sum();
    let total: usize = frames.iter().map(|f| f.cloud.len()).sum();
    assert!(
        dynamic > 100 && dynamic * 10 < total,
        "{dynamic} of {total}"
    );
    // Dynamic returns stand within 2 m above the ground, where people and cars are.
    for f in &frames {
        for (i, _) in f.dynamic.iter().enumerate().filter(|(_, d)| **d) {
            let z = f.cloud.world(i)[2];
            assert!((-0.5..2.2).contains(&z), "a mover's return at z {z}");
        }
    }
}

/// Measured on this sequence (12 Avia frames 0.5 s apart in the demo site, default parameters): SA 0.99998,
/// DA 0.586 (docs/benchmarks.md). The floors sit below so that a change of rounding cannot fail them, and far
/// above a stage that removes nothing (DA 0) or carves the grazing ground (SA 0.93 with plain carving).
#[test]
fn moving_stage_scores_above_the_floors_on_the_small_demo_sequence() {
    let frames = small_demo("avia", 12);
    let (score, clean, raw) = clean_and_score(&frames, &MovingParams::default());
    eprintln!("small demo avia: {score:?}");
    assert!(clean.len() < raw.len(), "nothing removed");
    assert!(score.sa >= 0.995, "{score:?}");
    assert!(score.da >= 0.5, "{score:?}");
}

/// The same sequence with each pose inverted (sensor_from_world given for world_from_sensor) gets a warning.
#[test]
fn inverted_poses_are_reported() {
    let frames = small_demo("avia", 6);
    let dir = tempfile::tempdir().unwrap();
    write_sequence(dir.path(), &frames).unwrap();
    let mut raw = dynamic_bench::read_sequence(dir.path()).unwrap();
    let right = Viewpoints::from_scans(&raw).unwrap();
    let ok = moving_mask(&raw, &right, &MovingParams::default(), &NoProgress).unwrap();
    assert!(ok.stats.warnings.is_empty(), "{:?}", ok.stats.warnings);
    for s in &mut raw.meta.scans {
        s.world_from_scan = s.world_from_scan.map(|p| p.inverse());
    }
    let wrong = Viewpoints::from_scans(&raw).unwrap();
    let bad = moving_mask(&raw, &wrong, &MovingParams::default(), &NoProgress).unwrap();
    eprintln!("{:?}", bad.stats);
    assert!(!bad.stats.warnings.is_empty());
}
