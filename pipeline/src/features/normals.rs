//! Normals and plane thickness gamma (`features.normals`), docs/algorithms.md, sections 7 to 9.
//!
//! For each point: its k nearest points (itself included) within a radius; the covariance C of that
//! neighbourhood, in f64, centred on the neighbourhood mean and divided by the number of points; eigenvalues
//! l1 >= l2 >= l3 (closed form, [`sym_eigen3`]). Then
//! - the normal is the eigenvector of l3;
//! - gamma = sqrt(l3), the RMS distance of the neighbours to the fitted plane, metres;
//! - curvature (optional extra dimension "curvature") = l3 / (l1 + l2 + l3);
//! - the surface offset (extra dimension [`SURFACE_OFFSET`]): where the middle of the surface's layer lies
//!   from the point along the normal, found by mean shift from the neighbourhood's centroid plane;
//! - the surface's sampling spacing (extra dimension "spacing", when k >= 7; see [`super::spacing`]), from the
//!   same search: the k nearest are found without the radius and the fit keeps those within it, which are
//!   exactly the k nearest within the radius, while the spacing needs the 7 nearest wherever they lie.
//!
//! A point with fewer than 3 neighbours in range, or whose neighbours are all identical or collinear, has no
//! plane: its normal is stored as [0, 0, 0] (no NaN in files), gamma as +inf (never plane-corrected) and
//! curvature as -1.
//!
//! Orientation, first rule that applies: toward the scanner of the point's scan (a pose in `meta.scans`
//! whose point range holds it), else toward `viewpoint`, else toward the nearest scanner whose pose is known (a
//! voxel downsampling keeps the poses but not which points each scan holds), else up (+z) for near-horizontal surfaces
//! (|n.z| > 0.5, i.e. tilted less than 60 degrees), else away from the cloud's centroid. The report counts the
//! points oriented by each rule.
//!
//! The points come back in the neighbour index's spatial (Morton) order: the index takes the positions
//! instead of a sorted copy, and each result is written straight into its output column in that order, so no
//! array of whole results or second copy of the positions is held at the peak (42 bytes per point against 61
//! when the input order was restored). Scan point ranges are dropped by the reorder (unless one scan holds
//! every point); they have served the orientation by then.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::cloud::{Cloud, ExtraDim, Returned};
use crate::crs;
use crate::error::{Error, Result};
use crate::features::spacing::{self, spacing_of};
use crate::features::{Neighbor, Neighbors};
use crate::filters::{CHUNK, check_cloud};
use crate::progress::Progress;
use crate::report::StageReport;
use crate::tiles::ExactSum;

/// Parameters of `features.normals`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NormalsParams {
    /// Neighbours per point, the point itself included, >= 3. Clamped, with a warning, to the cloud's size.
    /// Default: 16.
    pub k: usize,
    /// Neighbour search radius, metres, > 0. Default: 3 * `resolution_m` when that is given (MARSIM's choice),
    /// else unlimited.
    pub radius_m: Option<f32>,
    /// Map resolution r_map, metres, > 0, used to derive the default radius. Default: none.
    pub resolution_m: Option<f64>,
    /// Position (world coordinates, metres) normals should face when no scan pose covers the point, e.g. the
    /// sensor origin of a single scan. Default: none.
    pub viewpoint: Option<[f64; 3]>,
    /// Store the extra dimension "curvature" = l3 / (l1 + l2 + l3) (dimensionless, 0 for a perfect plane,
    /// -1 where there is no plane). Default: false.
    pub curvature: bool,
    /// Width across a surface's layer of the kernel that finds where the surface lies ([`SURFACE_OFFSET`]),
    /// metres, > 0. Default: 0.03, about twice the RMS thickness of a fused map's layer (1.1-1.6 cm measured
    /// on the hall's 149 scans): it spans the layer, not what lies 10 cm behind it.
    pub surface_bandwidth_m: f32,
}

impl Default for NormalsParams {
    fn default() -> Self {
        NormalsParams {
            k: 16,
            radius_m: None,
            resolution_m: None,
            viewpoint: None,
            curvature: false,
            surface_bandwidth_m: 0.03,
        }
    }
}

