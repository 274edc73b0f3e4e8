//! What beams can hit besides the map ([`Occluder`]): dynamic obstacles and other vehicles, tested on each
//! beam's ray by both renderers.

use nalgebra::{Point3, Vector3};

/// Something the map does not hold that beams can hit: a dynamic obstacle, another vehicle. Coordinates are
/// in the map (world) frame.
pub trait Occluder: Sync {
    /// The nearest intersection of the ray `origin + t * dir` (`dir` unit) with `0 < t <= max_t`: the ray
    /// parameter and the unit surface normal there.
    fn raycast(
        &self,
        origin: &Point3<f64>,
        dir: &Vector3<f64>,
        max_t: f64,
    ) -> Option<(f64, Vector3<f64>)>;

    /// True when there is nothing to hit (no obstacle, no other vehicle): the renderer skips the occluder
    /// instead of testing every beam against it.
    fn is_empty(&self) -> bool {
        false
    }
}
