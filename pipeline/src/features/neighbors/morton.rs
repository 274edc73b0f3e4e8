//! Morton codes of grid cells and the fine and coarse cell coordinates of positions: the order the index sorts
//! its points and cells into.

/// Bits per axis of a fine cell coordinate (3 * 21 = 63 bits of a Morton code).
pub(super) const FINE_BITS: u32 = 21;

/// Spread the low 21 bits of `v` to every third bit.
fn spread(v: u32) -> u64 {
    let mut x = v as u64 & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

pub(super) fn morton(c: [u32; 3]) -> u64 {
    (spread(c[0]) << 2) | (spread(c[1]) << 1) | spread(c[2])
}

pub(super) fn hash(code: u64, mask: usize) -> usize {
    (code.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize & mask
}

/// The fine-cell coordinate of `v` along an axis whose grid starts at `lo`: non-decreasing in `v` (every step
/// rounds monotonically, and the cast truncates, which floors the non-negative values it gets).
#[inline]
pub(super) fn fine_coord(v: f64, lo: f64, per_fine: f64) -> u32 {
    (((v - lo) * per_fine).max(0.0) as u32).min((1 << FINE_BITS) - 1)
}

/// Bits of a coordinate within a main cell in [`coarse`] coordinates.
pub(super) const SUB_BITS: u32 = 8;

/// The coordinate of fine coordinate `f` in units of `1 / 2^SUB_BITS` of a main cell at level `main`
/// (non-decreasing in `f`; `>> SUB_BITS` gives the main-cell coordinate).
#[inline]
pub(super) fn coarse(f: u32, main: u32) -> u32 {
    if main >= SUB_BITS {
        f >> (main - SUB_BITS)
    } else {
        f << (SUB_BITS - main)
    }
}

/// Inverse of [`morton`].
pub(super) fn decode(code: u64) -> [u32; 3] {
    fn compact(mut x: u64) -> u32 {
        x &= 0x1249_2492_4924_9249;
        x = (x ^ (x >> 2)) & 0x10c3_0c30_c30c_30c3;
        x = (x ^ (x >> 4)) & 0x100f_00f0_0f00_f00f;
        x = (x ^ (x >> 8)) & 0x001f_0000_ff00_00ff;
        x = (x ^ (x >> 16)) & 0x001f_0000_0000_ffff;
        x = (x ^ (x >> 32)) & 0x1f_ffff;
        x as u32
    }
    [compact(code >> 2), compact(code >> 1), compact(code)]
}
