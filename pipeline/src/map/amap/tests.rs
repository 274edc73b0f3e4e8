//! Tests of the .amap format: header and table encoding, round trips, and every kind of corruption on open.

use super::*;

#[test]
fn header_round_trips() {
    let h = Header {
        version_major: 1,
        version_minor: 0,
        file_size: 12345,
        point_count: 77,
        bucket_count: 3,
        section_count: 4,
        attribute_flags: flags::GAMMA | flags::COLOR,
        section_table_offset: 256,
        section_table_crc: 0xdead_beef,
        origin: [637_000.5, -1.25, 1e-3],
        resolution: 0.1,
        bucket_size: 5.0,
        morton_offset: [-3, 0, 1 << 40],
        bounds_min: [-1.0, 2.0, f32::MIN_POSITIVE],
        bounds_max: [9.0, 8.0, 7.5],
    };
    let b = h.encode();
    assert_eq!(&b[..8], b"AERIEMAP");
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 256);
    assert!(
        b[144..252].iter().all(|&x| x == 0),
        "reserved bytes must be zero"
    );
    assert_eq!(
        u32::from_le_bytes(b[252..256].try_into().unwrap()),
        crc32c::crc32c(&b[..252])
    );
    assert_eq!(Header::decode(&b), h);
}

#[test]
fn section_kinds_have_stable_ids_and_sizes() {
    let table: Vec<(u32, &str, usize)> = SectionKind::ALL
        .iter()
        .map(|k| (k.id(), k.name(), k.element_size()))
        .collect();
    assert_eq!(
        table,
        vec![
            (1, "buckets", 40),
            (2, "positions", 12),
            (3, "normals", 12),
            (4, "gamma", 4),
            (5, "intensity", 4),
            (6, "reflectance", 4),
            (7, "color", 6),
            (8, "classification", 1),
            (9, "metadata", 1),
            (10, "spacing", 4),
            (11, "surface_offset", 4),
        ]
    );
    for k in SectionKind::ALL {
        assert_eq!(SectionKind::from_id(k.id()), Some(k));
    }
    assert_eq!(SectionKind::from_id(0), None);
    assert_eq!(size_of::<Bucket>(), 40);
}

#[test]
fn crc_is_castagnoli() {
    // The check value the specification quotes.
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn entry_round_trips() {
    let e = SectionEntry {
        kind: 7,
        element_size: 6,
        offset: 1 << 33,
        length: 600,
        crc32c: 42,
    };
    assert_eq!(SectionEntry::decode(&e.encode()), e);
}
