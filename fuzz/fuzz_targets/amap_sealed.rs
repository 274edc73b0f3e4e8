//! Feed the .amap reader inputs whose checksums are right, so mutations reach the checks behind them.
//!
//! With the plain `amap` target almost every mutated input dies at the header or section-table CRC32C. Here
//! the fuzzer's bytes are re-sealed first, the way a writer would finish the file: the section table is
//! parsed leniently (entries outside the file are left alone), bytes that belong to no section are zeroed
//! (padding), each in-file section's CRC32C, the header's `file_size`, the table CRC and the header CRC are
//! recomputed. The sealed bytes are then opened (`AmapFile::from_bytes`, the same checks as `open`) and, when
//! they pass, every accessor is called.
//!
//! Byte 251 (reserved, zero in files that aerie writes) steers the sealing, so that the fuzzer can still
//! reach the reader's "corrupted" branches: bit 0 keeps the padding as it is, bit 1 keeps `file_size`,
//! bit 2 keeps the section CRCs. The byte is zeroed before the header CRC is computed.
#![no_main]

use aerie_pipeline::map::amap::{AmapFile, HEADER_SIZE, MAX_SECTIONS, TABLE_ENTRY_SIZE};
use libfuzzer_sys::fuzz_target;

/// Offset of the header CRC32C, which covers bytes `0..HEADER_CRC_OFFSET` (docs/amap-format.md).
const HEADER_CRC_OFFSET: usize = 252;
/// The reserved header byte this target reads its sealing options from.
const CONTROL: usize = 251;
const KEEP_PADDING: u8 = 1 << 0;
const KEEP_FILE_SIZE: u8 = 1 << 1;
const KEEP_SECTION_CRCS: u8 = 1 << 2;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Make `b`'s checksums (and, unless told otherwise, its size field and padding) those of a well-formed file.
fn seal(b: &mut [u8]) {
    let len = b.len();
    if len < HEADER_SIZE {
        return;
    }
    let control = b[CONTROL];
    b[CONTROL] = 0;
    if control & KEEP_FILE_SIZE == 0 {
        b[16..24].copy_from_slice(&(len as u64).to_le_bytes());
    }
    let count = u32_at(b, 40) as usize;
    let table_start = usize::try_from(u64_at(b, 48)).unwrap_or(usize::MAX);
    let table_end = (count <= MAX_SECTIONS)
        .then(|| table_start.checked_add(count * TABLE_ENTRY_SIZE))
        .flatten()
        .filter(|&e| table_start >= HEADER_SIZE && e <= len);
    if let Some(table_end) = table_end {
        // The sections that lie inside the file after the table, as (table entry offset, byte range).
        let sections: Vec<(usize, std::ops::Range<usize>)> = (table_start..table_end)
            .step_by(TABLE_ENTRY_SIZE)
            .filter_map(|at| {
                let start = usize::try_from(u64_at(b, at + 8)).ok()?;
                let end = start.checked_add(usize::try_from(u64_at(b, at + 16)).ok()?)?;
                (start >= table_end && end <= len).then_some((at, start..end))
            })
            .collect();
        if control & KEEP_PADDING == 0 {
            let mut in_section = vec![false; len - table_end];
            for (_, r) in &sections {
                in_section[r.start - table_end..r.end - table_end].fill(true);
            }
            for (byte, inside) in b[table_end..].iter_mut().zip(in_section) {
                if !inside {
                    *byte = 0;
                }
            }
        }
        if control & KEEP_SECTION_CRCS == 0 {
            for (at, r) in sections {
                let crc = crc32c::crc32c(&b[r]);
                b[at + 24..at + 28].copy_from_slice(&crc.to_le_bytes());
            }
        }
        let table_crc = crc32c::crc32c(&b[table_start..table_end]);
        b[56..60].copy_from_slice(&table_crc.to_le_bytes());
    }
    let header_crc = crc32c::crc32c(&b[..HEADER_CRC_OFFSET]);
    b[HEADER_CRC_OFFSET..HEADER_SIZE].copy_from_slice(&header_crc.to_le_bytes());
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    seal(&mut bytes);
    let Ok(map) = AmapFile::from_bytes(std::path::Path::new("fuzz.amap"), &bytes) else {
        return;
    };
    // A file that passed the checks must be usable without panicking.
    let view = map.view();
    assert_eq!(view.positions.len() as u64, map.header().point_count);
    let _ = (
        map.intensity(),
        map.color(),
        map.classification(),
        map.metadata(),
    );
    let _ = map.map_metadata();
    // `to_cloud` checks that every column has one value per point (it panics otherwise); `validate` checks the
    // rest of the cloud's invariants, the finite origin and positions.
    let cloud = map.to_cloud();
    assert_eq!(cloud.len() as u64, map.header().point_count);
    assert_eq!(
        cloud.validate(),
        Ok(()),
        "the cloud of an opened map is consistent"
    );
    let packed = map.to_packed_map();
    assert_eq!(
        packed.check(),
        Ok(()),
        "an opened map passes PackedMap::check"
    );
});