/// The extra dimension the normals stage stores each point's surface offset in (metres, f32): how far the
/// surface lies from the point along its (oriented) normal (see [`surface_offset`]), 0 where there is no
/// plane. A map fused from many scans holds a surface as a layer a few centimetres thick, and a voxel
/// downsampling keeps points from anywhere in it; a real sensor sees the surface near the layer's middle
/// (docs/accuracy.md, section 4), so the simulator draws each point's disk there: `p + offset * n`.
pub const SURFACE_OFFSET: &str = "surface_offset";

/// |n.z| above which a surface counts as near-horizontal for the "up" orientation rule (cos 60 degrees).
const HORIZONTAL_MIN_NZ: f64 = 0.5;

/// Eigen-decomposition of a symmetric 3x3 matrix (the upper triangle is read): eigenvalues in decreasing
/// order and the matching unit eigenvectors (`vectors[i]` belongs to `values[i]`), orthonormal.
///
/// Closed form, after D. Eberly, "A Robust Eigensolver for 3x3 Symmetric Matrices" (Geometric Tools, 2014),
/// the method Open3D's normal estimation uses: the eigenvalues from the characteristic cubic in trigonometric
/// form on the scaled, shifted matrix; the eigenvector of the best-separated eigenvalue as the longest cross
/// product of two rows of `A - l I`; the second from the 2x2 problem in its orthogonal complement; the third
/// as their cross product, so the vectors stay orthonormal even for repeated eigenvalues. It replaced cyclic
/// Jacobi rotations, which took a quarter of the normals stage (same accuracy in the unit tests, which check
/// it against Jacobi).
// Plain arrays, not nalgebra: this runs per point in the stage's inner loop, and nalgebra's `SymmetricEigen`
// is iterative, like the Jacobi rotations this closed form replaced.
pub fn sym_eigen3(m: [[f64; 3]; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    // Scale to the largest entry so the cubic's terms neither overflow nor underflow.
    let upper = [m[0][0], m[0][1], m[0][2], m[1][1], m[1][2], m[2][2]];
    let max0 = upper.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    const IDENTITY: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    if !upper.iter().all(|v| v.is_finite()) {
        return ([f64::NAN; 3], IDENTITY);
    }
    if max0 == 0.0 {
        return ([0.0; 3], IDENTITY);
    }
    let [a00, a01, a02, a11, a12, a22] = upper.map(|v| v / max0);
    let a = [[a00, a01, a02], [a01, a11, a12], [a02, a12, a22]];
    let norm = a01 * a01 + a02 * a02 + a12 * a12;
    if norm == 0.0 {
        // Diagonal: the axes.
        let mut order = [0usize, 1, 2];
        order.sort_by(|&i, &j| a[j][j].total_cmp(&a[i][i]));
        return (order.map(|i| a[i][i] * max0), order.map(|i| IDENTITY[i]));
    }
    let q = (a00 + a11 + a22) / 3.0;
    let (b00, b11, b22) = (a00 - q, a11 - q, a22 - q);
    let p = ((b00 * b00 + b11 * b11 + b22 * b22 + 2.0 * norm) / 6.0).sqrt();
    let c00 = b11 * b22 - a12 * a12;
    let c01 = a01 * b22 - a12 * a02;
    let c02 = a01 * a12 - b11 * a02;
    let det = (b00 * c00 - a01 * c01 + a02 * c02) / (p * p * p);
    let half_det = (0.5 * det).clamp(-1.0, 1.0);
    let angle = half_det.acos() / 3.0;
    // cos(angle + 2 pi / 3) from cos and sin of angle (in [0, pi / 3], so sin >= 0): one libm cosine less.
    let (s, c) = angle.sin_cos();
    let beta2 = 2.0 * c;
    let beta0 = -c - 3f64.sqrt() * s;
    let beta1 = -(beta0 + beta2);
    // Increasing: l0 <= l1 <= l2.
    let l = [q + p * beta0, q + p * beta1, q + p * beta2];
    let (v0, v1, v2) = if half_det >= 0.0 {
        let v2 = eigenvector_of_separated(&a, l[2]);
        let v1 = eigenvector_in_complement(&a, v2, l[1]);
        (cross3(v1, v2), v1, v2)
    } else {
        let v0 = eigenvector_of_separated(&a, l[0]);
        let v1 = eigenvector_in_complement(&a, v0, l[1]);
        (v0, v1, cross3(v0, v1))
    };
    // Each eigenvalue as its vector's Rayleigh quotient: second-order accurate, exact where the matrix has an
    // exact eigenvector (a flat neighbourhood's zero), unlike the cubic's cancellation. Then decreasing order.
    let rayleigh = |x: [f64; 3]| dot3(x, [dot3(a[0], x), dot3(a[1], x), dot3(a[2], x)]);
    let mut pairs = [(rayleigh(v2), v2), (rayleigh(v1), v1), (rayleigh(v0), v0)];
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
    (pairs.map(|(l, _)| l * max0), pairs.map(|(_, v)| v))
}

fn cross3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot3(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Unit eigenvector of a simple eigenvalue `l`: `A - l I` has rank 2, and the longest cross product of two of
/// its rows is perpendicular to both.
fn eigenvector_of_separated(a: &[[f64; 3]; 3], l: f64) -> [f64; 3] {
    let r0 = [a[0][0] - l, a[0][1], a[0][2]];
    let r1 = [a[0][1], a[1][1] - l, a[1][2]];
    let r2 = [a[0][2], a[1][2], a[2][2] - l];
    let candidates = [cross3(r0, r1), cross3(r0, r2), cross3(r1, r2)];
    let lens = candidates.map(|c| dot3(c, c));
    let best = (0..3).fold(0, |b, i| if lens[i] > lens[b] { i } else { b });
    let len = lens[best].sqrt();
    if len > 0.0 {
        candidates[best].map(|v| v / len)
    } else {
        [1.0, 0.0, 0.0]
    }
}

/// Unit eigenvector for eigenvalue `l`, perpendicular to the unit eigenvector `w`: the 2x2 problem of `A` in
/// an orthonormal basis (u, v) of the plane perpendicular to `w`.
fn eigenvector_in_complement(a: &[[f64; 3]; 3], w: [f64; 3], l: f64) -> [f64; 3] {
    let u = if w[0].abs() > w[1].abs() {
        let inv = 1.0 / (w[0] * w[0] + w[2] * w[2]).sqrt();
        [-w[2] * inv, 0.0, w[0] * inv]
    } else {
        let inv = 1.0 / (w[1] * w[1] + w[2] * w[2]).sqrt();
        [0.0, w[2] * inv, -w[1] * inv]
    };
    let v = cross3(w, u);
    let mul = |x: [f64; 3]| [dot3(a[0], x), dot3(a[1], x), dot3(a[2], x)];
    let (au, av) = (mul(u), mul(v));
    let m00 = dot3(u, au) - l;
    let m01 = dot3(u, av);
    let m11 = dot3(v, av) - l;
    // The eigenvector's (u, v) coefficients are perpendicular to the 2x2 matrix's larger row.
    let (r0, r1) = if m00.abs() >= m11.abs() {
        (m00, m01)
    } else {
        (m01, m11)
    };
    // The matrix is scaled to entries of at most 1, so the sum of squares cannot overflow: no libm `hypot`.
    let len = (r0 * r0 + r1 * r1).sqrt();
    if len == 0.0 {
        return u;
    }
    let (cu, cv) = (r1 / len, r0 / len);
    [
        cu * u[0] - cv * v[0],
        cu * u[1] - cv * v[1],
        cu * u[2] - cv * v[2],
    ]
}

/// Plane fit of one neighbourhood: (unit normal, gamma, curvature, centroid), or `None` when there is no
/// plane. `pts` are positions relative to any nearby point (f64), so the covariance keeps its precision; the
/// centroid is given in the same frame.
fn fit_plane(pts: &[[f64; 3]]) -> Option<([f64; 3], f64, f64, [f64; 3])> {
    if pts.len() < 3 {
        return None;
    }
    let n = pts.len() as f64;
    let mut m = [0.0f64; 3];
    for p in pts {
        for k in 0..3 {
            m[k] += p[k];
        }
    }
    for v in &mut m {
        *v /= n;
    }
    let mut c = [[0.0f64; 3]; 3];
    for p in pts {
        let d = [p[0] - m[0], p[1] - m[1], p[2] - m[2]];
        for i in 0..3 {
            for j in i..3 {
                c[i][j] += d[i] * d[j];
            }
        }
    }
    for row in &mut c {
        for v in row.iter_mut() {
            *v /= n;
        }
    }
    let (l, vecs) = sym_eigen3(c);
    let l3 = l[2].max(0.0);
    // All points identical, or on one line: the plane is undetermined.
    if l[0].is_nan() || l[0] <= 0.0 || l[1] <= l[0] * 1e-10 {
        return None;
    }
    let sum = l[0] + l[1] + l3;
    Some((vecs[2], l3.sqrt(), l3 / sum, m))
}

/// How a normal's sign was chosen.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Rule {
    #[default]
    None = 0,
    Scanner = 1,
    Viewpoint = 2,
    Up = 3,
    Outward = 4,
    NearestScanner = 5,
}

/// How many orientation rules there are (the size of their counts).
pub(crate) const RULES: usize = 6;

/// One point's plane: ((normal, gamma), (orientation rule, curvature)). [`no_plane`] is the result without one.
type Fitted = (([f32; 3], f32), (u8, f32));

/// The result of a point without a plane: zero normal, gamma +inf, curvature -1.
fn no_plane() -> Fitted {
    (([0.0; 3], f32::INFINITY), (Rule::None as u8, -1.0))
}

/// Estimate normals, gamma, the sampling spacing and (optionally) curvature in place; see the module
/// documentation. The report's figures give the radius used and how many points each orientation rule oriented
/// (`oriented_to_scanner`, `oriented_to_viewpoint`, `oriented_up`, `oriented_outward`) and `no_normal`.
pub fn estimate_normals(
    cloud: &mut Cloud,
    params: &NormalsParams,
    progress: &dyn Progress,
) -> Result<StageReport> {
    estimate_normals_with(cloud, params, None, progress).map(|(report, _)| report)
}

/// [`estimate_normals`] with the centroid the "outward" rule faces away from given (a tiled prepare gives the
/// whole map's; `None`: the cloud's own), returning also each point's orientation rule (as [`RULES`] indices,
/// in the cloud's new order) for a caller that counts them over a part of the cloud.
pub(crate) fn estimate_normals_with(
    cloud: &mut Cloud,
    params: &NormalsParams,
    centroid: Option<[f64; 3]>,
    progress: &dyn Progress,
) -> Result<(StageReport, Vec<u8>)> {
    let started = Instant::now();
    let mut report = StageReport::new("features.normals", cloud.len());
    check_params(params)?;
    check_cloud(cloud)?;
    let n = cloud.len();
    let radius = params
        .radius_m
        .or(params.resolution_m.map(|r| (3.0 * r) as f32));
    let k = params.k.min(n);
    // The search reaches past the radius only when there is a spacing to find (see the module doc).
    let with_spacing = k >= spacing::NEIGHBOURS;
    let search_radius = radius.filter(|_| !with_spacing);
    let within2 = radius.map_or(f32::INFINITY, |r| r * r);
    // The surface offset's neighbours weigh by a Gaussian of a third of the search radius (r_map by default)
    // along the surface, and of the bandwidth across it.
    let bandwidths = Bandwidths {
        along2: radius.map_or(f64::INFINITY, |r| (f64::from(r) / 3.0).powi(2)),
        across: f64::from(params.surface_bandwidth_m),
    };
    progress.stage("normals", n as u64);
    let orientation = Orientation::new(cloud, params, centroid);
    let mut normals = Vec::new();
    let mut gamma = Vec::new();
    let mut rules = Vec::new();
    let mut curv = None;
    let mut spacings = None;
    let mut offsets = Vec::new();
    cloud.lend_positions(|positions| {
        let nb = match Neighbors::for_knn_owned(positions, k) {
            Ok(nb) => nb,
            Err((e, positions)) => return (Returned::InOrder(positions), Err(e)),
        };
        // Allocated once the index is built, so they never sit beside the positions' two copies.
        normals = vec![[0.0f32; 3]; n];
        gamma = vec![0.0f32; n];
        rules = vec![0u8; n];
        curv = params.curvature.then(|| vec![0.0f32; n]);
        spacings = with_spacing.then(|| vec![0.0f32; n]);
        offsets = vec![0.0f32; n];
        let out = (
            (
                (
                    (&mut normals[..], &mut gamma[..]),
                    (&mut rules[..], curv.as_deref_mut()),
                ),
                &mut offsets[..],
            ),
            spacings.as_deref_mut(),
        );
        let done = nb.knn_all_into(
            out,
            k,
            search_radius,
            progress,
            || (Vec::<[f64; 3]>::with_capacity(k), Vec::with_capacity(k)),
            // With k < 7 there is no spacing column, and `spacing_of` returns 0 at once.
            |(rel, across), i, p, near, at| {
                let within = in_radius(near, at, within2);
                let fitted = fit_point((rel, across), i, p, within, &orientation, bandwidths);
                (fitted, spacing_of(p, near, at))
            },
        );
        let (positions, order) = nb.into_sorted();
        (Returned::Reordered { positions, order }, done)
    })?;
    let counts = count_rules(&rules);
    let georeferenced = crs::declared(&cloud.meta);
    fill_report(
        &mut report,
        params,
        &counts,
        spacings.as_deref(),
        georeferenced,
    );
    cloud.set_normals(Some(normals))?;
    cloud.set_gamma(Some(gamma))?;
    for (name, column) in [
        ("curvature", curv),
        (spacing::EXTRA_NAME, spacings),
        (SURFACE_OFFSET, Some(offsets)),
    ] {
        if let Some(column) = column {
            cloud.retain_extras(|d| d.name != name);
            cloud.push_extra(ExtraDim::new(name, column))?;
        }
    }
    report.finish(n, started);
    Ok((report, rules))
}

/// How many points each orientation rule oriented, from each point's rule.
pub(crate) fn count_rules(rules: &[u8]) -> [usize; RULES] {
    let mut counts = [0usize; RULES];
    for &r in rules {
        counts[r as usize] += 1;
    }
    counts
}

/// The stage report's warnings and figures for `n = report.points_in` points, from the rules' counts and the
/// spacing column (of the whole cloud: a tiled prepare calls this once with every tile's points).
pub(crate) fn fill_report(
    report: &mut StageReport,
    params: &NormalsParams,
    counts: &[usize; RULES],
    spacings: Option<&[f32]>,
    georeferenced: bool,
) {
    let n = report.points_in;
    let radius = params
        .radius_m
        .or(params.resolution_m.map(|r| (3.0 * r) as f32));
    let k = params.k.min(n);
    if k < params.k && n > 0 {
        report.warnings.push(format!(
            "k = {} is more than the cloud's {n} points: using {k}",
            params.k
        ));
    }
    report.figure("k", k as f64);
    report.figure("radius_m", radius.map_or(f64::INFINITY, |r| r as f64));
    report_rules(report, counts);
    let no_normal = counts[Rule::None as usize];
    if let (Some(r), Some(s)) = (radius, spacings)
        && let Some(hint) = sparse_hint(params, r, no_normal, s, georeferenced)
    {
        report.warnings.push(hint);
    }
}

fn check_params(params: &NormalsParams) -> Result<()> {
    if params.k < 3 {
        return Err(Error::parameter(
            "features.normals.k",
            format!("a plane needs at least 3 neighbours, got k = {}", params.k),
        ));
    }
    positive_metres("features.normals.radius_m", params.radius_m)?;
    positive_metres("features.normals.resolution_m", params.resolution_m)?;
    positive_metres(
        "features.normals.surface_bandwidth_m",
        Some(params.surface_bandwidth_m),
    )?;
    if let Some(v) = params.viewpoint
        && !v.iter().all(|x| x.is_finite())
    {
        return Err(Error::parameter(
            "features.normals.viewpoint",
            "must be finite",
        ));
    }
    Ok(())
}

fn positive_metres<T: Into<f64> + std::fmt::Display + Copy>(
    name: &str,
    r: Option<T>,
) -> Result<()> {
    match r {
        Some(r) if !(r.into().is_finite() && r.into() > 0.0) => Err(Error::parameter(
            name,
            format!("must be a positive number of metres, got {r}"),
        )),
        _ => Ok(()),
    }
}

/// Which way each normal faces, in order of preference: towards the scanner that took the point, towards the
/// given viewpoint, towards the nearest known scanner, up (near-horizontal surfaces), away from the centroid.
/// Positions relative to the origin.
struct Orientation {
    /// (first point, end, scanner position) by point range, sorted by range start.
    scanners: Vec<(usize, usize, [f64; 3])>,
    viewpoint: Option<[f64; 3]>,
    /// Every known scanner position, whether or not its points are known: a voxel downsampling merges the
    /// scans' points and drops their ranges, and a TLS point is nearly always seen from the nearest station
    /// (exactly so with one scan). At most [`MAX_STATIONS`].
    stations: Vec<[f64; 3]>,
    centroid: [f64; 3],
}

/// The most scanner positions searched for the nearest one per point (a linear search; TLS projects have tens).
const MAX_STATIONS: usize = 256;

impl Orientation {
    fn new(cloud: &Cloud, params: &NormalsParams, centroid: Option<[f64; 3]>) -> Orientation {
        let (o, n) = (cloud.origin, cloud.len());
        let mut scanners: Vec<(usize, usize, [f64; 3])> = cloud
            .meta
            .scans
            .iter()
            .filter_map(|s| {
                let t = s.world_from_scan?.translation.vector;
                (s.points.start < s.points.end && t.iter().all(|x| x.is_finite())).then_some((
                    s.points.start,
                    s.points.end.min(n),
                    [t[0] - o[0], t[1] - o[1], t[2] - o[2]],
                ))
            })
            .collect();
        scanners.sort_by_key(|s| s.0);
        let mut stations: Vec<[f64; 3]> = cloud
            .meta
            .scans
            .iter()
            .filter_map(|s| s.world_from_scan.map(|t| t.translation.vector))
            .filter(|t| t.iter().all(|x| x.is_finite()))
            .map(|t| [t[0] - o[0], t[1] - o[1], t[2] - o[2]])
            .collect();
        if stations.len() > MAX_STATIONS {
            stations.clear();
        }
        Orientation {
            scanners,
            stations,
            viewpoint: params
                .viewpoint
                .map(|v| [v[0] - o[0], v[1] - o[1], v[2] - o[2]]),
            centroid: centroid.unwrap_or_else(|| self::centroid(cloud.positions()).mean()),
        }
    }

    fn scanner(&self, i: usize) -> Option<[f64; 3]> {
        let at = self.scanners.partition_point(|s| s.0 <= i);
        at.checked_sub(1)
            .and_then(|a| self.scanners.get(a))
            .filter(|s| i < s.1)
            .map(|s| s.2)
    }

    fn nearest_station(&self, p: [f64; 3]) -> Option<[f64; 3]> {
        let d2 = |s: &[f64; 3]| (0..3).map(|k| (s[k] - p[k]).powi(2)).sum::<f64>();
        self.stations
            .iter()
            .min_by(|a, b| d2(a).total_cmp(&d2(b)))
            .copied()
    }

    /// The rule that applies to point `i` at `p`, and the normal `nv` flipped to follow it.
    fn orient(&self, i: usize, p: [f64; 3], nv: [f64; 3]) -> ([f64; 3], Rule) {
        let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        let towards = |v: [f64; 3]| dot(nv, [v[0] - p[0], v[1] - p[1], v[2] - p[2]]);
        let (rule, want) = if let Some(s) = self.scanner(i) {
            (Rule::Scanner, towards(s))
        } else if let Some(v) = self.viewpoint {
            (Rule::Viewpoint, towards(v))
        } else if let Some(s) = self.nearest_station(p) {
            (Rule::NearestScanner, towards(s))
        } else if nv[2].abs() > HORIZONTAL_MIN_NZ {
            (Rule::Up, nv[2])
        } else {
            (Rule::Outward, -towards(self.centroid))
        };
        if want < 0.0 {
            ([-nv[0], -nv[1], -nv[2]], rule)
        } else {
            (nv, rule)
        }
    }
}

/// The exact sums of the positions (relative to the origin) and their count: the same for any number of
/// threads, and a tiled prepare adds its tiles' sums into the whole cloud's (`tiles`).
pub(crate) fn centroid(positions: &[[f32; 3]]) -> PositionSum {
    positions
        .par_chunks(CHUNK)
        .map(|c| {
            let mut s = PositionSum::default();
            for p in c {
                s.add(*p);
            }
            s
        })
        .reduce(PositionSum::default, |mut a, b| {
            a.merge(&b);
            a
        })
}

/// Exact sums of positions and their count (see [`centroid`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct PositionSum {
    sums: [ExactSum; 3],
    count: u64,
}

