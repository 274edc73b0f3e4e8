//! One scan's points collected from its per-point field values: the fields located in the prototype, the pose
//! applied in f64, invalid points skipped, intensity and colour scaled.

use std::path::Path;

use e57::{PointCloud, Record, RecordDataType, RecordName, RecordValue};
use nalgebra::{IsometryMatrix3, Point3};

use crate::pose::Isometry3;
use crate::{Error, Result};

/// One decoded scan: world coordinates in f64 and the attributes its prototype has.
pub(super) struct ScanData {
    pub(super) name: String,
    pub(super) world_from_scan: Isometry3<f64>,
    pub(super) world: Vec<[f64; 3]>,
    pub(super) intensity: Option<Vec<f32>>,
    pub(super) color: Option<Vec<[u16; 3]>>,
    pub(super) time: Option<Vec<f64>>,
    pub(super) return_number: Option<Vec<u8>>,
    pub(super) number_of_returns: Option<Vec<u8>>,
    pub(super) row: Option<Vec<i32>>,
    pub(super) column: Option<Vec<i32>>,
}

pub(super) fn scan_place(si: usize, pc: &PointCloud) -> String {
    match &pc.name {
        Some(n) => format!("data3D[{si}] \"{n}\""),
        None => format!("data3D[{si}]"),
    }
}

/// Where each field sits in a scan's prototype.
#[derive(Default)]
struct Layout {
    cartesian: Option<[usize; 3]>,
    cartesian_state: Option<usize>,
    spherical: Option<[usize; 3]>,
    spherical_state: Option<usize>,
    intensity: Option<usize>,
    intensity_invalid: Option<usize>,
    color: Option<[usize; 3]>,
    color_invalid: Option<usize>,
    time: Option<usize>,
    time_invalid: Option<usize>,
    return_index: Option<usize>,
    return_count: Option<usize>,
    row: Option<usize>,
    column: Option<usize>,
}

impl Layout {
    fn new(proto: &[Record]) -> Layout {
        let find = |name: RecordName| proto.iter().position(|r| r.name == name);
        let three = |a, b, c| match (find(a), find(b), find(c)) {
            (Some(a), Some(b), Some(c)) => Some([a, b, c]),
            _ => None,
        };
        Layout {
            cartesian: three(
                RecordName::CartesianX,
                RecordName::CartesianY,
                RecordName::CartesianZ,
            ),
            cartesian_state: find(RecordName::CartesianInvalidState),
            spherical: three(
                RecordName::SphericalRange,
                RecordName::SphericalAzimuth,
                RecordName::SphericalElevation,
            ),
            spherical_state: find(RecordName::SphericalInvalidState),
            intensity: find(RecordName::Intensity),
            intensity_invalid: find(RecordName::IsIntensityInvalid),
            color: three(
                RecordName::ColorRed,
                RecordName::ColorGreen,
                RecordName::ColorBlue,
            ),
            color_invalid: find(RecordName::IsColorInvalid),
            time: find(RecordName::TimeStamp),
            time_invalid: find(RecordName::IsTimeStampInvalid),
            return_index: find(RecordName::ReturnIndex),
            return_count: find(RecordName::ReturnCount),
            row: find(RecordName::RowIndex),
            column: find(RecordName::ColumnIndex),
        }
    }
}

/// The value of a raw record of the crate as f64 (scale and offset applied for scaled integers).
#[cfg(test)]
pub(super) fn raw_value(v: &RecordValue, dt: &RecordDataType) -> f64 {
    match (v, dt) {
        (RecordValue::ScaledInteger(i), RecordDataType::ScaledInteger { scale, offset, .. }) => {
            *i as f64 * scale + offset
        }
        (RecordValue::ScaledInteger(i), _) | (RecordValue::Integer(i), _) => *i as f64,
        (RecordValue::Single(s), _) => f64::from(*s),
        (RecordValue::Double(d), _) => *d,
    }
}

