//! End-to-end tests of the `aerie` command as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .expect("run aerie")
}

fn shared(rel: &str) -> PathBuf {
    crate::shared_data(rel)
}

/// Every shared scan with the point count the shared data lists for it.
const SHARED: &[(&str, usize)] = &[
    ("las/autzen_trim.las", 110_000),
    ("las/autzen_trim.laz", 110_000),
    ("las/las14_fmt8_extra_bytes.laz", 697_721),
    ("las/lone_star_tls.laz", 518_862),
    ("las/las11_airborne_small.laz", 5_658),
    ("e57/pumpA_tls.e57", 155_201),
    ("e57/tinyCartesianFloatRgb.e57", 2_090),
    ("e57/bunnyDouble.e57", 30_571),
    ("ply/hdl32_scan_binary.ply", 69_792),
    ("ply/stanford_bun000_ascii.ply", 40_256),
    ("pcd/hdl32_scan_binary.pcd", 69_792),
    ("pcd/car6_binary_compressed.pcd", 10_031),
    ("pcd/os0_hall_scan_full40.pcd", 87_922),
    ("maps/hall_map_20cm.pcd", 138_305),
];

fn info_points(path: &Path) -> usize {
    let out = aerie(&["info", "--json", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "aerie info {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("info --json prints JSON");
    v[0]["points"].as_u64().expect("points key") as usize
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn info_reports_every_shared_file_with_its_point_count() {
    for &(rel, n) in SHARED {
        let p = shared(rel);
        assert_eq!(info_points(&p), n, "{rel}");
        let out = aerie(&["info", p.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("points      {n}")), "{rel}: {text}");
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn convert_every_shared_file_to_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for &(rel, n) in SHARED {
        let p = shared(rel);
        for ext in ["las", "laz", "e57", "ply", "pcd", "xyz", "bin"] {
            let out_path = dir.path().join(format!("out.{ext}"));
            let out = aerie(&[
                "convert",
                "-q",
                p.to_str().unwrap(),
                out_path.to_str().unwrap(),
            ]);
            assert!(
                out.status.success(),
                "convert {rel} -> {ext}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(info_points(&out_path), n, "{rel} -> {ext}");
        }
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn convert_with_encodings() {
    let p = shared("pcd/hdl32_scan_binary.pcd");
    let dir = tempfile::tempdir().unwrap();
    for (ext, enc) in [
        ("pcd", "ascii"),
        ("pcd", "binary"),
        ("pcd", "compressed"),
        ("ply", "ascii"),
        ("ply", "binary"),
    ] {
        let out_path = dir.path().join(format!("out_{enc}.{ext}"));
        let out = aerie(&[
            "convert",
            "-q",
            "--encoding",
            enc,
            p.to_str().unwrap(),
            out_path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{ext} {enc}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(info_points(&out_path), 69_792);
    }
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pcd");
    std::fs::write(&bad, b"# .PCD v0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1000\nHEIGHT 1\nPOINTS 1000\nDATA binary\n\x00\x00").unwrap();
    let out_path = dir.path().join("out.ply");
    let out = aerie(&["convert", bad.to_str().unwrap(), out_path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.pcd"), "error names the file: {err}");
    assert!(!out_path.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );

    let missing = aerie(&["info", dir.path().join("nope.las").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    // The simulator's commands open the map through the simulator, whose error wraps the reader's.
    let nope = dir.path().join("nope.amap");
    let pose = "0,0,0,0,0,0";
    for args in [
        vec![
            "scan",
            nope.to_str().unwrap(),
            "--sensor",
            "avia",
            "--pose",
            pose,
        ],
        vec![
            "scan",
            bad.to_str().unwrap(),
            "--sensor",
            "avia",
            "--pose",
            pose,
        ],
        vec!["export", nope.to_str().unwrap(), out_path.to_str().unwrap()],
    ] {
        let out = aerie(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[1]),
            "{args:?}: the error names the file: {err}"
        );
    }
    let unknown = aerie(&[
        "convert",
        bad.to_str().unwrap(),
        dir.path().join("x.unknown").to_str().unwrap(),
    ]);
    assert_eq!(unknown.status.code(), Some(2));

    // A directory where a file belongs, and a recipe value out of range, are the user's input too: exit 2, and
    // the message names the path (the recipe's error names the recipe file and the key).
    let recipe = dir.path().join("r.toml");
    std::fs::write(&recipe, "resolution_m = -1.0\n").unwrap();
    let map = dir.path().join("m.amap");
    for (args, names) in [
        (
            vec!["info", dir.path().to_str().unwrap()],
            dir.path().to_str().unwrap(),
        ),
        (
            vec![
                "prepare",
                bad.to_str().unwrap(),
                "-o",
                map.to_str().unwrap(),
                "--recipe",
                recipe.to_str().unwrap(),
            ],
            "r.toml: resolution_m",
        ),
    ] {
        let out = aerie(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    assert!(!map.exists());
}

/// The library says it cannot tell a file's format in its own terms; the command line adds the flag of the
/// subcommand that names it: `--input-format` for what convert reads, `--format` for what it writes.
#[test]
fn an_unknown_format_hints_at_the_flag_of_its_side() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("points.dat");
    std::fs::write(&input, "1 2 3\n4 5 6\n").unwrap();
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let read = aerie(&["convert", input.to_str().unwrap(), "out.ply"]);
    assert_eq!(read.status.code(), Some(2), "{}", stderr(&read));
    let err = stderr(&read);
    assert!(err.contains("cannot tell the format"), "{err}");
    assert!(
        err.contains("hint: name the format with --input-format"),
        "{err}"
    );

    let xyz = dir.path().join("points.xyz");
    std::fs::write(&xyz, "1 2 3\n4 5 6\n").unwrap();
    let out = dir.path().join("out.unknown");
    let write = aerie(&["convert", xyz.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(write.status.code(), Some(2), "{}", stderr(&write));
    let err = stderr(&write);
    assert!(err.contains("cannot tell the format"), "{err}");
    assert!(err.contains("hint: name the format with --format"), "{err}");
    assert!(!out.exists());

    let named = aerie(&[
        "convert",
        input.to_str().unwrap(),
        dir.path().join("out.ply").to_str().unwrap(),
        "--input-format",
        "xyz",
    ]);
    assert!(named.status.success(), "{}", stderr(&named));
}

/// Slips a user makes on the command line get told, not silently obeyed: writing a file over its own input, a
/// negative value typed after a space (`--resolution -0.1`, which a parser may take for a flag), and a sensor
/// placed outside the map (local coordinates for a georeferenced map), which returns nothing.
#[test]
fn command_line_slips_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let xyz = dir.path().join("floor.xyz");
    let floor: String = (0..40)
        .flat_map(|i| (0..40).map(move |j| format!("{} {} 0\n", i as f64 * 0.1, j as f64 * 0.1)))
        .collect();
    std::fs::write(&xyz, &floor).unwrap();
    let link = dir.path().join("same.xyz");
    std::fs::hard_link(&xyz, &link).unwrap();
    for out in [&xyz, &link] {
        let o = aerie(&["convert", xyz.to_str().unwrap(), out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("is the input"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(&xyz).unwrap(), floor);
    // `-o` as prepare and scan take it, or the last argument; not both.
    let ply = dir.path().join("floor.ply");
    let o = aerie(&[
        "convert",
        xyz.to_str().unwrap(),
        "-o",
        ply.to_str().unwrap(),
    ]);
    assert!(o.status.success() && ply.exists(), "{}", stderr(&o));
    let o = aerie(&["convert", xyz.to_str().unwrap(), "a.ply", "-o", "b.ply"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    let map = dir.path().join("m.amap");
    let prepare = |flags: &[&str]| {
        let mut args = vec![
            "prepare",
            xyz.to_str().unwrap(),
            "-o",
            map.to_str().unwrap(),
        ];
        args.extend(flags);
        aerie(&args)
    };
    let refused = |flags: &[&str], said: &str| {
        let o = prepare(flags);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
        assert!(!map.exists());
    };
    refused(&["--resolution", "-0.1"], "-0.1 is not a positive length");
    // --scale multiplies the named inputs' coordinates (feet or millimetres to metres); never by 0.
    refused(&["--scale", "0"], "--scale 0 is not a positive factor");
    let o = prepare(&["--scale", "0.5", "--no-sor", "--no-downsample"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let info = aerie(&["info", "--json", map.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    // The floor spans 0..3.9 m read as it is, 0..1.95 m scaled by a half.
    let hi = v[0]["bounds"][1][0].as_f64().unwrap_or(f64::NAN);
    assert!(
        (hi - 1.95).abs() < 1e-3,
        "{}",
        String::from_utf8_lossy(&info.stdout)
    );
    std::fs::remove_file(&map).unwrap();

    let bad_resolution = aerie(&[
        "scan",
        xyz.to_str().unwrap(),
        "--resolution",
        "-1",
        "--sensor",
        "os0_64",
        "--pose",
        "2,2,1,0,0,0",
    ]);
    assert_eq!(bad_resolution.status.code(), Some(2));
    assert!(
        stderr(&bad_resolution).contains("--resolution -1 is not a positive length"),
        "{}",
        stderr(&bad_resolution)
    );

    let scan_at = |resolution: &str, pose: &str| {
        aerie(&[
            "scan",
            xyz.to_str().unwrap(),
            "--resolution",
            resolution,
            "--sensor",
            "os0_64",
            "--pose",
            pose,
        ])
    };
    let scan = |pose: &str| scan_at("0.1", pose);
    // A scan file prepared in memory finer than its points are apart: the prepare's hint is shown, with the
    // resolution that fits, where only a frame of few returns told it before.
    let fine = scan_at("0.01", "2,2,1,0,0,0");
    assert!(fine.status.success(), "{}", stderr(&fine));
    assert!(
        stderr(&fine).contains("floor.xyz (prepared in memory): 100% of the points have no plane")
            && stderr(&fine).contains("a resolution of about 0.1 m"),
        "{}",
        stderr(&fine)
    );
    let far = scan("1000,2,1,0,0,0");
    assert!(far.status.success(), "{}", stderr(&far));
    assert!(stderr(&far).contains("outside the map"), "{}", stderr(&far));
    let over = scan("2,2,1,0,0,0");
    assert!(over.status.success(), "{}", stderr(&over));
    assert!(
        !stderr(&over).contains("outside the map") && !stderr(&over).contains("too sparse"),
        "{}",
        stderr(&over)
    );
    // The closing line gives the frames' own time (the beam index is built before the first frame's clock).
    assert!(
        stderr(&over).contains("1 frame of os0_64: ") && stderr(&over).contains(" ms per frame, "),
        "{}",
        stderr(&over)
    );

    // An Ouster unit's metadata JSON as the sensor (firmware 1.x's flat layout): the unit's own model, named
    // after it; a file that lacks what a model needs is refused, naming the key.
    let unit = xyz.with_file_name("unit.json");
    let mut meta = serde_json::json!({
        "prod_line": "OS-0-64-U02", "prod_sn": 122201000123u64, "lidar_mode": "512x10",
        "beam_altitude_angles": (0..64).map(|i| 45.0 - i as f64 * 90.0 / 63.0).collect::<Vec<_>>(),
        "beam_azimuth_angles": (0..64).map(|i| [4.2, 1.4, -1.4, -4.2][i % 4]).collect::<Vec<_>>(),
        "lidar_origin_to_beam_origin_mm": 27.67,
    });
    std::fs::write(&unit, meta.to_string()).unwrap();
    let with_unit = |unit: &Path| {
        aerie(&[
            "scan",
            xyz.to_str().unwrap(),
            "--sensor",
            unit.to_str().unwrap(),
            "--pose",
            "2,2,1,0,0,0",
        ])
    };
    let o = with_unit(&unit);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 frame of OS-0-64-U02 122201000123: "),
        "{}",
        stderr(&o)
    );
    meta.as_object_mut().unwrap().remove("lidar_mode");
    std::fs::write(&unit, meta.to_string()).unwrap();
    let o = with_unit(&unit);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unit.json: Ouster metadata: no lidar_mode"),
        "{}",
        stderr(&o)
    );
}

/// The flagship demo as a user first runs it: every step done, and a flight through the forest and the building
/// that reaches its goals without touching the map.
#[test]
fn the_demo_flies_its_route_without_a_collision() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = aerie(&["demo", "-o", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The event log: take-off, every goal reached in order, the touchdown, the end; no collision.
    let events = std::fs::read_to_string(out.join("flight/events.jsonl")).unwrap();
    let kinds: Vec<String> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].to_string())
        .collect();
    assert!(!events.contains("\"collision\""), "collisions: {events}");
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("\"takeoff\""),
        "{events}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("\"mission_end\""),
        "{events}"
    );
    assert!(
        events.contains("\"touchdown\"") && events.contains("\"why\":\"landed\""),
        "{events}"
    );
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("0 collisions, goals done"),
        "the report's flight line"
    );
    // The walking person: the stations' poses written beside the raw scan remove most of it (what no other
    // station saw through stays), and almost nothing static goes with it.
    let figures = report
        .split("points on the walking person: ")
        .nth(1)
        .expect("the moving step's line");
    let numbers: Vec<f64> = figures
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    let (before, after, static_removed, statics) = (numbers[0], numbers[1], numbers[2], numbers[3]);
    assert!(before > 100.0 && after < 0.6 * before, "{figures}");
    assert!(static_removed < 0.001 * statics, "{figures}");
    assert!(out.join("raw/demo_poses.csv").exists() && out.join("moving.png").exists());

    // The demo's mission again with `aerie fly`, recorded as a rosbag2 folder in lz4 chunks, cut short.
    let (map, mission, run) = (
        out.join("demo.amap"),
        out.join("flight/mission.toml"),
        dir.path().join("run"),
    );
    let fly = |extra: &[&str]| {
        let mut args = vec![
            "fly",
            map.to_str().unwrap(),
            "--mission",
            mission.to_str().unwrap(),
            "-o",
            run.to_str().unwrap(),
            "--duration",
            "3",
            "-q",
        ];
        args.extend_from_slice(extra);
        aerie(&args)
    };
    let o = fly(&["--compression", "lz4", "--rosbag2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = std::fs::read_to_string(run.join("metadata.yaml")).unwrap();
    assert!(
        yaml.contains("storage_identifier: mcap") && yaml.contains("    - flight.mcap\n"),
        "{yaml}"
    );
    let mcap = std::fs::read(run.join("flight.mcap")).unwrap();
    assert!(mcap.windows(7).any(|w| w == b"\x03\0\0\0lz4"), "lz4 chunks");
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(events.contains("\"why\":\"duration reached\""), "{events}");
    // A codec it does not know is a slip, told before anything is flown.
    let o = fly(&["--compression", "brotli"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("zstd, lz4, none"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `aerie export --for octomap`: a tree at the map's resolution that `aerie info` reads back; a resolution out of
/// range (with its flag as the hint), `--resolution` for another target, and a name other than .bt exit 2 and
/// write nothing.
#[test]
fn an_octomap_export_reads_back_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    let mut xyz = String::new();
    for i in 0..40 {
        for j in 0..40 {
            xyz.push_str(&format!(
                "{} {} 0\n",
                0.05 * f64::from(i),
                0.05 * f64::from(j)
            ));
        }
    }
    std::fs::write(p("floor.xyz"), xyz).unwrap();
    let o = aerie(&["prepare", &p("floor.xyz"), "-o", &p("floor.amap")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = aerie(&[
        "export",
        &p("floor.amap"),
        "--for",
        "octomap",
        &p("floor.bt"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("OctoMap tree"), "{err}");
    assert!(
        err.contains("warning: ") && err.contains("no scanner's pose"),
        "{err}"
    );
    let o = aerie(&["info", &p("floor.bt")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("OctoMap OcTree") && out.contains("resolution  0.1 m"),
        "{out}"
    );
    assert!(
        out.contains("free        0 leaves"),
        "no scanner pose, no free space: {out}"
    );
    let map = p("floor.amap");
    for (args, says) in [
        (
            vec!["--for", "octomap", "--resolution", "0", "o.bt"],
            "hint: give another --resolution",
        ),
        (
            vec!["--for", "octomap", "--resolution", "0.001", "o.bt"],
            "out of range",
        ),
        (
            vec!["--for", "marsim", "--resolution", "0.2", "o.pcd"],
            "--resolution is for --for octomap",
        ),
        (vec!["--for", "octomap", "o.pcd"], "must be named .bt"),
    ] {
        let out_path = p(args[args.len() - 1]);
        let mut full = vec!["export", map.as_str()];
        full.extend(&args[..args.len() - 1]);
        full.push(&out_path);
        let o = aerie(&full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new(&out_path).exists(), "{args:?}");
    }
}

/// `aerie export --for gazebo|isaac`: bad output places exit 2 with the place named and leave nothing (a
/// folder that holds files, a file's name or a name Gazebo cannot find for a model, a name other than .usda for
/// a stage); a folder that holds files is left as it was. (Meshing the map itself is tested with `mesh::`.)
#[test]
fn mesh_exports_refuse_bad_output_places() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    let xyz: String = (0..400)
        .map(|i| {
            format!(
                "{} {} 0\n",
                0.05 * f64::from(i % 20),
                0.05 * f64::from(i / 20)
            )
        })
        .collect();
    std::fs::write(p("floor.xyz"), xyz).unwrap();
    let o = aerie(&["prepare", &p("floor.xyz"), "-o", &p("floor.amap")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::create_dir(p("full")).unwrap();
    std::fs::write(p("full/mine.txt"), "keep").unwrap();
    for (target, out, says) in [
        ("gazebo", "full", "the folder exists and is not empty"),
        ("gazebo", "model.pcd", "name it without a file's extension"),
        ("gazebo", "my model", "name it `my_model`"),
        ("isaac", "stage.usdc", "must be named .usda"),
    ] {
        let o = aerie(&["export", &p("floor.amap"), "--for", target, &p(out)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{target} {out}: {err}");
        assert!(
            err.contains(says) && err.contains(out),
            "{target} {out}: {err}"
        );
    }
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["floor.amap", "floor.report.json", "floor.xyz", "full"]
    );
    assert_eq!(std::fs::read_dir(p("full")).unwrap().count(), 1);
}

/// `aerie export --for copc`: a COPC file that `aerie info` reads as LAZ and shows with its levels; a name other
/// than .copc.laz and a folder that cannot be written exit 2 and write nothing.
#[test]
fn a_copc_export_reads_back_with_its_levels_and_refuses_bad_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    let mut xyz = String::new();
    for i in 0..40 {
        for j in 0..40 {
            xyz.push_str(&format!(
                "{} {} 0\n",
                0.05 * f64::from(i),
                0.05 * f64::from(j)
            ));
        }
    }
    std::fs::write(p("floor.xyz"), xyz).unwrap();
    let o = aerie(&["prepare", &p("floor.xyz"), "-o", &p("floor.amap")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = aerie(&[
        "export",
        &p("floor.amap"),
        "--for",
        "copc",
        &p("floor.copc.laz"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("COPC octree"), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let o = aerie(&["info", &p("floor.copc.laz")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("LAZ 1.4, point format 6"), "{out}");
    // Every point of the cloud is in the octree.
    let points = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("points"))
        .map(str::trim)
        .unwrap_or("?");
    assert!(
        out.contains(&format!("COPC 1.0 octree, {points} points")) && out.contains("level 0"),
        "{out}"
    );
    std::fs::write(p("blocker"), b"a file, not a folder").unwrap();
    for (out_path, says) in [
        (p("floor.laz"), "must be named .copc.laz"),
        (p("blocker/floor.copc.laz"), "cannot write"),
    ] {
        let o = aerie(&["export", &p("floor.amap"), "--for", "copc", &out_path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out_path}: {err}");
        assert!(err.contains(says), "{out_path}: {err}");
        assert!(!Path::new(&out_path).exists(), "{out_path}");
    }
}