impl PositionSum {
    /// Add one position.
    pub(crate) fn add(&mut self, p: [f32; 3]) {
        for (s, v) in self.sums.iter_mut().zip(p) {
            s.add(f64::from(v));
        }
        self.count += 1;
    }

    /// Add another part's sums.
    pub(crate) fn merge(&mut self, other: &PositionSum) {
        for k in 0..3 {
            self.sums[k].merge(&other.sums[k]);
        }
        self.count += other.count;
    }

    /// The mean position (the sums' values over the count; 0 for no points).
    pub(crate) fn mean(&self) -> [f64; 3] {
        let nf = self.count.max(1) as f64;
        std::array::from_fn(|k| self.sums[k].value() / nf)
    }
}

/// The positions of the neighbours `near` (sorted by distance, at positions `at`) within squared distance `within2`.
fn in_radius<'a>(near: &[Neighbor], at: &'a [[f32; 3]], within2: f32) -> &'a [[f32; 3]] {
    &at[..near.partition_point(|nb| nb.dist2 <= within2)]
}

/// The plane through point `i`'s neighbours `near` (relative to `p` in f64, in the reused `rel`), oriented, and
/// the offset of the neighbourhood's centroid plane from `p` along that normal (see [`SURFACE_OFFSET`]).
fn fit_point(
    (rel, across): (&mut Vec<[f64; 3]>, &mut Vec<(f64, f64)>),
    i: usize,
    p: [f32; 3],
    near: &[[f32; 3]],
    orientation: &Orientation,
    weights: Bandwidths,
) -> (Fitted, f32) {
    rel.clear();
    rel.extend(near.iter().map(|r| {
        [
            r[0] as f64 - p[0] as f64,
            r[1] as f64 - p[1] as f64,
            r[2] as f64 - p[2] as f64,
        ]
    }));
    let Some((nv, g, c, mean)) = fit_plane(rel) else {
        return (no_plane(), 0.0);
    };
    let (nv, rule) = orientation.orient(i, p.map(f64::from), nv);
    let offset = surface_offset(rel, nv, dot3(mean, nv), weights, across);
    (
        (
            ([nv[0] as f32, nv[1] as f32, nv[2] as f32], g as f32),
            (rule as u8, c as f32),
        ),
        offset as f32,
    )
}

