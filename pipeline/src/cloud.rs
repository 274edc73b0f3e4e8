//! The in-memory point cloud: a structure of arrays with an f64 origin.
//!
//! Invariants:
//! - every present attribute column has exactly [`Cloud::len`] entries. This one is kept by construction: the
//!   columns are private; a cloud is built from [`Columns`] whose lengths [`Cloud::from_columns`] checks once;
//!   a column is replaced only through a setter that checks its length ([`Cloud::set_intensity`],
//!   [`Cloud::push_extra`], ...) and lent out mutably only as a slice, whose length is fixed
//!   ([`Cloud::positions_mut`], [`Cloud::intensity_mut`], ...). Columns move in and out without a copy
//!   ([`Cloud::take_intensity`], [`Cloud::into_columns`]);
//! - the world position of point `i` is `origin + positions[i]` computed in f64, so georeferenced coordinates
//!   (1e5..1e7 m) keep millimetres as long as the cloud's extent stays within a few kilometres of the origin;
//! - positions and the origin are finite (readers reject NaN/inf coordinates). Construction does not keep this
//!   one (a check would cost a pass over the points, and [`Cloud::positions_mut`] can write any value), so stages
//!   check it on entry with [`Cloud::validate`].
//!
//! `origin` and `meta` stay public fields because no invariant ties them to the columns: any finite origin is
//! valid, and assigning one moves the whole cloud rigidly (every world position by the same offset, as a shift
//! for export wants), while [`Cloud::set_origin`] re-expresses the positions around a new origin and keeps the
//! world positions. `meta` describes the cloud (its source, CRS and scans) and holds no per-point column.

mod extra;
#[cfg(test)]
mod tests;

use std::ops::Range;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{LengthMismatch, NotFinite};
use crate::pose::Isometry3;

use extra::each_kind;
pub use extra::{ExtraDim, ExtraScalar, ExtraValues, ScalarKind};

/// A point cloud. Attributes are optional and, when present, parallel to the positions: one value per point
/// (see the module doc for how that is kept).
///
/// ```
/// use aerie_pipeline::{Cloud, Columns};
///
/// // Columns are filled freely, then checked once.
/// let columns = Columns {
///     positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
///     intensity: Some(vec![10.0, 20.0]),
///     ..Columns::default()
/// };
/// let mut cloud = Cloud::from_columns([500_000.0, 4_000_000.0, 100.0], columns)?;
/// assert_eq!(cloud.world(1), [500_001.0, 4_000_000.0, 100.0]);
/// // A column changes in place as a slice; a new one must have one value per point.
/// if let Some(intensity) = cloud.intensity_mut() {
///     intensity[1] = 30.0;
/// }
/// assert!(cloud.set_ring(Some(vec![7])).is_err());
/// cloud.set_ring(Some(vec![7, 8]))?;
/// // A column moves out without a copy.
/// assert_eq!(cloud.take_intensity(), Some(vec![10.0, 30.0]));
/// assert_eq!(cloud.intensity(), None);
/// # Ok::<(), aerie_pipeline::LengthMismatch>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cloud {
    /// Origin of the positions in the cloud's frame (map or CRS coordinates), metres. Assigning it moves the
    /// cloud; [`Cloud::set_origin`] keeps the world positions.
    pub origin: [f64; 3],
    columns: Columns,
    /// Where the cloud came from and what it describes.
    pub meta: Metadata,
}

/// The per-point columns of a [`Cloud`], not yet checked: what a reader or a generator fills before
/// [`Cloud::from_columns`] checks their lengths once, and what [`Cloud::into_columns`] hands back to a stage
/// that moves columns out. Attributes are optional and, when present, must have one value per position.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns {
    /// Positions relative to the cloud's origin, metres.
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
}

/// An index of a point: `usize`, or `u32` where a list of them sets a stage's peak memory (a map holds at
/// most `u32::MAX` points).
pub trait PointIndex: Copy {
    /// The index as `usize`.
    fn at(self) -> usize;
}