/// A limit value as f64 (scaled-integer limits lose their scale in the crate, so they are not usable).
fn limit_value(v: Option<&RecordValue>) -> Option<f64> {
    match v {
        Some(RecordValue::Integer(i)) => Some(*i as f64),
        Some(RecordValue::Single(s)) => Some(f64::from(*s)),
        Some(RecordValue::Double(d)) => Some(*d),
        _ => None,
    }
}

/// Full range of a record's type, as the fallback for missing colour limits.
fn type_range(dt: &RecordDataType) -> (f64, f64) {
    match dt {
        RecordDataType::Single { min, max } => (
            min.map_or(0.0, f64::from),
            max.map_or(f64::from(f32::MAX), f64::from),
        ),
        RecordDataType::Double { min, max } => (min.unwrap_or(0.0), max.unwrap_or(f64::MAX)),
        RecordDataType::ScaledInteger {
            min,
            max,
            scale,
            offset,
        } => (*min as f64 * scale + offset, *max as f64 * scale + offset),
        RecordDataType::Integer { min, max } => (*min as f64, *max as f64),
    }
}

/// Ranges that map each colour channel to 0..1: `colorLimits` when usable, else the record's type range.
fn color_ranges(pc: &PointCloud, idx: [usize; 3]) -> [(f64, f64); 3] {
    let limits = pc.color_limits.as_ref().map(|l| {
        [
            (
                limit_value(l.red_min.as_ref()),
                limit_value(l.red_max.as_ref()),
            ),
            (
                limit_value(l.green_min.as_ref()),
                limit_value(l.green_max.as_ref()),
            ),
            (
                limit_value(l.blue_min.as_ref()),
                limit_value(l.blue_max.as_ref()),
            ),
        ]
    });
    let mut out = [(0.0, 1.0); 3];
    for (c, o) in out.iter_mut().enumerate() {
        let from_limits = limits.and_then(|l| match l[c] {
            // A missing minimum is 0 in files written by the reference library (empty element).
            (lo, Some(hi)) if hi > lo.unwrap_or(0.0) => Some((lo.unwrap_or(0.0), hi)),
            _ => None,
        });
        let from_type = pc
            .prototype
            .get(idx[c])
            .map(|r| type_range(&r.data_type))
            .filter(|(lo, hi)| hi > lo);
        if let Some(r) = from_limits.or(from_type) {
            *o = r;
        }
    }
    out
}

/// Collects one scan's points from per-point field values (by prototype index), applying the pose.
pub(super) struct Sink<'a> {
    lay: Layout,
    pub(super) place: String,
    path: &'a Path,
    /// The scan's pose as a rotation matrix, applied to every point.
    world_from_scan: IsometryMatrix3<f64>,
    colors: Option<[(f64, f64); 3]>,
    pub(super) out: ScanData,
}