/// The Gaussian widths of [`surface_offset`]'s weights: squared along the surface (m^2, infinite for none),
/// and across it (m).
#[derive(Clone, Copy)]
struct Bandwidths {
    along2: f64,
    across: f64,
}

/// Most mean shifts of a surface offset ([`SURFACE_OFFSET`]); they converge to a millimetre in 3-5.
const MEAN_SHIFTS: usize = 8;

/// A mean shift that moves the estimate less than this (metres) ends the search: the shifts shrink
/// geometrically, so the estimate is then within about a millimetre of where more shifts would take it, and
/// most points stop after 2-4 shifts instead of 8 (the 8.3-million-point tiled map's prepare took 70% more CPU
/// with all 8).
const MEAN_SHIFT_TOLERANCE: f64 = 1e-4;

/// Where the surface lies from a point along its normal `n`: the densest part of its neighbours' layer (`rel`,
/// relative to the point, itself included), found by mean shift along `n` from the centroid plane's offset
/// `start` (Comaniciu and Meer 2002): each neighbour weighs a Gaussian of its distance along the surface (it
/// keeps the estimate local) times one of its distance across it from the current estimate. The plain
/// centroid plane is pulled by whatever else the neighbourhood holds (a window recess, a pillar's side, what
/// other scans saw through glass): on the hall's wall it lies 4.5 cm behind where the real scan sees the wall
/// at r_map 0.2 (docs/accuracy.md, section 4), while a layer's own points stay within a few centimetres.
/// `across` is scratch space for each neighbour's (distance along `n`, log of its weight along the surface).
fn surface_offset(
    rel: &[[f64; 3]],
    n: [f64; 3],
    start: f64,
    w: Bandwidths,
    across: &mut Vec<(f64, f64)>,
) -> f64 {
    across.clear();
    across.extend(rel.iter().map(|r| {
        let along = if w.along2.is_finite() {
            -0.5 * dot3(*r, *r) / w.along2
        } else {
            0.0
        };
        (dot3(*r, n), along)
    }));
    let inv = 0.5 / (w.across * w.across);
    let mut s = start;
    for _ in 0..MEAN_SHIFTS {
        let (mut sw, mut swd) = (0.0f64, 0.0f64);
        for &(d, along) in across.iter() {
            let wt = (along - (d - s) * (d - s) * inv).exp();
            sw += wt;
            swd += wt * d;
        }
        if sw.is_nan() || sw <= 1e-300 {
            break;
        }
        let next = swd / sw;
        let step = (next - s).abs();
        s = next;
        if step < MEAN_SHIFT_TOLERANCE {
            break;
        }
    }
    s
}

