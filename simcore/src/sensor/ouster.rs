//! A sensor model from an Ouster unit's own metadata: the JSON that the Ouster SDK, `ouster-ros` and Ouster
//! Studio save beside every recording (`get_metadata`, `*.json` next to a pcap or bag).
//!
//! Why: a generic preset's beam table is nominal, and a real unit's rings lie up to 0.9 deg off it (the hall's
//! OS0-64, docs/accuracy.md, section 4). Compared beam by beam with that unit's scans, the generic table costs
//! more of the error than the map and the surface model together; the unit's own table, in the frame its points
//! are given in, removes it. The metadata holds exactly that: each beam's elevation and azimuth offset, the
//! beam-origin offset, the lidar mode and the lidar-to-sensor transform.
//!
//! Both layouts are read: the flat one of firmware before 2.x (`beam_altitude_angles` at the top, `lidar_mode`,
//! `prod_line`) and the nested one since (`beam_intrinsics`, `config_params`, `sensor_info`). The physics (range
//! limits, noise, detection) come from the shipped preset of the product line (OS0, OS1, OS2); the points are
//! given in Ouster's sensor frame (`os_sensor`: the lidar origin the transform's height above it), as Ouster's
//! drivers publish them.

use serde_json::Value;

use super::{FiringTiming, Pattern, RingZero, SensorError, SensorModel, Spinning};

/// Parses an Ouster metadata JSON into a validated model named after the unit (product line and serial).
pub(crate) fn from_metadata(text: &str) -> Result<SensorModel, SensorError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        metadata_error(format!(
            "not JSON (line {}, column {}): {e}",
            e.line(),
            e.column()
        ))
    })?;
    let altitudes = numbers(&root, "beam_intrinsics", "beam_altitude_angles")?;
    let azimuths = numbers(&root, "beam_intrinsics", "beam_azimuth_angles")?;
    if azimuths.len() != altitudes.len() {
        return Err(metadata_error(format!(
            "beam_azimuth_angles has {} values and beam_altitude_angles {}: one each per beam",
            azimuths.len(),
            altitudes.len()
        )));
    }
    let beam_origin_mm = find(&root, "beam_intrinsics", "lidar_origin_to_beam_origin_mm")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let mode = find(&root, "config_params", "lidar_mode")
        .and_then(Value::as_str)
        .ok_or_else(|| metadata_error("no lidar_mode (e.g. \"1024x10\")".to_string()))?;
    let (columns, rate_hz) = lidar_mode(mode)?;
    let prod_line = find(&root, "sensor_info", "prod_line")
        .and_then(Value::as_str)
        .ok_or_else(|| metadata_error("no prod_line (e.g. \"OS-0-64-U13\")".to_string()))?;
    let serial = find(&root, "sensor_info", "prod_sn")
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .unwrap_or_default();
    let mut model = SensorModel::preset(family_preset(prod_line)?)?;
    model.name = format!("{prod_line} {serial}").trim().to_string();
    model.description = format!(
        "Ouster {prod_line} (serial {serial}), {mode}, from the unit's metadata: its beam table, in its sensor frame"
    );
    model.source = "the unit's metadata (C); physics of the product line's preset".to_string();
    model.rate_hz = rate_hz;
    model.pattern = Pattern::Spinning(Spinning {
        columns,
        start_azimuth_deg: 180.0,
        clockwise: true,
        beam_origin_offset_mm: beam_origin_mm as f32,
        lidar_origin_z_mm: lidar_to_sensor_z_mm(&root)? as f32,
        elevations_deg: altitudes.iter().map(|&a| a as f32).collect(),
        ring_zero: RingZero::Top,
        // Ouster publishes them clockwise.
        azimuth_offsets_deg: azimuths.iter().map(|&a| -a as f32).collect(),
        firing: FiringTiming::Column {},
    });
    model.validate()?;
    Ok(model)
}

fn metadata_error(message: String) -> SensorError {
    SensorError::Metadata { message }
}

/// `key` at the top level (flat layout) or inside `section` (nested layout).
fn find<'a>(root: &'a Value, section: &str, key: &str) -> Option<&'a Value> {
    root.get(key).or_else(|| root.get(section)?.get(key))
}

