//! Statistical outlier removal (`filters.sor`), with the conventions of PCL, CloudCompare and Open3D.
//!
//! For each point, d = the mean distance to its nearest neighbours; over the cloud, mu and sigma of d; a point
//! is an outlier when d is above `mu + std_ratio * sigma`. The peers disagree on what "k neighbours" and
//! "sigma" mean (docs/algorithms.md, section 3), so `compat` reproduces each one's kept set:
//!
//! | compat | d averages | sigma | kept if |
//! |---|---|---|---|
//! | `pcl` (default) | the k nearest other points | sample (N-1) | `d <= thr` |
//! | `cloudcompare` | the k-1 nearest other points (k counts the point itself) | population (N) | `d <= thr` |
//! | `open3d` | the k nearest points including the point itself (a zero distance) | sample (N-1) | `0 < d < thr` |
//!
//! Open3D's quirk is reproduced too: its mean of d divides by every point but its spread only sums points with
//! d > 0. Outside `open3d` mode a point whose d is 0 (it has k exact duplicates) is never an outlier.
//!
//! Distances are the f32 roots of f32 squared distances, summed in f64, as PCL takes them of FLANN's float
//! distances; the search never lists the neighbours (`Neighbors::knn_root_sums_in_cell_order`).
//!
//! Detection ([`sor_mask`]) is separate from deletion ([`sor`]), as in PDAL, so callers can mark instead of
//! delete.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CHUNK, check_cancel, check_cloud};
use crate::cloud::{Cloud, Returned};
use crate::error::{Error, Result};
use crate::features::Neighbors;
use crate::features::neighbors::scatter;
use crate::progress::Progress;
use crate::report::StageReport;
use crate::tiles::ExactSum;

/// Whose definition of k and sigma to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SorCompat {
    /// PCL >= 1.10 `StatisticalOutlierRemoval` (`setMeanK(k)`, `setStddevMulThresh(m)`).
    #[default]
    Pcl,
    /// CloudCompare `-SOR k m` (its defaults are 6 and 1.0).
    CloudCompare,
    /// Open3D `remove_statistical_outlier(nb_neighbors=k, std_ratio=m)`.
    Open3d,
}

/// Parameters of `filters.sor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SorParams {
    /// Number of neighbours, with the meaning `compat` gives it (see the module table), >= 1 (>= 2 for
    /// `cloudcompare`). Clamped, with a warning, when the cloud has fewer points. Default: 16.
    pub k: usize,
    /// Multiple of the standard deviation added to the mean to form the threshold, dimensionless (may be
    /// negative, as in PCL). Default: 2.0 (PDAL's default). The PCL tutorial and CloudCompare use 1.0, which
    /// on a clean, noisy surface removes about a sixth of the points (mean distances are roughly normal).
    pub std_ratio: f64,
    /// Convention to reproduce: "pcl", "cloudcompare" or "open3d". Default: "pcl".
    pub compat: SorCompat,
}

impl Default for SorParams {
    fn default() -> Self {
        SorParams {
            k: 16,
            std_ratio: 2.0,
            compat: SorCompat::Pcl,
        }
    }
}

/// What detection found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SorStats {
    /// Neighbours averaged per point after clamping (Open3D: points, the point itself included).
    pub neighbours_averaged: usize,
    /// Mean of the per-point mean distances, metres.
    pub mu: f64,
    /// Their standard deviation (sample or population per `compat`), metres.
    pub sigma: f64,
    /// `mu + std_ratio * sigma`, metres.
    pub threshold: f64,
    /// Points marked as outliers.
    pub outliers: usize,
    /// Things the user should know, e.g. that k was clamped to the cloud's size.
    pub warnings: Vec<String>,
}

/// How many points a query asks for and what the sum of their distances divides by: `compat`'s meaning of k,
/// clamped to the cloud's size. PCL and CloudCompare skip "the point itself", the nearest result; it lies at
/// distance 0 (itself or an exact duplicate), so the sum over one more point than they average is their sum.
pub(crate) struct Query {
    /// Points each search asks for (the point itself included).
    pub(crate) points: usize,
    /// What the sum of their distances divides by.
    pub(crate) divisor: usize,
}

