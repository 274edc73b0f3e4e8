//! The simulated terrestrial laser scan of the demo site, with the artefacts real scans have.
//!
//! Each station turns once: a column per azimuth step, each column a vertical sweep of beams one step apart
//! (the grid of [`Scanner`]), so density falls with range. A beam returns from the first surface it meets,
//! if the LiDAR equation lets it (reflectance times the cosine of incidence against the square of the range),
//! at the exact range plus Gaussian noise growing with range, with an intensity from the reflectance and
//! the incidence. Then the artefacts:
//! - stray outliers: a small share of beams return from a random point in the air (at least
//!   [`OUTLIER_CLEARANCE_M`] from every surface) before the surface (or before the maximum range, for beams into
//!   the sky);
//! - mixed points: a beam next to a silhouette (its neighbour hit something else, more than a set depth away)
//!   straddles it with some chance and returns a range between the two sides, as the echoes of both merge.
//!   A depth jump alone is no silhouette: neighbouring beams on ground seen at a grazing angle are metres
//!   apart in range yet hit one continuous surface;
//! - a person walks through: the cylinder is placed where the person is at each beam's own time, so the
//!   stations that scan while they walk record a smeared, cut figure, and the others none.
//!
//! Two passes per station: exact ranges of every beam (parallel over columns), then the artefacts, which look
//! at the neighbouring beams' ranges (parallel over columns again). Every random draw comes from the beam's own
//! counter-based stream (seed, station, beam), so the scan is identical whatever the number of threads.

use std::f64::consts::TAU;

use aerie_pipeline::{Cloud, Columns, ExtraDim, ScanInfo};
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
use rayon::prelude::*;

use super::site::{DemoSite, Label, Station, Target, turn, wrap_angle};
use super::spec::ScanSpec;
use crate::rng::BeamRng;
use crate::scene::Scanner;

/// Azimuth bins of the per-station object lists (objects are tested only for beams in bins they can reach).
const AZIMUTH_BINS: usize = 1440;
/// `frame` of the scan's random streams: distinct from the layout's.
const STREAM_SCAN: u64 = 1 << 20;
/// Outliers lie at least this far from the scanner, metres.
const OUTLIER_MIN_RANGE_M: f64 = 1.0;
/// Outliers lie at least this far from every static surface, metres: points in the air, not a rough surface.
pub const OUTLIER_CLEARANCE_M: f64 = 1.0;

/// The exact return of one beam, before artefacts.
#[derive(Clone, Copy, Debug)]
struct Echo {
    range_m: f64,
    /// What was hit (an edge lies between beams that hit different things).
    target: Target,
    label: Label,
    /// Reflectance times the cosine of incidence: what the intensity is made from.
    strength: f64,
}

/// One point of the scan.
#[derive(Clone, Copy, Debug)]
struct Point {
    world: [f64; 3],
    intensity: f32,
    time_s: f64,
    label: Label,
}

/// The scan of one station: its points in beam order.
pub(crate) struct StationScan {
    points: Vec<Point>,
    pub(crate) beams: u64,
}

/// An object a station can see: its index and the elevations its bounding sphere covers, radians.
#[derive(Clone, Copy)]
struct Candidate {
    index: usize,
    el_lo: f64,
    el_hi: f64,
}

/// Beam geometry of one station.
struct Grid<'a> {
    spec: &'a ScanSpec,
    station: &'a Station,
    scanner: Scanner,
    n_az: u64,
    n_el: u64,
    bins: Vec<Vec<Candidate>>,
}

impl Grid<'_> {
    fn direction(&self, i: u64, j: u64) -> [f64; 3] {
        let d = self.scanner.direction(self.n_az, i, j);
        let h = turn([d[0], d[1]], self.station.yaw_rad);
        [h[0], h[1], d[2]]
    }

    /// Scan time of beam (i, j): columns follow each other through the turn, rows within a column.
    fn time(&self, i: u64, j: u64) -> f64 {
        let column_s = self.spec.duration / self.n_az as f64;
        self.station.start_s + (i as f64 + j as f64 / self.n_el as f64) * column_s
    }

    fn elevation(&self, j: u64) -> f64 {
        self.spec.elevation[0].to_radians() + j as f64 * self.scanner.step_rad
    }
}

