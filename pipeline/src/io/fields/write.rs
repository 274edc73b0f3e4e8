//! The writing side of the table-like formats: a cloud's attributes listed as output fields, and encoded as
//! binary records or text.

use std::fmt::Write as _;

use rayon::prelude::*;

use super::{CHUNK, LARGE_COORDINATE};
use crate::Cloud;
use crate::cloud::ScalarKind;
use crate::io::WriteOptions;

/// Where an output field's values come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Src {
    X,
    Y,
    Z,
    Intensity,
    /// Colour channel 0..2 as 8 bits (the high byte).
    Colour8(usize),
    /// All three channels packed as 0x00RRGGBB (PCL's `rgb`).
    RgbPacked,
    Normal(usize),
    Gamma,
    Time,
    Ring,
    Class,
    ReturnNumber,
    NumberOfReturns,
    Extra(usize),
}

/// One field to write.
#[derive(Clone, Debug)]
pub(crate) struct OutField {
    pub name: String,
    pub kind: ScalarKind,
    pub src: Src,
}

/// How a format names and packs the modelled attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Style {
    Ply,
    Pcd,
    Text,
}

/// Whether `cloud`'s world coordinates need f64 to keep millimetres.
pub(crate) fn needs_f64(cloud: &Cloud) -> bool {
    cloud.bounds().is_some_and(|(lo, hi)| {
        lo.iter()
            .chain(hi.iter())
            .any(|v| v.abs() >= LARGE_COORDINATE)
    })
}

/// The fields to write for `cloud` in `style`, honouring `opts.wants`.
pub(crate) fn out_fields(cloud: &Cloud, opts: &WriteOptions, style: Style) -> Vec<OutField> {
    let wants = |names: &[&str]| names.iter().any(|n| opts.wants(n));
    let f = |name: &str, kind: ScalarKind, src: Src| OutField {
        name: name.to_string(),
        kind,
        src,
    };
    let pos_kind = if needs_f64(cloud) {
        ScalarKind::F64
    } else {
        ScalarKind::F32
    };
    let mut out = vec![
        f("x", pos_kind, Src::X),
        f("y", pos_kind, Src::Y),
        f("z", pos_kind, Src::Z),
    ];
    if cloud.intensity().is_some() && wants(&["intensity"]) {
        out.push(f("intensity", ScalarKind::F32, Src::Intensity));
    }
    if cloud.color().is_some() && wants(&["rgb", "color", "colour", "red", "r"]) {
        match style {
            Style::Pcd => out.push(f("rgb", ScalarKind::U32, Src::RgbPacked)),
            Style::Ply => {
                for (k, n) in ["red", "green", "blue"].into_iter().enumerate() {
                    out.push(f(n, ScalarKind::U8, Src::Colour8(k)));
                }
            }
            Style::Text => {
                for (k, n) in ["r", "g", "b"].into_iter().enumerate() {
                    out.push(f(n, ScalarKind::U8, Src::Colour8(k)));
                }
            }
        }
    }
    if cloud.normals().is_some() && wants(&["normals", "normal", "nx", "normal_x"]) {
        let names = if style == Style::Pcd {
            ["normal_x", "normal_y", "normal_z"]
        } else {
            ["nx", "ny", "nz"]
        };
        for (k, n) in names.into_iter().enumerate() {
            out.push(f(n, ScalarKind::F32, Src::Normal(k)));
        }
    }
    if cloud.gamma().is_some() && wants(&["gamma"]) {
        out.push(f("gamma", ScalarKind::F32, Src::Gamma));
    }
    if let Some(time) = cloud.time()
        && wants(&["time"])
    {
        // The narrowest float that holds every value exactly: a simulated frame's times since its start are f32
        // (the `float time` of the PCL point types LiDAR odometry reads), GPS times need f64.
        let exact_f32 = time.iter().all(|&t| f64::from(t as f32) == t);
        let kind = if exact_f32 {
            ScalarKind::F32
        } else {
            ScalarKind::F64
        };
        out.push(f("time", kind, Src::Time));
    }
    if cloud.ring().is_some() && wants(&["ring"]) {
        out.push(f("ring", ScalarKind::U16, Src::Ring));
    }
    if cloud.classification().is_some() && wants(&["classification", "class"]) {
        out.push(f("classification", ScalarKind::U8, Src::Class));
    }
    if cloud.return_number().is_some() && wants(&["return_number"]) {
        out.push(f("return_number", ScalarKind::U8, Src::ReturnNumber));
    }
    if cloud.number_of_returns().is_some() && wants(&["number_of_returns"]) {
        out.push(f("number_of_returns", ScalarKind::U8, Src::NumberOfReturns));
    }
    for (i, d) in cloud.extras().iter().enumerate() {
        if !wants(&[d.name.as_str()]) {
            continue;
        }
        // Names become header tokens: keep them one word.
        let name: String = d
            .name
            .chars()
            .map(|c| if c.is_ascii_graphic() { c } else { '_' })
            .collect();
        let name = if name.is_empty() {
            format!("extra_{i}")
        } else {
            name
        };
        out.push(OutField {
            name,
            kind: d.kind(),
            src: Src::Extra(i),
        });
    }
    if style == Style::Ply {
        // CloudCompare's convention: it loads `scalar_*` properties as scalar fields without asking (and writes
        // its own that way); readers, ours included, strip the prefix.
        for o in &mut out {
            if matches!(
                o.src,
                Src::X | Src::Y | Src::Z | Src::Normal(_) | Src::Colour8(_)
            ) {
                continue;
            }
            o.name = format!("scalar_{}", o.name);
        }
    }
    out
}