impl Query {
    /// The query for `n` points, with a warning when k had to be clamped.
    fn new(params: &SorParams, n: usize, warnings: &mut Vec<String>) -> Result<Query> {
        let min_k = if params.compat == SorCompat::CloudCompare {
            2
        } else {
            1
        };
        if params.k < min_k {
            return Err(Error::parameter(
                "filters.sor.k",
                format!(
                    "k must be at least {min_k} for compat {:?}, got {}",
                    params.compat, params.k
                ),
            ));
        }
        // Dropping the nearest result removes "the point itself" as PCL and CloudCompare do.
        let (points, divisor, wanted) = match params.compat {
            SorCompat::Pcl => {
                let k = params.k.min(n.saturating_sub(1));
                (k + 1, k, params.k)
            }
            SorCompat::CloudCompare => {
                let k = (params.k - 1).min(n.saturating_sub(1));
                (k + 1, k, params.k - 1)
            }
            SorCompat::Open3d => {
                let k = params.k.min(n);
                (k, k, params.k)
            }
        };
        if divisor < wanted && n > 0 {
            warnings.push(format!(
                "k = {} is more than the cloud allows ({n} points): averaging {divisor} instead",
                params.k
            ));
        }
        Ok(Query { points, divisor })
    }

    /// Whether the cloud is too small for outlier statistics (every point is kept).
    fn degenerate(&self, n: usize) -> bool {
        n < 2 || self.divisor == 0
    }

    /// Each point's mean distance to its neighbours, in metres, in the index's cell order.
    fn mean_distances(&self, nb: &Neighbors, progress: &dyn Progress) -> Result<Vec<f64>> {
        progress.stage("statistical outliers", nb.len() as u64);
        let mut d = nb.knn_root_sums_in_cell_order(self.points, progress)?;
        for x in &mut d {
            *x /= self.divisor as f64;
        }
        Ok(d)
    }
}

/// The search and removal of [`sor`]: the positions move into the index (no sorted copy beside them), and come
/// back in its order unless scan ranges need the input order.
fn search_and_remove(
    cloud: &mut Cloud,
    params: &SorParams,
    query: &Query,
    warnings: Vec<String>,
    progress: &dyn Progress,
) -> Result<SorStats> {
    let keep_order = cloud
        .meta
        .scans
        .iter()
        .filter(|s| !s.points.is_empty())
        .count()
        > 1;
    let (mask, stats) = cloud.lend_positions(|positions| {
        let nb = match Neighbors::for_knn_owned(positions, query.points) {
            Ok(nb) => nb,
            Err((e, positions)) => return (Returned::InOrder(positions), Err(e)),
        };
        let decided = query
            .mean_distances(&nb, progress)
            .map(|d| decide(&d, params, query.divisor, warnings));
        let (sorted, order) = nb.into_sorted();
        match decided {
            Ok((mask, stats)) if keep_order => (
                Returned::InOrder(scatter(&sorted, &order)),
                Ok((scatter(&mask, &order), stats)),
            ),
            decided => (
                Returned::Reordered {
                    positions: sorted,
                    order,
                },
                decided,
            ),
        }
    })?;
    check_cancel(progress)?;
    cloud.retain(&mask)?;
    Ok(stats)
}

/// Exact sum of `f(x)` over `v` ([`ExactSum`]: the same for any thread count, chunking or tiling).
fn exact_sum(v: &[f64], f: impl Fn(f64) -> f64 + Sync) -> ExactSum {
    v.par_chunks(CHUNK)
        .map(|c| {
            let mut s = ExactSum::new();
            c.iter().for_each(|&x| s.add(f(x)));
            s
        })
        .reduce(ExactSum::new, |mut a, b| {
            a.merge(&b);
            a
        })
}

/// What the mean sums of a point's mean distance `x` (Open3D sums only positive ones).
pub(crate) fn mean_term(params: &SorParams, x: f64) -> f64 {
    match params.compat {
        SorCompat::Open3d if x <= 0.0 => 0.0,
        _ => x,
    }
}

/// What the spread sums of a point's mean distance `x` about the mean `mu`.
pub(crate) fn spread_term(params: &SorParams, mu: f64, x: f64) -> f64 {
    match params.compat {
        SorCompat::Open3d if x <= 0.0 => 0.0,
        _ => (x - mu) * (x - mu),
    }
}

/// The standard deviation from the exact sum `ss` of [`spread_term`] over `n` points.
pub(crate) fn sigma_of(params: &SorParams, n: f64, ss: f64) -> f64 {
    let denom = if params.compat == SorCompat::CloudCompare {
        n
    } else {
        n - 1.0
    };
    (ss / denom).sqrt()
}

/// Whether a point of mean distance `x` is kept under `threshold`.
pub(crate) fn keeps(params: &SorParams, x: f64, threshold: f64) -> bool {
    match params.compat {
        SorCompat::Open3d => x > 0.0 && x < threshold,
        _ => x == 0.0 || x <= threshold,
    }
}

