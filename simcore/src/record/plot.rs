//! A flight at a glance as a PNG, drawn without a plotting library (the dependency tree stays lean): the map
//! from above (grey, brighter where higher) with a scale bar, each vehicle's path in its own colour with
//! collisions marked in red and a legend naming the vehicles, and below it altitude and speed over time, one
//! line per vehicle on a shared time axis, with labelled grid lines at round steps. Text is drawn with the
//! public-domain 8 x 8 bitmap font of the `font8x8` crate (no font files, no rasteriser).

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::path::Path;

use aerie_pipeline::map::MapView;
use font8x8::UnicodeFonts;
use nalgebra::Vector3;

use super::RecordError;

const TEXT: [u8; 3] = [210, 210, 215];
const GRID: [u8; 3] = [45, 45, 52];
const BACKGROUND: [u8; 3] = [20, 20, 24];

const COLOURS: [[u8; 3]; 6] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [148, 103, 189],
    [23, 190, 207],
    [188, 189, 34],
];

/// An RGB raster.
pub struct Canvas {
    /// Width, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// Pixels row by row from the top left, three bytes (red, green, blue) each.
    pub rgb: Vec<u8>,
}

impl Canvas {
    /// A `width` x `height` canvas filled with `background`.
    pub fn new(width: usize, height: usize, background: [u8; 3]) -> Canvas {
        Canvas {
            width,
            height,
            rgb: background.repeat(width * height),
        }
    }

    /// Paints pixel (`x` right, `y` down from the top left) in `c`; pixels off the canvas are ignored.
    pub fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height {
            let i = 3 * (y as usize * self.width + x as usize);
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    /// A line two pixels wide.
    pub fn line(&mut self, a: (f64, f64), b: (f64, f64), c: [u8; 3]) {
        let n = (b.0 - a.0).abs().max((b.1 - a.1).abs()).ceil().max(1.0) as usize;
        for i in 0..=n {
            let f = i as f64 / n as f64;
            let (x, y) = (a.0 + f * (b.0 - a.0), a.1 + f * (b.1 - a.1));
            self.set(x as i64, y as i64, c);
            self.set(x as i64 + 1, y as i64, c);
        }
    }

    /// A cross of half-size `r` pixels.
    pub fn cross(&mut self, x: f64, y: f64, r: f64, c: [u8; 3]) {
        self.line((x - r, y - r), (x + r, y + r), c);
        self.line((x - r, y + r), (x + r, y - r), c);
    }

    /// Writes `text` with its top left corner at (`x`, `y`), each glyph 8 x 8 pixels times `scale`; characters
    /// outside ASCII are drawn as '?'. Returns the width written, pixels.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, c: [u8; 3]) -> i64 {
        let mut at = x;
        for ch in text.chars() {
            let glyph = font8x8::BASIC_FONTS
                .get(ch)
                .or_else(|| font8x8::BASIC_FONTS.get('?'))
                .unwrap_or([0; 8]);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        for dy in 0..scale {
                            for dx in 0..scale {
                                self.set(at + col * scale + dx, y + row as i64 * scale + dy, c);
                            }
                        }
                    }
                }
            }
            at += 8 * scale;
        }
        at - x
    }

    /// Fills the box `[x, y, w, h]` (pixels) with `c`.
    pub fn fill(&mut self, [x, y, w, h]: [i64; 4], c: [u8; 3]) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, c);
            }
        }
    }

    /// Writes the raster as an 8-bit RGB PNG (through a temporary file).
    pub fn write_png(&self, path: &Path) -> Result<(), RecordError> {
        let err = |e: png::EncodingError| match e {
            png::EncodingError::IoError(io) => aerie_pipeline::Error::io(path, io),
            other => aerie_pipeline::Error::io(path, std::io::Error::other(other)),
        };
        aerie_pipeline::io::atomic::write_atomic_buffered(path, |w| {
            let mut enc = png::Encoder::new(w, self.width as u32, self.height as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().map_err(err)?;
            w.write_image_data(&self.rgb).map_err(err)?;
            w.finish().map_err(err)
        })?;
        Ok(())
    }
}

