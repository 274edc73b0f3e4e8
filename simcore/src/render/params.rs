//! The renderer's parameters ([`RenderParams`]): which method, the surface model, the noise's seed and the frame
//! the points are given in, each with its default, and MARSIM's own settings for side-by-side comparisons.

use serde::{Deserialize, Serialize};

/// Which renderer to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Angular depth image (MARSIM's method with plane correction and level of detail).
    Splat,
    /// Per-beam marching through the bucket grid against oriented disks.
    Beam,
    /// Chosen per sensor from a cost model (see [`choose_method`](super::choose_method)); a [`Renderer`](super::Renderer) decides on its first frame
    /// and keeps the choice, so a run does not switch renderer half-way.
    #[default]
    Auto,
}

/// The deepest surface layer, in r_map ([`RenderParams::surface_layer`]). Where a map is thicker than its
/// planes allow (plane thickness gamma above half r_map: corners, clutter, surfaces seen from many scans at a
/// grazing angle), the layer of 2 gamma / cos reaches past r_map; a cap of r_map kept only its front, and the
/// beam read short. Measured in the hall's fused map (docs/accuracy.md, section 4): 2 r_map took the median
/// error along the real scans' own beams from 2.74 to 2.71 cm and their share within 10 cm from 0.832 to 0.848.
pub const LAYER_DEPTH_MAX: f32 = 2.0;

/// Rendering parameters. Every field has a default (`#[serde(default)]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenderParams {
    /// Renderer. By default, [`Method::Auto`].
    pub method: Method,
    /// Intersect beams with the winning point's plane where its plane thickness is below `gamma_max_m`.
    /// By default, true.
    pub plane_correction: bool,
    /// Plane thickness below which a point is treated as lying on a plane, metres. By default, `None`:
    /// 0.5 * r_map.
    pub gamma_max_m: Option<f32>,
    /// Read far buckets only to the density their pixels need (splat renderer). By default, true.
    pub lod: bool,
    /// Seed of the noise. By default, 0.
    pub seed: u64,
    /// Number of time slices per frame for motion (splat renderer: one depth image per slice, from the
    /// slice's mid pose). By default, `None`: 1 when the pose does not change over the frame, else one slice
    /// per r_map of travel, at most 8. Beams are always cast from their own exact pose.
    pub time_slices: Option<u32>,
    /// Splat renderer: also test the winners of the 8 neighbouring pixels and take the nearest valid plane
    /// hit, which removes most of the error at footprint edges. By default, true.
    pub neighbours: bool,
    /// Angular pixel size of the depth image, radians. By default, `None`: half the mean angular spacing of
    /// the beams.
    pub pixel_rad: Option<f32>,
    /// Keep each beam's geometric range before noise and dropout in [`Frame::debug`](super::Frame::debug). By default, false.
    pub debug: bool,
    /// Depth of a surface's layer behind the nearest hit, in plane thicknesses (gamma of the nearest point)
    /// along the beam, at most [`LAYER_DEPTH_MAX`] r_map: the beam's range is the footprint-weighted mean of
    /// the hits in that layer (where a real sensor sees a surface that a map fused from many scans holds
    /// several centimetres thick). 0: the nearest hit wins (MARSIM). By default, 2 (a layer's full depth is
    /// about 2-3.5 gamma; measured on real scans in docs/accuracy.md).
    pub surface_layer: f32,
    /// Draw each point on the middle of its surface's layer, where the map stores that offset (see
    /// `render/surface.rs`): a real sensor sees a fused map's thick layer near its middle. By default, true;
    /// MARSIM's method draws the points where they are.
    pub on_surface: bool,
    /// The frame the points of a moving sensor are given in. By default, [`PointsIn::FrameStart`].
    pub points_in: PointsIn,
}

/// The frame a moving sensor's points are given in ([`RenderParams::points_in`]). For a sensor that does not
/// move during the frame all three are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointsIn {
    /// The sensor frame at the frame start, the motion during the frame compensated: every point where it lies
    /// in the world, seen from the start pose.
    #[default]
    FrameStart,
    /// The sensor frame at the frame's last firing, the motion compensated: what LiDAR-inertial front-ends
    /// (FAST-LIO and others) publish as an undistorted scan. The shared hall scan is given this way
    /// (docs/accuracy.md, section 3).
    FrameEnd,
    /// Each point in the sensor frame at its own firing time, as the sensor's driver gives it: the motion
    /// distortion left in, for testing a deskewing step.
    Firing,
}

impl Default for RenderParams {
    fn default() -> Self {
        RenderParams {
            method: Method::Auto,
            plane_correction: true,
            gamma_max_m: None,
            lod: true,
            seed: 0,
            time_slices: None,
            neighbours: true,
            pixel_rad: None,
            debug: false,
            surface_layer: 2.0,
            on_surface: true,
            points_in: PointsIn::FrameStart,
        }
    }
}

impl RenderParams {
    /// MARSIM's method as the paper and its code describe it, for side-by-side comparisons: the splat
    /// renderer with 0.2 deg pixels, the nearest point winning each pixel (no surface layer, no neighbouring
    /// winners), plane correction of every point with a normal (MARSIM skips the plane thickness test) and no
    /// level of detail. Differences that remain: footprints of points on planes are their oriented disks
    /// rather than MARSIM's circles of 1.1 times the cube's half-angle, and near-parallel or behind-the-sensor
    /// plane hits are rejected. Noise and detection come from the sensor model as for every renderer (MARSIM
    /// adds none: use a sensor file with `range_sigma_m = 0` and no detection ranges for its exact output).
    pub fn marsim() -> RenderParams {
        RenderParams {
            method: Method::Splat,
            plane_correction: true,
            gamma_max_m: Some(f32::INFINITY),
            lod: false,
            neighbours: false,
            pixel_rad: Some(0.2f32.to_radians()),
            surface_layer: 0.0,
            on_surface: false,
            ..RenderParams::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_serde_defaults() {
        let p: RenderParams = toml::from_str("method = \"splat\"\nseed = 3\n").unwrap();
        assert_eq!(p.method, Method::Splat);
        assert_eq!(p.seed, 3);
        assert!(p.plane_correction && p.lod && p.neighbours);
        assert!(toml::from_str::<RenderParams>("bogus = 1").is_err());
    }
}
