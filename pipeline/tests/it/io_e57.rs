//! E57 reading and writing: real files from the shared data, round trips, poses and corrupt input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use crate::shared_data;
use aerie_pipeline::io::{self, Format, ReadOptions, WriteOptions, e57};
use aerie_pipeline::pose::{self, Isometry3};
use aerie_pipeline::{Cloud, Error, ExtraDim, ScalarKind, ScanInfo};
use proptest::prelude::*;

fn read(path: &Path) -> Cloud {
    io::read(path, None, &ReadOptions::default()).unwrap()
}

fn read_mem(data: &[u8]) -> aerie_pipeline::Result<Cloud> {
    e57::read_bytes(data, Path::new("mem.e57"), &ReadOptions::default())
}

fn roundtrip(cloud: &Cloud) -> Cloud {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.e57");
    io::write(cloud, &out, None, &WriteOptions::default()).unwrap();
    read(&out)
}

/// Same count, coordinates within 1 mm, attributes kept (colour exactly, intensity to f32, time to f64).
fn assert_same(a: &Cloud, b: &Cloud) {
    assert_eq!(a.len(), b.len());
    let mut worst = 0.0f64;
    for i in 0..a.len() {
        let (p, q) = (a.world(i), b.world(i));
        for k in 0..3 {
            worst = worst.max((p[k] - q[k]).abs());
        }
    }
    assert!(worst < 1e-3, "coordinates moved by {worst} m");
    assert_eq!(a.color(), b.color());
    assert_eq!(a.intensity().is_some(), b.intensity().is_some());
    if let (Some(x), Some(y)) = (a.intensity(), b.intensity()) {
        assert_eq!(x, y);
    }
    assert_eq!(a.time(), b.time());
    assert_eq!(a.return_number(), b.return_number());
    assert_eq!(a.number_of_returns(), b.number_of_returns());
    for d in a.extras() {
        let e = b
            .extra(&d.name)
            .unwrap_or_else(|| panic!("extra {} lost", d.name));
        assert_eq!(d.values, e.values, "extra {}", d.name);
    }
}

struct Expect {
    file: &'static str,
    count: usize,
    intensity: bool,
    color: bool,
    row_column: bool,
}

