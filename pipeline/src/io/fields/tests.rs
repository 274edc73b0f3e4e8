//! Tests of the table-like formats' shared machinery: decoding, assembling and encoding fields.

use super::*;

#[test]
fn decodes_strided_fields_in_both_endians() {
    let mut data = Vec::new();
    for i in 0..40_000u32 {
        data.extend_from_slice(&(i as f32).to_le_bytes());
        data.extend_from_slice(&(i as u16).to_be_bytes());
    }
    let a = decode_column(&data, 40_000, 0, 6, 0, ScalarKind::F32, false, false).unwrap();
    let b = decode_column(&data, 40_000, 0, 6, 4, ScalarKind::U16, true, false).unwrap();
    assert_eq!(a[39_999], 39_999.0);
    assert_eq!(b[1234], 1234.0);
    assert!(decode_column(&data, 40_001, 0, 6, 0, ScalarKind::F32, false, false).is_none());
}

#[test]
fn parallel_rows_report_the_global_line() {
    let mut text = String::new();
    for i in 0..100_000 {
        text.push_str(&format!("{i} {i}\n"));
    }
    text.push_str("1 oops\n");
    let parse = |line: &[u8], cols: &mut [Vec<f64>]| {
        for (k, t) in line.split(|b| *b == b' ').enumerate() {
            let v = parse_num(t).ok_or_else(|| format!("column {}", k + 1))?;
            cols[k].push(v);
        }
        Ok(())
    };
    let err = parse_rows(text.as_bytes(), 2, parse).unwrap_err();
    assert_eq!(err.0, 100_000);
    let ok = parse_rows(&text.as_bytes()[..text.len() - 7], 2, parse).unwrap();
    assert_eq!(ok[1].len(), 100_000);
    assert_eq!(ok[1][99_999], 99_999.0);
}

#[test]
fn names_map_to_attributes() {
    assert_eq!(target_for("scalar_Intensity"), Target::Intensity);
    assert_eq!(target_for("scalar_Classification"), Target::Class);
    assert_eq!(target_for("gps_time"), Target::Time);
    assert_eq!(target_for("curvature"), Target::Extra);
}
