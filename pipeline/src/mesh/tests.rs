//! Reconstruction, simplification and files on synthetic shapes whose surface is known.

use super::*;
use crate::cloud::Columns;
use crate::progress::NoProgress;

/// Points on the square [0, size]^2 at z = 0, every `step`, normals up, without those inside `hole` (x and y
/// ranges).
fn plane(size: f32, step: f32, hole: Option<(f32, f32)>) -> Cloud {
    let n = (size / step) as i32;
    let mut positions = Vec::new();
    for i in 0..=n {
        for j in 0..=n {
            let (x, y) = (i as f32 * step, j as f32 * step);
            if hole.is_some_and(|(a, b)| x > a && x < b && y > a && y < b) {
                continue;
            }
            positions.push([x, y, 0.0]);
        }
    }
    let normals = vec![[0.0, 0.0, 1.0]; positions.len()];
    Cloud::from_columns(
        [0.0; 3],
        Columns {
            positions,
            normals: Some(normals),
            ..Columns::default()
        },
    )
    .unwrap()
}

/// Points on the faces of the cube [0, 1]^3, every `step`, normals pointing out.
fn cube(step: f32) -> Cloud {
    let n = (1.0 / step).round() as i32;
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    for axis in 0..3 {
        for side in [0.0f32, 1.0] {
            for i in 0..=n {
                for j in 0..=n {
                    let mut p = [0.0f32; 3];
                    p[axis] = side;
                    p[(axis + 1) % 3] = i as f32 * step;
                    p[(axis + 2) % 3] = j as f32 * step;
                    let mut nv = [0.0f32; 3];
                    nv[axis] = if side > 0.5 { 1.0 } else { -1.0 };
                    positions.push(p);
                    normals.push(nv);
                }
            }
        }
    }
    Cloud::from_columns(
        [0.0; 3],
        Columns {
            positions,
            normals: Some(normals),
            ..Columns::default()
        },
    )
    .unwrap()
}

fn options(h: f64) -> MeshOptions {
    MeshOptions {
        resolution_m: Some(h),
        ..MeshOptions::default()
    }
}

fn centroid(m: &Mesh, t: &[u32; 3]) -> [f32; 3] {
    let v = t.map(|i| m.vertices()[i as usize]);
    [0, 1, 2].map(|a| (v[0][a] + v[1][a] + v[2][a]) / 3.0)
}

#[test]
fn a_plane_is_one_sheet_facing_up_and_only_where_the_points_are() {
    let mesh = reconstruct(&plane(2.0, 0.05, None), &options(0.05), &NoProgress).unwrap();
    assert!(
        mesh.triangles().len() > 2000,
        "{} triangles",
        mesh.triangles().len()
    );
    for v in mesh.vertices() {
        assert!(v[2].abs() < 1e-3, "vertex off the plane: {v:?}");
        assert!(
            v[0] > -0.06 && v[0] < 2.06 && v[1] > -0.06 && v[1] < 2.06,
            "{v:?} beyond the points"
        );
    }
    for n in mesh.face_normals() {
        assert!(n[2] > 0.99, "a triangle faces {n:?}");
    }
    for n in mesh.normals().unwrap() {
        assert!(n[2] > 0.99, "a vertex normal is {n:?}");
    }
    // The square's outline is open: its border is about 4 x 2 m of edges of one voxel.
    assert!(mesh.border_edges() >= 150, "{}", mesh.border_edges());
}

#[test]
fn a_cube_seen_from_outside_has_every_triangle_facing_out() {
    let mesh = reconstruct(&cube(0.05), &options(0.05), &NoProgress).unwrap();
    assert!(mesh.triangles().len() > 4000, "{}", mesh.triangles().len());
    for (t, n) in mesh.triangles().iter().zip(mesh.face_normals()) {
        let c = centroid(&mesh, t);
        let out = [c[0] - 0.5, c[1] - 0.5, c[2] - 0.5];
        assert!(sdf::dot(out, n) > 0.0, "triangle at {c:?} faces {n:?}");
    }
    // Closed: every edge has two triangles.
    assert_eq!(mesh.border_edges(), 0);
}

#[test]
fn a_hole_where_no_point_was_stays_open() {
    let hole = (0.8, 1.4);
    let mesh = reconstruct(&plane(2.0, 0.05, Some(hole)), &options(0.05), &NoProgress).unwrap();
    let whole = reconstruct(&plane(2.0, 0.05, None), &options(0.05), &NoProgress).unwrap();
    for t in mesh.triangles() {
        let c = centroid(&mesh, t);
        let inside = |v: f32| v > hole.0 + 0.1 && v < hole.1 - 0.1;
        assert!(
            !(inside(c[0]) && inside(c[1])),
            "a triangle at {c:?} covers the hole"
        );
    }
    // The hole's outline (4 x 0.5 m) adds open edges.
    assert!(
        mesh.border_edges() >= whole.border_edges() + 30,
        "{} {}",
        mesh.border_edges(),
        whole.border_edges()
    );
}

