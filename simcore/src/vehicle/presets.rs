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

    /// Every TOML in `presets/vehicles/` is embedded under its file name, and every name has its file.
    #[test]
    fn the_folder_and_the_names_agree() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/vehicles");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut names: Vec<String> = NAMES.iter().map(|n| (*n).to_string()).collect();
        names.sort();
        assert_eq!(files, names);
        for name in NAMES {
            let on_disk = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(text(name), Some(on_disk.as_str()), "{name}");
        }
    }
}
