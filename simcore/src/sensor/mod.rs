//! LiDAR and depth-camera models: scan patterns (beam directions with per-beam time offsets and ring/line),
//! range limits, noise, and detection (the LiDAR equation through the datasheet's ranges at 10% and 80%
//! reflectivity). Presets ship as TOML under `presets/sensors/`.
//!
//! A [`SensorModel`] is a name, a frame rate, [`Physics`] and a [`Pattern`]; [`SensorModel::beams`] lists one
//! frame's [`Beam`]s in firing order. Frames: x forward, y left, z up; azimuth counter-clockwise from +x towards
//! +y; elevation up from the xy plane.

mod error;
mod livox;
mod ouster;
mod pinhole;
pub(crate) mod presets;
mod spinning;

use serde::{Deserialize, Serialize};

pub use error::SensorError;
pub use livox::{Rosette, Sweep};
pub use pinhole::Pinhole;
pub use spinning::{FiringTiming, RingZero, Spinning};

/// One firing of one beam within a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beam {
    /// Unit direction in the sensor frame (x forward, y left, z up).
    pub dir: [f32; 3],
    /// Firing time since the start of the frame, seconds.
    pub time_s: f32,
    /// Ring (spinning LiDAR laser, numbered from the end its `ring_zero` says) or line (Livox laser number).
    pub ring: u16,
}

impl Beam {
    /// A beam at time 0, ring 0, toward `p` (sensor frame), or `None` when `p` is within `min_range_m` of the
    /// origin: to render along the directions of a real scan's own returns.
    pub fn toward(p: [f32; 3], min_range_m: f32) -> Option<Beam> {
        let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        (n > min_range_m).then(|| Beam {
            dir: p.map(|c| c / n),
            time_s: 0.0,
            ring: 0,
        })
    }
}

/// What happens to a beam besides geometry: range limits, noise, and detection (docs/algorithms.md, section 21).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Physics {
    /// Returns closer than this are dropped, metres (depth along the optical axis for a depth camera).
    pub min_range_m: f32,
    /// Returns farther than this are dropped, metres (depth along the optical axis for a depth camera).
    pub max_range_m: f32,
    /// Range noise, 1 sigma, metres.
    #[serde(default)]
    pub range_sigma_m: f32,
    /// Extra range noise growing with the square of the range, 1/metres. For a depth camera, the stereo model
    /// sigma_z = k * z^2 in its depth z along the optical axis (with `range_sigma_m` as the constant term).
    #[serde(default)]
    pub range_sigma_quadratic: f32,
    /// Angular jitter of the beam direction, 1 sigma, radians.
    #[serde(default)]
    pub angular_sigma_rad: f32,
    /// Reflectance R0 (0..1) used where the map has no intensity.
    #[serde(default = "default_reflectance")]
    pub default_reflectance: f32,
    /// Range out to which the sensor detects a 10% Lambertian target, metres (datasheet); 0 when not published.
    /// See [`Physics::detection_range_m`].
    #[serde(default)]
    pub range_10pct_m: f32,
    /// Range out to which the sensor detects an 80% Lambertian target, metres (datasheet); 0 when not
    /// published.
    #[serde(default)]
    pub range_80pct_m: f32,
}

impl Physics {
    /// How far a surface of effective reflectivity `r` (reflectance R0 times cos(incidence), Jansen et al.) is
    /// detected, metres, or `None` when the model has no published range (then only `max_range_m` limits).
    ///
    /// The LiDAR equation for an extended Lambertian target gives a received power proportional to r / d^2, so
    /// the detection range grows as sqrt(r). With both datasheet ranges the exponent is fitted through them,
    /// `d(r) = d10 * (r / 0.1)^a` with `a = ln(d80 / d10) / ln 8` (a = 0.5 is the pure equation; datasheets
    /// usually give a little less, the detector saturating or the range limited by ambiguity); with one of
    /// them, a = 0.5 through that one.
    pub fn detection_range_m(&self, r: f32) -> Option<f32> {
        let r = r.max(0.0);
        let (d10, d80) = (self.range_10pct_m, self.range_80pct_m);
        match (d10 > 0.0, d80 > 0.0) {
            (true, true) => {
                let a = (d80 / d10).ln() / 8f32.ln();
                Some(d10 * (r / 0.1).powf(a))
            }
            (true, false) => Some(d10 * (r / 0.1).sqrt()),
            (false, true) => Some(d80 * (r / 0.8).sqrt()),
            (false, false) => None,
        }
    }

