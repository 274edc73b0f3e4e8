//! The mesh exports read by the simulators' own libraries: the Gazebo model folder that `aerie export --for
//! gazebo` writes is checked by SDFormat (`ign sdf -k`, Debian's ignition-tools and libsdformat) and its COLLADA
//! meshes loaded by Assimp (`assimp info`, Debian's assimp-utils, the loader gz-sim uses) with the vertex and
//! face counts written; the USD stage of `--for isaac` is opened by Pixar's USD (`usd-core`, pip), whose checks
//! (topology, the physics schemas, metres and Z up, its validators) run in check_usd.py beside this file.
//!
//! The meshes are built by hand (a floor grid and a box standing on it, every face outward) and written through
//! the library's exporters, so the check does not depend on surface reconstruction. Whether the tools are
//! installed only a run can tell, so this binary has its own harness (tests/support/harness.rs): without them a
//! check prints as ignored with the reason, and `AERIE_REQUIRE_MESH_PEERS=1` (CI) makes it fail instead.

#[path = "../support/harness.rs"]
mod harness;

use std::path::Path;
use std::process::{Command, ExitCode, Output};

use aerie_pipeline::export::{gazebo, isaac};
use aerie_pipeline::mesh::Mesh;
use aerie_pipeline::{Cloud, export::ExportError};
use harness::{Check, Need};

/// Whether `sh -c SCRIPT` succeeds.
fn succeeds(script: &str) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// SDFormat's and Assimp's command-line tools.
static GAZEBO_PEERS: Need = Need {
    require_var: "AERIE_REQUIRE_MESH_PEERS",
    missing: || {
        (!succeeds("command -v ign && ign sdf --versions && command -v assimp")).then(|| {
            "needs ign sdf (apt-get install ignition-tools libsdformat-dev ruby) and assimp (apt-get install \
             assimp-utils)"
                .to_string()
        })
    },
};

/// Pixar's USD for Python.
static USD_PEERS: Need = Need {
    require_var: "AERIE_REQUIRE_MESH_PEERS",
    missing: || {
        (!succeeds("python3 -c 'from pxr import Usd, UsdGeom, UsdPhysics'"))
            .then(|| "needs python3 with usd-core (pip install usd-core)".to_string())
    },
};

fn main() -> ExitCode {
    harness::main(&[
        Check {
            name: "sdformat_and_assimp_read_the_gazebo_model",
            needs: &[&GAZEBO_PEERS],
            run: sdformat_and_assimp_read_the_gazebo_model,
        },
        Check {
            name: "usd_opens_the_isaac_stage_and_its_checks_pass",
            needs: &[&USD_PEERS],
            run: usd_opens_the_isaac_stage_and_its_checks_pass,
        },
    ])
}

