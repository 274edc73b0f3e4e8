//! The export module's tests: every preset and target through the writers and back, the errors it raises, and
//! saving a map with its report.

use std::path::Path;

use super::*;
use crate::io::ReadOptions;
use crate::report::{MapReport, PrepareSummary};
use crate::{Columns, Error};

/// A map with intensity and normals, at `origin`.
fn map_at(origin: [f64; 3]) -> Cloud {
    let positions: Vec<[f32; 3]> = (0..40)
        .map(|i| [(i % 8) as f32 * 0.5, (i / 8) as f32 * 0.5, (i % 3) as f32])
        .collect();
    let n = positions.len();
    let columns = Columns {
        positions,
        intensity: Some((0..n).map(|i| i as f32).collect()),
        normals: Some(vec![[0.0, 0.0, 1.0]; n]),
        ..Columns::default()
    };
    Cloud::from_columns(origin, columns).unwrap()
}

const FAR: [f64; 3] = [500_000.5, 4_000_000.25, 100.0];

fn header(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned()
}

/// Every preset writes the format it names, under its extension, and reads back with every point where it was.
#[test]
fn every_preset_writes_its_format_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let map = map_at([10.0, 20.0, 0.0]);
    for (i, preset) in PRESETS.iter().enumerate() {
        let path = match preset.is_folder() {
            true => dir.path().join(format!("p{i}")),
            false => dir.path().join(format!("p{i}.{}", preset.extension())),
        };
        assert!(preset.names(&path), "{preset:?}");
        if matches!(preset.target, Target::Gazebo | Target::Isaac) {
            mesh_export_reads_back(&map, &path, preset);
            continue;
        }
        let done = export(&map, &path, &preset.options()).unwrap();
        assert_eq!(done.shift, None, "{preset:?}: near 0, nothing moves");
        let Some(preset_format) = preset.format else {
            // A target's own writer: its file reads back through its own reader.
            if preset.target == Target::Copc {
                let summary = super::copc::read(&path).unwrap().unwrap();
                assert_eq!(summary.points, map.len() as u64, "{preset:?}");
                continue;
            }
            let (summary, _) = super::octomap::read(&path).unwrap();
            assert!(summary.occupied_leaves > 0, "{preset:?}");
            continue;
        };
        assert_eq!(Format::from_path(&path), Some(preset_format), "{preset:?}");
        let back = io::read(&path, None, &ReadOptions::default()).unwrap();
        assert_eq!(back.len(), map.len(), "{preset:?}");
        for k in [0, 17, 39] {
            let (a, b) = (back.world(k), map.world(k));
            assert!((0..3).all(|c| (a[c] - b[c]).abs() < 1e-3), "{preset:?}");
        }
        let format = back.meta.format.clone().unwrap_or_default();
        assert!(
            format.to_ascii_lowercase().contains(preset_format.name())
                || preset_format == Format::Kitti
                || preset_format == Format::Xyz,
            "{preset:?} read back as {format}"
        );
    }
    let labels: std::collections::HashSet<_> = PRESETS.iter().map(|p| p.label).collect();
    assert_eq!(labels.len(), PRESETS.len(), "each preset has its own label");
}

/// A mesh preset's export reads back through its own reader, or, while `mesh::reconstruct` cannot mesh the
/// map, fails for that reason alone and leaves nothing.
fn mesh_export_reads_back(map: &Cloud, path: &Path, preset: &Preset) {
    match export(map, path, &preset.options()) {
        Ok(done) => {
            assert_eq!(done.shift, None, "{preset:?}: near 0, nothing moves");
            let meshes = if preset.target == Target::Gazebo {
                super::gazebo::read_model(path).unwrap().meshes.len()
            } else {
                super::isaac::read_stage(path).unwrap().geometry.len() - 1
            };
            assert_eq!(meshes, 2, "{preset:?}: the visual and collision meshes");
        }
        Err(ExportError::Mesh { .. }) => assert!(!path.exists(), "{preset:?}"),
        Err(e) => panic!("{preset:?}: {e}"),
    }
}