/// Which points to keep given their mean distances `d` (in any fixed order: the mask follows it), and the
/// statistics behind the decision. The sums are exact, so a tiled prepare's combined partial sums
/// (`tiles`) give the same threshold.
fn decide(
    d: &[f64],
    params: &SorParams,
    averaged: usize,
    warnings: Vec<String>,
) -> (Vec<bool>, SorStats) {
    let nf = d.len() as f64;
    let mu = exact_sum(d, |x| mean_term(params, x)).value() / nf;
    let sigma = sigma_of(
        params,
        nf,
        exact_sum(d, |x| spread_term(params, mu, x)).value(),
    );
    let threshold = mu + params.std_ratio * sigma;
    let mask: Vec<bool> = d.par_iter().map(|&x| keeps(params, x, threshold)).collect();
    let outliers = mask.iter().filter(|&&k| !k).count();
    let stats = SorStats {
        neighbours_averaged: averaged,
        mu,
        sigma,
        threshold,
        outliers,
        warnings,
    };
    (mask, stats)
}

/// What the checks every entry point makes decided.
pub(crate) enum Start {
    /// Too few points for outlier statistics: every point is kept, with these statistics (and a warning).
    KeepAll(SorStats),
    /// Search with this query; the warnings so far (k clamped).
    Search(Query, Vec<String>),
}

/// The checks every entry point makes, and the query for the cloud's size.
pub(crate) fn start(cloud: &Cloud, params: &SorParams) -> Result<Start> {
    if !params.std_ratio.is_finite() {
        return Err(Error::parameter(
            "filters.sor.std_ratio",
            format!("must be finite, got {}", params.std_ratio),
        ));
    }
    check_cloud(cloud)?;
    let n = cloud.len();
    let mut warnings = Vec::new();
    let query = Query::new(params, n, &mut warnings)?;
    if !query.degenerate(n) {
        return Ok(Start::Search(query, warnings));
    }
    if n > 0 {
        warnings.push(format!(
            "{n} point(s): too few for outlier statistics, all kept"
        ));
    }
    Ok(Start::KeepAll(SorStats {
        neighbours_averaged: query.divisor,
        warnings,
        ..SorStats::default()
    }))
}

/// Which points to keep (true) under statistical outlier removal, in point order, and the statistics behind
/// the decision. Clouds of fewer than 2 points have no spread: every point is kept, with a warning.
pub fn sor_mask(
    cloud: &Cloud,
    params: &SorParams,
    progress: &dyn Progress,
) -> Result<(Vec<bool>, SorStats)> {
    let (query, warnings) = match start(cloud, params)? {
        Start::KeepAll(stats) => return Ok((vec![true; cloud.len()], stats)),
        Start::Search(query, warnings) => (query, warnings),
    };
    let nb = Neighbors::for_knn(cloud.positions(), query.points)?;
    let d = query.mean_distances(&nb, progress)?;
    check_cancel(progress)?;
    let (mask, stats) = decide(&d, params, query.divisor, warnings);
    Ok((scatter(&mask, &nb.into_order()), stats))
}

/// Remove statistical outliers, in place. The points are searched in a spatial (Morton) order, and the cloud
/// keeps it (a map's later stages and buckets want it, and restoring the input order would cost a second
/// copy of the positions at the peak) unless it holds several scans' point ranges, which only the input
/// order keeps. The report has the removed count and the figures `mu`, `sigma`, `threshold` (metres) and `k`
/// (neighbours averaged).
pub fn sor(cloud: &mut Cloud, params: &SorParams, progress: &dyn Progress) -> Result<StageReport> {
    let started = Instant::now();
    let mut report = StageReport::new("filters.sor", cloud.len());
    let stats = match start(cloud, params)? {
        Start::KeepAll(stats) => stats,
        Start::Search(query, warnings) => {
            search_and_remove(cloud, params, &query, warnings, progress)?
        }
    };
    report_stats(&mut report, stats, cloud.len(), started);
    Ok(report)
}

