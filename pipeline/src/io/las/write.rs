//! Writing: the point records are built here and handed to the `las` crate's writer in batches (it compresses
//! LAZ in parallel).

use std::io::{BufWriter, Write};
use std::path::Path;

use super::header::format_layout;
use super::layout::extra_bytes_code;
use crate::cloud::{ExtraValues, ScalarKind};
use crate::io::atomic::write_atomic;
use crate::io::{LasVersion, WriteOptions};
use crate::{Cloud, Error, Result};

/// Write `cloud` as LAS (or LAZ when `compress`) at `path`, atomically.
///
/// Version: `opts.las_version`, else 1.2 unless the attributes need 1.4 (NIR, return numbers above 5,
/// classes above 31, more than 2^32-1 points). Point format: the smallest that holds the attributes present
/// (GPS time, RGB, NIR). Coordinates keep 0.1 mm (scale 0.0001) when the extent allows, else 1 mm; an extent
/// too large for 1 mm in 32-bit integers is an error. Fields not modelled by LAS (normals, gamma, ring, other
/// extra dims) become extra-bytes dimensions. `opts.fields`, when given, limits which optional fields are
/// written.
pub fn write(cloud: &Cloud, path: &Path, compress: bool, opts: &WriteOptions) -> Result<()> {
    let plan = Plan::new(cloud, opts)?;
    let header = plan.header(cloud, compress)?;
    write_atomic(path, |file| {
        let f = file.try_clone().map_err(|e| Error::io(path, e))?;
        // A failed write (disk full) is the system's error, not the cloud's.
        let las_err = |e: las::Error| match e {
            las::Error::Io(io) | las::Error::LasZipError(laz::LasZipError::IoError(io)) => {
                Error::io(path, io)
            }
            e => Error::format(path, "las writer", format!("{e}")),
        };
        let mut writer =
            las::Writer::new(BufWriter::with_capacity(1 << 20, f), header).map_err(las_err)?;
        let format = *writer.header().point_format();
        let transforms = *writer.header().transforms();
        let batch = 1 << 20;
        let mut start = 0;
        let mut result = Ok(());
        while start < cloud.len() && result.is_ok() {
            let end = (start + batch).min(cloud.len());
            let bytes = plan.encode(cloud, start..end);
            result = las::PointDataBuilder::new()
                .with_format(format)
                .with_transforms(transforms)
                .build_from_bytes(bytes)
                .and_then(|pd| writer.write_points(&pd));
            start = end;
        }
        if let Err(e) = result.and_then(|()| writer.close()) {
            // The las writer closes itself on drop and panics if that fails; the output is a temporary file
            // that is deleted anyway, so let the writer go without dropping it.
            std::mem::forget(writer);
            return Err(las_err(e));
        }
        let mut inner = writer.into_inner().map_err(las_err)?;
        inner.flush().map_err(|e| Error::io(path, e))?;
        Ok(())
    })
}

/// An extra-bytes dimension to write: its name, storage and where its values come from.
struct OutExtra<'a> {
    name: String,
    kind: ScalarKind,
    source: ExtraSource<'a>,
}

enum ExtraSource<'a> {
    Values(&'a ExtraValues),
    Normal(usize),
    Gamma,
    Ring,
}

/// What to write and how: decided once from the cloud and the options.
struct Plan<'a> {
    minor: u8,
    format: u8,
    std_len: usize,
    record_len: usize,
    scale: f64,
    offset: [f64; 3],
    intensity_scale: Option<f32>,
    intensity: Option<&'a [f32]>,
    color: Option<&'a [[u16; 3]]>,
    time: Option<&'a [f64]>,
    return_number: Option<&'a [u8]>,
    number_of_returns: Option<&'a [u8]>,
    classification: Option<&'a [u8]>,
    nir: Option<&'a ExtraValues>,
    scan_angle: Option<&'a ExtraValues>,
    user_data: Option<&'a ExtraValues>,
    point_source_id: Option<&'a ExtraValues>,
    extras: Vec<OutExtra<'a>>,
}

/// What the written points need of the LAS version and point format.
struct Needs {
    points: usize,
    /// The largest return number or number of returns.
    max_return: u8,
    max_return_number: u8,
    max_class: u8,
}