impl PointIndex for usize {
    #[inline]
    fn at(self) -> usize {
        self
    }
}

impl PointIndex for u32 {
    #[inline]
    fn at(self) -> usize {
        self as usize
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
    /// The coordinate reference system as GeoTIFF keys, raw, as a LAS file stored them (`LASF_Projection`
    /// records 34735, 34736 and 34737, by record id): most LAS 1.2 readers know the CRS only from these, and
    /// many files carry no WKT, so a LAS 1.2 written from this cloud carries them on unchanged.
    #[serde(skip)]
    pub las_geotiff: Vec<(u16, Vec<u8>)>,
    /// Scans the cloud was assembled from (E57 data3D entries, merged inputs), with their sensor poses.
    pub scans: Vec<ScanInfo>,
    /// Attributes and extra dimensions the source held that this cloud does not, by name (`time`,
    /// `return_number`, an extra dimension's name): those a reader was asked to skip
    /// (`io::ReadOptions::skip`), so that a report can still name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// What the reader read past without failing, one sentence each naming the file, for the program to show:
    /// data beyond what the header declares, which a header with a wrong point count would leave unread.
    #[serde(skip)]
    pub read_warnings: Vec<String>,
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
    /// [`Cloud::intensity`].
    Intensity,
    /// [`Cloud::color`].
    Color,
    /// [`Cloud::normals`].
    Normal,
    /// [`Cloud::gamma`] (plane thickness).
    Gamma,
    /// [`Cloud::time`].
    Time,
    /// [`Cloud::return_number`].
    ReturnNumber,
    /// [`Cloud::number_of_returns`].
    NumberOfReturns,
    /// [`Cloud::classification`].
    Classification,
    /// [`Cloud::ring`].
    Ring,
}

impl Attribute {
    /// The name reports give the attribute: its serialized name (`time`, `return_number`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Attribute::Intensity => "intensity",
            Attribute::Color => "color",
            Attribute::Normal => "normal",
            Attribute::Gamma => "gamma",
            Attribute::Time => "time",
            Attribute::ReturnNumber => "return_number",
            Attribute::NumberOfReturns => "number_of_returns",
            Attribute::Classification => "classification",
            Attribute::Ring => "ring",
        }
    }
}

/// Calls `$then!` with the modelled optional attributes, in field order: the column, its accessors, its value
/// type and its [`Attribute`]. One list, so the accessors, the length check and [`Cloud::attributes`] cannot
/// disagree.
macro_rules! with_attributes {
    ($then:ident) => {
        $then! {
            intensity, intensity_mut, set_intensity, take_intensity: f32 => Intensity;
            color, color_mut, set_color, take_color: [u16; 3] => Color;
            normals, normals_mut, set_normals, take_normals: [f32; 3] => Normal;
            gamma, gamma_mut, set_gamma, take_gamma: f32 => Gamma;
            time, time_mut, set_time, take_time: f64 => Time;
            return_number, return_number_mut, set_return_number, take_return_number: u8
                => ReturnNumber;
            number_of_returns, number_of_returns_mut, set_number_of_returns,
                take_number_of_returns: u8 => NumberOfReturns;
            classification, classification_mut, set_classification, take_classification: u8
                => Classification;
            ring, ring_mut, set_ring, take_ring: u16 => Ring;
        }
    };
}

/// `Err` when a column of `values` values does not fit `points` points; `column` names it for the message.
fn check_len(
    column: impl FnOnce() -> String,
    values: usize,
    points: usize,
) -> Result<(), LengthMismatch> {
    if values == points {
        Ok(())
    } else {
        Err(LengthMismatch {
            column: column(),
            values,
            points,
        })
    }
}