/// MARSIM: binary PCD of x y z alone, in a local frame far from 0, and no warning of what it leaves out.
#[test]
fn marsim_writes_binary_xyz_in_a_local_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("marsim.pcd");
    let options = ExportOptions {
        target: Target::Marsim,
        ..ExportOptions::default()
    };
    let done = export(&map_at(FAR), &path, &options).unwrap();
    assert_eq!(done.shift, Some([500_000.0, 4_000_000.0, 100.0]));
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    assert!(
        done.shift_note()
            .unwrap()
            .contains("(-500000, -4000000, -100) m")
    );
    let head = header(&path);
    assert!(
        head.contains("FIELDS x y z\n") && head.contains("TYPE F F F\n"),
        "{head}"
    );
    assert!(head.contains("DATA binary\n"), "{head}");
    let back = io::read(&path, None, &ReadOptions::default()).unwrap();
    // The 10th point lies at (0.5, 0.5, 0) from the origin, which the shift left at (0.5, 0.25, 0).
    assert_eq!(back.world(9), [1.0, 0.75, 0.0]);
}

/// ROS: every attribute in float PCD, in a local frame far from 0 and in place near it; the encoding is the
/// caller's.
#[test]
fn ros_keeps_the_attributes_and_moves_only_a_far_map() {
    let dir = tempfile::tempdir().unwrap();
    let ros = ExportOptions {
        target: Target::Ros,
        encoding: Some(Encoding::Ascii),
        ..ExportOptions::default()
    };
    let path = dir.path().join("ros.pcd");
    let done = export(&map_at(FAR), &path, &ros).unwrap();
    assert_eq!(done.shift, Some([500_000.0, 4_000_000.0, 100.0]));
    let head = header(&path);
    assert!(
        head.contains("intensity") && head.contains("DATA ascii"),
        "{head}"
    );
    assert!(head.contains("TYPE F F F"), "{head}");
    let near = export(&map_at([1.0, 2.0, 3.0]), &path, &ros).unwrap();
    assert_eq!(near.shift, None);
}

/// A generic PCD of a far map keeps doubles and says so, in the library's words (no flag); a format that cannot
/// hold an attribute says which.
#[test]
fn a_generic_export_warns_of_doubles_and_losses() {
    let dir = tempfile::tempdir().unwrap();
    let pcd = dir.path().join("far.pcd");
    let done = export(&map_at(FAR), &pcd, &ExportOptions::default()).unwrap();
    assert_eq!(done.shift, None);
    assert_eq!(done.warnings, [ExportWarning::DoubleCoordinates]);
    let text = done.warnings[0].to_string();
    assert!(
        text.contains("F 8") && text.starts_with(done.warnings[0].problem()),
        "{text}"
    );
    assert!(!text.contains("--"), "{text}");
    let kitti = export(
        &map_at([0.0; 3]),
        &dir.path().join("m.bin"),
        &ExportOptions::default(),
    )
    .unwrap();
    assert!(
        matches!(&kitti.warnings[..], [ExportWarning::Loss(l)] if l.contains("normal")),
        "{:?}",
        kitti.warnings
    );
}

/// A target's reader loads PCD: another format is refused before any file is made, naming the file and what is
/// expected; a format named explicitly as PCD is written under any name.
#[test]
fn a_target_refuses_another_format() {
    let dir = tempfile::tempdir().unwrap();
    let map = map_at([0.0; 3]);
    for target in [Target::Marsim, Target::Ros] {
        let las = dir.path().join(format!("{}.las", target.name()));
        let options = ExportOptions {
            target,
            ..ExportOptions::default()
        };
        let err = export(&map, &las, &options).unwrap_err();
        assert!(matches!(err, ExportError::WrongFormat { .. }) && err.is_bad_input());
        let text = err.to_string();
        assert!(text.starts_with(&las.display().to_string()), "{text}");
        assert!(
            text.contains(target.reader()) && text.contains("must be PCD: name it .pcd"),
            "{text}"
        );
        assert!(!text.contains("--"), "{text}");
        assert!(!las.exists());
        let named = ExportOptions {
            format: Some(Format::Pcd),
            ..options
        };
        export(&map, &las, &named).unwrap();
        assert!(header(&las).contains("FIELDS x y z"));
    }
}