/// Scan `site` from station `k`.
pub(crate) fn scan_station(site: &DemoSite, spec: &ScanSpec, k: usize, seed: u64) -> StationScan {
    let station = &site.stations[k];
    let mut scanner = Scanner::new(station.position_m, spec.step.to_radians());
    scanner.elevation_rad = spec.elevation[0].to_radians()..spec.elevation[1].to_radians();
    scanner.max_range_m = spec.max_range;
    let Some((n_az, n_el)) = scanner.grid() else {
        return StationScan {
            points: Vec::new(),
            beams: 0,
        };
    };
    let bins = candidate_bins(site, station);
    let grid = Grid {
        spec,
        station,
        scanner,
        n_az,
        n_el,
        bins,
    };
    let echoes: Vec<Vec<Option<Echo>>> = (0..n_az)
        .into_par_iter()
        .map(|i| (0..n_el).map(|j| echo(site, &grid, i, j)).collect())
        .collect();
    let points: Vec<Point> = (0..n_az)
        .into_par_iter()
        .map(|i| artefacts(site, &grid, &echoes, i, seed, k as u64))
        .collect::<Vec<_>>()
        .concat();
    StationScan {
        points,
        beams: n_az * n_el,
    }
}

/// For each azimuth bin of the station, the objects whose bounding sphere some beam of the bin can meet.
fn candidate_bins(site: &DemoSite, station: &Station) -> Vec<Vec<Candidate>> {
    let mut bins = vec![Vec::new(); AZIMUTH_BINS];
    let width = TAU / AZIMUTH_BINS as f64;
    let s = station.position_m;
    for (index, object) in site.objects.iter().enumerate() {
        let (c, r) = object.surface.bounding_sphere();
        let d = [c[0] - s[0], c[1] - s[1], c[2] - s[2]];
        let (horizontal, dist) = (
            d[0].hypot(d[1]),
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt(),
        );
        let (el_lo, el_hi) = if dist > r {
            let (el, half) = (d[2].atan2(horizontal), (r / dist).asin());
            (el - half, el + half)
        } else {
            (f64::NEG_INFINITY, f64::INFINITY)
        };
        let candidate = Candidate {
            index,
            el_lo,
            el_hi,
        };
        if horizontal <= r {
            bins.iter_mut().for_each(|b| b.push(candidate));
            continue;
        }
        let az = wrap_angle(d[1].atan2(d[0]) - station.yaw_rad);
        let half = (r / horizontal).asin();
        let first = ((az - half) / width).floor() as i64;
        let last = ((az + half) / width).floor() as i64;
        for b in first..=last {
            bins[b.rem_euclid(AZIMUTH_BINS as i64) as usize].push(candidate);
        }
    }
    bins
}

/// The exact return of beam (i, j), if the surface it meets is detected.
fn echo(site: &DemoSite, grid: &Grid<'_>, i: u64, j: u64) -> Option<Echo> {
    let u = grid.direction(i, j);
    let el = grid.elevation(j);
    let bin = (i as usize * AZIMUTH_BINS) / grid.n_az as usize;
    let candidates = grid.bins[bin.min(AZIMUTH_BINS - 1)]
        .iter()
        .filter(|c| (c.el_lo..=c.el_hi).contains(&el))
        .map(|c| c.index);
    let o = grid.station.position_m;
    let hit = site.raycast_among(candidates, o, u, grid.spec.max_range, grid.time(i, j))?;
    let (label, reflectance) = site.label_and_reflectance(hit.target);
    let cos = Vector3::from(hit.normal).dot(&Vector3::from(u)).abs();
    let strength = reflectance * cos;
    // The LiDAR equation for an extended target: received power ~ strength / range^2.
    let detected = hit.range_m <= grid.spec.detect_range * strength.sqrt();
    detected.then_some(Echo {
        range_m: hit.range_m,
        target: hit.target,
        label,
        strength,
    })
}

