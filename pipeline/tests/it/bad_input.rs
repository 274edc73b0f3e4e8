//! The bad-input corpus, built from the real shared scans: cut and corrupted copies must give errors that name the
//! file, never a panic. Format-specific cases (inflated counts, NaN coordinates, wrong versions) live in each
//! format's test file; this one runs the same abuse through every reader.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use crate::shared_data;
use aerie_pipeline::io::{self, Format, ReadOptions};

const FILES: &[&str] = &[
    "las/autzen_trim.las",
    "las/las11_airborne_small.laz",
    "e57/tinyCartesianFloatRgb.e57",
    "e57/bunnyDouble.e57",
    "ply/hdl32_scan_binary.ply",
    "ply/stanford_bun000_ascii.ply",
    "pcd/hdl32_scan_binary.pcd",
    "pcd/car6_binary_compressed.pcd",
];

fn read(data: &[u8], name: &str, format: Format) -> Result<usize, String> {
    let path = Path::new(name);
    match catch_unwind(AssertUnwindSafe(|| {
        io::read_bytes(data, path, format, &ReadOptions::default())
    })) {
        Ok(Ok(c)) => Ok(c.len()),
        Ok(Err(e)) => {
            let msg = e.to_string();
            assert!(msg.contains(name), "error does not name the file: {msg}");
            assert!(
                e.is_bad_input(),
                "corrupt input reported as a machine failure: {msg}"
            );
            Err(msg)
        }
        Err(_) => panic!("reader of {name} panicked"),
    }
}

