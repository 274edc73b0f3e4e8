//! The USD stage: its metadata, prims and counts read back, the same bytes each time, and bad input refused
//! with nothing left behind.

use super::super::surface::fixture::floor_and_box;
use super::*;
use crate::export::{ExportOptions, Target, export};

fn points() -> Cloud {
    Cloud::from_positions(
        [10.0, 20.0, 1.5],
        vec![[0.0, 0.0, 0.0], [1.0, 0.5, 0.25], [-1.0, 1.0, 0.0]],
    )
}

#[test]
fn a_stage_holds_the_meshes_with_collision_and_the_points() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("hall.usda");
    let (visual, collision) = (
        floor_and_box(4, [10.0, 20.0, 1.5]),
        floor_and_box(1, [10.0, 20.0, 1.5]),
    );
    write_stage(
        &visual,
        &collision,
        &points(),
        0.05,
        &path,
        [10.0, 20.0, 0.0],
    )
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for line in [
        "metersPerUnit = 1",
        "upAxis = \"Z\"",
        "defaultPrim = \"World\"",
        "prepend apiSchemas = [\"PhysicsCollisionAPI\", \"PhysicsMeshCollisionAPI\"]",
        "uniform token physics:approximation = \"none\"",
        "uniform token orientation = \"rightHanded\"",
        "point3f[] points = [(0, 0, 1.5), (1, 0.5, 1.75), (-1, 1, 1.5)]",
        "float[] widths = [0.05] (",
    ] {
        assert!(text.contains(line), "{line} not in\n{}", &text[..600]);
    }
    assert!(is_usda_file(&path));
    let s = read_stage(&path).unwrap();
    assert_eq!(
        (s.meters_per_unit, s.up_axis.as_deref()),
        (Some(1.0), Some("Z"))
    );
    assert_eq!(s.default_prim.as_deref(), Some("World"));
    let prims: Vec<_> = s.prims.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    assert_eq!(prims, [("Mesh", 2), ("Points", 1), ("Xform", 1)]);
    let geometry: Vec<_> = s
        .geometry
        .iter()
        .map(|g| (g.name.as_str(), g.points, g.faces))
        .collect();
    assert_eq!(
        geometry,
        [("Map", 45, 42), ("Collision", 24, 12), ("Points", 3, 0)]
    );
    assert_eq!(
        s.geometry[1].api_schemas,
        ["PhysicsCollisionAPI", "PhysicsMeshCollisionAPI"]
    );
    assert!(
        s.to_string()
            .contains("mesh        Collision: 24 points, 12 faces [PhysicsCollisionAPI"),
        "{s}"
    );

    let again = tmp.path().join("again.usda");
    write_stage(
        &visual,
        &collision,
        &points(),
        0.05,
        &again,
        [10.0, 20.0, 0.0],
    )
    .unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&again).unwrap()
    );

    std::fs::write(tmp.path().join("cut.usda"), &text[..text.len() / 2]).unwrap();
    let e = read_stage(&tmp.path().join("cut.usda")).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    std::fs::write(tmp.path().join("not.usda"), "PLY").unwrap();
    assert!(read_stage(&tmp.path().join("not.usda")).is_err());
}

#[test]
fn bad_input_is_refused_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = Mesh::new([0.0; 3], vec![], None, vec![]).unwrap();
    let path = tmp.path().join("e.usda");
    let e = write_stage(&empty, &empty, &points(), 0.1, &path, [0.0; 3]).unwrap_err();
    assert!(
        matches!(e, ExportError::EmptyMesh { .. }) && e.is_bad_input(),
        "{e}"
    );
    let options = ExportOptions {
        target: Target::Isaac,
        ..ExportOptions::default()
    };
    let e = export(&points(), &tmp.path().join("m.usd"), &options).unwrap_err();
    assert!(e.to_string().contains("must be named .usda"), "{e}");
    let e = export(&Cloud::with_origin([0.0; 3]), &path, &options).unwrap_err();
    assert!(matches!(e, ExportError::EmptyMap { .. }), "{e}");
    std::fs::write(tmp.path().join("afile"), "x").unwrap();
    let mesh = floor_and_box(1, [0.0; 3]);
    let under_a_file = tmp.path().join("afile/m.usda");
    let e = write_stage(&mesh, &mesh, &points(), 0.1, &under_a_file, [0.0; 3]).unwrap_err();
    assert!(e.is_bad_input(), "{e}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "nothing but the file"
    );
}
