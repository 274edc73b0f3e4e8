//! Four-lane SIMD helpers shared by the neighbour search ([`crate::features::Neighbors`]) and the simulator's
//! beam march: both screen candidates four at a time and list the ones that pass.

/// Lanes of the 128-bit vectors (`wide::f32x4`) the hot loops use: SSE2 on the x86-64 baseline, NEON on ARM.
pub const LANES: usize = 4;

/// For each 4-bit mask (`f32x4::to_bitmask`), its set lanes in ascending order (the other entries repeat lane
/// 0; a caller overwrites or never reads them) and their count. The passing lanes of four candidates are listed
/// with one 16-byte store and the end advanced by the count, where a store and an add per lane cost as much as
/// the screening itself.
pub const COMPACT: [([u32; LANES], u32); 16] = {
    let mut table = [([0u32; LANES], 0u32); 16];
    let mut mask = 0;
    while mask < 16 {
        let mut lane = 0;
        while lane < LANES {
            if mask & (1 << lane) != 0 {
                table[mask].0[table[mask].1 as usize] = lane as u32;
                table[mask].1 += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    table
};

/// How many lanes a 4-bit mask sets: a nibble table in one constant (two instructions; `count_ones` is
/// about a dozen on the x86-64 baseline, which has no `popcnt`).
#[inline(always)]
pub fn lanes_set(mask: u32) -> u32 {
    ((0x4332_3221_3221_2110u64 >> (4 * (mask & 15))) & 15) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_lists_the_set_lanes_in_order() {
        for (mask, (lanes, count)) in COMPACT.iter().enumerate() {
            let want: Vec<u32> = (0..LANES as u32).filter(|l| mask & (1 << l) != 0).collect();
            assert_eq!(*count as usize, want.len());
            assert_eq!(&lanes[..want.len()], &want[..]);
            assert_eq!(lanes_set(mask as u32), *count);
        }
    }
}
