//! The demo report's pictures of its data: a cloud seen from above, one point a pixel, grey by height (the raw
//! scan and the prepared map), and one LiDAR frame as its range image, near bright and far dark.

use std::path::Path;

use aerie_pipeline::Cloud;
use aerie_simcore::render::Image;
use plotters::prelude::*;

use super::{BACKGROUND, Raster};

/// Draws `cloud` from above into a 900 x 600 picture at `path` (nothing for an empty cloud): one scale for both
/// axes, a 10-pixel border, grey by height from the lowest point (dark) to the highest (light).
pub fn top_view_png(cloud: &Cloud, path: &Path) -> anyhow::Result<()> {
    let Some((lo, hi)) = cloud.bounds() else {
        return Ok(());
    };
    let (w, h) = (900u32, 600u32);
    let s = ((w - 20) as f64 / (hi[0] - lo[0])).min((h - 20) as f64 / (hi[1] - lo[1]));
    let mut raster = Raster::new(w, h);
    {
        let area = BitMapBackend::with_buffer(&mut raster.rgb, (w, h)).into_drawing_area();
        area.fill(&BACKGROUND)?;
        let o = cloud.origin;
        for p in cloud.positions() {
            let (x, y, z) = (o[0] + p[0] as f64, o[1] + p[1] as f64, o[2] + p[2] as f64);
            let g =
                (50.0 + 200.0 * ((z - lo[2]) / (hi[2] - lo[2]).max(1e-6)).clamp(0.0, 1.0)) as u8;
            let pixel = (
                (10.0 + (x - lo[0]) * s) as i32,
                (h as f64 - 10.0 - (y - lo[1]) * s) as i32,
            );
            area.draw_pixel(pixel, &RGBColor(g, g, (g as f64 * 0.9) as u8))?;
        }
        area.present()?;
    }
    raster.write_png(path)?;
    Ok(())
}

/// Draws `image` (ranges in metres, 0 where no return) into a picture at `path`, each pixel a 3 x 3 block: near
/// is bright, 40 m and beyond dark, no return black.
pub fn range_image_png(image: &Image, path: &Path) -> anyhow::Result<()> {
    const K: u32 = 3;
    let (w, h) = (image.width as u32 * K, image.height as u32 * K);
    let mut raster = Raster::new(w, h);
    {
        let area = BitMapBackend::with_buffer(&mut raster.rgb, (w, h)).into_drawing_area();
        for y in 0..image.height {
            for x in 0..image.width {
                let r = image.get(x, y);
                if r > 0.0 {
                    let v = (255.0 * (1.0 - (r / 40.0).min(1.0)).powf(0.7)) as u8;
                    let colour = RGBColor(v, (v as f64 * 0.85) as u8, 255 - v / 2);
                    let (px, py) = (x as i32 * K as i32, y as i32 * K as i32);
                    // The bitmap backend fills a rectangle up to its far corner, exclusive.
                    let block = [(px, py), (px + K as i32, py + K as i32)];
                    area.draw(&Rectangle::new(block, colour.filled()))?;
                }
            }
        }
        area.present()?;
    }
    raster.write_png(path)?;
    Ok(())
}
