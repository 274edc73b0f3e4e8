//! A flight at a glance (`flight.png`, 1200 x 1000 pixels), written beside the flight's data by `aerie fly`,
//! the demo and the app's Simulate step: the map from above (grey, brighter where higher) with a scale bar,
//! each vehicle's path in its own colour with collisions marked by red crosses and a legend naming the vehicles,
//! and below it altitude and speed over time, one line per vehicle on a shared time axis, with labelled grid
//! lines at round steps.

// `!(a <= b)` is deliberate: a NaN must fail the test it is in.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::path::Path;

use aerie_pipeline::map::MapView;
use aerie_simcore::flight::Flight;
use aerie_simcore::record::TrackSample;
use nalgebra::Vector3;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{BACKGROUND, FONT, GRID, Raster, TEXT};

/// The picture's size, pixels.
pub const SIZE: (u32, u32) = (1200, 1000);

/// The vehicles' colours, in mission order (then again from the first).
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
];
/// The collision crosses.
const COLLISION: RGBColor = RGBColor(230, 40, 40);

/// Height of the top view's band, pixels (the panels share the rest).
const TOP_H: u32 = 660;
/// Room left of the panels for the value labels, pixels.
const PANEL_LEFT: u32 = 60;

/// One vehicle's name and ground truth.
pub type Track<'a> = (&'a str, &'a [TrackSample]);

/// Any failure to draw (plotters' errors, which name the backend's).
type DrawResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Writes the picture of `flight` (its map, the vehicles' ground truth and its collisions) to `dir/flight.png`.
pub fn write(dir: &Path, flight: &Flight) -> anyhow::Result<()> {
    let hits: Vec<[f64; 3]> = flight.collisions().map(|e| e.point_hit).collect();
    let raster = draw(&flight.simulator().map(), &flight.tracks(), &hits)
        .map_err(|e| anyhow::anyhow!("cannot draw the flight's picture: {e}"))?;
    raster.write_png(&dir.join("flight.png"))?;
    Ok(())
}

/// The flight picture's raster (see the module's doc).
pub fn draw(map: &MapView, tracks: &[Track], collisions: &[[f64; 3]]) -> DrawResult<Raster> {
    super::register_font();
    let mut raster = Raster::new(SIZE.0, SIZE.1);
    {
        let root = BitMapBackend::with_buffer(&mut raster.rgb, SIZE).into_drawing_area();
        root.fill(&BACKGROUND)?;
        let (top, bottom) = root.split_vertically(TOP_H);
        let (lo, hi) = extent(map, tracks);
        top_view(
            &top.margin(10, 10, 10, 10),
            map,
            (lo, hi),
            tracks,
            collisions,
        )?;
        let t_end = tracks
            .iter()
            .filter_map(|(_, t)| t.last().map(|x| x.0))
            .fold(1.0, f64::max);
        let series = |value: &dyn Fn(&TrackSample) -> f64| -> Vec<Vec<(f64, f64)>> {
            tracks
                .iter()
                .map(|(_, t)| t.iter().map(|x| (x.0, value(x))).collect())
                .collect()
        };
        let (alt, speed) = bottom.split_vertically(160);
        let altitude = series(&|x| x.1.translation.vector.z);
        panel(&alt, "altitude (m)", &altitude, t_end, None)?;
        let speeds = series(&|x| x.2.norm());
        panel(&speed, "speed (m/s)", &speeds, t_end, Some("time (s)"))?;
        root.present()?;
    }
    Ok(raster)
}

/// The box of the map's buckets and of the tracks (a unit box where that has no area).
fn extent(map: &MapView, tracks: &[Track]) -> (Vector3<f64>, Vector3<f64>) {
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
    (lo, hi)
}

/// The top view's axis ranges for a box of `w` x `h` pixels: one scale for both axes, the largest at which
/// `lo..hi` fits, and the extent centred in the box (a tall map in a wide box stands in its middle). Returns the
/// ranges and the scale, pixels per metre.
fn fit(
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    (w, h): (u32, u32),
) -> (std::ops::Range<f64>, std::ops::Range<f64>, f64) {
    let (w, h) = (w as f64, h as f64);
    let s = (w / (hi.x - lo.x)).min(h / (hi.y - lo.y));
    let (cx, cy) = (0.5 * (lo.x + hi.x), 0.5 * (lo.y + hi.y));
    let (rx, ry) = (0.5 * w / s, 0.5 * h / s);
    (cx - rx..cx + rx, cy - ry..cy + ry, s)
}

/// The map from above, grey by height from `lo.z` (dark) to `hi.z` (light), the paths, the collisions, a
/// scale bar at the bottom left and the legend at the top right.
fn top_view<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    map: &MapView,
    (lo, hi): (Vector3<f64>, Vector3<f64>),
    tracks: &[Track],
    collisions: &[[f64; 3]],
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    let (xr, yr, s) = fit(lo, hi, area.dim_in_pixel());
    let mut chart = ChartBuilder::on(area).build_cartesian_2d(xr, yr)?;
    let o = Vector3::from(map.origin);
    let step = (map.positions.len() / 400_000).max(1);
    let dz = (hi.z - lo.z).max(1e-6);
    chart.draw_series(map.positions.iter().step_by(step).map(|p| {
        let v = o + Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64);
        let g = (60.0 + 170.0 * ((v.z - lo.z) / dz).clamp(0.0, 1.0)) as u8;
        Pixel::new((v.x, v.y), RGBColor(g, g, g))
    }))?;
    for (i, (name, t)) in tracks.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path = t.iter().map(|x| (x.1.translation.x, x.1.translation.y));
        chart
            .draw_series(LineSeries::new(path, colour.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 2), (x + 24, y + 2)], colour.filled()));
    }
    if !collisions.is_empty() {
        let cross = |(x, y): (f64, f64)| Cross::new((x, y), 6, COLLISION.stroke_width(2));
        chart
            .draw_series(collisions.iter().map(|p| cross((p[0], p[1]))))?
            .label("collision")
            .legend(|(x, y)| Cross::new((x + 12, y), 6, COLLISION.stroke_width(2)));
    }
    // A row of the legend with no line: how to read the view.
    chart
        .draw_series(std::iter::empty::<Pixel<(f64, f64)>>())?
        .label("top view: x right, y up");
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .legend_area_size(32)
        .background_style(BACKGROUND)
        .border_style(GRID)
        .label_font((FONT, 20).into_font().color(&TEXT))
        .draw()?;
    scale_bar(area, s)
}

