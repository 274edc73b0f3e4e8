//! LAS/LAZ bad input from the real files: cut, inflated, wrong magic and version, flipped header bytes and
//! corrupted compressed points must be errors, never panics or huge allocations.

use super::*;

fn put_u32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn truncated_files_are_errors() {
    for file in [
        "autzen_trim.las",
        "autzen_trim.laz",
        "las14_fmt8_extra_bytes.laz",
    ] {
        let p = shared(file);
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
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn inflated_point_counts_are_errors_without_allocating() {
    for file in ["autzen_trim.las", "autzen_trim.laz"] {
        let p = shared(file);
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
    let p = shared("las14_fmt8_extra_bytes.laz");
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
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn wrong_magic_and_unsupported_versions_are_errors() {
    let p = shared("autzen_trim.las");
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
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn flipped_header_bytes_never_panic() {
    // Small files, so every byte of the header and the VLRs can be tried.
    for file in [
        "las11_airborne_small.laz",
        "las14_fmt8_extra_bytes.laz",
        "autzen_trim.las",
    ] {
        let p = shared(file);
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
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn corrupted_compressed_points_never_panic() {
    let p = shared("las14_fmt8_extra_bytes.laz");
    let small = shared("las11_airborne_small.laz");
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
