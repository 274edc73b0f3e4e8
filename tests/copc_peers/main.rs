//! A COPC export read by the tools web viewers and GIS use: laspy's `CopcReader` (with lazrs, as in PDAL-free
//! Python pipelines) and copclib (check_copc.py beside this file) read the `.copc.laz` that `aerie export --for
//! copc` wrote: every point exactly once, a box query and each level's resolution query return the right
//! points, each level covers the map uniformly, and copclib's hierarchy and bounds validation pass. A map far
//! from 0 (UTM coordinates) keeps its millimetres.
//!
//! Whether those packages are installed only a run can tell, so this binary has its own harness
//! (tests/support/harness.rs): without them the check prints as ignored with the reason, and
//! `AERIE_REQUIRE_COPC_PEERS=1` (CI) makes it fail instead.

#[path = "../support/harness.rs"]
mod harness;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, ExitCode, Output};

use harness::{Check, Need};

/// laspy with its lazrs backend, and copclib.
static COPC_PEERS: Need = Need {
    require_var: "AERIE_REQUIRE_COPC_PEERS",
    missing: || {
        let python = Command::new("python3")
            .args(["-c", "import laspy, lazrs, copclib, numpy"])
            .output()
            .is_ok_and(|o| o.status.success());
        (!python).then(|| {
            "needs python3 with laspy, lazrs and copclib (pip install 'laspy[lazrs]' copclib)"
                .to_string()
        })
    },
};

fn main() -> ExitCode {
    harness::main(&[
        Check {
            name: "laspy_and_copclib_read_the_copc_export",
            needs: &[&COPC_PEERS],
            run: laspy_and_copclib_read_the_copc_export,
        },
        Check {
            name: "a_copc_export_far_from_zero_keeps_millimetres",
            needs: &[&COPC_PEERS],
            run: a_copc_export_far_from_zero_keeps_millimetres,
        },
    ])
}

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .unwrap()
}

/// The output's stdout and stderr, for failure messages.
fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A deterministic pseudo-random value in [0, 1).
fn rand(i: u64) -> f64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// A yard 60 m x 40 m with a wall and a mast, scanned densely near one corner (as near a scanner) and sparsely
/// far away: an ascii PCD of double x y z and intensity, at `origin`.
fn yard_pcd(path: &Path, origin: [f64; 3]) {
    let n = 80_000;
    let mut rows = String::new();
    for i in 0..n as u64 {
        let (u, v, w) = (rand(3 * i), rand(3 * i + 1), rand(3 * i + 2));
        let (u, v) = (u * u, v * v);
        let p = match i % 8 {
            0 | 1 => [60.0 * u, 40.0, 6.0 * w],
            2 => [30.0 + 0.3 * u, 20.0 + 0.3 * v, 15.0 * w],
            _ => [60.0 * u, 40.0 * v, 0.02 * w],
        };
        // Whole millimetres plus 0.2 mm: no coordinate is half-way between two of the file's millimetres, where
        // the x y z text (6 decimals) could not tell which way the file rounded it.
        let [x, y, z] =
            std::array::from_fn(|k| origin[k] + (p[k] * 1000.0).round() / 1000.0 + 0.0002);
        writeln!(rows, "{x:.4} {y:.4} {z:.4} {}", i % 4096).unwrap();
    }
    let pcd = format!(
        "VERSION 0.7\nFIELDS x y z intensity\nSIZE 8 8 8 4\nTYPE F F F F\nCOUNT 1 1 1 1\nWIDTH {n}\nHEIGHT 1\n\
         VIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA ascii\n{rows}"
    );
    std::fs::write(path, pcd).unwrap();
}

/// Prepares the yard at `origin` into a map, exports it for COPC and as x y z, runs check_copc.py on them, and
/// returns `aerie info` of the COPC file.
fn export_and_check(origin: [f64; 3]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    yard_pcd(dir.path().join("yard.pcd").as_path(), origin);
    for args in [
        vec!["prepare", &p("yard.pcd"), "-o", &p("yard.amap")],
        vec![
            "export",
            &p("yard.amap"),
            "--for",
            "copc",
            &p("yard.copc.laz"),
        ],
        vec!["export", &p("yard.amap"), &p("yard.xyz")],
    ] {
        let o = aerie(&args);
        assert!(o.status.success(), "aerie {args:?}: {}", text(&o));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/copc_peers/check_copc.py");
    let o = Command::new("python3")
        .args([
            &script.display().to_string(),
            &p("yard.copc.laz"),
            &p("yard.xyz"),
        ])
        .output()
        .unwrap();
    println!("check_copc.py: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    let info = aerie(&["info", &p("yard.copc.laz")]);
    assert!(info.status.success(), "{}", text(&info));
    text(&info)
}

/// laspy and copclib read the export of a map near 0; `aerie info` reads it as LAZ and shows its levels.
fn laspy_and_copclib_read_the_copc_export() {
    let info = export_and_check([0.0; 3]);
    println!("aerie info:\n{info}");
    assert!(
        info.contains("LAZ 1.4") && info.contains("COPC 1.0 octree"),
        "{info}"
    );
    assert!(info.contains("level 0     1 nodes"), "{info}");
}

/// The same far from 0, at UTM-like coordinates: the x y z export and the COPC file agree at the millimetre.
fn a_copc_export_far_from_zero_keeps_millimetres() {
    let info = export_and_check([500_000.0, 4_000_000.0, 250.0]);
    assert!(info.contains("COPC 1.0 octree"), "{info}");
}
