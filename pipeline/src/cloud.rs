//! The in-memory point cloud: a structure of arrays with an f64 origin.
//!
//! Invariants (kept by every constructor and stage, checked by [`Cloud::validate`]):
//! - every present attribute array has exactly `positions.len()` entries;
//! - the world position of point `i` is `origin + positions[i]` computed in f64, so georeferenced coordinates
//!   (1e5..1e7 m) keep millimetres as long as the cloud's extent stays within a few kilometres of the origin;
//! - positions are finite (readers reject NaN/inf coordinates).

use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::pose::Isometry3;

/// A point cloud. Attributes are optional and, when present, parallel to `positions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cloud {
    /// Origin of `positions` in the cloud's frame (map or CRS coordinates), metres.
    pub origin: [f64; 3],
    /// Positions relative to `origin`, metres.
    pub positions: Vec<[f32; 3]>,
    /// Return strength as the source stored it (LAS: 0..65535; E57: usually 0..1; PCD/PLY: any float).
    pub intensity: Option<Vec<f32>>,
    /// Colour, 16 bits per channel. 8-bit sources are widened by 257 (so 255 -> 65535); 8-bit writers take
    /// the high byte.
    pub color: Option<Vec<[u16; 3]>>,
    /// Unit surface normals.
    pub normals: Option<Vec<[f32; 3]>>,
    /// Plane thickness: RMS distance of the neighbours to the fitted plane, metres (+inf: no plane).
    pub gamma: Option<Vec<f32>>,
    /// Per-point time, seconds (LAS GPS time, E57 timeStamp, a simulated scan's offset inside its frame).
    pub time: Option<Vec<f64>>,
    /// Return number, 1-based (LAS).
    pub return_number: Option<Vec<u8>>,
    /// Number of returns of the pulse (LAS).
    pub number_of_returns: Option<Vec<u8>>,
    /// Classification (ASPRS codes for LAS).
    pub classification: Option<Vec<u8>>,
    /// Ring (spinning LiDAR laser index) or line (Livox laser number).
    pub ring: Option<Vec<u16>>,
    /// Any other per-point dimension, by name (LAS extra bytes, PLY/PCD fields we do not model, E57 row/column).
    pub extra: Vec<ExtraDim>,
    /// Where the cloud came from and what it describes.
    pub meta: Metadata,
}

/// A named per-point dimension we do not model specially. Values are held as f64, which is exact for every
/// integer type up to 32 bits and for f32/f64; `kind` says how the source stored it, so writers can keep it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtraDim {
    /// The dimension's name as the source spelled it (a PLY property, a PCD field, a LAS extra-bytes name); writers
    /// keep it.
    pub name: String,
    /// How the source stored the values, so a writer can store them the same way.
    pub kind: ScalarKind,
    /// One value per point, parallel to `Cloud::positions`.
    pub values: Vec<f64>,
}

/// Storage type of a scalar field in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarKind {
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 16-bit integer.
    U16,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 64-bit integer (held as f64, so exact only up to 2^53).
    U64,
    /// Signed 64-bit integer (held as f64, so exact only up to 2^53 in magnitude).
    I64,
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl ScalarKind {
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ScalarKind::U8 | ScalarKind::I8 => 1,
            ScalarKind::U16 | ScalarKind::I16 => 2,
            ScalarKind::U32 | ScalarKind::I32 | ScalarKind::F32 => 4,
            ScalarKind::U64 | ScalarKind::I64 | ScalarKind::F64 => 8,
        }
    }

    /// Whether the kind is a floating-point type: the centroid downsampler averages float dimensions but takes
    /// integer ones from one point, and a PLY list length must not be a float.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarKind::F32 | ScalarKind::F64)
    }
}

