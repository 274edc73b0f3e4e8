//! LAS/LAZ round trips: real files through LAS and LAZ 1.2 and 1.4, synthetic clouds with every attribute
//! combination, the writer's options and limits, and an empty file.

use super::*;

/// Compare a cloud with what came back from a file: same points within 1 mm, same modelled attributes.
fn assert_round_trip(orig: &Cloud, back: &Cloud, what: &str) {
    assert_eq!(orig.len(), back.len(), "{what}: point count");
    let mut worst = 0.0f64;
    for i in 0..orig.len() {
        let (p, q) = (orig.world(i), back.world(i));
        for k in 0..3 {
            worst = worst.max((p[k] - q[k]).abs());
        }
    }
    assert!(worst <= 1e-3, "{what}: coordinates moved by {worst} m");
    if let Some(v) = orig.intensity() {
        let normalised = v.iter().all(|&x| (0.0..=1.0).contains(&x)) && v.iter().any(|&x| x > 0.0);
        let want: Vec<f32> = v
            .iter()
            .map(|&x| {
                if normalised {
                    (x * 65535.0).round()
                } else {
                    x.round().clamp(0.0, 65535.0)
                }
            })
            .collect();
        assert!(back.intensity() == Some(&want), "{what}: intensity");
    }
    // Every attribute the original has comes back equal. Normals, plane thickness and ring travel as extra
    // bytes (`nx ny nz`, `gamma`, `ring`) and read back as the attributes they were.
    macro_rules! kept {
        ($($attribute:ident),*) => {$(
            assert!(
                orig.$attribute().is_none() || back.$attribute() == orig.$attribute(),
                "{what}: {}",
                stringify!($attribute)
            );
        )*};
    }
    kept!(color, time, normals, gamma, ring);
    for (name, a, b) in [
        ("return_number", orig.return_number(), back.return_number()),
        (
            "number_of_returns",
            orig.number_of_returns(),
            back.number_of_returns(),
        ),
        (
            "classification",
            orig.classification(),
            back.classification(),
        ),
    ] {
        assert!(a.is_none() || a == b, "{what}: {name}");
    }
    let extra_of = |name: &str| -> &ExtraDim {
        back.extra(name)
            .unwrap_or_else(|| panic!("{what}: extra dim {name} missing after the round trip"))
    };
    for name in ["nx", "ny", "nz", "gamma", "ring"] {
        assert!(
            orig.extra(name).is_some() || back.extra(name).is_none(),
            "{what}: {name} left as an extra dimension"
        );
    }
    for d in orig.extras() {
        let got = extra_of(&d.name);
        // Formats 6-10 store the scan angle in 0.006 degree steps.
        let tol = if d.name == "scan_angle" {
            0.003 + 1e-9
        } else {
            0.0
        };
        let worst = d
            .values
            .to_f64()
            .iter()
            .zip(&got.values.to_f64())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst <= tol, "{what}: extra {} differs by {worst}", d.name);
        if d.name != "scan_angle" {
            assert_eq!(got.kind(), d.kind(), "{what}: kind of {}", d.name);
        }
    }
    assert_eq!(back.meta.crs_wkt, orig.meta.crs_wkt, "{what}: crs");
    // GeoTIFF keys travel into LAS 1.2 unchanged; 1.4's point formats 6-8 take WKT only.
    let v12 = back
        .meta
        .format
        .as_deref()
        .is_some_and(|f| f.contains(" 1.2"));
    let geotiff = if v12 {
        orig.meta.las_geotiff.clone()
    } else {
        Vec::new()
    };
    assert_eq!(back.meta.las_geotiff, geotiff, "{what}: GeoTIFF keys");
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn real_files_round_trip_through_las_and_laz_1_2_and_1_4() {
    let dir = tempfile::tempdir().unwrap();
    let mut tried = 0;
    for e in FILES {
        let p = shared(e.file);
        let orig = read(&p);
        if e.file.contains("autzen") {
            // Its CRS is given both ways: WKT and the GeoTIFF key directory with its parameters.
            let ids: Vec<u16> = orig.meta.las_geotiff.iter().map(|g| g.0).collect();
            assert_eq!(ids, [34735, 34736, 34737], "{}", e.file);
        }
        for v in [LasVersion::V1_2, LasVersion::V1_4] {
            for ext in ["las", "laz"] {
                let out = dir.path().join(format!("out.{ext}"));
                let what = format!("{} -> {ext} {v:?}", e.file);
                let r = io::write(&orig, &out, None, &version_opts(Some(v)));
                if v == LasVersion::V1_2 && e.file.starts_with("las14") {
                    // Classes above 31 do not fit LAS 1.2.
                    assert!(matches!(r, Err(Error::Parameter { .. })), "{what}: {r:?}");
                    continue;
                }
                r.unwrap_or_else(|err| panic!("{what}: {err}"));
                let back = read(&out);
                let want = format!(
                    "{} 1.{}",
                    ext.to_uppercase(),
                    if v == LasVersion::V1_2 { 2 } else { 4 }
                );
                assert!(
                    back.meta.format.as_ref().unwrap().starts_with(&want),
                    "{what}"
                );
                assert_round_trip(&orig, &back, &what);
                tried += 1;
            }
        }
        // Default version: 1.4 only where the attributes need it.
        let out = dir.path().join("auto.laz");
        io::write(&orig, &out, None, &WriteOptions::default()).unwrap();
        let back = read(&out);
        let want = if e.file.starts_with("las14") {
            "LAZ 1.4, point format 8"
        } else {
            "LAZ 1.2"
        };
        assert!(
            back.meta.format.as_ref().unwrap().starts_with(want),
            "{}",
            e.file
        );
        assert_round_trip(&orig, &back, &format!("{} default", e.file));
    }
    assert_eq!(tried, 18);
}

