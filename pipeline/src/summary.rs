//! A serialisable summary of a cloud: what `aerie info` prints and what reports embed.

use serde::Serialize;

use crate::{Cloud, ScanInfo};

/// Range of one attribute (per component for vectors such as colour or normals).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttributeRange {
    /// The attribute's name (`intensity`, `color`, `normal`, ... or an extra dimension's own name).
    pub name: String,
    /// Storage type in the source, for extra dimensions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Smallest finite value, per component.
    pub min: Vec<f64>,
    /// Largest finite value, per component.
    pub max: Vec<f64>,
    /// Values that are not finite (a plane thickness of +inf where no plane was found, a NaN intensity),
    /// counted over every component.
    #[serde(skip_serializing_if = "is_zero")]
    pub non_finite: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a cloud holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CloudSummary {
    /// The file the cloud was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Format and version as read, e.g. "PCD 0.7 binary_compressed".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Number of points.
    pub points: usize,
    /// The cloud's origin (positions are stored relative to it), metres.
    pub origin: [f64; 3],
    /// `[min, max]` in the cloud's frame; absent for an empty cloud.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<[[f64; 3]; 2]>,
    /// Ranges of the attributes present, in a fixed order, extra dimensions last.
    pub attributes: Vec<AttributeRange>,
    /// Coordinate reference system as OGC WKT, when the source declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs_wkt: Option<String>,
    /// The EPSG code of the CRS that a LAS file's GeoTIFF keys name, when they name one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs_epsg: Option<u16>,
    /// Whether the source gave its CRS as GeoTIFF keys (LAS).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub crs_geotiff: bool,
    /// The units other than the metre that the CRS counts coordinates in (feet, mostly): aerie takes
    /// coordinates as metres, so `info` is where a user first sees it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub crs_units: Vec<crate::crs::LinearUnit>,
    /// The scans the cloud was assembled from, with their poses.
    pub scans: Vec<ScanInfo>,
}

fn range_of<const N: usize>(
    name: &str,
    values: impl Iterator<Item = [f64; N]>,
) -> Option<AttributeRange> {
    let mut lo = [f64::INFINITY; N];
    let mut hi = [f64::NEG_INFINITY; N];
    let mut any = false;
    let mut non_finite = 0;
    for v in values {
        any = true;
        for k in 0..N {
            // Gamma is +inf where no plane was found; keep ranges about finite values, and count the others.
            if v[k].is_finite() {
                lo[k] = lo[k].min(v[k]);
                hi[k] = hi[k].max(v[k]);
            } else {
                non_finite += 1;
            }
        }
    }
    any.then(|| AttributeRange {
        name: name.to_string(),
        kind: None,
        min: lo.to_vec(),
        max: hi.to_vec(),
        non_finite,
    })
}

impl CloudSummary {
    /// Summarise `cloud`: one pass over every attribute.
    pub fn of(cloud: &Cloud) -> CloudSummary {
        let mut attributes = Vec::new();
        let mut push = |r: Option<AttributeRange>| attributes.extend(r);
        if let Some(v) = cloud.intensity() {
            push(range_of("intensity", v.iter().map(|&x| [x as f64])));
        }
        if let Some(v) = cloud.color() {
            push(range_of("color", v.iter().map(|c| c.map(f64::from))));
        }
        if let Some(v) = cloud.normals() {
            push(range_of("normal", v.iter().map(|c| c.map(f64::from))));
        }
        if let Some(v) = cloud.gamma() {
            push(range_of("gamma", v.iter().map(|&x| [x as f64])));
        }
        if let Some(v) = cloud.time() {
            push(range_of("time", v.iter().map(|&x| [x])));
        }
        if let Some(v) = cloud.return_number() {
            push(range_of("return_number", v.iter().map(|&x| [x as f64])));
        }
        if let Some(v) = cloud.number_of_returns() {
            push(range_of("number_of_returns", v.iter().map(|&x| [x as f64])));
        }
        if let Some(v) = cloud.classification() {
            push(range_of("classification", v.iter().map(|&x| [x as f64])));
        }
        if let Some(v) = cloud.ring() {
            push(range_of("ring", v.iter().map(|&x| [x as f64])));
        }
        for d in cloud.extras() {
            let values = (0..d.len()).filter_map(|i| d.values.get(i).map(|x| [x]));
            if let Some(mut r) = range_of(&d.name, values) {
                r.kind = Some(format!("{:?}", d.kind()).to_lowercase());
                attributes.push(r);
            }
        }
        CloudSummary {
            source: cloud.meta.source.as_ref().map(|p| p.display().to_string()),
            format: cloud.meta.format.clone(),
            points: cloud.len(),
            origin: cloud.origin,
            bounds: cloud.bounds().map(|(lo, hi)| [lo, hi]),
            attributes,
            crs_wkt: cloud.meta.crs_wkt.clone(),
            crs_epsg: crate::crs::geotiff_epsg(&cloud.meta.las_geotiff),
            crs_geotiff: !cloud.meta.las_geotiff.is_empty(),
            crs_units: crate::crs::linear_units(&cloud.meta),
            scans: cloud.meta.scans.clone(),
        }
    }
}