/// A non-empty array of finite numbers under `key` (see [`find`]).
fn numbers(root: &Value, section: &str, key: &str) -> Result<Vec<f64>, SensorError> {
    let values = find(root, section, key)
        .and_then(Value::as_array)
        .ok_or_else(|| metadata_error(format!("no {key} (an array, one value per beam)")))?;
    let out: Vec<f64> = values
        .iter()
        .map(Value::as_f64)
        .collect::<Option<_>>()
        .filter(|v: &Vec<f64>| !v.is_empty() && v.iter().all(|x| x.is_finite()))
        .ok_or_else(|| metadata_error(format!("{key} must be a non-empty array of numbers")))?;
    Ok(out)
}

/// Columns and frames per second of a lidar mode such as `1024x10`.
fn lidar_mode(mode: &str) -> Result<(u32, f64), SensorError> {
    let parsed = mode
        .split_once('x')
        .and_then(|(c, r)| Some((c.trim().parse::<u32>().ok()?, r.trim().parse::<f64>().ok()?)));
    match parsed {
        Some((c, r)) if c > 0 && r > 0.0 => Ok((c, r)),
        _ => Err(metadata_error(format!(
            "lidar_mode \"{mode}\" is not COLUMNSxRATE (e.g. \"1024x10\")"
        ))),
    }
}

/// The shipped preset whose physics a product line takes.
fn family_preset(prod_line: &str) -> Result<&'static str, SensorError> {
    let line = prod_line.to_ascii_uppercase();
    if line.starts_with("OS-0-128") {
        Ok("os0_128")
    } else if line.starts_with("OS-0") {
        Ok("os0_64")
    } else if line.starts_with("OS-1-128") {
        Ok("os1_128")
    } else if line.starts_with("OS-1") {
        Ok("os1_64")
    } else if line.starts_with("OS-2") {
        Ok("os2_128")
    } else {
        Err(metadata_error(format!(
            "prod_line \"{prod_line}\" is not an Ouster OS0, OS1 or OS2"
        )))
    }
}