/// MARSIM loads binary PCD only: another encoding is refused (binary, asked or not, is written).
#[test]
fn marsim_refuses_another_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.pcd");
    let map = map_at([0.0; 3]);
    for (encoding, ok) in [
        (None, true),
        (Some(Encoding::Binary), true),
        (Some(Encoding::Ascii), false),
        (Some(Encoding::Compressed), false),
    ] {
        let options = ExportOptions {
            target: Target::Marsim,
            encoding,
            ..ExportOptions::default()
        };
        match export(&map, &path, &options) {
            Ok(_) => assert!(ok, "{encoding:?}"),
            Err(e) => {
                assert!(!ok && e.is_bad_input(), "{encoding:?}: {e}");
                let text = e.to_string();
                assert!(text.starts_with(&path.display().to_string()), "{text}");
                assert!(text.contains("must be binary PCD, not "), "{text}");
                assert!(!text.contains("--"), "{text}");
            }
        }
    }
}

/// The writer's own errors come through with the file named: a name whose format cannot be told is the user's.
#[test]
fn a_writer_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("map.unknown");
    let err = export(&map_at([0.0; 3]), &path, &ExportOptions::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            ExportError::Write {
                source: Error::UnknownFormat { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_bad_input());
    assert_eq!(err.to_string(), format!("cannot write {}", path.display()));
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("cannot tell the format"), "{cause}");
}

#[test]
fn targets_are_found_by_name() {
    for t in Target::ALL {
        assert_eq!(Target::from_name(t.name()), Some(t));
        assert_eq!(Target::from_name(&t.name().to_uppercase()), Some(t));
        assert!(!t.about().is_empty());
    }
    assert_eq!(Target::from_name("unity"), None);
    assert_eq!(Target::default(), Target::Generic);
}

/// Every extension a format lists is one `Format::from_path` reads as that format (file dialogs offer them).
#[test]
fn every_format_extension_names_its_format() {
    for f in Format::ALL {
        for ext in f.extensions() {
            assert_eq!(Format::from_name(ext), Some(f), "{ext}");
        }
        assert_eq!(Format::from_name(f.name()), Some(f));
    }
}

/// An output that is an input, by another path, is refused; another file is not.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("scan.las");
    std::fs::write(&input, b"x").unwrap();
    let again = dir.path().join(".").join("scan.las");
    let err = not_an_input(&again, &[Path::new("other.las"), &input]).unwrap_err();
    assert!(err.is_bad_input());
    assert!(
        err.to_string().ends_with(&format!(
            "is the input {}: write to another file",
            input.display()
        )),
        "{err}"
    );
    not_an_input(&dir.path().join("new.las"), &[&input]).unwrap();
    assert!(same_file(&input, &again) && !same_file(&input, &dir.path().join("new.las")));
}

/// A map is saved with its report beside it, and the report reads back as the one written.
#[test]
fn a_map_is_saved_with_its_report() {
    use crate::NoProgress;
    use crate::prepare::{Recipe, prepare};
    let dir = tempfile::tempdir().unwrap();
    let recipe = Recipe::default();
    let prepared = prepare(vec![(map_at([0.0; 3]), None)], &recipe, &NoProgress).unwrap();
    let summary = PrepareSummary {
        recipe: &recipe,
        reports: &prepared.reports,
        warnings: &prepared.warnings,
        points_in: 40,
        seconds: 0.5,
    };
    let out = dir.path().join("m.amap");
    let report_file = write_map(&prepared.map, &summary, &out).unwrap();
    assert_eq!(report_file, dir.path().join("m.report.json"));
    assert!(crate::map::amap::is_map_file(&out));
    let back = MapReport::read_beside(&out).unwrap().unwrap();
    assert_eq!(back, MapReport::new(&out, prepared.map.len(), &summary));
    assert_eq!(back.points_out, prepared.map.len());
}
