//! Tests of the E57 reader and writer.

use std::io::Cursor;
use std::path::Path;

use e57::{E57Reader, RecordDataType, RecordValue};

use super::read::record_bits;
use super::sink::{ScanData, Sink, raw_value};
use super::write::{Axis, COORD_SCALE, guid};
use super::*;

/// The crate's own (slower) raw iterator feeding the same sink: the reference for our section decoder.
fn decode_with_crate(data: &[u8], path: &Path) -> Vec<ScanData> {
    let mut reader = E57Reader::new(Cursor::new(data)).unwrap();
    let mut out = Vec::new();
    for (si, pc) in reader.pointclouds().iter().enumerate() {
        let mut sink = Sink::new(pc, si, path).unwrap();
        let proto = pc.prototype.clone();
        for (j, values) in reader.pointcloud_raw(pc).unwrap().enumerate() {
            let values = values.unwrap();
            sink.push(|i| raw_value(&values[i], &proto[i].data_type), j as u64)
                .unwrap();
        }
        out.push(sink.out);
    }
    out
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn section_decoder_matches_the_crate() {
    for f in [
        "e57/pumpA_tls.e57",
        "e57/tinyCartesianFloatRgb.e57",
        "e57/bunnyDouble.e57",
    ] {
        // The shared data folder, as the build script found it (tests/support/build_cfg.rs).
        let path = std::path::Path::new(env!("AERIE_SHARED_DATA_DIR")).join(f);
        let data = std::fs::read(&path).unwrap();
        let want = decode_with_crate(&data, &path);
        let (got, _) = decode(&data, &path).unwrap();
        assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            assert!(!w.world.is_empty());
            assert_eq!(w.world, g.world, "{f}");
            assert_eq!(w.intensity, g.intensity, "{f}");
            assert_eq!(w.color, g.color, "{f}");
            assert_eq!(w.time, g.time, "{f}");
            assert_eq!(w.row, g.row, "{f}");
            assert_eq!(w.column, g.column, "{f}");
            assert_eq!(w.return_number, g.return_number, "{f}");
        }
    }
}

#[test]
fn record_bits_match_the_standard() {
    let int = |min, max| RecordDataType::Integer { min, max };
    assert_eq!(record_bits(&int(0, 0)), 0);
    assert_eq!(record_bits(&int(0, 1)), 1);
    assert_eq!(record_bits(&int(0, 255)), 8);
    assert_eq!(record_bits(&int(0, 256)), 9);
    assert_eq!(record_bits(&int(i64::MIN, i64::MAX)), 64);
}

#[test]
fn axis_scaled_keeps_tenth_millimetres() {
    let a = Axis::for_range(-3.25, 12.5);
    let Axis::Scaled { offset, max } = a else {
        panic!("expected a scaled axis");
    };
    assert_eq!(offset, -4.0);
    let RecordValue::ScaledInteger(q) = a.value(1.23456) else {
        panic!("expected a scaled value");
    };
    assert!((q as f64 * COORD_SCALE + offset - 1.23456).abs() <= 0.5e-4 + 1e-12);
    assert!(q <= max);
    assert!(matches!(Axis::for_range(0.0, 1e6), Axis::Double));
}

#[test]
fn guid_is_deterministic_and_salted() {
    let c = Cloud::from_positions([0.0; 3], vec![[1.0, 2.0, 3.0]]);
    assert_eq!(guid(&c, 0), guid(&c, 0));
    assert_ne!(guid(&c, 0), guid(&c, 1));
    assert_eq!(guid(&c, 0).len(), 38);
}
