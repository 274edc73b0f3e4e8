//! The shipped sensor presets: TOML files under `presets/sensors/` in this crate, embedded at compile time so the
//! program needs no data directory. Users copy one of those files to make their own sensor.

use super::{SensorError, SensorModel};

/// Preset names, in the order a user would browse them (Livox, Velodyne, Ouster, depth camera).
pub(crate) const NAMES: &[&str] = &[
    "avia",
    "mid360",
    "mid40",
    "horizon",
    "vlp16",
    "vlp32c",
    "hdl32e",
    "hdl64e",
    "os0_64",
    "os0_64_hall",
    "os0_128",
    "os1_64",
    "os1_128",
    "os2_128",
    "d455",
];

/// The TOML text of a preset.
pub(crate) fn text(name: &str) -> Option<&'static str> {
    Some(match name {
        "avia" => include_str!("../../presets/sensors/avia.toml"),
        "mid360" => include_str!("../../presets/sensors/mid360.toml"),
        "mid40" => include_str!("../../presets/sensors/mid40.toml"),
        "horizon" => include_str!("../../presets/sensors/horizon.toml"),
        "vlp16" => include_str!("../../presets/sensors/vlp16.toml"),
        "vlp32c" => include_str!("../../presets/sensors/vlp32c.toml"),
        "hdl32e" => include_str!("../../presets/sensors/hdl32e.toml"),
        "hdl64e" => include_str!("../../presets/sensors/hdl64e.toml"),
        "os0_64" => include_str!("../../presets/sensors/os0_64.toml"),
        "os0_64_hall" => include_str!("../../presets/sensors/os0_64_hall.toml"),
        "os0_128" => include_str!("../../presets/sensors/os0_128.toml"),
        "os1_64" => include_str!("../../presets/sensors/os1_64.toml"),
        "os1_128" => include_str!("../../presets/sensors/os1_128.toml"),
        "os2_128" => include_str!("../../presets/sensors/os2_128.toml"),
        "d455" => include_str!("../../presets/sensors/d455.toml"),
        _ => return None,
    })
}

pub(crate) fn load(name: &str) -> Result<SensorModel, SensorError> {
    let Some(text) = text(name) else {
        return Err(SensorError::UnknownPreset {
            name: name.to_string(),
            known: NAMES.join(", "),
        });
    };
    SensorModel::from_toml(text)
}

/// Test helper shared by the preset tables: every TOML in `presets/<folder>/` is embedded under its file name
/// by `text`, and every name in `names` has its file: a preset added to the folder but not to the table would
/// silently not ship.
#[cfg(test)]
pub(crate) fn assert_folder_matches(
    folder: &str,
    names: &[&str],
    text: fn(&str) -> Option<&'static str>,
) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("presets")
        .join(folder);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut sorted: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
    sorted.sort();
    assert_eq!(files, sorted);
    for name in names {
        let on_disk = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
        assert_eq!(text(name), Some(on_disk.as_str()), "{name}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_and_the_names_agree() {
        assert_folder_matches("sensors", NAMES, text);
    }
}