/// A bar of a round length at the bottom left of the top view, `s` pixels per metre.
fn scale_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, s: f64) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    let metres = nice_step(200.0 / s, 1.0);
    let (_, h) = area.dim_in_pixel();
    let (x, y) = (10, h as i32 - 14);
    let len = (metres * s) as i32;
    area.draw(&Rectangle::new(
        [(x - 4, y - 26), (x + len + 4, y + 10)],
        BACKGROUND.filled(),
    ))?;
    let line = TEXT.stroke_width(2);
    area.draw(&PathElement::new(vec![(x, y), (x + len, y)], line))?;
    area.draw(&PathElement::new(vec![(x, y - 5), (x, y + 5)], line))?;
    area.draw(&PathElement::new(
        vec![(x + len, y - 5), (x + len, y + 5)],
        line,
    ))?;
    let text = format!("{} m", label(metres, metres));
    area.draw(&Text::new(
        text,
        (x + 4, y - 24),
        (FONT, 20).into_font().color(&TEXT),
    ))?;
    Ok(())
}

/// Lines of (t, value) over `0..t_end` under a title, with labelled grid lines at round steps of time and value
/// (the value axis rounded out to its steps); `time_label` names the time axis under the panel.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &[Vec<(f64, f64)>],
    t_end: f64,
    time_label: Option<&str>,
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (_, v) in lines.iter().flatten() {
        lo = lo.min(*v);
        hi = hi.max(*v);
    }
    if !(lo < hi) {
        (lo, hi) = (lo.min(0.0) - 0.5, hi.max(0.0) + 0.5);
    }
    let v_step = nice_step(hi - lo, 4.0);
    let (lo, hi) = (
        (lo / v_step).floor() * v_step,
        (hi / v_step).ceil() * v_step,
    );
    let mut chart = ChartBuilder::on(area)
        .margin_top(30)
        .margin_right(20)
        .x_label_area_size(if time_label.is_some() { 40 } else { 20 })
        .y_label_area_size(PANEL_LEFT)
        .build_cartesian_2d(0.0..t_end, lo..hi)?;
    let small = (FONT, 14).into_font().color(&TEXT);
    let t_step = nice_step(t_end, 12.0);
    let t_label = |t: &f64| label(*t, t_step);
    let v_label = |v: &f64| label(*v, v_step);
    chart
        .configure_mesh()
        .x_labels(((t_end / t_step).floor() as usize + 1).max(2))
        .y_labels(((hi - lo) / v_step).round() as usize + 1)
        .x_label_formatter(&t_label)
        .y_label_formatter(&v_label)
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(GRID)
        .label_style(small.clone())
        .x_desc(time_label.unwrap_or(""))
        .axis_desc_style(small)
        .draw()?;
    for (i, l) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart.draw_series(LineSeries::new(l.iter().copied(), colour.stroke_width(2)))?;
    }
    area.draw(&Text::new(
        title.to_string(),
        (PANEL_LEFT as i32 + 6, 6),
        (FONT, 20).into_font().color(&TEXT),
    ))?;
    Ok(())
}

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

    /// A floor of 10 x 100 points, 0.5 m apart.
    fn tall_map() -> aerie_pipeline::map::PackedMap {
        let positions: Vec<[f32; 3]> = (0..2000)
            .map(|i| [(i % 10) as f32 * 0.5, (i / 10) as f32 * 0.5, 0.0])
            .collect();
        let cloud = aerie_pipeline::Cloud::from_positions([0.0; 3], positions);
        aerie_pipeline::map::PackedMap::from_cloud(&cloud, 0.5, None).unwrap()
    }

    /// A track climbing along the map's long side at 1 m/s, sampled at 10 Hz for `seconds`.
    fn climb(x: f64, seconds: f64) -> Vec<TrackSample> {
        (0..=(seconds * 10.0) as usize)
            .map(|i| {
                let t = i as f64 / 10.0;
                let p = nalgebra::Isometry3::translation(x, 5.0 + t, 0.5 * t);
                (t, p, Vector3::new(0.0, 1.0, 0.5))
            })
            .collect()
    }

    /// A map far taller than wide stands in the middle of the top view's box, where the flight picture of the
    /// hall (47 x 66 m in a 1180 x 640 box) used to hug the left edge with two thirds of the box empty.
    #[test]
    fn a_tall_map_is_drawn_in_the_middle_of_the_top_view() {
        let r = draw(&tall_map().view(), &[], &[]).unwrap();
        // Above the scale bar (bottom left) and left of the legend (top right): the map's grey pixels.
        let columns: Vec<u32> = (60..590)
            .flat_map(|y| (0..800).map(move |x| (x, y)))
            .filter(|&(x, y)| r.get(x, y).is_some_and(|p| p[0] > 40 && p[0] == p[2]))
            .map(|(x, _)| x)
            .collect();
        let (lo, hi) = (columns.iter().min().unwrap(), columns.iter().max().unwrap());
        let middle = 0.5 * (lo + hi) as f64;
        assert!(
            (middle - 600.0).abs() < 20.0,
            "map drawn over columns {lo}..{hi}"
        );
    }

    /// The picture of two vehicles and a collision is written as a 1200 x 1000 RGB PNG holding each vehicle's
    /// colour, the collision's red and text.
    #[test]
    fn the_flight_picture_is_written_with_its_paths_collision_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (climb(1.0, 20.0), climb(3.5, 12.0));
        let tracks: Vec<Track> = vec![("uav1", &a), ("uav2", &b)];
        let r = draw(&tall_map().view(), &tracks, &[[3.5, 10.0, 2.5]]).unwrap();
        let path = dir.path().join("flight.png");
        r.write_png(&path).unwrap();

        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!((info.width, info.height), SIZE);
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(&rgb[..info.buffer_size()], &r.rgb[..]);
        let count = |c: RGBColor| r.rgb.chunks(3).filter(|p| *p == [c.0, c.1, c.2]).count();
        // Each path in the top view and in both panels, and the legend's swatches.
        assert!(count(COLOURS[0]) > 500, "{}", count(COLOURS[0]));
        assert!(count(COLOURS[1]) > 300, "{}", count(COLOURS[1]));
        assert!(count(COLLISION) > 20, "{}", count(COLLISION));
        assert!(count(TEXT) > 500, "{}", count(TEXT));
        // To look at it: AERIE_SCREENSHOT_DIR=DIR cargo test --bin aerie plots.
        if let Some(keep) = std::env::var_os("AERIE_SCREENSHOT_DIR").map(std::path::PathBuf::from) {
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::copy(&path, keep.join("flight_two_vehicles.png")).unwrap();
        }
    }
}
