//! Reads that skip columns: every skip option set gives exactly the full read with those columns taken out, on
//! synthetic and real files.

use super::*;

/// The skip options the tests below try: what `prepare` reads with, everything a LAS file can go without, and
/// single fields (return number and number of returns share a byte and, when both are read, a loop), and the
/// attributes that travel as extra bytes.
fn skip_option_sets() -> Vec<(&'static str, ReadOptions)> {
    let skip = |skip: &[Attribute], skip_extras: bool| ReadOptions {
        skip: skip.to_vec(),
        skip_extras,
        ..ReadOptions::default()
    };
    vec![
        ("map", map_read_options()),
        ("everything", skip(Attribute::ALL, true)),
        ("return number", skip(&[ReturnNumber], false)),
        ("number of returns", skip(&[NumberOfReturns], false)),
        ("time and colour", skip(&[Time, Color], false)),
        // Held in extra bytes, skipped as the attributes they are.
        ("normals and ring", skip(&[Normal, Ring], true)),
        ("plane thickness", skip(&[Gamma], false)),
        ("extras", skip(&[], true)),
        ("nothing", ReadOptions::default()),
    ]
}

/// Reading the LAS/LAZ bytes `data` with each of [`skip_option_sets`] gives exactly the full read with those
/// columns taken out (points, every kept column, extras and their names, metadata with the dropped names), from
/// the LAS reader alone (nothing taken out after it) and through `io::read_bytes`.
fn assert_skipping_is_taking_out(data: &[u8], what: &str) {
    let path = Path::new("mem.las");
    let full = io::read_bytes(data, path, Format::Las, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(full.meta.dropped.is_empty(), "{what}");
    for (name, opts) in skip_option_sets() {
        let mut want = full.clone();
        io::take_skipped(&mut want, &opts);
        let mut got = io::las::read_bytes(data, path, &opts).unwrap();
        for a in &opts.skip {
            assert!(
                !got.attributes().contains(a),
                "{what}, skip {name}: {a:?} read"
            );
        }
        if opts.skip_extras {
            assert!(got.extras().is_empty(), "{what}, skip {name}: extras read");
        }
        got.meta.source.clone_from(&want.meta.source);
        assert!(
            got == want,
            "{what}, skip {name}: the skipping read differs from the full read with the columns taken out \
             (attributes {:?} vs {:?}, extras {:?} vs {:?}, dropped {:?} vs {:?})",
            got.attributes(),
            want.attributes(),
            got.extras().iter().map(|d| &d.name).collect::<Vec<_>>(),
            want.extras().iter().map(|d| &d.name).collect::<Vec<_>>(),
            got.meta.dropped,
            want.meta.dropped
        );
        let via = io::read_bytes(data, path, Format::Las, &opts).unwrap();
        assert!(via == want, "{what}, skip {name}: through io::read_bytes");
    }
}

#[test]
fn skipped_columns_are_what_a_full_read_would_take_out() {
    let dir = tempfile::tempdir().unwrap();
    let everything = (1u32 << 13) - 1;
    // Point formats 0-3 (LAS 1.2) and 6-8 (1.4), with and without time, colour, NIR and extra bytes (whose
    // names clash with ours: `user_data` comes back as `user_data_2`).
    let masks = [
        0,
        1 << 3,
        1 << 2,
        (1 << 2) | (1 << 3),
        (1 << 0) | (1 << 4) | (1 << 6),
        (1 << 0) | (1 << 4) | (1 << 6) | (1 << 8) | (1 << 9) | (1 << 11),
        everything - (1 << 10) - (1 << 7),
        everything,
        everything - (1 << 2),
    ];
    let mut formats = std::collections::BTreeSet::new();
    for (i, &mask) in masks.iter().enumerate() {
        let c = synthetic(mask, 257, i as u64);
        for version in [None, Some(LasVersion::V1_4)] {
            for ext in ["las", "laz"] {
                let out = dir.path().join(format!("s.{ext}"));
                io::write(&c, &out, None, &version_opts(version)).unwrap();
                let data = std::fs::read(&out).unwrap();
                let what = format!("mask {mask:#x} version {version:?} {ext}");
                assert_skipping_is_taking_out(&data, &what);
                formats.insert(read_bytes(&data).unwrap().meta.format.unwrap());
            }
        }
    }
    for f in [
        "LAS 1.2, point format 0",
        "LAS 1.2, point format 1",
        "LAS 1.2, point format 2",
        "LAS 1.2, point format 3",
        "LAS 1.4, point format 6",
        "LAS 1.4, point format 8",
        "LAZ 1.2, point format 1",
        "LAZ 1.4, point format 8",
    ] {
        assert!(formats.contains(f), "{f} not covered: {formats:?}");
    }
    // Enough points for the parallel split of the LAS decoder and for several LAZ chunks.
    let c = synthetic(everything - (1 << 7), 140_000, 99);
    for ext in ["las", "laz"] {
        let out = dir.path().join(format!("big.{ext}"));
        io::write(&c, &out, None, &WriteOptions::default()).unwrap();
        let data = std::fs::read(&out).unwrap();
        assert_skipping_is_taking_out(&data, &format!("140,000 points {ext}"));
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn skipped_columns_of_real_files_are_what_a_full_read_would_take_out() {
    let first = shared(FILES[0].file);
    drop(first);
    for file in [
        "autzen_trim.las",
        "las14_fmt8_extra_bytes.laz",
        "las11_airborne_small.laz",
    ] {
        let data = std::fs::read(shared(file)).unwrap();
        assert_skipping_is_taking_out(&data, file);
    }
    // The prepare read of the terrestrial scan: time and the standard extras are named, never held.
    let p = shared("lone_star_tls.laz");
    let c = io::read(&p, None, &map_read_options()).unwrap();
    assert_eq!(c.len(), 518_862);
    assert_eq!(c.attributes(), [Intensity, Classification]);
    assert!(c.extras().is_empty());
    assert_eq!(
        c.meta.dropped,
        [
            "time",
            "return_number",
            "number_of_returns",
            "scan_angle",
            "user_data",
            "point_source_id"
        ]
    );
    let mut full = read(&p);
    io::take_skipped(&mut full, &map_read_options());
    assert!(
        c == full,
        "lone_star: the prepare read differs from a full read stripped"
    );
}
