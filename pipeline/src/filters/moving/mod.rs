//! `filters.moving`: remove what moved while a map was scanned (people, vehicles, the operator) by the free
//! space the scans saw.
//!
//! Why free space: a walking person is dense in the accumulated map, so statistical outlier removal cannot
//! touch them, but every scan taken after they left looked through the place they stood. The method is
//! free-space carving over a voxel grid, the family of DUFOMap (Duberg et al., RA-L 2024), which leads the
//! KTH-RPL DynamicMap_Benchmark: a voxel that some scan's ray crossed is empty space at that scan's time, so a
//! point found in it is dynamic ("seen empty once is free"). Static structure survives through four guards:
//! - each ray stops carving `noise_margin_m` (plus `footprint_rad` per metre of range) short of its hit, so
//!   range noise and the thickness of a registered surface never carve the surface itself;
//! - a scan never frees the voxels within `protect_voxels` of its own hits (DUFOMap's d_p);
//! - a voxel whose points form a plane is freed only by a ray that passes through that plane inside it, so a ray
//!   grazing the ground or a wall frees nothing (`planes.rs`);
//! - a crossed voxel is freed only when the same scan saw nearly all its neighbours free (DUFOMap's void test,
//!   relaxed: `max_unseen_neighbours`), so pose error, windows and thin frames of a real fused map survive
//!   (`seen.rs`);
//! - a voxel that many scans hit must be seen free by a share of them (`min_free_share`), so that one scan
//!   slipping past a beam or a window frame does not outvote the many that hit it.
//!
//! The stage streams over the scans: memory is the grid (1.5 bits per voxel of the bounding box, 22 bytes per
//! occupied voxel), not the number of scans. Each scan's rays run on rayon; each voxel's votes are counts of
//! scans, decided per scan after all its rays, so the result is the same whatever the thread count or order.
//!
//! Inputs: the cloud and where each point was seen from ([`Viewpoints`]: the cloud's scans with their poses,
//! or a per-point scan index with a poses file, see [`crate::io::poses`]). Without poses the stage fails with
//! [`MovingError::NoPoses`]; poses that do not fit the points (sensors outside the map, points behind the
//! sensor, rays through the scan's own surfaces) are reported as warnings.

mod carve;
mod grid;
mod planes;
mod seen;
mod sources;
mod views;

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use sources::{DEFAULT_SLICE_S, PoseSource, attach_viewpoints, viewpoints};
pub use views::{Viewpoints, attach_scans};

use carve::{Margins, carve_scan};
use grid::VoxelGrid;

use super::{CHUNK, check_cancel, check_cloud};
use crate::cloud::Cloud;
use crate::error::Error;
use crate::progress::Progress;
use crate::report::StageReport;

/// Parameters of `filters.moving`. The defaults are DUFOMap's paper settings (resolution 0.1 m, d_s 0.2 m,
/// d_p 1), which measured best on Aerie's simulated sequences as well (docs/benchmarks.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MovingParams {
    /// Voxel edge, metres, > 0. Default: 0.1.
    pub voxel_m: f64,
    /// How far short of its hit a ray stops carving, metres (range noise, surface thickness). Default: 0.2.
    pub noise_margin_m: f64,
    /// Additional stop distance per metre of range, radians (beam divergence and pose error). Default: 0.
    pub footprint_rad: f64,
    /// Voxels around a scan's hits that the same scan never frees. Default: 1.
    pub protect_voxels: u32,
    /// Rays longer than this carve nothing (their hits still count), metres. Default: none.
    pub max_range_m: Option<f64>,
    /// Free a voxel whose points form a plane only when a ray crosses that plane (not when it grazes it).
    /// Default: true.
    pub plane_test: bool,
    /// A voxel a ray crossed is freed only when the same scan saw at most this many of its 26 neighbours
    /// unfree (DUFOMap's void test is 0). Default: 8.
    pub max_unseen_neighbours: u32,
    /// Half thickness of a voxel's plane layer beyond the plane's own (twice its RMS thickness), metres: a ray
    /// frees the voxel only by passing through the whole layer. Default: 0.02.
    pub plane_tolerance_m: f64,
    /// A voxel that many scans hit must be seen free by at least this share of them (rounded up; always at
    /// least one scan), so that the few scans whose rays slip past a thin static structure (a beam, a window
    /// frame) through pose error and the beam's footprint do not outvote the many that hit it. 0 is DUFOMap's
    /// "seen free once". Default: 0.1.
    pub min_free_share: f64,
}

impl Default for MovingParams {
    fn default() -> Self {
        MovingParams {
            voxel_m: 0.1,
            noise_margin_m: 0.2,
            footprint_rad: 0.0,
            protect_voxels: 1,
            max_range_m: None,
            max_unseen_neighbours: 8,
            plane_test: true,
            plane_tolerance_m: 0.02,
            min_free_share: 0.1,
        }
    }
}