impl<'a> Sink<'a> {
    pub(super) fn new(pc: &PointCloud, si: usize, path: &'a Path) -> Result<Sink<'a>> {
        let place = scan_place(si, pc);
        let name = pc
            .name
            .clone()
            .or_else(|| pc.guid.clone())
            .unwrap_or_else(|| format!("scan {si}"));
        let world_from_scan = match &pc.transform {
            Some(t) => crate::pose::from_wxyz(
                [t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z],
                [t.translation.x, t.translation.y, t.translation.z],
            ),
            None => Some(Isometry3::identity()),
        };
        let Some(world_from_scan) = world_from_scan else {
            return Err(Error::format(
                path,
                format!("{place} pose"),
                "pose has a non-finite rotation or translation",
            ));
        };
        let lay = Layout::new(&pc.prototype);
        if lay.cartesian.is_none() && lay.spherical.is_none() {
            return Err(Error::format(
                path,
                format!("{place} prototype"),
                "expected cartesianX/Y/Z or sphericalRange/Azimuth/Elevation fields",
            ));
        }
        fn with<T>(present: bool, cap: usize) -> Option<Vec<T>> {
            present.then(|| Vec::with_capacity(cap))
        }
        // The counts were checked against the file size, so reserving them is bounded by the data present.
        let cap = usize::try_from(pc.records).unwrap_or(0);
        let has_returns = lay.return_index.is_some() && lay.return_count.is_some();
        let out = ScanData {
            name,
            world_from_scan,
            world: Vec::with_capacity(cap),
            intensity: with(lay.intensity.is_some(), cap),
            color: with(lay.color.is_some(), cap),
            time: with(lay.time.is_some(), cap),
            return_number: with(has_returns, cap),
            number_of_returns: with(has_returns, cap),
            row: with(lay.row.is_some(), cap),
            column: with(lay.column.is_some(), cap),
        };
        Ok(Sink {
            world_from_scan: IsometryMatrix3::from_parts(
                world_from_scan.translation,
                world_from_scan.rotation.to_rotation_matrix(),
            ),
            colors: lay.color.map(|c| color_ranges(pc, c)),
            lay,
            place,
            path,
            out,
        })
    }

    /// Add point `j` whose field `i` has the value `v(i)`; points without a known position are skipped.
    #[inline]
    pub(super) fn push(&mut self, v: impl Fn(usize) -> f64, j: u64) -> Result<()> {
        let lay = &self.lay;
        // A missing state field means "valid"; any non-zero state means the position is not fully known.
        let valid = |state: Option<usize>| state.is_none_or(|i| v(i) == 0.0);
        let local = if let Some(c) = lay.cartesian.filter(|_| valid(lay.cartesian_state)) {
            [v(c[0]), v(c[1]), v(c[2])]
        } else if let Some(s) = lay.spherical.filter(|_| valid(lay.spherical_state)) {
            let (r, az, el) = (v(s[0]), v(s[1]), v(s[2]));
            let (se, ce) = el.sin_cos();
            let (sa, ca) = az.sin_cos();
            [r * ce * ca, r * ce * sa, r * se]
        } else {
            return Ok(());
        };
        let p: [f64; 3] = (self.world_from_scan * Point3::from(local)).into();
        if !p.iter().all(|x| x.is_finite()) {
            return Err(Error::format(
                self.path,
                format!("{} point {j}", self.place),
                format!("coordinates are not finite: {local:?}"),
            ));
        }
        let out = &mut self.out;
        out.world.push(p);
        let flag = |i: Option<usize>| i.is_some_and(|i| v(i) != 0.0);
        if let (Some(o), Some(i)) = (out.intensity.as_mut(), lay.intensity) {
            o.push(if flag(lay.intensity_invalid) {
                0.0
            } else {
                v(i) as f32
            });
        }
        if let (Some(o), Some(c), Some(ranges)) = (out.color.as_mut(), lay.color, &self.colors) {
            let mut rgb = [0u16; 3];
            if !flag(lay.color_invalid) {
                for k in 0..3 {
                    let (lo, hi) = ranges[k];
                    let n = ((v(c[k]) - lo) / (hi - lo)).clamp(0.0, 1.0);
                    // NaN stays NaN through clamp and `as` turns it into 0.
                    rgb[k] = (n * 65535.0).round() as u16;
                }
            }
            o.push(rgb);
        }
        if let (Some(o), Some(i)) = (out.time.as_mut(), lay.time) {
            o.push(if flag(lay.time_invalid) { 0.0 } else { v(i) });
        }
        if let (Some(rn), Some(nr), Some(ri), Some(rc)) = (
            out.return_number.as_mut(),
            out.number_of_returns.as_mut(),
            lay.return_index,
            lay.return_count,
        ) {
            rn.push((v(ri) + 1.0).clamp(0.0, 255.0) as u8);
            nr.push(v(rc).clamp(0.0, 255.0) as u8);
        }
        if let (Some(o), Some(i)) = (out.row.as_mut(), lay.row) {
            o.push(index_of(v(i)));
        }
        if let (Some(o), Some(i)) = (out.column.as_mut(), lay.column) {
            o.push(index_of(v(i)));
        }
        Ok(())
    }
}

/// An f64 extra value as an integer index (NaN -> 0, out of i32 range clamped).
/// A row or column index: rounded, saturated to i32.
pub(super) fn index_of(v: f64) -> i32 {
    v.round().clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}
