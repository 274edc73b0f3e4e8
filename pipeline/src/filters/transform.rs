//! Rigid (or affine) transform of a cloud (`filters.transform`), applied in f64 to world coordinates.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CHUNK, check_cancel, check_cloud};
use crate::cloud::{Cloud, Pose};
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

/// An affine map `p -> l p + t`, row-major.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Affine {
    pub l: [[f64; 3]; 3],
    pub t: [f64; 3],
}

fn mat_mul(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut r = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
        }
    }
    r
}

fn mat_vec(a: &[[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
    [
        a[0][0] * v[0] + a[0][1] * v[1] + a[0][2] * v[2],
        a[1][0] * v[0] + a[1][1] * v[1] + a[1][2] * v[2],
        a[2][0] * v[0] + a[2][1] * v[1] + a[2][2] * v[2],
    ]
}

fn det(a: &[[f64; 3]; 3]) -> f64 {
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

/// Cofactor matrix: `det(a) * inverse(a)^T`, the normal transform up to scale.
fn cofactor(a: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let c =
        |r0: usize, r1: usize, c0: usize, c1: usize| a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0];
    [
        [c(1, 2, 1, 2), -c(1, 2, 0, 2), c(1, 2, 0, 1)],
        [-c(0, 2, 1, 2), c(0, 2, 0, 2), -c(0, 2, 0, 1)],
        [c(0, 1, 1, 2), -c(0, 1, 0, 2), c(0, 1, 0, 1)],
    ]
}

/// Rotation matrix `Rz(yaw) Ry(pitch) Rx(roll)`.
pub fn rotation_from_rpy(rpy: [f64; 3]) -> [[f64; 3]; 3] {
    let (sr, cr) = rpy[0].sin_cos();
    let (sp, cp) = rpy[1].sin_cos();
    let (sy, cy) = rpy[2].sin_cos();
    let rx = [[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]];
    let ry = [[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]];
    let rz = [[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]];
    mat_mul(&rz, &mat_mul(&ry, &rx))
}

/// Unit quaternion `[w, x, y, z]` of a rotation matrix (Shepperd's method, stable for every angle).
pub fn quaternion_from_matrix(m: &[[f64; 3]; 3]) -> [f64; 4] {
    let tr = m[0][0] + m[1][1] + m[2][2];
    let q = if tr > 0.0 {
        let s = (tr + 1.0).sqrt() * 2.0;
        [
            0.25 * s,
            (m[2][1] - m[1][2]) / s,
            (m[0][2] - m[2][0]) / s,
            (m[1][0] - m[0][1]) / s,
        ]
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        let s = (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt() * 2.0;
        [
            (m[2][1] - m[1][2]) / s,
            0.25 * s,
            (m[0][1] + m[1][0]) / s,
            (m[0][2] + m[2][0]) / s,
        ]
    } else if m[1][1] > m[2][2] {
        let s = (1.0 + m[1][1] - m[0][0] - m[2][2]).sqrt() * 2.0;
        [
            (m[0][2] - m[2][0]) / s,
            (m[0][1] + m[1][0]) / s,
            0.25 * s,
            (m[1][2] + m[2][1]) / s,
        ]
    } else {
        let s = (1.0 + m[2][2] - m[0][0] - m[1][1]).sqrt() * 2.0;
        [
            (m[1][0] - m[0][1]) / s,
            (m[0][2] + m[2][0]) / s,
            (m[1][2] + m[2][1]) / s,
            0.25 * s,
        ]
    };
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    let q = [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
    // One sign convention (w >= 0) so equal rotations give equal quaternions.
    if q[0] < 0.0 {
        [-q[0], -q[1], -q[2], -q[3]]
    } else {
        q
    }
}

impl TransformParams {
    /// The affine map these parameters describe, validated.
    pub(crate) fn affine(&self) -> Result<Affine> {
        let name = "filters.transform";
        let a = match &self.matrix {
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
                Affine {
                    l: [
                        [m[0][0], m[0][1], m[0][2]],
                        [m[1][0], m[1][1], m[1][2]],
                        [m[2][0], m[2][1], m[2][2]],
                    ],
                    t: [m[0][3], m[1][3], m[2][3]],
                }
            }
            None => Affine {
                l: rotation_from_rpy(self.rotation_rpy),
                t: self.translation,
            },
        };
        if !a
            .l
            .iter()
            .flatten()
            .chain(a.t.iter())
            .all(|v| v.is_finite())
        {
            return Err(Error::parameter(name, "transform has a non-finite entry"));
        }
        if det(&a.l).abs() < 1e-12 {
            return Err(Error::parameter(
                name,
                "matrix is singular (it flattens the cloud)",
            ));
        }
        Ok(a)
    }
}

impl Affine {
    /// True when the linear part is a proper rotation (orthonormal, determinant +1) within 1e-6.
    pub fn is_rigid(&self) -> bool {
        let ltl = mat_mul(
            &[
                [self.l[0][0], self.l[1][0], self.l[2][0]],
                [self.l[0][1], self.l[1][1], self.l[2][1]],
                [self.l[0][2], self.l[1][2], self.l[2][2]],
            ],
            &self.l,
        );
        let ortho = (0..3)
            .all(|i| (0..3).all(|j| (ltl[i][j] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-6));
        ortho && det(&self.l) > 0.0
    }

    pub fn apply_point(&self, p: [f64; 3]) -> [f64; 3] {
        let v = mat_vec(&self.l, p);
        [v[0] + self.t[0], v[1] + self.t[1], v[2] + self.t[2]]
    }
}

/// Apply `affine` to the cloud in place (points, normals, scan poses). Returns warnings to report.
pub(crate) fn apply_affine(
    cloud: &mut Cloud,
    a: &Affine,
    progress: &dyn Progress,
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    let old_origin = cloud.origin;
    let new_origin = crate::cloud::origin_for(a.apply_point(old_origin));
    let rigid = a.is_rigid();
    cloud.positions.par_chunks_mut(CHUNK).try_for_each(|pts| {
        check_cancel(progress)?;
        for p in pts.iter_mut() {
            let w = [
                old_origin[0] + p[0] as f64,
                old_origin[1] + p[1] as f64,
                old_origin[2] + p[2] as f64,
            ];
            let w = a.apply_point(w);
            *p = [
                (w[0] - new_origin[0]) as f32,
                (w[1] - new_origin[1]) as f32,
                (w[2] - new_origin[2]) as f32,
            ];
        }
        progress.advance(pts.len() as u64);
        Ok::<(), Error>(())
    })?;
    cloud.origin = new_origin;
    if let Some(normals) = cloud.normals.as_mut() {
        // Normals transform by the inverse transpose; the cofactor matrix has its direction (sign fixed by det).
        let m = if rigid { a.l } else { cofactor(&a.l) };
        let s = if det(&a.l) < 0.0 { -1.0 } else { 1.0 };
        normals.par_chunks_mut(CHUNK).for_each(|ns| {
            for n in ns.iter_mut() {
                let v = mat_vec(&m, [n[0] as f64, n[1] as f64, n[2] as f64]);
                let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                if len > 0.0 {
                    *n = [
                        (s * v[0] / len) as f32,
                        (s * v[1] / len) as f32,
                        (s * v[2] / len) as f32,
                    ];
                }
            }
        });
    }
    if !rigid {
        if cloud.gamma.is_some() {
            warnings.push("transform is not rigid: gamma was not rescaled".to_string());
        }
        if cloud.meta.scans.iter().any(|s| s.world_from_scan.is_some()) {
            warnings.push(
                "transform is not rigid: scan poses keep their rotation, only their positions moved".to_string(),
            );
        }
    }
    for s in &mut cloud.meta.scans {
        if let Some(pose) = s.world_from_scan.as_mut() {
            let t = a.apply_point(pose.translation);
            let rotation_wxyz = if rigid {
                quaternion_from_matrix(&mat_mul(&a.l, &pose.rotation_matrix()))
            } else {
                pose.rotation_wxyz
            };
            *pose = Pose {
                rotation_wxyz,
                translation: t,
            };
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
    use std::f64::consts::FRAC_PI_2;

    #[test]
    fn yaw_rotates_points_normals_and_poses() {
        let mut c = Cloud::with_origin([10.0, 0.0, 0.0]);
        c.positions = vec![[1.0, 0.0, 0.0]];
        c.normals = Some(vec![[1.0, 0.0, 0.0]]);
        c.meta.scans.push(crate::cloud::ScanInfo {
            name: "s".into(),
            points: 0..1,
            world_from_scan: Some(Pose {
                rotation_wxyz: [1.0, 0.0, 0.0, 0.0],
                translation: [1.0, 0.0, 0.0],
            }),
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
        let n = c.normals.as_ref().unwrap()[0];
        assert!(n[0].abs() < 1e-6 && (n[1] - 1.0).abs() < 1e-6);
        let pose = c.meta.scans[0].world_from_scan.unwrap();
        assert!(
            (pose.translation[1] - 1.0).abs() < 1e-12 && (pose.translation[2] - 5.0).abs() < 1e-12
        );
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let q = pose.rotation_wxyz;
        assert!(
            (q[0] - h).abs() < 1e-12 && (q[3] - h).abs() < 1e-12,
            "{q:?}"
        );
    }

    #[test]
    fn rpy_order_is_z_y_x() {
        // Rz(yaw) Ry(pitch) Rx(roll) applied to x: roll leaves x alone, pitch by -90 deg sends x to +z.
        let r = rotation_from_rpy([0.3, -FRAC_PI_2, 0.0]);
        let v = mat_vec(&r, [1.0, 0.0, 0.0]);
        assert!((v[2] - 1.0).abs() < 1e-12, "{v:?}");
        let q = quaternion_from_matrix(&rotation_from_rpy([0.1, 0.2, 0.3]));
        let back = Pose {
            rotation_wxyz: q,
            translation: [0.0; 3],
        }
        .rotation_matrix();
        let r = rotation_from_rpy([0.1, 0.2, 0.3]);
        for i in 0..3 {
            for j in 0..3 {
                assert!((back[i][j] - r[i][j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn matrix_scale_keeps_normals_unit_and_rejects_bad_input() {
        let mut c = Cloud::default();
        c.positions = vec![[1.0, 1.0, 0.0]];
        c.normals = Some(vec![[
            std::f32::consts::FRAC_1_SQRT_2,
            std::f32::consts::FRAC_1_SQRT_2,
            0.0,
        ]]);
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
        let n = c.normals.as_ref().unwrap()[0];
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
