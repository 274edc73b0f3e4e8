//! The shipped vehicle presets: TOML files under `presets/vehicles/`, embedded at compile time like the sensor
//! presets, so the program needs no data directory.

/// Preset names; the first is the default.
pub(crate) const NAMES: &[&str] = &["marsim_quad", "quad250"];

/// The TOML text of a preset.
pub(crate) fn text(name: &str) -> Option<&'static str> {
    Some(match name {
        "marsim_quad" => include_str!("../../presets/vehicles/marsim_quad.toml"),
        "quad250" => include_str!("../../presets/vehicles/quad250.toml"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_and_the_names_agree() {
        crate::sensor::presets::assert_folder_matches("vehicles", NAMES, text);
    }
}