/// Offsets spread over the whole file, denser at the start where headers live.
fn cut_points(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..64).map(|i| i * 7).filter(|&o| o < len).collect();
    v.extend((1..40).map(|i| len * i / 40));
    v.extend([len.saturating_sub(1), len.saturating_sub(7)]);
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn truncated_copies_are_errors() {
    for rel in FILES {
        let path = shared_data(rel);
        let data = std::fs::read(&path).unwrap();
        let format = Format::from_path(&path).unwrap();
        let full = read(&data, rel, format).expect("the intact file reads");
        for cut in cut_points(data.len()) {
            // A cut inside trailing padding may leave every point intact; losing points silently is the failure.
            if let Ok(n) = read(&data[..cut], rel, format) {
                assert_eq!(
                    n,
                    full,
                    "{rel} cut at {cut} of {} read {n} of {full} points without an error",
                    data.len()
                );
            }
        }
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn flipped_bytes_never_panic() {
    for rel in FILES {
        let path = shared_data(rel);
        let data = std::fs::read(&path).unwrap();
        let format = Format::from_path(&path).unwrap();
        let mut positions: Vec<usize> = (0..data.len().min(1024)).step_by(3).collect();
        positions.extend((0..64).map(|i| data.len() * i / 64));
        for pos in positions {
            for mask in [0xffu8, 0x80, 0x01] {
                let mut bad = data.clone();
                bad[pos] ^= mask;
                let _ = read(&bad, rel, format);
            }
        }
    }
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn wrong_magic_is_an_error() {
    for rel in FILES {
        let path = shared_data(rel);
        let mut data = std::fs::read(&path).unwrap();
        let format = Format::from_path(&path).unwrap();
        data[..4].copy_from_slice(b"JUNK");
        assert!(
            read(&data, rel, format).is_err(),
            "{rel} with a wrong magic was accepted"
        );
    }
}

/// Found by the `las` fuzz target: a LAZ chunk table offset 1-7 bytes past the point data's start (inside the
/// 8-byte offset field) made the compressed length wrap around, which lifted the bound on the chunk count, and
/// `laz` then tried to allocate 25 GB for the table (a panic in debug builds).
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn laz_chunk_table_offset_inside_its_own_field_is_an_error() {
    let rel = "las/las11_airborne_small.laz";
    let path = shared_data(rel);
    let data = std::fs::read(&path).unwrap();
    let start = point_data_start(&data);
    for past in 1..8 {
        let bad = patched(&data, start, &((start + past) as i64).to_le_bytes());
        let err = read(&bad, rel, Format::Las)
            .expect_err("a chunk table inside its own offset was accepted");
        assert!(err.contains("chunk table"), "{err}");
    }
}

/// Where a LAS/LAZ file's point data starts (the header's "offset to point data", at byte 96).
fn point_data_start(data: &[u8]) -> usize {
    u32::from_le_bytes(data[96..100].try_into().unwrap()) as usize
}

/// `data` with `bytes` written at `at`.
fn patched(data: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    d[at..at + bytes.len()].copy_from_slice(bytes);
    d
}

/// Each altered copy of the LAS/LAZ file `rel` is refused with a message holding its `want`.
fn expect_errors<const N: usize>(rel: &str, cases: [(Vec<u8>, &str); N]) {
    for (bad, want) in cases {
        let err = read(&bad, rel, Format::Las).expect_err(want);
        assert!(err.contains(want), "{err}\nwanted: {want}");
    }
}

/// Each check of a LAZ chunk table names where it looked and what did not fit (autzen_trim.laz: points at byte
/// 2144, a table of 3 chunks of 50,000 points at byte 603333; the wording from the reader before its checks
/// were split into functions).
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn laz_chunk_table_checks_say_what_does_not_fit() {
    let rel = "las/autzen_trim.laz";
    let path = shared_data(rel);
    let data = std::fs::read(&path).unwrap();
    let start = point_data_start(&data);
    let table = i64::from_le_bytes(data[start..start + 8].try_into().unwrap()) as usize;
    assert_eq!((start, table), (2144, 603333), "the shared file changed");
    let with = |at: usize, bytes: &[u8]| patched(&data, at, bytes);
    let offset = |t: usize| with(start, &(t as i64).to_le_bytes());
    let chunks = |n: u32| with(table + 4, &n.to_le_bytes());
    let mut cut = data[..start + 1008].to_vec();
    cut.extend_from_slice(&data[table..]);
    cut[start..start + 8].copy_from_slice(&((start + 1008) as i64).to_le_bytes());
    expect_errors(
        rel,
        [
            (
                data[..start + 4].to_vec(),
                "byte 2144 (chunk table offset): file ends before the compressed point data",
            ),
            (
                offset(data.len() + 100),
                "byte 2144 (chunk table offset): chunk table offset 603453 lies beyond the end of the file (603353 bytes)",
            ),
            (
                offset(start + 3),
                "byte 2144 (chunk table offset): chunk table offset 2147 points inside the offset itself (bytes 2144..2152)",
            ),
            (
                chunks(1_000_000),
                "byte 603333 (chunk table): 1000000 chunks cannot fit in 601181 bytes of compressed points",
            ),
            (
                chunks(2),
                "byte 603333 (chunk table): 2 chunks of 50000 points do not match the header's 110000 points",
            ),
            (
                cut,
                "byte 3152 (chunk table): chunk 0 (283499 bytes at byte 2152) does not fit before the chunk table",
            ),
        ],
    );
}

/// The laszip VLR is checked against the point format before `laz` reads it (autzen_trim.laz: the VLR's data at
/// byte 2092, compressor 2, items (6, 20, 2), (7, 8, 2), (8, 6, 2); the wording from the build before the checks
/// moved into `laszip_vlr`).
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn laszip_vlr_checks_say_what_does_not_match() {
    let rel = "las/autzen_trim.laz";
    let path = shared_data(rel);
    let data = std::fs::read(&path).unwrap();
    let vlr = 2092;
    assert_eq!(
        &data[vlr - 52..vlr - 38],
        b"laszip encoded",
        "the shared file changed"
    );
    let with = |at: usize, bytes: &[u8]| patched(&data, at, bytes);
    expect_errors(
        rel,
        [
            (
                with(vlr - 52, b"laszip encodeX"),
                "vlrs: the point format is marked compressed but there is no laszip vlr",
            ),
            (
                with(vlr + 32, &43u16.to_le_bytes()),
                "laszip vlr (byte 2092): the item list is longer than the vlr",
            ),
            (
                with(vlr + 36, &21u16.to_le_bytes()),
                "laszip vlr (byte 2092): compressed items [(6, 21), (7, 8), (8, 6)] (type, size) do not match point format 3 with 34-byte records (expected [(6, 20), (7, 8), (8, 6)])",
            ),
            (
                with(vlr, &3u16.to_le_bytes()),
                "unsupported: laz compressor 3 with item versions [2, 2, 2]",
            ),
        ],
    );
}

/// A LAZ whose header declares more points than its chunks hold: the decoder runs out of bytes, and the error
/// says what most likely happened rather than only "failed to fill whole buffer".
#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn laz_with_more_points_declared_than_held_says_so() {
    let rel = "las/las11_airborne_small.laz";
    let path = shared_data(rel);
    let mut data = std::fs::read(&path).unwrap();
    let count = u32::from_le_bytes(data[107..111].try_into().unwrap());
    data[107..111].copy_from_slice(&(count + 1000).to_le_bytes());
    let err = read(&data, rel, Format::Las).expect_err("1000 points too many were accepted");
    assert!(
        err.contains("declare more points than the file has"),
        "{err}"
    );
}
