//! The Gazebo model folder: what it holds and reads back, the same bytes each time, and bad output places (a
//! folder that holds files, a file's name, a name Gazebo cannot find, an empty mesh, a place that cannot be
//! written), each refused with nothing left behind.

use super::super::surface::fixture::floor_and_box;
use super::*;
use crate::Cloud;
use crate::export::{ExportOptions, Target, export};

/// The files of a folder and its subfolders, relative to it, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            out.extend(listing(&p).into_iter().map(|f| format!("{name}/{f}")));
        } else {
            out.push(name);
        }
    }
    out.sort();
    out
}

#[test]
fn a_model_folder_holds_its_meshes_by_model_uris_and_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hall_model");
    let (visual, collision) = (
        floor_and_box(4, [10.0, 20.0, 1.5]),
        floor_and_box(1, [10.0, 20.0, 1.5]),
    );
    write_model(&visual, &collision, &dir, [10.0, 20.0, 0.0]).unwrap();
    assert_eq!(
        listing(&dir),
        [
            "README.txt",
            "meshes/collision.dae",
            "meshes/visual.dae",
            "model.config",
            "model.sdf",
            "world.sdf"
        ]
    );
    assert_eq!(
        listing(tmp.path()).len(),
        6,
        "no temporary folder is left beside it"
    );
    let sdf = std::fs::read_to_string(dir.join("model.sdf")).unwrap();
    assert!(
        sdf.contains("<sdf version=\"1.7\">") && sdf.contains("<static>true</static>"),
        "{sdf}"
    );
    assert!(
        sdf.contains("<uri>model://hall_model/meshes/visual.dae</uri>"),
        "{sdf}"
    );
    let world = std::fs::read_to_string(dir.join("world.sdf")).unwrap();
    assert!(
        world.contains("<uri>model://hall_model</uri>") && world.contains("<plane>"),
        "{world}"
    );
    // The floor of the mesh is at 1.5 m in the map's frame, shifted by 0 in z: the ground plane is below it.
    assert!(world.contains("<pose>0 0 1.45 0 0 0</pose>"), "{world}");
    let dae = std::fs::read_to_string(dir.join("meshes/visual.dae")).unwrap();
    assert!(
        dae.contains("<unit name=\"meter\" meter=\"1\"/>")
            && dae.contains("<up_axis>Z_UP</up_axis>")
    );
    // The first vertex (-2, -2, 0) around (10, 20, 1.5), shifted by (10, 20, 0).
    assert!(
        dae.contains("count=\"135\">-2 -2 1.5 -1 -2 1.5"),
        "{}",
        &dae[..1500]
    );
    assert!(
        std::fs::read_to_string(dir.join("README.txt"))
            .unwrap()
            .contains("GZ_SIM_RESOURCE_PATH")
    );

    let summary = read_model(&dir).unwrap();
    assert!(is_model_dir(&dir));
    assert_eq!(summary.name, "hall_model");
    assert_eq!(summary.sdf_version, "1.7");
    assert!(summary.world);
    let counts: Vec<_> = summary
        .meshes
        .iter()
        .map(|m| (m.file.as_str(), m.vertices, m.triangles))
        .collect();
    assert_eq!(
        counts,
        [
            ("meshes/visual.dae", 45, 42),
            ("meshes/collision.dae", 24, 12)
        ]
    );
    assert!(
        summary
            .to_string()
            .contains("meshes/visual.dae: 45 vertices, 42 triangles")
    );

    // The same meshes give the same bytes; an empty folder is taken.
    let other = tempfile::tempdir().unwrap();
    let again = other.path().join("hall_model");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    write_model(&visual, &collision, &again, [10.0, 20.0, 0.0]).unwrap();
    for f in [
        "model.config",
        "model.sdf",
        "world.sdf",
        "meshes/visual.dae",
        "meshes/collision.dae",
    ] {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
    write_model(&visual, &collision, &tmp.path().join("empty"), [0.0; 3]).unwrap();
    assert!(read_model(&tmp.path().join("empty")).is_ok());
}

#[test]
fn bad_output_folders_are_refused_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mesh = floor_and_box(2, [0.0; 3]);
    let err = |dir: &Path, mesh: &Mesh| write_model(mesh, mesh, dir, [0.0; 3]).unwrap_err();

    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("mine.txt"), "keep").unwrap();
    let e = err(&full, &mesh);
    assert!(
        matches!(e, ExportError::FolderNotEmpty { .. }) && e.is_bad_input(),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("full: the folder exists and is not empty"),
        "{e}"
    );
    assert_eq!(listing(&full), ["mine.txt"]);

    let e = err(&tmp.path().join("map.pcd"), &mesh);
    assert!(
        e.to_string()
            .contains("name it without a file's extension, e.g. `map_model`"),
        "{e}"
    );
    let e = err(&tmp.path().join("my hall"), &mesh);
    assert!(e.to_string().contains("name it `my_hall`"), "{e}");
    std::fs::write(tmp.path().join("afile"), "x").unwrap();
    let e = err(&tmp.path().join("afile"), &mesh);
    assert!(e.to_string().contains("a file of that name exists"), "{e}");

    let empty = Mesh::new([0.0; 3], vec![[0.0; 3]; 3], None, vec![]).unwrap();
    let e = err(&tmp.path().join("empty_mesh"), &empty);
    assert!(
        matches!(e, ExportError::EmptyMesh { .. }) && e.is_bad_input(),
        "{e}"
    );

    // A folder under a file cannot be made.
    let e = err(&tmp.path().join("afile/model"), &mesh);
    assert!(
        matches!(e, ExportError::Write { .. }) && e.is_bad_input(),
        "{e}"
    );
    assert!(e.to_string().contains("afile/model"), "{e}");
    assert_eq!(
        listing(tmp.path()),
        ["afile", "full/mine.txt"],
        "nothing else is left"
    );
}

/// Through [`export`]: an empty map is refused, and the folder is checked before the mesh is made.
#[test]
fn the_export_checks_the_map_and_the_folder_first() {
    let tmp = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        target: Target::Gazebo,
        ..ExportOptions::default()
    };
    let e = export(
        &Cloud::with_origin([0.0; 3]),
        &tmp.path().join("m"),
        &options,
    )
    .unwrap_err();
    assert!(matches!(e, ExportError::EmptyMap { .. }), "{e}");
    std::fs::create_dir(tmp.path().join("full")).unwrap();
    std::fs::write(tmp.path().join("full/x"), "x").unwrap();
    let map = Cloud::from_positions([0.0; 3], vec![[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]);
    let e = export(&map, &tmp.path().join("full"), &options).unwrap_err();
    assert!(matches!(e, ExportError::FolderNotEmpty { .. }), "{e}");
    assert!(!tmp.path().join("m").exists());
}
