//! LiDAR and depth-camera models: scan patterns (beam directions with per-beam time offsets and ring/line),
//! range limits, noise, and the reflectance/dropout model. Presets ship as TOML under `maps/sensors/`.

use serde::{Deserialize, Serialize};

/// One firing of one beam within a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beam {
    /// Unit direction in the sensor frame (x forward, y left, z up).
    pub dir: [f32; 3],
    /// Firing time since the start of the frame, seconds.
    pub time_s: f32,
    /// Ring (spinning LiDAR laser index, bottom = 0) or line (Livox laser number).
    pub ring: u16,
}

/// What happens to a beam besides geometry: range limits, noise, and detection (ALGORITHMS.md section 5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Physics {
    /// Returns closer than this are dropped, metres.
    pub min_range_m: f32,
    /// Returns farther than this are dropped, metres.
    pub max_range_m: f32,
    /// Range noise, 1 sigma, metres.
    #[serde(default)]
    pub range_sigma_m: f32,
    /// Extra range noise growing with the square of the range (depth cameras: sigma_z = k * z^2), 1/metres.
    #[serde(default)]
    pub range_sigma_quadratic: f32,
    /// Angular jitter of the beam direction, 1 sigma, radians.
    #[serde(default)]
    pub angular_sigma_rad: f32,
    /// Reflectance R0 (0..1) used where the map has no intensity.
    #[serde(default = "default_reflectance")]
    pub default_reflectance: f32,
    /// Detection model of Jansen et al.: a return at range d is dropped when
    /// R0 * cos(incidence) < (reflectance_limit / reflectance_range_m) * d. `reflectance_range_m = 0` disables it.
    #[serde(default)]
    pub reflectance_limit: f32,
    #[serde(default)]
    pub reflectance_range_m: f32,
}

fn default_reflectance() -> f32 {
    0.5
}
