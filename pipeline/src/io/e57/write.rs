//! Writing an E57 file through the `e57` crate: one `data3D` entry per scan, points in the scan frame.

use std::ops::Range;
use std::path::Path;

use e57::{
    ColorLimits, E57Writer, IntensityLimits, Quaternion, Record, RecordDataType, RecordName,
    RecordValue, Transform, Translation,
};
use nalgebra::Vector3;

use super::read::lowercase_first;
use super::sink::index_of;
use crate::io::WriteOptions;
use crate::io::atomic::write_atomic;
use crate::pose::Isometry3;
use crate::{Cloud, Error, Result};

/// Step of the scaled-integer coordinates we write: 0.1 mm, well below any scanner's noise.
pub(super) const COORD_SCALE: f64 = 1e-4;
/// Largest number of coordinate steps we store as a scaled integer (beyond it, ~429 km, we write f64).
const MAX_COORD_STEPS: f64 = 4_294_967_295.0;

/// Write `cloud` as an E57 file: one scan per [`ScanInfo`] when the scans partition the points in order
/// (points in the scan frame, with the scan's pose), else one scan with the identity pose. Coordinates are
/// scaled integers with a 0.1 mm step (f64 when a scan spans more than ~429 km); intensity is f32 with
/// `intensityLimits` 0..1 when the values fit, colour 8-bit when every value is an 8-bit value widened by 257
/// (else 16-bit), time as f64 `timeStamp`, extras `row` / `column` as `rowIndex` / `columnIndex`, return
/// number / count as `returnIndex` / `returnCount`. `opts.fields` selects among `intensity`, `color`,
/// `time`, `row`, `column`, `return_number`.
///
/// [`ScanInfo`]: crate::ScanInfo
pub fn write(cloud: &Cloud, path: &Path, opts: &WriteOptions) -> Result<()> {
    let groups = scan_groups(cloud, path);
    write_atomic(path, |file| {
        let mut w = E57Writer::new(file, &guid(cloud, u64::MAX))
            .map_err(|e| write_err(path, "file header", &e))?;
        if let Some(wkt) = &cloud.meta.crs_wkt {
            w.set_coordinate_metadata(Some(wkt.clone()));
        }
        for (k, g) in groups.iter().enumerate() {
            write_scan(&mut w, cloud, g, k, path, opts)?;
        }
        w.finalize().map_err(|e| write_err(path, "xml section", &e))
    })
}

/// A run of points written as one E57 scan.
struct Group {
    name: String,
    points: Range<usize>,
    world_from_scan: Isometry3<f64>,
}

fn scan_groups(cloud: &Cloud, path: &Path) -> Vec<Group> {
    let n = cloud.len();
    let scans = &cloud.meta.scans;
    let partitions = !scans.is_empty()
        && scans.first().is_some_and(|s| s.points.start == 0)
        && scans.last().is_some_and(|s| s.points.end == n)
        && scans.iter().all(|s| s.points.start <= s.points.end)
        && scans
            .windows(2)
            .all(|w| w[0].points.end == w[1].points.start)
        && scans.iter().any(|s| s.world_from_scan.is_some());
    if partitions {
        scans
            .iter()
            .map(|s| Group {
                name: s.name.clone(),
                points: s.points.clone(),
                world_from_scan: s.world_from_scan.unwrap_or_default(),
            })
            .collect()
    } else {
        let name = path
            .file_stem()
            .map_or_else(|| "scan".to_owned(), |s| s.to_string_lossy().into_owned());
        vec![Group {
            name,
            points: 0..n,
            world_from_scan: Isometry3::identity(),
        }]
    }
}

