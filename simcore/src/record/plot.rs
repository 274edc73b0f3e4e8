//! A flight at a glance as a PNG, drawn without a plotting library (the dependency tree stays lean): the map
//! from above (grey, brighter where higher), each vehicle's path in its own colour with collisions marked in
//! red, and below it altitude and speed over time, one line per vehicle on a shared time axis (grid lines every
//! 10 s and every metre or m/s).

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::io::BufWriter;
use std::path::Path;

use aerie_pipeline::map::MapView;
use nalgebra::Vector3;

use super::RecordError;

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

    /// Writes the raster as an 8-bit RGB PNG (through a temporary file).
    pub fn write_png(&self, path: &Path) -> Result<(), RecordError> {
        let err = |e: &dyn std::fmt::Display| RecordError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let tmp = path.with_extension("png.partial");
        {
            let file = std::fs::File::create(&tmp).map_err(|e| err(&e))?;
            let mut enc =
                png::Encoder::new(BufWriter::new(file), self.width as u32, self.height as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().map_err(|e| err(&e))?;
            w.write_image_data(&self.rgb).map_err(|e| err(&e))?;
            w.finish().map_err(|e| err(&e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| err(&e))
    }
}

/// The map from above in a `w` x `h` box at (`x0`, `y0`), scaled to `lo..hi` (map frame, x right, y up).
fn top_view(c: &mut Canvas, map: &MapView, lo: Vector3<f64>, hi: Vector3<f64>, area: [f64; 4]) {
    let o = Vector3::from(map.origin);
    let [x0, y0, w, h] = area;
    let s = (w / (hi.x - lo.x)).min(h / (hi.y - lo.y));
    let step = (map.positions.len() / 400_000).max(1);
    for p in map.positions.iter().step_by(step) {
        let v = o + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64);
        let g = (60.0 + 170.0 * ((v.z - lo.z) / (hi.z - lo.z).max(1e-6)).clamp(0.0, 1.0)) as u8;
        c.set(
            (x0 + (v.x - lo.x) * s) as i64,
            (y0 + h - (v.y - lo.y) * s) as i64,
            [g, g, g],
        );
    }
}

/// One vehicle's ground truth.
pub type Track<'a> = &'a [super::TrackSample];

/// Draws the flight picture (1200 x 1000 pixels).
pub fn flight_png(
    path: &Path,
    map: &MapView,
    tracks: &[Track],
    collisions: &[[f64; 3]],
) -> Result<(), RecordError> {
    let mut c = Canvas::new(1200, 1000, [20, 20, 24]);
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
    for t in tracks {
        for (_, p, _) in t.iter() {
            lo = lo.inf(&p.translation.vector);
            hi = hi.sup(&p.translation.vector);
        }
    }
    if !(lo.x < hi.x && lo.y < hi.y) {
        hi = lo + Vector3::repeat(1.0);
    }
    let area = [10.0, 10.0, 1180.0, 640.0];
    top_view(&mut c, map, lo, hi, area);
    let s = (area[2] / (hi.x - lo.x)).min(area[3] / (hi.y - lo.y));
    let px = |v: &Vector3<f64>| {
        (
            area[0] + (v.x - lo.x) * s,
            area[1] + area[3] - (v.y - lo.y) * s,
        )
    };
    for (i, t) in tracks.iter().enumerate() {
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
    let t_end = tracks
        .iter()
        .filter_map(|t| t.last().map(|x| x.0))
        .fold(1.0, f64::max);
    let alt: Vec<Vec<(f64, f64)>> = tracks
        .iter()
        .map(|t| t.iter().map(|x| (x.0, x.1.translation.vector.z)).collect())
        .collect();
    let speed: Vec<Vec<(f64, f64)>> = tracks
        .iter()
        .map(|t| t.iter().map(|x| (x.0, x.2.norm())).collect())
        .collect();
    panel(&mut c, &alt, t_end, [10.0, 665.0, 1180.0, 155.0]);
    panel(&mut c, &speed, t_end, [10.0, 835.0, 1180.0, 155.0]);
    c.write_png(path)
}

/// Lines of (t, value) in a box, with grid lines every 10 s and every unit.
fn panel(c: &mut Canvas, lines: &[Vec<(f64, f64)>], t_end: f64, area: [f64; 4]) {
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
    let (lo, hi) = (lo.floor(), hi.ceil());
    let grid = [45, 45, 52];
    let mut t = 0.0;
    while t <= t_end {
        let x = x0 + t / t_end * w;
        c.line((x, y0), (x, y0 + h), grid);
        t += 10.0;
    }
    let mut v = lo;
    while v <= hi && (hi - lo) <= 200.0 {
        let y = y0 + h - (v - lo) / (hi - lo) * h;
        c.line((x0, y), (x0 + w, y), grid);
        v += 1.0;
    }
    for (i, l) in lines.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        let pt = |(t, v): (f64, f64)| (x0 + t / t_end * w, y0 + h - (v - lo) / (hi - lo) * h);
        for s in l.windows(2) {
            c.line(pt(s[0]), pt(s[1]), col);
        }
    }
}