impl MovingParams {
    /// Check the values that do not depend on the data.
    pub fn validate(&self) -> Result<(), MovingError> {
        let bad = |name: &str, v: f64| MovingError::Parameter {
            name: format!("filters.moving.{name}"),
            message: format!("{v} is out of range"),
        };
        if !(self.voxel_m.is_finite() && self.voxel_m > 0.0) {
            return Err(bad("voxel_m", self.voxel_m));
        }
        if !(self.noise_margin_m.is_finite() && self.noise_margin_m >= 0.0) {
            return Err(bad("noise_margin_m", self.noise_margin_m));
        }
        if !(self.footprint_rad.is_finite() && (0.0..1.0).contains(&self.footprint_rad)) {
            return Err(bad("footprint_rad", self.footprint_rad));
        }
        if !(0.0..=1.0).contains(&self.min_free_share) {
            return Err(bad("min_free_share", self.min_free_share));
        }
        if self.max_unseen_neighbours > 26 {
            return Err(bad(
                "max_unseen_neighbours",
                f64::from(self.max_unseen_neighbours),
            ));
        }
        if self.protect_voxels > 8 {
            return Err(bad("protect_voxels", f64::from(self.protect_voxels)));
        }
        if let Some(r) = self.max_range_m
            && (r.is_nan() || r <= 0.0)
        {
            return Err(bad("max_range_m", r));
        }
        Ok(())
    }
}

/// What can stop `filters.moving`.
#[derive(Debug, thiserror::Error)]
pub enum MovingError {
    /// The cloud does not say where its points were seen from.
    #[error(
        "filters.moving needs the pose each scan was taken from, but the cloud has {scans} scans, {without_pose} \
         without a pose; give scan poses (E57 scan poses, PCD VIEWPOINT per file) or a poses file (TUM, KITTI, \
         poses.csv) with each point's scan (e.g. LAS point_source_id)"
    )]
    NoPoses {
        /// Scans the cloud lists.
        scans: usize,
        /// Of those, scans without a pose.
        without_pose: usize,
    },
    /// A point names a scan the poses do not have.
    #[error(
        "point {point} belongs to scan {scan}, but only {poses} poses were given (scans 0..{poses})"
    )]
    PointWithoutPose {
        /// Index of the first such point.
        point: usize,
        /// Its scan index.
        scan: u32,
        /// Number of poses.
        poses: usize,
    },
    /// The scans' point ranges no longer cover the cloud (points were reordered after reading).
    #[error(
        "the scans' point ranges cover {covered} of {points} points (the points were reordered); give a per-point \
         scan index instead"
    )]
    ScanRanges {
        /// Points the ranges cover.
        covered: usize,
        /// Points in the cloud.
        points: usize,
    },
    /// A time slice of an accumulated map lies outside the trajectory's span.
    #[error(
        "points at time {time:.3} s lie outside the trajectory's span ({first:.3} to {last:.3} s); the points' \
         times and the trajectory's stamps must be on the same clock and cover the same run"
    )]
    TimesNotCovered {
        /// The slice's time, seconds.
        time: f64,
        /// The trajectory's first stamp (NaN when it has none).
        first: f64,
        /// Its last stamp.
        last: f64,
    },
    /// A poses file does not fit the points it was given for.
    #[error("{}: {message}", path.display())]
    Poses {
        /// The poses file.
        path: std::path::PathBuf,
        /// What does not fit, and what was expected.
        message: String,
    },
    /// One input of several does not say where its points were seen from.
    #[error("{}: {inner}", file.display())]
    Input {
        /// The input file.
        file: std::path::PathBuf,
        /// What is missing in it.
        inner: Box<MovingError>,
    },
    /// The grid over the points' bounds would be too large.
    #[error(
        "the points span {voxels} voxels of {voxel_m} m, more than the grid allows; crop the cloud (stray points far \
         away?) or use a larger filters.moving.voxel_m"
    )]
    GridTooLarge {
        /// Voxels needed.
        voxels: u128,
        /// The voxel edge, metres.
        voxel_m: f64,
    },
    /// A parameter is out of range.
    #[error("invalid {name}: {message}")]
    Parameter {
        /// The parameter, as a recipe names it.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The cloud itself is unusable (non-finite), or the user cancelled.
    #[error(transparent)]
    Pipeline(#[from] Error),
}

impl MovingError {
    /// Whether the error is in what the user gave (files, poses, parameters) rather than the machine failing.
    pub fn is_bad_input(&self) -> bool {
        match self {
            MovingError::Pipeline(e) => e.is_bad_input(),
            MovingError::Input { inner, .. } => inner.is_bad_input(),
            _ => true,
        }
    }

    /// Whether the error says that no poses were given at all (what a front end adds its own hint to).
    pub fn is_missing_poses(&self) -> bool {
        match self {
            MovingError::NoPoses { .. } => true,
            MovingError::Input { inner, .. } => inner.is_missing_poses(),
            _ => false,
        }
    }
}

impl From<MovingError> for Error {
    fn from(e: MovingError) -> Error {
        match e {
            MovingError::Pipeline(e) => e,
            MovingError::Parameter { name, message } => Error::parameter(name, message),
            e => Error::parameter("filters.moving", e.to_string()),
        }
    }
}

/// Share of rays crossing their own scan's surfaces in their first half above which the poses are reported as not
/// fitting the points. Right poses are not near 0 everywhere: porous vegetation and thin edges, which a scan sees
/// through between its own hits, give the demo's correctly posed terrestrial scan of a forest 22%; a sensor placed
/// elsewhere than where it scanned sees through its own surfaces on most rays.
const SELF_CROSSING_WARNING: f64 = 0.5;

/// The classification of every point, before anything is removed (what the app previews).
#[derive(Clone, Debug, PartialEq)]
pub struct MovingMask {
    /// Per point: true where the point lies in space some scan saw free.
    pub dynamic: Vec<bool>,
    /// Counts and warnings, for the stage's report.
    pub stats: MovingStats,
}

/// Figures of one run of the classification.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MovingStats {
    /// Scans carved.
    pub scans: usize,
    /// Rays walked.
    pub rays: u64,
    /// Occupied voxels of the grid.
    pub voxels_occupied: usize,
    /// Of those, voxels some scan saw free.
    pub voxels_free: u64,
    /// Points in free voxels.
    pub points_dynamic: usize,
    /// Fraction of rays that crossed their own scan's surfaces in their first half (near 0 with right poses).
    pub self_crossing_fraction: f64,
    /// Sentences for the user when the poses look wrong.
    pub warnings: Vec<String>,
}