    /// The farthest a surface of reflectance at most `r0_max` is detected, metres, or `None` when nothing
    /// bounds it (no published range, a datasheet whose range falls with the reflectivity, an infinite
    /// reflectance): the detection range of the brightest such surface seen head-on (the reflectivity is the
    /// reflectance times cos(incidence) <= 1, and the range grows with it), a little beyond so that rounding
    /// never makes [`Physics::detects`] say yes past it.
    pub fn detection_limit_m(&self, r0_max: f32) -> Option<f32> {
        let (d10, d80) = (self.range_10pct_m, self.range_80pct_m);
        // NaN first: `detection_range_m` clamps it to 0.
        if r0_max.is_nan() || (d10 > 0.0 && d80 > 0.0 && d80 < d10) {
            return None;
        }
        let limit = self.detection_range_m(r0_max)?;
        // `detects` says yes within d10 for 10% or more without the power function.
        let limit = if d10 > 0.0 && r0_max >= 0.1 {
            limit.max(d10)
        } else {
            limit
        };
        limit.is_finite().then_some(limit * (1.0 + 1e-4))
    }

    /// Whether a surface of effective reflectivity `r` at range `d` metres is detected: within
    /// [`Physics::detection_range_m`] (always, when the model has none). The same answer as comparing with
    /// that range, without its power function for a surface of 10% or more within the range at 10%, where the
    /// range cannot be shorter (it grows with `r`): most returns of a frame.
    #[inline]
    pub fn detects(&self, r: f32, d: f64) -> bool {
        let (d10, d80) = (self.range_10pct_m, self.range_80pct_m);
        // With one published range the exponent is 1/2; with both, it is not negative when d80 >= d10.
        let grows = d10 > 0.0 && (d80 >= d10 || d80 <= 0.0 || d80.is_nan());
        if grows && r >= 0.1 && d <= f64::from(d10) {
            return true;
        }
        self.detection_range_m(r)
            .is_none_or(|limit| d <= f64::from(limit))
    }
}

fn default_reflectance() -> f32 {
    0.5
}

/// A sensor: its frame rate, what happens to each beam ([`Physics`]) and where the beams go ([`Pattern`]).
/// Loaded from TOML ([`SensorModel::from_toml`]); the shipped presets live in `presets/sensors/*.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SensorModel {
    /// Short identifier (the preset's file name for shipped presets).
    pub name: String,
    /// What the sensor is, for people.
    #[serde(default)]
    pub description: String,
    /// Where the values came from, tagged C, D, S or U (docs/algorithms.md, section 12).
    #[serde(default)]
    pub source: String,
    /// Frames per second. A frame is one revolution (spinning), one driver integration window (Livox) or one
    /// image (depth camera).
    pub rate_hz: f64,
    /// Whose ROS driver's point fields a recorded flight's clouds of this sensor carry, so that LiDAR odometry
    /// set up for the real unit reads them as they are (absent: `ouster`).
    #[serde(default)]
    pub point_fields: PointFields,
    /// Range limits, noise and detection.
    pub physics: Physics,
    /// Beam directions and timing.
    pub pattern: Pattern,
}