impl Needs {
    fn of(
        points: usize,
        return_number: Option<&[u8]>,
        number_of_returns: Option<&[u8]>,
        classification: Option<&[u8]>,
    ) -> Needs {
        let max = |v: Option<&[u8]>| v.and_then(|v| v.iter().copied().max()).unwrap_or(0);
        let max_return_number = max(return_number);
        Needs {
            points,
            max_return: max_return_number.max(max(number_of_returns)),
            max_return_number,
            max_class: max(classification),
        }
    }

    /// The LAS minor version: the one asked for if it can hold the points, else the smallest that can.
    fn minor(&self, asked: Option<LasVersion>, nir: bool) -> Result<u8> {
        let too_many = self.points as u64 > u64::from(u32::MAX);
        match asked {
            Some(LasVersion::V1_2) => {
                let why = if too_many {
                    Some(format!("{} points", self.points))
                } else if self.max_class > 31 {
                    Some(format!("classification {}", self.max_class))
                } else if self.max_return_number > 5 {
                    Some(format!("return number {}", self.max_return_number))
                } else if self.max_return > 7 {
                    Some(format!("number of returns {}", self.max_return))
                } else {
                    None
                };
                match why {
                    Some(why) => Err(Error::parameter(
                        "las version",
                        format!("LAS 1.2 cannot hold {why}; write LAS 1.4"),
                    )),
                    None => Ok(2),
                }
            }
            Some(LasVersion::V1_4) => Ok(4),
            None if nir || self.max_return > 5 || self.max_class > 31 || too_many => Ok(4),
            None => Ok(2),
        }
    }

    /// The point data format: the smallest that holds the fields written.
    fn format(&self, minor: u8, time: bool, color: bool, nir: bool) -> u8 {
        let extended = minor == 4 && (time || nir || self.max_class > 31 || self.max_return > 7);
        match (extended, time, color, nir) {
            (false, false, false, _) => 0,
            (false, true, false, _) => 1,
            (false, false, true, _) => 2,
            (false, true, true, _) => 3,
            (true, _, false, _) => 6,
            (true, _, true, false) => 7,
            (true, _, true, true) => 8,
        }
    }
}

/// The extra-bytes dimensions: normals, gamma, ring, then the cloud's other extra dimensions that have no
/// standard field (`nir_standard`: NIR is written in its standard field).
fn extra_dims<'a>(
    cloud: &'a Cloud,
    opts: &WriteOptions,
    nir_standard: bool,
) -> Result<Vec<OutExtra<'a>>> {
    let mut extras = Vec::new();
    if let Some(normals) = &cloud.normals()
        && wants_any(opts, &["normal", "normals", "nx", "ny", "nz"])
        && normals.len() == cloud.len()
    {
        for (i, name) in ["nx", "ny", "nz"].into_iter().enumerate() {
            extras.push(OutExtra {
                name: name.into(),
                kind: ScalarKind::F32,
                source: ExtraSource::Normal(i),
            });
        }
    }
    if cloud.gamma().is_some() && opts.wants("gamma") {
        extras.push(OutExtra {
            name: "gamma".into(),
            kind: ScalarKind::F32,
            source: ExtraSource::Gamma,
        });
    }
    if cloud.ring().is_some() && opts.wants("ring") {
        extras.push(OutExtra {
            name: "ring".into(),
            kind: ScalarKind::U16,
            source: ExtraSource::Ring,
        });
    }
    for d in cloud.extras() {
        let standard = match d.name.as_str() {
            "nir" => nir_standard,
            "scan_angle" | "user_data" | "point_source_id" => true,
            _ => false,
        };
        if standard || !opts.wants(&d.name) || extras.iter().any(|e| e.name == d.name) {
            continue;
        }
        if d.name.len() > 32 {
            return Err(Error::parameter(
                "extra dimension",
                format!("name {:?} is longer than the 32 bytes LAS allows", d.name),
            ));
        }
        extras.push(OutExtra {
            name: d.name.clone(),
            kind: d.kind(),
            source: ExtraSource::Values(&d.values),
        });
    }
    Ok(extras)
}

