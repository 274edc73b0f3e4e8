//! LAS/LAZ reading and writing: real files from the shared data here; round trips and synthetic clouds, reads
//! that skip columns, and bad input in the modules beside this one.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use crate::shared_data;
use aerie_pipeline::io::{self, Format, LasVersion, ReadOptions, WriteOptions};
use aerie_pipeline::prepare::map_read_options;
use aerie_pipeline::{Attribute, Cloud, Error, ExtraDim, ScalarKind};
use proptest::prelude::*;

mod bad_input;
mod round_trip;
mod skipping;

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

fn shared(file: &str) -> PathBuf {
    shared_data(&format!("las/{file}"))
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn every_shared_file_opens_with_its_listed_count_and_attributes() {
    let first = shared(FILES[0].file);
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
        let c = read(&shared(e.file));
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
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn known_values_of_real_files() {
    let p = shared("las14_fmt8_extra_bytes.laz");
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

    let p = shared("autzen_trim.las");
    let c = read(&p);
    // 16-bit colour stays as it is (values above 255 exist).
    assert!(c.color().unwrap().iter().any(|c| c[0] > 255));
    // World coordinates keep the file's centimetres exactly (up to f32 rounding around the origin).
    let (lo, _) = c.bounds().unwrap();
    assert!((lo[0] - 636_001.76).abs() < 1e-3, "{lo:?}");
    assert!((lo[1] - 848_935.20).abs() < 1e-3, "{lo:?}");
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn autzen_las_and_laz_are_identical() {
    let (a, b) = (shared("autzen_trim.las"), shared("autzen_trim.laz"));
    let a = read(&a);
    let mut b = read(&b);
    assert_eq!(a.len(), 110_000);
    b.meta = a.meta.clone();
    assert!(a == b, "LAS and LAZ decode to different clouds");
}

fn version_opts(v: Option<LasVersion>) -> WriteOptions {
    WriteOptions {
        las_version: v,
        ..WriteOptions::default()
    }
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

/// Reading speed on the terrestrial LAZ scan. Run with
/// `cargo test --release -p aerie-pipeline --test it io_las::read_speed -- --ignored --nocapture`.
#[test]
#[ignore = "a timing, not a check: run it in release with --ignored --nocapture"]
fn read_speed() {
    let p = shared("lone_star_tls.laz");
    let data = std::fs::read(&p).unwrap();
    for file in [
        "lone_star_tls.laz",
        "las14_fmt8_extra_bytes.laz",
        "autzen_trim.las",
    ] {
        let data = std::fs::read(shared(file)).unwrap();
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