/// The point layout of a vendor's ROS 2 driver, which the `sensor_msgs/PointCloud2` of a recorded flight
/// follows. Packages read per-point time and ring by their names and types (FAST-LIO's and LIO-SAM's
/// `lidar_type` or `sensor`), and those differ between vendors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointFields {
    /// ouster-ros: x y z intensity (float32), `t` (uint32, ns since the stamp), ring (uint16).
    #[default]
    Ouster,
    /// velodyne_pointcloud's XYZIRT: x y z intensity (float32), ring (uint16), `time` (float32, seconds since the
    /// stamp).
    Velodyne,
    /// livox_ros_driver2's PointXYZRTLT: x y z intensity (float32), tag and line (uint8), `timestamp` (float64,
    /// ns on the clock of the stamps, not since it).
    Livox,
}

/// How a sensor's beams are laid out and timed. In TOML, the `[pattern]` table's `kind` picks the variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    /// Spinning LiDAR (Velodyne, Ouster).
    Spinning(Spinning),
    /// Livox prism rosette (Mid-40, Horizon, Avia).
    Rosette(Rosette),
    /// Approximate Livox Mid-360 pattern.
    Sweep(Sweep),
    /// Depth camera.
    Pinhole(Pinhole),
}

/// Angular extent of a sensor's beams in the sensor frame, radians, for culling. Azimuth runs from -pi to pi
/// (full circle for spinning sensors). Bounds hold the beam directions; a renderer should pad them by the beam
/// origin offsets ([`SensorModel::beam_origins_m`]) when culling very close geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fov {
    /// Smallest azimuth, counter-clockwise from sensor +x toward +y (`atan2(y, x)`), radians.
    pub azimuth_min_rad: f32,
    /// Largest azimuth, radians.
    pub azimuth_max_rad: f32,
    /// Lowest elevation above the sensor's xy plane, radians (negative below it).
    pub elevation_min_rad: f32,
    /// Highest elevation, radians.
    pub elevation_max_rad: f32,
}

impl Fov {
    /// Whether the azimuth range is the full circle.
    pub fn is_full_circle(&self) -> bool {
        self.azimuth_max_rad - self.azimuth_min_rad >= std::f32::consts::TAU - 1e-6
    }

    /// Whether a direction (need not be unit length) lies within the bounds, with `margin_rad` of slack.
    pub fn contains(&self, dir: [f32; 3], margin_rad: f32) -> bool {
        let [x, y, z] = dir;
        let elevation = z.atan2(x.hypot(y));
        if elevation < self.elevation_min_rad - margin_rad
            || elevation > self.elevation_max_rad + margin_rad
        {
            return false;
        }
        if self.is_full_circle() {
            return true;
        }
        let azimuth = y.atan2(x);
        azimuth >= self.azimuth_min_rad - margin_rad && azimuth <= self.azimuth_max_rad + margin_rad
    }
}

impl SensorModel {
    /// Appends frame `frame_index`'s beams to `out` (cleared first), in firing order: times never decrease.
    /// Spinning sensors and depth cameras repeat every frame; Livox patterns run on, so each frame differs. An
    /// invalid model (see [`SensorModel::validate`]) yields no beams.
    pub fn beams(&self, frame_index: u64, out: &mut Vec<Beam>) {
        out.clear();
        if self.validate().is_err() {
            return;
        }
        out.reserve(self.beams_per_frame());
        match &self.pattern {
            Pattern::Spinning(p) => p.generate(self.rate_hz, out),
            Pattern::Rosette(p) => p.generate(frame_index, self.rate_hz, out),
            Pattern::Sweep(p) => p.generate(frame_index, self.rate_hz, out),
            Pattern::Pinhole(p) => p.generate(out),
        }
    }

    /// Beams in every frame: lasers x columns (spinning), whole points within the frame period (Livox), width x
    /// height (depth camera).
    pub fn beams_per_frame(&self) -> usize {
        match &self.pattern {
            Pattern::Spinning(p) => p.beams_per_frame(),
            Pattern::Rosette(p) => livox::points_per_frame(p.points_per_second, self.rate_hz),
            Pattern::Sweep(p) => livox::points_per_frame(p.points_per_second, self.rate_hz),
            Pattern::Pinhole(p) => p.beams_per_frame(),
        }
    }

