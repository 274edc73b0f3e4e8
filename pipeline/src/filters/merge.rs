//! Merge several clouds into one (`filters.merge`).
//!
//! Each input may carry its own transform (for instance an E57 scan's pose when the reader left points in the
//! scanner frame; readers that already applied the pose pass `None`). Only attributes present in every input
//! are kept ([`Cloud::append`]): an attribute missing on one side would leave holes.

use std::time::Instant;

use super::transform::{TransformParams, apply_affine};
use super::{check_cancel, check_cloud};
use crate::cloud::Cloud;
use crate::crs;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::report::StageReport;

/// Merge `inputs` (each with an optional transform applied first) into one cloud around the first input's
/// origin. Scan ranges are shifted to the merged indices; the report warns about attributes that were dropped
/// because some input lacked them.
pub fn merge(
    inputs: Vec<(Cloud, Option<TransformParams>)>,
    progress: &dyn Progress,
) -> Result<(Cloud, StageReport)> {
    let started = Instant::now();
    let total: usize = inputs.iter().map(|(c, _)| c.len()).sum();
    let mut report = StageReport::new("filters.merge", total);
    progress.stage("merge", total as u64);
    let mut out: Option<Cloud> = None;
    let mut all_attrs: Vec<crate::cloud::Attribute> = Vec::new();
    let mut all_extra: Vec<String> = Vec::new();
    for (i, (mut cloud, t)) in inputs.into_iter().enumerate() {
        check_cancel(progress)?;
        check_cloud(&cloud)?;
        // A transformed input is in the map frame by its transform, whatever its file declared.
        let transformed = t.is_some();
        if let Some(t) = t {
            let a = t.affine()?;
            for w in apply_affine(&mut cloud, &a, progress)? {
                report.warnings.push(format!("input {i}: {w}"));
            }
        }
        for a in cloud.attributes() {
            if !all_attrs.contains(&a) {
                all_attrs.push(a);
            }
        }
        for d in cloud.extras() {
            if !all_extra.contains(&d.name) {
                all_extra.push(d.name.clone());
            }
        }
        progress.advance(cloud.len() as u64);
        match out.as_mut() {
            None => out = Some(cloud),
            Some(o) => {
                check_reach(o, &cloud, i)?;
                if let Some(w) = crs_mismatch(o, &cloud, i).filter(|_| !transformed) {
                    report.warnings.push(w);
                }
                o.append(&cloud);
            }
        }
    }
    let out = out.unwrap_or_default();
    let kept = out.attributes();
    let dropped: Vec<String> = all_attrs
        .iter()
        .filter(|a| !kept.contains(a))
        .map(|a| format!("{a:?}").to_lowercase())
        .chain(all_extra.iter().filter(|n| out.extra(n).is_none()).cloned())
        .collect();
    if !dropped.is_empty() {
        report.warnings.push(format!(
            "dropped attributes missing from some inputs: {}",
            dropped.join(", ")
        ));
    }
    report.finish(out.len(), started);
    Ok((out, report))
}

/// Beyond this distance from the merged cloud's origin, its f32 positions round by more than a millimetre.
const MAX_REACH_M: f64 = 16_384.0;

/// Refuses to append input `i` when it lies so far from `merged`'s origin that its points would round by more
/// than a millimetre (and farther than `merged`'s own points lie): inputs kilometres apart are nearly always
/// in two coordinate systems, and a map holds positions as 32-bit floats around one origin.
fn check_reach(merged: &Cloud, cloud: &Cloud, i: usize) -> Result<()> {
    let reach = |c: &Cloud| {
        c.bounds().map_or(0.0, |(lo, hi)| {
            (0..3)
                .map(|k| {
                    (lo[k] - merged.origin[k])
                        .abs()
                        .max((hi[k] - merged.origin[k]).abs())
                })
                .fold(0.0, f64::max)
        })
    };
    let (own, theirs) = (reach(merged), reach(cloud));
    if theirs <= MAX_REACH_M || theirs <= own {
        return Ok(());
    }
    let step = 2f64.powi(theirs.log2().floor() as i32 - 24);
    Err(Error::parameter(
        "inputs",
        format!(
            "input {i}{} lies up to {theirs:.0} m from the first input's origin ({:.0}, {:.0}, {:.0}), where a map's \
             32-bit positions would round it to {step:.3} m: are the inputs in one coordinate system? Reproject \
             them to one, or prepare them as separate maps",
            source_of(cloud),
            merged.origin[0],
            merged.origin[1],
            merged.origin[2],
        ),
    ))
}

