//! Rigid (or affine) transform of a cloud (`filters.transform`), applied in f64 to world coordinates.

use std::time::Instant;

use nalgebra::{
    Affine3, IsometryMatrix3, Matrix3, Matrix4, Rotation3, Translation3, UnitQuaternion, Vector3,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CHUNK, check_cancel, check_cloud};
use crate::cloud::Cloud;
use crate::crs;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::report::StageReport;

/// Parameters of `filters.transform`: either `matrix`, or `translation` and `rotation_rpy`
/// (`p' = R p + t` with `R = Rz(yaw) Ry(pitch) Rx(roll)`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransformParams {
    /// Row-major 4x4 affine matrix applied to world coordinates (metres); its last row must be [0, 0, 0, 1].
    /// Exclusive with `translation`/`rotation_rpy`. Default: none.
    pub matrix: Option<[[f64; 4]; 4]>,
    /// Translation added after the rotation, metres. Default: [0, 0, 0].
    pub translation: [f64; 3],
    /// Roll, pitch, yaw in radians (rotations about x, y, z; applied x first). Default: [0, 0, 0].
    pub rotation_rpy: [f64; 3],
}

/// Linear part `L` and translation `t` of an affine map `p -> L p + t`.
fn parts(a: &Affine3<f64>) -> (Matrix3<f64>, Vector3<f64>) {
    let m = a.matrix();
    (
        m.fixed_view::<3, 3>(0, 0).into_owned(),
        m.fixed_view::<3, 1>(0, 3).into_owned(),
    )
}

/// True when `l` is a proper rotation (orthonormal, determinant +1) within 1e-6.
fn is_rotation(l: &Matrix3<f64>) -> bool {
    let off = l.transpose() * l - Matrix3::identity();
    off.iter().all(|v| v.abs() < 1e-6) && l.determinant() > 0.0
}

/// Unit quaternion of a rotation matrix, with one sign convention (w >= 0) so equal rotations give equal
/// quaternions.
fn quaternion_of(l: &Matrix3<f64>) -> UnitQuaternion<f64> {
    let q =
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(*l)).into_inner();
    UnitQuaternion::new_normalize(if q.w < 0.0 { -q } else { q })
}

impl TransformParams {
    /// Coordinates multiplied by `factor` about the origin: a unit conversion into metres (0.3048 for feet,
    /// 0.001 for millimetres). Validated where it is applied, like every transform.
    pub fn scale(factor: f64) -> TransformParams {
        let f = factor;
        TransformParams {
            matrix: Some([
                [f, 0.0, 0.0, 0.0],
                [0.0, f, 0.0, 0.0],
                [0.0, 0.0, f, 0.0],
                [0.0, 0.0, 0.0, 1.0],
            ]),
            ..TransformParams::default()
        }
    }

    /// The affine map these parameters describe, validated.
    pub(crate) fn affine(&self) -> Result<Affine3<f64>> {
        let name = "filters.transform";
        let m = match &self.matrix {
            Some(m) => {
                if self.translation != [0.0; 3] || self.rotation_rpy != [0.0; 3] {
                    return Err(Error::parameter(
                        name,
                        "give either matrix or translation/rotation_rpy, not both",
                    ));
                }
                if m[3] != [0.0, 0.0, 0.0, 1.0] {
                    return Err(Error::parameter(
                        name,
                        format!("matrix last row must be [0, 0, 0, 1], found {:?}", m[3]),
                    ));
                }
                Matrix4::from_row_slice(m.as_flattened())
            }
            None => {
                let [roll, pitch, yaw] = self.rotation_rpy;
                IsometryMatrix3::from_parts(
                    Translation3::from(self.translation),
                    Rotation3::from_euler_angles(roll, pitch, yaw),
                )
                .to_homogeneous()
            }
        };
        if !m.iter().all(|v| v.is_finite()) {
            return Err(Error::parameter(name, "transform has a non-finite entry"));
        }
        let a = Affine3::from_matrix_unchecked(m);
        if parts(&a).0.determinant().abs() < 1e-12 {
            return Err(Error::parameter(
                name,
                "matrix is singular (it flattens the cloud)",
            ));
        }
        Ok(a)
    }
}