/// Map-frame x and y onto a pixel box: one scale for both axes, the largest at which `lo..hi` fits, and the
/// extent centred in the box (a tall map in a wide box stands in its middle, not against its left edge).
struct Fit {
    lo: Vector3<f64>,
    /// Pixels per metre.
    s: f64,
    /// The pixel of `lo.x` and of `lo.y` (y grows down the image).
    left: f64,
    bottom: f64,
}

impl Fit {
    fn new(lo: Vector3<f64>, hi: Vector3<f64>, [x0, y0, w, h]: [f64; 4]) -> Fit {
        let (dx, dy) = (hi.x - lo.x, hi.y - lo.y);
        let s = (w / dx).min(h / dy);
        Fit {
            lo,
            s,
            left: x0 + 0.5 * (w - dx * s),
            bottom: y0 + h - 0.5 * (h - dy * s),
        }
    }

    fn px(&self, v: &Vector3<f64>) -> (f64, f64) {
        (
            self.left + (v.x - self.lo.x) * self.s,
            self.bottom - (v.y - self.lo.y) * self.s,
        )
    }
}

/// The map from above, placed by `fit`, grey by height from `z.0` (dark) to `z.1` (light).
fn top_view(c: &mut Canvas, map: &MapView, fit: &Fit, z: (f64, f64)) {
    let o = Vector3::from(map.origin);
    let step = (map.positions.len() / 400_000).max(1);
    for p in map.positions.iter().step_by(step) {
        let v = o + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64);
        let g = (60.0 + 170.0 * ((v.z - z.0) / (z.1 - z.0).max(1e-6)).clamp(0.0, 1.0)) as u8;
        let (x, y) = fit.px(&v);
        c.set(x as i64, y as i64, [g, g, g]);
    }
}

/// One vehicle's name and ground truth.
pub type Track<'a> = (&'a str, &'a [super::TrackSample]);

/// Draws the flight picture (1200 x 1000 pixels).
pub fn flight_png(
    path: &Path,
    map: &MapView,
    tracks: &[Track],
    collisions: &[[f64; 3]],
) -> Result<(), RecordError> {
    flight_canvas(map, tracks, collisions).write_png(path)
}

/// The flight picture's raster (see [`flight_png`]).
pub fn flight_canvas(map: &MapView, tracks: &[Track], collisions: &[[f64; 3]]) -> Canvas {
    let mut c = Canvas::new(1200, 1000, BACKGROUND);
    let o = Vector3::from(map.origin);
    let (mut lo, mut hi) = (
        Vector3::repeat(f64::INFINITY),
        Vector3::repeat(f64::NEG_INFINITY),
    );
    for b in map.buckets {
        for k in 0..3 {
            lo[k] = lo[k].min(o[k] + b.min[k] as f64);
            hi[k] = hi[k].max(o[k] + b.max[k] as f64);
        }
    }
    for (_, t) in tracks {
        for (_, p, _) in t.iter() {
            lo = lo.inf(&p.translation.vector);
            hi = hi.sup(&p.translation.vector);
        }
    }
    if !(lo.x < hi.x && lo.y < hi.y) {
        hi = lo + Vector3::repeat(1.0);
    }
    let area = [10.0, 10.0, 1180.0, 640.0];
    let fit = Fit::new(lo, hi, area);
    top_view(&mut c, map, &fit, (lo.z, hi.z));
    let px = |v: &Vector3<f64>| fit.px(v);
    for (i, (_, t)) in tracks.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        for w in t.windows(2) {
            c.line(
                px(&w[0].1.translation.vector),
                px(&w[1].1.translation.vector),
                col,
            );
        }
    }
    for p in collisions {
        let (x, y) = px(&Vector3::from(*p));
        c.cross(x, y, 6.0, [230, 40, 40]);
    }
    scale_bar(&mut c, fit.s, area);
    legend(&mut c, tracks, !collisions.is_empty());
    let t_end = tracks
        .iter()
        .filter_map(|(_, t)| t.last().map(|x| x.0))
        .fold(1.0, f64::max);
    let alt: Vec<Vec<(f64, f64)>> = tracks
        .iter()
        .map(|(_, t)| t.iter().map(|x| (x.0, x.1.translation.vector.z)).collect())
        .collect();
    let speed: Vec<Vec<(f64, f64)>> = tracks
        .iter()
        .map(|(_, t)| t.iter().map(|x| (x.0, x.2.norm())).collect())
        .collect();
    let (x0, w) = (PANEL_LEFT, 1190.0 - PANEL_LEFT);
    panel(&mut c, "altitude (m)", &alt, t_end, [x0, 672.0, w, 125.0]);
    panel(&mut c, "speed (m/s)", &speed, t_end, [x0, 842.0, w, 125.0]);
    let label = "time (s)";
    c.text(
        (x0 + w) as i64 - 8 * label.len() as i64,
        984,
        label,
        1,
        TEXT,
    );
    c
}

