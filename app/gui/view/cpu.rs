//! The viewport without a GPU: the same layers, camera and level of detail rasterised on the CPU into an image
//! (square splats, depth-tested, the same normal shading as the shader). Used when the window has no wgpu
//! renderer (egui's test harness, a machine without any Vulkan, GL or Metal driver) and by the tests, which
//! check through it what the GPU path draws.

use nalgebra::{Matrix4, Vector3};

use super::camera::Camera;
use super::points::PointLayer;

/// Renders `layers` (each with the number of points to draw) into an RGBA image of `w` x `h` pixels on the
/// background colour `bg`.
pub fn rasterise(
    camera: &Camera,
    layers: &[(PointLayer, usize)],
    (w, h): (usize, usize),
    bg: [u8; 3],
    cut_above: f32,
) -> Vec<[u8; 4]> {
    let mut color = vec![[bg[0], bg[1], bg[2], 255]; w * h];
    let mut depth = vec![f32::INFINITY; w * h];
    let vp: Matrix4<f32> = camera.view_proj(w as f32 / h.max(1) as f32);
    let eye = camera.eye().coords;
    for (layer, count) in layers {
        let r = (layer.point_size_px * 0.5).round().max(0.0) as isize;
        for p in layer.points.iter().take(*count) {
            if p.pos[2] > cut_above {
                continue;
            }
            let Some(([x, y], z)) = Camera::project(&vp, p.pos, [w as f32, h as f32]) else {
                continue;
            };
            let c = shade(p, &eye, layer.shaded);
            let (cx, cy) = (x as isize, y as isize);
            for py in (cy - r).max(0)..=(cy + r).min(h as isize - 1) {
                for px in (cx - r).max(0)..=(cx + r).min(w as isize - 1) {
                    let i = py as usize * w + px as usize;
                    if z < depth[i] {
                        depth[i] = z;
                        color[i] = c;
                    }
                }
            }
        }
    }
    color
}

fn shade(p: &super::points::GpuPoint, eye: &Vector3<f32>, shaded: bool) -> [u8; 4] {
    let n = Vector3::new(p.normal[0], p.normal[1], p.normal[2]).map(|v| v as f32 / 127.0);
    let s = if shaded && n.norm_squared() > 0.1 {
        let v = (eye - Vector3::from(p.pos)).normalize();
        0.3 + 0.7 * n.normalize().dot(&v).abs()
    } else {
        1.0
    };
    [
        (p.color[0] as f32 * s) as u8,
        (p.color[1] as f32 * s) as u8,
        (p.color[2] as f32 * s) as u8,
        255,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_in_view_covers_pixels_and_an_empty_one_does_not() {
        let grid =
            (0..50).flat_map(|i| (0..50).map(move |j| [i as f32 * 0.2, j as f32 * 0.2, 0.0]));
        let layer = PointLayer::solid(grid, [255, 255, 255], 2.0);
        let cam = Camera::framing([0.0, 0.0, 0.0], [10.0, 10.0, 0.0]);
        let img = rasterise(
            &cam,
            &[(layer.clone(), layer.len())],
            (200, 150),
            [0, 0, 0],
            f32::MAX,
        );
        let lit = img.iter().filter(|c| c[0] == 255).count();
        assert!(lit > 2000, "{lit} pixels lit");
        let none = rasterise(&cam, &[], (200, 150), [0, 0, 0], f32::MAX);
        assert!(none.iter().all(|c| c[0] == 0));
    }

    #[test]
    fn the_nearer_point_wins() {
        let cam = Camera {
            target: [0.0; 3],
            yaw: 0.0,
            pitch: 1.5,
            distance: 10.0,
            ..Camera::default()
        };
        let low = PointLayer::solid([[0.0, 0.0, 0.0]].into_iter(), [255, 0, 0], 3.0);
        let high = PointLayer::solid([[0.0, 0.0, 2.0]].into_iter(), [0, 255, 0], 3.0);
        let img = rasterise(
            &cam,
            &[(high.clone(), 1), (low.clone(), 1)],
            (64, 64),
            [0, 0, 0],
            f32::MAX,
        );
        assert_eq!(img[32 * 64 + 32], [0, 255, 0, 255]);
        // With the cut between them, the roof is lifted: the lower point shows.
        let img = rasterise(&cam, &[(high, 1), (low, 1)], (64, 64), [0, 0, 0], 1.0);
        assert_eq!(img[32 * 64 + 32], [255, 0, 0, 255]);
    }
}
