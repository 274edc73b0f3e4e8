//! What a scan's coordinate reference system says that the rest of the crate needs: a short name for messages,
//! and the unit its coordinates count in.
//!
//! Aerie takes coordinates as metres: the map's resolution, the disks' sizes, sensor ranges and vehicles all are.
//! Many georeferenced LAS files count in feet instead (US state-plane systems, such as the shared
//! `autzen_trim.laz`; or heights in feet over horizontal metres), and prepared as they are, they give a map
//! 3.28 times its true size to the simulator. Nothing in the points themselves shows it, so the CRS is read:
//! its WKT (the `UNIT` or `LENGTHUNIT` of the projected or vertical system, not those of its geographic base,
//! ellipsoid or projection parameters) or, without WKT, the GeoTIFF keys' linear and vertical units
//! (keys 3076 and 4099). A CRS named only by an EPSG code tells no unit without a database, which this crate
//! does not carry.

use crate::cloud::Metadata;

/// A length unit other than the metre that a CRS counts coordinates in.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LinearUnit {
    /// Its name, as the CRS gives it ("foot", "US survey foot").
    pub name: String,
    /// Its length in metres, when the CRS says.
    pub metres: Option<f64>,
}

impl std::fmt::Display for LinearUnit {
    /// "foot (0.3048 m)", or the name alone when the length is unknown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.metres {
            Some(m) => write!(f, "{} ({m} m)", self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

/// Units as one phrase: "foot (0.3048 m)", two of them joined by "and" (heights and grid apart).
pub fn units_phrase(units: &[LinearUnit]) -> String {
    let names: Vec<String> = units.iter().map(ToString::to_string).collect();
    names.join(" and ")
}

/// A short name of a cloud's CRS: the name in its WKT, or the EPSG code its GeoTIFF keys give.
pub fn name(meta: &Metadata) -> Option<String> {
    if let Some(wkt) = &meta.crs_wkt {
        let name = wkt.split('"').nth(1).filter(|n| !n.is_empty());
        return Some(name.map_or_else(|| wkt.chars().take(60).collect(), str::to_string));
    }
    match geotiff_epsg(&meta.las_geotiff) {
        Some(code) => Some(format!("EPSG:{code}")),
        None => (!meta.las_geotiff.is_empty()).then(|| "GeoTIFF keys".to_string()),
    }
}

/// Whether the cloud declares a CRS at all.
pub fn declared(meta: &Metadata) -> bool {
    meta.crs_wkt.is_some() || !meta.las_geotiff.is_empty()
}

/// The units other than the metre that the cloud's CRS counts its coordinates in (horizontal, vertical or
/// both; empty for metres or when the CRS does not say).
pub fn linear_units(meta: &Metadata) -> Vec<LinearUnit> {
    match &meta.crs_wkt {
        Some(wkt) => wkt_units(wkt),
        None => geotiff_units(&meta.las_geotiff),
    }
}

/// A warning when the cloud's CRS counts in another unit than the metre: what the simulator would see, and
/// how to scale the input.
pub fn units_warning(meta: &Metadata) -> Option<String> {
    let units = linear_units(meta);
    let first = units.first()?;
    let (size, factor) = first.metres.map_or_else(
        || (String::new(), "FACTOR".to_string()),
        |m| {
            (
                format!(" {:.2} times its true size", 1.0 / m),
                m.to_string(),
            )
        },
    );
    Some(format!(
        "the coordinate system {} counts in {}, but aerie takes coordinates as metres (the resolution, sensor \
         ranges, vehicles): the simulator would see this map{size}. Scale the input to metres (`aerie prepare \
         --scale {factor}`, or a recipe input's transform: docs/user-guide.md, \"Scans in feet\")",
        name(meta).unwrap_or_default(),
        units_phrase(&units)
    ))
}

/// Keywords under which a unit is not the coordinates' unit: the geographic base's angles, the ellipsoid's
/// axes, the projection's parameters.
const NOT_COORDINATES: [&str; 9] = [
    "GEOGCS",
    "GEOGCRS",
    "BASEGEOGCRS",
    "GEODCRS",
    "ELLIPSOID",
    "SPHEROID",
    "CONVERSION",
    "METHOD",
    "PARAMETER",
];

/// The non-metre units of a WKT (1 or 2) CRS's coordinates, each once.
fn wkt_units(wkt: &str) -> Vec<LinearUnit> {
    /// An open bracket: its keyword, and, for a unit that counts, its name and factor so far.
    struct Node {
        keyword: String,
        unit: Option<(Option<String>, Option<f64>)>,
    }
    let mut stack: Vec<Node> = Vec::new();
    let mut units: Vec<LinearUnit> = Vec::new();
    let mut word = String::new();
    let mut chars = wkt.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let s: String = chars.by_ref().take_while(|&q| q != '"').collect();
                if let Some((name @ None, _)) = stack.last_mut().and_then(|n| n.unit.as_mut()) {
                    *name = Some(s);
                }
            }
            '[' | '(' => {
                let keyword = std::mem::take(&mut word).trim().to_uppercase();
                let counts = (keyword == "UNIT" || keyword == "LENGTHUNIT")
                    && !stack
                        .iter()
                        .any(|n| NOT_COORDINATES.contains(&n.keyword.as_str()));
                stack.push(Node {
                    keyword,
                    unit: counts.then_some((None, None)),
                });
            }
            ',' | ']' | ')' => {
                let token = std::mem::take(&mut word);
                if let Some((Some(_), factor @ None)) =
                    stack.last_mut().and_then(|n| n.unit.as_mut())
                {
                    *factor = token.trim().parse().ok();
                }
                if c != ','
                    && let Some(Node {
                        unit: Some((Some(name), factor)),
                        ..
                    }) = stack.pop()
                    && factor != Some(1.0)
                    && !units.iter().any(|u| u.name == name)
                {
                    units.push(LinearUnit {
                        name,
                        metres: factor,
                    });
                }
            }
            _ => word.push(c),
        }
    }
    units
}