macro_rules! attribute_accessors {
    ($($name:ident, $name_mut:ident, $set:ident, $take:ident: $t:ty => $attr:ident;)*) => {
        impl Columns {
            /// Check that every present attribute and extra dimension has one value per position;
            /// the error names the first that does not.
            pub fn check(&self) -> Result<(), LengthMismatch> {
                let n = self.positions.len();
                $(if let Some(v) = &self.$name {
                    check_len(|| attribute_name(stringify!($name)), v.len(), n)?;
                })*
                for d in &self.extra {
                    check_len(|| format!("extra dimension {}", d.name), d.len(), n)?;
                }
                Ok(())
            }

            /// Every present attribute of `self` at `indices`, in that order, into `out`.
            fn select_attributes<I: PointIndex>(&self, indices: &[I], out: &mut Columns) {
                $(out.$name = self
                    .$name
                    .as_deref()
                    .map(|v| indices.iter().map(|&i| v[i.at()]).collect());)*
            }

            /// Apply `op` to every present attribute column and extra dimension (not the positions).
            fn each_attribute(&mut self, op: &impl ColumnOp) {
                $(if let Some(v) = &mut self.$name {
                    op.apply(v);
                })*
                for d in &mut self.extra {
                    each_kind!(&mut d.values, v => op.apply(v));
                }
            }

            /// Append `other`'s attributes to `self`'s, dropping each that either side lacks (it would leave
            /// holes), except that `first` (self holds no points yet) takes `other`'s as they are.
            fn join_attributes(&mut self, other: &Columns, first: bool) {
                $(join_column(&mut self.$name, other.$name.as_deref(), first);)*
            }
        }

        impl Attribute {
            /// Every modelled attribute, in the cloud's field order.
            pub const ALL: &[Attribute] = &[$(Attribute::$attr),*];
        }

        impl Cloud {
            /// Remove the column of `attribute`; whether it was present.
            pub fn take_attribute(&mut self, attribute: Attribute) -> bool {
                match attribute {
                    $(Attribute::$attr => self.columns.$name.take().is_some(),)*
                }
            }

            /// Which modelled attributes are present.
            pub fn attributes(&self) -> Vec<Attribute> {
                let mut out = Vec::new();
                $(if self.columns.$name.is_some() {
                    out.push(Attribute::$attr);
                })*
                out
            }

            $(
                #[doc = concat!("The `", stringify!($name), "` column, one value per point, if \
                    present (see [`Columns::", stringify!($name), "`]).")]
                #[inline]
                pub fn $name(&self) -> Option<&[$t]> {
                    self.columns.$name.as_deref()
                }

                #[doc = concat!("The `", stringify!($name), "` column to change in place, if \
                    present: a slice, so its length stays the point count.")]
                #[inline]
                pub fn $name_mut(&mut self) -> Option<&mut [$t]> {
                    self.columns.$name.as_deref_mut()
                }

                #[doc = concat!("Replace the `", stringify!($name), "` column (`None` removes \
                    it). Fails, leaving the cloud unchanged, when the values are not one per point.")]
                pub fn $set(&mut self, values: Option<Vec<$t>>) -> Result<(), LengthMismatch> {
                    if let Some(v) = &values {
                        check_len(|| attribute_name(stringify!($name)), v.len(), self.len())?;
                    }
                    self.columns.$name = values;
                    Ok(())
                }

                #[doc = concat!("Remove the `", stringify!($name), "` column and hand it over \
                    without a copy.")]
                pub fn $take(&mut self) -> Option<Vec<$t>> {
                    self.columns.$name.take()
                }
            )*
        }
    };
}

/// One attribute column of [`Columns::join_attributes`].
fn join_column<T: Copy>(a: &mut Option<Vec<T>>, b: Option<&[T]>, first: bool) {
    match (a.as_mut(), b) {
        (Some(a), Some(b)) => a.extend_from_slice(b),
        (None, Some(b)) if first => *a = Some(b.to_vec()),
        _ => *a = None,
    }
}

