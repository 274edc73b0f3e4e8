//! The pictures the command line and the desktop app write: a flight at a glance (`flight.png`, [`flight`])
//! and the demo's views of a cloud from above and of one LiDAR frame ([`scene`]). They are drawn here, where
//! they are used; the simulator (simcore) draws no pictures and writes only data.
//!
//! Drawn with `plotters` on its bitmap backend, into an RGB buffer of our own that [`write_png`] encodes with
//! the `png` crate (plotters' own encoder would bring the `image` crate). Text is rasterised by ab_glyph from
//! Hack Regular (MIT licensed; embedded through `epaint_default_fonts`, the crate egui takes its fonts from), so
//! a headless server with no fonts installed draws the same picture as a desktop.

pub mod flight;
pub mod scene;

use std::path::Path;
use std::sync::Once;

use aerie_pipeline::Error;
use plotters::style::{FontStyle, RGBColor};

/// The family name the pictures' text is drawn in (plotters' default family, so that every label finds it).
const FONT: &str = "sans-serif";

/// Background of the pictures.
const BACKGROUND: RGBColor = RGBColor(20, 20, 24);
/// Text, axes and the scale bar.
const TEXT: RGBColor = RGBColor(210, 210, 215);
/// Grid lines.
const GRID: RGBColor = RGBColor(45, 45, 52);

/// Registers the embedded font with plotters (once per process; later calls do nothing).
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is a constant of a crate built with us: it parses, or no picture has text.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        );
    });
}

/// An RGB raster to draw on, row by row from the top left, three bytes (red, green, blue) a pixel.
pub struct Raster {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// The pixels.
    pub rgb: Vec<u8>,
}

impl Raster {
    /// A `width` x `height` raster, black.
    pub fn new(width: u32, height: u32) -> Raster {
        Raster {
            width,
            height,
            rgb: vec![0; 3 * width as usize * height as usize],
        }
    }

    /// The pixel at (`x` right, `y` down), if on the raster.
    #[cfg(test)]
    pub fn get(&self, x: u32, y: u32) -> Option<[u8; 3]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = 3 * (y as usize * self.width as usize + x as usize);
        Some([self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]])
    }

    /// Writes the raster to `path` as an 8-bit RGB PNG, through a temporary file.
    pub fn write_png(&self, path: &Path) -> Result<(), Error> {
        write_png(path, self.width, self.height, &self.rgb)
    }
}

/// Writes `rgb` (`width` x `height` pixels, three bytes each, row by row from the top left) to `path` as an
/// 8-bit RGB PNG, through a temporary file.
pub fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> Result<(), Error> {
    let err = |e: png::EncodingError| match e {
        png::EncodingError::IoError(io) => Error::io(path, io),
        other => Error::io(path, std::io::Error::other(other)),
    };
    aerie_pipeline::io::atomic::write_atomic_buffered(path, |w| {
        let mut enc = png::Encoder::new(w, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(err)?;
        w.write_image_data(rgb).map_err(err)?;
        w.finish().map_err(err)
    })
}