/// The `LASF_Projection` record of the GeoTIFF key directory.
pub(crate) const GEOTIFF_KEY_DIRECTORY: u16 = 34735;

/// The entries `[key, location, count, value]` of a GeoTIFF key directory (empty when there is none or it is
/// short); a value is inline where the location is 0.
fn geotiff_entries(keys: &[(u16, Vec<u8>)]) -> Vec<[u16; 4]> {
    let Some((_, dir)) = keys.iter().find(|(id, _)| *id == GEOTIFF_KEY_DIRECTORY) else {
        return Vec::new();
    };
    let words: Vec<u16> = dir
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    let n = words.get(3).map_or(0, |&n| usize::from(n));
    let entries = words.get(4..).unwrap_or(&[]).chunks_exact(4).take(n);
    entries.map(|e| [e[0], e[1], e[2], e[3]]).collect()
}

/// The EPSG code that GeoTIFF keys ([`crate::cloud::Metadata::las_geotiff`]) give the CRS: the projected CRS
/// (key 3072) when there is one, else the geographic one (key 2048); none when that key is user-defined (32767)
/// or not stored inline (a projected CRS built from parameters is not its geographic base).
pub fn geotiff_epsg(keys: &[(u16, Vec<u8>)]) -> Option<u16> {
    let entries = geotiff_entries(keys);
    let code = |key: u16| {
        let e = entries.iter().find(|e| e[0] == key)?;
        Some((e[1] == 0 && e[3] != 0 && e[3] != 32767).then_some(e[3]))
    };
    code(3072).or_else(|| code(2048)).flatten()
}