/// Description of the cloud beyond its points.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// File the cloud was read from.
    pub source: Option<PathBuf>,
    /// Format and version as read, e.g. "LAS 1.2, point format 3" or "PCD 0.7 binary_compressed".
    pub format: Option<String>,
    /// Coordinate reference system as OGC WKT, when the source declares one.
    pub crs_wkt: Option<String>,
    /// Scans the cloud was assembled from (E57 data3D entries, merged inputs), with their sensor poses.
    pub scans: Vec<ScanInfo>,
}

/// One scan inside a cloud: its points are `points` (a range of indices) and it was taken from `world_from_scan`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanInfo {
    /// The scan's name as the source gave it (an E57 data3D name, an input file's name).
    pub name: String,
    /// The scan's points: a range of indices into the cloud (empty once points have been reordered or selected).
    pub points: Range<usize>,
    /// Pose of the scanner in the cloud's frame (the cloud's frame, not relative to `Cloud::origin`). Stored as
    /// `{ rotation_wxyz, translation }` (see [`crate::pose`]).
    #[serde(default, with = "crate::pose::serde_wxyz_option")]
    pub world_from_scan: Option<Isometry3<f64>>,
}

/// Names of the optional attributes, for reports and `aerie info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribute {
    /// `Cloud::intensity`.
    Intensity,
    /// `Cloud::color`.
    Color,
    /// `Cloud::normals`.
    Normal,
    /// `Cloud::gamma` (plane thickness).
    Gamma,
    /// `Cloud::time`.
    Time,
    /// `Cloud::return_number`.
    ReturnNumber,
    /// `Cloud::number_of_returns`.
    NumberOfReturns,
    /// `Cloud::classification`.
    Classification,
    /// `Cloud::ring`.
    Ring,
}