/// Left edge of the plot panels, pixels: room for the value labels.
const PANEL_LEFT: f64 = 60.0;

/// A round step (1, 2 or 5 times a power of ten) that cuts `span` into at most `max_steps` parts.
fn nice_step(span: f64, max_steps: f64) -> f64 {
    if !(span > 0.0 && span.is_finite()) {
        return 1.0;
    }
    let raw = span / max_steps;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v >= raw)
        .unwrap_or(10.0 * p)
}

/// A number as short as its step allows ("20", "2.5", "0.25").
fn label(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
    format!("{v:.decimals$}")
}

/// A bar of a round length at the bottom left of the top view, `s` pixels per metre.
fn scale_bar(c: &mut Canvas, s: f64, area: [f64; 4]) {
    let [x0, y0, _, h] = area;
    let metres = nice_step(200.0 / s, 1.0);
    let (x, y) = (x0 + 10.0, y0 + h - 14.0);
    let len = metres * s;
    c.fill(
        [x as i64 - 4, y as i64 - 24, len as i64 + 8, 34],
        BACKGROUND,
    );
    c.line((x, y), (x + len, y), TEXT);
    c.line((x, y - 5.0), (x, y + 5.0), TEXT);
    c.line((x + len, y - 5.0), (x + len, y + 5.0), TEXT);
    c.text(
        x as i64 + 4,
        y as i64 - 22,
        &format!("{} m", label(metres, metres)),
        2,
        TEXT,
    );
}

/// The vehicles' names in their colours at the top right, and what a red cross means when there is one.
fn legend(c: &mut Canvas, tracks: &[Track], collisions: bool) {
    let mut rows: Vec<(String, [u8; 3])> = tracks
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.to_string(), COLOURS[i % COLOURS.len()]))
        .collect();
    if collisions {
        rows.push(("x collision".to_string(), [230, 40, 40]));
    }
    rows.push(("top view: x right, y up".to_string(), TEXT));
    let width = rows
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0) as i64
        * 16;
    let x = 1190 - width - 36;
    c.fill(
        [x - 8, 6, width + 44, 24 * rows.len() as i64 + 8],
        BACKGROUND,
    );
    for (i, (text, col)) in rows.iter().enumerate() {
        let y = 12 + 24 * i as i64;
        if i < tracks.len() {
            c.fill([x, y + 6, 24, 4], *col);
        }
        c.text(x + 32, y, text, 2, *col);
    }
}

