//! Depth cameras as pinhole cameras: one beam per pixel through the pixel centre, all at time 0 (global shutter).

use serde::{Deserialize, Serialize};

use super::spinning::unit;
use super::{Beam, Fov, SensorError, check_range};

/// A pinhole depth camera looking along +x. Pixel `(u, v)` (column `u` from the left, row `v` from the top) has
/// the unit ray through its centre; `Beam::ring` is the row. A depth camera measures z-depth (range times the
/// ray's cosine to the optical axis): the renderer applies its noise and its range limits to that depth, and
/// `Frame::depth_image` gives it as the camera's image.
///
/// Noise: `sigma_z = z^2 * s / (f_px * B)` with `s` the subpixel disparity RMS and `B` the baseline goes into
/// `physics.range_sigma_quadratic = s / (f_px * B)` as it is; that RMS is already a standard deviation and must not
/// be squared again. [`Pinhole::depth_sigma_quadratic`] computes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinhole {
    /// Image width, pixels.
    pub width: u32,
    /// Image height, pixels (at most 65536: rows are rings).
    pub height: u32,
    /// Horizontal field of view, degrees, edge to edge.
    pub hfov_deg: f32,
    /// Vertical field of view, degrees, edge to edge.
    pub vfov_deg: f32,
}

const MAX_PIXELS: u64 = super::MAX_BEAMS_PER_FRAME as u64;

impl Pinhole {
    /// Focal lengths `(f_x, f_y)` in pixels: `0.5 * width / tan(hfov / 2)` and likewise vertically.
    pub fn focal_px(&self) -> (f64, f64) {
        let fx = 0.5 * f64::from(self.width) / (f64::from(self.hfov_deg).to_radians() / 2.0).tan();
        let fy = 0.5 * f64::from(self.height) / (f64::from(self.vfov_deg).to_radians() / 2.0).tan();
        (fx, fy)
    }

    /// The stereo depth-noise coefficient `s / (f_x * B)`, 1/metres, for `physics.range_sigma_quadratic`, given
    /// the subpixel disparity RMS `s` (pixels, ~0.08 for RealSense) and the baseline `B` (metres).
    pub fn depth_sigma_quadratic(&self, subpixel_rms_px: f64, baseline_m: f64) -> f64 {
        subpixel_rms_px / (self.focal_px().0 * baseline_m)
    }

    pub(crate) fn validate(&self) -> Result<(), SensorError> {
        if self.width == 0 {
            return Err(SensorError::invalid(
                "pattern.width",
                "must be at least 1, got 0",
            ));
        }
        if self.height == 0 || self.height > u32::from(u16::MAX) + 1 {
            return Err(SensorError::invalid(
                "pattern.height",
                format!("must be 1 to 65536, got {}", self.height),
            ));
        }
        let pixels = u64::from(self.width) * u64::from(self.height);
        if pixels > MAX_PIXELS {
            return Err(SensorError::invalid(
                "pattern.width",
                format!("width x height = {pixels} pixels, more than the {MAX_PIXELS} allowed"),
            ));
        }
        check_range("pattern.hfov_deg", self.hfov_deg, 0.1, 179.0)?;
        check_range("pattern.vfov_deg", self.vfov_deg, 0.1, 179.0)
    }

    pub(crate) fn beams_per_frame(&self) -> usize {
        (self.width as usize).saturating_mul(self.height as usize)
    }

    pub(crate) fn generate(&self, out: &mut Vec<Beam>) {
        let (fx, fy) = self.focal_px();
        let (cx, cy) = (0.5 * f64::from(self.width), 0.5 * f64::from(self.height));
        for v in 0..self.height {
            let down = (f64::from(v) + 0.5 - cy) / fy;
            for u in 0..self.width {
                let right = (f64::from(u) + 0.5 - cx) / fx;
                // Image right is -y and image down is -z in the sensor frame.
                out.push(Beam {
                    dir: unit([1.0, -right, -down]),
                    time_s: 0.0,
                    ring: v as u16,
                });
            }
        }
    }

    pub(crate) fn fov(&self) -> Fov {
        let half_h = self.hfov_deg.to_radians() / 2.0;
        let half_v = self.vfov_deg.to_radians() / 2.0;
        Fov {
            azimuth_min_rad: -half_h,
            azimuth_max_rad: half_h,
            elevation_min_rad: -half_v,
            elevation_max_rad: half_v,
        }
    }

    /// Angle subtended by the central pixel (the finer axis).
    pub(crate) fn angular_resolution_rad(&self) -> f32 {
        let (fx, fy) = self.focal_px();
        (1.0 / fx.max(fy)).atan() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn focal_length_from_the_field_of_view() {
        let p = Pinhole {
            width: 200,
            height: 100,
            hfov_deg: 90.0,
            vfov_deg: 90.0,
        };
        let (fx, fy) = p.focal_px();
        assert!((fx - 100.0).abs() < 1e-9 && (fy - 50.0).abs() < 1e-9);
        // s / (f B): 0.1 px / (100 px * 0.05 m) = 0.02 per metre.
        assert!((p.depth_sigma_quadratic(0.1, 0.05) - 0.02).abs() < 1e-12);
    }

    #[test]
    fn rows_must_fit_a_ring() {
        let tall = Pinhole {
            width: 1,
            height: 70_000,
            hfov_deg: 10.0,
            vfov_deg: 10.0,
        };
        assert!(
            matches!(tall.validate(), Err(SensorError::Invalid { field, .. }) if field == "pattern.height")
        );
    }
}