/// The non-metre units that GeoTIFF keys give: ProjLinearUnitsGeoKey (3076) and VerticalUnitsGeoKey (4099),
/// stored inline as EPSG unit codes.
fn geotiff_units(keys: &[(u16, Vec<u8>)]) -> Vec<LinearUnit> {
    let entries = geotiff_entries(keys);
    let mut units: Vec<LinearUnit> = Vec::new();
    for e in entries
        .iter()
        .filter(|e| (e[0] == 3076 || e[0] == 4099) && e[1] == 0)
    {
        let unit = match e[3] {
            9001 | 32767 => continue,
            9002 => LinearUnit {
                name: "foot".into(),
                metres: Some(0.3048),
            },
            9003 => LinearUnit {
                name: "US survey foot".into(),
                metres: Some(1200.0 / 3937.0),
            },
            code => LinearUnit {
                name: format!("the unit EPSG:{code}"),
                metres: None,
            },
        };
        if !units.contains(&unit) {
            units.push(unit);
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTZEN: &str = "PROJCS[\"NAD_1983_HARN_Lambert_Conformal_Conic\",GEOGCS[\"GCS_North_American_1983_HARN\",\
        DATUM[\"NAD83_High_Accuracy_Regional_Network\",SPHEROID[\"GRS_1980\",6378137,298.257222101,AUTHORITY[\"EPSG\",\
        \"7019\"]],AUTHORITY[\"EPSG\",\"6152\"]],PRIMEM[\"Greenwich\",0],UNIT[\"degree\",0.0174532925199433]],\
        PROJECTION[\"Lambert_Conformal_Conic_2SP\"],PARAMETER[\"standard_parallel_1\",43],PARAMETER[\"false_easting\",\
        1312335.958005249],UNIT[\"foot\",0.3048,AUTHORITY[\"EPSG\",\"9002\"]]]";

    fn meta(wkt: Option<&str>, geotiff: Vec<(u16, Vec<u8>)>) -> Metadata {
        Metadata {
            crs_wkt: wkt.map(str::to_string),
            las_geotiff: geotiff,
            ..Metadata::default()
        }
    }

    fn foot(metres: f64) -> LinearUnit {
        LinearUnit {
            name: "foot".into(),
            metres: Some(metres),
        }
    }

    #[test]
    fn wkt1_feet_and_metres() {
        assert_eq!(wkt_units(AUTZEN), vec![foot(0.3048)]);
        let utm = "PROJCS[\"WGS 84 / UTM zone 32N\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\",\
            6378137,298.257223563]],UNIT[\"degree\",0.0174532925199433]],PROJECTION[\"Transverse_Mercator\"],\
            UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]]]";
        assert_eq!(wkt_units(utm), vec![]);
        // Metres across, feet up: the heights are what is scaled wrong.
        let compound = format!(
            "COMPD_CS[\"UTM + NAVD88 height (ftUS)\",{},VERT_CS[\"NAVD88\",VERT_DATUM[\"North American \
             Vertical Datum 1988\",2005],UNIT[\"US survey foot\",0.304800609601219]]]",
            &utm
        );
        assert_eq!(
            wkt_units(&compound),
            vec![LinearUnit {
                name: "US survey foot".into(),
                metres: Some(0.304800609601219)
            }]
        );
    }

    #[test]
    fn wkt2_axes_not_parameters() {
        let wkt = "PROJCRS[\"NAD83 / Oregon GIC Lambert (ft)\",BASEGEOGCRS[\"NAD83\",DATUM[\"North American \
            Datum 1983\",ELLIPSOID[\"GRS 1980\",6378137,298.257222101,LENGTHUNIT[\"metre\",1]]],\
            ANGLEUNIT[\"degree\",0.0174532925199433]],CONVERSION[\"Oregon GIC Lambert (ft)\",METHOD[\"Lambert \
            Conic Conformal (2SP)\"],PARAMETER[\"False easting\",400000,LENGTHUNIT[\"metre\",0.5]]],\
            CS[Cartesian,2],AXIS[\"easting (X)\",east],AXIS[\"northing (Y)\",north],LENGTHUNIT[\"foot\",0.3048]]";
        assert_eq!(wkt_units(wkt), vec![foot(0.3048)]);
        assert_eq!(wkt_units("garbage [ \" unterminated"), vec![]);
        assert_eq!(wkt_units(""), vec![]);
    }

    /// A GeoTIFF key directory (version 1.1.0) with these `[key, location, count, value]` entries.
    fn directory(entries: &[[u16; 4]]) -> Vec<(u16, Vec<u8>)> {
        let mut words = vec![1, 1, 0, entries.len() as u16];
        words.extend(entries.iter().flatten());
        vec![(34735, words.iter().flat_map(|w| w.to_le_bytes()).collect())]
    }

    /// The EPSG code comes from the projected CRS key, else the geographic one; a user-defined or referenced
    /// value, a short directory or none gives none.
    #[test]
    fn geotiff_keys_give_the_epsg_code() {
        let model = [1024, 0, 1, 1];
        assert_eq!(
            geotiff_epsg(&directory(&[model, [2048, 0, 1, 4269], [3072, 0, 1, 2992]])),
            Some(2992)
        );
        assert_eq!(
            geotiff_epsg(&directory(&[
                model,
                [2048, 0, 1, 4326],
                [3072, 0, 1, 32767]
            ])),
            None
        );
        assert_eq!(geotiff_epsg(&directory(&[[2048, 0, 1, 4326]])), Some(4326));
        assert_eq!(geotiff_epsg(&directory(&[[3072, 34737, 1, 0]])), None);
        assert_eq!(geotiff_epsg(&[(34735, vec![1, 0, 1])]), None);
        assert_eq!(geotiff_epsg(&[]), None);
    }

    #[test]
    fn geotiff_linear_and_vertical_units() {
        let feet = directory(&[[3072, 0, 1, 2992], [3076, 0, 1, 9002]]);
        assert_eq!(geotiff_units(&feet), vec![foot(0.3048)]);
        let us = directory(&[[3076, 0, 1, 9001], [4099, 0, 1, 9003]]);
        assert_eq!(geotiff_units(&us)[0].name, "US survey foot");
        assert_eq!(geotiff_units(&directory(&[[3076, 0, 1, 9001]])), vec![]);
        assert_eq!(geotiff_units(&directory(&[[3072, 0, 1, 32632]])), vec![]);
        assert_eq!(geotiff_units(&[(34735, vec![1, 0])]), vec![]);
        // The WKT, where there is one, is what counts.
        assert!(
            linear_units(&meta(Some("PROJCS[\"x\",UNIT[\"metre\",1]]"), feet.clone())).is_empty()
        );
        assert_eq!(linear_units(&meta(None, feet)), vec![foot(0.3048)]);
    }

    #[test]
    fn the_warning_names_the_system_the_unit_and_the_scale() {
        let w = units_warning(&meta(Some(AUTZEN), vec![])).unwrap();
        assert!(
            w.starts_with("the coordinate system NAD_1983_HARN_Lambert_Conformal_Conic counts in foot (0.3048 m)"),
            "{w}"
        );
        assert!(w.contains("3.28 times its true size"), "{w}");
        assert!(w.contains("aerie prepare --scale 0.3048`"), "{w}");
        assert_eq!(units_warning(&meta(None, vec![])), None);
        // Grid and heights in two feet: both named.
        let two = directory(&[[3076, 0, 1, 9002], [4099, 0, 1, 9003]]);
        assert_eq!(
            units_phrase(&linear_units(&meta(None, two))),
            format!("foot (0.3048 m) and US survey foot ({} m)", 1200.0 / 3937.0)
        );
    }
}