/// What to do when most points found no plane because the scan is sparser than the search radius holds (an
/// airborne scan, about 2 m apart, prepared at the default 0.1 m): the simulator draws points without a plane
/// as small spheres, and beams pass between them, so a user must hear why and which resolution fits. `None`
/// when at least half of the points have a plane or their spacing (see [`spacing`]) is within half the radius
/// (a plane there holds a dozen neighbours: what lacks a plane is clutter, not sparseness).
fn sparse_hint(
    params: &NormalsParams,
    radius: f32,
    no_normal: usize,
    spacing: &[f32],
    georeferenced: bool,
) -> Option<String> {
    if no_normal * 2 < spacing.len() {
        return None;
    }
    let (s, _) = spacing::surface_median(spacing)?;
    if s <= 0.5 * radius {
        return None;
    }
    let share = 100.0 * no_normal as f64 / spacing.len() as f64;
    let radius_fix = format!(
        "give the normals stage a radius_m of at least {} m",
        round_up_2(3.0 * s)
    );
    let (limit, fix) = match (params.radius_m, params.resolution_m) {
        (None, Some(res)) => (
            format!("the normals' search radius of {radius} m (3 x the resolution {res} m)"),
            format!(
                "Prepare the scan at a resolution of about {} m, or {radius_fix}",
                round_up_2(s)
            ),
        ),
        _ => (
            format!("the normals' search radius of {radius} m"),
            format!("To fix it, {radius_fix}"),
        ),
    };
    // Points a metre or more apart in a file without a coordinate system are as likely millimetres read as
    // metres (a scanner's or photogrammetry's export) as a sparse survey.
    let units = if !georeferenced && s >= 1.0 {
        ". If the file counts in millimetres or centimetres (it declares no coordinate system), scale it to \
         metres instead (`aerie prepare --scale 0.001` or `0.01`)"
    } else {
        ""
    };
    Some(format!(
        "{share:.0}% of the points have no plane: the scan's points lie about {s:.2} m apart (median spacing), \
         too sparse for {limit}, and the simulator draws points without a plane as small spheres that beams \
         pass between. {fix}{units}"
    ))
}

