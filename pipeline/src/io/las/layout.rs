//! Where each field lives in a point record (the point format's standard fields and the extra-bytes
//! dimensions its VLRs describe), and which of them a read decodes.

use std::path::Path;

use super::header::{Header, c_str, format_layout, le_f64};
use crate::cloud::ScalarKind;
use crate::io::ReadOptions;
use crate::io::fields::{Target, target_for};
use crate::{Attribute, Error, Result};

/// Where each field lives in a point record, and which fields are read: a field not read (absent from the
/// point format, or skipped) has its `*_at` at `None`, its flag false or, for extra bytes, no [`ExtraField`],
/// and its array stays empty (never allocated, never written: every decode loop runs over the array).
pub(super) struct Layout {
    pub(super) record_len: usize,
    pub(super) extended: bool,
    pub(super) time_at: Option<usize>,
    pub(super) color_at: Option<usize>,
    pub(super) nir_at: Option<usize>,
    pub(super) extras: Vec<ExtraField>,
    /// Whether these fields, which every point format has, are read.
    pub(super) intensity: bool,
    pub(super) return_number: bool,
    pub(super) number_of_returns: bool,
    pub(super) classification: bool,
    /// Whether scan angle, user data and point source id (held as extra dimensions) are read.
    pub(super) standard_extras: bool,
    /// Names of the attributes and extra dimensions the file holds but that are not read, as
    /// [`crate::io::take_skipped`] names them, for `meta.dropped`.
    pub(super) dropped: Vec<String>,
}

/// The `LASF_Projection` records that hold a CRS as GeoTIFF keys: the key directory, its doubles and its ASCII
/// parameters.
pub(super) const GEOTIFF_RECORDS: [u16; 3] = [crate::crs::GEOTIFF_KEY_DIRECTORY, 34736, 34737];

/// One extra-bytes dimension (or one element of an array dimension).
pub(super) struct ExtraField {
    pub(super) name: String,
    /// How the file stores it.
    pub(super) stored: ScalarKind,
    pub(super) at: usize,
    /// Scale and offset to apply (`None`: the raw value is the value).
    pub(super) transform: Option<(f64, f64)>,
    /// The modelled attribute it holds, if any ([`assign_roles`]).
    pub(super) role: Option<Role>,
}

/// A modelled attribute that LAS has no field for, stored as extra bytes under the names the writer gives it
/// (and PLY and PCD use): `nx ny nz` (or `normal_x ...`), `gamma`, `ring`. The reader takes them back as the
/// attributes they are, so a map exported to LAS reads back with its normals rather than three anonymous
/// dimensions; skipping follows the attribute, not the extras.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Component k of the normal.
    Normal(usize),
    Gamma,
    Ring,
}

impl Role {
    fn attribute(self) -> Attribute {
        match self {
            Role::Normal(_) => Attribute::Normal,
            Role::Gamma => Attribute::Gamma,
            Role::Ring => Attribute::Ring,
        }
    }
}