/// Apply `world_from_input` to the cloud in place (points, normals, scan poses). Returns warnings to report.
pub(crate) fn apply_affine(
    cloud: &mut Cloud,
    world_from_input: &Affine3<f64>,
    progress: &dyn Progress,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    let (l, t) = parts(world_from_input);
    let old_origin = Vector3::from(cloud.origin);
    let new_origin = Vector3::from(crate::cloud::origin_for((l * old_origin + t).into()));
    let rigid = is_rotation(&l);
    cloud
        .positions_mut()
        .par_chunks_mut(CHUNK)
        .try_for_each(|pts| {
            check_cancel(progress)?;
            for p in pts.iter_mut() {
                let w = old_origin + Vector3::from(*p).cast::<f64>();
                *p = (l * w + t - new_origin).cast::<f32>().into();
            }
            progress.advance(pts.len() as u64);
            Ok::<(), Error>(())
        })?;
    cloud.origin = new_origin.into();
    if let Some(normals) = cloud.normals_mut() {
        // Normals transform by the inverse transpose (the rotation itself when rigid).
        let normal_map = if rigid {
            l
        } else {
            l.try_inverse()
                .ok_or_else(|| Error::parameter("filters.transform", "matrix is singular"))?
                .transpose()
        };
        normals.par_chunks_mut(CHUNK).for_each(|ns| {
            for n in ns.iter_mut() {
                let v = normal_map * Vector3::from(*n).cast::<f64>();
                let len = v.norm();
                if len > 0.0 {
                    *n = (v / len).cast::<f32>().into();
                }
            }
        });
    }
    if !rigid {
        if cloud.gamma().is_some() {
            warnings.push("transform is not rigid: gamma was not rescaled".to_string());
        }
        if cloud.meta.scans.iter().any(|s| s.world_from_scan.is_some()) {
            warnings.push(
                "transform is not rigid: scan poses keep their rotation, only their positions moved".to_string(),
            );
        }
    }
    let identity = (l - Matrix3::identity()).amax() <= 1e-12 && t.amax() <= 1e-12;
    if !identity && crs::declared(&cloud.meta) {
        // The points now lie in the frame the transform names, which the file's CRS does not describe: a GIS
        // export that carried it would place the map wrongly.
        warnings.push(format!(
            "the transform takes the points out of the coordinate system they declare ({}), which is dropped",
            crs::name(&cloud.meta).unwrap_or_default()
        ));
        cloud.meta.crs_wkt = None;
        cloud.meta.las_geotiff.clear();
    }
    for s in &mut cloud.meta.scans {
        // Poses were in the input's frame: world_from_scan = world_from_input * input_from_scan.
        if let Some(world_from_scan) = s.world_from_scan.as_mut() {
            world_from_scan.translation.vector = l * world_from_scan.translation.vector + t;
            if rigid {
                let r = l * world_from_scan.rotation.to_rotation_matrix().into_inner();
                world_from_scan.rotation = quaternion_of(&r);
            }
        }
    }
    Ok(warnings)
}

