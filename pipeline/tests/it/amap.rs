//! The packed map end to end: build from synthetic clouds, write, open (mmap and read), corrupt, truncate.

use std::path::{Path, PathBuf};

use aerie_pipeline::map::amap::{self, AmapFile, HEADER_SIZE, SectionEntry, TABLE_ENTRY_SIZE};
use aerie_pipeline::map::buckets::{self, bucket_coords};
use aerie_pipeline::map::{MapView, PackedMap};
use aerie_pipeline::pose::Isometry3;
use aerie_pipeline::{Cloud, Columns, Error, ExtraDim, ScalarKind, ScanInfo};

/// splitmix64: deterministic test randomness without another crate.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A georeferenced scene: a ground plane, a wall and a scattered cloud, with every attribute the map keeps and
/// some it drops.
fn scene(n_ground: usize, seed: u64) -> Cloud {
    let mut rng = Rng(seed);
    let mut positions = Vec::new();
    for i in 0..n_ground {
        let (x, y) = (rng.unit() * 60.0 - 10.0, rng.unit() * 40.0 - 5.0);
        let p = match i % 3 {
            0 | 1 => [x, y, 0.01 * rng.unit()],
            _ => [x, 12.0 + 0.01 * rng.unit(), rng.unit() * 8.0],
        };
        positions.push(p);
    }
    for _ in 0..n_ground / 10 {
        positions.push([
            rng.unit() * 50.0,
            rng.unit() * 30.0,
            rng.unit() * 15.0 - 3.0,
        ]);
    }
    let mut c = Cloud::from_positions([637_000.0, 851_000.0, 120.0], positions);
    let n = c.len();
    let mut rng = Rng(seed ^ 0xabc);
    c.set_normals(Some(
        (0..n)
            .map(|i| {
                if i % 3 == 2 {
                    [0.0, 1.0, 0.0]
                } else {
                    [0.0, 0.0, 1.0]
                }
            })
            .collect(),
    ))
    .unwrap();
    c.set_gamma(Some(
        (0..n)
            .map(|i| {
                if i % 17 == 0 {
                    f32::INFINITY
                } else {
                    0.003 * rng.unit()
                }
            })
            .collect(),
    ))
    .unwrap();
    c.set_intensity(Some(
        (0..n).map(|_| (rng.next_u64() % 4000) as f32).collect(),
    ))
    .unwrap();
    c.set_color(Some(
        (0..n)
            .map(|i| [(i * 7) as u16, (i * 13) as u16, 65535 - (i as u16)])
            .collect(),
    ))
    .unwrap();
    c.set_classification(Some((0..n).map(|i| (i % 7) as u8).collect()))
        .unwrap();
    c.set_time(Some((0..n).map(|i| i as f64 * 1e-5).collect()))
        .unwrap();
    c.push_extra(ExtraDim::from_f64(
        "row",
        ScalarKind::U16,
        &(0..n).map(|i| (i % 100) as f64).collect::<Vec<f64>>(),
    ))
    .unwrap();
    c.meta.crs_wkt = Some("PROJCS[\"NAD83 / Oregon GIC Lambert (ft)\"]".into());
    // GeoTIFF keys as a LAS 1.2 source holds them: a key directory naming EPSG:2992, and a doubles record.
    c.meta.las_geotiff = vec![
        (
            34735,
            [1u16, 1, 0, 1, 3072, 0, 1, 2992]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        (34736, 0.3048f64.to_le_bytes().to_vec()),
    ];
    c.meta.source = Some(PathBuf::from("scans/site.laz"));
    c.meta.format = Some("LAS 1.2, point format 3".into());
    c.meta.scans.push(ScanInfo {
        name: "station 1".into(),
        points: 0..n,
        world_from_scan: Some(Isometry3::translation(637_010.0, 851_010.0, 121.5)),
    });
    c
}

fn bytes_of<T: bytemuck::Pod>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Bit-for-bit equality of two views.
fn assert_views_identical(a: &MapView<'_>, b: &MapView<'_>) {
    assert_eq!(a.origin.map(f64::to_bits), b.origin.map(f64::to_bits));
    assert_eq!(a.resolution.to_bits(), b.resolution.to_bits());
    assert_eq!(a.bucket_size.to_bits(), b.bucket_size.to_bits());
    assert_eq!(bytes_of(a.buckets), bytes_of(b.buckets));
    assert_eq!(bytes_of(a.positions), bytes_of(b.positions));
    assert_eq!(a.normals.map(bytes_of), b.normals.map(bytes_of));
    assert_eq!(a.gamma.map(bytes_of), b.gamma.map(bytes_of));
    assert_eq!(a.reflectance.map(bytes_of), b.reflectance.map(bytes_of));
}

fn write_map(map: &PackedMap, dir: &Path) -> (PathBuf, Vec<u8>) {
    let path = dir.join("map.amap");
    amap::write(map, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn section_table(bytes: &[u8]) -> Vec<(String, SectionEntry)> {
    let count = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    (0..count)
        .map(|i| {
            let e = &bytes
                [HEADER_SIZE + i * TABLE_ENTRY_SIZE..HEADER_SIZE + (i + 1) * TABLE_ENTRY_SIZE];
            let u32_at = |o: usize| u32::from_le_bytes(e[o..o + 4].try_into().unwrap());
            let u64_at = |o: usize| u64::from_le_bytes(e[o..o + 8].try_into().unwrap());
            let entry = SectionEntry {
                kind: u32_at(0),
                element_size: u32_at(4),
                offset: u64_at(8),
                length: u64_at(16),
                crc32c: u32_at(24),
            };
            let name = amap::SectionKind::from_id(entry.kind)
                .unwrap()
                .name()
                .to_string();
            (name, entry)
        })
        .collect()
}

#[test]
fn write_open_view_is_bit_identical() {
    let cloud = scene(30_000, 1);
    let map = PackedMap::from_cloud(&cloud, 0.05, None).unwrap();
    map.check().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = write_map(&map, dir.path());

    let mapped = AmapFile::open(&path).unwrap();
    assert!(mapped.is_mapped());
    let read = AmapFile::read(&path).unwrap();
    assert!(!read.is_mapped());
    let in_mem = AmapFile::from_bytes(&path, &bytes).unwrap();
    for f in [&mapped, &read, &in_mem] {
        assert_views_identical(&f.view(), &map.view());
        assert_eq!(f.to_packed_map(), map);
        assert_eq!(f.metadata(), map.metadata_toml);
        assert_eq!(
            f.intensity().map(bytes_of),
            map.intensity.as_deref().map(bytes_of)
        );
        assert_eq!(f.color().map(bytes_of), map.color.as_deref().map(bytes_of));
        assert_eq!(f.classification(), map.classification.as_deref());
        assert_eq!(f.to_cloud(), map.to_cloud().unwrap());
    }
    // Zero copy: the view's arrays point into the mapped file.
    let file_range = mapped.bytes().as_ptr_range();
    assert!(file_range.contains(&(mapped.view().positions.as_ptr() as *const u8)));

    // Metadata says what the cloud said.
    let meta = mapped.map_metadata();
    assert_eq!(meta.crs_wkt, cloud.meta.crs_wkt);
    let keys: Vec<(u16, Vec<u8>)> = meta
        .crs_geotiff
        .iter()
        .map(|g| (g.record_id, g.data.clone()))
        .collect();
    assert_eq!(keys, cloud.meta.las_geotiff);
    assert_eq!(mapped.to_cloud().meta.las_geotiff, cloud.meta.las_geotiff);
    assert_eq!(meta.sources.len(), 1);
    assert_eq!(meta.sources[0].path, "scans/site.laz");
    assert_eq!(meta.scans.len(), 1);
    assert_eq!(
        meta.scans[0].world_from_scan,
        Isometry3::translation(637_010.0, 851_010.0, 121.5)
    );
    assert_eq!(meta.bucketing.rule, "auto");
    assert_eq!(
        meta.dropped_attributes,
        vec!["time".to_string(), "row".to_string()]
    );
    let refl = meta.reflectance.as_ref().unwrap();
    assert_eq!(refl.percentile, 99.0);
    assert!(refl.scale > 3800.0 && refl.scale < 4000.0, "{}", refl.scale);
    assert!(
        map.reflectance
            .as_ref()
            .unwrap()
            .iter()
            .all(|r| (0.0..=1.0).contains(r))
    );
}

#[test]
fn to_cloud_returns_exactly_the_prepared_points() {
    let cloud = scene(8_000, 2);
    let map = PackedMap::from_cloud(&cloud, 0.1, Some(4.0)).unwrap();
    let order = buckets::bucketize(&cloud, 0.1, Some(4.0)).unwrap().order;
    let idx: Vec<usize> = order.iter().map(|&i| i as usize).collect();
    let mut expected = cloud.select(&idx);
    // The map keeps positions, normals, gamma, intensity, colour and class; time and extra dims are dropped.
    expected.take_time();
    expected.take_extras();
    expected.meta.source = None;
    expected.meta.format = Some("aerie map 1.2".into());

    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_map(&map, dir.path());
    let back = AmapFile::open(&path).unwrap().to_cloud();
    assert_eq!(back, expected);
    assert_eq!(
        bytes_of(back.positions()),
        bytes_of(expected.positions()),
        "positions must be bit-identical"
    );
    // Every input point is there exactly once.
    let mut a: Vec<[u32; 3]> = back
        .positions()
        .iter()
        .map(|p| p.map(f32::to_bits))
        .collect();
    let mut b: Vec<[u32; 3]> = cloud
        .positions()
        .iter()
        .map(|p| p.map(f32::to_bits))
        .collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
}

#[test]
fn buckets_hold_their_points_and_keys_are_sorted() {
    let cloud = scene(20_000, 3);
    let map = PackedMap::from_cloud(&cloud, 0.05, Some(5.0)).unwrap();
    let l = f64::from(map.bucket_size);
    assert!(map.buckets.windows(2).all(|w| w[0].key < w[1].key));
    for b in &map.buckets {
        let g = bucket_coords(b.key, map.morton_offset);
        for p in &map.positions[b.first as usize..(b.first + b.count) as usize] {
            for a in 0..3 {
                let w = map.origin[a] + f64::from(p[a]);
                assert_eq!(
                    (w / l).floor() as i64,
                    g[a],
                    "point {p:?} in the wrong bucket"
                );
                assert!(b.min[a] <= p[a] && p[a] <= b.max[a]);
            }
        }
    }
    // The offset makes the smallest key coordinate 0 on every axis.
    for a in 0..3 {
        let min = map
            .buckets
            .iter()
            .map(|b| bucket_coords(b.key, map.morton_offset)[a] - map.morton_offset[a])
            .min()
            .unwrap();
        assert_eq!(min, 0);
    }
}

/// Evenness through the whole pipeline: in every large bucket of a uniform cloud, the first 64 points cover the
/// bucket within 2.5 times the mean spacing of 64 points.
#[test]
fn bucket_prefixes_are_even() {
    let mut rng = Rng(9);
    // Sorted by x so that a naive prefix would be a slab.
    let mut pts: Vec<[f32; 3]> = (0..40_000)
        .map(|_| [rng.unit() * 8.0, rng.unit() * 4.0, rng.unit() * 4.0])
        .collect();
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let cloud = Cloud::from_positions([0.0; 3], pts);
    let map = PackedMap::from_cloud(&cloud, 0.05, Some(4.0)).unwrap();
    assert_eq!(map.buckets.len(), 2);
    let n = 64;
    let spacing = (64.0f32 / n as f32).cbrt();
    for b in &map.buckets {
        let pts = &map.positions[b.first as usize..(b.first + b.count) as usize];
        let prefix = &pts[..n];
        let radius = pts
            .iter()
            .map(|p| {
                prefix
                    .iter()
                    .map(|q| {
                        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2))
                            .sqrt()
                    })
                    .fold(f32::INFINITY, f32::min)
            })
            .fold(0.0, f32::max);
        assert!(
            radius <= 2.5 * spacing,
            "covering radius {radius} vs spacing {spacing}"
        );
    }
}

#[test]
fn one_and_many_threads_write_identical_bytes() {
    let cloud = scene(20_000, 4);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in [1, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let path = dir.path().join(format!("t{threads}.amap"));
        pool.install(|| {
            let map = PackedMap::from_cloud(&cloud, 0.05, None).unwrap();
            amap::write(&map, &path).unwrap();
        });
        files.push(std::fs::read(&path).unwrap());
    }
    assert_eq!(files[0], files[1]);
}

fn small_map_bytes() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let cloud = scene(600, 5);
    let map = PackedMap::from_cloud(&cloud, 0.1, Some(8.0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = write_map(&map, dir.path());
    (dir, path, bytes)
}

fn open_err(path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap();
    let mapped = AmapFile::open(path).unwrap_err().to_string();
    let read = AmapFile::read(path).unwrap_err().to_string();
    assert_eq!(mapped, read, "mmap and read paths disagree");
    mapped
}

#[test]
fn a_flipped_byte_in_each_section_is_named() {
    let (_dir, path, bytes) = small_map_bytes();
    let table = section_table(&bytes);
    assert_eq!(table.len(), 9, "the scene has every optional section");
    for (name, e) in &table {
        let mut bad = bytes.clone();
        bad[(e.offset + e.length / 2) as usize] ^= 0x10;
        let msg = open_err(&path, &bad);
        let want = format!(
            "map.amap: section '{name}' (offset {}, {} bytes): checksum mismatch: the file is corrupted",
            e.offset, e.length
        );
        assert!(msg.ends_with(&want), "{msg}\nexpected: {want}");
    }
    let mut bad = bytes.clone();
    bad[20] ^= 1; // file size field
    assert!(open_err(&path, &bad).contains("header (offset 0, 256 bytes): checksum mismatch"));
    let mut bad = bytes.clone();
    bad[HEADER_SIZE + TABLE_ENTRY_SIZE + 9] ^= 1; // offset of the second section
    assert!(
        open_err(&path, &bad).contains("section table (offset 256, 9 entries): checksum mismatch")
    );
    let gap = (HEADER_SIZE + 9 * TABLE_ENTRY_SIZE)..table[0].1.offset as usize;
    assert!(!gap.is_empty());
    let mut bad = bytes.clone();
    bad[gap.start] = 1;
    assert!(open_err(&path, &bad).contains("padding before section 'buckets'"));
}

#[test]
fn every_single_byte_flip_is_detected() {
    let (_dir, path, bytes) = small_map_bytes();
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x01;
        assert!(
            AmapFile::from_bytes(&path, &bad).is_err(),
            "flipping byte {i} of {} went unnoticed",
            bytes.len()
        );
    }
}

#[test]
fn truncation_at_any_offset_is_an_error() {
    let (_dir, path, bytes) = small_map_bytes();
    for len in 0..bytes.len() {
        let e = AmapFile::from_bytes(&path, &bytes[..len]).unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "length {len}: {e}");
    }
    for len in [0, 5, 100, 255, 256, 300, bytes.len() / 2, bytes.len() - 1] {
        let msg = open_err(&path, &bytes[..len]);
        assert!(
            msg.contains("truncated") || msg.contains("not an aerie map"),
            "length {len}: {msg}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(open_err(&path, &longer).contains("extra bytes"));
}

#[test]
fn newer_major_version_is_refused_with_advice() {
    let (_dir, path, bytes) = small_map_bytes();
    let mut v2 = bytes.clone();
    v2[8..10].copy_from_slice(&2u16.to_le_bytes());
    let crc = crc32c::crc32c(&v2[..252]);
    v2[252..256].copy_from_slice(&crc.to_le_bytes());
    let msg = open_err(&path, &v2);
    assert!(
        msg.ends_with(
            "unsupported: map format 2.x is newer than this aerie (reads 1.x): update aerie"
        ),
        "{msg}"
    );
    // A newer minor version of the same major reads (minor versions only add).
    let mut v1_7 = bytes.clone();
    v1_7[10..12].copy_from_slice(&7u16.to_le_bytes());
    let crc = crc32c::crc32c(&v1_7[..252]);
    v1_7[252..256].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &v1_7).unwrap();
    let f = AmapFile::open(&path).unwrap();
    assert_eq!(f.header().version_minor, 7);
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(open_err(&path, &magic).contains("not an aerie map"));
}

#[test]
fn invalid_inputs_are_errors() {
    let e = PackedMap::from_cloud(&Cloud::default(), 0.1, None).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    let cloud = scene(100, 6);
    assert!(PackedMap::from_cloud(&cloud, -1.0, None).is_err());
    assert!(PackedMap::from_cloud(&cloud, 0.1, Some(0.01)).is_err());
    // A broken in-memory map is refused by the writer.
    let mut map = PackedMap::from_cloud(&cloud, 0.1, None).unwrap();
    map.gamma.as_mut().unwrap().pop();
    let dir = tempfile::tempdir().unwrap();
    let e = amap::write(&map, &dir.path().join("x.amap")).unwrap_err();
    assert!(e.to_string().contains("gamma"), "{e}");
    assert!(!dir.path().join("x.amap").exists());
}

#[test]
fn minimal_map_without_attributes() {
    let cloud = Cloud::from_columns(
        [0.0; 3],
        Columns {
            positions: vec![[0.5, 0.5, 0.5]],
            ..Columns::default()
        },
    )
    .unwrap();
    let map = PackedMap::from_cloud(&cloud, 0.1, None).unwrap();
    assert_eq!(map.buckets.len(), 1);
    assert!(map.reflectance.is_none() && map.normals.is_none());
    let dir = tempfile::tempdir().unwrap();
    let (path, bytes) = write_map(&map, dir.path());
    assert_eq!(section_table(&bytes).len(), 3);
    let f = AmapFile::open(&path).unwrap();
    assert_views_identical(&f.view(), &map.view());
    assert_eq!(f.to_cloud().positions(), cloud.positions());
}

#[test]
fn open_maps_can_be_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<AmapFile>();
    shared::<PackedMap>();
    let (_dir, path, _) = small_map_bytes();
    let f = AmapFile::open(&path).unwrap();
    let n: usize = std::thread::scope(|s| {
        let a = s.spawn(|| f.view().positions.len());
        let b = s.spawn(|| {
            f.view()
                .buckets
                .iter()
                .map(|b| b.count as usize)
                .sum::<usize>()
        });
        a.join().unwrap() + b.join().unwrap()
    });
    assert_eq!(n, 2 * f.view().positions.len());
}

