//! An OctoMap export read by OctoMap itself: `convert_octree` (Debian's octomap-tools, the C++ library) reads
//! the `.bt` that `aerie export --for octomap` wrote and writes it back byte for byte, and `pyoctomap` (its Python binding) finds the map's points
//! occupied and the points along the scanner's rays free (check_octomap.py beside this file); a truncated `.bt`
//! is refused by both and by `aerie info`.
//!
//! Whether those tools are installed only a run can tell, so this binary has its own harness
//! (tests/support/harness.rs): without them the check prints as ignored with the reason, and
//! `AERIE_REQUIRE_OCTOMAP_PEERS=1` (CI) makes it fail instead.

#[path = "../support/harness.rs"]
mod harness;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, ExitCode, Output};

use harness::{Check, Need};

/// OctoMap's command-line tools and its Python binding.
static OCTOMAP_PEERS: Need = Need {
    require_var: "AERIE_REQUIRE_OCTOMAP_PEERS",
    missing: || {
        let tools = Command::new("sh")
            .args(["-c", "command -v convert_octree"])
            .output()
            .is_ok_and(|o| o.status.success());
        let python = Command::new("python3")
            .args(["-c", "import pyoctomap"])
            .output()
            .is_ok_and(|o| o.status.success());
        (!(tools && python)).then(|| {
            "needs convert_octree (apt-get install octomap-tools) and python3 with pyoctomap \
             (pip install pyoctomap)"
                .to_string()
        })
    },
};

/// Where the room's scanner stood (metres), as its PCD's `VIEWPOINT` says.
const SCANNER: [f64; 3] = [0.05, 0.05, 1.25];

fn main() -> ExitCode {
    harness::main(&[Check {
        name: "octomap_reads_the_export_and_refuses_a_truncated_one",
        needs: &[&OCTOMAP_PEERS],
        run: octomap_reads_the_export_and_refuses_a_truncated_one,
    }])
}

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .unwrap()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).output().unwrap()
}

/// The output's stdout and stderr, for failure messages.
fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A closed room 4 m x 4 m x 2.5 m (floor, ceiling, four walls, a point every 0.05 m) as an ascii PCD whose
/// `VIEWPOINT` is the scanner at [`SCANNER`].
fn room_pcd(path: &Path) {
    let mut points = Vec::new();
    let steps = |from: f64, to: f64| {
        let n = ((to - from) / 0.05).round() as usize;
        (0..=n).map(move |i| from + 0.05 * i as f64)
    };
    for a in steps(-2.0, 2.0) {
        for b in steps(-2.0, 2.0) {
            points.push([a, b, 0.0]);
            points.push([a, b, 2.5]);
        }
        for z in steps(0.05, 2.45) {
            points.extend([[a, -2.0, z], [a, 2.0, z], [-2.0, a, z], [2.0, a, z]]);
        }
    }
    let [x, y, z] = SCANNER;
    let mut pcd = format!(
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\n\
         VIEWPOINT {x} {y} {z} 1 0 0 0\nPOINTS {n}\nDATA ascii\n",
        n = points.len()
    );
    for p in &points {
        writeln!(pcd, "{} {} {}", p[0], p[1], p[2]).unwrap();
    }
    std::fs::write(path, pcd).unwrap();
}

/// The room prepared into a map and exported for OctoMap; OctoMap's C++ tools and Python binding read it; a
/// truncated copy is refused by each reader.
fn octomap_reads_the_export_and_refuses_a_truncated_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    room_pcd(dir.path().join("room.pcd").as_path());
    for args in [
        vec!["prepare", &p("room.pcd"), "-o", &p("room.amap")],
        vec!["export", &p("room.amap"), "--for", "octomap", &p("room.bt")],
        vec!["export", &p("room.amap"), &p("room.xyz")],
    ] {
        let o = aerie(&args);
        assert!(o.status.success(), "aerie {args:?}: {}", text(&o));
    }
    let info = aerie(&["info", &p("room.bt")]);
    assert!(info.status.success(), "{}", text(&info));
    let info = text(&info);
    println!("aerie info:\n{info}");
    assert!(
        info.contains("resolution  0.1 m") && info.contains("free "),
        "{info}"
    );

    let o = run("convert_octree", &[&p("room.bt"), &p("copy.bt")]);
    println!("convert_octree:\n{}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    // OctoMap's own reading and writing (toMaxLikelihood, prune, writeBinary) gives back the very bytes.
    assert_eq!(
        std::fs::read(p("copy.bt")).unwrap(),
        std::fs::read(p("room.bt")).unwrap(),
        "OctoMap rewrote the tree differently"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/octomap_peers/check_octomap.py");
    let script = script.display().to_string();
    let [sx, sy, sz] = SCANNER.map(|v| v.to_string());
    let o = run(
        "python3",
        &[&script, &p("room.bt"), &p("room.xyz"), &sx, &sy, &sz],
    );
    println!("pyoctomap: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));

    let bytes = std::fs::read(p("room.bt")).unwrap();
    std::fs::write(p("cut.bt"), &bytes[..bytes.len() * 2 / 3]).unwrap();
    let o = aerie(&["info", &p("cut.bt")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cut.bt: byte "), "{}", text(&o));
    let o = run("convert_octree", &[&p("cut.bt"), &p("cut_copy.bt")]);
    println!("convert_octree on the truncated tree:\n{}", text(&o));
    assert!(
        !o.status.success() || !dir.path().join("cut_copy.bt").exists(),
        "{}",
        text(&o)
    );
    let o = run("python3", &[&script, "--refuses", &p("cut.bt")]);
    println!("pyoctomap on the truncated tree: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
}
