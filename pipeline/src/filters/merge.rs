//! Merge several clouds into one (`filters.merge`).
//!
//! Each input may carry its own transform (for instance an E57 scan's pose when the reader left points in the
//! scanner frame; readers that already applied the pose pass `None`). Only attributes present in every input
//! are kept ([`Cloud::append`]): an attribute missing on one side would leave holes.

use std::time::Instant;

use super::transform::{TransformParams, apply_affine};
use super::{check_cancel, check_cloud};
use crate::cloud::Cloud;
use crate::error::Result;
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
            Some(o) => o.append(&cloud),
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
}