    /// Seconds per frame, `1 / rate_hz`.
    pub fn frame_period_s(&self) -> f64 {
        1.0 / self.rate_hz
    }

    /// Where the beams can point, for culling.
    pub fn fov(&self) -> Fov {
        match &self.pattern {
            Pattern::Spinning(p) => p.fov(),
            Pattern::Rosette(p) => p.fov(),
            Pattern::Sweep(p) => p.fov(),
            Pattern::Pinhole(p) => p.fov(),
        }
    }

    /// Typical angle between neighbouring beams of a frame, radians, for sizing a renderer's angular image:
    /// the finer of the azimuth step and the median ring gap (spinning), the square root of the solid angle per
    /// point (Livox), the central pixel's angle (depth camera).
    pub fn angular_resolution_rad(&self) -> f32 {
        match &self.pattern {
            Pattern::Spinning(p) => p.angular_resolution_rad(),
            Pattern::Rosette(p) => p.angular_resolution_rad(self.rate_hz),
            Pattern::Sweep(p) => p.angular_resolution_rad(self.rate_hz),
            Pattern::Pinhole(p) => p.angular_resolution_rad(),
        }
    }

    /// Appends to `out` (cleared first) where each beam of `beams` starts in the sensor frame, metres: the
    /// origin for Livox and depth cameras; for spinning sensors the lidar origin (`lidar_origin_z_mm` up) plus
    /// Ouster's beam-origin offset along the beam's column azimuth. A return at range `r` along a beam lies at
    /// `origin + r * dir`.
    pub fn beam_origins_m(&self, beams: &[Beam], out: &mut Vec<[f32; 3]>) {
        out.clear();
        match &self.pattern {
            Pattern::Spinning(p) => p.beam_origins_m(beams, out),
            _ => out.extend(beams.iter().map(|_| [0.0; 3])),
        }
    }

    /// A shipped preset by name (see [`SensorModel::preset_names`]).
    pub fn preset(name: &str) -> Result<SensorModel, SensorError> {
        presets::load(name)
    }