/// Lines of (t, value) in a box under a title, with labelled grid lines at round steps of time and value.
fn panel(c: &mut Canvas, title: &str, lines: &[Vec<(f64, f64)>], t_end: f64, area: [f64; 4]) {
    let [x0, y0, w, h] = area;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for l in lines {
        for (_, v) in l {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
    }
    if !(lo < hi) {
        (lo, hi) = (lo.min(0.0) - 0.5, hi.max(0.0) + 0.5);
    }
    let v_step = nice_step(hi - lo, 4.0);
    let (lo, hi) = (
        (lo / v_step).floor() * v_step,
        (hi / v_step).ceil() * v_step,
    );
    let t_step = nice_step(t_end, 12.0);
    let mut k = 0.0;
    while k * t_step <= t_end {
        let t = k * t_step;
        let x = x0 + t / t_end * w;
        c.line((x, y0), (x, y0 + h), GRID);
        let text = label(t, t_step);
        // The last label ends at the panel's edge rather than past the canvas.
        let width = 8.0 * text.len() as f64;
        let at = (x + 3.0).min(x0 + w - width);
        c.text(at as i64, (y0 + h) as i64 + 3, &text, 1, TEXT);
        k += 1.0;
    }
    let mut k = 0.0;
    while lo + k * v_step <= hi + 1e-9 * v_step {
        let v = lo + k * v_step;
        let y = y0 + h - (v - lo) / (hi - lo) * h;
        c.line((x0, y), (x0 + w, y), GRID);
        let text = label(v, v_step);
        c.text(
            x0 as i64 - 6 - 8 * text.len() as i64,
            y as i64 - 4,
            &text,
            1,
            TEXT,
        );
        k += 1.0;
    }
    for (i, l) in lines.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        let pt = |(t, v): (f64, f64)| (x0 + t / t_end * w, y0 + h - (v - lo) / (hi - lo) * h);
        for s in l.windows(2) {
            c.line(pt(s[0]), pt(s[1]), col);
        }
    }
    c.text(x0 as i64 + 6, y0 as i64 - 20, title, 2, TEXT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_steps_and_their_labels() {
        assert_eq!(nice_step(60.0, 12.0), 5.0);
        assert_eq!(nice_step(20.3, 4.0), 10.0);
        assert_eq!(nice_step(1.9, 4.0), 0.5);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(label(20.0, 10.0), "20");
        assert_eq!(label(1.5, 0.5), "1.5");
        assert_eq!(label(0.25, 0.05), "0.25");
        assert_eq!(label(-1e-17, 0.2), "0.0");
    }

    /// A map far taller than wide stands in the middle of the top view's box, where the flight picture of the
    /// hall (47 x 66 m in a 1180 x 640 box) used to hug the left edge with two thirds of the box empty.
    #[test]
    fn a_tall_map_is_drawn_in_the_middle_of_the_top_view() {
        let positions: Vec<[f32; 3]> = (0..2000)
            .map(|i| [(i % 10) as f32 * 0.5, (i / 10) as f32 * 0.5, 0.0])
            .collect();
        let cloud = aerie_pipeline::Cloud::from_positions([0.0; 3], positions);
        let map = aerie_pipeline::map::PackedMap::from_cloud(&cloud, 0.5, None).unwrap();
        let c = flight_canvas(&map.view(), &[], &[]);
        // Above the scale bar (bottom left) and left of the legend (top right).
        let columns: Vec<usize> = (0..590)
            .flat_map(|y| (0..c.width).map(move |x| (x, y)))
            .filter(|&(x, y)| c.rgb[3 * (y * c.width + x)] > 40)
            .map(|(x, _)| x)
            .filter(|&x| x < 800)
            .collect();
        let (lo, hi) = (columns.iter().min().unwrap(), columns.iter().max().unwrap());
        let middle = 0.5 * (lo + hi) as f64;
        assert!(
            (middle - 600.0).abs() < 20.0,
            "map drawn over columns {lo}..{hi}"
        );
    }

    #[test]
    fn text_is_drawn_in_its_colour_within_its_width() {
        let mut c = Canvas::new(40, 10, BACKGROUND);
        let width = c.text(0, 0, "1 ", 1, [255, 0, 0]);
        assert_eq!(width, 16);
        let red = |c: &Canvas, x0: usize, x1: usize| {
            (0..c.height)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| c.rgb[3 * (y * c.width + x)] == 255)
                .count()
        };
        // "1" sets pixels in its cell; the space and the rest of the canvas stay empty.
        assert!(red(&c, 0, 8) > 8);
        assert_eq!(red(&c, 8, 40), 0);
        // A character outside the font is drawn as '?', not skipped.
        let mut d = Canvas::new(8, 8, BACKGROUND);
        d.text(0, 0, "é", 1, [255, 0, 0]);
        assert!(red(&d, 0, 8) > 0);
    }
}
