//! `aerie prepare --tiles / --plan-only / --plan` (issue 76): the tiled map's points are the in-memory map's,
//! bit for bit, and a bad plan file is refused naming it.

use std::path::Path;
use std::process::{Command, Output};

use aerie_pipeline::Cloud;
use aerie_pipeline::io::{self, WriteOptions};
use aerie_pipeline::map::amap::AmapFile;

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .expect("run aerie")
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A ground and a wall, 4 x 3 m, jittered (a small LCG), with a few outliers.
fn scene() -> Cloud {
    let mut state = 5u64;
    let mut unit = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut positions = Vec::new();
    for _ in 0..9000 {
        positions.push([unit() * 4.0, unit() * 3.0, 0.01 * unit()]);
    }
    for _ in 0..3000 {
        positions.push([unit() * 4.0, 2.0 + 0.01 * unit(), unit() * 2.0]);
    }
    for _ in 0..100 {
        positions.push([unit() * 4.0, unit() * 3.0, unit() * 3.0]);
    }
    Cloud::from_positions([500_000.0, 4_000_000.0, 50.0], positions)
}

/// Every point section of the map at `path`, as bytes.
fn points(path: &Path) -> Vec<Vec<u8>> {
    let map = AmapFile::open(path).unwrap();
    let v = map.view();
    let bits = |x: &[f32]| x.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    vec![
        bits(bytemuck_flat(v.positions)),
        bits(bytemuck_flat(v.normals.unwrap())),
        bits(v.gamma.unwrap()),
        bits(v.spacing.unwrap()),
        format!("{:?}", v.buckets).into_bytes(),
    ]
}

fn bytemuck_flat(v: &[[f32; 3]]) -> &[f32] {
    v.as_flattened()
}

#[test]
fn tiled_prepare_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("scene.ply");
    io::write(&scene(), &input, None, &WriteOptions::default()).unwrap();
    let whole = dir.path().join("whole.amap");
    ok(
        &aerie(&["prepare", s(&input), "-o", s(&whole), "-q"]),
        "prepare",
    );
    let tiled = dir.path().join("tiled.amap");
    ok(
        &aerie(&[
            "prepare",
            s(&input),
            "-o",
            s(&tiled),
            "--tiles",
            "3x2",
            "-q",
        ]),
        "prepare --tiles",
    );
    assert_eq!(points(&tiled), points(&whole));
    let plan = dir.path().join("PLAN.json");
    ok(
        &aerie(&[
            "prepare",
            s(&input),
            "--plan-only",
            s(&plan),
            "--tiles",
            "2x4",
        ]),
        "--plan-only",
    );
    assert!(!dir.path().join("PLAN.report.json").exists());
    let planned = dir.path().join("planned.amap");
    ok(
        &aerie(&[
            "prepare",
            s(&input),
            "-o",
            s(&planned),
            "--plan",
            s(&plan),
            "-q",
        ]),
        "prepare --plan",
    );
    assert_eq!(points(&planned), points(&whole));
    // A plan that is not one: exit 2, naming the file and the field.
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replace("\"tiles\": [", "\"tiles\": [0, ")).unwrap();
    let out = aerie(&["prepare", s(&input), "-o", s(&planned), "--plan", s(&plan)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("PLAN.json"), "{err}");
    let out = aerie(&["prepare", s(&input), "-o", s(&planned), "--tiles", "0x3"]);
    assert_eq!(out.status.code(), Some(2));
}