impl Cloud {
    /// An empty cloud with the given origin.
    pub fn with_origin(origin: [f64; 3]) -> Cloud {
        Cloud {
            origin,
            ..Cloud::default()
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the cloud has no points (it may still carry metadata and empty attribute arrays).
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// World position of point `i` in f64.
    pub fn world(&self, i: usize) -> [f64; 3] {
        let p = self.positions[i];
        [
            self.origin[0] + p[0] as f64,
            self.origin[1] + p[1] as f64,
            self.origin[2] + p[2] as f64,
        ]
    }

    /// Which modelled attributes are present.
    pub fn attributes(&self) -> Vec<Attribute> {
        let mut out = Vec::new();
        let checks = [
            (self.intensity.is_some(), Attribute::Intensity),
            (self.color.is_some(), Attribute::Color),
            (self.normals.is_some(), Attribute::Normal),
            (self.gamma.is_some(), Attribute::Gamma),
            (self.time.is_some(), Attribute::Time),
            (self.return_number.is_some(), Attribute::ReturnNumber),
            (self.number_of_returns.is_some(), Attribute::NumberOfReturns),
            (self.classification.is_some(), Attribute::Classification),
            (self.ring.is_some(), Attribute::Ring),
        ];
        for (present, a) in checks {
            if present {
                out.push(a);
            }
        }
        out
    }

    /// The extra dimension called `name`, if any.
    pub fn extra(&self, name: &str) -> Option<&ExtraDim> {
        self.extra.iter().find(|d| d.name == name)
    }

    /// Axis-aligned bounds in the cloud's frame (f64, origin applied); `None` for an empty cloud.
    pub fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        let first = self.positions.first()?;
        let mut lo = *first;
        let mut hi = *first;
        for p in &self.positions {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        let o = self.origin;
        Some((
            [
                o[0] + lo[0] as f64,
                o[1] + lo[1] as f64,
                o[2] + lo[2] as f64,
            ],
            [
                o[0] + hi[0] as f64,
                o[1] + hi[1] as f64,
                o[2] + hi[2] as f64,
            ],
        ))
    }

    /// Check the length invariant; returns the name of the first attribute whose length is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.len();
        let lens = [
            ("intensity", self.intensity.as_ref().map(Vec::len)),
            ("color", self.color.as_ref().map(Vec::len)),
            ("normals", self.normals.as_ref().map(Vec::len)),
            ("gamma", self.gamma.as_ref().map(Vec::len)),
            ("time", self.time.as_ref().map(Vec::len)),
            ("return_number", self.return_number.as_ref().map(Vec::len)),
            (
                "number_of_returns",
                self.number_of_returns.as_ref().map(Vec::len),
            ),
            ("classification", self.classification.as_ref().map(Vec::len)),
            ("ring", self.ring.as_ref().map(Vec::len)),
        ];
        for (name, len) in lens {
            if let Some(len) = len
                && len != n
            {
                return Err(format!("attribute {name} has {len} values for {n} points"));
            }
        }
        for d in &self.extra {
            if d.values.len() != n {
                return Err(format!(
                    "extra dimension {} has {} values for {n} points",
                    d.name,
                    d.values.len()
                ));
            }
        }
        Ok(())
    }

    /// A new cloud holding the points at `indices`, in that order, with every attribute and the metadata
    /// (scan ranges are dropped because they no longer describe contiguous runs).
    pub fn select(&self, indices: &[usize]) -> Cloud {
        fn pick<T: Copy>(v: Option<&[T]>, idx: &[usize]) -> Option<Vec<T>> {
            v.map(|v| idx.iter().map(|&i| v[i]).collect())
        }
        let mut meta = self.meta.clone();
        meta.scans.iter_mut().for_each(|s| s.points = 0..0);
        meta.scans.retain(|s| s.world_from_scan.is_some());
        Cloud {
            origin: self.origin,
            positions: indices.iter().map(|&i| self.positions[i]).collect(),
            intensity: pick(self.intensity.as_deref(), indices),
            color: pick(self.color.as_deref(), indices),
            normals: pick(self.normals.as_deref(), indices),
            gamma: pick(self.gamma.as_deref(), indices),
            time: pick(self.time.as_deref(), indices),
            return_number: pick(self.return_number.as_deref(), indices),
            number_of_returns: pick(self.number_of_returns.as_deref(), indices),
            classification: pick(self.classification.as_deref(), indices),
            ring: pick(self.ring.as_deref(), indices),
            extra: self
                .extra
                .iter()
                .map(|d| ExtraDim {
                    name: d.name.clone(),
                    kind: d.kind,
                    values: indices.iter().map(|&i| d.values[i]).collect(),
                })
                .collect(),
            meta,
        }
    }

    /// Move the origin to `new_origin` without changing world positions (up to f32 rounding of the new offsets).
    pub fn set_origin(&mut self, new_origin: [f64; 3]) {
        let d = [
            self.origin[0] - new_origin[0],
            self.origin[1] - new_origin[1],
            self.origin[2] - new_origin[2],
        ];
        for p in &mut self.positions {
            for k in 0..3 {
                p[k] = (p[k] as f64 + d[k]) as f32;
            }
        }
        self.origin = new_origin;
    }

    /// Append `other`'s points, keeping only the attributes both clouds have (an attribute missing on either
    /// side would leave holes). World positions are preserved; `other` is re-expressed around `self.origin`.
    pub fn append(&mut self, other: &Cloud) {
        let offset = self.len();
        let d = [
            other.origin[0] - self.origin[0],
            other.origin[1] - self.origin[1],
            other.origin[2] - self.origin[2],
        ];
        let self_was_empty =
            self.is_empty() && self.attributes().is_empty() && self.extra.is_empty();
        fn join<T: Copy>(a: &mut Option<Vec<T>>, b: Option<&[T]>, first: bool) {
            match (a.as_mut(), b) {
                (Some(a), Some(b)) => a.extend_from_slice(b),
                (None, Some(b)) if first => *a = Some(b.to_vec()),
                _ => *a = None,
            }
        }
        join(
            &mut self.intensity,
            other.intensity.as_deref(),
            self_was_empty,
        );
        join(&mut self.color, other.color.as_deref(), self_was_empty);
        join(&mut self.normals, other.normals.as_deref(), self_was_empty);
        join(&mut self.gamma, other.gamma.as_deref(), self_was_empty);
        join(&mut self.time, other.time.as_deref(), self_was_empty);
        join(
            &mut self.return_number,
            other.return_number.as_deref(),
            self_was_empty,
        );
        join(
            &mut self.number_of_returns,
            other.number_of_returns.as_deref(),
            self_was_empty,
        );
        join(
            &mut self.classification,
            other.classification.as_deref(),
            self_was_empty,
        );
        join(&mut self.ring, other.ring.as_deref(), self_was_empty);
        if self_was_empty {
            self.extra.clone_from(&other.extra);
        } else {
            let mut kept = Vec::new();
            for mut d in std::mem::take(&mut self.extra) {
                if let Some(o) = other.extra(&d.name) {
                    d.values.extend_from_slice(&o.values);
                    kept.push(d);
                }
            }
            self.extra = kept;
        }
        self.positions.extend(other.positions.iter().map(|p| {
            [
                (p[0] as f64 + d[0]) as f32,
                (p[1] as f64 + d[1]) as f32,
                (p[2] as f64 + d[2]) as f32,
            ]
        }));
        for s in &other.meta.scans {
            let mut s = s.clone();
            s.points = s.points.start + offset..s.points.end + offset;
            self.meta.scans.push(s);
        }
        if self.meta.crs_wkt.is_none() {
            self.meta.crs_wkt.clone_from(&other.meta.crs_wkt);
        }
    }
}

/// Choose an origin for world coordinates: the minimum corner rounded down to a whole metre, so relative
/// positions stay small and the origin itself is a readable number.
pub fn origin_for(min: [f64; 3]) -> [f64; 3] {
    [min[0].floor(), min[1].floor(), min[2].floor()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_info_keeps_the_stored_pose_form() {
        // As `aerie info --json` has always shown a scan; a missing pose reads as none.
        let text = r#"{"name":"s","points":{"start":0,"end":3},"world_from_scan":{"rotation_wxyz":[0.7071067811865476,0.0,0.0,0.7071067811865476],"translation":[500010.0,4000005.0,101.5]}}"#;
        let s: ScanInfo = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), text);
        let none = r#"{"name":"s","points":{"start":0,"end":3},"world_from_scan":null}"#;
        let s: ScanInfo = serde_json::from_str(none).unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), none);
        let s: ScanInfo =
            serde_json::from_str(r#"{"name":"s","points":{"start":0,"end":3}}"#).unwrap();
        assert_eq!(s.world_from_scan, None);
    }

    #[test]
    fn large_coordinates_keep_millimetres() {
        let mut c = Cloud::with_origin([637_000.0, 851_000.0, 400.0]);
        c.positions.push([123.456, 789.012, 3.5]);
        let w = c.world(0);
        assert!((w[0] - 637_123.456).abs() < 1e-4, "{w:?}");
        c.set_origin([637_100.0, 851_700.0, 0.0]);
        let w2 = c.world(0);
        assert!((w2[0] - 637_123.456).abs() < 1e-3 && (w2[1] - 851_789.012).abs() < 1e-3);
    }

    #[test]
    fn append_drops_attributes_missing_on_one_side() {
        let mut a = Cloud {
            positions: vec![[0.0; 3]],
            intensity: Some(vec![1.0]),
            ring: Some(vec![3]),
            ..Cloud::default()
        };
        let mut b = Cloud::with_origin([10.0, 0.0, 0.0]);
        b.positions = vec![[1.0, 0.0, 0.0]];
        b.intensity = Some(vec![2.0]);
        a.append(&b);
        assert_eq!(a.len(), 2);
        assert_eq!(a.intensity, Some(vec![1.0, 2.0]));
        assert_eq!(a.ring, None);
        assert_eq!(a.positions[1], [11.0, 0.0, 0.0]);
        a.validate().unwrap();
    }
}