/// Classify every point of `cloud` as dynamic (in free space some scan saw) or not.
pub fn moving_mask(
    cloud: &Cloud,
    views: &Viewpoints,
    params: &MovingParams,
    progress: &dyn Progress,
) -> Result<MovingMask, MovingError> {
    params.validate()?;
    check_cloud(cloud)?;
    let mut stats = MovingStats {
        scans: views.len(),
        warnings: views::pose_warnings(cloud, views),
        ..MovingStats::default()
    };
    let Some(mut grid) = build_grid(cloud, params)? else {
        return Ok(MovingMask {
            dynamic: Vec::new(),
            stats,
        });
    };
    stats.voxels_occupied = grid.seal();
    let planes = if params.plane_test {
        planes::fit_planes(&grid, cloud.positions(), params.plane_tolerance_m)
    } else {
        vec![planes::Plane::NONE; stats.voxels_occupied]
    };
    let margins = Margins {
        noise_m: params.noise_margin_m,
        footprint_rad: params.footprint_rad,
        protect_voxels: i64::from(params.protect_voxels),
        max_range_m: params.max_range_m.unwrap_or(f64::INFINITY),
        max_unseen: params.max_unseen_neighbours as usize,
    };
    let seen = seen::Seen::new(&grid);
    let hits = carve::count_hits(&grid, views.len(), &|s| views.count(s), &|s, k| {
        cloud.positions()[views.point(s, k)].map(f64::from)
    });
    grid.reset_hits();
    let share = params.min_free_share;
    grid.set_need(
        hits.iter()
            .map(|&h| ((share * f64::from(h)).ceil() as u32).max(1))
            .collect(),
    );
    progress.stage("filters.moving", views.len() as u64);
    let mut crossings = 0;
    for s in 0..views.len() {
        check_cancel(progress)?;
        let t = views.pose(s).translation.vector - nalgebra::Vector3::from(cloud.origin);
        let local = |k: usize| cloud.positions()[views.point(s, k)].map(f64::from);
        let scan = carve::ScanRays {
            index: s as u32,
            origin: t.into(),
            count: views.count(s),
            point: &local,
        };
        let r = carve_scan(&grid, &scan, &planes, &seen, &margins);
        stats.rays += r.rays;
        stats.voxels_free += r.freed;
        crossings += r.self_crossings;
        progress.advance(1);
    }
    stats.self_crossing_fraction = crossings as f64 / stats.rays.max(1) as f64;
    if stats.self_crossing_fraction > SELF_CROSSING_WARNING {
        stats.warnings.push(format!(
            "filters.moving: {:.0}% of the rays pass through their own scan's surfaces; the poses do not fit the \
             points (inverted, another frame, or another axis convention?)",
            100.0 * stats.self_crossing_fraction
        ));
    }
    let dynamic: Vec<bool> = cloud
        .positions()
        .par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            chunk.iter().map(|p| {
                grid.cell_of(p.map(f64::from))
                    .and_then(|c| grid.id(c))
                    .is_some_and(|id| grid.is_free(id))
            })
        })
        .collect();
    stats.points_dynamic = dynamic.iter().filter(|&&d| d).count();
    Ok(MovingMask { dynamic, stats })
}