/// A warning when input `i` declares another coordinate system than the inputs before it, or declares none where
/// they do: the merged cloud keeps the first declared one, and its points are taken as they are.
fn crs_mismatch(merged: &Cloud, cloud: &Cloud, i: usize) -> Option<String> {
    let (ours, theirs) = (crs::name(&merged.meta), crs::name(&cloud.meta));
    let src = source_of(cloud);
    match (&ours, &theirs) {
        (Some(a), Some(b)) if a != b => Some(format!(
            "input {i}{src} declares the coordinate system {b}, the inputs before it {a}: the map keeps {a} and \
             takes the points as they are; reproject the inputs to one system first"
        )),
        (Some(a), None) => Some(format!(
            "input {i}{src} declares no coordinate system: its points are taken as being in {a}"
        )),
        _ => None,
    }
}

fn source_of(c: &Cloud) -> String {
    c.meta
        .source
        .as_ref()
        .map(|p| format!(" ({})", p.display()))
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;

    #[test]
    fn merges_with_transforms_and_drops_uncommon_attributes() {
        let mut a = Cloud::from_positions([100.0, 0.0, 0.0], vec![[1.0, 0.0, 0.0]]);
        a.set_intensity(Some(vec![5.0])).unwrap();
        a.set_ring(Some(vec![1])).unwrap();
        let mut b = Cloud::from_positions([0.0; 3], vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]);
        b.set_intensity(Some(vec![6.0, 7.0])).unwrap();
        let t = TransformParams {
            translation: [200.0, 0.0, 0.0],
            ..Default::default()
        };
        let (m, r) = merge(vec![(a, None), (b, Some(t))], &NoProgress).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m.world(1), [200.0, 0.0, 0.0]);
        assert_eq!(m.world(2), [201.0, 0.0, 0.0]);
        assert_eq!(m.intensity(), Some(&[5.0, 6.0, 7.0][..]));
        assert!(m.ring().is_none());
        assert!(
            r.warnings.iter().any(|w| w.contains("ring")),
            "{:?}",
            r.warnings
        );
        let (e, _) = merge(Vec::new(), &NoProgress).unwrap();
        assert!(e.is_empty());
    }

    /// Inputs in two coordinate systems: a differing CRS is warned about; one kilometres away, where its points
    /// would round by more than a millimetre, is refused.
    #[test]
    fn inputs_in_other_coordinate_systems_are_told() {
        let mut a = Cloud::from_positions([637_000.0, 851_000.0, 100.0], vec![[1.0, 2.0, 3.0]]);
        a.meta.crs_wkt = Some("PROJCS[\"NAD83 / Oregon GIC Lambert (ft)\",GEOGCS[]]".into());
        let mut b = Cloud::from_positions([637_500.0, 851_000.0, 100.0], vec![[1.0, 2.0, 3.0]]);
        b.meta.crs_wkt = Some("PROJCS[\"ETRS89 / UTM zone 32N\"]".into());
        let (_, r) = merge(vec![(a.clone(), None), (b, None)], &NoProgress).unwrap();
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("ETRS89 / UTM zone 32N") && w.contains("NAD83 / Oregon")),
            "{:?}",
            r.warnings
        );
        let far = Cloud::from_positions([460_000.0, 5_300_000.0, 0.0], vec![[0.0; 3]]);
        let e = merge(vec![(a.clone(), None), (far, None)], &NoProgress).unwrap_err();
        assert!(e.to_string().contains("one coordinate system"), "{e}");
        // A second input 2 km off is a site, not another system.
        let near = Cloud::from_positions([639_000.0, 851_000.0, 100.0], vec![[0.0; 3]]);
        let (m, r) = merge(vec![(a, None), (near, None)], &NoProgress).unwrap();
        assert_eq!(m.len(), 2);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("declares no coordinate system"))
        );
    }
}