const FILES: [Expect; 3] = [
    Expect {
        file: "e57/pumpA_tls.e57",
        count: 155_201,
        intensity: true,
        color: true,
        row_column: true,
    },
    Expect {
        file: "e57/tinyCartesianFloatRgb.e57",
        count: 2_090,
        intensity: false,
        color: true,
        row_column: false,
    },
    Expect {
        file: "e57/bunnyDouble.e57",
        count: 30_571,
        intensity: false,
        color: false,
        row_column: false,
    },
];

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn real_files_open_with_their_point_counts() {
    for e in FILES {
        let path = shared_data(e.file);
        let c = read(&path);
        assert_eq!(c.len(), e.count, "{}", e.file);
        c.validate().unwrap();
        assert_eq!(c.intensity().is_some(), e.intensity, "{}", e.file);
        assert_eq!(c.color().is_some(), e.color, "{}", e.file);
        assert_eq!(c.extra("row").is_some(), e.row_column, "{}", e.file);
        assert_eq!(c.extra("column").is_some(), e.row_column, "{}", e.file);
        assert_eq!(
            c.meta.format.as_deref(),
            Some("E57 1.0 (1 scan)"),
            "{}",
            e.file
        );
        assert_eq!(c.meta.scans.len(), 1);
        assert_eq!(c.meta.scans[0].points, 0..e.count);
        assert!(c.positions().iter().flatten().all(|v| v.is_finite()));
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn pump_attributes_have_their_documented_ranges() {
    let path = shared_data("e57/pumpA_tls.e57");
    let c = read(&path);
    let (lo, hi) = c.bounds().unwrap();
    // The file's cartesianBounds (the scan has no pose, so scan frame = file frame).
    let want_lo = [-2.903764, -5.301103, -1.899705];
    let want_hi = [1.721604, -0.792647, 1.843003];
    for k in 0..3 {
        assert!((lo[k] - want_lo[k]).abs() < 1e-5, "{lo:?}");
        assert!((hi[k] - want_hi[k]).abs() < 1e-5, "{hi:?}");
    }
    assert_eq!(c.origin, [-3.0, -6.0, -2.0]);
    let i = c.intensity().unwrap();
    assert!(i.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(
        i.iter().any(|&v| v > 0.5),
        "intensity is kept as stored, 0..1"
    );
    let col = c.color().unwrap();
    assert!(
        col.iter().flatten().all(|v| v % 257 == 0),
        "8-bit widened by 257"
    );
    assert!(col.iter().flatten().any(|&v| v > 0));
    let row = c.extra("row").unwrap();
    let column = c.extra("column").unwrap();
    assert_eq!(row.kind(), ScalarKind::I32);
    let max = |d: &ExtraDim| d.values.to_f64().into_iter().fold(f64::MIN, f64::max);
    assert_eq!(max(row), 1073.0);
    assert_eq!(max(column), 344.0);
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn pump_scan_pose_and_separate_scans() {
    let path = shared_data("e57/pumpA_tls.e57");
    let c = read(&path);
    assert_eq!(c.meta.scans.len(), 1);
    let s = &c.meta.scans[0];
    assert_eq!(s.name, "pumpA");
    // The file has no pose element: the standard's default is the identity.
    assert_eq!(s.world_from_scan, Some(Isometry3::identity()));

    let opts = ReadOptions {
        separate_scans: true,
        ..ReadOptions::default()
    };
    let scans = io::read_scans(&path, None, &opts).unwrap();
    assert_eq!(scans.len(), 1);
    assert_eq!(scans.iter().map(Cloud::len).sum::<usize>(), c.len());
    assert_eq!(scans[0].meta.scans.len(), 1);
    assert_eq!(scans[0].meta.source.as_deref(), Some(path.as_path()));
    assert_same(&scans[0], &c);
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn real_files_round_trip() {
    for e in FILES {
        let path = shared_data(e.file);
        let a = read(&path);
        let b = roundtrip(&a);
        assert_same(&a, &b);
        assert_eq!(b.meta.scans.len(), 1);
        assert_eq!(b.meta.scans[0].name, a.meta.scans[0].name);
    }
}

/// Two scans with different poses: points are written in each scan's frame and come back in the world frame.
fn two_scans() -> Cloud {
    let mut positions = Vec::new();
    for i in 0..300 {
        let f = i as f32;
        positions.push([(f * 0.37) % 40.0, (f * 0.91) % 25.0, (f * 0.13) % 6.0]);
    }
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let mut c = Cloud::from_positions([500_000.0, 4_000_000.0, 100.0], positions);
    c.meta.scans = vec![
        ScanInfo {
            name: "north".into(),
            points: 0..120,
            world_from_scan: pose::from_wxyz([h, 0.0, 0.0, h], [500_010.0, 4_000_005.0, 101.5]),
        },
        ScanInfo {
            name: "south".into(),
            points: 120..300,
            // Not unit: normalised when the pose is made.
            world_from_scan: pose::from_wxyz(
                [0.9, 0.1, -0.2, 0.3],
                [500_030.0, 4_000_020.0, 102.0],
            ),
        },
    ];
    c.set_intensity(Some((0..300).map(|i| (i % 100) as f32 / 100.0).collect()))
        .unwrap();
    c.set_time(Some((0..300).map(|i| 1000.0 + i as f64 * 1e-3).collect()))
        .unwrap();
    c
}

#[test]
fn scans_with_poses_round_trip() {
    let a = two_scans();
    let b = roundtrip(&a);
    assert_same(&a, &b);
    assert_eq!(b.meta.format.as_deref(), Some("E57 1.0 (2 scans)"));
    assert_eq!(b.meta.scans.len(), 2);
    for (x, y) in a.meta.scans.iter().zip(&b.meta.scans) {
        assert_eq!(x.name, y.name);
        assert_eq!(x.points, y.points);
        let (p, q) = (x.world_from_scan.unwrap(), y.world_from_scan.unwrap());
        assert_eq!(p.translation, q.translation);
        let (p, q) = (pose::rotation_wxyz(&p), pose::rotation_wxyz(&q));
        for k in 0..4 {
            assert!((p[k] - q[k]).abs() < 1e-12, "{p:?} {q:?}");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("scans.e57");
    io::write(&a, &out, None, &WriteOptions::default()).unwrap();
    let opts = ReadOptions {
        separate_scans: true,
        ..ReadOptions::default()
    };
    let parts = io::read_scans(&out, Some(Format::E57), &opts).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts.iter().map(Cloud::len).sum::<usize>(), a.len());
    assert_eq!(parts[1].meta.scans[0].name, "south");
    assert_eq!(parts[1].meta.scans[0].points, 0..180);
    for (j, i) in (120..300).enumerate() {
        let (p, q) = (a.world(i), parts[1].world(j));
        assert!((0..3).all(|k| (p[k] - q[k]).abs() < 1e-3));
    }
}

#[test]
fn empty_cloud_and_field_selection() {
    let empty = Cloud::default();
    let b = roundtrip(&empty);
    assert_eq!(b.len(), 0);

    let a = two_scans();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("xyz.e57");
    let opts = WriteOptions {
        fields: Some(vec![]),
        ..WriteOptions::default()
    };
    io::write(&a, &out, None, &opts).unwrap();
    let b = read(&out);
    assert_eq!(b.len(), a.len());
    assert!(b.intensity().is_none() && b.time().is_none());
}

/// Which attributes a synthetic cloud gets (`color`: None, Some(true) 8-bit values, Some(false) 16-bit).
struct Attrs {
    intensity: bool,
    color: Option<bool>,
    time: bool,
    grid: bool,
    returns: bool,
}

fn synthetic(n: usize, origin: [f64; 3], seed: u64, at: &Attrs) -> Cloud {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut c = Cloud::from_positions(
        origin,
        (0..n)
            .map(|_| [0, 1, 2].map(|_| (next() % 2_000_000) as f32 * 1e-4 - 100.0))
            .collect(),
    );
    if at.intensity {
        c.set_intensity(Some(
            (0..n).map(|_| (next() % 4096) as f32 * 0.25).collect(),
        ))
        .unwrap();
    }
    if let Some(eight) = at.color {
        c.set_color(Some(
            (0..n)
                .map(|_| {
                    [0, 1, 2].map(|_| {
                        if eight {
                            (next() % 256) as u16 * 257
                        } else {
                            (next() % 65536) as u16
                        }
                    })
                })
                .collect(),
        ))
        .unwrap();
    }
    if at.time {
        c.set_time(Some((0..n).map(|i| 1.7e9 + i as f64 * 1e-5).collect()))
            .unwrap();
    }
    if at.grid {
        c.push_extra(ExtraDim::from_f64(
            "row",
            ScalarKind::I32,
            &(0..n).map(|i| (i / 7) as f64).collect::<Vec<f64>>(),
        ))
        .unwrap();
        c.push_extra(ExtraDim::from_f64(
            "column",
            ScalarKind::I32,
            &(0..n).map(|i| (i % 7) as f64 - 3.0).collect::<Vec<f64>>(),
        ))
        .unwrap();
    }
    if at.returns {
        c.set_number_of_returns(Some((0..n).map(|i| (i % 3 + 1) as u8).collect()))
            .unwrap();
        c.set_return_number(Some((0..n).map(|i| (i % 3) as u8 / 2 + 1).collect()))
            .unwrap();
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn synthetic_clouds_round_trip(
        n in 0usize..400,
        big in any::<bool>(),
        seed in any::<u64>(),
        intensity in any::<bool>(),
        color in proptest::option::of(any::<bool>()),
        time in any::<bool>(),
        grid in any::<bool>(),
        returns in any::<bool>(),
    ) {
        let origin = if big { [637_000.0, 851_000.0, 400.0] } else { [0.0; 3] };
        let at = Attrs { intensity, color, time, grid, returns };
        let a = synthetic(n, origin, seed, &at);
        let b = roundtrip(&a);
        assert_same(&a, &b);
        prop_assert_eq!(b.meta.scans.len(), 1);
        if n > 0 {
            prop_assert_eq!(b.extras().len(), a.extras().len());
        }
    }
}

#[test]
fn huge_extent_falls_back_to_doubles() {
    let c = Cloud::from_positions(
        [0.0; 3],
        vec![[0.0, 0.0, 0.0], [1.0e6, -2.0e6, 3.5], [123.456, 7.0, -1.0]],
    );
    let b = roundtrip(&c);
    assert_same(&c, &b);
}

/// Every corrupt variant must give an error, never a panic and never a cloud with made-up points.
fn assert_err_no_panic(data: &[u8], what: &str) -> Error {
    let r = catch_unwind(AssertUnwindSafe(|| read_mem(data)));
    match r {
        Err(_) => panic!("{what}: reader panicked"),
        Ok(Ok(c)) => panic!("{what}: read {} points from corrupt data", c.len()),
        Ok(Err(e)) => e,
    }
}

fn small_file() -> (PathBuf, Vec<u8>) {
    let p = shared_data("e57/tinyCartesianFloatRgb.e57");
    let d = std::fs::read(&p).unwrap();
    (p, d)
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn truncated_files_are_errors() {
    let (_, data) = small_file();
    read_mem(&data).unwrap();
    let mut cuts: Vec<usize> = (0..64).collect();
    cuts.extend((64..data.len()).step_by(509));
    cuts.extend([1024, 2048, data.len() - 1024, data.len() - 1]);
    for cut in cuts {
        let e = assert_err_no_panic(&data[..cut], &format!("cut at {cut}"));
        assert!(e.is_bad_input(), "cut at {cut}: {e}");
    }
    // A page-aligned truncation passes the crate's size check and must still fail.
    let path = shared_data("e57/pumpA_tls.e57");
    let pump = std::fs::read(path).unwrap();
    for pages in [1usize, 2, 100, 2000, pump.len() / 1024 - 1] {
        assert_err_no_panic(&pump[..pages * 1024], &format!("pump cut to {pages} pages"));
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn wrong_magic_and_flipped_bytes_are_errors() {
    let (_, data) = small_file();
    let mut bad = data.clone();
    bad[0] = b'X';
    let e = assert_err_no_panic(&bad, "wrong magic");
    assert!(e.to_string().contains("ASTM-E57"), "{e}");

    // Header fields (version, length, xml offset/length, page size) and the XML, with each byte flipped.
    let xml_offset = u64::from_le_bytes(data[24..32].try_into().unwrap()) as usize;
    let mut offsets: Vec<usize> = (8..48).collect();
    offsets.extend((xml_offset..data.len()).step_by(97));
    offsets.extend((48..xml_offset).step_by(331));
    for off in offsets {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = data.clone();
            bad[off] ^= mask;
            let r = catch_unwind(AssertUnwindSafe(|| read_mem(&bad)));
            match r {
                Err(_) => panic!("flip {mask:#x} at {off}: reader panicked"),
                // Bytes inside the CRC of the last page's padding can be unused; an Ok is then the same cloud.
                Ok(Ok(c)) => assert_eq!(c.len(), 2_090, "flip {mask:#x} at {off}"),
                Ok(Err(e)) => assert!(e.is_bad_input(), "flip at {off}: {e}"),
            }
        }
    }
}

/// Rebuild a file with its XML replaced (pages and CRCs recomputed), to craft bad metadata that passes the
/// page checksums.
fn with_xml(data: &[u8], edit: impl Fn(&str) -> String) -> Vec<u8> {
    let xml_off = u64::from_le_bytes(data[24..32].try_into().unwrap()) as usize;
    let xml_len = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let mut logical: Vec<u8> = data.chunks(1024).flat_map(|p| p[..1020].to_vec()).collect();
    let lx = xml_off - xml_off / 1024 * 4;
    let xml = String::from_utf8(logical[lx..lx + xml_len].to_vec()).unwrap();
    let new = edit(&xml);
    logical.truncate(lx);
    logical.extend_from_slice(new.as_bytes());
    while !logical.len().is_multiple_of(1020) {
        logical.push(0);
    }
    let mut out = Vec::new();
    for page in logical.chunks(1020) {
        out.extend_from_slice(page);
        out.extend_from_slice(&crc32c::crc32c(page).to_be_bytes());
    }
    let len = out.len() as u64;
    out[16..24].copy_from_slice(&len.to_le_bytes());
    out[32..40].copy_from_slice(&(new.len() as u64).to_le_bytes());
    // The header sits in the first page: its checksum changes with it.
    let first = crc32c::crc32c(&out[..1020]);
    out[1020..1024].copy_from_slice(&first.to_be_bytes());
    out
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn crafted_xml_is_rejected_without_huge_allocations() {
    let (_, data) = small_file();
    // The rebuild itself is faithful.
    assert_eq!(
        read_mem(&with_xml(&data, str::to_owned)).unwrap().len(),
        2_090
    );

    let huge = with_xml(&data, |x| {
        x.replace(
            "recordCount=\"2090\"",
            "recordCount=\"18446744073709551615\"",
        )
    });
    let e = assert_err_no_panic(&huge, "huge recordCount");
    assert!(e.to_string().contains("recordCount"), "{e}");

    let more = with_xml(&data, |x| {
        x.replace("recordCount=\"2090\"", "recordCount=\"2100\"")
    });
    assert_err_no_panic(&more, "recordCount beyond the data");

    // Every field constant: the crate would generate values forever.
    let constant = with_xml(&data, |x| {
        let mut s = x.to_owned();
        for tag in ["cartesianX", "cartesianY", "cartesianZ"] {
            let start = s.find(&format!("<{tag} ")).unwrap();
            let end = s[start..].find(&format!("</{tag}>")).unwrap() + start + tag.len() + 3;
            s.replace_range(
                start..end,
                &format!("<{tag} type=\"Integer\" minimum=\"5\" maximum=\"5\"/>"),
            );
        }
        for tag in ["colorRed", "colorGreen", "colorBlue"] {
            s = s.replace(
                &format!("<{tag} type=\"Integer\" minimum=\"0\" maximum=\"255\"/>"),
                &format!("<{tag} type=\"Integer\" minimum=\"1\" maximum=\"1\"/>"),
            );
        }
        s
    });
    let e = assert_err_no_panic(&constant, "constant prototype");
    assert!(e.to_string().contains("constant"), "{e}");

    // The same section listed many times cannot multiply the memory used.
    let repeated = with_xml(&data, |x| {
        let start = x.find("<vectorChild type=\"Structure\">").unwrap();
        let end = x.find("</data3D>").unwrap();
        let child = &x[start..end];
        let mut s = x[..start].to_owned();
        for _ in 0..50 {
            s.push_str(child);
        }
        s.push_str(&x[end..]);
        s
    });
    assert_err_no_panic(&repeated, "repeated sections");

    let nan_pose = with_xml(&data, |x| {
        x.replace(
            "<points ",
            "<pose type=\"Structure\"><translation type=\"Structure\"><x type=\"Float\">nan</x>\
             <y type=\"Float\">0</y><z type=\"Float\">0</z></translation></pose>\n<points ",
        )
    });
    assert_err_no_panic(&nan_pose, "nan pose");
}

/// Recompute every page checksum, so corruption reaches the section decoder instead of the CRC check.
fn fix_crcs(data: &mut [u8]) {
    for page in data.chunks_mut(1024) {
        let crc = crc32c::crc32c(&page[..1020]);
        page[1020..].copy_from_slice(&crc.to_be_bytes());
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn corrupt_sections_with_valid_checksums_do_not_panic() {
    let (_, data) = small_file();
    let mut fixed = data.clone();
    fix_crcs(&mut fixed);
    assert_eq!(fixed, data, "checksums are crc-32c, stored big-endian");
    let xml_offset = u64::from_le_bytes(data[24..32].try_into().unwrap()) as usize;
    let mut errors = 0;
    // Section header (48..80), packet headers and bytestream lengths (80..), then values further on.
    let offsets = (48..200).chain((200..xml_offset).step_by(173));
    for off in offsets {
        if off % 1024 >= 1020 {
            continue;
        }
        for mask in [0x01u8, 0x40, 0xff] {
            let mut bad = data.clone();
            bad[off] ^= mask;
            fix_crcs(&mut bad);
            match catch_unwind(AssertUnwindSafe(|| read_mem(&bad))) {
                Err(_) => panic!("flip {mask:#x} at {off}: reader panicked"),
                // A flipped value is still a valid file: same points, other values.
                Ok(Ok(c)) => assert!(c.len() <= 2_090, "flip {mask:#x} at {off}"),
                Ok(Err(e)) => {
                    assert!(e.is_bad_input(), "flip at {off}: {e}");
                    errors += 1;
                }
            }
        }
    }
    assert!(
        errors > 0,
        "no corruption of the section structure was detected"
    );
}