/// A change applied alike to every column of a cloud, whatever its value type.
trait ColumnOp {
    fn apply<T: Copy + Send + Sync>(&self, v: &mut Vec<T>);
}

/// Keep the values where the mask is true, in order, in place.
struct RetainMask<'a>(&'a [bool]);

impl ColumnOp for RetainMask<'_> {
    fn apply<T: Copy + Send + Sync>(&self, v: &mut Vec<T>) {
        let mut w = 0;
        for i in 0..v.len() {
            if self.0[i] {
                v[w] = v[i];
                w += 1;
            }
        }
        v.truncate(w);
        // glibc shrinks a block in place: the tail's pages go back without a copy.
        v.shrink_to_fit();
    }
}

/// Put the values in a new order: value `j` becomes the old value `order[j]` (one column's worth of extra
/// memory at a time).
struct Permute<'a>(&'a [u32]);

impl ColumnOp for Permute<'_> {
    fn apply<T: Copy + Send + Sync>(&self, v: &mut Vec<T>) {
        let old = std::mem::take(v);
        *v = self.0.par_iter().map(|&i| old[i as usize]).collect();
    }
}

/// What a stage hands back after borrowing a cloud's positions by value ([`Cloud::lend_positions`]).
pub enum Returned {
    /// The positions, one per point, in the cloud's order.
    InOrder(Vec<[f32; 3]>),
    /// The positions in a new order: `positions[j]` is the point that was at `order[j]`, and every other
    /// column is put in that order too. `order` must be a permutation of the points.
    Reordered {
        /// The positions in the new order.
        positions: Vec<[f32; 3]>,
        /// The old index of each point, in the new order.
        order: Vec<u32>,
    },
}

/// How length errors name a modelled attribute.
fn attribute_name(name: &str) -> String {
    format!("attribute {name}")
}

with_attributes!(attribute_accessors);

impl Cloud {
    /// An empty cloud with the given origin.
    pub fn with_origin(origin: [f64; 3]) -> Cloud {
        Cloud {
            origin,
            ..Cloud::default()
        }
    }

    /// A cloud of `positions` (relative to `origin`) without attributes.
    pub fn from_positions(origin: [f64; 3], positions: Vec<[f32; 3]>) -> Cloud {
        Cloud {
            origin,
            columns: Columns {
                positions,
                ..Columns::default()
            },
            meta: Metadata::default(),
        }
    }

    /// A cloud of `columns` (positions relative to `origin`), with empty metadata. The columns are moved, not
    /// copied. Fails when an attribute or extra dimension does not have one value per position.
    pub fn from_columns(origin: [f64; 3], columns: Columns) -> Result<Cloud, LengthMismatch> {
        columns.check()?;
        Ok(Cloud {
            origin,
            columns,
            meta: Metadata::default(),
        })
    }

    /// The columns, moved out without a copy (the origin and the metadata are dropped: read them first).
    pub fn into_columns(self) -> Columns {
        self.columns
    }

    /// Number of points.
    #[inline]
    pub fn len(&self) -> usize {
        self.columns.positions.len()
    }