/// The grid over the cloud's bounds with its points marked; `None` for an empty cloud. When stray points far
/// away make the whole box too large, the grid covers the box of the central 99.8% of the points on each axis
/// (grown by 5% and 1 m): points outside it are never classified dynamic (they are kept).
fn build_grid(cloud: &Cloud, params: &MovingParams) -> Result<Option<VoxelGrid>, MovingError> {
    if cloud.is_empty() {
        return Ok(None);
    }
    let (lo, hi) = extent(cloud.positions(), 0.0);
    let grid = match VoxelGrid::new(lo, hi, params.voxel_m) {
        Ok(g) => g,
        Err(_) => {
            let (lo, hi) = extent(cloud.positions(), 0.001);
            VoxelGrid::new(lo, hi, params.voxel_m).map_err(|e| MovingError::GridTooLarge {
                voxels: e.voxels,
                voxel_m: params.voxel_m,
            })?
        }
    };
    let mut grid = grid;
    grid.occupy(cloud.positions());
    Ok(Some(grid))
}

/// The box of the points (local metres) between the `q` and `1 - q` quantiles on each axis (all of them for
/// `q` 0), grown by 5% and 1 m when `q` > 0. Quantiles come from every k-th point, so the box is deterministic.
fn extent(positions: &[[f32; 3]], q: f64) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    if q <= 0.0 {
        for p in positions {
            for a in 0..3 {
                lo[a] = lo[a].min(f64::from(p[a]));
                hi[a] = hi[a].max(f64::from(p[a]));
            }
        }
        return (lo, hi);
    }
    let step = positions.len().div_ceil(200_000).max(1);
    for a in 0..3 {
        let mut v: Vec<f32> = positions.iter().step_by(step).map(|p| p[a]).collect();
        v.sort_unstable_by(f32::total_cmp);
        let at = |f: f64| f64::from(v[((v.len() - 1) as f64 * f).round() as usize]);
        let (l, h) = (at(q), at(1.0 - q));
        let grow = 0.05 * (h - l) + 1.0;
        lo[a] = l - grow;
        hi[a] = h + grow;
    }
    (lo, hi)
}

/// `filters.moving` on a cloud whose scans carry poses (`meta.scans`): removes the dynamic points and reports
/// how many, by reason.
pub fn remove_moving(
    cloud: &Cloud,
    params: &MovingParams,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport), MovingError> {
    let views = Viewpoints::from_scans(cloud)?;
    remove_moving_with(cloud, &views, params, progress)
}

/// [`remove_moving`] with the viewpoints given (e.g. from a per-point scan index and a poses file).
pub fn remove_moving_with(
    cloud: &Cloud,
    views: &Viewpoints,
    params: &MovingParams,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport), MovingError> {
    let started = Instant::now();
    let mask = moving_mask(cloud, views, params, progress)?;
    Ok(apply_mask(cloud, &mask, params, started))
}

/// The cloud without the points `mask` classified dynamic, and the stage's report (`started`: when the
/// classification began, for the report's time). [`remove_moving_with`] is [`moving_mask`] then this; a caller
/// that also needs the mask (the demo scores it against labels) classifies once and applies it here.
pub fn apply_mask(
    cloud: &Cloud,
    mask: &MovingMask,
    params: &MovingParams,
    started: Instant,
) -> (Cloud, StageReport) {
    let mut report = StageReport::new("filters.moving", cloud.len());
    let keep: Vec<usize> = (0..cloud.len()).filter(|&i| !mask.dynamic[i]).collect();
    let out = views::keep_subset(cloud, &keep);
    let s = &mask.stats;
    report
        .removed
        .push(("seen_through".to_string(), s.points_dynamic));
    report.figure("scans", s.scans as f64);
    report.figure("rays", s.rays as f64);
    report.figure("voxels_occupied", s.voxels_occupied as f64);
    report.figure("voxels_free", s.voxels_free as f64);
    report.figure("self_crossing_fraction", s.self_crossing_fraction);
    report.figure("voxel_m", params.voxel_m);
    report.warnings.extend(s.warnings.iter().cloned());
    report.finish(out.len(), started);
    (out, report)
}