/// Height of the lidar origin above the sensor frame, millimetres: the z of `lidar_to_sensor_transform` (a
/// 4 x 4 row-major matrix in millimetres; Ouster's is a half turn about z and 36.18 mm up on OS0 and OS1). 0
/// when the metadata has none. A transform that turns the axes other than about z is refused: the model's
/// beams are given about a vertical axis.
fn lidar_to_sensor_z_mm(root: &Value) -> Result<f64, SensorError> {
    let Some(t) = find(root, "lidar_intrinsics", "lidar_to_sensor_transform") else {
        return Ok(0.0);
    };
    let m: Vec<f64> = t
        .as_array()
        .and_then(|a| a.iter().map(Value::as_f64).collect())
        .filter(|m: &Vec<f64>| m.len() == 16)
        .ok_or_else(|| {
            metadata_error(
                "lidar_to_sensor_transform must be 16 numbers (4 x 4, row-major)".to_string(),
            )
        })?;
    let upright = m[2].abs() < 1e-6 && m[6].abs() < 1e-6 && (m[10] - 1.0).abs() < 1e-6;
    let centred = m[3].abs() < 1e-3 && m[7].abs() < 1e-3;
    if !(upright && centred && m[11].is_finite()) {
        return Err(metadata_error(format!(
            "lidar_to_sensor_transform {m:?} is not a turn about z and a height: not an Ouster transform"
        )));
    }
    Ok(m[11])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spinning Ouster preset written out as a flat (firmware 1.x) metadata file, or in the nested layout of
    /// firmware 2.x and later.
    fn metadata_of(preset: &str, nested: bool) -> (SensorModel, String) {
        let hall = SensorModel::preset(preset).unwrap();
        let Pattern::Spinning(p) = &hall.pattern else {
            panic!("spinning")
        };
        let alt: Vec<f64> = p.elevations_deg.iter().map(|&e| f64::from(e)).collect();
        let az: Vec<f64> = if p.azimuth_offsets_deg.is_empty() {
            vec![0.0; alt.len()]
        } else {
            p.azimuth_offsets_deg
                .iter()
                .map(|&a| -f64::from(a))
                .collect()
        };
        let transform = [
            -1.0,
            0.0,
            0.0,
            0.0,
            0.0,
            -1.0,
            0.0,
            0.0,
            0.0,
            0.0,
            1.0,
            f64::from(p.lidar_origin_z_mm),
            0.0,
            0.0,
            0.0,
            1.0,
        ];
        let mode = format!("{}x10", p.columns);
        let json = if nested {
            serde_json::json!({
                "sensor_info": {"prod_line": "OS-0-64-U13", "prod_sn": "992109000123"},
                "config_params": {"lidar_mode": mode},
                "beam_intrinsics": {"beam_altitude_angles": alt, "beam_azimuth_angles": az,
                    "lidar_origin_to_beam_origin_mm": p.beam_origin_offset_mm},
                "lidar_intrinsics": {"lidar_to_sensor_transform": transform},
            })
        } else {
            serde_json::json!({
                "prod_line": "OS-0-64-U13", "prod_sn": "992109000123", "lidar_mode": mode,
                "beam_altitude_angles": alt, "beam_azimuth_angles": az,
                "lidar_origin_to_beam_origin_mm": p.beam_origin_offset_mm,
                "lidar_to_sensor_transform": transform,
            })
        };
        (hall, json.to_string())
    }

    #[test]
    fn a_units_metadata_gives_its_own_beams_in_both_layouts() {
        // The hall unit (its own table, in `os_sensor`, no azimuth offsets) and the generic OS0-64 (azimuth
        // offsets, which Ouster gives clockwise, and a beam-origin offset, from the optical centre).
        for (preset, nested) in [
            ("os0_64_hall", false),
            ("os0_64_hall", true),
            ("os0_64", false),
        ] {
            let (hall, text) = metadata_of(preset, nested);
            let model = from_metadata(&text).unwrap();
            assert_eq!(model.name, "OS-0-64-U13 992109000123");
            assert_eq!(
                model.physics,
                SensorModel::preset("os0_64").unwrap().physics
            );
            let (mut a, mut b) = (Vec::new(), Vec::new());
            hall.beams(0, &mut a);
            model.beams(0, &mut b);
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                let d: f32 = (0..3).map(|k| (x.dir[k] - y.dir[k]).powi(2)).sum();
                assert!(d < 1e-10, "{x:?} {y:?}");
                assert_eq!(x.ring, y.ring);
            }
            let (mut oa, mut ob) = (Vec::new(), Vec::new());
            hall.beam_origins_m(&a, &mut oa);
            model.beam_origins_m(&b, &mut ob);
            assert_eq!(oa, ob);
        }
    }

    #[test]
    fn what_is_missing_or_wrong_is_named() {
        let (_, text) = metadata_of("os0_64_hall", false);
        let mut v: Value = serde_json::from_str(&text).unwrap();
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: [(&str, Change); 5] = [
            (
                "beam_altitude_angles",
                Box::new(|v| {
                    v.as_object_mut().unwrap().remove("beam_altitude_angles");
                }),
            ),
            (
                "beam_azimuth_angles has 3",
                Box::new(|v| v["beam_azimuth_angles"] = serde_json::json!([1, 2, 3])),
            ),
            (
                "lidar_mode \"fast\"",
                Box::new(|v| v["lidar_mode"] = "fast".into()),
            ),
            (
                "prod_line \"VLP-16\"",
                Box::new(|v| v["prod_line"] = "VLP-16".into()),
            ),
            (
                "not a turn about z",
                Box::new(|v| v["lidar_to_sensor_transform"][2] = 0.5.into()),
            ),
        ];
        for (expect, change) in cases {
            let mut w = v.clone();
            change(&mut w);
            let e = from_metadata(&w.to_string()).unwrap_err().to_string();
            assert!(e.contains(expect), "{expect}: {e}");
        }
        v = Value::Null;
        assert!(from_metadata(&v.to_string()).is_err());
        assert!(
            from_metadata("{ not json")
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
    }
}