/// Transform the cloud in place: world coordinates, normals (rotated; inverse-transposed for a non-rigid
/// matrix), and scan poses. The origin moves to the transformed origin rounded to whole metres, so relative
/// positions stay small.
pub fn transform(
    cloud: &mut Cloud,
    params: &TransformParams,
    progress: &dyn Progress,
) -> Result<StageReport> {
    let started = Instant::now();
    let mut report = StageReport::new("filters.transform", cloud.len());
    let a = params.affine()?;
    check_cloud(cloud)?;
    progress.stage("transform", cloud.len() as u64);
    report.warnings = apply_affine(cloud, &a, progress)?;
    report.finish(cloud.len(), started);
    Ok(report)
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;
    use nalgebra::{Isometry3, Point3};
    use std::f64::consts::FRAC_PI_2;

    #[test]
    fn yaw_rotates_points_normals_and_poses() {
        let mut c = Cloud::from_positions([10.0, 0.0, 0.0], vec![[1.0, 0.0, 0.0]]);
        c.set_normals(Some(vec![[1.0, 0.0, 0.0]])).unwrap();
        c.meta.scans.push(crate::cloud::ScanInfo {
            name: "s".into(),
            points: 0..1,
            world_from_scan: Some(Isometry3::translation(1.0, 0.0, 0.0)),
        });
        let p = TransformParams {
            rotation_rpy: [0.0, 0.0, FRAC_PI_2],
            translation: [0.0, 0.0, 5.0],
            ..Default::default()
        };
        transform(&mut c, &p, &NoProgress).unwrap();
        let w = c.world(0);
        assert!(
            (w[0]).abs() < 1e-5 && (w[1] - 11.0).abs() < 1e-5 && (w[2] - 5.0).abs() < 1e-9,
            "{w:?}"
        );
        let n = c.normals().unwrap()[0];
        assert!(n[0].abs() < 1e-6 && (n[1] - 1.0).abs() < 1e-6);
        let world_from_scan = c.meta.scans[0].world_from_scan.unwrap();
        let t = world_from_scan.translation.vector;
        assert!((t - Vector3::new(0.0, 1.0, 5.0)).norm() < 1e-12, "{t:?}");
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let q = crate::pose::rotation_wxyz(&world_from_scan);
        assert!(
            (q[0] - h).abs() < 1e-12 && (q[3] - h).abs() < 1e-12,
            "{q:?}"
        );
    }

    #[test]
    fn rpy_order_is_z_y_x() {
        // Rz(yaw) Ry(pitch) Rx(roll) applied to x: roll leaves x alone, pitch by -90 deg sends x to +z.
        let p = TransformParams {
            rotation_rpy: [0.3, -FRAC_PI_2, 0.0],
            ..Default::default()
        };
        let v = p.affine().unwrap() * Point3::new(1.0, 0.0, 0.0);
        assert!((v.z - 1.0).abs() < 1e-12, "{v:?}");
        // The quaternion of a rotation matrix gives that matrix back, with w >= 0.
        for rpy in [
            [0.1, 0.2, 0.3],
            [3.0, -1.0, 2.5],
            [0.0, 0.0, std::f64::consts::PI],
        ] {
            let r = Rotation3::from_euler_angles(rpy[0], rpy[1], rpy[2]).into_inner();
            let q = quaternion_of(&r);
            assert!(q.w >= 0.0, "{q:?}");
            let back = q.to_rotation_matrix().into_inner();
            assert!((back - r).amax() < 1e-12, "{rpy:?}");
        }
    }

    /// A moved cloud no longer lies in the coordinate system its file declared; an identity keeps it.
    #[test]
    fn a_transform_drops_the_crs_an_identity_keeps_it() {
        let declared = || {
            let mut c = Cloud::from_positions([100.0, 0.0, 0.0], vec![[1.0, 1.0, 0.0]]);
            c.meta.crs_wkt = Some("PROJCS[\"WGS 84 / UTM zone 32N\"]".into());
            c.meta.las_geotiff = vec![(34735, vec![1, 0, 1, 0, 0, 0, 0, 0])];
            c
        };
        let mut c = declared();
        let r = transform(&mut c, &TransformParams::default(), &NoProgress).unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(c.meta.crs_wkt.is_some() && !c.meta.las_geotiff.is_empty());
        let shift = TransformParams {
            translation: [-100.0, 0.0, 0.0],
            ..Default::default()
        };
        let r = transform(&mut c, &shift, &NoProgress).unwrap();
        assert_eq!(
            r.warnings,
            [
                "the transform takes the points out of the coordinate system they declare (WGS 84 / UTM zone 32N), \
              which is dropped"
            ]
        );
        assert!(c.meta.crs_wkt.is_none() && c.meta.las_geotiff.is_empty());
    }

    #[test]
    fn matrix_scale_keeps_normals_unit_and_rejects_bad_input() {
        let mut c = Cloud::from_positions([0.0; 3], vec![[1.0, 1.0, 0.0]]);
        c.set_normals(Some(vec![[
            std::f32::consts::FRAC_1_SQRT_2,
            std::f32::consts::FRAC_1_SQRT_2,
            0.0,
        ]]))
        .unwrap();
        let m = [
            [2.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ];
        let p = TransformParams {
            matrix: Some(m),
            ..Default::default()
        };
        transform(&mut c, &p, &NoProgress).unwrap();
        assert_eq!(c.world(0), [2.0, 1.0, 0.0]);
        let n = c.normals().unwrap()[0];
        // Plane x + y = 2 becomes x/2 + y = 2: normal (0.5, 1) normalised.
        assert!(
            (n[0] - 0.4472136).abs() < 1e-6 && (n[1] - 0.8944272).abs() < 1e-6,
            "{n:?}"
        );
        let mut bad = m;
        bad[3] = [0.0, 0.0, 1.0, 1.0];
        let p = TransformParams {
            matrix: Some(bad),
            ..Default::default()
        };
        assert!(transform(&mut c, &p, &NoProgress).is_err());
        let p = TransformParams {
            matrix: Some(m),
            translation: [1.0, 0.0, 0.0],
            ..Default::default()
        };
        assert!(transform(&mut c, &p, &NoProgress).is_err());
        let p = TransformParams {
            translation: [f64::NAN, 0.0, 0.0],
            ..Default::default()
        };
        assert!(transform(&mut c, &p, &NoProgress).is_err());
    }
}