/// Coordinates: the offset at the (rounded) origin, the scale as fine as the extent allows (0.1 mm, else 1 mm).
fn coordinate_grid(cloud: &Cloud) -> Result<(f64, [f64; 3])> {
    let offset = cloud.origin.map(f64::round);
    let mut reach = 0.0f64;
    if let Some((lo, hi)) = cloud.bounds() {
        for k in 0..3 {
            reach = reach
                .max((lo[k] - offset[k]).abs())
                .max((hi[k] - offset[k]).abs());
        }
    }
    if !reach.is_finite() || cloud.origin.iter().any(|v| !v.is_finite()) {
        return Err(Error::parameter("cloud", "coordinates are not finite"));
    }
    let limit = f64::from(i32::MAX) - 16.0;
    if reach / 0.0001 < limit {
        Ok((0.0001, offset))
    } else if reach / 0.001 < limit {
        Ok((0.001, offset))
    } else {
        Err(Error::parameter(
            "cloud extent",
            format!(
                "points lie up to {reach:.0} m from the origin; LAS 32-bit coordinates at 1 mm reach only \
                 {:.0} m",
                limit * 0.001
            ),
        ))
    }
}

/// Intensities all within 0..1 (and not all zero) are a normalised return strength: written scaled to 0..65535.
fn intensity_scale(v: &[f32]) -> f32 {
    if v.iter().all(|&x| (0.0..=1.0).contains(&x)) && v.iter().any(|&x| x > 0.0) {
        65535.0
    } else {
        1.0
    }
}

fn wants_any(opts: &WriteOptions, names: &[&str]) -> bool {
    opts.fields.is_none() || names.iter().any(|n| opts.wants(n))
}