fn check_synthetic(mask: u32, n: usize, seed: u64, version: u8, compress: bool) {
    let c = synthetic(mask, n, seed);
    let v = match version {
        0 => None,
        1 => Some(LasVersion::V1_2),
        _ => Some(LasVersion::V1_4),
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(if compress { "s.laz" } else { "s.las" });
    let what = format!("mask {mask:#x} n {n} seed {seed} version {v:?} compress {compress}");
    let max_class = c
        .classification()
        .and_then(|k| k.iter().copied().max())
        .unwrap_or(0);
    let max_ret = c
        .number_of_returns()
        .and_then(|k| k.iter().copied().max())
        .unwrap_or(0);
    let max_rn = c
        .return_number()
        .and_then(|k| k.iter().copied().max())
        .unwrap_or(0);
    let r = io::write(&c, &out, None, &version_opts(v));
    if v == Some(LasVersion::V1_2) && (max_class > 31 || max_rn > 5) {
        assert!(matches!(r, Err(Error::Parameter { .. })), "{what}: {r:?}");
        return;
    }
    r.unwrap_or_else(|e| panic!("{what}: {e}"));
    let back = read(&out);
    let needs_14 = c.extra("nir").is_some() || max_class > 31 || max_ret > 5;
    let minor = match v {
        Some(LasVersion::V1_2) => 2,
        Some(LasVersion::V1_4) => 4,
        None => {
            if needs_14 {
                4
            } else {
                2
            }
        }
    };
    let want = format!("{} 1.{minor}", if compress { "LAZ" } else { "LAS" });
    assert!(
        back.meta.format.as_ref().unwrap().starts_with(&want),
        "{what}: {:?}",
        back.meta.format
    );
    assert_round_trip(&c, &back, &what);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn synthetic_clouds_round_trip(mask in 0u32..(1 << 13), n in 1usize..400, seed in any::<u64>(),
                                   version in 0u8..3, compress in any::<bool>()) {
        check_synthetic(mask, n, seed, version, compress);
    }
}

#[test]
fn every_attribute_combination_family_round_trips() {
    // Deterministic coverage of the extremes the proptest samples: nothing, everything, each bit alone.
    let mut masks = vec![0u32, (1 << 13) - 1, (1 << 13) - 1 - (1 << 7)];
    masks.extend((0..13).map(|b| 1u32 << b));
    for (i, &m) in masks.iter().enumerate() {
        for version in 0..3 {
            check_synthetic(m, 97, i as u64, version, i % 2 == 0);
        }
    }
}

#[test]
fn writer_rejects_an_extent_too_large_for_millimetres() {
    let c = Cloud::from_positions([0.0; 3], vec![[0.0; 3], [3.0e6, 0.0, 0.0]]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.las");
    let r = io::write(&c, &out, None, &WriteOptions::default());
    assert!(matches!(r, Err(Error::Parameter { .. })), "{r:?}");
    assert!(!out.exists());
}

#[test]
fn writer_honours_the_field_list() {
    let c = synthetic((1 << 13) - 1 - (1 << 7), 50, 7);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plain.las");
    let opts = WriteOptions {
        fields: Some(vec![]),
        ..WriteOptions::default()
    };
    io::write(&c, &out, None, &opts).unwrap();
    let back = read(&out);
    assert_eq!(back.meta.format.as_deref(), Some("LAS 1.2, point format 0"));
    assert!(back.color().is_none() && back.time().is_none());
    assert!(back.extra("nx").is_none() && back.extra("range").is_none());
    assert!(back.intensity().unwrap().iter().all(|&v| v == 0.0));
    // Only the positions (and the CRS, which is not a per-point field) were written.
    let mut plain = Cloud::from_positions(c.origin, c.positions().to_vec());
    plain.meta.crs_wkt = c.meta.crs_wkt.clone();
    assert_round_trip(&plain, &back, "plain");
}

#[test]
fn eight_bit_colour_is_widened() {
    let mut c = Cloud::from_positions([10.0, 20.0, 30.0], vec![[0.0; 3], [1.0, 1.0, 1.0]]);
    // Written as given (values <= 255 in 16-bit fields), read back as 8-bit-in-16-bit and widened.
    c.set_color(Some(vec![[255, 0, 10], [1, 2, 3]])).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.las");
    io::write(&c, &out, None, &WriteOptions::default()).unwrap();
    let back = read(&out);
    assert_eq!(back.color(), Some(&[[65535, 0, 2570], [257, 514, 771]][..]));
}

#[test]
fn zero_point_file_round_trips() {
    let c = Cloud::with_origin([1.0, 2.0, 3.0]);
    let dir = tempfile::tempdir().unwrap();
    for ext in ["las", "laz"] {
        let out = dir.path().join(format!("empty.{ext}"));
        io::write(&c, &out, None, &WriteOptions::default()).unwrap();
        let back = read(&out);
        assert_eq!(back.len(), 0);
    }
}