/// The points of column `i`: noise, outliers and mixed ranges applied to its echoes.
fn artefacts(
    site: &DemoSite,
    grid: &Grid<'_>,
    echoes: &[Vec<Option<Echo>>],
    i: u64,
    seed: u64,
    station: u64,
) -> Vec<Point> {
    let spec = grid.spec;
    let n_az = grid.n_az as usize;
    let column = &echoes[i as usize];
    let left = &echoes[(i as usize + n_az - 1) % n_az];
    let right = &echoes[(i as usize + 1) % n_az];
    let o = grid.station.position_m;
    let mut out = Vec::new();
    for (j, echo) in column.iter().enumerate() {
        let beam = i * grid.n_el + j as u64;
        let mut rng = BeamRng::new(seed, STREAM_SCAN + station, beam);
        let (g_range, g_intensity) = rng.gaussian_pair();
        let (u_outlier, u_mix, w) = (
            rng.uniform_open0(),
            rng.uniform_open0(),
            rng.uniform_open0(),
        );
        let u = grid.direction(i, j as u64);
        let reach = echo.map_or(spec.max_range, |e| e.range_m);
        let stray = (u_outlier < spec.outlier_share)
            .then(|| stray_range(site, o, u, reach, &mut rng))
            .flatten();
        let (range, label, strength) = if let Some(r) = stray {
            (r, Label::Outlier, 0.02 + 0.1 * u_mix)
        } else if let Some(e) = echo {
            let neighbours = [
                left.get(j),
                right.get(j),
                column.get(j.wrapping_sub(1)),
                column.get(j + 1),
            ];
            match silhouette_jump(
                e,
                neighbours.into_iter().flatten().flatten(),
                spec.edge_jump,
            ) {
                // The footprint covers at most half of the neighbour's side: the echoes merge within that.
                Some(d) if u_mix < spec.mixed_share => {
                    (e.range_m + 0.5 * w * d, Label::Mixed, e.strength)
                }
                _ => (e.range_m, e.label, e.strength),
            }
        } else {
            continue;
        };
        let range = range + (spec.range_sigma + spec.range_sigma_per_m * range) * g_range;
        out.push(Point {
            world: [
                o[0] + u[0] * range,
                o[1] + u[1] * range,
                o[2] + u[2] * range,
            ],
            intensity: (strength * (1.0 + 0.03 * g_intensity)).clamp(0.0, 1.0) as f32,
            time_s: grid.time(i, j as u64),
            label,
        });
    }
    out
}

/// Range of a stray return along the beam (`o`, `u`) before `reach`: a speck in the air, clear of every surface
/// by [`OUTLIER_CLEARANCE_M`], uniform in range. `None` when a few draws find no clear place.
fn stray_range(
    site: &DemoSite,
    o: [f64; 3],
    u: [f64; 3],
    reach: f64,
    rng: &mut BeamRng,
) -> Option<f64> {
    if reach <= 2.0 * OUTLIER_MIN_RANGE_M {
        return None;
    }
    (0..4).find_map(|_| {
        let w = rng.uniform_open0();
        let r = OUTLIER_MIN_RANGE_M + (reach - OUTLIER_MIN_RANGE_M) * w;
        let p = [o[0] + u[0] * r, o[1] + u[1] * r, o[2] + u[2] * r];
        (site.nearest(p).2 >= OUTLIER_CLEARANCE_M).then_some(r)
    })
}

/// The largest depth step from `e` to a neighbour that hit something else, if larger than `edge_jump`: the beam
/// then straddles a silhouette.
fn silhouette_jump<'a>(
    e: &Echo,
    neighbours: impl Iterator<Item = &'a Echo>,
    edge_jump: f64,
) -> Option<f64> {
    neighbours
        .filter(|n| n.target != e.target)
        .map(|n| n.range_m - e.range_m)
        .filter(|d| d.abs() > edge_jump)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()))
}

/// The stations' scans as one cloud (origin at the world origin; intensity 0..1; GPS time in seconds since the
/// first station started; `point_source_id` = station number, 1-based; one [`ScanInfo`] per station with its
/// pose) and each point's label.
pub(crate) fn assemble(site: &DemoSite, scans: Vec<StationScan>) -> (Cloud, Vec<Label>) {
    let n: usize = scans.iter().map(|s| s.points.len()).sum();
    let (mut positions, mut intensity, mut time, mut source, mut labels) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut station_scans = Vec::with_capacity(scans.len());
    for (k, (scan, station)) in scans.into_iter().zip(&site.stations).enumerate() {
        let first = positions.len();
        for p in scan.points {
            positions.push(p.world.map(|v| v as f32));
            intensity.push(p.intensity);
            time.push(p.time_s);
            source.push(u16::try_from(k + 1).unwrap_or(u16::MAX));
            labels.push(p.label);
        }
        station_scans.push(ScanInfo {
            name: format!("station {}", k + 1),
            points: first..positions.len(),
            world_from_scan: Some(Isometry3::from_parts(
                Translation3::from(station.position_m),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), station.yaw_rad),
            )),
        });
    }
    let columns = Columns {
        positions,
        intensity: Some(intensity),
        time: Some(time),
        extra: vec![ExtraDim::new("point_source_id", source)],
        ..Columns::default()
    };
    let mut cloud = Cloud::from_columns([0.0; 3], columns)
        .expect("every point pushes one value onto each column");
    cloud.meta.scans = station_scans;
    (cloud, labels)
}
