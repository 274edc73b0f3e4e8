//! `aerie mesh` as a user runs it: a prepared map to PLY, OBJ and glTF binary, read back by `aerie info`; bad
//! input refused with exit code 2 and no output left behind.

use std::path::Path;
use std::process::{Command, Output};

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .expect("run aerie")
}

/// A 2 m x 2 m floor every 5 cm, as delimited text, prepared at 0.1 m into `dir/floor.amap`.
fn floor_map(dir: &Path) -> String {
    let mut xyz = String::new();
    for i in 0..=40 {
        for j in 0..=40 {
            xyz.push_str(&format!(
                "{} {} 0\n",
                0.05 * f64::from(i),
                0.05 * f64::from(j)
            ));
        }
    }
    let text = dir.join("floor.xyz");
    std::fs::write(&text, xyz).unwrap();
    let map = dir.join("floor.amap").display().to_string();
    let o = aerie(&["prepare", text.to_str().unwrap(), "-o", &map, "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    map
}

#[test]
fn a_map_becomes_a_mesh_in_each_format_and_info_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let map = floor_map(dir.path());
    for ext in ["ply", "obj", "glb"] {
        let out = dir
            .path()
            .join(format!("floor.{ext}"))
            .display()
            .to_string();
        let o = aerie(&["mesh", &map, "-o", &out]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && err.contains("wrote a mesh of"),
            "{ext}: {err}"
        );
        let o = aerie(&["info", "--json", &out]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let tris = v[0]["triangles"].as_u64().unwrap();
        assert!(tris > 300, "{ext}: {tris} triangles");
        let (lo, hi) = (&v[0]["bounds"][0], &v[0]["bounds"][1]);
        assert!(
            lo[2].as_f64().unwrap().abs() < 0.01 && hi[2].as_f64().unwrap().abs() < 0.01,
            "{v}"
        );
        assert!(
            hi[0].as_f64().unwrap() < 2.1 && lo[0].as_f64().unwrap() > -0.1,
            "{v}"
        );
    }
    let small = dir.path().join("small.ply").display().to_string();
    let o = aerie(&["mesh", &map, "-o", &small, "--triangles", "100", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = aerie(&["info", &small]);
    let text = String::from_utf8_lossy(&o.stdout);
    let tris: usize = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("triangles"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(tris <= 100 && tris > 0, "{text}");
}

#[test]
fn bad_input_exits_2_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let map = floor_map(dir.path());
    let p = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(p("bare.xyz"), "0 0 0\n1 0 0\n0 1 0\n").unwrap();
    std::fs::write(p("empty.xyz"), "").unwrap();
    std::fs::write(p("a_file"), "not a folder").unwrap();
    let cases: [(&[&str], String, &str); 6] = [
        (&["mesh", &p("bare.xyz")], p("bare.ply"), "no normals"),
        (&["mesh", &p("empty.xyz")], p("empty.ply"), ""),
        (
            &["mesh", &map, "--resolution", "0.0001"],
            p("fine.ply"),
            "out of range",
        ),
        (
            &["mesh", &map, "--resolution", "50"],
            p("coarse.ply"),
            "out of range",
        ),
        (&["mesh", &map], p("a_file/m.ply"), "a_file"),
        (&["mesh", &map], p("m.stl"), ".ply, .obj or .glb"),
    ];
    for (args, out, says) in cases {
        let mut args = args.to_vec();
        args.extend(["-o", &out]);
        let o = aerie(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!Path::new(&out).exists(), "{out} was left behind");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".aerie-tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}
