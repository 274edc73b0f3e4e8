//! End-to-end: prepare a real scan into a map, inspect it, export it for MARSIM, and scan it with a simulated
//! LiDAR, as a user runs the commands.

use std::path::Path;
use std::process::{Command, Output};

fn aerie(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aerie"))
        .args(args)
        .output()
        .expect("run aerie")
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn prepare_info_export_scan() {
    let input = crate::shared_data("las/lone_star_tls.laz");
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("lone.amap");
    let out = aerie(&["prepare", s(&input), "-o", s(&map), "--resolution", "0.1"]);
    ok(&out, "prepare");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("filters.sor") && text.contains("features.normals"),
        "report printed: {text}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("lone.report.json")).unwrap())
            .unwrap();
    assert_eq!(report["points_in"].as_u64(), Some(518_862));
    let points = report["points_out"].as_u64().unwrap();
    assert!(points > 10_000 && points < 518_862, "{points}");

    let info = aerie(&["info", "--json", s(&map)]);
    ok(&info, "info map");
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v[0]["points"].as_u64(), Some(points));
    assert!(v[0]["map"]["metadata"]["recipe"]["resolution_m"].as_f64() == Some(0.1));
    // The surfaces' spacing is stored: voxel centroids lie about a resolution apart (0.086 m when written).
    let spacing = v[0]["map"]["surface_spacing_median_m"].as_f64().unwrap();
    assert!(spacing > 0.05 && spacing < 0.2, "{spacing}");
    let text = aerie(&["info", s(&map)]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("recipe") && text.contains("spacing     median"),
        "{text}"
    );

    let pcd = dir.path().join("lone_marsim.pcd");
    let marsim = aerie(&["export", s(&map), s(&pcd), "--for", "marsim"]);
    ok(&marsim, "export marsim");
    let bytes = std::fs::read(&pcd).unwrap();
    let head = String::from_utf8_lossy(&bytes[..200]);
    // MARSIM loads pcl::PointXYZ, whose fields must be float: the georeferenced map moves to a local frame.
    assert!(
        head.contains("FIELDS x y z\n")
            && head.contains("SIZE 4 4 4\n")
            && head.contains("TYPE F F F\n")
            && head.contains("DATA binary"),
        "{head}"
    );
    assert!(String::from_utf8_lossy(&marsim.stderr).contains("local frame"));
    let local: serde_json::Value =
        serde_json::from_slice(&aerie(&["info", "--json", s(&pcd)]).stdout).unwrap();
    let lo = local[0]["bounds"][0].as_array().unwrap();
    assert!(
        lo.iter().all(|c| (0.0..1.0).contains(&c.as_f64().unwrap())),
        "{lo:?}"
    );
    // A generic PCD of the georeferenced map keeps doubles, and says PCL's types will not load them; `--for ros`
    // writes floats in a local frame with every attribute.
    let generic = aerie(&["export", s(&map), s(&dir.path().join("lone.pcd"))]);
    ok(&generic, "export pcd");
    assert!(String::from_utf8_lossy(&generic.stderr).contains("--for ros"));
    let ros_pcd = dir.path().join("lone_ros.pcd");
    let ros = aerie(&["export", s(&map), "-o", s(&ros_pcd), "--for", "ros"]);
    ok(&ros, "export ros");
    let bytes = std::fs::read(&ros_pcd).unwrap();
    let head = String::from_utf8_lossy(&bytes[..300]);
    assert!(
        head.contains("normal_x") && head.contains("SIZE 4 4 4 4") && head.contains("DATA binary"),
        "{head}"
    );
    assert!(String::from_utf8_lossy(&ros.stderr).contains("local frame"));
    for ext in ["ply", "las", "laz", "e57", "xyz"] {
        let out_path = dir.path().join(format!("lone.{ext}"));
        ok(&aerie(&["export", s(&map), s(&out_path)]), ext);
        let info = aerie(&["info", "--json", s(&out_path)]);
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v[0]["points"].as_u64(), Some(points), "{ext}");
    }
    let las_info: serde_json::Value =
        serde_json::from_slice(&aerie(&["info", "--json", s(&dir.path().join("lone.las"))]).stdout)
            .unwrap();
    let names: Vec<&str> = las_info[0]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(
        names.contains(&"gamma"),
        "gamma exported to LAS as extra bytes: {names:?}"
    );
    // lone_star declares its CRS only as GeoTIFF keys: the map keeps them for the LAS written from it.
    assert_eq!(las_info[0]["crs_epsg"].as_u64(), Some(4326), "{las_info}");

    // The middle of the map, 1.5 m up.
    let lo = &v[0]["bounds"][0];
    let hi = &v[0]["bounds"][1];
    let mid = |k: usize| (lo[k].as_f64().unwrap() + hi[k].as_f64().unwrap()) / 2.0;
    let pose = format!(
        "{},{},{},0,0,0",
        mid(0),
        mid(1),
        lo[2].as_f64().unwrap() + 1.5
    );
    let scan = dir.path().join("scan.pcd");
    let png = dir.path().join("range.png");
    let out = aerie(&[
        "scan",
        s(&map),
        "--sensor",
        "os1_64",
        "--pose",
        &pose,
        "-o",
        s(&scan),
        "--depth-png",
        s(&png),
    ]);
    ok(&out, "scan");
    let info: serde_json::Value =
        serde_json::from_slice(&aerie(&["info", "--json", s(&scan)]).stdout).unwrap();
    let n = info[0]["points"].as_u64().unwrap();
    assert!(n > 1000 && n <= 65_536, "{n} returns of 65,536 beams");
    let names: Vec<&str> = info[0]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    for want in ["intensity", "time", "ring"] {
        assert!(names.contains(&want), "scan has {want}: {names:?}");
    }
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));

    // Three Livox frames as a numbered series, the same three merged into one file, and one frame again: the
    // merged file holds every point of the series once, and the same seed gives the same bytes.
    let avia = |out: &Path, extra: &[&str]| {
        let mut args = vec!["scan", s(&map), "--sensor", "avia", "--pose", &pose];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-o", s(out), "-q"]);
        ok(&aerie(&args), &format!("avia scan {extra:?}"));
    };
    let points = |p: &Path| {
        let v: serde_json::Value =
            serde_json::from_slice(&aerie(&["info", "--json", s(p)]).stdout).unwrap();
        v[0]["points"].as_u64().unwrap()
    };
    avia(&dir.path().join("avia.pcd"), &["--frames", "3"]);
    let mut in_series = 0;
    for k in 0..3 {
        let frame = dir.path().join(format!("avia_{k:06}.pcd"));
        assert!(frame.is_file());
        in_series += points(&frame);
    }
    let merged = dir.path().join("merged.pcd");
    avia(&merged, &["--frames", "3", "--merge"]);
    assert_eq!(points(&merged), in_series);
    let again = dir.path().join("again.pcd");
    avia(&again, &[]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(dir.path().join("avia_000000.pcd")).unwrap()
    );
}

#[test]
fn scan_and_map_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("bad.amap");
    std::fs::write(&map, b"AERIEMAP\x01\x00\x00\x00garbage").unwrap();
    let out = aerie(&["info", s(&map)]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.amap"));
    let out = aerie(&["scan", s(&map), "--sensor", "nope", "--pose", "0,0,0,0,0,0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("avia"),
        "lists the presets"
    );
    let out = aerie(&["scan", s(&map), "--sensor", "avia"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no pose: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = aerie(&[
        "prepare",
        s(&map),
        "-o",
        s(&dir.path().join("x.amap")),
        "--resolution",
        "-1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("x.amap").exists());
}