#[test]
fn the_same_map_gives_the_same_bytes_whatever_the_threads() {
    let map = cube(0.04);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| reconstruct(&map, &options(0.05), &NoProgress).unwrap())
    };
    let (one, two) = (run(1), run(3));
    assert_eq!(one, two);
    let dir = tempfile::tempdir().unwrap();
    for ext in ["ply", "obj", "glb"] {
        let (a, b) = (
            dir.path().join(format!("a.{ext}")),
            dir.path().join(format!("b.{ext}")),
        );
        io::write(&one, &a).unwrap();
        io::write(&two, &b).unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{ext}"
        );
    }
}

#[test]
fn bad_maps_and_resolutions_are_refused_with_the_reason() {
    let empty = Cloud::default();
    let e = reconstruct(&empty, &options(0.1), &NoProgress).unwrap_err();
    assert!(e.to_string().contains("no points"), "{e}");
    let bare = Cloud::from_positions([0.0; 3], vec![[0.0; 3], [1.0, 0.0, 0.0]]);
    let e = reconstruct(&bare, &options(0.1), &NoProgress).unwrap_err();
    assert!(e.to_string().contains("no normals"), "{e}");
    for r in [0.0, 0.001, 11.0, f64::NAN, -1.0] {
        let e = reconstruct(&plane(1.0, 0.1, None), &options(r), &NoProgress).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{r}: {e}");
    }
    let flagged = crate::progress::CancelFlag::default();
    flagged.cancel();
    struct Stop<'a>(&'a crate::progress::CancelFlag);
    impl Progress for Stop<'_> {
        fn is_cancelled(&self) -> bool {
            self.0.is_set()
        }
    }
    let e = reconstruct(&plane(1.0, 0.05, None), &options(0.05), &Stop(&flagged)).unwrap_err();
    assert!(matches!(e, MeshError::Cancelled));
}

#[test]
fn the_default_resolution_is_the_points_spacing() {
    let map = plane(1.0, 0.05, None);
    let fine = reconstruct(&map, &MeshOptions::default(), &NoProgress).unwrap();
    let given = reconstruct(&map, &options(0.05), &NoProgress).unwrap();
    assert_eq!(fine.triangles().len(), given.triangles().len());
}

#[test]
fn simplify_meets_the_budget_and_keeps_the_hole() {
    let mesh = reconstruct(
        &plane(2.0, 0.05, Some((0.8, 1.4))),
        &options(0.05),
        &NoProgress,
    )
    .unwrap();
    let small = simplify(&mesh, 500);
    assert!(
        small.triangles().len() <= 500 && !small.is_empty(),
        "{}",
        small.triangles().len()
    );
    assert!(
        small
            .normals()
            .is_some_and(|n| n.len() == small.vertices().len())
    );
    for t in small.triangles() {
        let c = centroid(&small, t);
        let inside = |v: f32| v > 0.9 && v < 1.3;
        assert!(
            !(inside(c[0]) && inside(c[1])),
            "the hole was closed at {c:?}"
        );
    }
    assert!(small.border_edges() > 0);
    // Through the options, the same.
    let budget = MeshOptions {
        max_triangles: Some(500),
        ..options(0.05)
    };
    let made = reconstruct(&plane(2.0, 0.05, Some((0.8, 1.4))), &budget, &NoProgress).unwrap();
    assert_eq!(made, small);
}

#[test]
fn files_read_back_as_written() {
    let mesh = reconstruct(&cube(0.1), &options(0.1), &NoProgress).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for ext in ["ply", "obj", "glb"] {
        let path = dir.path().join(format!("m.{ext}"));
        io::write(&mesh, &path).unwrap();
        assert!(io::is_mesh_file(&path), "{ext}");
        let back = io::read(&path).unwrap();
        assert_eq!(back, mesh, "{ext}");
    }
}

#[test]
fn a_mesh_far_from_zero_keeps_its_place_in_every_file() {
    let mut map = plane(1.0, 0.05, None);
    map.origin = [500_000.0, 4_000_000.0, 100.0];
    let mesh = reconstruct(&map, &options(0.05), &NoProgress).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for ext in ["ply", "obj", "glb"] {
        let path = dir.path().join(format!("m.{ext}"));
        io::write(&mesh, &path).unwrap();
        let back = io::read(&path).unwrap();
        let ((a, b), (c, d)) = (mesh.bounds().unwrap(), back.bounds().unwrap());
        for i in 0..3 {
            assert!(
                (a[i] - c[i]).abs() < 1e-3 && (b[i] - d[i]).abs() < 1e-3,
                "{ext}: {a:?} {c:?}"
            );
        }
    }
}

#[test]
fn truncated_and_foreign_files_are_refused() {
    let mesh = reconstruct(&plane(1.0, 0.1, None), &options(0.1), &NoProgress).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for ext in ["ply", "glb", "obj"] {
        let path = dir.path().join(format!("m.{ext}"));
        io::write(&mesh, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
        if ext != "obj" {
            let e = io::read(&path).unwrap_err();
            assert!(e.is_bad_input(), "{ext}: {e}");
        }
    }
    let path = dir.path().join("m.stl");
    assert!(io::write(&mesh, &path).is_err());
    assert!(!path.exists());
}