    /// Names of the shipped presets.
    pub fn preset_names() -> &'static [&'static str] {
        presets::NAMES
    }

    /// Parses and validates a model. Errors name the field (`pattern.columns`) and the line.
    pub fn from_toml(text: &str) -> Result<SensorModel, SensorError> {
        let model: SensorModel =
            toml::from_str(text).map_err(|e| error::from_toml_error(text, &e))?;
        model.validate()?;
        Ok(model)
    }

    /// A sensor file's model: a sensor TOML ([`SensorModel::from_toml`]) or an Ouster unit's metadata JSON
    /// ([`SensorModel::from_ouster_metadata`]), told apart by the first character (a TOML file never starts
    /// with a brace, a JSON object always does).
    pub fn from_text(text: &str) -> Result<SensorModel, SensorError> {
        if text.trim_start().starts_with('{') {
            SensorModel::from_ouster_metadata(text)
        } else {
            SensorModel::from_toml(text)
        }
    }

    /// A model of one Ouster unit from its metadata JSON (what the Ouster SDK and `ouster-ros` save with every
    /// recording): its own beam table, beam-origin offset and lidar mode, its points in Ouster's sensor frame,
    /// and the physics of its product line's preset. A generic table is nominal, and a real unit's rings lie up
    /// to 0.9 deg off it (docs/accuracy.md, section 4). Errors name the key at fault.
    pub fn from_ouster_metadata(text: &str) -> Result<SensorModel, SensorError> {
        ouster::from_metadata(text)
    }

    /// The model as TOML that [`SensorModel::from_toml`] reads back to an equal model (without the comments of
    /// the preset files).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self)
            .unwrap_or_else(|e| format!("# sensor model could not be written: {e}\n"))
    }

    /// Checks every value's range and consistency; the error names the field.
    pub fn validate(&self) -> Result<(), SensorError> {
        if self.name.trim().is_empty() {
            return Err(SensorError::invalid("name", "must not be empty"));
        }
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0 && self.rate_hz <= 10_000.0) {
            return Err(SensorError::invalid(
                "rate_hz",
                format!(
                    "must be above 0 and at most 10000 frames per second, got {}",
                    self.rate_hz
                ),
            ));
        }
        self.validate_physics()?;
        match &self.pattern {
            Pattern::Spinning(p) => p.validate(self.rate_hz),
            Pattern::Rosette(p) => p.validate(self.rate_hz),
            Pattern::Sweep(p) => p.validate(self.rate_hz),
            Pattern::Pinhole(p) => p.validate(),
        }
    }

    fn validate_physics(&self) -> Result<(), SensorError> {
        let p = &self.physics;
        check_range("physics.min_range_m", p.min_range_m, 0.0, f32::MAX)?;
        check_range("physics.max_range_m", p.max_range_m, 0.0, f32::MAX)?;
        if p.max_range_m <= p.min_range_m {
            return Err(SensorError::invalid(
                "physics.max_range_m",
                format!(
                    "must be greater than min_range_m ({}), got {}",
                    p.min_range_m, p.max_range_m
                ),
            ));
        }
        // Noise of a metre or more (or 1 m at 1 m for the quadratic term) is no sensor's: a unit slip.
        check_range("physics.range_sigma_m", p.range_sigma_m, 0.0, 1.0)?;
        check_range(
            "physics.range_sigma_quadratic",
            p.range_sigma_quadratic,
            0.0,
            1.0,
        )?;
        check_range("physics.angular_sigma_rad", p.angular_sigma_rad, 0.0, 1.0)?;
        check_range(
            "physics.default_reflectance",
            p.default_reflectance,
            0.0,
            1.0,
        )?;
        check_range("physics.range_10pct_m", p.range_10pct_m, 0.0, f32::MAX)?;
        check_range("physics.range_80pct_m", p.range_80pct_m, 0.0, f32::MAX)?;
        if p.range_10pct_m > 0.0 && p.range_80pct_m > 0.0 && p.range_80pct_m <= p.range_10pct_m {
            return Err(SensorError::invalid(
                "physics.range_80pct_m",
                format!(
                    "must be greater than range_10pct_m ({}): a brighter target is seen farther, got {}",
                    p.range_10pct_m, p.range_80pct_m
                ),
            ));
        }
        Ok(())
    }
}

/// The most beams one frame of any pattern may have, so that a typo in a sensor file cannot make a frame
/// allocate gigabytes (the largest preset, the OS1-128 at 2048 columns, has 262,144).
pub(crate) const MAX_BEAMS_PER_FRAME: usize = 64 * 1024 * 1024;

/// A finite value within `[lo, hi]`, else an error naming `field`.
pub(crate) fn check_range(field: &str, value: f32, lo: f32, hi: f32) -> Result<(), SensorError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else if hi == f32::MAX {
        Err(SensorError::invalid(
            field,
            format!("must be a finite number of at least {lo}, got {value}"),
        ))
    } else {
        Err(SensorError::invalid(
            field,
            format!("must be between {lo} and {hi}, got {value}"),
        ))
    }
}