impl<'a> Plan<'a> {
    fn new(cloud: &'a Cloud, opts: &WriteOptions) -> Result<Plan<'a>> {
        let intensity = cloud.intensity().filter(|_| opts.wants("intensity"));
        let color = cloud.color().filter(|_| wants_any(opts, &["color", "rgb"]));
        let time = cloud
            .time()
            .filter(|_| wants_any(opts, &["time", "gps_time"]));
        let return_number = cloud
            .return_number()
            .filter(|_| opts.wants("return_number"));
        let number_of_returns = cloud
            .number_of_returns()
            .filter(|_| opts.wants("number_of_returns"));
        let classification = cloud
            .classification()
            .filter(|_| wants_any(opts, &["classification", "class"]));
        let standard_extra = |name: &str| {
            cloud
                .extra(name)
                .filter(|_| opts.wants(name))
                .map(|d| &d.values)
        };
        let nir_values = standard_extra("nir");
        let needs = Needs::of(
            cloud.len(),
            return_number,
            number_of_returns,
            classification,
        );
        let minor = needs.minor(opts.las_version, nir_values.is_some())?;
        // NIR has a standard field only next to RGB in formats 8 and 10; without colour it is an extra dim.
        let nir = nir_values.filter(|_| minor == 4 && color.is_some());
        let format = needs.format(minor, time.is_some(), color.is_some(), nir.is_some());
        let (std_len, ..) = format_layout(format).unwrap_or((20, None, None, None));
        let extras = extra_dims(cloud, opts, nir.is_some())?;
        let extra_len: usize = extras.iter().map(|e| e.kind.size()).sum();
        let record_len = std_len + extra_len;
        if record_len > usize::from(u16::MAX) || extras.len() > 65535 / 192 {
            return Err(Error::parameter(
                "extra dimensions",
                format!(
                    "{} extra dimensions ({extra_len} bytes per point) are too many for LAS",
                    extras.len()
                ),
            ));
        }
        let (scale, offset) = coordinate_grid(cloud)?;
        Ok(Plan {
            minor,
            format,
            std_len,
            record_len,
            scale,
            offset,
            intensity_scale: intensity.map(intensity_scale),
            intensity,
            color,
            time,
            return_number,
            number_of_returns,
            classification,
            nir,
            scan_angle: standard_extra("scan_angle"),
            user_data: standard_extra("user_data"),
            point_source_id: standard_extra("point_source_id"),
            extras,
        })
    }

    fn header(&self, cloud: &Cloud, compress: bool) -> Result<las::Header> {
        let err = |e: las::Error| Error::parameter("las header", format!("{e}"));
        let mut b = las::Builder::from((1, self.minor));
        let mut fmt = las::point::Format::new(self.format).map_err(err)?;
        fmt.extra_bytes = (self.record_len - self.std_len) as u16;
        fmt.is_compressed = compress;
        b.point_format = fmt;
        b.generating_software = "aerie".into();
        b.system_identifier = "aerie".into();
        let t = |k: usize| las::Transform {
            scale: self.scale,
            offset: self.offset[k],
        };
        b.transforms = las::Vector {
            x: t(0),
            y: t(1),
            z: t(2),
        };
        if !self.extras.is_empty() {
            let mut data = Vec::with_capacity(192 * self.extras.len());
            for e in &self.extras {
                let mut d = [0u8; 192];
                d[2] = extra_bytes_code(e.kind);
                let name = e.name.as_bytes();
                d[4..4 + name.len().min(32)].copy_from_slice(&name[..name.len().min(32)]);
                let desc = b"aerie";
                d[160..160 + desc.len()].copy_from_slice(desc);
                data.extend_from_slice(&d);
            }
            b.vlrs.push(las::Vlr {
                user_id: "LASF_Spec".into(),
                record_id: 4,
                description: "extra bytes".into(),
                data,
            });
        }
        if let Some(wkt) = &cloud.meta.crs_wkt {
            let mut data = wkt.as_bytes().to_vec();
            data.push(0);
            let vlr = las::Vlr {
                user_id: "LASF_Projection".into(),
                record_id: 2112,
                description: "OGC WKT".into(),
                data,
            };
            if self.minor == 4 {
                b.has_wkt_crs = true;
            }
            b.vlrs.push(vlr);
        }
        // LAS 1.4 files written here use point formats 6-8, whose CRS must be WKT: GeoTIFF keys only go into 1.2.
        if self.minor == 2 {
            for (id, data) in &cloud.meta.las_geotiff {
                b.vlrs.push(las::Vlr {
                    user_id: "LASF_Projection".into(),
                    record_id: *id,
                    description: "GeoTIFF keys".into(),
                    data: data.clone(),
                });
            }
        }
        b.into_header().map_err(err)
    }

    /// Encode points `range` as raw records.
    fn encode(&self, cloud: &Cloud, range: std::ops::Range<usize>) -> Vec<u8> {
        let rl = self.record_len;
        let mut out = vec![0u8; range.len() * rl];
        let inv = 1.0 / self.scale;
        let shift = [
            cloud.origin[0] - self.offset[0],
            cloud.origin[1] - self.offset[1],
            cloud.origin[2] - self.offset[2],
        ];
        let extended = self.format >= 6;
        let (_, time_at, color_at, nir_at) =
            format_layout(self.format).unwrap_or((20, None, None, None));
        for (r, i) in out.chunks_exact_mut(rl).zip(range) {
            let v = grid_position(cloud.positions()[i], shift, inv);
            for k in 0..3 {
                r[4 * k..4 * k + 4].copy_from_slice(&v[k].to_le_bytes());
            }
            if let (Some(v), Some(s)) = (self.intensity, self.intensity_scale) {
                let x = (v[i] * s).round().clamp(0.0, 65535.0) as u16;
                r[12..14].copy_from_slice(&x.to_le_bytes());
            }
            let rn = self.return_number.map_or(1, |v| v[i]);
            let nr = self.number_of_returns.map_or(1, |v| v[i]);
            let class = self.classification.map_or(0, |v| v[i]);
            let value = |v: &ExtraValues| v.get(i).unwrap_or(0.0);
            let user = self
                .user_data
                .map_or(0, |v| value(v).round().clamp(0.0, 255.0) as u8);
            let psid = self
                .point_source_id
                .map_or(0, |v| value(v).round().clamp(0.0, 65535.0) as u16);
            let angle = self.scan_angle.map_or(0.0, value);
            if extended {
                r[14] = rn.min(15) | (nr.min(15) << 4);
                r[16] = class;
                r[17] = user;
                let a = (angle / 0.006).round().clamp(-30000.0, 30000.0) as i16;
                r[18..20].copy_from_slice(&a.to_le_bytes());
                r[20..22].copy_from_slice(&psid.to_le_bytes());
            } else {
                r[14] = rn.min(7) | (nr.min(7) << 3);
                r[15] = class.min(31);
                r[16] = angle.round().clamp(-90.0, 90.0) as i8 as u8;
                r[17] = user;
                r[18..20].copy_from_slice(&psid.to_le_bytes());
            }
            if let (Some(at), Some(t)) = (time_at, self.time) {
                r[at..at + 8].copy_from_slice(&t[i].to_le_bytes());
            }
            if let (Some(at), Some(c)) = (color_at, self.color) {
                for (k, v) in c[i].iter().enumerate() {
                    r[at + 2 * k..at + 2 * k + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
            if let (Some(at), Some(v)) = (nir_at, self.nir) {
                let x = value(v).round().clamp(0.0, 65535.0) as u16;
                r[at..at + 2].copy_from_slice(&x.to_le_bytes());
            }
            let mut at = self.std_len;
            for e in &self.extras {
                let value = match e.source {
                    ExtraSource::Values(v) => value(v),
                    ExtraSource::Normal(k) => cloud.normals().map_or(0.0, |n| f64::from(n[i][k])),
                    ExtraSource::Gamma => cloud.gamma().map_or(0.0, |g| f64::from(g[i])),
                    ExtraSource::Ring => cloud.ring().map_or(0.0, |g| f64::from(g[i])),
                };
                put_scalar(&mut r[at..at + e.kind.size()], e.kind, value);
                at += e.kind.size();
            }
        }
        out
    }
}

/// Store `v` as `kind` (integers rounded and saturated).
fn put_scalar(out: &mut [u8], kind: ScalarKind, v: f64) {
    let r = v.round();
    match kind {
        ScalarKind::U8 => out.copy_from_slice(&(r as u8).to_le_bytes()),
        ScalarKind::I8 => out.copy_from_slice(&(r as i8).to_le_bytes()),
        ScalarKind::U16 => out.copy_from_slice(&(r as u16).to_le_bytes()),
        ScalarKind::I16 => out.copy_from_slice(&(r as i16).to_le_bytes()),
        ScalarKind::U32 => out.copy_from_slice(&(r as u32).to_le_bytes()),
        ScalarKind::I32 => out.copy_from_slice(&(r as i32).to_le_bytes()),
        ScalarKind::U64 => out.copy_from_slice(&(r as u64).to_le_bytes()),
        ScalarKind::I64 => out.copy_from_slice(&(r as i64).to_le_bytes()),
        ScalarKind::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        ScalarKind::F64 => out.copy_from_slice(&v.to_le_bytes()),
    }
}

/// A point's stored integer coordinates: its position plus `shift` (the cloud's origin minus the file's offset),
/// divided by the scale (`inv` is its inverse) and rounded. The one rounding of every LAS writer here.
pub(crate) fn grid_position(p: [f32; 3], shift: [f64; 3], inv: f64) -> [i32; 3] {
    std::array::from_fn(|k| ((f64::from(p[k]) + shift[k]) * inv).round() as i32)
}

/// Point records of LAS 1.4's point formats 6-8 on a coordinate grid the caller chooses, for a writer that
/// lays its file out itself (COPC, `export::copc`): the same attribute mapping as [`write`].
pub(crate) struct Records<'a>(Plan<'a>);

impl<'a> Records<'a> {
    /// The records of `cloud`: format 6, 7 with RGB, 8 with RGB and NIR; coordinates stored as
    /// `offset + scale * integer`.
    pub(crate) fn new(cloud: &'a Cloud, scale: f64, offset: [f64; 3]) -> Result<Records<'a>> {
        let opts = WriteOptions {
            las_version: Some(LasVersion::V1_4),
            ..WriteOptions::default()
        };
        let mut plan = Plan::new(cloud, &opts)?;
        plan.format = match (plan.color.is_some(), plan.nir.is_some()) {
            (false, _) => 6,
            (true, false) => 7,
            (true, true) => 8,
        };
        let extra_len = plan.record_len - plan.std_len;
        plan.std_len = format_layout(plan.format).map_or(30, |l| l.0);
        plan.record_len = plan.std_len + extra_len;
        plan.scale = scale;
        plan.offset = offset;
        Ok(Records(plan))
    }

    /// The point data record format (6, 7 or 8).
    pub(crate) fn format(&self) -> u8 {
        self.0.format
    }

    /// Bytes per record.
    pub(crate) fn record_len(&self) -> usize {
        self.0.record_len
    }

    /// Bytes per record after the format's own fields (the extra-bytes dimensions).
    pub(crate) fn extra_bytes(&self) -> u16 {
        (self.0.record_len - self.0.std_len) as u16
    }

    /// The VLRs the records need besides the compression's: the extra-bytes description and the CRS (WKT).
    pub(crate) fn vlrs(&self, cloud: &Cloud) -> Result<Vec<las::Vlr>> {
        let header = self.0.header(cloud, false)?;
        Ok(header.vlrs().clone())
    }

    /// Points `range` of the cloud as records.
    pub(crate) fn encode(&self, cloud: &Cloud, range: std::ops::Range<usize>) -> Vec<u8> {
        self.0.encode(cloud, range)
    }
}