/// The hall map (real scans, 0.2 m voxels, x y z intensity as binary PCD), read with a minimal parser because
/// this test is about maps, not PCD.
fn hall_map() -> Cloud {
    let path = crate::shared_data("maps/hall_map_20cm.pcd");
    let bytes = std::fs::read(&path).unwrap();
    let marker = b"DATA binary\n";
    let start = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap()
        + marker.len();
    let mut positions = Vec::new();
    let mut intensity = Vec::new();
    for rec in bytes[start..].chunks_exact(16) {
        let f = |i: usize| f32::from_le_bytes(rec[i..i + 4].try_into().unwrap());
        positions.push([f(0), f(4), f(8)]);
        intensity.push(f(12));
    }
    let mut c = Cloud::from_positions([0.0; 3], positions);
    assert_eq!(c.len(), 138_305);
    c.set_intensity(Some(intensity)).unwrap();
    c
}

fn covering_radius(all: &[[f32; 3]], prefix: &[[f32; 3]]) -> f32 {
    all.iter()
        .map(|p| {
            prefix
                .iter()
                .map(|q| (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2))
                .fold(f32::INFINITY, f32::min)
                .sqrt()
        })
        .fold(0.0, f32::max)
}

#[test]
#[cfg_attr(not(aerie_shared_data), ignore = "needs ../shared/data: see README")]
fn real_hall_map_round_trips_and_prefixes_beat_random_subsets() {
    let cloud = hall_map();
    let map = PackedMap::from_cloud(&cloud, 0.2, None).unwrap();
    let mean = map.len() as f64 / map.buckets.len() as f64;
    eprintln!(
        "hall map: l = {} m, {} buckets, mean {mean:.0} points",
        map.bucket_size,
        map.buckets.len()
    );
    assert!(
        (1.6..=20.0).contains(&map.bucket_size),
        "l {}",
        map.bucket_size
    );
    assert!((1500.0..=4500.0).contains(&mean), "mean {mean}");

    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_map(&map, dir.path());
    let f = AmapFile::open(&path).unwrap();
    assert_views_identical(&f.view(), &map.view());
    assert_eq!(f.to_packed_map(), map);

    // Evenness on real surfaces: in every bucket of at least 1000 points, the first n points cover the bucket
    // better than n points drawn at random (seeded).
    let mut rng = Rng(11);
    let (mut ours_total, mut random_total, mut compared) = (0.0f64, 0.0f64, 0);
    for b in map.buckets.iter().filter(|b| b.count >= 1000) {
        let pts = &map.positions[b.first as usize..(b.first + b.count) as usize];
        let n = 64;
        let ours = covering_radius(pts, &pts[..n]);
        let mut shuffled = pts.to_vec();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let random = covering_radius(pts, &shuffled[..n]);
        ours_total += f64::from(ours);
        random_total += f64::from(random);
        compared += 1;
    }
    eprintln!(
        "mean covering radius of 64-point prefixes: ours {:.3} m, random {:.3} m over {compared} buckets",
        ours_total / compared as f64,
        random_total / compared as f64
    );
    assert!(compared >= 5, "only {compared} large buckets");
    assert!(
        ours_total < 0.8 * random_total,
        "ours {ours_total} vs random {random_total}"
    );
}

