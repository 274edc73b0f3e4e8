//! Decoding uncompressed point records into the cloud's columns: allocated once at their final size, filled
//! field by field in parallel, then handed to the cloud with the attributes the extra bytes hold.

use std::path::Path;

use super::header::{Header, c_str};
use super::layout::{ExtraField, GEOTIFF_RECORDS, Layout, Role, unique_name};
use crate::cloud::{self, ExtraDim, ExtraScalar, ExtraValues, ScalarKind, origin_for};
use crate::{Cloud, Error, Result};

/// Points decoded per parallel work item: big enough to amortise scheduling, small enough to stay in cache.
const FILL_GRAIN: usize = 1 << 16;

/// The decoded arrays. Fields the layout does not read (absent from the point format, or skipped) stay empty.
pub(super) struct Columns {
    origin: Option<[f64; 3]>,
    positions: Vec<[f32; 3]>,
    intensity: Vec<f32>,
    return_number: Vec<u8>,
    number_of_returns: Vec<u8>,
    classification: Vec<u8>,
    /// Formats 0-5: whole degrees.
    scan_angle_i8: Vec<i8>,
    /// Formats 6-10: degrees (the file stores steps of 0.006).
    scan_angle_f32: Vec<f32>,
    user_data: Vec<u8>,
    point_source_id: Vec<u16>,
    time: Vec<f64>,
    color: Vec<[u16; 3]>,
    nir: Vec<u16>,
    extras: Vec<ExtraValues>,
}

/// Mutable views of the same `n` points in every present array.
pub(super) struct ColumnsMut<'a> {
    positions: &'a mut [[f32; 3]],
    intensity: &'a mut [f32],
    return_number: &'a mut [u8],
    number_of_returns: &'a mut [u8],
    classification: &'a mut [u8],
    scan_angle_i8: &'a mut [i8],
    scan_angle_f32: &'a mut [f32],
    user_data: &'a mut [u8],
    point_source_id: &'a mut [u16],
    time: &'a mut [f64],
    color: &'a mut [[u16; 3]],
    nir: &'a mut [u16],
    extras: Vec<ExtraMut<'a>>,
}