    /// Whether the cloud has no points (it may still carry metadata and empty attribute arrays).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.columns.positions.is_empty()
    }

    /// Positions relative to `origin`, metres.
    #[inline]
    pub fn positions(&self) -> &[[f32; 3]] {
        &self.columns.positions
    }

    /// Positions to change in place: a slice, so the point count stays. Values written here are not checked
    /// (see [`Cloud::validate`]).
    #[inline]
    pub fn positions_mut(&mut self) -> &mut [[f32; 3]] {
        &mut self.columns.positions
    }

    /// Lend the positions to `f` by value, without a copy, for a stage that moves them into a search index
    /// while it runs (a sorted copy beside them would be the largest array of its peak). `f` hands them back
    /// in the cloud's order or in a new one, which the other columns then follow (scan point ranges are
    /// dropped unless one scan holds every point). Panics if `f` hands back a different number of positions
    /// (a bug in the stage, not bad input).
    pub fn lend_positions<R>(&mut self, f: impl FnOnce(Vec<[f32; 3]>) -> (Returned, R)) -> R {
        let n = self.len();
        let (returned, r) = f(std::mem::take(&mut self.columns.positions));
        let positions = match returned {
            Returned::InOrder(p) => p,
            Returned::Reordered { positions, order } => {
                assert_eq!(order.len(), n, "a reorder must cover every point");
                self.columns.each_attribute(&Permute(&order));
                // Scan ranges no longer describe runs of points, except one scan holding them all.
                if !matches!(self.meta.scans.as_slice(), [s] if s.points == (0..n)) {
                    self.meta.scans.iter_mut().for_each(|s| s.points = 0..0);
                }
                positions
            }
        };
        assert_eq!(positions.len(), n, "a stage must hand back every position");
        self.columns.positions = positions;
        r
    }

    /// Keep the points where `keep` is true, in order, in place (no second cloud at the peak); scan point
    /// ranges are renumbered. Fails, leaving the cloud unchanged, when `keep` is not one flag per point.
    pub fn retain(&mut self, keep: &[bool]) -> Result<(), LengthMismatch> {
        check_len(|| "mask".to_string(), keep.len(), self.len())?;
        // Each scan's range bounds, renumbered in one pass over the mask.
        let mut bounds: Vec<usize> = self
            .meta
            .scans
            .iter()
            .flat_map(|s| [s.points.start, s.points.end])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut rank = Vec::with_capacity(bounds.len());
        let mut kept = 0;
        let mut at = 0;
        for &b in &bounds {
            let b = b.min(keep.len());
            kept += keep[at.min(b)..b].iter().filter(|&&k| k).count();
            at = at.max(b);
            rank.push(kept);
        }
        let renumber = |i: usize| rank[bounds.partition_point(|&b| b < i)];
        for s in &mut self.meta.scans {
            s.points = renumber(s.points.start)..renumber(s.points.end);
        }
        let op = RetainMask(keep);
        op.apply(&mut self.columns.positions);
        self.columns.each_attribute(&op);
        Ok(())
    }

    /// The extra dimensions, in order.
    #[inline]
    pub fn extras(&self) -> &[ExtraDim] {
        &self.columns.extra
    }

    /// The extra dimension called `name`, if any.
    pub fn extra(&self, name: &str) -> Option<&ExtraDim> {
        self.columns.extra.iter().find(|d| d.name == name)
    }

    /// Append an extra dimension. Fails, leaving the cloud unchanged, when it does not have one value per
    /// point. Names are not checked for uniqueness ([`Cloud::extra`] finds the first).
    pub fn push_extra(&mut self, dim: ExtraDim) -> Result<(), LengthMismatch> {
        check_len(
            || format!("extra dimension {}", dim.name),
            dim.len(),
            self.len(),
        )?;
        self.columns.extra.push(dim);
        Ok(())
    }

    /// Keep only the extra dimensions for which `keep` returns true, in order.
    pub fn retain_extras(&mut self, keep: impl FnMut(&ExtraDim) -> bool) {
        self.columns.extra.retain(keep);
    }

    /// Remove every extra dimension and hand them over without a copy.
    pub fn take_extras(&mut self) -> Vec<ExtraDim> {
        std::mem::take(&mut self.columns.extra)
    }

    /// World position of point `i` in f64.
    pub fn world(&self, i: usize) -> [f64; 3] {
        let p = self.columns.positions[i];
        [
            self.origin[0] + p[0] as f64,
            self.origin[1] + p[1] as f64,
            self.origin[2] + p[2] as f64,
        ]
    }

    /// Axis-aligned bounds in the cloud's frame (f64, origin applied); `None` for an empty cloud.
    pub fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        let positions = self.positions();
        if positions.is_empty() {
            return None;
        }
        let (lo, hi) = position_bounds(positions);
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

    /// Check the invariant construction does not keep: a finite origin and finite positions. Stages and
    /// bucketing call it on entry rather than panic or produce NaN later. (Column lengths need no check: they
    /// are kept by construction.)
    pub fn validate(&self) -> Result<(), NotFinite> {
        if !self.origin.iter().all(|v| v.is_finite()) {
            return Err(NotFinite::Origin);
        }
        match self
            .positions()
            .par_iter()
            .position_first(|p| !(p[0].is_finite() && p[1].is_finite() && p[2].is_finite()))
        {
            Some(index) => Err(NotFinite::Point { index }),
            None => Ok(()),
        }
    }

    /// A new cloud holding the points at `indices`, in that order, with every attribute and the metadata
    /// (scan ranges are dropped because they no longer describe contiguous runs).
    pub fn select<I: PointIndex>(&self, indices: &[I]) -> Cloud {
        let mut meta = self.meta.clone();
        meta.scans.iter_mut().for_each(|s| s.points = 0..0);
        meta.scans.retain(|s| s.world_from_scan.is_some());
        let c = &self.columns;
        let mut columns = Columns {
            positions: indices.iter().map(|&i| c.positions[i.at()]).collect(),
            extra: c
                .extra
                .iter()
                .map(|d| ExtraDim {
                    name: d.name.clone(),
                    values: d.values.select(indices),
                })
                .collect(),
            ..Columns::default()
        };
        c.select_attributes(indices, &mut columns);
        Cloud {
            origin: self.origin,
            columns,
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
        for p in &mut self.columns.positions {
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
            self.is_empty() && self.attributes().is_empty() && self.extras().is_empty();
        let (a, b) = (&mut self.columns, &other.columns);
        a.join_attributes(b, self_was_empty);
        if self_was_empty {
            a.extra.clone_from(&b.extra);
        } else {
            let mut kept = Vec::new();
            for mut d in std::mem::take(&mut a.extra) {
                if let Some(o) = other.extra(&d.name) {
                    d.values.extend(&o.values);
                    kept.push(d);
                }
            }
            a.extra = kept;
        }
        a.positions.extend(b.positions.iter().map(|p| {
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
        // The first cloud that declares a CRS, in either form, gives the merged cloud's.
        if self.meta.crs_wkt.is_none() && self.meta.las_geotiff.is_empty() {
            self.meta.crs_wkt.clone_from(&other.meta.crs_wkt);
            self.meta.las_geotiff.clone_from(&other.meta.las_geotiff);
        }
    }
}

/// Choose an origin for world coordinates: the minimum corner rounded down to a whole metre, so relative
/// positions stay small and the origin itself is a readable number.
pub fn origin_for(min: [f64; 3]) -> [f64; 3] {
    [min[0].floor(), min[1].floor(), min[2].floor()]
}

/// The lowest and highest position on each axis (`[f32::INFINITY; 3]` and `[f32::NEG_INFINITY; 3]` for no
/// points; NaN coordinates are passed over), relative to the cloud's origin: what a cloud's bounds, a map
/// header's and the neighbour index's grid are made from.
pub(crate) fn position_bounds(positions: &[[f32; 3]]) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for p in positions {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    (lo, hi)
}

/// [`position_bounds`] on every core, for the grids of the neighbour index and of binning: the same values
/// whatever the number of threads (min and max do not depend on the order), though where the lowest or
/// highest coordinate is zero its sign may differ, which no grid sees.
pub(crate) fn par_position_bounds(positions: &[[f32; 3]]) -> ([f32; 3], [f32; 3]) {
    use rayon::prelude::*;
    positions.par_chunks(16 * 1024).map(position_bounds).reduce(
        || position_bounds(&[]),
        |a, b| {
            (
                std::array::from_fn(|k| a.0[k].min(b.0[k])),
                std::array::from_fn(|k| a.1[k].max(b.1[k])),
            )
        },
    )
}