impl std::fmt::Display for CloudSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(s) = &self.source {
            writeln!(f, "{s}")?;
        }
        if let Some(s) = &self.format {
            writeln!(f, "  format      {s}")?;
        }
        writeln!(f, "  points      {}", self.points)?;
        if let Some([lo, hi]) = self.bounds {
            writeln!(f, "  bounds min  {:.3} {:.3} {:.3}", lo[0], lo[1], lo[2])?;
            writeln!(f, "         max  {:.3} {:.3} {:.3}", hi[0], hi[1], hi[2])?;
            writeln!(
                f,
                "  size        {:.3} x {:.3} x {:.3} m",
                hi[0] - lo[0],
                hi[1] - lo[1],
                hi[2] - lo[2]
            )?;
        }
        self.fmt_attributes(f)?;
        self.fmt_crs(f)?;
        self.fmt_scans(f)
    }
}

impl CloudSummary {
    /// Each attribute with its range (rounded to 1e-4) and the count of values that are not finite.
    fn fmt_attributes(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.attributes.is_empty() {
            return writeln!(f, "  attributes  none (x y z only)");
        }
        writeln!(f, "  attributes")?;
        let fmt_v = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{}", (x * 1e4).round() / 1e4))
                .collect::<Vec<_>>()
        };
        for a in &self.attributes {
            let kind = a
                .kind
                .as_deref()
                .map(|k| format!(" ({k})"))
                .unwrap_or_default();
            let others = match a.non_finite {
                0 => String::new(),
                n => format!(" (and {n} not finite)"),
            };
            writeln!(
                f,
                "    {:<20} {} .. {}{others}",
                format!("{}{kind}", a.name),
                fmt_v(&a.min).join(" "),
                fmt_v(&a.max).join(" ")
            )?;
        }
        Ok(())
    }

    /// The coordinate system: its WKT cut to 100 characters, or its EPSG code from GeoTIFF keys; and the unit
    /// its coordinates count in where that is not the metre.
    fn fmt_crs(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fmt_crs_name(f)?;
        if !self.crs_units.is_empty() {
            writeln!(
                f,
                "  units       {}: aerie takes coordinates as metres, scale them before preparing a map \
                 (docs/user-guide.md, \"Scans in feet\")",
                crate::crs::units_phrase(&self.crs_units)
            )?;
        }
        Ok(())
    }

    fn fmt_crs_name(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.crs_wkt {
            Some(w) => {
                let short: String = w.chars().take(100).collect();
                let ell = if w.chars().count() > 100 { "..." } else { "" };
                writeln!(f, "  crs         {short}{ell}")
            }
            None => match (self.crs_epsg, self.crs_geotiff) {
                (Some(code), _) => writeln!(f, "  crs         EPSG:{code} (GeoTIFF keys)"),
                (None, true) => writeln!(f, "  crs         GeoTIFF keys without an EPSG code"),
                (None, false) => writeln!(f, "  crs         none"),
            },
        }
    }

    /// The scans: each one's name, its points while the cloud has them, and its pose.
    fn fmt_scans(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.scans.is_empty() {
            return Ok(());
        }
        writeln!(f, "  scans       {}", self.scans.len())?;
        for s in &self.scans {
            write!(f, "    {:<24}", s.name)?;
            // A map's points were reordered by preparation: which came from which scan is not kept.
            if !s.points.is_empty() {
                write!(f, " points {}..{}", s.points.start, s.points.end)?;
            }
            if let Some(world_from_scan) = &s.world_from_scan {
                let t = world_from_scan.translation.vector;
                let q = crate::pose::rotation_wxyz(world_from_scan);
                write!(
                    f,
                    "  pose t=({:.3}, {:.3}, {:.3}) q_wxyz=({:.4}, {:.4}, {:.4}, {:.4})",
                    t[0], t[1], t[2], q[0], q[1], q[2], q[3]
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CRS in feet is shown as such, beside the CRS; one in metres adds nothing.
    #[test]
    fn a_crs_in_feet_is_shown() {
        let mut cloud = Cloud::from_positions([0.0; 3], vec![[0.0, 0.0, 0.0]]);
        cloud.meta.crs_wkt = Some("PROJCS[\"x (ft)\",UNIT[\"foot\",0.3048]]".into());
        let text = CloudSummary::of(&cloud).to_string();
        assert!(
            text.contains("\n  units       foot (0.3048 m): aerie takes coordinates as metres"),
            "{text}"
        );
        cloud.meta.crs_wkt = Some("PROJCS[\"x\",UNIT[\"metre\",1]]".into());
        assert!(!CloudSummary::of(&cloud).to_string().contains("units"));
    }

    /// A scan's range of points is shown while the cloud keeps it, and left out once preparation reordered
    /// the points (a map), where "points 0..0" would read as an empty scan.
    #[test]
    fn a_scan_shows_its_points_only_while_it_has_them() {
        let mut cloud = Cloud::from_positions([0.0; 3], vec![[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]);
        let scan = |name: &str, points| ScanInfo {
            name: name.into(),
            points,
            world_from_scan: None,
        };
        cloud.meta.scans = vec![scan("read", 0..2), scan("prepared", 0..0)];
        let text = CloudSummary::of(&cloud).to_string();
        let line = |name: &str| {
            text.lines()
                .find(|l| l.contains(name))
                .unwrap_or_default()
                .trim_end()
        };
        assert_eq!(
            line("read").split_whitespace().collect::<Vec<_>>(),
            ["read", "points", "0..2"]
        );
        assert_eq!(line("prepared").trim(), "prepared");
    }
}