/// A finite value, else an error naming `field`.
pub(crate) fn check_finite(field: &str, value: f32) -> Result<(), SensorError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(SensorError::invalid(
            field,
            format!("must be a finite number, got {value}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Datasheet ranges at 10% and 80% (0: not published): both, one of them, none, and a datasheet whose
    /// 80% range is the shorter; each as the physics of a preset otherwise.
    fn datasheets() -> impl Iterator<Item = (f32, f32, Physics)> {
        let base = SensorModel::preset("os1_128").unwrap().physics;
        [
            (190.0, 450.0),
            (40.0, 120.0),
            (35.0, 75.0),
            (60.0, 0.0),
            (0.0, 90.0),
            (0.0, 0.0),
            (80.0, 50.0),
        ]
        .into_iter()
        .map(move |(d10, d80)| {
            let ph = Physics {
                range_10pct_m: d10,
                range_80pct_m: d80,
                ..base.clone()
            };
            (d10, d80, ph)
        })
    }

    #[test]
    fn detects_agrees_with_the_detection_range() {
        for (d10, d80, ph) in datasheets() {
            for i in 0..=120 {
                let r = i as f32 / 100.0;
                for j in 0..=500 {
                    let d = j as f64;
                    let expected = ph
                        .detection_range_m(r)
                        .is_none_or(|limit| d <= f64::from(limit));
                    assert_eq!(
                        ph.detects(r, d),
                        expected,
                        "d10 {d10} d80 {d80} r {r} d {d}"
                    );
                }
            }
            assert_eq!(
                ph.detects(f32::NAN, 1.0),
                ph.detection_range_m(f32::NAN).is_none_or(|l| 1.0 <= l)
            );
        }
    }

    /// No surface of reflectance up to r0_max, at any incidence, is detected beyond `detection_limit_m`
    /// (the beam renderer marches no farther); where it gives none, some such surface is detected farther
    /// than any finite limit could allow, or the model has no range at all.
    #[test]
    fn nothing_is_detected_beyond_the_detection_limit() {
        for (d10, d80, ph) in datasheets() {
            for r0_max in [0.05f32, 0.1, 0.3, 0.5, 0.8, 1.0, 2.5] {
                let Some(limit) = ph.detection_limit_m(r0_max) else {
                    assert!(
                        (d10 <= 0.0 && d80 <= 0.0) || d80 < d10,
                        "d10 {d10} d80 {d80} r0 {r0_max}"
                    );
                    continue;
                };
                assert!(limit < 1.01 * ph.detection_range_m(r0_max).unwrap().max(d10));
                for i in 0..=1000 {
                    // Reflectivities up to r0_max, the last one exactly, and ranges just past the limit.
                    let r = r0_max * i as f32 / 1000.0;
                    for d in [
                        limit as f64 + 1e-6,
                        limit as f64 * 1.001,
                        2.0 * limit as f64,
                    ] {
                        assert!(
                            !ph.detects(r, d),
                            "d10 {d10} d80 {d80} r0 {r0_max} r {r} d {d}"
                        );
                    }
                }
            }
            assert_eq!(ph.detection_limit_m(f32::NAN), None);
            assert_eq!(ph.detection_limit_m(f32::INFINITY), None);
        }
    }

    #[test]
    fn fov_contains_checks_both_axes() {
        let fov = Fov {
            azimuth_min_rad: -0.5,
            azimuth_max_rad: 0.5,
            elevation_min_rad: -0.1,
            elevation_max_rad: 0.2,
        };
        assert!(!fov.is_full_circle());
        assert!(fov.contains([1.0, 0.0, 0.0], 0.0));
        assert!(!fov.contains([-1.0, 0.0, 0.0], 0.0));
        assert!(!fov.contains([1.0, 0.0, 0.5], 0.0));
        assert!(fov.contains([1.0, 0.0, -0.1], 0.01));
        let round = Fov {
            azimuth_min_rad: -std::f32::consts::PI,
            azimuth_max_rad: std::f32::consts::PI,
            ..fov
        };
        assert!(round.is_full_circle() && round.contains([-1.0, 0.0, 0.0], 0.0));
    }

    #[test]
    fn check_range_rejects_nan_and_outside() {
        assert!(check_range("f", 0.5, 0.0, 1.0).is_ok());
        assert!(check_range("f", f32::NAN, 0.0, 1.0).is_err());
        assert_eq!(
            check_range("f", 2.0, 0.0, 1.0),
            Err(SensorError::invalid("f", "must be between 0 and 1, got 2"))
        );
    }
}