/// Marks the extra fields that hold a modelled attribute: each name exactly once (all three normal
/// components), a ring only as an unsigned integer of up to 16 bits without scale.
fn assign_roles(extras: &mut [ExtraField]) {
    let only = |extras: &[ExtraField], t: Target| {
        let mut at = (0..extras.len()).filter(|&i| target_for(&extras[i].name) == t);
        match (at.next(), at.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    };
    let normal = [Target::Nx, Target::Ny, Target::Nz].map(|t| only(extras, t));
    if let [Some(x), Some(y), Some(z)] = normal {
        for (k, i) in [x, y, z].into_iter().enumerate() {
            extras[i].role = Some(Role::Normal(k));
        }
    }
    if let Some(i) = only(extras, Target::Gamma) {
        extras[i].role = Some(Role::Gamma);
    }
    if let Some(i) = only(extras, Target::Ring)
        && extras[i].transform.is_none()
        && matches!(extras[i].stored, ScalarKind::U8 | ScalarKind::U16)
    {
        extras[i].role = Some(Role::Ring);
    }
}

const SCALAR_KINDS: [ScalarKind; 10] = [
    ScalarKind::U8,
    ScalarKind::I8,
    ScalarKind::U16,
    ScalarKind::I16,
    ScalarKind::U32,
    ScalarKind::I32,
    ScalarKind::U64,
    ScalarKind::I64,
    ScalarKind::F32,
    ScalarKind::F64,
];

/// The extra-bytes VLR data type code of a scalar kind.
pub(super) fn extra_bytes_code(kind: ScalarKind) -> u8 {
    SCALAR_KINDS
        .iter()
        .position(|&k| k == kind)
        .map_or(10, |i| i as u8 + 1)
}

impl Layout {
    pub(super) fn new(header: &Header, path: &Path) -> Result<Layout> {
        let (std_len, time_at, color_at, nir_at) =
            format_layout(header.format).unwrap_or((20, None, None, None));
        let extra_len = header.record_len - std_len;
        let mut extras = Vec::new();
        // Some writers put each descriptor in its own VLR: take them all, in order.
        let mut at = std_len;
        for vlr in header.vlrs.iter().filter(|v| v.is("LASF_Spec", 4)) {
            for (i, d) in vlr.data.chunks(192).enumerate() {
                let place = format!(
                    "extra bytes vlr, descriptor {i} (byte {})",
                    vlr.at + 192 * i
                );
                if d.len() < 192 {
                    return Err(Error::format(
                        path,
                        place,
                        format!("descriptor is {} bytes, expected 192", d.len()),
                    ));
                }
                let data_type = d[2];
                let options = d[3];
                let name = String::from_utf8_lossy(c_str(&d[4..36])).trim().to_string();
                let (kind, n) = match data_type {
                    0 => {
                        // Undocumented bytes: `options` holds their count; skip them.
                        at += usize::from(options);
                        continue;
                    }
                    1..=30 => {
                        let t = usize::from(data_type - 1);
                        (SCALAR_KINDS[t % 10], t / 10 + 1)
                    }
                    _ => {
                        return Err(Error::format(
                            path,
                            place,
                            format!("data type {data_type} (expected 0 to 30)"),
                        ));
                    }
                };
                for e in 0..n {
                    let scale = if options & 8 != 0 {
                        le_f64(d, 112 + 8 * e).unwrap_or(1.0)
                    } else {
                        1.0
                    };
                    let offset = if options & 16 != 0 {
                        le_f64(d, 136 + 8 * e).unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let transform = (options & 24 != 0 && (scale != 1.0 || offset != 0.0))
                        .then_some((scale, offset))
                        .filter(|(s, o)| s.is_finite() && o.is_finite());
                    let base = if name.is_empty() {
                        format!("extra_{i}")
                    } else {
                        name.clone()
                    };
                    let name = if n > 1 { format!("{base}[{e}]") } else { base };
                    extras.push(ExtraField {
                        name,
                        stored: kind,
                        at,
                        transform,
                        role: None,
                    });
                    at += kind.size();
                }
            }
        }
        if at > header.record_len {
            return Err(Error::format(
                path,
                "extra bytes vlrs",
                format!(
                    "descriptors need {} extra bytes per point but records have {extra_len}",
                    at - std_len
                ),
            ));
        }
        assign_roles(&mut extras);
        Ok(Layout {
            record_len: header.record_len,
            extended: header.format >= 6,
            time_at,
            color_at,
            nir_at,
            extras,
            intensity: true,
            return_number: true,
            number_of_returns: true,
            classification: true,
            standard_extras: true,
            dropped: Vec::new(),
        })
    }

    /// The layout reading only what `opts` does not skip, with the names of what the file holds but is not
    /// read in `dropped`: modelled attributes in [`Cloud`]'s field order, then extra dimensions in the order
    /// (and under the names) a full read gives them.
    ///
    /// [`Cloud`]: crate::Cloud
    pub(super) fn skipping(mut self, opts: &ReadOptions) -> Layout {
        let mut dropped = Vec::new();
        // In `Cloud`'s field order: what a LAS point format holds, and what extra bytes may hold ([`Role`]).
        for &attribute in Attribute::ALL {
            if !opts.skips(attribute) {
                continue;
            }
            let held = match attribute {
                Attribute::Intensity => std::mem::take(&mut self.intensity),
                Attribute::Color => self.color_at.take().is_some(),
                Attribute::Time => self.time_at.take().is_some(),
                Attribute::ReturnNumber => std::mem::take(&mut self.return_number),
                Attribute::NumberOfReturns => std::mem::take(&mut self.number_of_returns),
                Attribute::Classification => std::mem::take(&mut self.classification),
                Attribute::Normal | Attribute::Gamma | Attribute::Ring => {
                    let before = self.extras.len();
                    self.extras
                        .retain(|f| f.role.is_none_or(|r| r.attribute() != attribute));
                    self.extras.len() < before
                }
            };
            if held {
                dropped.push(attribute.name().to_string());
            }
        }
        if opts.skip_extras {
            dropped.extend(self.extra_names());
            self.nir_at = None;
            self.standard_extras = false;
            self.extras.retain(|f| f.role.is_some());
        }
        self.dropped = dropped;
        self
    }

    /// The names of the extra dimensions this layout reads, in the order [`Columns::into_cloud`] adds them and
    /// made unique the same way.
    ///
    /// [`Columns::into_cloud`]: super::decode::Columns::into_cloud
    fn extra_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut add = |name: &str| names.push(unique_name(&names, name));
        if self.nir_at.is_some() {
            add("nir");
        }
        if self.standard_extras {
            for name in ["scan_angle", "user_data", "point_source_id"] {
                add(name);
            }
        }
        for f in self.extras.iter().filter(|f| f.role.is_none()) {
            add(&f.name);
        }
        names
    }
}

/// `name`, or `name_2`, `name_3`, ... when the name is taken.
pub(super) fn unique_name(taken: &[impl AsRef<str>], name: &str) -> String {
    let mut unique = name.to_string();
    let mut k = 2;
    while taken.iter().any(|t| t.as_ref() == unique) {
        unique = format!("{name}_{k}");
        k += 1;
    }
    unique
}
