//! LAS/LAZ reading and writing: real files from the shared data, round trips, synthetic clouds, bad input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use aerie_pipeline::io::{self, Format, LasVersion, ReadOptions, WriteOptions};
use aerie_pipeline::prepare::map_read_options;
use aerie_pipeline::testing::shared_file;
use aerie_pipeline::{Attribute, Cloud, Error, ExtraDim, ScalarKind};
use proptest::prelude::*;

fn read(p: &Path) -> Cloud {
    io::read(p, None, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

fn read_bytes(data: &[u8]) -> aerie_pipeline::Result<Cloud> {
    io::las::read_bytes(data, Path::new("mem.las"), &ReadOptions::default())
}

/// Parse `data`, asserting that the reader does not panic.
fn read_no_panic(data: &[u8], what: &str) -> aerie_pipeline::Result<Cloud> {
    match catch_unwind(AssertUnwindSafe(|| read_bytes(data))) {
        Ok(r) => r,
        Err(_) => panic!("reader panicked on {what}"),
    }
}

struct Expect {
    file: &'static str,
    count: usize,
    format: &'static str,
    attrs: &'static [Attribute],
    extras: &'static [&'static str],
    max_returns: u8,
    crs: bool,
}

use Attribute::*;
const AIRBORNE: &[Attribute] = &[
    Intensity,
    Color,
    Time,
    ReturnNumber,
    NumberOfReturns,
    Classification,
];
const NO_COLOR: &[Attribute] = &[
    Intensity,
    Time,
    ReturnNumber,
    NumberOfReturns,
    Classification,
];
const STANDARD_EXTRAS: &[&str] = &["scan_angle", "user_data", "point_source_id"];

const FILES: &[Expect] = &[
    Expect {
        file: "autzen_trim.las",
        count: 110_000,
        format: "LAS 1.2, point format 3",
        attrs: AIRBORNE,
        extras: STANDARD_EXTRAS,
        max_returns: 4,
        crs: true,
    },
    Expect {
        file: "autzen_trim.laz",
        count: 110_000,
        format: "LAZ 1.2, point format 3",
        attrs: AIRBORNE,
        extras: STANDARD_EXTRAS,
        max_returns: 4,
        crs: true,
    },
    Expect {
        file: "las14_fmt8_extra_bytes.laz",
        count: 697_721,
        format: "LAZ 1.4, point format 8",
        attrs: AIRBORNE,
        extras: &[
            "nir",
            "scan_angle",
            "user_data",
            "point_source_id",
            "Deviation",
            "confidence",
        ],
        max_returns: 6,
        crs: true,
    },
    Expect {
        file: "lone_star_tls.laz",
        count: 518_862,
        format: "LAZ 1.1, point format 1",
        attrs: NO_COLOR,
        extras: STANDARD_EXTRAS,
        max_returns: 1,
        crs: false,
    },
    Expect {
        file: "las11_airborne_small.laz",
        count: 5_658,
        format: "LAZ 1.1, point format 1",
        attrs: NO_COLOR,
        extras: STANDARD_EXTRAS,
        max_returns: 4,
        crs: false,
    },
];

fn shared(file: &str) -> Option<PathBuf> {
    shared_file(&format!("las/{file}"))
}

#[test]
fn every_shared_file_opens_with_its_listed_count_and_attributes() {
    let Some(first) = shared(FILES[0].file) else {
        return;
    };
    // Every LAS/LAZ file in the folder must be in the table above.
    let dir = first.parent().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let ext = Path::new(&name).extension().and_then(|e| e.to_str());
        if ext.is_some_and(|e| e.eq_ignore_ascii_case("las") || e.eq_ignore_ascii_case("laz")) {
            assert!(
                FILES.iter().any(|e| e.file == name),
                "{name} is not in the expected table"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, FILES.len());

    for e in FILES {
        let c = read(&shared(e.file).unwrap());
        assert_eq!(c.len(), e.count, "{}", e.file);
        assert_eq!(c.meta.format.as_deref(), Some(e.format), "{}", e.file);
        assert_eq!(c.attributes(), e.attrs, "{}", e.file);
        let names: Vec<&str> = c.extras().iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, e.extras, "{}", e.file);
        assert_eq!(c.meta.crs_wkt.is_some(), e.crs, "{}", e.file);
        c.validate().unwrap();
        let max_nr = *c.number_of_returns().unwrap().iter().max().unwrap();
        assert_eq!(max_nr, e.max_returns, "{}", e.file);
        // Positions are small around the origin, and the origin is within a metre of the minimum corner.
        let (lo, hi) = c.bounds().unwrap();
        for k in 0..3 {
            assert!(
                lo[k] - c.origin[k] >= 0.0 && lo[k] - c.origin[k] < 1.0,
                "{}",
                e.file
            );
            assert!(hi[k] - lo[k] < 2000.0, "{}", e.file);
        }
    }
}

#[test]
fn known_values_of_real_files() {
    let Some(p) = shared("las14_fmt8_extra_bytes.laz") else {
        return;
    };
    let c = read(&p);
    let nir = c.extra("nir").unwrap();
    assert_eq!(nir.kind(), ScalarKind::U16);
    assert!(nir.values.to_f64().iter().any(|&v| v > 255.0));
    assert_eq!(c.extra("Deviation").unwrap().kind(), ScalarKind::U16);
    assert_eq!(c.extra("confidence").unwrap().kind(), ScalarKind::U8);
    assert_eq!(c.extra("scan_angle").unwrap().kind(), ScalarKind::F32);
    // LAS 1.4 classes above 31 survive.
    assert!(c.classification().unwrap().iter().any(|&k| k > 31));
    assert!(c.meta.crs_wkt.as_ref().unwrap().contains("Lambert-93"));

    let Some(p) = shared("autzen_trim.las") else {
        return;
    };
    let c = read(&p);
    // 16-bit colour stays as it is (values above 255 exist).
    assert!(c.color().unwrap().iter().any(|c| c[0] > 255));
    // World coordinates keep the file's centimetres exactly (up to f32 rounding around the origin).
    let (lo, _) = c.bounds().unwrap();
    assert!((lo[0] - 636_001.76).abs() < 1e-3, "{lo:?}");
    assert!((lo[1] - 848_935.20).abs() < 1e-3, "{lo:?}");
}

#[test]
fn autzen_las_and_laz_are_identical() {
    let (Some(a), Some(b)) = (shared("autzen_trim.las"), shared("autzen_trim.laz")) else {
        return;
    };
    let a = read(&a);
    let mut b = read(&b);
    assert_eq!(a.len(), 110_000);
    b.meta = a.meta.clone();
    assert!(a == b, "LAS and LAZ decode to different clouds");
}

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

fn version_opts(v: Option<LasVersion>) -> WriteOptions {
    WriteOptions {
        las_version: v,
        ..WriteOptions::default()
    }
}

#[test]
fn real_files_round_trip_through_las_and_laz_1_2_and_1_4() {
    let dir = tempfile::tempdir().unwrap();
    let mut tried = 0;
    for e in FILES {
        let Some(p) = shared(e.file) else {
            return;
        };
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

/// A small deterministic generator for synthetic clouds.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A synthetic cloud with the attributes chosen by the bits of `mask`.
fn synthetic(mask: u32, n: usize, seed: u64) -> Cloud {
    let mut r = Rng(seed);
    let mut c = Cloud::from_positions(
        [512_345.0, 5_432_100.0, 250.0],
        (0..n)
            .map(|_| {
                [
                    (r.unit() * 3000.0 - 1000.0) as f32,
                    (r.unit() * 3000.0) as f32,
                    (r.unit() * 200.0 - 50.0) as f32,
                ]
            })
            .collect(),
    );
    let on = |b: u32| mask & (1 << b) != 0;
    if on(0) {
        // Bit 1 chooses normalised (E57-like) or raw intensity.
        c.set_intensity(Some(if on(1) {
            (0..n).map(|_| r.unit() as f32).collect()
        } else {
            (0..n).map(|_| r.below(65536) as f32).collect()
        }))
        .unwrap();
    }
    if on(2) {
        c.set_color(Some(
            (0..n)
                .map(|_| [r.below(65536) as u16, r.below(65536) as u16, 300])
                .collect(),
        ))
        .unwrap();
    }
    if on(3) {
        c.set_time(Some((0..n).map(|_| 1.0e5 + r.unit() * 1000.0).collect()))
            .unwrap();
    }
    if on(4) {
        let nr: Vec<u8> = (0..n)
            .map(|_| 1 + r.below(if on(5) { 7 } else { 5 }) as u8)
            .collect();
        c.set_return_number(Some(
            nr.iter()
                .map(|&m| 1 + r.below(u64::from(m)) as u8)
                .collect(),
        ))
        .unwrap();
        c.set_number_of_returns(Some(nr)).unwrap();
    }
    if on(6) {
        let top = if on(7) { 256 } else { 32 };
        c.set_classification(Some((0..n).map(|_| r.below(top) as u8).collect()))
            .unwrap();
    }
    if on(8) {
        c.set_normals(Some(
            (0..n)
                .map(|_| {
                    let z = r.unit() as f32;
                    [0.6 * (1.0 - z), 0.8 * (1.0 - z), z]
                })
                .collect(),
        ))
        .unwrap();
        c.set_gamma(Some((0..n).map(|_| r.unit() as f32 * 0.1).collect()))
            .unwrap();
    }
    if on(9) {
        c.set_ring(Some((0..n).map(|_| r.below(128) as u16).collect()))
            .unwrap();
    }
    if on(10) {
        c.push_extra(ExtraDim::from_f64(
            "nir",
            ScalarKind::U16,
            &(0..n).map(|_| r.below(65536) as f64).collect::<Vec<f64>>(),
        ))
        .unwrap();
    }
    if on(11) {
        c.push_extra(ExtraDim::from_f64(
            "range",
            ScalarKind::F32,
            &(0..n)
                .map(|_| f64::from(r.unit() as f32 * 100.0))
                .collect::<Vec<f64>>(),
        ))
        .unwrap();
        c.push_extra(ExtraDim::from_f64(
            "row",
            ScalarKind::I32,
            &(0..n)
                .map(|_| r.below(1 << 20) as f64 - 1000.0)
                .collect::<Vec<f64>>(),
        ))
        .unwrap();
        c.push_extra(ExtraDim::from_f64(
            "user_data",
            ScalarKind::U8,
            &(0..n).map(|_| r.below(256) as f64).collect::<Vec<f64>>(),
        ))
        .unwrap();
    }
    if on(12) {
        c.meta.crs_wkt = Some("PROJCS[\"test\"]".into());
    }
    c
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
fn skipped_columns_of_real_files_are_what_a_full_read_would_take_out() {
    let Some(first) = shared(FILES[0].file) else {
        return;
    };
    drop(first);
    for file in [
        "autzen_trim.las",
        "las14_fmt8_extra_bytes.laz",
        "las11_airborne_small.laz",
    ] {
        let data = std::fs::read(shared(file).unwrap()).unwrap();
        assert_skipping_is_taking_out(&data, file);
    }
    // The prepare read of the terrestrial scan: time and the standard extras are named, never held.
    let p = shared("lone_star_tls.laz").unwrap();
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

// --- bad input -------------------------------------------------------------------------------------------------

fn put_u32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn truncated_files_are_errors() {
    for file in [
        "autzen_trim.las",
        "autzen_trim.laz",
        "las14_fmt8_extra_bytes.laz",
    ] {
        let Some(p) = shared(file) else {
            return;
        };
        let data = std::fs::read(&p).unwrap();
        let mut cuts: Vec<usize> = (0..1200).step_by(3).collect();
        cuts.extend((1..=60).map(|i| data.len() * i / 61));
        cuts.extend([data.len() - 1, data.len() - 8, data.len() - 100]);
        for cut in cuts {
            let r = read_no_panic(&data[..cut], &format!("{file} cut at {cut}"));
            assert!(
                r.is_err(),
                "{file} cut at {cut} of {} read fine",
                data.len()
            );
        }
    }
}

#[test]
fn inflated_point_counts_are_errors_without_allocating() {
    for file in ["autzen_trim.las", "autzen_trim.laz"] {
        let Some(p) = shared(file) else {
            return;
        };
        let data = std::fs::read(&p).unwrap();
        for count in [110_001u32, 1 << 24, u32::MAX] {
            let mut d = data.clone();
            put_u32(&mut d, 107, count);
            let r = read_no_panic(&d, &format!("{file} with count {count}"));
            assert!(
                matches!(r, Err(Error::Format { .. })),
                "{file} count {count}: {r:?}"
            );
        }
    }
    // LAS 1.4: the 64-bit count, with the legacy field zero.
    let Some(p) = shared("las14_fmt8_extra_bytes.laz") else {
        return;
    };
    let data = std::fs::read(&p).unwrap();
    for count in [697_722u64, 1 << 40, u64::MAX] {
        let mut d = data.clone();
        put_u32(&mut d, 107, 0);
        d[247..255].copy_from_slice(&count.to_le_bytes());
        let r = read_no_panic(&d, &format!("fmt8 with count {count}"));
        assert!(
            matches!(r, Err(Error::Format { .. })),
            "count {count}: {r:?}"
        );
    }
}

#[test]
fn wrong_magic_and_unsupported_versions_are_errors() {
    let Some(p) = shared("autzen_trim.las") else {
        return;
    };
    let data = std::fs::read(&p).unwrap();
    let mut d = data.clone();
    d[3] = b'G';
    assert!(matches!(read_bytes(&d), Err(Error::Format { .. })));
    for (major, minor) in [(2u8, 0u8), (1, 5), (0, 9)] {
        let mut d = data.clone();
        d[24] = major;
        d[25] = minor;
        let r = read_bytes(&d);
        assert!(
            matches!(r, Err(Error::Unsupported { .. })),
            "{major}.{minor}: {r:?}"
        );
    }
    let mut d = data.clone();
    d[104] = 11;
    assert!(matches!(read_bytes(&d), Err(Error::Unsupported { .. })));
    assert!(read_bytes(b"").is_err());
    assert!(read_bytes(b"LASF").is_err());
}

#[test]
fn flipped_header_bytes_never_panic() {
    // Small files, so every byte of the header and the VLRs can be tried.
    for file in [
        "las11_airborne_small.laz",
        "las14_fmt8_extra_bytes.laz",
        "autzen_trim.las",
    ] {
        let Some(p) = shared(file) else {
            return;
        };
        let mut data = std::fs::read(&p).unwrap();
        let full = data.len();
        if file.starts_with("autzen") {
            // Keep 1000 points: header corruption is what is tested here, not decoding speed.
            let off = u32::from_le_bytes(data[96..100].try_into().unwrap()) as usize;
            data.truncate(off + 1000 * 34);
            put_u32(&mut data, 107, 1000);
        }
        let end = u32::from_le_bytes(data[96..100].try_into().unwrap()) as usize;
        // The big LAS 1.4 file: only the structural header fields (version, sizes, offsets, format, counts,
        // EVLR location), since each read that succeeds decodes 700k points.
        let offsets: Vec<usize> = if file.starts_with("las14") {
            (24..26).chain(94..111).chain(235..255).collect()
        } else {
            (0..end.min(data.len())).collect()
        };
        let stride = if file.starts_with("las14") { 4 } else { 1 };
        let mut errors = 0;
        for at in offsets {
            for mask in [0xffu8, 0x80] {
                let mut d = data.clone();
                d[at] ^= mask;
                if read_no_panic(&d, &format!("{file} byte {at} ^ {mask:#x}")).is_err() {
                    errors += 1;
                }
            }
        }
        // Structural fields (signature, version, sizes, offsets, format, counts) must have been caught.
        assert!(
            errors > 40 / stride,
            "{file} ({full} bytes): only {errors} corruptions detected"
        );
    }
}

#[test]
fn corrupted_compressed_points_never_panic() {
    let Some(p) = shared("las14_fmt8_extra_bytes.laz") else {
        return;
    };
    let small = shared("las11_airborne_small.laz").unwrap();
    for path in [p, small] {
        let data = std::fs::read(&path).unwrap();
        let mut rng = Rng(42);
        for trial in 0..12 {
            let mut d = data.clone();
            let start = 2200;
            for _ in 0..1 + trial {
                let at = start + rng.below((d.len() - start) as u64) as usize;
                d[at] ^= 1 + rng.below(255) as u8;
            }
            let _ = read_no_panic(&d, &format!("{} trial {trial}", path.display()));
        }
    }
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

/// Reading speed on the terrestrial LAZ scan. Run with
/// `cargo test --release -p aerie-pipeline --test io_las read_speed -- --ignored --nocapture`.
#[test]
#[ignore = "a timing, not a check: run it in release with --ignored --nocapture"]
fn read_speed() {
    let Some(p) = shared("lone_star_tls.laz") else {
        return;
    };
    let data = std::fs::read(&p).unwrap();
    for file in [
        "lone_star_tls.laz",
        "las14_fmt8_extra_bytes.laz",
        "autzen_trim.las",
    ] {
        let data = std::fs::read(shared(file).unwrap()).unwrap();
        let mut best = f64::MAX;
        let mut n = 0;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let c = read_bytes(&data).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            n = c.len();
        }
        println!(
            "{file}: {n} points, best {:.1} ms, {:.1} M points/s",
            best * 1e3,
            n as f64 / best / 1e6
        );
    }
    drop(data);
}