/// Fill the stage report from the statistics (also a tiled prepare's, `tiles`).
pub(crate) fn report_stats(
    report: &mut StageReport,
    stats: SorStats,
    out: usize,
    started: Instant,
) {
    report
        .removed
        .push(("statistical outlier".into(), stats.outliers));
    report.figure("k", stats.neighbours_averaged as f64);
    report.figure("mu", stats.mu);
    report.figure("sigma", stats.sigma);
    report.figure("threshold", stats.threshold);
    report.warnings = stats.warnings;
    report.finish(out, started);
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn line(xs: &[f32]) -> Cloud {
        Cloud::from_positions([0.0; 3], xs.iter().map(|&x| [x, 0.0, 0.0]).collect())
    }

    fn kept(c: &Cloud, k: usize, m: f64, compat: SorCompat) -> Vec<usize> {
        let p = SorParams {
            k,
            std_ratio: m,
            compat,
        };
        crate::filters::mask_indices(&sor_mask(c, &p, &NoProgress).unwrap().0)
    }

    #[test]
    fn handmade_line_each_convention() {
        // x = 0 1 2 3 4, k = 2, m = 1.
        // PCL (2 others): d = 1.5 1 1 1 1.5; mu = 1.2; squares .09 .04 .04 .04 .09 = .3; sample var .075,
        //   sigma .2739, thr 1.4739: the two ends (1.5) go.
        // CloudCompare (k-1 = 1 other): d = 1 1 1 1 1; mu 1, sigma 0, thr 1: all kept (d <= thr).
        // Open3D (2 incl. itself): d = .5 everywhere; mu .5, sigma 0, thr .5: none kept (d < thr is false).
        let c = line(&[0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(kept(&c, 2, 1.0, SorCompat::Pcl), vec![1, 2, 3]);
        assert_eq!(
            kept(&c, 2, 1.0, SorCompat::CloudCompare),
            vec![0, 1, 2, 3, 4]
        );
        assert_eq!(kept(&c, 2, 1.0, SorCompat::Open3d), Vec::<usize>::new());
    }

    #[test]
    fn handmade_duplicates_each_convention() {
        // x = 0 0 0 1 2, k = 2, m = 1.
        // PCL: d = 0 0 0 1 1.5 (x=1: 0 and 2 at 1; x=2: 1 at 1, 0 at 2); mu .5; squares .25*3+.25+1 = 2;
        //   sample var .5, sigma .7071, thr 1.2071: x=2 goes, the duplicates stay.
        // CloudCompare: d = 0 0 0 1 1; mu .4; squares .16*3+.36*2 = 1.2; population var .24, sigma .4899,
        //   thr .8899: x=1 and x=2 go.
        // Open3D: d = 0 0 0 .5 .5; mu = 1/5 = .2; spread over d > 0 only: .09*2 = .18 / 4 = .045, sigma .2121,
        //   thr .4121: x=1 and x=2 go, and the duplicates go too (d = 0 fails 0 < d).
        let c = line(&[0.0, 0.0, 0.0, 1.0, 2.0]);
        assert_eq!(kept(&c, 2, 1.0, SorCompat::Pcl), vec![0, 1, 2, 3]);
        assert_eq!(kept(&c, 2, 1.0, SorCompat::CloudCompare), vec![0, 1, 2]);
        assert_eq!(kept(&c, 2, 1.0, SorCompat::Open3d), Vec::<usize>::new());
        let (_, s) = sor_mask(
            &c,
            &SorParams {
                k: 2,
                std_ratio: 1.0,
                compat: SorCompat::Pcl,
            },
            &NoProgress,
        )
        .unwrap();
        assert!((s.mu - 0.5).abs() < 1e-12 && (s.sigma - 0.5f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn small_and_degenerate_clouds() {
        let (m, s) = sor_mask(&line(&[1.0]), &SorParams::default(), &NoProgress).unwrap();
        assert_eq!(m, vec![true]);
        assert!(!s.warnings.is_empty());
        let (m, _) = sor_mask(&Cloud::default(), &SorParams::default(), &NoProgress).unwrap();
        assert!(m.is_empty());
        // k larger than the cloud is clamped with a warning.
        let (_, s) = sor_mask(&line(&[0.0, 1.0, 2.0]), &SorParams::default(), &NoProgress).unwrap();
        assert_eq!(s.neighbours_averaged, 2);
        assert!(s.warnings.iter().any(|w| w.contains("k = 16")));
        // All duplicates: nothing is an outlier (except under Open3D, which drops zero distances).
        let dup = line(&[3.0; 100]);
        let (m, _) = sor_mask(&dup, &SorParams::default(), &NoProgress).unwrap();
        assert!(m.iter().all(|&k| k));
        let bad = SorParams {
            k: 1,
            compat: SorCompat::CloudCompare,
            ..SorParams::default()
        };
        assert!(sor_mask(&dup, &bad, &NoProgress).is_err());
        let bad = SorParams {
            std_ratio: f64::NAN,
            ..SorParams::default()
        };
        assert!(sor_mask(&dup, &bad, &NoProgress).is_err());
    }

    #[test]
    fn compat_parses_from_toml() {
        let p: SorParams = toml::from_str("k = 6\ncompat = \"cloudcompare\"").unwrap();
        assert_eq!(p.compat, SorCompat::CloudCompare);
        assert_eq!(p.k, 6);
        assert_eq!(p.std_ratio, SorParams::default().std_ratio);
    }
}