/// A deterministic GUID-shaped identifier derived from the points (E57 requires one per file and scan).
pub(super) fn guid(cloud: &Cloud, salt: u64) -> String {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut h = mix(salt ^ cloud.len() as u64);
    for o in cloud.origin {
        h = mix(h ^ o.to_bits());
    }
    let step = (cloud.len() / 4096).max(1);
    for p in cloud.positions().iter().step_by(step) {
        h = mix(h ^ (u64::from(p[0].to_bits()) << 32 | u64::from(p[1].to_bits())));
        h = mix(h ^ u64::from(p[2].to_bits()));
    }
    let a = h;
    let b = mix(h ^ 0x9e37_79b9_7f4a_7c15);
    format!(
        "{{{:08x}-{:04x}-{:04x}-{:04x}-{:012x}}}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// How one coordinate axis is stored.
#[derive(Clone, Copy)]
pub(super) enum Axis {
    Scaled { offset: f64, max: i64 },
    Double,
}

impl Axis {
    pub(super) fn for_range(lo: f64, hi: f64) -> Axis {
        if !(lo.is_finite() && hi.is_finite()) {
            // No points: any valid type will do.
            return Axis::Scaled {
                offset: 0.0,
                max: 1,
            };
        }
        let offset = lo.floor();
        let steps = ((hi - offset) / COORD_SCALE).ceil() + 1.0;
        if steps <= MAX_COORD_STEPS {
            // At least one step so the field never has zero bits (the crate divides by the point size).
            Axis::Scaled {
                offset,
                max: (steps as i64).max(1),
            }
        } else {
            Axis::Double
        }
    }

    fn record(self, name: RecordName) -> Record {
        let data_type = match self {
            Axis::Scaled { offset, max } => RecordDataType::ScaledInteger {
                min: 0,
                max,
                scale: COORD_SCALE,
                offset,
            },
            Axis::Double => RecordDataType::Double {
                min: None,
                max: None,
            },
        };
        Record { name, data_type }
    }

    #[inline]
    pub(super) fn value(self, x: f64) -> RecordValue {
        match self {
            Axis::Scaled { offset, max } => {
                // Clamped so the packed value always lies inside the declared range.
                let q = ((x - offset) / COORD_SCALE).round().clamp(0.0, max as f64);
                RecordValue::ScaledInteger(q as i64)
            }
            Axis::Double => RecordValue::Double(x),
        }
    }
}

/// An integer field with the range of its values (at least one step wide, so it never packs to zero bits).
fn int_record(name: RecordName, values: impl Iterator<Item = i64>) -> (Record, i64, i64) {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        (lo, hi) = (0, 1);
    }
    let hi = hi.max(lo.saturating_add(1));
    let lo = lo.min(hi - 1);
    (
        Record {
            name,
            data_type: RecordDataType::Integer { min: lo, max: hi },
        },
        lo,
        hi,
    )
}

fn write_scan<F: std::io::Read + std::io::Write + std::io::Seek>(
    w: &mut E57Writer<F>,
    cloud: &Cloud,
    g: &Group,
    k: usize,
    path: &Path,
    opts: &WriteOptions,
) -> Result<()> {
    let place = format!("scan {k} \"{}\"", g.name);
    let range = g.points.clone();
    let positions = cloud.positions().get(range.clone()).ok_or_else(|| {
        Error::parameter(
            "cloud",
            format!("scan {} covers points {range:?} of {}", g.name, cloud.len()),
        )
    })?;
    let local = scan_frame(cloud.origin, positions, &g.world_from_scan);
    let axes = axes_for(&local);
    let (columns, records) = ScanColumns::new(cloud, range, opts);
    let mut proto = vec![
        axes[0].record(RecordName::CartesianX),
        axes[1].record(RecordName::CartesianY),
        axes[2].record(RecordName::CartesianZ),
    ];
    proto.extend(records);

    let mut pw = w
        .add_pointcloud(&guid(cloud, k as u64), proto)
        .map_err(|e| write_err(path, &place, &e))?;
    pw.set_name(Some(g.name.clone()));
    pw.set_transform(Some(e57_transform(&g.world_from_scan)));
    if let Some(limits) = columns.intensity_limits() {
        pw.set_intensity_limits(Some(limits));
    }
    if let Some(limits) = columns.color_limits() {
        pw.set_color_limits(Some(limits));
    }
    for (i, p) in local.iter().enumerate() {
        pw.add_point(columns.values(i, p, &axes))
            .map_err(|e| write_err(path, &format!("{place} point {i}"), &e))?;
    }
    pw.finalize().map_err(|e| write_err(path, &place, &e))
}

/// Scan-frame coordinates: p = R^T (world - t), the difference first so georeferenced values keep their digits.
fn scan_frame(
    origin: [f64; 3],
    positions: &[[f32; 3]],
    world_from_scan: &Isometry3<f64>,
) -> Vec<[f64; 3]> {
    let r = world_from_scan.rotation.to_rotation_matrix();
    let t = world_from_scan.translation.vector;
    let o = Vector3::from(origin);
    positions
        .iter()
        .map(|p| {
            r.inverse_transform_vector(&(o + Vector3::from(*p).cast::<f64>() - t))
                .into()
        })
        .collect()
}

/// The coordinate encoding of each axis, from the scan's extent on it.
fn axes_for(local: &[[f64; 3]]) -> [Axis; 3] {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in local {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    [0, 1, 2].map(|a| Axis::for_range(lo[a], hi[a]))
}

/// The scan's pose in E57's form (a w-first quaternion and a translation).
fn e57_transform(world_from_scan: &Isometry3<f64>) -> Transform {
    let q = crate::pose::rotation_wxyz(world_from_scan);
    let t = world_from_scan.translation.vector;
    Transform {
        rotation: Quaternion {
            w: q[0],
            x: q[1],
            y: q[2],
            z: q[3],
        },
        translation: Translation {
            x: t[0],
            y: t[1],
            z: t[2],
        },
    }
}

/// The attribute columns of one scan that the writer stores, cut to the scan's points, with the value ranges
/// their records declare. Record order: intensity, colour, time stamp, return index and count, row and column.
struct ScanColumns<'a> {
    intensity: Option<&'a [f32]>,
    /// Intensity limits: 0..1 when the values fit, so readers that normalise by the limits see the same values.
    intensity_range: (f64, f64),
    color: Option<&'a [[u16; 3]]>,
    /// 257 when every colour is 8-bit widened (stored as 0..255), else 1.
    color_div: u16,
    color_max: i64,
    time: Option<&'a [f64]>,
    returns: Option<(&'a [u8], &'a [u8])>,
    return_ranges: [(i64, i64); 2],
    index_fields: Vec<Vec<i32>>,
}

impl<'a> ScanColumns<'a> {
    /// The columns `opts` asks for that the cloud has, and the records that describe them.
    fn new(cloud: &'a Cloud, range: Range<usize>, opts: &WriteOptions) -> (Self, Vec<Record>) {
        fn cut<'a, T>(v: Option<&'a [T]>, wanted: bool, r: &Range<usize>) -> Option<&'a [T]> {
            v.filter(|_| wanted).and_then(|v| v.get(r.clone()))
        }
        let intensity = cut(cloud.intensity(), opts.wants("intensity"), &range);
        let color = cut(cloud.color(), opts.wants("color"), &range);
        let time = cut(cloud.time(), opts.wants("time"), &range);
        let wants_returns = opts.wants("return_number");
        let returns = cut(cloud.return_number(), wants_returns, &range).zip(cut(
            cloud.number_of_returns(),
            wants_returns,
            &range,
        ));
        let eight_bit = color.is_some_and(|c| c.iter().flatten().all(|v| v % 257 == 0));
        let mut c = ScanColumns {
            intensity,
            intensity_range: intensity.map_or((0.0, 1.0), intensity_range),
            color,
            color_div: if eight_bit { 257 } else { 1 },
            color_max: if eight_bit { 255 } else { 65535 },
            time,
            returns,
            return_ranges: [(0, 1); 2],
            index_fields: Vec::new(),
        };
        let records = c.records(cloud, range, opts);
        (c, records)
    }

    /// The records after x, y and z; fills the integer ranges the values are clamped to.
    fn records(&mut self, cloud: &Cloud, range: Range<usize>, opts: &WriteOptions) -> Vec<Record> {
        let mut proto = Vec::new();
        if self.intensity.is_some() {
            proto.push(Record {
                name: RecordName::Intensity,
                data_type: RecordDataType::Single {
                    min: None,
                    max: None,
                },
            });
        }
        if self.color.is_some() {
            for name in [
                RecordName::ColorRed,
                RecordName::ColorGreen,
                RecordName::ColorBlue,
            ] {
                proto.push(Record {
                    name,
                    data_type: RecordDataType::Integer {
                        min: 0,
                        max: self.color_max,
                    },
                });
            }
        }
        if self.time.is_some() {
            proto.push(Record {
                name: RecordName::TimeStamp,
                data_type: RecordDataType::Double {
                    min: None,
                    max: None,
                },
            });
        }
        if let Some((rn, nr)) = self.returns {
            let (ri, ri_lo, ri_hi) = int_record(
                RecordName::ReturnIndex,
                rn.iter().map(|&v| i64::from(v.saturating_sub(1))),
            );
            let (rc, rc_lo, rc_hi) =
                int_record(RecordName::ReturnCount, nr.iter().map(|&v| i64::from(v)));
            proto.push(ri);
            proto.push(rc);
            self.return_ranges = [(ri_lo, ri_hi), (rc_lo, rc_hi)];
        }
        for (extra_name, record_name) in [
            ("row", RecordName::RowIndex),
            ("column", RecordName::ColumnIndex),
        ] {
            let Some(d) = cloud.extra(extra_name).filter(|_| opts.wants(extra_name)) else {
                continue;
            };
            let Some(vals) = range
                .clone()
                .map(|i| d.values.get(i).map(index_of))
                .collect::<Option<Vec<i32>>>()
            else {
                continue;
            };
            let (rec, _, _) = int_record(record_name, vals.iter().map(|&v| i64::from(v)));
            proto.push(rec);
            self.index_fields.push(vals);
        }
        proto
    }

    fn intensity_limits(&self) -> Option<IntensityLimits> {
        let (a, b) = self.intensity_range;
        self.intensity.map(|_| IntensityLimits {
            intensity_min: Some(RecordValue::Double(a)),
            intensity_max: Some(RecordValue::Double(b)),
        })
    }

    fn color_limits(&self) -> Option<ColorLimits> {
        self.color?;
        let (lo, hi) = (
            Some(RecordValue::Integer(0)),
            Some(RecordValue::Integer(self.color_max)),
        );
        Some(ColorLimits {
            red_min: lo.clone(),
            red_max: hi.clone(),
            green_min: lo.clone(),
            green_max: hi.clone(),
            blue_min: lo,
            blue_max: hi,
        })
    }

    /// Point `i`'s values in record order.
    fn values(&self, i: usize, p: &[f64; 3], axes: &[Axis; 3]) -> Vec<RecordValue> {
        // The crate takes one Vec per point; there is no way around that allocation in its API.
        let mut values = Vec::with_capacity(16);
        values.extend((0..3).map(|a| axes[a].value(p[a])));
        if let Some(v) = self.intensity.and_then(|v| v.get(i)) {
            values.push(RecordValue::Single(*v));
        }
        if let Some(c) = self.color.and_then(|v| v.get(i)) {
            for ch in c {
                values.push(RecordValue::Integer(i64::from(ch / self.color_div)));
            }
        }
        if let Some(v) = self.time.and_then(|v| v.get(i)) {
            values.push(RecordValue::Double(*v));
        }
        if let Some((rn, nr)) = self.returns {
            let [(a_lo, a_hi), (b_lo, b_hi)] = self.return_ranges;
            let ri = rn.get(i).map_or(0, |&v| i64::from(v.saturating_sub(1)));
            let rc = nr.get(i).map_or(0, |&v| i64::from(v));
            values.push(RecordValue::Integer(ri.clamp(a_lo, a_hi)));
            values.push(RecordValue::Integer(rc.clamp(b_lo, b_hi)));
        }
        for vals in &self.index_fields {
            values.push(RecordValue::Integer(
                vals.get(i).map_or(0, |&v| i64::from(v)),
            ));
        }
        values
    }
}

/// Intensity limits for the values: 0..1 when they fit (or none is finite), widened when they are all equal.
fn intensity_range(vals: &[f32]) -> (f64, f64) {
    let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.iter().filter(|v| v.is_finite()) {
        a = a.min(f64::from(*v));
        b = b.max(f64::from(*v));
    }
    if a >= 0.0 && b <= 1.0 || a > b {
        (0.0, 1.0)
    } else if a == b {
        (a, a + 1.0)
    } else {
        (a, b)
    }
}

/// Errors while writing are the disk's (the crate wraps io errors) or a bug in the values we hand over.
fn write_err(path: &Path, place: &str, e: &e57::Error) -> Error {
    Error::io(
        path,
        std::io::Error::other(format!("{place}: {}", lowercase_first(&e.to_string()))),
    )
}
