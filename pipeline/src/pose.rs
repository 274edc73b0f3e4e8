//! Poses: nalgebra's [`Isometry3<f64>`] across every crate, named by frames (`world_from_scan` maps scan
//! coordinates to world coordinates, so chains read right to left), and the form they are stored in.
//!
//! Stored poses (map metadata, `aerie info --json`) keep the form the pipeline has always written,
//! `{ rotation_wxyz = [w, x, y, z], translation = [x, y, z] }`: fields use
//! `#[serde(with = "aerie_pipeline::pose::serde_wxyz")]` (or [`serde_wxyz_option`] for an `Option`).
//! A stored quaternion is normalised when read ([`from_wxyz`]), so a slightly denormalised one still gives a
//! rotation.

use nalgebra::{Quaternion, Translation3, UnitQuaternion};
use serde::{Deserialize, Serialize};

pub use nalgebra::Isometry3;

/// A pose from a quaternion `[w, x, y, z]` and a translation in metres, or `None` when a value is not finite.
///
/// The quaternion is normalised; a zero quaternion is the identity rotation. One whose norm is 1 to rounding
/// (within 4 ulps) is kept as given, so a pose read and written again keeps every digit.
pub fn from_wxyz(rotation_wxyz: [f64; 4], translation: [f64; 3]) -> Option<Isometry3<f64>> {
    if !rotation_wxyz
        .iter()
        .chain(&translation)
        .all(|v| v.is_finite())
    {
        return None;
    }
    let [w, x, y, z] = rotation_wxyz;
    let q = Quaternion::new(w, x, y, z);
    let norm = q.norm();
    let rotation = if (norm - 1.0).abs() <= 4.0 * f64::EPSILON {
        UnitQuaternion::new_unchecked(q)
    } else if norm > 0.0 {
        UnitQuaternion::new_unchecked(q / norm)
    } else {
        UnitQuaternion::identity()
    };
    Some(Isometry3::from_parts(
        Translation3::from(translation),
        rotation,
    ))
}

/// The pose's rotation as a unit quaternion `[w, x, y, z]`.
pub fn rotation_wxyz(pose: &Isometry3<f64>) -> [f64; 4] {
    let q = pose.rotation.quaternion();
    [q.w, q.i, q.j, q.k]
}

/// The stored form of a pose.
#[derive(Serialize, Deserialize)]
struct Stored {
    rotation_wxyz: [f64; 4],
    translation: [f64; 3],
}

impl From<&Isometry3<f64>> for Stored {
    fn from(pose: &Isometry3<f64>) -> Stored {
        Stored {
            rotation_wxyz: rotation_wxyz(pose),
            translation: pose.translation.vector.into(),
        }
    }
}

impl Stored {
    fn pose<E: serde::de::Error>(&self) -> Result<Isometry3<f64>, E> {
        from_wxyz(self.rotation_wxyz, self.translation).ok_or_else(|| {
            E::custom(format!(
                "pose has a non-finite rotation or translation: rotation_wxyz = {:?}, translation = {:?}",
                self.rotation_wxyz, self.translation
            ))
        })
    }
}

/// Serde adapter for an [`Isometry3<f64>`] field stored as `{ rotation_wxyz, translation }`.
pub mod serde_wxyz {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Isometry3, Stored};

    /// Write `pose` as `{ rotation_wxyz = [w, x, y, z], translation = [x, y, z] }`.
    pub fn serialize<S: Serializer>(pose: &Isometry3<f64>, s: S) -> Result<S::Ok, S::Error> {
        Stored::from(pose).serialize(s)
    }

    /// Read `{ rotation_wxyz, translation }`, normalising the quaternion (see [`super::from_wxyz`]).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Isometry3<f64>, D::Error> {
        Stored::deserialize(d)?.pose()
    }
}