fn run(program: &str, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(program);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn aerie(args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_aerie"), args, &[])
}

/// The output's stdout and stderr, for failure messages.
fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A floor of `n` x `n` squares of 1 m centred on 0 facing up, and a box of 1 m on it facing out (4 vertices a
/// face, no bottom): `(n + 1)^2 + 20` vertices, `2 n^2 + 10` triangles, around `origin`.
fn floor_and_box(n: u32, origin: [f64; 3]) -> Mesh {
    let mut vertices = Vec::new();
    let mut triangles = Vec::new();
    let half = n as f32 / 2.0;
    for j in 0..=n {
        for i in 0..=n {
            vertices.push([i as f32 - half, j as f32 - half, 0.0]);
        }
    }
    for j in 0..n {
        for i in 0..n {
            let a = j * (n + 1) + i;
            triangles.extend([[a, a + 1, a + n + 2], [a, a + n + 2, a + n + 1]]);
        }
    }
    // Each side's corners counter-clockwise seen from outside: top, -y, +x, +y, -x.
    let c = |x: f32, y: f32, z: f32| [0.5 + x, 0.5 + y, z];
    let faces = [
        [c(0., 0., 1.), c(1., 0., 1.), c(1., 1., 1.), c(0., 1., 1.)],
        [c(0., 0., 0.), c(1., 0., 0.), c(1., 0., 1.), c(0., 0., 1.)],
        [c(1., 0., 0.), c(1., 1., 0.), c(1., 1., 1.), c(1., 0., 1.)],
        [c(1., 1., 0.), c(0., 1., 0.), c(0., 1., 1.), c(1., 1., 1.)],
        [c(0., 1., 0.), c(0., 0., 0.), c(0., 0., 1.), c(0., 1., 1.)],
    ];
    for quad in faces {
        let a = vertices.len() as u32;
        vertices.extend(quad);
        triangles.extend([[a, a + 1, a + 2], [a, a + 2, a + 3]]);
    }
    Mesh::new(origin, vertices, None, triangles).unwrap()
}

/// The number after `label` in `assimp info`'s report (`Vertices:  45`).
fn figure(report: &str, label: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` in assimp's report:\n{report}"))
}

/// A model folder written through the library: SDFormat validates model.sdf and world.sdf (which finds the model
/// through the model path), Assimp loads each mesh with the counts written, and `aerie info` reads it back.
fn sdformat_and_assimp_read_the_gazebo_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hall_model");
    let (visual, collision) = (
        floor_and_box(6, [3.0, 4.0, -1.2]),
        floor_and_box(2, [3.0, 4.0, -1.2]),
    );
    gazebo::write_model(&visual, &collision, &dir, [0.0; 3]).unwrap();

    let o = run(
        "ign",
        &["sdf", "-k", &dir.join("model.sdf").display().to_string()],
        &[],
    );
    println!("ign sdf -k model.sdf: {}", text(&o));
    assert!(
        o.status.success() && text(&o).contains("Valid"),
        "{}",
        text(&o)
    );
    // The world includes model://hall_model: every Gazebo finds it through its resource path.
    let path_vars = [
        "SDF_PATH",
        "GZ_SIM_RESOURCE_PATH",
        "IGN_GAZEBO_RESOURCE_PATH",
        "GAZEBO_MODEL_PATH",
    ];
    let env: Vec<(&str, &Path)> = path_vars.iter().map(|v| (*v, tmp.path())).collect();
    let o = run(
        "ign",
        &["sdf", "-k", &dir.join("world.sdf").display().to_string()],
        &env,
    );
    println!("ign sdf -k world.sdf: {}", text(&o));
    assert!(
        o.status.success() && text(&o).contains("Valid"),
        "{}",
        text(&o)
    );

    for (file, n) in [("meshes/visual.dae", 6u64), ("meshes/collision.dae", 2)] {
        let o = run(
            "assimp",
            &["info", &dir.join(file).display().to_string()],
            &[],
        );
        let report = text(&o);
        assert!(o.status.success(), "{file}: {report}");
        let (vertices, faces) = (figure(&report, "Vertices:"), figure(&report, "Faces:"));
        println!("assimp info {file}: {vertices} vertices, {faces} faces");
        assert_eq!(faces, 2 * n * n + 10, "{file}: {report}");
        // After Assimp's joining of identical vertices (its default post-processing), the mesh's own.
        assert_eq!(vertices, (n + 1) * (n + 1) + 20, "{file}: {report}");
    }

    let o = aerie(&["info", &dir.display().to_string()]);
    println!("aerie info: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("model       hall_model"), "{}", text(&o));
    assert!(
        text(&o).contains("meshes/visual.dae: 69 vertices, 82 triangles"),
        "{}",
        text(&o)
    );

    // A second export to the same, now full, folder is refused, and the model is left as it was.
    let before = std::fs::read(dir.join("meshes/visual.dae")).unwrap();
    let e = gazebo::write_model(&collision, &collision, &dir, [0.0; 3]).unwrap_err();
    assert!(matches!(e, ExportError::FolderNotEmpty { .. }), "{e}");
    assert_eq!(
        std::fs::read(dir.join("meshes/visual.dae")).unwrap(),
        before
    );
}

/// A stage written through the library: USD opens it and check_usd.py finds the topology valid, the physics
/// schemas applied, metres and Z up, the counts written and no validator error; a truncated copy is refused by
/// USD and by `aerie info`.
fn usd_opens_the_isaac_stage_and_its_checks_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("hall.usda");
    let (visual, collision) = (
        floor_and_box(6, [3.0, 4.0, -1.2]),
        floor_and_box(2, [3.0, 4.0, -1.2]),
    );
    let points: Vec<[f32; 3]> = (0..50).map(|i| [i as f32 * 0.1, 0.5, 0.0]).collect();
    let cloud = Cloud::from_positions([3.0, 4.0, -1.2], points);
    isaac::write_stage(&visual, &collision, &cloud, 0.05, &stage, [0.0; 3]).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mesh_peers/check_usd.py");
    let script = script.display().to_string();
    let stage_arg = stage.display().to_string();
    // Expected: the visual mesh's vertices and faces, the collision mesh's, the points.
    let o = run(
        "python3",
        &[&script, &stage_arg, "69", "82", "29", "18", "50"],
        &[],
    );
    println!("check_usd.py: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));

    let o = aerie(&["info", &stage_arg]);
    println!("aerie info: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("metersPerUnit 1, upAxis Z"),
        "{}",
        text(&o)
    );

    let bytes = std::fs::read(&stage).unwrap();
    let cut = tmp.path().join("cut.usda");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let o = aerie(&["info", &cut.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("truncated"), "{}", text(&o));
    let o = run(
        "python3",
        &[&script, "--refuses", &cut.display().to_string()],
        &[],
    );
    println!("check_usd.py on the truncated stage: {}", text(&o));
    assert!(o.status.success(), "{}", text(&o));
}