/// `x` rounded up to two significant digits (1.885 -> 1.9, 0.2345 -> 0.24), less a relative 1e-4 that f32
/// positions put on a spacing (a lattice 1.9 m apart reads 1.9000003).
fn round_up_2(x: f32) -> f64 {
    let x = f64::from(x);
    let scale = 10f64.powf(1.0 - x.log10().floor());
    (x * scale * (1.0 - 1e-4)).ceil() / scale
}

/// How many normals each orientation rule decided, and warnings for the fallbacks.
fn report_rules(report: &mut StageReport, rules: &[usize; RULES]) {
    let count = |r: Rule| rules[r as usize] as f64;
    let no_normal = count(Rule::None);
    report.figure("oriented_to_scanner", count(Rule::Scanner));
    report.figure("oriented_to_viewpoint", count(Rule::Viewpoint));
    report.figure("oriented_to_nearest_scanner", count(Rule::NearestScanner));
    report.figure("oriented_up", count(Rule::Up));
    report.figure("oriented_outward", count(Rule::Outward));
    report.figure("no_normal", no_normal);
    if count(Rule::Up) + count(Rule::Outward) > 0.0 {
        report.warnings.push(
            "no scanner position for some points: their normals face up (near-horizontal surfaces) or away \
             from the centroid"
                .to_string(),
        );
    }
    if no_normal > 0.0 {
        report.warnings.push(format!(
            "{no_normal} point(s) have fewer than 3 usable neighbours or no plane: zero normal, gamma = inf"
        ));
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests;