/// Serde adapter for an `Option<Isometry3<f64>>` field: absent (or null) is `None`. Pair it with
/// `#[serde(default)]` so a missing field reads as `None`.
pub mod serde_wxyz_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Isometry3, Stored};

    /// Write `Some(pose)` as `{ rotation_wxyz, translation }` and `None` as the format's none.
    // serde's `with` passes the field by reference.
    #[allow(clippy::ref_option)]
    pub fn serialize<S: Serializer>(
        pose: &Option<Isometry3<f64>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        pose.as_ref().map(Stored::from).serialize(s)
    }

    /// Read an optional `{ rotation_wxyz, translation }` (see [`super::from_wxyz`]).
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Isometry3<f64>>, D::Error> {
        Option::<Stored>::deserialize(d)?
            .map(|s| s.pose())
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Point3, Vector3};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Scan {
        #[serde(with = "serde_wxyz")]
        world_from_scan: Isometry3<f64>,
        #[serde(default, with = "serde_wxyz_option")]
        world_from_sensor: Option<Isometry3<f64>>,
    }

    #[test]
    fn old_json_form_round_trips_digit_for_digit() {
        // (stored text, whether every quaternion in it is unit, so the text comes back unchanged)
        let cases = [
            (
                r#"{"world_from_scan":{"rotation_wxyz":[1.0,0.0,0.0,0.0],"translation":[637010.0,851010.0,121.5]},"world_from_sensor":null}"#,
                true,
            ),
            (
                r#"{"world_from_scan":{"rotation_wxyz":[0.7071067811865476,0.0,0.0,0.7071067811865476],"translation":[1.0,2.0,3.0]},"world_from_sensor":null}"#,
                true,
            ),
            (
                r#"{"world_from_scan":{"rotation_wxyz":[-0.2526,0.5963,0.3417,0.6817],"translation":[-1.5,0.25,0.001]},"world_from_sensor":{"rotation_wxyz":[0.9,0.1,-0.2,0.3],"translation":[0.0,0.0,0.0]}}"#,
                false,
            ),
        ];
        for (text, unit) in cases {
            let s: Scan = serde_json::from_str(text).unwrap();
            let again = serde_json::to_string(&s).unwrap();
            if unit {
                assert_eq!(again, text);
            }
            // serde_json's default float parser may miss the last bit; the pose is the same to rounding.
            let back: Scan = serde_json::from_str(&again).unwrap();
            let (a, b) = (back.world_from_scan, s.world_from_scan);
            assert!((a.to_homogeneous() - b.to_homogeneous()).amax() < 1e-15);
        }
        // Once normalised, a pose survives any number of round trips unchanged (TOML parses floats exactly).
        let s: Scan = toml::from_str(
            "[world_from_scan]\nrotation_wxyz = [0.9, 0.1, -0.2, 0.3]\ntranslation = [1.0, 2.0, 3.0]\n",
        )
        .unwrap();
        let again = toml::to_string(&s).unwrap();
        let back: Scan = toml::from_str(&again).unwrap();
        assert_eq!(back, s);
        assert_eq!(toml::to_string(&back).unwrap(), again);
        // A missing optional pose reads as none; TOML omits it.
        let s: Scan = toml::from_str(
            "[world_from_scan]\nrotation_wxyz = [1.0, 0.0, 0.0, 0.0]\ntranslation = [1.0, 2.0, 3.0]\n",
        )
        .unwrap();
        assert_eq!(s.world_from_sensor, None);
        assert_eq!(
            toml::to_string(&s).unwrap(),
            "[world_from_scan]\nrotation_wxyz = [1.0, 0.0, 0.0, 0.0]\ntranslation = [1.0, 2.0, 3.0]\n"
        );
    }

    #[test]
    fn denormalised_quaternion_is_normalised() {
        // 2 * (the unit quaternion of 90 degrees about z).
        let text = r#"{"world_from_scan":{"rotation_wxyz":[1.4142135623730951,0.0,0.0,1.4142135623730951],"translation":[1.0,0.0,0.0]}}"#;
        let s: Scan = serde_json::from_str(text).unwrap();
        let q = rotation_wxyz(&s.world_from_scan);
        assert!(
            (q.iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-15,
            "{q:?}"
        );
        let p = s.world_from_scan * Point3::new(1.0, 0.0, 0.0);
        assert!((p - Point3::new(1.0, 1.0, 0.0)).norm() < 1e-12, "{p:?}");
        let v = s.world_from_scan * Vector3::new(1.0, 0.0, 0.0);
        assert!((v - Vector3::new(0.0, 1.0, 0.0)).norm() < 1e-12, "{v:?}");
    }

    #[test]
    fn zero_quaternion_is_identity_and_non_finite_is_rejected() {
        let zero = from_wxyz([0.0; 4], [1.0, 2.0, 3.0]).unwrap();
        assert_eq!(rotation_wxyz(&zero), [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(from_wxyz([1.0, 0.0, 0.0, f64::NAN], [0.0; 3]), None);
        assert_eq!(
            from_wxyz([1.0, 0.0, 0.0, 0.0], [f64::INFINITY, 0.0, 0.0]),
            None
        );
        let e = toml::from_str::<Scan>(
            "[world_from_scan]\nrotation_wxyz = [1.0, 0.0, 0.0, nan]\ntranslation = [0.0, 0.0, 0.0]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("non-finite"), "{e}");
    }
}
