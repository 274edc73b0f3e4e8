//! Box crop in world coordinates (`filters.crop`).

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CHUNK, check_cancel, check_cloud, select_subset};
use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::report::StageReport;

/// Parameters of `filters.crop`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CropParams {
    /// Minimum corner of the box in world coordinates (the cloud's frame, origin applied), metres, inclusive.
    /// Default: [-inf, -inf, -inf] (unbounded).
    #[serde(deserialize_with = "min_corner")]
    pub min: [f64; 3],
    /// Maximum corner of the box in world coordinates, metres, inclusive. Default: [inf, inf, inf].
    #[serde(deserialize_with = "max_corner")]
    pub max: [f64; 3],
    /// Keep the points outside the box instead of inside. Default: false.
    pub invert: bool,
}

impl Default for CropParams {
    fn default() -> Self {
        CropParams {
            min: [f64::NEG_INFINITY; 3],
            max: [f64::INFINITY; 3],
            invert: false,
        }
    }
}

/// A minimum corner whose unbounded sides are `null`: JSON has no infinity, and serde_json writes one as `null`
/// (the recipe in a map's report), so `null` reads back as the unbounded side it was.
fn min_corner<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<[f64; 3], D::Error> {
    corner(d, f64::NEG_INFINITY)
}

/// A maximum corner whose unbounded sides are `null` (see [`min_corner`]).
fn max_corner<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<[f64; 3], D::Error> {
    corner(d, f64::INFINITY)
}

fn corner<'de, D: serde::Deserializer<'de>>(
    d: D,
    unbounded: f64,
) -> std::result::Result<[f64; 3], D::Error> {
    let sides = <[Option<f64>; 3]>::deserialize(d)?;
    Ok(sides.map(|s| s.unwrap_or(unbounded)))
}

/// Keep the points inside (or, with `invert`, outside) the box. An empty input gives an empty output; a box that
/// removes every point of a non-empty cloud is an `Error::Parameter` (almost always a unit or frame mistake).
pub fn crop(
    cloud: &Cloud,
    params: &CropParams,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport)> {
    let started = Instant::now();
    let mut report = StageReport::new("filters.crop", cloud.len());
    for k in 0..3 {
        if params.min[k].is_nan() || params.max[k].is_nan() {
            return Err(Error::parameter(
                "filters.crop",
                "box corners must not be NaN",
            ));
        }
        if params.min[k] > params.max[k] {
            return Err(Error::parameter(
                "filters.crop",
                format!(
                    "min {:?} is above max {:?} on axis {k}",
                    params.min, params.max
                ),
            ));
        }
    }
    check_cloud(cloud)?;
    progress.stage("crop", cloud.len() as u64);
    let o = cloud.origin;
    let mut mask = vec![false; cloud.len()];
    mask.par_chunks_mut(CHUNK)
        .zip(cloud.positions().par_chunks(CHUNK))
        .try_for_each(|(m, pts)| {
            check_cancel(progress)?;
            for (m, p) in m.iter_mut().zip(pts) {
                let mut inside = true;
                for k in 0..3 {
                    let w = o[k] + p[k] as f64;
                    inside &= w >= params.min[k] && w <= params.max[k];
                }
                *m = inside != params.invert;
            }
            progress.advance(pts.len() as u64);
            Ok::<(), Error>(())
        })?;
    let keep = super::mask_indices(&mask);
    if keep.is_empty() && !cloud.is_empty() {
        let fmt = |v: [f64; 3]| format!("[{:.3}, {:.3}, {:.3}]", v[0], v[1], v[2]);
        let bounds = cloud.bounds().map_or(String::new(), |(lo, hi)| {
            format!(" (the points span {}..{})", fmt(lo), fmt(hi))
        });
        return Err(Error::parameter(
            "filters.crop",
            format!(
                "crop box {}..{}{} removes every point{bounds}",
                fmt(params.min),
                fmt(params.max),
                if params.invert { " (inverted)" } else { "" },
            ),
        ));
    }
    let out = select_subset(cloud, &keep);
    report
        .removed
        .push(("outside crop box".into(), cloud.len() - keep.len()));
    report.finish(out.len(), started);
    Ok((out, report))
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    fn line() -> Cloud {
        let mut c = Cloud::from_positions(
            [1000.0, 0.0, 0.0],
            (0..10).map(|i| [i as f32, 0.0, 0.0]).collect(),
        );
        c.set_intensity(Some((0..10).map(|i| i as f32).collect()))
            .unwrap();
        c
    }

    #[test]
    fn crops_in_world_coordinates() {
        let c = line();
        let p = CropParams {
            min: [1002.0, -1.0, -1.0],
            max: [1005.0, 1.0, 1.0],
            invert: false,
        };
        let (out, r) = crop(&c, &p, &NoProgress).unwrap();
        assert_eq!(out.intensity(), Some(&[2.0, 3.0, 4.0, 5.0][..]));
        assert_eq!(r.points_out, 4);
        assert!(r.warnings.iter().any(|w| w.contains("60.0%")));
        let (inv, _) = crop(
            &c,
            &CropParams {
                invert: true,
                ..p.clone()
            },
            &NoProgress,
        )
        .unwrap();
        assert_eq!(inv.len(), 6);
    }

    #[test]
    fn crop_removing_everything_is_an_error() {
        let c = line();
        let p = CropParams {
            min: [0.0; 3],
            max: [1.0; 3],
            invert: false,
        };
        let e = crop(&c, &p, &NoProgress).unwrap_err();
        assert!(e.to_string().contains("removes every point"), "{e}");
        let bad = CropParams {
            min: [1.0; 3],
            max: [0.0; 3],
            invert: false,
        };
        assert!(crop(&c, &bad, &NoProgress).is_err());
        let (empty, _) = crop(&Cloud::default(), &CropParams::default(), &NoProgress).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn params_from_toml() {
        let p: CropParams = toml::from_str("min = [0.0, 1.0, 2.0]\ninvert = true").unwrap();
        assert_eq!(p.min, [0.0, 1.0, 2.0]);
        assert_eq!(p.max, [f64::INFINITY; 3]);
        assert!(toml::from_str::<CropParams>("nope = 1").is_err());
    }
}
