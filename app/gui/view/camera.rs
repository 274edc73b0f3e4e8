//! The viewport camera: orbit around a target (drag), pan (right or middle drag, or shift-drag), zoom (scroll),
//! and a fly mode (W A S D, Q E) that moves the target with the eye. Z is up, as in every map we read.
//! Coordinates are the view's local frame (metres from the view origin), in f32.

use nalgebra::{Matrix4, Point3, Vector3, Vector4};

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Camera {
    pub target: [f32; 3],
    /// Azimuth of the eye around the target, radians.
    pub yaw: f32,
    /// Elevation of the eye above the target, radians.
    pub pitch: f32,
    pub distance: f32,
    /// Vertical field of view, radians.
    pub fov_y: f32,
}

impl Default for Camera {
    fn default() -> Self {
        Camera {
            target: [0.0; 3],
            yaw: -2.2,
            pitch: 0.6,
            distance: 30.0,
            fov_y: 50f32.to_radians(),
        }
    }
}

impl Camera {
    /// A camera looking at the box `min..max` from above and aside, the whole box in view.
    pub fn framing(min: [f32; 3], max: [f32; 3]) -> Camera {
        let c = Vector3::from(min).lerp(&Vector3::from(max), 0.5);
        let size = (Vector3::from(max) - Vector3::from(min)).norm().max(1.0);
        Camera {
            target: c.into(),
            distance: size * 0.9,
            ..Camera::default()
        }
    }

    pub fn eye(&self) -> Point3<f32> {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Point3::from(
            Vector3::from(self.target) + self.distance * Vector3::new(cp * cy, cp * sy, sp),
        )
    }

    fn forward(&self) -> Vector3<f32> {
        (Point3::from(self.target) - self.eye()).normalize()
    }

    /// World (view-local) to clip space, with depth in 0..1 (wgpu's convention).
    pub fn view_proj(&self, aspect: f32) -> Matrix4<f32> {
        let view = Matrix4::look_at_rh(&self.eye(), &Point3::from(self.target), &Vector3::z());
        let near = (self.distance * 1e-3).max(0.01);
        let far = self.distance * 100.0 + 1000.0;
        let proj = Matrix4::new_perspective(aspect.max(1e-3), self.fov_y, near, far);
        // nalgebra's projection maps depth to -1..1; wgpu wants 0..1.
        let to_unit_depth = Matrix4::new(
            1.0, 0.0, 0.0, 0.0, //
            0.0, 1.0, 0.0, 0.0, //
            0.0, 0.0, 0.5, 0.5, //
            0.0, 0.0, 0.0, 1.0,
        );
        to_unit_depth * proj * view
    }

    /// Rotates the eye around the target by a drag of `dx, dy` pixels.
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.yaw -= dx * 0.008;
        self.pitch = (self.pitch + dy * 0.008).clamp(-1.55, 1.55);
    }

    /// Moves the target by a drag of `dx, dy` pixels in a viewport `height_px` tall, so the point under the
    /// cursor stays under it.
    pub fn pan(&mut self, dx: f32, dy: f32, height_px: f32) {
        let f = self.forward();
        let right = f.cross(&Vector3::z()).normalize();
        let up = right.cross(&f);
        let metres_per_px = 2.0 * self.distance * (self.fov_y * 0.5).tan() / height_px.max(1.0);
        let t = Vector3::from(self.target) + (-dx * right + dy * up) * metres_per_px;
        self.target = t.into();
    }

    /// Zooms by a scroll of `delta` points (positive: closer).
    pub fn zoom(&mut self, delta: f32) {
        self.distance = (self.distance * (-delta * 0.002).exp()).clamp(0.05, 1e6);
    }

    /// Fly mode: moves eye and target together, `forward, right, up` in units of `step` metres.
    pub fn fly(&mut self, forward: f32, right: f32, up: f32, step: f32) {
        let f = self.forward();
        let r = f.cross(&Vector3::z()).normalize();
        let t = Vector3::from(self.target) + (forward * f + right * r + up * Vector3::z()) * step;
        self.target = t.into();
    }

    /// Screen position (pixels from the viewport's top left) and depth of a point; `None` behind the eye.
    pub fn project(vp: &Matrix4<f32>, p: [f32; 3], size: [f32; 2]) -> Option<([f32; 2], f32)> {
        let c = vp * Vector4::new(p[0], p[1], p[2], 1.0);
        if c.w <= 1e-6 {
            return None;
        }
        let (x, y, z) = (c.x / c.w, c.y / c.w, c.z / c.w);
        if !(0.0..=1.0).contains(&z) {
            return None;
        }
        Some(([(x + 1.0) * 0.5 * size[0], (1.0 - y) * 0.5 * size[1]], z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_projects_to_the_viewport_centre_and_depth_grows_away() {
        let cam = Camera::framing([-5.0, -5.0, 0.0], [5.0, 5.0, 2.0]);
        let vp = cam.view_proj(2.0);
        let (px, z) = Camera::project(&vp, cam.target, [800.0, 400.0]).unwrap();
        assert!((px[0] - 400.0).abs() < 1e-3 && (px[1] - 200.0).abs() < 1e-3);
        let far = (Vector3::from(cam.target) + cam.forward() * 5.0).into();
        let (_, z_far) = Camera::project(&vp, far, [800.0, 400.0]).unwrap();
        assert!(z_far > z);
        let behind = (cam.eye().coords - cam.forward() * 5.0).into();
        assert!(Camera::project(&vp, behind, [800.0, 400.0]).is_none());
    }

    #[test]
    fn a_point_above_the_target_appears_higher_on_screen() {
        let cam = Camera::default();
        let vp = cam.view_proj(1.0);
        let (a, _) = Camera::project(&vp, [0.0, 0.0, 0.0], [100.0, 100.0]).unwrap();
        let (b, _) = Camera::project(&vp, [0.0, 0.0, 3.0], [100.0, 100.0]).unwrap();
        assert!(b[1] < a[1]);
    }

    #[test]
    fn pan_keeps_distance_and_zoom_keeps_target() {
        let mut cam = Camera::default();
        let d = cam.distance;
        cam.pan(10.0, 5.0, 500.0);
        assert_eq!(cam.distance, d);
        let t = cam.target;
        cam.zoom(100.0);
        assert!(cam.distance < d);
        assert_eq!(cam.target, t);
    }
}