/// The normals stage's spacing and surface offset (extra dimensions of the prepared cloud) become the map's
/// spacing (format 1.1) and surface_offset (1.2) sections, in map order, and are not listed among the dropped
/// attributes; a cloud without them gives a map without them.
#[test]
fn the_spacing_is_stored_in_map_order() {
    let mut cloud = scene(2_000, 5);
    let spacing: Vec<f32> = (0..cloud.len()).map(|i| i as f32 * 1e-3).collect();
    let offset: Vec<f32> = (0..cloud.len()).map(|i| i as f32 * -1e-4).collect();
    cloud
        .push_extra(ExtraDim::new("spacing", spacing.clone()))
        .unwrap();
    cloud
        .push_extra(ExtraDim::new("surface_offset", offset.clone()))
        .unwrap();
    let map = PackedMap::from_cloud(&cloud, 0.1, None).unwrap();
    let order = buckets::bucketize(&cloud, 0.1, None).unwrap().order;
    let expected: Vec<f32> = order.iter().map(|&i| spacing[i as usize]).collect();
    assert_eq!(map.spacing.as_deref(), Some(&expected[..]));
    let dropped = map.metadata().unwrap().dropped_attributes;
    assert!(!dropped.iter().any(|d| d == "spacing"), "{dropped:?}");
    assert!(
        !dropped.iter().any(|d| d == "surface_offset"),
        "{dropped:?}"
    );
    let expected_offset: Vec<f32> = order.iter().map(|&i| offset[i as usize]).collect();
    assert_eq!(map.surface_offset.as_deref(), Some(&expected_offset[..]));
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_map(&map, dir.path());
    let opened = AmapFile::open(&path).unwrap();
    assert_eq!(opened.view().spacing, Some(&expected[..]));
    assert_eq!(opened.view().surface_offset, Some(&expected_offset[..]));
    assert_eq!(opened.header().version_minor, 2);
    let without = PackedMap::from_cloud(&scene(2_000, 5), 0.1, None).unwrap();
    assert!(without.spacing.is_none());
    assert!(without.surface_offset.is_none());
}