/// A mutable view of one extra dimension's values.
enum ExtraMut<'a> {
    U8(&'a mut [u8]),
    I8(&'a mut [i8]),
    U16(&'a mut [u16]),
    I16(&'a mut [i16]),
    U32(&'a mut [u32]),
    I32(&'a mut [i32]),
    U64(&'a mut [u64]),
    I64(&'a mut [i64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Run `$body` once per variant of an [`ExtraValues`] or [`ExtraMut`] (`$e`), with `$v` bound to its values and
/// `$wrap` to the same variant of `ExtraMut`.
macro_rules! per_extra {
    ($ty:ident, $e:expr, $v:ident, $wrap:ident => $body:expr) => {
        match $e {
            $ty::U8($v) => {
                let $wrap = ExtraMut::U8;
                $body
            }
            $ty::I8($v) => {
                let $wrap = ExtraMut::I8;
                $body
            }
            $ty::U16($v) => {
                let $wrap = ExtraMut::U16;
                $body
            }
            $ty::I16($v) => {
                let $wrap = ExtraMut::I16;
                $body
            }
            $ty::U32($v) => {
                let $wrap = ExtraMut::U32;
                $body
            }
            $ty::I32($v) => {
                let $wrap = ExtraMut::I32;
                $body
            }
            $ty::U64($v) => {
                let $wrap = ExtraMut::U64;
                $body
            }
            $ty::I64($v) => {
                let $wrap = ExtraMut::I64;
                $body
            }
            $ty::F32($v) => {
                let $wrap = ExtraMut::F32;
                $body
            }
            $ty::F64($v) => {
                let $wrap = ExtraMut::F64;
                $body
            }
        }
    };
}

impl<'a> ExtraMut<'a> {
    /// The values from `start` on.
    fn from(values: &'a mut ExtraValues, start: usize) -> ExtraMut<'a> {
        per_extra!(ExtraValues, values, v, wrap => wrap(v.get_mut(start..).unwrap_or_default()))
    }

    fn split_at(self, k: usize) -> (ExtraMut<'a>, ExtraMut<'a>) {
        per_extra!(ExtraMut, self, v, wrap => {
            let (a, b) = split(v, k);
            (wrap(a), wrap(b))
        })
    }

    /// Decode `f` from each record into the values.
    pub(super) fn fill(self, records: std::slice::ChunksExact<'_, u8>, f: &ExtraField) {
        fn run<T: ExtraScalar>(
            out: &mut [T],
            recs: std::slice::ChunksExact<'_, u8>,
            f: &ExtraField,
        ) {
            let (at, kind) = (f.at, f.stored);
            match f.transform {
                Some((s, off)) => {
                    for (o, r) in out.iter_mut().zip(recs) {
                        *o = T::from_f64(rec_scalar(r, at, kind) * s + off);
                    }
                }
                None => {
                    for (o, r) in out.iter_mut().zip(recs) {
                        *o = T::from_f64(rec_scalar(r, at, kind));
                    }
                }
            }
        }
        per_extra!(ExtraMut, self, v, _wrap => run(v, records, f));
    }
}

/// Split a view at `k`; an absent (empty) array stays empty on both sides.
fn split<T>(s: &mut [T], k: usize) -> (&mut [T], &mut [T]) {
    if s.is_empty() {
        (&mut [], s)
    } else {
        s.split_at_mut(k)
    }
}

impl<'a> ColumnsMut<'a> {
    pub(super) fn split_at(self, k: usize) -> (ColumnsMut<'a>, ColumnsMut<'a>) {
        let (p0, p1) = split(self.positions, k);
        let (i0, i1) = split(self.intensity, k);
        let (r0, r1) = split(self.return_number, k);
        let (n0, n1) = split(self.number_of_returns, k);
        let (c0, c1) = split(self.classification, k);
        let (s0, s1) = split(self.scan_angle_i8, k);
        let (f0, f1) = split(self.scan_angle_f32, k);
        let (u0, u1) = split(self.user_data, k);
        let (q0, q1) = split(self.point_source_id, k);
        let (t0, t1) = split(self.time, k);
        let (k0, k1) = split(self.color, k);
        let (x0, x1) = split(self.nir, k);
        let (e0, e1): (Vec<_>, Vec<_>) = self.extras.into_iter().map(|e| e.split_at(k)).unzip();
        (
            ColumnsMut {
                positions: p0,
                intensity: i0,
                return_number: r0,
                number_of_returns: n0,
                classification: c0,
                scan_angle_i8: s0,
                scan_angle_f32: f0,
                user_data: u0,
                point_source_id: q0,
                time: t0,
                color: k0,
                nir: x0,
                extras: e0,
            },
            ColumnsMut {
                positions: p1,
                intensity: i1,
                return_number: r1,
                number_of_returns: n1,
                classification: c1,
                scan_angle_i8: s1,
                scan_angle_f32: f1,
                user_data: u1,
                point_source_id: q1,
                time: t1,
                color: k1,
                nir: x1,
                extras: e1,
            },
        )
    }
}

#[inline(always)]
fn rec_u16(r: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([r[o], r[o + 1]])
}
#[inline(always)]
fn rec_i32(r: &[u8], o: usize) -> i32 {
    i32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]])
}
#[inline(always)]
fn rec_8(r: &[u8], o: usize) -> [u8; 8] {
    [
        r[o],
        r[o + 1],
        r[o + 2],
        r[o + 3],
        r[o + 4],
        r[o + 5],
        r[o + 6],
        r[o + 7],
    ]
}

/// Decode one stored scalar as f64.
#[inline(always)]
fn rec_scalar(r: &[u8], o: usize, kind: ScalarKind) -> f64 {
    match kind {
        ScalarKind::U8 => f64::from(r[o]),
        ScalarKind::I8 => f64::from(r[o] as i8),
        ScalarKind::U16 => f64::from(rec_u16(r, o)),
        ScalarKind::I16 => f64::from(rec_u16(r, o) as i16),
        ScalarKind::U32 => f64::from(rec_i32(r, o) as u32),
        ScalarKind::I32 => f64::from(rec_i32(r, o)),
        ScalarKind::U64 => u64::from_le_bytes(rec_8(r, o)) as f64,
        ScalarKind::I64 => i64::from_le_bytes(rec_8(r, o)) as f64,
        ScalarKind::F32 => f64::from(f32::from_bits(rec_i32(r, o) as u32)),
        ScalarKind::F64 => f64::from_le_bytes(rec_8(r, o)),
    }
}

/// Coordinate decoding: world = raw * scale + offset; stored = world - origin.
#[derive(Clone, Copy)]
pub(super) struct Transform {
    scale: [f64; 3],
    /// `offset - origin`, so the subtraction happens once in f64.
    shift: [f64; 3],
}

impl Transform {
    pub(super) fn new(header: &Header, origin: [f64; 3]) -> Transform {
        Transform {
            scale: header.scale,
            shift: [
                header.offset[0] - origin[0],
                header.offset[1] - origin[1],
                header.offset[2] - origin[2],
            ],
        }
    }
}

/// How a stored extra-bytes field is held: scaled ones as f64, the others at their stored width.
fn held_kind(f: &ExtraField) -> ScalarKind {
    if f.transform.is_some() {
        ScalarKind::F64
    } else {
        f.stored
    }
}

impl Columns {
    /// `n` points of zeros in every array the layout reads (the others empty, not allocated). `vec![0; n]` asks
    /// the allocator for zeroed memory, which for large arrays is fresh pages the kernel zeroes on first touch:
    /// decoding is the only pass over them.
    pub(super) fn zeroed(layout: &Layout, n: usize) -> Columns {
        let n_if = |present: bool| if present { n } else { 0 };
        let standard_extras = layout.standard_extras;
        Columns {
            origin: None,
            positions: vec![[0.0; 3]; n],
            intensity: vec![0.0; n_if(layout.intensity)],
            return_number: vec![0; n_if(layout.return_number)],
            number_of_returns: vec![0; n_if(layout.number_of_returns)],
            classification: vec![0; n_if(layout.classification)],
            scan_angle_i8: vec![0; n_if(standard_extras && !layout.extended)],
            scan_angle_f32: vec![0.0; n_if(standard_extras && layout.extended)],
            user_data: vec![0; n_if(standard_extras)],
            point_source_id: vec![0; n_if(standard_extras)],
            time: vec![0.0; n_if(layout.time_at.is_some())],
            color: vec![[0; 3]; n_if(layout.color_at.is_some())],
            nir: vec![0; n_if(layout.nir_at.is_some())],
            extras: layout
                .extras
                .iter()
                .map(|f| ExtraValues::zeros(held_kind(f), n))
                .collect(),
        }
    }

    fn len(&self) -> usize {
        self.positions.len()
    }

    /// Room for `n` points in every array the layout reads.
    pub(super) fn reserve(&mut self, n: usize, layout: &Layout) {
        self.positions.reserve(n);
        if layout.intensity {
            self.intensity.reserve(n);
        }
        if layout.return_number {
            self.return_number.reserve(n);
        }
        if layout.number_of_returns {
            self.number_of_returns.reserve(n);
        }
        if layout.classification {
            self.classification.reserve(n);
        }
        if layout.standard_extras {
            if layout.extended {
                self.scan_angle_f32.reserve(n);
            } else {
                self.scan_angle_i8.reserve(n);
            }
            self.user_data.reserve(n);
            self.point_source_id.reserve(n);
        }
        if layout.time_at.is_some() {
            self.time.reserve(n);
        }
        if layout.color_at.is_some() {
            self.color.reserve(n);
        }
        if layout.nir_at.is_some() {
            self.nir.reserve(n);
        }
    }

    /// Grow every array the layout reads to `n` points (zeros at the end).
    fn grow(&mut self, n: usize, layout: &Layout) {
        self.positions.resize(n, [0.0; 3]);
        if layout.intensity {
            self.intensity.resize(n, 0.0);
        }
        if layout.return_number {
            self.return_number.resize(n, 0);
        }
        if layout.number_of_returns {
            self.number_of_returns.resize(n, 0);
        }
        if layout.classification {
            self.classification.resize(n, 0);
        }
        if layout.standard_extras {
            if layout.extended {
                self.scan_angle_f32.resize(n, 0.0);
            } else {
                self.scan_angle_i8.resize(n, 0);
            }
            self.user_data.resize(n, 0);
            self.point_source_id.resize(n, 0);
        }
        if layout.time_at.is_some() {
            self.time.resize(n, 0.0);
        }
        if layout.color_at.is_some() {
            self.color.resize(n, [0; 3]);
        }
        if layout.nir_at.is_some() {
            self.nir.resize(n, 0);
        }
        for e in &mut self.extras {
            let more = ExtraValues::zeros(e.kind(), n.saturating_sub(e.len()));
            e.extend(&more);
        }
    }

    /// Views of every array from point `start` to the end.
    pub(super) fn view_from(&mut self, start: usize) -> ColumnsMut<'_> {
        fn tail<T>(v: &mut [T], start: usize) -> &mut [T] {
            v.get_mut(start..).unwrap_or_default()
        }
        ColumnsMut {
            positions: tail(&mut self.positions, start),
            intensity: tail(&mut self.intensity, start),
            return_number: tail(&mut self.return_number, start),
            number_of_returns: tail(&mut self.number_of_returns, start),
            classification: tail(&mut self.classification, start),
            scan_angle_i8: tail(&mut self.scan_angle_i8, start),
            scan_angle_f32: tail(&mut self.scan_angle_f32, start),
            user_data: tail(&mut self.user_data, start),
            point_source_id: tail(&mut self.point_source_id, start),
            time: tail(&mut self.time, start),
            color: tail(&mut self.color, start),
            nir: tail(&mut self.nir, start),
            extras: self
                .extras
                .iter_mut()
                .map(|e| ExtraMut::from(e, start))
                .collect(),
        }
    }

    /// The origin, chosen from `header` and the first record when not chosen yet.
    pub(super) fn origin(&mut self, header: &Header, first_record: &[u8]) -> [f64; 3] {
        *self
            .origin
            .get_or_insert_with(|| choose_origin(header, first_record))
    }

    /// Decode `records` (whole records, back to back) and append them. `first` is the index of the first one
    /// in the file, for error messages.
    pub(super) fn append(
        &mut self,
        records: &[u8],
        header: &Header,
        layout: &Layout,
        path: &Path,
        first: u64,
    ) -> Result<()> {
        let rl = layout.record_len;
        let n = records.len() / rl;
        if n == 0 {
            return Ok(());
        }
        let tf = Transform::new(header, self.origin(header, records));
        let start = self.len();
        self.grow(start + n, layout);
        let view = self.view_from(start);
        match fill_parallel(view, &records[..n * rl], layout, tf, n) {
            Some(bad) => Err(not_finite(path, first + bad as u64)),
            None => Ok(()),
        }
    }

    pub(super) fn into_cloud(self, header: &Header, layout: &Layout, path: &Path) -> Result<Cloud> {
        let origin = self.origin.unwrap_or_else(|| {
            if header.min.iter().all(|v| v.is_finite()) {
                origin_for(header.min)
            } else {
                [0.0; 3]
            }
        });
        let mut cloud = cloud::Columns {
            positions: self.positions,
            intensity: layout.intensity.then_some(self.intensity),
            return_number: layout.return_number.then_some(self.return_number),
            number_of_returns: layout.number_of_returns.then_some(self.number_of_returns),
            classification: layout.classification.then_some(self.classification),
            ..cloud::Columns::default()
        };
        if layout.time_at.is_some() {
            cloud.time = Some(self.time);
        }
        if layout.color_at.is_some() {
            let mut color = self.color;
            let max = color
                .iter()
                .flat_map(|c| c.iter())
                .copied()
                .max()
                .unwrap_or(0);
            if max > 0 && max <= 255 {
                for c in &mut color {
                    for v in c.iter_mut() {
                        *v *= 257;
                    }
                }
            }
            cloud.color = Some(color);
        }
        if layout.nir_at.is_some() {
            push_extra(&mut cloud.extra, "nir", self.nir.into());
        }
        if layout.standard_extras {
            let scan_angle = if layout.extended {
                self.scan_angle_f32.into()
            } else {
                self.scan_angle_i8.into()
            };
            push_extra(&mut cloud.extra, "scan_angle", scan_angle);
            push_extra(&mut cloud.extra, "user_data", self.user_data.into());
            push_extra(
                &mut cloud.extra,
                "point_source_id",
                self.point_source_id.into(),
            );
        }
        let mut normal: [Vec<f64>; 3] = Default::default();
        for (f, values) in layout.extras.iter().zip(self.extras) {
            match f.role {
                None => push_extra(&mut cloud.extra, &f.name, values),
                Some(Role::Normal(k)) => normal[k % 3] = values.to_f64(),
                Some(Role::Gamma) => {
                    cloud.gamma = Some(values.to_f64().into_iter().map(|v| v as f32).collect());
                }
                Some(Role::Ring) => {
                    cloud.ring = Some(values.to_f64().into_iter().map(|v| v as u16).collect());
                }
            }
        }
        if normal.iter().all(|c| !c.is_empty()) {
            let [x, y, z] = normal;
            cloud.normals = Some(
                x.iter()
                    .zip(&y)
                    .zip(&z)
                    .map(|((&x, &y), &z)| [x as f32, y as f32, z as f32])
                    .collect(),
            );
        }
        let mut cloud = Cloud::from_columns(origin, cloud)
            .map_err(|e| Error::format(path, "points", e.to_string()))?;
        cloud.meta.dropped.clone_from(&layout.dropped);
        cloud.meta.format = Some(format!(
            "{} {}.{}, point format {}",
            if header.compressed { "LAZ" } else { "LAS" },
            header.version.0,
            header.version.1,
            header.format
        ));
        cloud.meta.crs_wkt = header
            .vlrs
            .iter()
            .find(|v| v.is("LASF_Projection", 2112))
            .map(|v| String::from_utf8_lossy(c_str(v.data)).trim().to_string())
            .filter(|s| !s.is_empty());
        cloud.meta.las_geotiff = GEOTIFF_RECORDS
            .iter()
            .filter_map(|&id| {
                let vlr = header.vlrs.iter().find(|v| v.is("LASF_Projection", id))?;
                Some((id, vlr.data.to_vec()))
            })
            .collect();
        Ok(cloud)
    }
}

pub(super) fn not_finite(path: &Path, index: u64) -> Error {
    Error::format(
        path,
        format!("point {index}"),
        "coordinates are not finite (or too far from the others to hold as f32)",
    )
}

/// Add an extra dim, renaming it when the name is taken (a file's extra bytes may reuse our names).
fn push_extra(extra: &mut Vec<ExtraDim>, name: &str, values: ExtraValues) {
    let taken: Vec<&str> = extra.iter().map(|d| d.name.as_str()).collect();
    extra.push(ExtraDim::new(unique_name(&taken, name), values));
}
/// The cloud origin: the header's minimum corner (whole metres) when the header bounds are sane and contain
/// the first point, else the first point's position (whole metres).
fn choose_origin(header: &Header, records: &[u8]) -> [f64; 3] {
    let mut first = [0.0f64; 3];
    for (k, v) in first.iter_mut().enumerate() {
        let raw = records
            .get(4 * k..4 * k + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, i32::from_le_bytes);
        *v = f64::from(raw) * header.scale[k] + header.offset[k];
    }
    let sane = (0..3).all(|k| {
        let (lo, hi) = (header.min[k], header.max[k]);
        lo.is_finite() && hi.is_finite() && lo <= hi && first[k] >= lo - 1.0 && first[k] <= hi + 1.0
    });
    if sane {
        origin_for(header.min)
    } else if first.iter().all(|v| v.is_finite()) {
        origin_for(first)
    } else {
        [0.0; 3]
    }
}

/// Decode `n` records into `view`, splitting the work across threads. Returns the index (within this batch)
/// of the first point whose coordinates are not finite, if any.
fn fill_parallel(
    view: ColumnsMut<'_>,
    records: &[u8],
    layout: &Layout,
    tf: Transform,
    n: usize,
) -> Option<usize> {
    if n <= FILL_GRAIN {
        return fill(view, records, layout, tf);
    }
    let k = n / 2;
    let (a, b) = view.split_at(k);
    let (ra, rb) = records.split_at(k * layout.record_len);
    let (left, right) = rayon::join(
        || fill_parallel(a, ra, layout, tf, k),
        || fill_parallel(b, rb, layout, tf, n - k),
    );
    left.or(right.map(|i| i + k))
}

/// Decode records into `view` (single thread). Field by field, so each loop is tight.
pub(super) fn fill(
    v: ColumnsMut<'_>,
    records: &[u8],
    layout: &Layout,
    tf: Transform,
) -> Option<usize> {
    let rl = layout.record_len;
    let recs = || records.chunks_exact(rl);
    let mut bad = None;
    for (i, (p, r)) in v.positions.iter_mut().zip(recs()).enumerate() {
        let x = (f64::from(rec_i32(r, 0)) * tf.scale[0] + tf.shift[0]) as f32;
        let y = (f64::from(rec_i32(r, 4)) * tf.scale[1] + tf.shift[1]) as f32;
        let z = (f64::from(rec_i32(r, 8)) * tf.scale[2] + tf.shift[2]) as f32;
        *p = [x, y, z];
        if bad.is_none() && !(x.is_finite() && y.is_finite() && z.is_finite()) {
            bad = Some(i);
        }
    }
    for (o, r) in v.intensity.iter_mut().zip(recs()) {
        *o = f32::from(rec_u16(r, 12));
    }
    if layout.extended {
        fill_returns(v.return_number, v.number_of_returns, recs, 0x0f, 4, 0x0f);
        for (o, r) in v.classification.iter_mut().zip(recs()) {
            *o = r[16];
        }
        for (o, r) in v.scan_angle_f32.iter_mut().zip(recs()) {
            *o = (f64::from(rec_u16(r, 18) as i16) * 0.006) as f32;
        }
        for (o, r) in v.point_source_id.iter_mut().zip(recs()) {
            *o = rec_u16(r, 20);
        }
    } else {
        fill_returns(v.return_number, v.number_of_returns, recs, 0x07, 3, 0x07);
        for (o, r) in v.classification.iter_mut().zip(recs()) {
            *o = r[15] & 0x1f;
        }
        for (o, r) in v.scan_angle_i8.iter_mut().zip(recs()) {
            *o = r[16] as i8;
        }
        for (o, r) in v.point_source_id.iter_mut().zip(recs()) {
            *o = rec_u16(r, 18);
        }
    }
    for (o, r) in v.user_data.iter_mut().zip(recs()) {
        *o = r[17];
    }
    if let Some(at) = layout.time_at {
        for (o, r) in v.time.iter_mut().zip(recs()) {
            *o = f64::from_le_bytes(rec_8(r, at));
        }
    }
    if let Some(at) = layout.color_at {
        for (o, r) in v.color.iter_mut().zip(recs()) {
            *o = [rec_u16(r, at), rec_u16(r, at + 2), rec_u16(r, at + 4)];
        }
    }
    if let Some(at) = layout.nir_at {
        for (o, r) in v.nir.iter_mut().zip(recs()) {
            *o = rec_u16(r, at);
        }
    }
    for (f, out) in layout.extras.iter().zip(v.extras) {
        out.fill(recs(), f);
    }
    bad
}

/// Return number (`byte & rn_mask`) and number of returns (`(byte >> shift) & nr_mask`) from byte 14 of each
/// record into whichever of the two arrays is read (an array not read is empty): one loop for both when both
/// are read.
#[inline(always)]
fn fill_returns<'r>(
    return_number: &mut [u8],
    number_of_returns: &mut [u8],
    recs: impl Fn() -> std::slice::ChunksExact<'r, u8>,
    rn_mask: u8,
    shift: u32,
    nr_mask: u8,
) {
    if !return_number.is_empty() && !number_of_returns.is_empty() {
        for ((rn, nr), r) in return_number
            .iter_mut()
            .zip(number_of_returns.iter_mut())
            .zip(recs())
        {
            *rn = r[14] & rn_mask;
            *nr = (r[14] >> shift) & nr_mask;
        }
    } else {
        for (rn, r) in return_number.iter_mut().zip(recs()) {
            *rn = r[14] & rn_mask;
        }
        for (nr, r) in number_of_returns.iter_mut().zip(recs()) {
            *nr = (r[14] >> shift) & nr_mask;
        }
    }
}

pub(super) fn read_las_points(
    data: &[u8],
    path: &Path,
    header: &Header,
    layout: &Layout,
) -> Result<Columns> {
    let avail = data.len() - header.offset_to_points;
    let needed = header
        .count
        .checked_mul(header.record_len as u64)
        .filter(|&b| b <= avail as u64)
        .ok_or_else(|| {
            Error::format(
                path,
                "header: number of point records",
                format!(
                    "the header claims {} points of {} bytes but only {avail} bytes follow the point data offset {}",
                    header.count, header.record_len, header.offset_to_points
                ),
            )
        })? as usize;
    let records = &data[header.offset_to_points..header.offset_to_points + needed];
    // The count is checked against the bytes present: allocate every array once, decode once.
    let n = header.count as usize;
    let mut cols = Columns::zeroed(layout, n);
    let tf = Transform::new(header, cols.origin(header, records));
    match fill_parallel(cols.view_from(0), records, layout, tf, n) {
        Some(bad) => Err(not_finite(path, bad as u64)),
        None => Ok(cols),
    }
}
