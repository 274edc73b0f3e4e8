//! The shipped sensor presets: TOML files under `maps/sensors/`, embedded at compile time so the program needs
//! no data directory. Users copy one of those files to make their own sensor.

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
        "avia" => include_str!("../../../maps/sensors/avia.toml"),
        "mid360" => include_str!("../../../maps/sensors/mid360.toml"),
        "mid40" => include_str!("../../../maps/sensors/mid40.toml"),
        "horizon" => include_str!("../../../maps/sensors/horizon.toml"),
        "vlp16" => include_str!("../../../maps/sensors/vlp16.toml"),
        "vlp32c" => include_str!("../../../maps/sensors/vlp32c.toml"),
        "hdl32e" => include_str!("../../../maps/sensors/hdl32e.toml"),
        "hdl64e" => include_str!("../../../maps/sensors/hdl64e.toml"),
        "os0_64" => include_str!("../../../maps/sensors/os0_64.toml"),
        "os0_64_hall" => include_str!("../../../maps/sensors/os0_64_hall.toml"),
        "os0_128" => include_str!("../../../maps/sensors/os0_128.toml"),
        "os1_64" => include_str!("../../../maps/sensors/os1_64.toml"),
        "os1_128" => include_str!("../../../maps/sensors/os1_128.toml"),
        "os2_128" => include_str!("../../../maps/sensors/os2_128.toml"),
        "d455" => include_str!("../../../maps/sensors/d455.toml"),
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