/// Value of `src` for point `i` (0 where the cloud lacks the attribute).
#[inline]
pub(crate) fn value(cloud: &Cloud, src: Src, i: usize) -> f64 {
    fn at<T: Copy>(v: Option<&[T]>, i: usize) -> Option<T> {
        v.and_then(|v| v.get(i)).copied()
    }
    let pos = |k: usize| {
        cloud
            .positions()
            .get(i)
            .map_or(0.0, |p| cloud.origin[k] + p[k] as f64)
    };
    match src {
        Src::X => pos(0),
        Src::Y => pos(1),
        Src::Z => pos(2),
        Src::Intensity => at(cloud.intensity(), i).map_or(0.0, f64::from),
        Src::Colour8(k) => at(cloud.color(), i).map_or(0.0, |c| (c[k.min(2)] >> 8) as f64),
        Src::RgbPacked => at(cloud.color(), i).map_or(0.0, |c| {
            let [r, g, b] = c.map(|v| (v >> 8) as u32);
            ((r << 16) | (g << 8) | b) as f64
        }),
        Src::Normal(k) => at(cloud.normals(), i).map_or(0.0, |n| n[k.min(2)] as f64),
        Src::Gamma => at(cloud.gamma(), i).map_or(0.0, f64::from),
        Src::Time => at(cloud.time(), i).unwrap_or(0.0),
        Src::Ring => at(cloud.ring(), i).map_or(0.0, f64::from),
        Src::Class => at(cloud.classification(), i).map_or(0.0, f64::from),
        Src::ReturnNumber => at(cloud.return_number(), i).map_or(0.0, f64::from),
        Src::NumberOfReturns => at(cloud.number_of_returns(), i).map_or(0.0, f64::from),
        Src::Extra(e) => cloud
            .extras()
            .get(e)
            .and_then(|d| d.values.get(i))
            .unwrap_or(0.0),
    }
}

/// Store `v` as `kind` into `out` (exactly `kind.size()` bytes). Float-to-integer casts saturate.
#[inline]
fn put(out: &mut [u8], kind: ScalarKind, big_endian: bool, v: f64) {
    macro_rules! w {
        ($x:expr) => {{
            let x = $x;
            let b = if big_endian {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            };
            out.copy_from_slice(&b);
        }};
    }
    match kind {
        ScalarKind::U8 => w!(v as u8),
        ScalarKind::I8 => w!(v as i8),
        ScalarKind::U16 => w!(v as u16),
        ScalarKind::I16 => w!(v as i16),
        ScalarKind::U32 => w!(v as u32),
        ScalarKind::I32 => w!(v as i32),
        ScalarKind::U64 => w!(v as u64),
        ScalarKind::I64 => w!(v as i64),
        ScalarKind::F32 => w!(v as f32),
        ScalarKind::F64 => w!(v),
    }
}

/// Encode every point as a fixed-size record of `fields`, in parallel over chunks of points.
pub(crate) fn encode_rows(cloud: &Cloud, fields: &[OutField], big_endian: bool) -> Vec<u8> {
    let rec: usize = fields.iter().map(|f| f.kind.size()).sum();
    let n = cloud.len();
    let mut buf = vec![0u8; n * rec];
    if rec == 0 {
        return buf;
    }
    buf.par_chunks_mut(CHUNK * rec)
        .enumerate()
        .for_each(|(ci, chunk)| {
            for (j, r) in chunk.chunks_exact_mut(rec).enumerate() {
                let i = ci * CHUNK + j;
                let mut o = 0;
                for f in fields {
                    let s = f.kind.size();
                    if let Some(dst) = r.get_mut(o..o + s) {
                        put(dst, f.kind, big_endian, value(cloud, f.src, i));
                    }
                    o += s;
                }
            }
        });
    buf
}

/// Append the text of one value.
#[inline]
pub(crate) fn write_value(s: &mut String, f: &OutField, v: f64) {
    let _ = match f.kind {
        ScalarKind::F32 => write!(s, "{}", v as f32),
        // f64 coordinates are large: 4 decimals keep a tenth of a millimetre without 17-digit noise.
        ScalarKind::F64 if matches!(f.src, Src::X | Src::Y | Src::Z) => write!(s, "{v:.4}"),
        ScalarKind::F64 => write!(s, "{v}"),
        ScalarKind::U64 | ScalarKind::U32 | ScalarKind::U16 | ScalarKind::U8 => {
            write!(s, "{}", v as u64)
        }
        _ => write!(s, "{}", v as i64),
    };
}

/// Format every point as one text line, values separated by `sep`, in parallel; `cell` formats a value.
pub(crate) fn encode_text<C>(cloud: &Cloud, fields: &[OutField], sep: char, cell: C) -> Vec<u8>
where
    C: Fn(&mut String, &OutField, f64) + Sync,
{
    let n = cloud.len();
    let parts: Vec<String> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|ci| {
            let mut s = String::with_capacity(CHUNK * fields.len() * 10);
            for i in ci * CHUNK..((ci + 1) * CHUNK).min(n) {
                for (k, f) in fields.iter().enumerate() {
                    if k > 0 {
                        s.push(sep);
                    }
                    cell(&mut s, f, value(cloud, f.src, i));
                }
                s.push('\n');
            }
            s
        })
        .collect();
    let mut out = Vec::with_capacity(parts.iter().map(String::len).sum());
    for p in parts {
        out.extend_from_slice(p.as_bytes());
    }
    out
}
